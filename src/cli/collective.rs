//! `dimsum collective`: build (or read) a collective schedule, replay it on
//! an explicit topology, and report its time beside the lower bounds.

use clap::Args;
use dimsum::error::{InputError, one_of};
use dimsum::model::topology::{self, Topology};
use dimsum::model::units;
use dimsum::model::workload::CollectiveKind;
use dimsum::report;
use dimsum::schedule::Schedule;
use dimsum::schedule::algorithm::{self, Algorithm, Options, SpecError};
use dimsum::schedule::bounds::{self, Bounds};
use dimsum::schedule::builtin::Algo;
use dimsum::schedule::simulate::{self, LinkModel, SimOptions, SimResult};
use dimsum::study::Study;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `dimsum collective`.
#[derive(Debug, Args)]
pub struct CollectiveArgs {
    /// ring:8, fc:8, switch:8, torus:4x4, mesh:5x5, fabric:STUDY.toml (with --bw), edges:FILE or astra:FILE.yml.
    #[arg(long)]
    pub topology: String,
    /// all-gather, reduce-scatter, all-reduce or all-to-all.
    #[arg(long, default_value = "all-reduce")]
    pub collective: String,
    /// ring, bidirectional-ring, direct, halving-doubling, hierarchical, swing,
    /// swing-latency, recursive-doubling, recursive-doubling-bw, bucket or tacos
    /// (synthesized; default: hierarchical on topologies of dimensions, else ring).
    #[arg(long)]
    pub algorithm: Option<String>,
    /// Per-dimension algorithms of a hierarchical schedule, comma-separated
    /// (default: bidirectional-ring on rings and lines, direct on fully-connected groups and switches).
    #[arg(long)]
    pub dim_algorithms: Option<String>,
    /// The collective's whole buffer: the all-gather output, the reduce-scatter input,
    /// the all-reduce vector, one NPU's all-to-all send buffer (e.g. 1GiB, 64MB, 1048576).
    #[arg(long)]
    pub size: Option<String>,
    /// Chunks per NPU shard: more chunks pipeline across steps and dimensions.
    #[arg(long, default_value_t = 1)]
    pub chunks_per_npu: u32,
    /// Link bandwidth of ring/fc/switch/torus/mesh topologies, one value or one per
    /// dimension (GB/s, or with a unit: 50GiB/s; default 50).
    #[arg(long)]
    pub link_gbps: Option<String>,
    /// Link latency of ring/fc/switch/torus/mesh topologies, one value or one per
    /// dimension (us, or with a unit: 500ns; default 0.5).
    #[arg(long)]
    pub link_latency_us: Option<String>,
    /// For fabric: topologies, GB/s per NPU per dimension (default: the study's `bw`).
    #[arg(long)]
    pub bw: Option<String>,
    /// alpha-beta (a link is busy for size/bandwidth) or tacos (latency + size/bandwidth).
    #[arg(long, default_value = "alpha-beta")]
    pub link_model: String,
    /// swing, swing-latency, recursive-doubling(-bw), bucket: one collective instead of
    /// 2D concurrent ones (one per dimension and direction).
    #[arg(long)]
    pub single_port: bool,
    /// Seed of the tacos synthesis.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// tacos: synthesize with this many seeds (from --seed, in parallel) and keep the fastest.
    #[arg(long, default_value_t = 1)]
    pub restarts: u32,
    /// Replay this schedule (JSON, as --schedule-out writes) instead of building one.
    #[arg(long)]
    pub schedule_in: Option<PathBuf>,
    /// Write the schedule as JSON.
    #[arg(long)]
    pub schedule_out: Option<PathBuf>,
    /// Write utilization.svg/.png (per-link heatmap) and timeline.svg/.png into this directory.
    #[arg(long)]
    pub charts: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn list(
    text: &str,
    field: &str,
    parse: impl Fn(&str) -> Result<f64, units::UnitError>,
) -> Result<Vec<f64>, InputError> {
    text.split(',')
        .map(|v| parse(v.trim()).map_err(|m| InputError::arg(field, m.to_string())))
        .collect()
}

/// The topology a spec names.
pub fn topology_of(args: &CollectiveArgs) -> Result<Topology, InputError> {
    let gbps = list(
        args.link_gbps.as_deref().unwrap_or("50"),
        "--link-gbps",
        units::parse_gbps,
    )?;
    let lat = list(
        args.link_latency_us.as_deref().unwrap_or("0.5"),
        "--link-latency-us",
        |v| units::parse_time_ns(v, 1e3),
    )?;
    let own_links = ["fabric:", "edges:", "astra:"]
        .iter()
        .any(|p| args.topology.starts_with(p));
    if own_links {
        for (given, flag) in [
            (args.link_gbps.is_some(), "--link-gbps"),
            (args.link_latency_us.is_some(), "--link-latency-us"),
        ] {
            if given {
                return Err(InputError::arg(
                    flag,
                    format!(
                        "`{}` brings its own links' bandwidth and latency: drop {flag} (for a fabric, use --bw)",
                        args.topology
                    ),
                ));
            }
        }
    }
    if args.bw.is_some() && !args.topology.starts_with("fabric:") {
        return Err(InputError::arg(
            "--bw",
            "only a fabric:STUDY.toml topology takes per-NPU bandwidths: use --link-gbps",
        ));
    }
    if let Some(path) = args.topology.strip_prefix("fabric:") {
        let study = Study::load(Path::new(path))?;
        let bw = match (&args.bw, &study.bw) {
            (Some(s), _) => study.parse_bw(s)?,
            (None, Some(b)) => b.clone(),
            (None, None) => {
                return Err(InputError::arg(
                    "--bw",
                    "the study names no allocation (`bw = [...]`): pass --bw with one GB/s value per dimension",
                ));
            }
        };
        if let Some((d, _)) = bw.iter().enumerate().find(|(_, b)| **b <= 0.0) {
            return Err(InputError::arg(
                "--bw",
                format!("dimension {d} gets no bandwidth: every link needs a positive bandwidth"),
            ));
        }
        let mut t = Topology::from_fabric(&study.fabric, &bw);
        t.name = format!("fabric:{path}");
        return Ok(t);
    }
    topology::from_spec(&args.topology, &gbps, &lat)
}

fn collective_kind(s: &str) -> Result<CollectiveKind, InputError> {
    let kinds = [
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce,
        CollectiveKind::AllToAll,
    ];
    kinds.into_iter().find(|k| k.name() == s).ok_or_else(|| {
        InputError::arg(
            "--collective",
            format!(
                "`{s}` is not a collective: use {}",
                one_of(&["all-gather", "reduce-scatter", "all-reduce", "all-to-all"])
            ),
        )
    })
}

/// The `--link-model` named.
pub fn link_model(name: &str) -> Result<LinkModel, InputError> {
    name.parse::<LinkModel>()
        .map_err(|e| InputError::arg("--link-model", e.to_string()))
}

/// Reads a schedule file (`--schedule-out`'s JSON) and checks its structure.
pub fn load_schedule(path: &Path) -> Result<Schedule, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::at(path, None, "", format!("cannot read the schedule: {e}")))?;
    let s: Schedule = serde_json::from_str(&text).map_err(|e| {
        InputError::at(
            path,
            Some(e.line()),
            "",
            format!(
                "not a dimsum schedule (JSON, format `{}`): {e}",
                dimsum::schedule::FORMAT
            ),
        )
    })?;
    s.check().map_err(|e| InputError::at(path, None, "", e.to_string()))?;
    Ok(s)
}

/// Builds the schedule the arguments ask for (`size` matters to synthesis
/// only).
pub fn schedule_of(args: &CollectiveArgs, topo: &Topology, size: f64) -> Result<Schedule, InputError> {
    if let Some(path) = &args.schedule_in {
        return load_schedule(path);
    }
    let kind = collective_kind(&args.collective)?;
    let algorithm = match &args.algorithm {
        Some(a) => a
            .parse::<Algorithm>()
            .map_err(|e| InputError::arg("--algorithm", e.to_string()))?,
        None => Algorithm::default_for(topo),
    };
    let dim_algorithms = match &args.dim_algorithms {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(|a| a.trim().parse::<Algo>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| InputError::arg("--dim-algorithms", e.to_string()))?,
        ),
    };
    let opt = Options {
        chunks_per_npu: args.chunks_per_npu,
        dim_algorithms,
        multiport: !args.single_port,
        seed: args.seed,
        restarts: args.restarts,
        size_bytes: size,
    };
    algorithm::build(topo, kind, algorithm, &opt).map_err(|e| {
        let flag = match e {
            SpecError::Chunks => "--chunks-per-npu",
            SpecError::DimAlgorithms => "--dim-algorithms",
            SpecError::Ports => "--single-port",
            SpecError::Restarts => "--restarts",
            SpecError::Build(_) => "--algorithm",
        };
        InputError::arg(flag, e.to_string())
    })
}

/// Everything `dimsum collective` reports.
pub struct Outcome {
    /// The topology.
    pub topo: Topology,
    /// The schedule.
    pub schedule: Schedule,
    /// The replay.
    pub sim: SimResult,
    /// The lower bounds.
    pub bounds: Bounds,
    /// Buffer size, bytes.
    pub size: f64,
    /// Link model.
    pub model: LinkModel,
}

/// Runs `dimsum collective`.
pub fn run(args: &CollectiveArgs) -> anyhow::Result<()> {
    let topo = topology_of(args)?;
    let size = match &args.size {
        Some(s) => units::parse_bytes(s).map_err(|m| InputError::arg("--size", m.to_string()))?,
        None => return Err(InputError::arg("--size", "give the collective's buffer, e.g. --size 64MiB").into()),
    };
    let model = link_model(&args.link_model)?;
    let schedule = schedule_of(args, &topo, size)?;
    let opt = SimOptions {
        size_bytes: size,
        model,
        record: args.charts.is_some(),
    };
    let sim =
        simulate::simulate(&schedule, &topo, &opt).map_err(|e| InputError::arg("--schedule-in", e.to_string()))?;
    let bounds = bounds::lower_bounds(&topo, schedule.collective, size);
    let out = Outcome {
        topo,
        schedule,
        sim,
        bounds,
        size,
        model,
    };
    if let Some(path) = &args.schedule_out {
        dimsum::io::write_atomic(path, out.schedule.to_json().as_bytes())?;
    }
    if let Some(dir) = &args.charts {
        std::fs::create_dir_all(dir)?;
        report::schedule::utilization_chart(dir, &out.topo, &out.sim)?;
        report::schedule::timeline_chart(dir, &out.topo, &out.schedule, &out.sim)?;
    }
    if args.json {
        println!("{}", json(&out));
    } else {
        print!("{}", table(&out));
    }
    if !out.sim.valid {
        anyhow::bail!(
            "the schedule is invalid: {}",
            out.sim.errors.first().cloned().unwrap_or_default()
        );
    }
    Ok(())
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The JSON report.
pub fn json(o: &Outcome) -> serde_json::Value {
    let util = o.sim.utilization();
    let names = o.topo.dim_names();
    let links: Vec<serde_json::Value> = o
        .topo
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            serde_json::json!({
                "src": l.src, "dst": l.dst,
                "dim": l.dim.and_then(|d| names.get(usize::from(d)).cloned()),
                "gbps": l.gbps, "latency_us": us(l.latency_ns),
                "busy_us": us(o.sim.link_busy_ns[i]), "bytes": o.sim.link_bytes[i],
                "utilization": util[i],
            })
        })
        .collect();
    let path: Vec<serde_json::Value> = o
        .sim
        .critical_path
        .iter()
        .map(|p| {
            serde_json::json!({
                "transfer": p.transfer, "src": p.src, "dst": p.dst,
                "issue_us": us(p.issue_ns), "arrive_us": us(p.arrive_ns), "waited_for": p.waited_for,
            })
        })
        .collect();
    let dims = if names.is_empty() {
        vec!["all".to_string()]
    } else {
        names
    };
    serde_json::json!({
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "topology": o.topo.name,
        "npus": o.topo.npus,
        "collective": o.schedule.collective.name(),
        "algorithm": o.schedule.algorithm,
        "size_bytes": o.size,
        "chunks_per_npu": o.schedule.chunks_per_npu,
        "link_model": o.model,
        "time_us": us(o.sim.time_ns),
        "lower_bound_us": us(o.bounds.bound_ns),
        "ratio": ratio(o),
        "bounds": {
            "injection_us": us(o.bounds.injection_ns),
            "cut_us": us(o.bounds.cut_ns),
            "cut": o.bounds.cut,
            "latency_us": us(o.bounds.latency_ns),
        },
        "valid": o.sim.valid,
        "data_checked": o.sim.data_checked,
        "errors": o.sim.errors,
        "error_count": o.sim.error_count,
        "transfers": o.sim.transfers,
        "hops": o.sim.hops,
        "dims": dims,
        "bytes_per_dim": o.sim.bytes_per_dim,
        "alpha_us_per_dim": o.sim.alpha_ns_per_dim.iter().map(|a| us(*a)).collect::<Vec<f64>>(),
        "critical_serialization_us_per_dim": o.sim.beta_ns_per_dim.iter().map(|a| us(*a)).collect::<Vec<f64>>(),
        "mean_bytes_per_dim": o.sim.mean_bytes_per_dim,
        "max_utilization": util.iter().copied().fold(0.0, f64::max),
        "mean_utilization": if util.is_empty() { 0.0 } else { util.iter().sum::<f64>() / util.len() as f64 },
        "links": links,
        "critical_path": path,
    })
}

fn ratio(o: &Outcome) -> f64 {
    if o.bounds.bound_ns > 0.0 {
        o.sim.time_ns / o.bounds.bound_ns
    } else {
        1.0
    }
}

fn fmt_us(ns: f64) -> String {
    format!("{} us", report::sig3(ns / 1e3))
}

/// The human-readable report.
pub fn table(o: &Outcome) -> String {
    let mut s = String::new();
    let util = o.sim.utilization();
    let _ = writeln!(
        s,
        "{} of {} B on {} ({} NPUs, {} switches, {} links)",
        o.schedule.collective,
        report::sig3(o.size),
        o.topo.name,
        o.topo.npus,
        o.topo.switches,
        o.topo.links.len()
    );
    let _ = writeln!(
        s,
        "algorithm {}, {} chunks per NPU, {} links\n",
        o.schedule.algorithm,
        o.schedule.chunks_per_npu,
        LinkModel::NAMES[o.model as usize]
    );
    let _ = writeln!(s, "time          {}", fmt_us(o.sim.time_ns));
    let _ = writeln!(
        s,
        "lower bound   {}  (injection {}, cut {} [{}], latency {}); time / bound = {:.3}",
        fmt_us(o.bounds.bound_ns),
        fmt_us(o.bounds.injection_ns),
        fmt_us(o.bounds.cut_ns),
        if o.bounds.cut.is_empty() { "-" } else { &o.bounds.cut },
        fmt_us(o.bounds.latency_ns),
        ratio(o)
    );
    if o.sim.valid && !o.sim.data_checked {
        let _ = writeln!(
            s,
            "valid         every transfer runs ({} transfers, {} link hops); the data is not known, so not checked",
            o.sim.transfers, o.sim.hops
        );
    } else if o.sim.valid {
        let _ = writeln!(
            s,
            "valid         yes ({} transfers, {} link hops)",
            o.sim.transfers, o.sim.hops
        );
    } else {
        let _ = writeln!(s, "valid         NO: {} problems", o.sim.error_count);
        for e in &o.sim.errors {
            let _ = writeln!(s, "  - {e}");
        }
    }
    let names = o.topo.dim_names();
    let names = if names.is_empty() {
        vec!["all".to_string()]
    } else {
        names
    };
    let _ = writeln!(
        s,
        "\nper dimension: bytes one NPU sends (max / mean over NPUs), latency on the critical path"
    );
    for (d, n) in names.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {:<12} {:>12} / {:>12} B   {}",
            n,
            report::sig3(o.sim.bytes_per_dim.get(d).copied().unwrap_or(0.0)),
            report::sig3(o.sim.mean_bytes_per_dim.get(d).copied().unwrap_or(0.0)),
            fmt_us(o.sim.alpha_ns_per_dim.get(d).copied().unwrap_or(0.0))
        );
    }
    let max = util.iter().copied().fold(0.0, f64::max);
    let mean = if util.is_empty() {
        0.0
    } else {
        util.iter().sum::<f64>() / util.len() as f64
    };
    let idle = util.iter().filter(|u| **u == 0.0).count();
    let _ = writeln!(
        s,
        "\nlink utilization: max {:.1}%, mean {:.1}%, {} of {} links idle",
        100.0 * max,
        100.0 * mean,
        idle,
        util.len()
    );
    let cp = &o.sim.critical_path;
    let by_link = cp.iter().filter(|p| p.waited_for == "link").count();
    let _ = writeln!(
        s,
        "critical path: {} transfers ({} waited for a busy link, {} for data)",
        cp.len(),
        by_link,
        cp.len().saturating_sub(by_link + 1)
    );
    s
}

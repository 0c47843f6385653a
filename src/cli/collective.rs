//! `dimsum collective`: the flags, parsed into the library's types (each
//! error naming its flag), one replay (`schedule::replay::Replay`), and the
//! report (`report::collective`) printed.

use clap::Args;
use dimsum::error::InputError;
use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::pipeline::exec::{Executor, RunError};
use dimsum::pipeline::jobs;
use dimsum::report;
use dimsum::report::bars::Bars;
use dimsum::schedule::Schedule;
use dimsum::schedule::algorithm::{self, Algorithm, Options, SpecError};
use dimsum::schedule::builtin::Algo;
use dimsum::schedule::simulate::LinkModel;
use dimsum::schedule::{bounds, product};
use dimsum::study::topology;
use std::path::PathBuf;

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
    /// swing-latency, recursive-doubling, recursive-doubling-bw, bucket, tacos
    /// (synthesized), forest (spanning trees at the exact cut rate), flow (all-to-all
    /// along an optimal multi-commodity flow) or best (every other one replayed, the
    /// fastest kept; default: hierarchical on topologies of dimensions, else ring).
    #[arg(long)]
    pub algorithm: Option<String>,
    /// Per-dimension algorithms of a hierarchical schedule, comma-separated
    /// (default: bidirectional-ring on rings and lines, direct on fully-connected groups and switches).
    #[arg(long)]
    pub dim_algorithms: Option<String>,
    /// The collective's whole buffer: the all-gather output, the reduce-scatter input,
    /// the all-reduce vector, one NPU's all-to-all send buffer (e.g. 1GiB, 64MB, 1048576).
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Chunks per NPU shard: more chunks pipeline across steps and dimensions
    /// (tacos, forest and flow: the default, 1, lets them choose; give 2 or more to fix it).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub chunks_per_npu: u32,
    /// Link bandwidth of ring/fc/switch/torus/mesh topologies, one value or one per
    /// dimension (GB/s, or with a unit: 50GiB/s; default 50).
    #[arg(long, allow_hyphen_values = true)]
    pub link_gbps: Option<String>,
    /// Link latency of ring/fc/switch/torus/mesh topologies, one value or one per
    /// dimension (us, or with a unit: 500ns; default 0.5).
    #[arg(long, allow_hyphen_values = true)]
    pub link_latency_us: Option<String>,
    /// For fabric: topologies, GB/s per NPU per dimension (default: the study's `bw`).
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Option<String>,
    /// alpha-beta (a link is busy for size/bandwidth) or tacos (latency + size/bandwidth).
    #[arg(long, default_value = "alpha-beta")]
    pub link_model: String,
    /// swing, swing-latency, recursive-doubling(-bw), bucket: one collective instead of
    /// 2D concurrent ones (one per dimension and direction).
    #[arg(long)]
    pub single_port: bool,
    /// best and tacos's chunk choice: stop once a schedule is within this much of
    /// the certified bound (a fraction, 0.01, or a percentage, 1%; 0 tries every
    /// builder that might be faster, every chunk count that gains).
    #[arg(long, allow_hyphen_values = true, default_value = "1%")]
    pub best_tolerance: String,
    /// Seed of the tacos synthesis.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub seed: u64,
    /// tacos: synthesize with this many seeds (from --seed, in parallel) and keep the fastest.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
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
    /// forest on a torus-like product network: build the schedule and replay it
    /// transfer by transfer (default: timed in rounds by translation symmetry, in
    /// milliseconds, unless --schedule-out or --charts asks for the schedule; networks
    /// too large to build are always timed in rounds; meshes are always replayed).
    #[arg(long)]
    pub replay: bool,
}

/// The `--collective` named.
pub fn collective_kind(s: &str) -> Result<CollectiveKind, InputError> {
    CollectiveKind::scheduled(s).map_err(|e| InputError::arg("--collective", e.to_string()))
}

/// The `--link-model` named.
pub fn link_model(name: &str) -> Result<LinkModel, InputError> {
    name.parse::<LinkModel>()
        .map_err(|e| InputError::arg("--link-model", e.to_string()))
}

/// The collective, builder and options the arguments ask for (`size`
/// matters to synthesis and is the buffer replayed).
pub fn spec_of(
    args: &CollectiveArgs,
    topo: &Topology,
    size: f64,
) -> Result<(CollectiveKind, Algorithm, Options), InputError> {
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
        link_model: link_model(&args.link_model)?,
        // `collective` replays the network alone (its topologies carry no
        // NPU memory).
        reduce_gbps: None,
        tolerance: tolerance(&args.best_tolerance)?,
    };
    Ok((kind, algorithm, opt))
}

/// A builder's refusal, under the flag that asked for it.
fn spec_error(e: SpecError) -> InputError {
    let flag = match e {
        SpecError::Chunks => "--chunks-per-npu",
        SpecError::DimAlgorithms => "--dim-algorithms",
        SpecError::Ports => "--single-port",
        SpecError::Restarts => "--restarts",
        SpecError::Tolerance => "--best-tolerance",
        SpecError::Build(_) => "--algorithm",
    };
    InputError::arg(flag, e.to_string())
}

/// `--best-tolerance`: a fraction (0.01) or a percentage (1%).
pub fn tolerance(given: &str) -> Result<f64, InputError> {
    algorithm::parse_tolerance(given).map_err(|e| InputError::arg("--best-tolerance", e.to_string()))
}

/// A forest on a product network, timed in rounds (too large to replay, or
/// no schedule asked for).
fn rounds(args: &CollectiveArgs, topo: &Topology, size: f64) -> anyhow::Result<()> {
    let refuse = |flag: &str| {
        InputError::arg(
            flag,
            format!(
                "forest on {} ({} NPUs) is timed in rounds, not built transfer by transfer: there is no schedule to write",
                topo.name, topo.npus
            ),
        )
    };
    if args.schedule_out.is_some() {
        return Err(refuse("--schedule-out").into());
    }
    if args.charts.is_some() {
        return Err(refuse("--charts").into());
    }
    let kind = collective_kind(&args.collective)?;
    let pieces = if args.chunks_per_npu > 1 {
        args.chunks_per_npu
    } else {
        0
    };
    let r = product::round_time(topo, kind, size, pieces)
        .map_err(|e| InputError::arg("--algorithm", e.to_string()))?
        .ok_or_else(|| InputError::arg("--algorithm", "forest rounds need a product network"))?;
    let b = bounds::lower_bounds(topo, kind, size);
    if args.json {
        println!("{}", report::collective::rounds_json(topo, size, &r, &b));
    } else {
        print!("{}", report::collective::rounds_table(topo, size, &r, &b));
    }
    Ok(())
}

/// Runs `dimsum collective`.
pub fn run(args: &CollectiveArgs) -> anyhow::Result<()> {
    let topo = topology::from_flags(
        &args.topology,
        args.link_gbps.as_deref(),
        args.link_latency_us.as_deref(),
        args.bw.as_deref(),
    )?;
    // A schedule file records the buffer it was built for.
    let loaded = match &args.schedule_in {
        Some(path) => Some(Schedule::load(path)?),
        None => None,
    };
    let size = topology::collective_buffer(args.size.as_deref(), loaded.as_ref())?;
    let forest = args.algorithm.as_deref().and_then(|a| a.parse::<Algorithm>().ok()) == Some(Algorithm::Forest);
    if forest && args.schedule_in.is_none() {
        let kind = collective_kind(&args.collective)?;
        let wants_schedule = args.replay || args.schedule_out.is_some() || args.charts.is_some();
        if product::timed_in_rounds(&topo, kind, wants_schedule) {
            return rounds(args, &topo, size);
        }
    }
    let (kind, algorithm, options) = spec_of(args, &topo, size)?;
    let job = jobs::Collective {
        topology: topo,
        kind,
        algorithm,
        options,
        given: loaded,
        record: args.charts.is_some(),
    };
    let bars = Bars::stages();
    let out = Executor::new(&bars).run(job);
    bars.finish();
    let out = out.map_err(|e| match e {
        RunError::Build(e) => spec_error(e).into(),
        RunError::Simulate(e) => InputError::arg("--schedule-in", e.to_string()).into(),
        other => anyhow::Error::from(other),
    })?;
    if let Some(path) = &args.schedule_out {
        dimsum::io::write_atomic(path, out.schedule.to_json().as_bytes())?;
    }
    if let Some(dir) = &args.charts {
        let staged = dimsum::io::Staged::new(dir)?;
        report::schedule::utilization_chart(staged.dir(), &out.topo, &out.sim)?;
        report::schedule::timeline_chart(staged.dir(), &out.topo, &out.schedule, &out.sim)?;
        staged.commit()?;
    }
    if args.json {
        println!("{}", report::collective::json(&out));
    } else {
        print!("{}", report::collective::table(&out));
    }
    if !out.sim.valid {
        anyhow::bail!(
            "the schedule is invalid: {}",
            out.sim.errors.first().cloned().unwrap_or_default()
        );
    }
    Ok(())
}

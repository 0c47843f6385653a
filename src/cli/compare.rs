//! `dimsum compare`: collective algorithms against each other over
//! topologies and vector sizes, each schedule built, replayed and checked:
//! a CSV, a markdown table and the chart of the speedup of the algorithms
//! under study over the best of the baselines.

use super::collective::{CollectiveArgs, schedule_of, topology_of};
use clap::Args;
use dimsum::error::InputError;
use dimsum::io::Stamp;
use dimsum::model::units;
use dimsum::report::{self, Series};
use dimsum::schedule::bounds;
use dimsum::schedule::simulate::{self, SimOptions};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Options of `dimsum compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Topologies, comma-separated, as `collective --topology` takes them (e.g. ring:16,torus:8x8,torus:4x4x4).
    #[arg(long)]
    pub topologies: String,
    /// The algorithms under study, comma-separated (their best is compared).
    #[arg(long, default_value = "swing,swing-latency")]
    pub algorithms: String,
    /// The baselines, comma-separated (their best is the reference).
    #[arg(
        long,
        default_value = "ring,bidirectional-ring,recursive-doubling,recursive-doubling-bw,bucket,hierarchical"
    )]
    pub baselines: String,
    /// Vector sizes: a comma-separated list, or FROM..TO for every power of 4 from FROM to TO.
    #[arg(long, default_value = "32B..128MiB")]
    pub sizes: String,
    /// all-gather, reduce-scatter or all-reduce.
    #[arg(long, default_value = "all-reduce")]
    pub collective: String,
    /// Link bandwidth, GB/s (one value or one per dimension).
    #[arg(long, default_value = "50")]
    pub link_gbps: String,
    /// Link latency, us (one value or one per dimension).
    #[arg(long, default_value = "0.5")]
    pub link_latency_us: String,
    /// alpha-beta or tacos.
    #[arg(long, default_value = "alpha-beta")]
    pub link_model: String,
    /// Output directory: compare.csv, compare.md, speedup.svg and speedup.png.
    #[arg(long)]
    pub out: PathBuf,
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The sizes `--sizes` names, bytes.
pub fn sizes(text: &str) -> Result<Vec<f64>, InputError> {
    let bad = |m: String| InputError::arg("--sizes", m);
    if let Some((a, b)) = text.split_once("..") {
        let (lo, hi) = (
            units::parse_bytes(a.trim()).map_err(|e| bad(e.to_string()))?,
            units::parse_bytes(b.trim()).map_err(|e| bad(e.to_string()))?,
        );
        if !(lo >= 1.0 && hi >= lo) {
            return Err(bad(format!(
                "`{text}`: FROM must be at least 1 byte and TO at least FROM"
            )));
        }
        let mut out = Vec::new();
        let mut s = lo;
        while s <= hi * (1.0 + 1e-12) {
            out.push(s);
            s *= 4.0;
        }
        return Ok(out);
    }
    let v: Vec<f64> = split(text)
        .iter()
        .map(|x| units::parse_bytes(x))
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if v.is_empty() {
        return Err(bad("list at least one size".into()));
    }
    Ok(v)
}

/// One replay.
struct Row {
    topology: String,
    npus: u32,
    size: f64,
    algorithm: String,
    time_us: f64,
    bound_us: f64,
    valid: bool,
}

fn human(bytes: f64) -> String {
    let b = bytes as u64;
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Runs the comparison.
pub fn run(args: &CompareArgs) -> anyhow::Result<()> {
    let topologies = split(&args.topologies);
    let subjects = split(&args.algorithms);
    let baselines = split(&args.baselines);
    if topologies.is_empty() {
        return Err(InputError::arg("--topologies", "list at least one topology").into());
    }
    if subjects.is_empty() || baselines.is_empty() {
        return Err(InputError::arg("--algorithms", "list at least one algorithm and one baseline").into());
    }
    let sizes = sizes(&args.sizes)?;
    let model = super::collective::link_model(&args.link_model)?;
    let all: Vec<&String> = subjects.iter().chain(&baselines).collect();
    let progress = super::Progress::new(topologies.len() * all.len(), "compare");
    let mut rows = Vec::new();
    let mut done = 0;
    for spec in &topologies {
        for algo in &all {
            let cargs = CollectiveArgs {
                topology: spec.clone(),
                collective: args.collective.clone(),
                algorithm: Some((*algo).clone()),
                dim_algorithms: None,
                size: None,
                chunks_per_npu: 1,
                link_gbps: Some(args.link_gbps.clone()),
                link_latency_us: Some(args.link_latency_us.clone()),
                bw: None,
                link_model: args.link_model.clone(),
                single_port: false,
                seed: 0,
                restarts: 1,
                schedule_in: None,
                schedule_out: None,
                charts: None,
                json: false,
            };
            let topo = topology_of(&cargs).map_err(|e| {
                InputError::arg(
                    if e.field.starts_with("--link") {
                        e.field.as_str()
                    } else {
                        "--topologies"
                    },
                    format!("{spec}: {}", e.message),
                )
            })?;
            let mut schedule = None;
            for &size in &sizes {
                // Synthesis depends on the size; the others are built once.
                if schedule.is_none() || algo.as_str() == "tacos" {
                    schedule = Some(
                        schedule_of(&cargs, &topo, size)
                            .map_err(|e| InputError::arg("--algorithms", format!("{spec}, {algo}: {}", e.message)))?,
                    );
                }
                let s = schedule.as_ref().unwrap_or_else(|| unreachable!());
                let opt = SimOptions {
                    size_bytes: size,
                    model,
                    record: false,
                };
                let sim = simulate::simulate(s, &topo, &opt)
                    .map_err(|e| InputError::arg("--algorithms", format!("{spec}, {algo}: {e}")))?;
                rows.push(Row {
                    topology: spec.clone(),
                    npus: topo.npus,
                    size,
                    algorithm: (*algo).clone(),
                    time_us: sim.time_ns / 1e3,
                    bound_us: bounds::lower_bounds(&topo, s.collective, size).bound_ns / 1e3,
                    valid: sim.valid,
                });
            }
            done += 1;
            progress.set(done);
        }
    }
    progress.finish();
    std::fs::create_dir_all(&args.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.out.display()))?;
    let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let stamp = Stamp::of(command.as_bytes());
    // CSV.
    let mut csv = String::from("topology,npus,collective,size_bytes,algorithm,time_us,lower_bound_us,valid\n");
    for r in &rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.6},{:.6},{}",
            r.topology, r.npus, args.collective, r.size, r.algorithm, r.time_us, r.bound_us, r.valid
        );
    }
    // Speedup per topology and size: best baseline / best subject.
    let best = |topo: &str, size: f64, names: &[String]| -> Option<(f64, String)> {
        rows.iter()
            .filter(|r| r.topology == topo && r.size == size && names.contains(&r.algorithm))
            .map(|r| (r.time_us, r.algorithm.clone()))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    let mut series: Vec<Series> = Vec::new();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# {} of {} against {}\n",
        args.collective,
        subjects.join(" / "),
        baselines.join(", ")
    );
    let _ = writeln!(
        md,
        "Generated by `dimsum {command}`. Every schedule is built, replayed with link contention\n\
         ({} links, {} GB/s and {} us per link) and checked; times in us, the best per row in bold.\n\
         Speedup: the best baseline's time over the best of {}'s.\n",
        args.link_model,
        args.link_gbps,
        args.link_latency_us,
        subjects.join(" / ")
    );
    for spec in &topologies {
        let mut pts = Vec::new();
        let _ = writeln!(md, "## {spec}\n");
        let _ = writeln!(
            md,
            "| size | bound | {} | speedup | best baseline |",
            all.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(md, "|---|---|{}---|---|", "---|".repeat(all.len()));
        for &size in &sizes {
            let (Some((sub, _)), Some((base, base_name))) = (best(spec, size, &subjects), best(spec, size, &baselines))
            else {
                continue;
            };
            let speedup = base / sub;
            pts.push((size, speedup));
            let fastest = sub.min(base);
            let cells: Vec<String> = all
                .iter()
                .map(|a| {
                    rows.iter()
                        .find(|r| r.topology == *spec && r.size == size && r.algorithm == **a)
                        .map_or("-".into(), |r| {
                            let t = report::sig3(r.time_us);
                            let t = if r.valid { t } else { format!("{t} (invalid)") };
                            if r.time_us == fastest { format!("**{t}**") } else { t }
                        })
                })
                .collect();
            let bound = rows
                .iter()
                .find(|r| r.topology == *spec && r.size == size)
                .map_or(0.0, |r| r.bound_us);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.2}x | {base_name} |",
                human(size),
                report::sig3(bound),
                cells.join(" | "),
                speedup
            );
        }
        let _ = writeln!(md);
        series.push((spec.clone(), pts));
    }
    let invalid = rows.iter().filter(|r| !r.valid).count();
    let _ = writeln!(md, "{} replays, {} invalid.\n\n*{}*", rows.len(), invalid, stamp.line());
    dimsum::io::write_atomic(&args.out.join("compare.csv"), csv.as_bytes())?;
    dimsum::io::write_atomic(&args.out.join("compare.md"), md.as_bytes())?;
    report::line_chart(
        &args.out,
        "speedup",
        &format!(
            "{} {}: speedup over the best baseline",
            subjects.join(" / "),
            args.collective
        ),
        "vector size (bytes)",
        "speedup (best baseline time / time)",
        &series,
        Some(1.0),
        &stamp,
    )?;
    println!(
        "{} replays ({} invalid) written to {}",
        rows.len(),
        invalid,
        args.out.display()
    );
    if invalid > 0 {
        anyhow::bail!("{invalid} schedules were invalid (see compare.md)");
    }
    Ok(())
}

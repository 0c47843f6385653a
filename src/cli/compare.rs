//! `dimsum compare`: collective algorithms against each other over
//! topologies and vector sizes. The flags are parsed here (each error
//! naming its flag); `schedule::compare` builds, replays and bounds every
//! schedule, and `report::compare` renders the CSV, the markdown table and
//! the speedup chart, which are written here.

use clap::Args;
use dimsum::error::InputError;
use dimsum::io::Stamp;
use dimsum::model::units;
use dimsum::pipeline::collective::{collective_kind, link_model};
use dimsum::pipeline::exec::{Executor, RunError};
use dimsum::pipeline::jobs;
use dimsum::report::bars::Bars;
use dimsum::report::compare::{self as render, Setup};
use dimsum::schedule::algorithm::Algorithm;
use dimsum::study::topology;
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
    #[arg(long, allow_hyphen_values = true, default_value = "32B..128MiB")]
    pub sizes: String,
    /// all-gather, reduce-scatter or all-reduce.
    #[arg(long, default_value = "all-reduce")]
    pub collective: String,
    /// Link bandwidth, GB/s (one value or one per dimension; default 50),
    /// for the topologies that do not bring their own links (not
    /// `fabric:`, `edges:` or `astra:`).
    #[arg(long, allow_hyphen_values = true)]
    pub link_gbps: Option<String>,
    /// Link latency, us (one value or one per dimension; default 0.5), as
    /// `--link-gbps`.
    #[arg(long, allow_hyphen_values = true)]
    pub link_latency_us: Option<String>,
    /// GB/s per NPU per dimension for the `fabric:STUDY.toml` topologies
    /// (default: each study's `bw`).
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Option<String>,
    /// alpha-beta or tacos.
    #[arg(long, default_value = "alpha-beta")]
    pub link_model: String,
    /// Output directory: compare.csv, compare.md, speedup.svg and speedup.png.
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs the comparison.
pub fn run(args: &CompareArgs) -> anyhow::Result<()> {
    let topologies = units::split_list(&args.topologies);
    let subjects = units::split_list(&args.algorithms);
    let baselines = units::split_list(&args.baselines);
    if topologies.is_empty() {
        return Err(InputError::arg("--topologies", "list at least one topology").into());
    }
    if subjects.is_empty() || baselines.is_empty() {
        return Err(InputError::arg("--algorithms", "list at least one algorithm and one baseline").into());
    }
    let sizes = units::parse_sizes(&args.sizes).map_err(|e| InputError::arg("--sizes", e.to_string()))?;
    let model = link_model(&args.link_model)?;
    let kind = collective_kind(&args.collective)?;
    let parse = |list: &[String]| {
        list.iter()
            .map(|a| a.parse::<Algorithm>())
            .collect::<Result<Vec<_>, _>>()
    };
    let bad = |e: dimsum::error::UnknownName| InputError::arg("--algorithms", e.to_string());
    let (subjects, baselines) = (parse(&subjects).map_err(bad)?, parse(&baselines).map_err(bad)?);
    // Every topology is built (and checked) before the first replay.
    let (g, l) = (args.link_gbps.as_deref(), args.link_latency_us.as_deref());
    let built = topology::from_flag_list(&topologies, g, l, args.bw.as_deref())?;
    let all: Vec<Algorithm> = subjects.iter().chain(&baselines).copied().collect();
    let bars = Bars::new();
    let job = jobs::Compare {
        topologies: &built,
        kind,
        algorithms: &all,
        sizes: &sizes,
        model,
    };
    let rows = Executor::new(&bars).run(job).map_err(|e| match e {
        RunError::Compare(e) => anyhow::Error::from(InputError::arg("--algorithms", e.to_string())),
        other => other.into(),
    })?;
    bars.finish();
    // The CSV, the table and the chart land together.
    let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let setup = Setup {
        collective: kind,
        subjects: &subjects,
        baselines: &baselines,
        topologies: &topologies,
        sizes: &sizes,
        model,
        link_gbps: args.link_gbps.as_deref().unwrap_or("50"),
        link_latency_us: args.link_latency_us.as_deref().unwrap_or("0.5"),
        command: &command,
    };
    render::write(&args.out, &rows, &setup, &Stamp::of(command.as_bytes()))?;
    let invalid = rows.iter().filter(|r| !r.valid).count();
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

//! `dimsum collective`: the flags as the library's request
//! (`pipeline::collective::Request`, which parses them, each error naming
//! its flag), one replay (`schedule::replay::Replay`) or forest timed in
//! rounds, and the report (`report::collective`) printed.

use clap::Args;
use dimsum::pipeline::collective::{Outcome, Request};
use dimsum::pipeline::exec::Executor;
use dimsum::report;
use dimsum::report::bars::Bars;
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

/// The library's request for these arguments.
fn request(args: &CollectiveArgs) -> Request {
    Request {
        topology: args.topology.clone(),
        collective: args.collective.clone(),
        algorithm: args.algorithm.clone(),
        dim_algorithms: args.dim_algorithms.clone(),
        size: args.size.clone(),
        chunks_per_npu: args.chunks_per_npu,
        link_gbps: args.link_gbps.clone(),
        link_latency_us: args.link_latency_us.clone(),
        bw: args.bw.clone(),
        link_model: args.link_model.clone(),
        single_port: args.single_port,
        best_tolerance: args.best_tolerance.clone(),
        seed: args.seed,
        restarts: args.restarts,
        schedule_in: args.schedule_in.clone(),
        replay: args.replay,
        schedule_out: args.schedule_out.is_some(),
        charts: args.charts.is_some(),
    }
}

/// Runs `dimsum collective`.
pub fn run(args: &CollectiveArgs) -> anyhow::Result<()> {
    let bars = Bars::stages();
    let out = Executor::new(&bars).run(request(args));
    bars.finish();
    let out = match out.map_err(super::lift)? {
        Outcome::Replayed(out) => out,
        Outcome::Rounds(r) => {
            if args.json {
                println!(
                    "{}",
                    report::collective::rounds_json(&r.topology, r.size, &r.time, &r.bounds)
                );
            } else {
                print!(
                    "{}",
                    report::collective::rounds_table(&r.topology, r.size, &r.time, &r.bounds)
                );
            }
            return Ok(());
        }
    };
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

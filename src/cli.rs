//! The command line: clap commands, human-readable tables, JSON on stdout.
//!
//! Contract (DESIGN.md): `--json` prints one JSON object on stdout and nothing
//! else there; logs go to stderr. Exit 0 on success, 1 for a failed run, 2 for
//! bad input ([`crate::error::InputError`], or a clap usage error).

use crate::error::InputError;
use crate::eval::Evaluation;
use crate::interop::libra;
use crate::study::Study;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// dimsum: design the network fabrics of ML training clusters.
#[derive(Debug, Parser)]
#[command(name = "dimsum", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Iteration time, network cost and power of one bandwidth allocation.
    Eval {
        /// Study file (TOML).
        study: PathBuf,
        /// GB/s per NPU per dimension, comma-separated (default: the study's `bw`).
        #[arg(long, allow_hyphen_values = true)]
        bw: Option<String>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Convert another tool's inputs into a study file (printed on stdout).
    Import {
        /// Source format.
        #[command(subcommand)]
        from: ImportFrom,
    },
}

/// Formats `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportFrom {
    /// LIBRA's four input files.
    Libra {
        /// Network YAML (Topology, NpusCount, CostDimension).
        #[arg(long)]
        network: PathBuf,
        /// ASTRA-sim 1.0 workload text.
        #[arg(long)]
        workload: PathBuf,
        /// Communicator YAML (Forward, InputGrad, WeightGrad).
        #[arg(long)]
        communicator: PathBuf,
        /// Cost-model YAML ($ per GB/s per tier).
        #[arg(long)]
        cost: PathBuf,
        /// Study name (default: the workload's file stem).
        #[arg(long)]
        name: Option<String>,
    },
}

/// Runs one command; what it prints goes to stdout.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Eval { study, bw, json } => {
            let study = Study::load(&study)?;
            let bw = match (bw, &study.bw) {
                (Some(s), _) => study.parse_bw(&s)?,
                (None, Some(b)) => b.clone(),
                (None, None) => {
                    return Err(InputError::arg(
                        "--bw",
                        "the study names no allocation (`bw = [...]`): pass --bw with one GB/s value per dimension",
                    )
                    .into());
                }
            };
            let e = study.evaluate(&bw);
            if let Some(d) = e.dims.iter().find(|d| d.busy_ms.is_infinite()) {
                return Err(InputError::arg(
                    "--bw",
                    format!(
                        "dimension `{}` carries traffic but gets 0 GB/s: give it a positive bandwidth",
                        d.name
                    ),
                )
                .into());
            }
            for d in e.dims.iter().filter(|d| !d.within_bounds) {
                eprintln!(
                    "warning: {} GB/s on `{}` is outside the dimension's bounds",
                    d.bw_gbps, d.name
                );
            }
            if json {
                let v = serde_json::json!({
                    "study": study.name,
                    "dimsum_version": env!("CARGO_PKG_VERSION"),
                    "fabric": study.fabric.shape(),
                    "time_model": study.collective.time_model.name(),
                    "training_loop": study.training_loop.name(),
                    "evaluation": &e,
                });
                // Flatten the evaluation's fields to the top level.
                let mut obj = v.as_object().cloned().unwrap_or_default();
                if let Some(serde_json::Value::Object(ev)) = obj.remove("evaluation") {
                    obj.extend(ev);
                }
                println!("{}", serde_json::Value::Object(obj));
            } else {
                print!("{}", table(&study, &e));
            }
            Ok(())
        }
        Command::Import {
            from:
                ImportFrom::Libra {
                    network,
                    workload,
                    communicator,
                    cost,
                    name,
                },
        } => {
            let mut study = libra::study_from_files(&network, &workload, &communicator, &cost)?;
            if let Some(n) = name {
                study.name = n;
            }
            study.description = format!("LIBRA inputs: {} on {}", workload.display(), study.fabric.shape());
            let header = vec![
                format!("dimsum study imported from LIBRA's inputs by dimsum {}", env!("CARGO_PKG_VERSION")),
                format!("network: {}", network.display()),
                format!("workload: {}", workload.display()),
                format!("communicator: {}", communicator.display()),
                format!("cost model: {}", cost.display()),
                "LIBRA (astra-sim/libra) inputs are MIT-licensed: Copyright (c) 2024 Georgia Institute of Technology, Intel Corporation.".into(),
                "Compute times are ns and sizes bytes, as LIBRA reads them; no latency (LIBRA's time model).".into(),
            ];
            print!("{}", study.to_toml(&header));
            Ok(())
        }
    }
}

/// A readable report of one evaluation.
pub fn table(study: &Study, e: &Evaluation) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {} = {} NPUs", study.fabric.shape(), e.npus);
    let _ = writeln!(
        s,
        "model        time {}, loop {}, {} collectives",
        study.collective.time_model.name(),
        study.training_loop.name(),
        e.collectives
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "iteration    {:>14.3} ms   (lower bound {:.3} ms)",
        e.iteration_time_ms, e.iteration_lower_bound_ms
    );
    let _ = writeln!(s, "  compute    {:>14.3} ms", e.compute_time_ms);
    let _ = writeln!(
        s,
        "  exposed comm {:>12.3} ms   (all collectives {:.3} ms)",
        e.comm_time_ms, e.total_collective_time_ms
    );
    let _ = writeln!(s, "network cost {:>14.0} $", e.network_cost_usd);
    let _ = writeln!(s, "network power{:>14.1} W", e.network_power_w);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<16} {:>5} {:>10} {:>14} {:>12} {:>10} {:>14} {:>12}",
        "dimension", "block", "npus", "GB/s", "MB/NPU/iter", "busy ms", "slowest", "cost $", "power W"
    );
    for d in &e.dims {
        let _ = writeln!(
            s,
            "{:<12} {:<16} {:>5} {:>10.2} {:>14.3} {:>12.3} {:>10} {:>14.0} {:>12.1}{}",
            d.name,
            d.block.name(),
            d.npus,
            d.bw_gbps,
            d.bytes_per_npu / 1e6,
            d.busy_ms,
            d.bottleneck_of,
            d.cost_usd,
            d.power_w,
            if d.within_bounds { "" } else { "  (outside bounds)" }
        );
    }
    s
}

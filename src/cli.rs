//! The command line: clap commands, human-readable tables, JSON on stdout.
//!
//! Contract (DESIGN.md): `--json` prints one JSON object on stdout and nothing
//! else there; logs go to stderr. Exit 0 on success, 1 for a failed run, 2 for
//! bad input ([`crate::error::InputError`], or a clap usage error).

use crate::error::InputError;
use crate::eval::Evaluation;
use crate::interop::libra;
use crate::optimize::{self, Objective, Problem, Solution};
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
    /// The optimal bandwidth per dimension, certified (lower bound and gap).
    Optimize {
        /// Study file (TOML).
        study: PathBuf,
        /// perf, perf-per-cost, min-cost or min-power (default: the study's, else perf).
        #[arg(long)]
        objective: Option<String>,
        /// A linear constraint, e.g. "B0 + B1 == 1000", "cost <= 2e7"; repeatable.
        #[arg(long = "constraint", allow_hyphen_values = true)]
        constraints: Vec<String>,
        /// Iteration-time target for min-cost and min-power, ms.
        #[arg(long)]
        target_ms: Option<f64>,
        /// Ignore the study's `[optimize]` constraints (keep the fabric's bounds).
        #[arg(long)]
        no_study_constraints: bool,
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
        Command::Optimize {
            study,
            objective,
            constraints,
            target_ms,
            no_study_constraints,
            json,
        } => {
            let mut study = Study::load(&study)?;
            if no_study_constraints {
                study.optimize.constraints.clear();
            }
            let objective = objective_of(&study, objective.as_deref(), target_ms)?;
            let constraints = study.constraints(&constraints)?;
            let problem = Problem::new(&study.fabric, study.iteration_model(), study.linear_cost(), constraints);
            let started = std::time::Instant::now();
            let sol = optimize::solve(&problem, objective)?;
            let solve_ms = started.elapsed().as_secs_f64() * 1e3;
            if json {
                let mut obj = serde_json::Map::new();
                obj.insert("study".into(), study.name.clone().into());
                obj.insert("dimsum_version".into(), env!("CARGO_PKG_VERSION").into());
                obj.insert("fabric".into(), study.fabric.shape().into());
                obj.insert("solve_ms".into(), solve_ms.into());
                if let serde_json::Value::Object(m) = serde_json::to_value(&sol)? {
                    obj.extend(m);
                }
                let e = study.evaluate(&sol.bw_gbps);
                obj.insert("iteration_lower_bound_ms".into(), e.iteration_lower_bound_ms.into());
                obj.insert("dims".into(), serde_json::to_value(&e.dims)?);
                println!("{}", serde_json::Value::Object(obj));
            } else {
                print!("{}", optimize_table(&study, &sol, solve_ms));
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

/// The objective from the command line or the study.
fn objective_of(study: &Study, name: Option<&str>, target_ms: Option<f64>) -> Result<Objective, InputError> {
    let from_cli = name.is_some();
    let name = name.or(study.optimize.objective.as_deref()).unwrap_or("perf");
    let target = target_ms.or(study.optimize.target_ms);
    if let Some(t) = target_ms
        && !(t.is_finite() && t > 0.0)
    {
        return Err(InputError::arg(
            "--target-ms",
            format!("{t} is not allowed: use a time > 0 ms"),
        ));
    }
    let need_target = |name: &str| {
        target.ok_or_else(|| {
            InputError::arg(
                "--target-ms",
                format!("`{name}` needs an iteration-time target: pass --target-ms or set target_ms in [optimize]"),
            )
        })
    };
    Ok(match name {
        "perf" => Objective::Perf,
        "perf-per-cost" => Objective::PerfPerCost,
        "min-cost" => Objective::MinCost {
            target_ms: need_target(name)?,
        },
        "min-power" => Objective::MinPower {
            target_ms: need_target(name)?,
        },
        other => {
            let field = if from_cli { "--objective" } else { "optimize.objective" };
            return Err(InputError::arg(
                field,
                format!(
                    "`{other}` is not an objective; allowed: {}",
                    crate::error::one_of(&Objective::NAMES)
                ),
            ));
        }
    })
}

/// A readable report of one optimization.
pub fn optimize_table(study: &Study, sol: &Solution, solve_ms: f64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {}", study.fabric.shape());
    let _ = writeln!(
        s,
        "objective    {} = {:.9} {}   (certified lower bound {:.9}, gap {:.1e}; {} LP solves, {:.1} ms)",
        sol.objective, sol.objective_value, sol.objective_unit, sol.lower_bound, sol.gap, sol.lp_solves, solve_ms
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "{:<12} {:<16} {:>12}", "dimension", "block", "GB/s");
    for (d, b) in study.fabric.dims.iter().zip(&sol.bw_gbps) {
        let _ = writeln!(s, "{:<12} {:<16} {:>12.4}", d.name, d.block.name(), b);
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "iteration    {:>14.6} ms", sol.iteration_time_ms);
    let _ = writeln!(s, "network cost {:>14.0} $", sol.network_cost_usd);
    let _ = writeln!(s, "network power{:>14.1} W", sol.network_power_w);
    if let Some(x) = sol.speedup_vs_equal_split {
        let _ = writeln!(
            s,
            "speedup      {x:>14.4} x over the equal split of the same total bandwidth"
        );
    }
    let _ = writeln!(s);
    if sol.binding_constraints.is_empty() {
        let _ = writeln!(s, "no constraint binds");
    } else {
        let _ = writeln!(
            s,
            "binding constraints (change of the objective per unit the right-hand side rises):"
        );
        for b in &sol.binding_constraints {
            match b.marginal {
                Some(m) => {
                    let _ = writeln!(
                        s,
                        "  {:<40} {:>+14.6} {} per {}",
                        b.constraint, m, sol.objective_unit, b.per
                    );
                }
                None => {
                    let _ = writeln!(s, "  {}", b.constraint);
                }
            }
        }
    }
    s
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

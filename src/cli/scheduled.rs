//! `--evaluator schedule` for eval, optimize, frontier and run: the figures
//! of `scheduled` as tables, JSON, CSV and charts.

use super::Progress;
use dimsum::error::{InputError, one_of};
use dimsum::model::eval::evaluate;
use dimsum::model::units::ns_to_ms;
use dimsum::optimize::scheduled::{self, Backed, CollectiveFigures, Evaluator, FixedPoint, ScheduledError};
use dimsum::optimize::{Objective, Problem};
use dimsum::report::sig3;
use dimsum::study::Study;
use serde_json::Value;
use std::fmt::Write as _;

/// The evaluator options of eval, optimize, frontier and run; each
/// overrides the study's `[evaluator]` section.
#[derive(Debug, Clone, clap::Args)]
pub struct EvaluatorArgs {
    /// analytic (formulas) or schedule (every collective replayed as the
    /// schedule it runs; default: the study's [evaluator] kind, else analytic).
    #[arg(long)]
    pub evaluator: Option<String>,
    /// Schedule algorithm for --evaluator schedule: hierarchical, ring,
    /// bidirectional-ring, direct, halving-doubling, swing or tacos.
    #[arg(long)]
    pub schedule_algorithm: Option<String>,
    /// Chunks per NPU of the schedules (1 to 64).
    #[arg(long)]
    pub schedule_chunks: Option<u32>,
}

impl EvaluatorArgs {
    /// Applies the options to the study and returns the evaluator.
    pub fn apply(&self, study: &mut Study) -> Result<Evaluator, InputError> {
        if let Some(f) = &self.evaluator {
            study.evaluator.evaluator = Evaluator::parse(f).ok_or_else(|| {
                InputError::arg(
                    "--evaluator",
                    format!("`{f}` is not an evaluator; allowed: {}", one_of(&Evaluator::NAMES)),
                )
            })?;
        }
        if let Some(a) = &self.schedule_algorithm {
            if !scheduled::ALGORITHMS.contains(&a.as_str()) {
                return Err(InputError::arg(
                    "--schedule-algorithm",
                    format!(
                        "`{a}` is not a schedule algorithm; allowed: {}",
                        one_of(&scheduled::ALGORITHMS)
                    ),
                ));
            }
            study.evaluator.algorithm = a.clone();
            study.evaluator.per_collective.clear();
        }
        if let Some(k) = self.schedule_chunks {
            if !(1..=64).contains(&k) {
                return Err(InputError::arg(
                    "--schedule-chunks",
                    format!("{k} is not allowed: use 1 to 64"),
                ));
            }
            study.evaluator.chunks_per_npu = k;
        }
        Ok(study.evaluator.evaluator)
    }
}

/// A study's choice that cannot be built is bad input (exit 2); a replay
/// or solver failure is not.
fn lift(study: &Study, e: ScheduledError) -> anyhow::Error {
    match study.evaluator_error(e) {
        Ok(input) => input.into(),
        Err(other) => other.into(),
    }
}

/// The per-collective table: where the analytic model is optimistic or
/// pessimistic, and by how much.
pub fn collectives_table(cs: &[CollectiveFigures]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<15} {:>12} {:<20} {:>5} {:<34} {:>12} {:>12} {:>12} {:>8}  verdict",
        "collective", "bytes", "group", "count", "schedule", "simulated ms", "analytic ms", "bound ms", "sim/ana"
    );
    for c in cs {
        let verdict = if (c.ratio - 1.0).abs() <= 1e-6 {
            "exact".to_string()
        } else if c.ratio > 1.0 {
            format!("analytic optimistic by {:.1}%", 100.0 * (c.ratio - 1.0))
        } else {
            format!("analytic pessimistic by {:.1}%", 100.0 * (1.0 - c.ratio))
        };
        let _ = writeln!(
            s,
            "{:<15} {:>12} {:<20} {:>5} {:<34} {:>12.4} {:>12.4} {:>12.4} {:>8.4}  {verdict}",
            c.kind.name(),
            sig3(c.bytes),
            format!("{:?}", c.group),
            c.count,
            c.algorithm,
            c.simulated_ms,
            c.analytic_ms,
            c.lower_bound_ms,
            c.ratio
        );
    }
    s
}

/// `dimsum eval --evaluator schedule`.
pub fn eval(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let backed = study.backed(&study.evaluator);
    let m = backed.measure(bw).map_err(|e| lift(study, e))?;
    let mut e = evaluate(&study.fabric, &m.model, &study.linear_cost(), bw);
    // The measured model reproduces the replays; report the replays' sum itself.
    e.iteration_time_ms = ns_to_ms(m.iteration_ns);
    e.comm_time_ms = ns_to_ms(m.iteration_ns - m.model.compute_ns);
    if json_out {
        let mut obj = serde_json::Map::new();
        obj.insert("study".into(), study.name.clone().into());
        obj.insert("dimsum_version".into(), env!("CARGO_PKG_VERSION").into());
        obj.insert("fabric".into(), study.fabric.shape().into());
        obj.insert("evaluator".into(), "schedule".into());
        obj.insert("schedule".into(), dimsum::report::json::evaluator_spec(study));
        obj.insert("training_loop".into(), study.training_loop.name().into());
        if let Value::Object(ev) = serde_json::to_value(&e)? {
            obj.extend(ev);
        }
        obj.insert(
            "analytic_iteration_time_ms".into(),
            ns_to_ms(m.analytic_iteration_ns).into(),
        );
        obj.insert("collectives".into(), serde_json::to_value(&m.collectives)?);
        obj.insert("collective_count".into(), e.collectives.into());
        println!("{}", Value::Object(obj));
    } else {
        print!("{}", super::table(study, &e));
        println!();
        println!(
            "schedule-backed ({} schedules; analytic iteration {:.6} ms, simulated {:.6} ms: {:+.2}%)",
            study.evaluator.algorithm,
            ns_to_ms(m.analytic_iteration_ns),
            ns_to_ms(m.iteration_ns),
            100.0 * (m.iteration_ns / m.analytic_iteration_ns - 1.0)
        );
        print!("{}", collectives_table(&m.collectives));
    }
    Ok(())
}

/// The fixed point, with a progress bar.
pub fn fixed_point(
    study: &Study,
    backed: &Backed,
    problem: &Problem,
    objective: Objective,
) -> anyhow::Result<FixedPoint> {
    let bar = Progress::new(study.evaluator.max_iterations, "fixed point");
    let fp = scheduled::optimize(backed, problem, objective, &|k| bar.set(k)).map_err(|e| lift(study, e))?;
    bar.finish();
    Ok(fp)
}

/// The table of a schedule-backed optimum.
pub fn fixed_point_table(study: &Study, problem: &Problem, fp: &FixedPoint, solve_ms: f64) -> String {
    let mut s = String::new();
    let m = &fp.measured;
    let a = &fp.analytic_measured;
    let _ = writeln!(s, "study        {}", study.name);
    let _ = writeln!(s, "fabric       {}", study.fabric.shape());
    let _ = writeln!(
        s,
        "evaluator    schedule ({}; {} chunk(s) per NPU; {} link model)",
        study.evaluator.algorithm,
        study.evaluator.chunks_per_npu,
        if study.evaluator.link_model == dimsum::schedule::simulate::LinkModel::Tacos {
            "tacos"
        } else {
            "alpha-beta"
        }
    );
    let _ = writeln!(
        s,
        "fixed point  {} after {} iteration(s){} ({:.0} ms)",
        if fp.converged && fp.best_seen {
            "converged, but an earlier allocation replayed faster: best allocation seen"
        } else if fp.converged {
            "converged"
        } else if fp.cycle {
            "cycled: best allocation seen"
        } else {
            "did not converge: best allocation seen"
        },
        fp.iterations(),
        if fp.converged {
            format!(
                " (allocation moves {:.1e} < {:.0e})",
                fp.history.last().map_or(0.0, |h| h.moved),
                study.evaluator.tolerance
            )
        } else {
            String::new()
        },
        solve_ms
    );
    let _ = writeln!(
        s,
        "objective    {} = {:.9} {} on the measured coefficients (their certified lower bound {:.9}, gap {:.1e})",
        fp.solution.objective,
        fp.solution.objective_value,
        fp.solution.objective_unit,
        fp.solution.lower_bound,
        fp.solution.gap
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<16} {:>14} {:>14}",
        "dimension", "block", "schedule GB/s", "analytic GB/s"
    );
    for (d, dim) in study.fabric.dims.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:<12} {:<16} {:>14.4} {:>14.4}",
            dim.name,
            dim.block.name(),
            m.bw_gbps[d],
            a.bw_gbps[d]
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<34} {:>16} {:>16}",
        "iteration time (ms)", "schedule optimum", "analytic optimum"
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "simulated schedules",
        ns_to_ms(m.iteration_ns),
        ns_to_ms(a.iteration_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "analytic model",
        ns_to_ms(m.analytic_iteration_ns),
        ns_to_ms(a.analytic_iteration_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.6} {:>16.6}",
        "lower bound",
        ns_to_ms(m.lower_bound_ns),
        ns_to_ms(a.lower_bound_ns)
    );
    let _ = writeln!(
        s,
        "{:<34} {:>16.0} {:>16.0}",
        "network cost ($)",
        problem.cost.cost(&m.bw_gbps),
        problem.cost.cost(&a.bw_gbps)
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "collectives at the schedule-backed optimum:");
    s.push_str(&collectives_table(&m.collectives));
    s
}

/// `dimsum optimize --evaluator schedule`.
pub fn optimize(study: &Study, problem: &Problem, objective: Objective, json_out: bool) -> anyhow::Result<()> {
    let backed = study.backed(&study.evaluator);
    let started = std::time::Instant::now();
    let fp = fixed_point(study, &backed, problem, objective)?;
    let solve_ms = started.elapsed().as_secs_f64() * 1e3;
    if json_out {
        println!("{}", dimsum::report::json::fixed_point(study, problem, &fp, solve_ms));
    } else {
        print!("{}", fixed_point_table(study, problem, &fp, solve_ms));
    }
    Ok(())
}

//! `--evaluator schedule` for eval, optimize, frontier and run: the figures
//! of `scheduled` as tables, JSON, CSV and charts.

use super::Progress;
use dimsum::error::{InputError, one_of};
use dimsum::io::Stamp;
use dimsum::model::eval::evaluate;
use dimsum::model::units::ns_to_ms;
use dimsum::optimize::frontier::Axis;
use dimsum::optimize::scheduled::{self, Backed, CollectiveFigures, Evaluator, FixedPoint, ScheduledError};
use dimsum::optimize::{Objective, Problem};
use dimsum::report::{self, Series, sig3};
use dimsum::study::Study;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
    match e {
        ScheduledError::Build { .. } => {
            let line =
                dimsum::study::find_line(&std::fs::read_to_string(&study.path).unwrap_or_default(), "[evaluator]");
            InputError::at(&study.path, line, "evaluator.algorithm", e.to_string()).into()
        }
        other => other.into(),
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

fn spec_json(study: &Study) -> Value {
    let s = &study.evaluator;
    json!({
        "algorithm": s.algorithm,
        "algorithms": s.per_collective.iter().map(|(k, a)| (k.name().to_string(), Value::from(a.clone()))).collect::<serde_json::Map<_, _>>(),
        "chunks_per_npu": s.chunks_per_npu,
        "link_model": s.link_model,
        "tolerance": s.tolerance,
        "max_iterations": s.max_iterations,
    })
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
        obj.insert("schedule".into(), spec_json(study));
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

/// The JSON of a schedule-backed optimum.
pub fn fixed_point_json(study: &Study, problem: &Problem, fp: &FixedPoint, solve_ms: f64) -> Value {
    let m = &fp.measured;
    let bw = &m.bw_gbps;
    json!({
        "study": study.name,
        "dimsum_version": env!("CARGO_PKG_VERSION"),
        "fabric": study.fabric.shape(),
        "evaluator": "schedule",
        "schedule": spec_json(study),
        "objective": fp.solution.objective,
        "bw_gbps": bw,
        "iteration_time_ms": ns_to_ms(m.iteration_ns),
        "analytic_iteration_time_ms": ns_to_ms(m.analytic_iteration_ns),
        "iteration_lower_bound_ms": ns_to_ms(m.lower_bound_ns),
        "network_cost_usd": problem.cost.cost(bw),
        "network_power_w": problem.cost.power(bw),
        "iterations": fp.iterations(),
        "converged": fp.converged,
        "cycle": fp.cycle,
        "best_seen": fp.best_seen,
        "model": {
            "objective_value": fp.solution.objective_value,
            "lower_bound": fp.solution.lower_bound,
            "gap": fp.solution.gap,
            "unit": fp.solution.objective_unit,
            "next_bw_gbps": fp.solution.bw_gbps,
            "binding_constraints": fp.solution.binding_constraints,
        },
        "collectives": m.collectives,
        "history": fp.history,
        "analytic_optimum": {
            "bw_gbps": fp.analytic.bw_gbps,
            "analytic_iteration_time_ms": fp.analytic.iteration_time_ms,
            "iteration_time_ms": ns_to_ms(fp.analytic_measured.iteration_ns),
            "gap": fp.analytic.gap,
            "collectives": fp.analytic_measured.collectives,
        },
        "solve_ms": solve_ms,
    })
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
        println!("{}", fixed_point_json(study, problem, &fp, solve_ms));
    } else {
        print!("{}", fixed_point_table(study, problem, &fp, solve_ms));
    }
    Ok(())
}

/// One budget of a schedule-backed frontier.
struct FrontierRow {
    budget: f64,
    analytic_ms: f64,
    analytic_simulated_ms: f64,
    schedule_ms: f64,
    schedule_analytic_ms: f64,
    iterations: usize,
    converged: bool,
    bw: Vec<f64>,
}

/// `dimsum frontier --evaluator schedule`: the analytic frontier's budgets,
/// each optimized against schedules; CSV and chart.
pub fn frontier(study: &Study, axis: Axis, points: usize, dir: &Path, stamp: &Stamp) -> anyhow::Result<Vec<PathBuf>> {
    let (problem, f) = super::compute_frontier(study, axis, points)?;
    let backed = study.backed(&study.evaluator);
    let coeffs = axis.coeffs(&problem);
    let bar = Progress::new(f.points.len(), "schedule-backed frontier");
    let mut rows = Vec::new();
    for (i, pt) in f.points.iter().enumerate() {
        let mut p = problem.clone();
        p.constraints.push(dimsum::optimize::expr::Constraint {
            text: format!("{} <= {}", axis.name(), pt.budget),
            coeffs: coeffs.clone(),
            sense: dimsum::optimize::expr::Sense::Le,
            rhs: pt.budget,
            unit: axis.unit_kind(),
        });
        let fp = scheduled::optimize(&backed, &p, Objective::Perf, &|_| ()).map_err(|e| lift(study, e))?;
        rows.push(FrontierRow {
            budget: pt.budget,
            analytic_ms: pt.iteration_time_ms,
            analytic_simulated_ms: ns_to_ms(fp.analytic_measured.iteration_ns),
            schedule_ms: ns_to_ms(fp.measured.iteration_ns),
            schedule_analytic_ms: ns_to_ms(fp.measured.analytic_iteration_ns),
            iterations: fp.iterations(),
            converged: fp.converged,
            bw: fp.measured.bw_gbps.clone(),
        });
        bar.set(i + 1);
    }
    bar.finish();
    let names: Vec<String> = study.fabric.dims.iter().map(|d| d.name.clone()).collect();
    let mut csv = String::new();
    let _ = writeln!(csv, "# {}", stamp.line());
    let _ = writeln!(
        csv,
        "budget_{},analytic_optimum_analytic_ms,analytic_optimum_simulated_ms,schedule_optimum_simulated_ms,schedule_optimum_analytic_ms,iterations,converged,{}",
        axis.name().replace('-', "_"),
        names.iter().map(|n| format!("bw_{n}")).collect::<Vec<_>>().join(",")
    );
    for r in &rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{}",
            r.budget,
            r.analytic_ms,
            r.analytic_simulated_ms,
            r.schedule_ms,
            r.schedule_analytic_ms,
            r.iterations,
            r.converged,
            r.bw.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(",")
        );
    }
    let csv_path = dir.join(format!("frontier-{}-schedule.csv", axis.name()));
    dimsum::io::write_atomic(&csv_path, csv.as_bytes())?;
    let series: Vec<Series> = vec![
        (
            "analytic optimum, analytic time".to_string(),
            rows.iter().map(|r| (r.budget, r.analytic_ms)).collect(),
        ),
        (
            "analytic optimum, simulated".to_string(),
            rows.iter().map(|r| (r.budget, r.analytic_simulated_ms)).collect(),
        ),
        (
            "schedule-backed optimum, simulated".to_string(),
            rows.iter().map(|r| (r.budget, r.schedule_ms)).collect(),
        ),
    ];
    let mut files = vec![csv_path];
    files.extend(report::line_chart(
        dir,
        &format!("frontier-{}-schedule", axis.name()),
        &format!("{}: analytic vs schedule-backed optimum", study.name),
        &format!("budget ({})", axis.unit()),
        "iteration time (ms)",
        &series,
        None,
        stamp,
    )?);
    Ok(files)
}

/// The `run` section: each objective optimized against schedules, beside
/// the analytic optimum; `scheduled.json`.
pub fn run_section(study: &Study, problem: &Problem, dir: &Path, stamp: &Stamp, md: &mut String) -> anyhow::Result<()> {
    let fmt_bw = |bw: &[f64]| bw.iter().map(|b| sig3(*b)).collect::<Vec<_>>().join(", ");
    let backed = study.backed(&study.evaluator);
    let _ = writeln!(
        md,
        "\n## Schedule-backed optimum (`{}` schedules, simulated)\n",
        study.evaluator.algorithm
    );
    let _ = writeln!(
        md,
        "Every collective replayed as the schedule it would run on its group's links; the optimizer iterates to a fixed point on the measured coefficients (see `scheduled`).\n"
    );
    let _ = writeln!(
        md,
        "| objective | design | GB/s per NPU | simulated (ms) | analytic (ms) | cost ($M) | iterations | converged |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let mut out = Vec::new();
    for name in &study.objectives {
        let objective = super::objective_of(study, Some(name), None)?;
        let started = std::time::Instant::now();
        match scheduled::optimize(&backed, problem, objective, &|_| ()) {
            Ok(fp) => {
                let ms = started.elapsed().as_secs_f64() * 1e3;
                for (design, m) in [
                    ("analytic optimum", &fp.analytic_measured),
                    ("schedule-backed", &fp.measured),
                ] {
                    let _ = writeln!(
                        md,
                        "| {name} | {design} | {} | {:.4} | {:.4} | {:.3} | {} | {} |",
                        fmt_bw(&m.bw_gbps),
                        ns_to_ms(m.iteration_ns),
                        ns_to_ms(m.analytic_iteration_ns),
                        problem.cost.cost(&m.bw_gbps) / 1e6,
                        if design == "analytic optimum" {
                            "-".to_string()
                        } else {
                            fp.iterations().to_string()
                        },
                        if design == "analytic optimum" {
                            "-"
                        } else if fp.converged {
                            "yes"
                        } else {
                            "no"
                        }
                    );
                }
                out.push(fixed_point_json(study, problem, &fp, ms));
            }
            Err(e @ ScheduledError::Build { .. }) => return Err(lift(study, e)),
            Err(e) => {
                let _ = writeln!(md, "| {name} | {e} | | | | | | |");
                out.push(json!({ "objective": name, "error": e.to_string() }));
            }
        }
    }
    let json = json!({ "stamp": stamp, "study": study.name, "scheduled": out });
    dimsum::io::write_atomic(
        &dir.join("scheduled.json"),
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )?;
    let _ = writeln!(md, "\nPer collective, simulated against analytic: `scheduled.json`.");
    Ok(())
}

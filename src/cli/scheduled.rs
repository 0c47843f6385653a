//! `--evaluator schedule` for eval, optimize, frontier and run: the figures
//! of `scheduled` as tables, JSON, CSV and charts.

use dimsum::error::InputError;
use dimsum::optimize::scheduled::{Evaluator, ScheduledError};
use dimsum::optimize::{Objective, Problem};
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::jobs;
use dimsum::report::bars::Bars;
use dimsum::report::json;
use dimsum::study::Study;

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
        study.override_evaluator(
            self.evaluator.as_deref(),
            self.schedule_algorithm.as_deref(),
            self.schedule_chunks,
        )
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

/// `dimsum eval --evaluator schedule`.
pub fn eval(study: &Study, bw: &[f64], json_out: bool) -> anyhow::Result<()> {
    let (e, m) = study.evaluate_backed(bw).map_err(|e| lift(study, e))?;
    if json_out {
        println!("{}", dimsum::report::json::scheduled_evaluation(study, &e, &m));
    } else {
        print!("{}", dimsum::report::text::scheduled_evaluation(study, &e, &m));
    }
    Ok(())
}

/// `dimsum optimize --evaluator schedule`.
pub fn optimize(study: &Study, problem: &Problem, objective: Objective, json_out: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let bars = Bars::new();
    let backed = study.backed(&study.evaluator);
    let job = jobs::FixedPoint {
        backed: &backed,
        problem,
        objective,
    };
    let fp = Executor::new(&bars)
        .run(job)
        .map_err(|e| super::lift(e.in_study(study)))?;
    bars.finish();
    let solve_ms = started.elapsed().as_secs_f64() * 1e3;
    match json_out {
        true => println!("{}", json::fixed_point(study, problem, &fp, Some(solve_ms))),
        false => print!("{}", dimsum::report::text::fixed_point(study, problem, &fp, solve_ms)),
    }
    Ok(())
}

//! `dimsum run` as a library call: everything a study declares, computed
//! and returned as one typed value, [`StudyResults`]. Nothing here formats
//! or writes a report: `report::study` renders the value as summary.md,
//! report.html, JSON, CSV and charts. The one exception is a sweep, which
//! streams its rows to its CSV as it goes so that an interrupted sweep
//! resumes (`pipeline::sweep`).
//!
//! The sections run in the order the report shows them: the recommended
//! allocation per objective, the schedule-backed optima, procurement, the
//! fixed designs, the frontiers, the sweeps and the co-optimization.

use super::coopt::{self, Coopt};
use super::procure::{self, Procured};
use super::sweep::{self, Shard};
use crate::error::InputError;
use crate::io::{Stamp, WriteError};
use crate::model::eval::Evaluation;
use crate::optimize::frontier::{self, Axis, Frontier, Marker};
use crate::optimize::scheduled::{self, Evaluator, FixedPoint, FrontierRow, Measured, ScheduledError};
use crate::optimize::{self, OptError, Problem, Solution};
use crate::study::objective::Source;
use crate::study::{Study, SweepSpec};
use std::path::Path;

/// Why a study's run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: the study (or an option applied to it) asks for
    /// something that cannot be built.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An optimization failed where the run cannot go on without it.
    #[error(transparent)]
    Opt(#[from] OptError),
    /// A schedule-backed replay or solve failed.
    #[error(transparent)]
    Scheduled(ScheduledError),
    /// A sweep could not write its rows.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The co-optimization could not run.
    #[error(transparent)]
    Coopt(#[from] coopt::CooptError),
    /// The catalog optimum could not be found or bought.
    #[error(transparent)]
    Procure(#[from] super::procure::ProcureError),
}

impl RunError {
    fn scheduled(study: &Study, e: ScheduledError) -> RunError {
        match study.evaluator_error(e) {
            Ok(input) => RunError::Input(input),
            Err(other) => RunError::Scheduled(other),
        }
    }
}

/// One objective's recommended allocation.
#[derive(Debug)]
pub struct Recommended {
    /// The objective's name.
    pub objective: String,
    /// The certified optimum, or why there is none.
    pub outcome: Result<Solution, OptError>,
}

/// One objective optimized against replayed schedules.
#[derive(Debug)]
pub struct ScheduledOptimum {
    /// The objective's name.
    pub objective: String,
    /// The fixed point, or why it failed.
    pub outcome: Result<FixedPoint, ScheduledError>,
}

/// A fixed design (the study's `bw` or a `[[case]]`), evaluated.
#[derive(Debug)]
pub struct FixedDesign {
    /// `study bw` or the case's name.
    pub name: String,
    /// GB/s per NPU per dimension.
    pub bw: Vec<f64>,
    /// The analytic evaluation.
    pub evaluation: Evaluation,
    /// The replayed schedules, with the schedule evaluator.
    pub simulated: Option<Measured>,
}

/// One `[[frontier]]`.
#[derive(Debug)]
pub struct FrontierResults {
    /// The problem the frontier was drawn for.
    pub problem: Problem,
    /// The frontier.
    pub frontier: Frontier,
    /// The study's fixed designs on the frontier's axis.
    pub markers: Vec<Marker>,
    /// With the schedule evaluator: every budget optimized against schedules.
    pub schedule_backed: Option<Vec<FrontierRow>>,
}

/// One `[[sweep]]`.
#[derive(Debug)]
pub struct SweepResults {
    /// The sweep's name.
    pub name: String,
    /// What the sweep did (its CSV, its solved designs).
    pub outcome: sweep::Outcome,
}

/// Everything a study declares, computed.
#[derive(Debug)]
pub struct StudyResults {
    /// The stamp every file written from these results carries.
    pub stamp: Stamp,
    /// The study's problem (constraints and bounds).
    pub problem: Problem,
    /// The recommended allocation of each objective the study runs.
    pub recommended: Vec<Recommended>,
    /// With the schedule evaluator: each objective against schedules.
    pub scheduled: Option<Vec<ScheduledOptimum>>,
    /// With `[procurement]`: the recommended designs bought, the catalog
    /// optimum and the catalog frontier.
    pub procurement: Option<Procured>,
    /// The fixed designs.
    pub fixed: Vec<FixedDesign>,
    /// The frontiers.
    pub frontiers: Vec<FrontierResults>,
    /// The sweeps.
    pub sweeps: Vec<SweepResults>,
    /// With `[model]`: the parallelization chosen with the fabric.
    pub coopt: Option<Coopt>,
    /// The co-optimization's joint optimum replayed on the best schedules
    /// at its allocation (`coopt::replay`).
    pub coopt_replay: Option<Result<Measured, coopt::ReplayError>>,
    /// With `[npu] type = [...]`: every accelerator's best design.
    pub accelerators: Option<coopt::Accelerators>,
    /// With `[npu.arch]`: the architecture chosen with the strategy and
    /// the fabric.
    pub archs: Option<coopt::ArchSearch>,
}

/// Progress of long work: `(task, done, total)`.
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

/// Runs `work` while another thread calls `tick` every 200 ms (progress
/// of one long step that reports nothing itself); the ticker stops when
/// `work` returns or panics.
pub fn ticking<R>(tick: &(dyn Fn() + Sync), work: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                tick();
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        let _stop = Stop(&done);
        work()
    })
}

/// The study's fixed designs (its `bw` and its cases) on a frontier's axis.
fn markers(study: &Study, problem: &Problem, axis: Axis) -> Vec<Marker> {
    let k = axis.coeffs(problem);
    let mut out = Vec::new();
    let mut push = |name: &str, bw: &[f64]| {
        let t = problem.time_ms(bw);
        if t.is_finite() {
            out.push(Marker {
                name: name.to_string(),
                budget: k.iter().zip(bw).map(|(a, b)| a * b).sum(),
                time_ms: t,
            });
        }
    };
    if let Some(bw) = &study.bw {
        push("study bw", bw);
    }
    for c in &study.cases {
        push(&c.name, &c.bw);
    }
    out
}

/// The study's frontier on `axis` with `points` budgets.
pub fn frontier(study: &Study, axis: Axis, points: usize, progress: Progress) -> Result<FrontierResults, RunError> {
    let problem = study.problem()?;
    let task = format!("frontier {}", axis.name());
    let f = frontier::frontier_with(&problem, axis, points, &|i| progress(&task, i, points))?;
    let markers = markers(study, &problem, axis);
    Ok(FrontierResults {
        problem,
        frontier: f,
        markers,
        schedule_backed: None,
    })
}

/// `r`'s budgets, each optimized against the study's schedules.
pub fn schedule_backed_frontier(
    study: &Study,
    r: &FrontierResults,
    progress: Progress,
) -> Result<Vec<FrontierRow>, RunError> {
    let backed = study.backed(&study.evaluator);
    let n = r.frontier.points.len();
    scheduled::frontier(&backed, &r.problem, &r.frontier, &|i| {
        progress("schedule-backed frontier", i, n)
    })
    .map_err(|e| RunError::scheduled(study, e))
}

/// Runs (or resumes) `shard` of the sweep `spec` into `dir`.
pub fn sweep(
    study: &Study,
    spec: &SweepSpec,
    shard: Shard,
    dir: &Path,
    progress: Progress,
) -> Result<sweep::Outcome, WriteError> {
    let n = sweep::items(spec, study.fabric.ndims()).len().div_ceil(shard.count);
    let task = format!("sweep {}", spec.name);
    sweep::run(study, spec, shard, dir, None, &|done, _| progress(&task, done, n))
}

/// Runs everything `study` declares; a sweep's CSV goes into `dir`.
pub fn run_study(study: &Study, dir: &Path, progress: Progress) -> Result<StudyResults, RunError> {
    study.require_workload()?;
    let stamp = study.stamp();
    let problem = study.problem()?;
    let schedule = study.evaluator.evaluator == Evaluator::Schedule;
    let mut recommended = Vec::new();
    for name in &study.objectives {
        let objective = study.objective_named(name, None, Source::Study)?;
        recommended.push(Recommended {
            objective: name.clone(),
            outcome: optimize::solve(&problem, objective),
        });
    }
    let scheduled = if schedule {
        Some(scheduled_optima(study, &problem)?)
    } else {
        None
    };
    let procurement = match study.procurement {
        Some(_) => {
            let designs: Vec<(String, Vec<f64>)> = recommended
                .iter()
                .filter_map(|r| {
                    r.outcome
                        .as_ref()
                        .ok()
                        .map(|s| (r.objective.clone(), s.bw_gbps.clone()))
                })
                .collect();
            let mut p = procure::procure(study, &problem, &designs)?;
            p.replay_decision(study, progress);
            Some(p)
        }
        None => None,
    };
    let fixed = fixed_designs(study)?;
    let mut frontiers = Vec::new();
    for spec in &study.frontiers {
        let mut r = frontier(study, spec.axis, spec.points, progress)?;
        if schedule {
            r.schedule_backed = Some(schedule_backed_frontier(study, &r, progress)?);
        }
        frontiers.push(r);
    }
    let mut sweeps = Vec::new();
    for spec in &study.sweeps {
        sweeps.push(SweepResults {
            name: spec.name.clone(),
            outcome: sweep(study, spec, Shard::ALL, dir, progress)?,
        });
    }
    let coopt = match study.model {
        Some(_) => Some(coopt::coopt(study, &|_, _| {})?),
        None => None,
    };
    let coopt_replay = coopt
        .as_ref()
        .and_then(|c| c.optimum.as_ref())
        .filter(|_| study.replay_optimum)
        .map(|o| coopt::replay(study, o, progress));
    let accelerators = match (&study.model, study.npu_choices.is_empty()) {
        (Some(_), false) => Some(coopt::coopt_accelerators(study, &|_, _| {})?),
        _ => None,
    };
    let archs = match (&study.model, &study.arch_space) {
        (Some(_), Some(_)) => Some(coopt::coopt_archs(study, coopt.as_ref(), &|_, _| {})?),
        _ => None,
    };
    Ok(StudyResults {
        accelerators,
        archs,
        stamp,
        problem,
        recommended,
        scheduled,
        procurement,
        fixed,
        frontiers,
        sweeps,
        coopt,
        coopt_replay,
    })
}

/// Each objective of the study optimized against its schedules; a schedule
/// the study names but that cannot be built stops the run.
fn scheduled_optima(study: &Study, problem: &Problem) -> Result<Vec<ScheduledOptimum>, RunError> {
    let backed = study.backed(&study.evaluator);
    let mut out = Vec::new();
    for name in &study.objectives {
        let objective = study.objective_named(name, None, Source::Study)?;
        let outcome = match scheduled::optimize(&backed, problem, objective, &|_| ()) {
            Err(e @ ScheduledError::Build { .. }) => return Err(RunError::scheduled(study, e)),
            outcome => outcome,
        };
        out.push(ScheduledOptimum {
            objective: name.clone(),
            outcome,
        });
    }
    Ok(out)
}

/// The study's `bw` and its cases, evaluated (and replayed with the
/// schedule evaluator).
fn fixed_designs(study: &Study) -> Result<Vec<FixedDesign>, RunError> {
    let mut designs: Vec<(String, Vec<f64>)> = Vec::new();
    if let Some(bw) = &study.bw {
        designs.push(("study bw".into(), bw.clone()));
    }
    designs.extend(study.cases.iter().map(|c| (c.name.clone(), c.bw.clone())));
    let backed = (study.evaluator.evaluator == Evaluator::Schedule && !designs.is_empty())
        .then(|| study.backed(&study.evaluator));
    let mut out = Vec::new();
    for (name, bw) in designs {
        let evaluation = study.evaluate(&bw);
        let simulated = match &backed {
            Some(b) => Some(b.measure(&bw).map_err(|e| RunError::scheduled(study, e))?),
            None => None,
        };
        out.push(FixedDesign {
            name,
            bw,
            evaluation,
            simulated,
        });
    }
    Ok(out)
}

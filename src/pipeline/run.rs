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
pub use super::exec::RunError;
use super::exec::{Executor, Job};
use super::jobs::{self, Recipes};
use super::procure::{self, Procured};
use super::shapes::{CompareShapes, Shapes};
use super::sweep::{self, Shard};
use crate::io::Stamp;
use crate::model::eval::Evaluation;
use crate::optimize::frontier::{Axis, Frontier, Marker};
use crate::optimize::scheduled::{self, Evaluator, FixedPoint, FrontierRow, Measured, ScheduledError};
use crate::optimize::{self, OptError, Problem, Solution};
use crate::progress::Progress;
use crate::study::Study;
use crate::study::objective::Source;
use std::path::Path;

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
    /// With `[[alternative]]`: every shape (the study's fabric and each
    /// alternative) bought within the budgets, and the one to buy.
    pub shapes: Option<Shapes>,
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
    /// With `[reliability]`: what failed parts cost the decision's design
    /// (else the study's `bw`), `pipeline::failures`.
    pub failures: Option<super::failures::FailureResults>,
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

/// One of a study's frontiers: the fastest design at `points` budgets on
/// `axis`, the study's fixed designs marked on it, and, with
/// `schedule_backed`, every budget optimized against its schedules.
#[derive(Debug, Clone, Copy)]
pub struct StudyFrontier<'a> {
    /// The study.
    pub study: &'a Study,
    /// The budget's axis.
    pub axis: Axis,
    /// How many budgets.
    pub points: usize,
    /// Also optimize every budget against the study's schedules.
    pub schedule_backed: bool,
}

impl Job for StudyFrontier<'_> {
    type Output = FrontierResults;
    fn name(&self) -> String {
        format!("frontier {}", self.axis.name())
    }
    fn run(self, ex: &Executor) -> Result<FrontierResults, RunError> {
        let study = self.study;
        let problem = study.problem()?;
        let frontier = ex.run(jobs::Frontier {
            problem: &problem,
            axis: self.axis,
            points: self.points,
        })?;
        let markers = markers(study, &problem, self.axis);
        let mut r = FrontierResults {
            problem,
            frontier,
            markers,
            schedule_backed: None,
        };
        if self.schedule_backed {
            let backed = study.backed(&study.evaluator);
            let o = ex.observer();
            let rows =
                scheduled::frontier(&backed, &r.problem, &r.frontier, o).map_err(|e| RunError::scheduled(study, e))?;
            r.schedule_backed = Some(rows);
        }
        Ok(r)
    }
}

/// Everything a study declares, computed: `dimsum run`. Its sweeps
/// checkpoint in the executor's directory.
#[derive(Debug, Clone, Copy)]
pub struct RunStudy<'a> {
    /// The study.
    pub study: &'a Study,
}

/// Runs everything `study` declares; a sweep's CSV goes into `dir`.
pub fn run_study(study: &Study, dir: &Path, progress: Progress) -> Result<StudyResults, RunError> {
    Executor::new(progress).checkpoints(dir).run(RunStudy { study })
}

impl Job for RunStudy<'_> {
    type Output = StudyResults;
    fn name(&self) -> String {
        format!("run {}", self.study.name)
    }
    fn run(self, ex: &Executor) -> Result<StudyResults, RunError> {
        let study = self.study;
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
        let scheduled = match schedule {
            true => Some(scheduled_optima(study, &problem, ex.observer())?),
            false => None,
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
                let replay = study.backed(&procure::best_spec(study));
                Some(ex.run(jobs::Procure {
                    buying: &procure::Buying::of(study),
                    objectives: &procure::objectives(study),
                    problem: &problem,
                    designs: &designs,
                    replay: &replay,
                })?)
            }
            None => None,
        };
        let shapes = match study.alternatives.is_empty() {
            true => None,
            false => Some(ex.run(CompareShapes { study })?),
        };
        let failures = study_failures(study, procurement.as_ref(), ex)?;
        let fixed = fixed_designs(study)?;
        let mut frontiers = Vec::new();
        for spec in &study.frontiers {
            frontiers.push(ex.run(StudyFrontier {
                study,
                axis: spec.axis,
                points: spec.points,
                schedule_backed: schedule,
            })?);
        }
        let mut sweeps = Vec::new();
        for spec in &study.sweeps {
            let outcome = ex.run(jobs::Sweep {
                on: sweep::SweepOn::of(study),
                spec,
                shard: Shard::ALL,
            })?;
            sweeps.push(SweepResults {
                name: spec.name.clone(),
                outcome,
            });
        }
        let (coopt, coopt_replay, accelerators, archs) = match study.model {
            Some(_) => {
                // The search reports nothing here: the replay and the
                // accelerators' and architectures' searches do.
                let observer = QuietSearch(ex.observer());
                let quiet = Executor::new(&observer);
                let r = quiet.run(jobs::Coopt {
                    study,
                    recipes: Recipes::Study,
                    replay: study.replay_optimum,
                })?;
                (Some(r.coopt), r.replay, r.accelerators, r.archs)
            }
            None => (None, None, None, None),
        };
        Ok(StudyResults {
            accelerators,
            archs,
            stamp,
            problem,
            recommended,
            scheduled,
            procurement,
            shapes,
            fixed,
            frontiers,
            sweeps,
            coopt,
            coopt_replay,
            failures,
        })
    }
}

/// With `[reliability]`: the failures of the decision's design and its
/// bill, else of the study's `bw` and its bill from the study's parts.
fn study_failures(
    study: &Study,
    procured: Option<&Procured>,
    ex: &Executor,
) -> Result<Option<super::failures::FailureResults>, RunError> {
    if study.reliability.is_none() {
        return Ok(None);
    }
    let decided = procured
        .and_then(|p| p.decided())
        .map(|(_, c, b)| (c.catalog.bw_gbps.clone(), b.clone()));
    let (bw, bom) = match (decided, &study.bw) {
        (Some((bw, bom)), _) => (bw, Some(bom)),
        (None, Some(bw)) => (
            bw.clone(),
            crate::model::bom::bom(&study.fabric, &study.procurement(), bw).ok(),
        ),
        (None, None) => return Ok(None),
    };
    ex.run(super::failures::Failures {
        study,
        bw: &bw,
        bom: bom.as_ref(),
    })
    .map(Some)
}

/// `dimsum run`'s observer inside the co-optimization: the searches'
/// counts are not shown (their bars would flicker through a run), the
/// replay's are.
struct QuietSearch<'a>(Progress<'a>);

impl crate::progress::Observer for QuietSearch<'_> {
    fn progress(&self, task: &str, done: usize, total: usize) {
        if !task.ends_with(coopt::STRATEGIES) {
            self.0.progress(task, done, total);
        }
    }
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// Each objective of the study optimized against its schedules; a schedule
/// the study names but that cannot be built stops the run, and so does
/// `progress` cancelling.
fn scheduled_optima(study: &Study, problem: &Problem, progress: Progress) -> Result<Vec<ScheduledOptimum>, RunError> {
    let backed = study.backed(&study.evaluator);
    let mut out = Vec::new();
    for name in &study.objectives {
        let objective = study.objective_named(name, None, Source::Study)?;
        let outcome = match scheduled::optimize(&backed, problem, objective, progress) {
            Err(e @ ScheduledError::Build { .. }) => return Err(RunError::scheduled(study, e)),
            Err(e) if e.is_cancelled() => return Err(RunError::Cancelled),
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

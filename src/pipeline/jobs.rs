//! The pipeline's jobs: each a value holding the inputs it reads, run by
//! an [`Executor`] (`pipeline::exec`) with one observer, returning a typed
//! result. A study's whole run is `pipeline::run::RunStudy`, made of these.
//!
//! ```
//! use dimsum::optimize::{Objective, frontier::Axis};
//! use dimsum::pipeline::exec::Executor;
//! use dimsum::pipeline::jobs::{Frontier, Optimize};
//! use dimsum::study::Study;
//!
//! let study = Study::parse(
//!     r#"
//! name = "two rings"
//! [[fabric.dims]]
//! name = "a"
//! block = "ring"
//! npus = 4
//! [[fabric.dims]]
//! name = "b"
//! block = "ring"
//! npus = 4
//! [cost.tiers.a]
//! link_usd_per_gbps = 1.0
//! [cost.tiers.b]
//! link_usd_per_gbps = 1.0
//! [workload]
//! communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 4] }
//! [[workload.layers]]
//! name = "l0"
//! forward = { compute_ns = 0 }
//! input_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e9 }
//! weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e9 }
//! [optimize]
//! constraints = ["a + b <= 300"]
//! "#,
//!     std::path::Path::new("two-rings.toml"),
//! )?;
//! let problem = study.problem()?;
//! let ex = Executor::quiet();
//! let best = ex.run(Optimize { problem: &problem, objective: Objective::Perf })?;
//! // The optimum spends no more than the constraint allows, certified.
//! assert!(best.bw_gbps.iter().sum::<f64>() <= 300.0 + 1e-6);
//! assert!(best.gap <= 1e-6);
//! let f = ex.run(Frontier { problem: &problem, axis: Axis::Cost, points: 5 })?;
//! assert_eq!(f.points.len(), 5);
//! // More money never makes the iteration slower.
//! assert!(f.points.windows(2).all(|w| w[1].iteration_time_ms <= w[0].iteration_time_ms + 1e-9));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::coopt::{self, Accelerators, ArchSearch, Coopt as Search, Optimum, ReplayError};
use super::exec::{Executor, Job, RunError};
pub use super::failures::Failures;
use super::procure::{self, CatalogAnswer, Procured};
use super::sweep::{self, Shard};
use super::validate::{self, Checked};
use crate::error::{InputError, Named};
use crate::model::topology::Topology;
use crate::model::transformer::RecipeSpace;
use crate::model::workload::CollectiveKind;
use crate::optimize::frontier::{self, Axis};
use crate::optimize::scheduled::{Backed, Measured};
use crate::optimize::{self, Objective, Problem, Solution};
use crate::progress::ticking;
use crate::schedule::Schedule;
use crate::schedule::algorithm::{self, Algorithm, Options};
use crate::schedule::replay;
use crate::study::{Study, SweepSpec};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The certified optimum of one objective (`optimize::solve`).
#[derive(Debug, Clone, Copy)]
pub struct Optimize<'a> {
    /// The fabric's iteration model, prices and constraints.
    pub problem: &'a Problem,
    /// What to optimize.
    pub objective: Objective,
}

impl Job for Optimize<'_> {
    type Output = Solution;
    fn name(&self) -> String {
        "optimize".into()
    }
    fn run(self, _: &Executor) -> Result<Solution, RunError> {
        Ok(optimize::solve(self.problem, self.objective)?)
    }
}

/// The fastest design at `points` budgets on `axis` (`optimize::frontier`).
#[derive(Debug, Clone, Copy)]
pub struct Frontier<'a> {
    /// The fabric's iteration model, prices and constraints.
    pub problem: &'a Problem,
    /// The budget's axis: capex or power.
    pub axis: Axis,
    /// How many budgets.
    pub points: usize,
}

impl Job for Frontier<'_> {
    type Output = frontier::Frontier;
    fn name(&self) -> String {
        format!("frontier {}", self.axis.name())
    }
    fn run(self, ex: &Executor) -> Result<frontier::Frontier, RunError> {
        let task = self.name();
        let o = ex.observer();
        let f = frontier::frontier_with(self.problem, self.axis, self.points, &task, o)?;
        ex.check()?;
        Ok(f)
    }
}

/// The catalog optimum of one objective within budgets
/// (`procure::catalog_optimum`): `dimsum optimize --catalog`.
#[derive(Debug, Clone, Copy)]
pub struct CatalogOptimum<'a> {
    /// The fabric and its `[procurement]`: catalog and budgets
    /// (`procure::Buying::of(study)`).
    pub buying: &'a procure::Buying,
    /// Its problem.
    pub problem: &'a Problem,
    /// What to optimize.
    pub objective: Objective,
    /// A capex budget, $ (else the study's).
    pub budget_usd: Option<f64>,
    /// A power budget, W (else the study's).
    pub budget_w: Option<f64>,
}

impl Job for CatalogOptimum<'_> {
    type Output = CatalogAnswer;
    fn name(&self) -> String {
        "catalog optimum".into()
    }
    fn run(self, _: &Executor) -> Result<CatalogAnswer, RunError> {
        Ok(procure::catalog_optimum(
            self.buying,
            self.problem,
            self.objective,
            self.budget_usd,
            self.budget_w,
        )?)
    }
}

/// A study's procurement (`procure::procure`): the recommended designs
/// bought, each objective answered by the catalog, the decision replayed
/// on the best schedules.
#[derive(Clone, Copy)]
pub struct Procure<'a> {
    /// The fabric and its `[procurement]` (`procure::Buying::of(study)`).
    pub buying: &'a procure::Buying,
    /// The objectives to answer from the catalog, by name
    /// (`procure::objectives(study)`).
    pub objectives: &'a [(String, Result<Objective, InputError>)],
    /// The problem: constraints and pricing.
    pub problem: &'a Problem,
    /// The recommended allocations to buy: (objective, GB/s per dimension).
    pub designs: &'a [(String, Vec<f64>)],
    /// The workload's replays on the best schedules, for the decision
    /// (`study.backed(&procure::best_spec(study))`).
    pub replay: &'a Backed,
}

impl Job for Procure<'_> {
    type Output = Procured;
    fn name(&self) -> String {
        "procure".into()
    }
    fn run(self, ex: &Executor) -> Result<Procured, RunError> {
        let mut p = procure::procure(self.buying, self.objectives, self.problem, self.designs)?;
        ex.check()?;
        p.replay_decision(self.replay, ex.observer());
        Ok(p)
    }
}

/// One shard of one `[[sweep]]`, checkpointed in the executor's
/// directory (resumed from it) and written there as CSV.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    /// What the sweep reads from its study (`sweep::SweepOn::of(study)`).
    pub on: sweep::SweepOn<'a>,
    /// The sweep.
    pub spec: &'a SweepSpec,
    /// Which shard ([`Shard::ALL`] for the whole sweep).
    pub shard: Shard,
}

impl Job for Sweep<'_> {
    type Output = sweep::Outcome;
    fn name(&self) -> String {
        format!("sweep {}", self.spec.name)
    }
    fn run(self, ex: &Executor) -> Result<sweep::Outcome, RunError> {
        let dir = ex.checkpoint_dir().unwrap_or_else(|| std::path::Path::new("."));
        Ok(sweep::run(&self.on, self.spec, self.shard, dir, None, ex.observer())?)
    }
}

/// Which recipes `coopt` searches: the study's `[coopt]` space (else its
/// own recipe), or every recipe the model allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recipes {
    /// The study's `[coopt]` space, else its own recipe.
    #[default]
    Study,
    /// `RecipeSpace::whole`: every recipe the model allows.
    Whole,
}

impl Named for Recipes {
    const WHAT: &'static str = "a recipe space";
    const ALL: &'static [Recipes] = &[Recipes::Study, Recipes::Whole];
    fn as_name(self) -> &'static str {
        match self {
            Recipes::Study => "study",
            Recipes::Whole => "whole",
        }
    }
}
crate::named!(Recipes);

/// The co-optimization of a study's parallelization with its fabric:
/// the strategies, every accelerator type of `[npu] type = [...]`, the
/// architectures of `[npu.arch]`, and the joint optimum replayed.
#[derive(Debug, Clone, Copy)]
pub struct Coopt<'a> {
    /// The study: its `[model]`, `[npu]`, `[parallelism]`, `[coopt]`,
    /// fabric, constraints and pricing.
    pub study: &'a Study,
    /// Which recipes.
    pub recipes: Recipes,
    /// Replay the joint optimum on the best schedules.
    pub replay: bool,
}

/// What [`Coopt`] found.
#[derive(Debug)]
pub struct CooptResults {
    /// The strategies searched with the study's accelerator.
    pub coopt: Search,
    /// With `[npu] type = [...]`: every accelerator's best design.
    pub accelerators: Option<Accelerators>,
    /// With `[npu.arch]`: the architecture chosen with the strategy.
    pub archs: Option<ArchSearch>,
    /// The joint optimum replayed (when asked, and there is one).
    pub replay: Option<Result<Measured, ReplayError>>,
}

impl Job for Coopt<'_> {
    type Output = CooptResults;
    fn name(&self) -> String {
        coopt::STRATEGIES.into()
    }
    fn run(self, ex: &Executor) -> Result<CooptResults, RunError> {
        let study = self.study;
        let Some(model) = &study.model else {
            return Err(
                InputError::arg("coopt", format!("study `{}` has no [model] to parallelize", study.name)).into(),
            );
        };
        let o = ex.observer();
        let r = match self.recipes {
            Recipes::Study => coopt::coopt(study, o)?,
            Recipes::Whole => coopt::coopt_in(study, &RecipeSpace::whole(model), o)?,
        };
        ex.check()?;
        // `[npu] type = [...]`: every accelerator searched and priced.
        let accelerators = match study.npu_choices.is_empty() {
            true => None,
            false => Some(coopt::coopt_accelerators(study, &Renamed(o, "accelerator strategies"))?),
        };
        ex.check()?;
        // `[npu.arch]`: the architecture searched with the strategy and fabric.
        let archs = match &study.arch_space {
            Some(_) => Some(
                coopt::coopt_archs(study, Some(&r), &Renamed(o, "architecture strategies")).map_err(|e| match e {
                    coopt::CooptError::TooMany { .. } => RunError::Input(InputError::arg("[npu.arch]", e.to_string())),
                    other => other.into(),
                })?,
            ),
            None => None,
        };
        ex.check()?;
        let replay = match (self.replay, r.optimum.as_ref()) {
            (true, Some(optimum)) => Some(coopt::replay(study, optimum, o)),
            _ => None,
        };
        Ok(CooptResults {
            coopt: r,
            accelerators,
            archs,
            replay,
        })
    }
}

/// An observer's progress under another task name.
struct Renamed<'a>(crate::progress::Progress<'a>, &'static str);

impl crate::progress::Observer for Renamed<'_> {
    fn progress(&self, _: &str, done: usize, total: usize) {
        self.0.progress(self.1, done, total);
    }
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// The joint optimum's iteration replayed on the best schedules
/// (`coopt::replay_on`).
#[derive(Debug, Clone, Copy)]
pub struct Replay<'a> {
    /// What the replays read: fabric, collective model, loop, evaluator
    /// (`coopt::ReplayOn::of(study, npu)`).
    pub on: &'a coopt::ReplayOn,
    /// The optimum: model, NPU, strategy and allocation.
    pub optimum: &'a Optimum,
}

impl Job for Replay<'_> {
    type Output = Measured;
    fn name(&self) -> String {
        coopt::REPLAY.into()
    }
    fn run(self, ex: &Executor) -> Result<Measured, RunError> {
        Ok(coopt::replay_on(self.on, self.optimum, ex.observer())?)
    }
}

/// Published training runs predicted (`validate::validate_files`): every
/// file read and predicted before anything is written.
#[derive(Debug, Clone, Copy)]
pub struct Validate<'a> {
    /// The validation files.
    pub files: &'a [PathBuf],
}

impl Job for Validate<'_> {
    type Output = Vec<Checked>;
    fn name(&self) -> String {
        "validate".into()
    }
    fn run(self, ex: &Executor) -> Result<Vec<Checked>, RunError> {
        Ok(validate::validate_files(self.files, ex.observer())?)
    }
}

/// One collective's schedule built (or given), replayed on a topology with
/// link contention, and bounded: `dimsum collective`. Three stages, each
/// seconds to a minute on thousands of NPUs, reported as `collective:
/// schedule, replay, bounds` (0 to 3), the replay's transfers landed as
/// `collective: replay, transfers landed`.
#[derive(Debug)]
pub struct Collective {
    /// The network.
    pub topology: Topology,
    /// The collective.
    pub kind: CollectiveKind,
    /// Its builder.
    pub algorithm: Algorithm,
    /// The builder's options (`size_bytes` is the buffer replayed).
    pub options: Options,
    /// A schedule to replay instead of building one.
    pub given: Option<Schedule>,
    /// Keep every hop (for the timeline chart).
    pub record: bool,
}

/// The stages [`Collective`] reports.
pub const COLLECTIVE_STAGES: &str = "collective: schedule, replay, bounds";

impl Job for Collective {
    type Output = replay::Replay;
    fn name(&self) -> String {
        COLLECTIVE_STAGES.into()
    }
    fn run(self, ex: &Executor) -> Result<replay::Replay, RunError> {
        let o = ex.observer();
        let stage = AtomicUsize::new(0);
        let (landed, transfers) = (AtomicU64::new(0), AtomicU64::new(0));
        let load = |a: &AtomicU64| usize::try_from(a.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        let tick = || match stage.load(Ordering::Relaxed) {
            // The ETA at the rate since the first landings: the replay's
            // set-up (routes, dependencies, state) is a step of its own.
            1 if load(&landed) == 0 => o.progress("collective: replay, setting up", 0, load(&transfers)),
            1 => o.progress("collective: replay, transfers landed", load(&landed), load(&transfers)),
            s => o.progress(COLLECTIVE_STAGES, s, 3),
        };
        let Collective {
            topology,
            kind,
            algorithm,
            options,
            given,
            record,
        } = self;
        let size = options.size_bytes;
        ticking(&tick, || {
            let schedule = match given {
                Some(s) => s,
                None => algorithm::build(&topology, kind, algorithm, &options)?,
            };
            transfers.store(schedule.transfers.len() as u64, Ordering::Relaxed);
            stage.store(1, Ordering::Relaxed);
            let replayed = || stage.store(2, Ordering::Relaxed);
            Ok(replay::Replay::staged(
                topology,
                schedule,
                size,
                options.link_model,
                record,
                &replayed,
                &landed,
            )?)
        })
    }
}

/// One allocation evaluated: its evaluation, the study's constraints at
/// it, and (with `[procurement]`) the red flags of its bill of materials.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// GB/s per NPU per dimension.
    pub bw: Vec<f64>,
    /// The evaluation.
    pub evaluation: crate::model::eval::Evaluation,
    /// The study's constraints there.
    pub checks: Vec<crate::study::objective::Check>,
    /// Its bill's red flags (`None`: the study has no `[procurement]`).
    pub flags: Option<Vec<procure::Flag>>,
}

/// Allocations evaluated on the analytic model (`dimsum eval`): each
/// refused where a dimension that carries traffic has no bandwidth.
#[derive(Debug, Clone, Copy)]
pub struct Eval<'a> {
    /// The study.
    pub study: &'a Study,
    /// The allocations, GB/s per NPU per dimension.
    pub bws: &'a [Vec<f64>],
}

impl Job for Eval<'_> {
    type Output = Vec<Evaluated>;
    fn name(&self) -> String {
        "eval".into()
    }
    fn run(self, _: &Executor) -> Result<Vec<Evaluated>, RunError> {
        let study = self.study;
        let spec = study.procurement.is_some().then(|| study.procurement());
        self.bws
            .iter()
            .map(|bw| {
                Ok(Evaluated {
                    bw: bw.clone(),
                    evaluation: study.evaluate_given(bw)?,
                    checks: study.checks(bw)?,
                    // With [procurement], what buying it would run into.
                    flags: spec
                        .as_ref()
                        .map(|spec| procure::flags(study, &crate::model::bom::bom(&study.fabric, spec, bw))),
                })
            })
            .collect()
    }
}

/// Collective algorithms against each other over topologies and sizes
/// (`schedule::compare`): `dimsum compare`. Reports the (topology,
/// algorithm) pairs done as `compare`.
#[derive(Debug, Clone, Copy)]
pub struct Compare<'a> {
    /// The topologies, each with its name.
    pub topologies: &'a [(String, Topology)],
    /// The collective.
    pub kind: CollectiveKind,
    /// The algorithms: those under study, then the baselines.
    pub algorithms: &'a [Algorithm],
    /// Buffer sizes, bytes.
    pub sizes: &'a [f64],
    /// The link model.
    pub model: crate::schedule::simulate::LinkModel,
}

impl Job for Compare<'_> {
    type Output = Vec<crate::schedule::compare::Row>;
    fn name(&self) -> String {
        "compare".into()
    }
    fn run(self, ex: &Executor) -> Result<Self::Output, RunError> {
        let rows = crate::schedule::compare::compare(
            self.topologies,
            self.kind,
            self.algorithms,
            self.sizes,
            self.model,
            ex.observer(),
        )?;
        Ok(rows)
    }
}

/// One objective optimized against a workload's replayed schedules (the
/// fixed point of `optimize::scheduled::optimize`), reported as `fixed
/// point` iterations out of the evaluator's limit. A schedule that cannot
/// be built is a `RunError::Scheduled`; [`RunError::in_study`] makes it the
/// study's located input error.
#[derive(Clone, Copy)]
pub struct FixedPoint<'a> {
    /// The schedule-backed evaluator: fabric, workload, collective model,
    /// loop and `[evaluator]` (`Study::backed`).
    pub backed: &'a Backed,
    /// The problem: constraints and pricing.
    pub problem: &'a Problem,
    /// What to optimize.
    pub objective: Objective,
}

impl Job for FixedPoint<'_> {
    type Output = crate::optimize::scheduled::FixedPoint;
    fn name(&self) -> String {
        crate::optimize::scheduled::FIXED_POINT.into()
    }
    fn run(self, ex: &Executor) -> Result<Self::Output, RunError> {
        Ok(crate::optimize::scheduled::optimize(
            self.backed,
            self.problem,
            self.objective,
            ex.observer(),
        )?)
    }
}

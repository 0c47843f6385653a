//! Co-optimizing the parallelization with the fabric (as PHAZE, ICML'24,
//! co-searches hardware and placement): every (TP, PP, DP) with
//! t * p * d = N, every placement order of the three groups on the fabric,
//! and every training recipe of the study's [`RecipeSpace`] (micro-batch,
//! recomputation, ZeRO stage, sequence parallelism, virtual stages; by
//! default the study's own recipe alone), each with its optimal bandwidth
//! allocation under the study's constraints.
//!
//! Exactness with pruning: every candidate is first planned without its
//! records (`transformer::plan`: divisibility, placement, the pipeline's
//! layer cut (`model::stages`), memory, and its compute in closed form)
//! and counted (`transformer::census_of`: each distinct collective and how
//! often), which gives two lower bounds on its
//! iteration time at any feasible allocation: its compute (communication
//! only adds), and its time with every dimension at the most bandwidth the
//! constraints allow (`optimize::most_bandwidth`; time falls as any
//! bandwidth grows; under the overlap loop, the compute stream's time
//! there, then the built iteration's own). Candidates are visited best
//! bound first; once a bound reaches the tenth best time found
//! ([`EXACT_TOP`], with a margin of 1e-9 for rounding) the candidate, and
//! every one after it, cannot be among the ten best and is neither built
//! nor solved. Candidates whose iterations are equal (ZeRO 1 and 2 differ
//! in memory alone; selective recomputation is none under fused attention)
//! share one solve, found by the workload's fingerprint and checked record
//! by record. Every solve is certified (optimize's gap, or the catalog
//! MILP's).
//!
//! Several accelerators in one search (`coopt_on`): every candidate is
//! planned, counted and bounded on its own NPU (its device, and the
//! reduction bandwidth of its HBM), and all of them share one
//! best-bound-first order and one cut, so the ten best rows are exact
//! across accelerators; an accelerator none of whose strategies reaches
//! them keeps only its least bound. `coopt_archs` builds the NPUs from
//! `[npu.arch]` (PHAZE's space, `model::arch`) within its budgets.
//!
//! Prices: a study with `[procurement]` solves each strategy against its
//! catalog (`procure::Pricing::Catalog`): the fastest purchasable design
//! within the procurement budgets and the dimensions' caps, its capex and
//! power from the bill of materials. Without it, the continuous optimum
//! under the study's linear constraints, priced by `[cost.tiers]`.

use super::procure::{self, Pricing};
use crate::error::InputError;
use crate::model::arch::{self, Arch, ArchSpace, Area, Power, Technology};
use crate::model::bom::DimOption;
use crate::model::collective::CollectiveModel;
use crate::model::fabric::Fabric;
use crate::model::training::{Counted, IterationModel, Loop};
use crate::model::transformer::{
    self, ModelSpec, Npu, Par, Precision, RecipeSpace, Recompute, Strategy, StrategyError,
};
use crate::optimize::expr::Constraint;
use crate::optimize::scheduled::{Backed, Measured, ScheduledError};
use crate::optimize::{self, Objective, Problem};
use crate::progress::{Part, Progress, Quiet};
use crate::study::Study;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// What became of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Verdict {
    /// Solved: its optimal allocation.
    Solved {
        /// GB/s per NPU per dimension.
        bw_gbps: Vec<f64>,
        /// Iteration time at that allocation, ms.
        iteration_time_ms: f64,
        /// Certified gap.
        gap: f64,
        /// Network cost, dollars (the bill's capex with catalog pricing,
        /// else the linear price).
        network_cost_usd: f64,
        /// Network power, watts (likewise).
        network_power_w: f64,
        /// Iteration time at the equal split, ms.
        equal_split_ms: f64,
    },
    /// Not solved: a lower bound on its time is no faster than the best.
    Pruned {
        /// The bound, ms.
        bound_ms: f64,
        /// Which bound: its compute alone, or its time with every
        /// dimension at the most bandwidth the constraints allow.
        bound: Bound,
        /// Iteration time at the equal split, ms (NaN, null in JSON, where
        /// the search did not need it: its compute bound is above the best
        /// equal-split time).
        equal_split_ms: f64,
    },
    /// Invalid: why.
    Rejected {
        /// The reason.
        reason: String,
    },
    /// The optimizer failed.
    Failed {
        /// The reason.
        reason: String,
    },
}

impl Verdict {
    /// Invalid: `reason`, as its row shows it.
    fn rejected(reason: &dyn std::fmt::Display) -> Verdict {
        Verdict::Rejected {
            reason: reason.to_string(),
        }
    }
}

/// The lower bound that pruned a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Its compute time (communication only adds).
    Compute,
    /// Its iteration time with every dimension at the most bandwidth the
    /// constraints allow (`optimize::most_bandwidth`; time falls as any
    /// bandwidth grows).
    MostBandwidth,
}

fn is_one(x: &u64) -> bool {
    *x == 1
}

/// One strategy and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Data-parallel degree.
    pub dp: u64,
    /// Expert-parallel degree (within the data-parallel group; 1 in a
    /// dense model).
    pub ep: u64,
    /// Context-parallel degree (the innermost ranks of the data-parallel
    /// slot; 1: none).
    #[serde(skip_serializing_if = "is_one")]
    pub cp: u64,
    /// The matrix products' precision.
    #[serde(skip_serializing_if = "Precision::is_bf16")]
    pub precision: Precision,
    /// Placement order, innermost first.
    pub order: String,
    /// Micro-batch size, sequences.
    pub micro_batch: u64,
    /// ZeRO stage.
    pub zero: u8,
    /// Sequence parallelism.
    pub sequence_parallel: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Virtual pipeline stages per device.
    pub virtual_stages: u64,
    /// Group sizes per dimension of tp, pp and dp (LIBRA notation).
    pub mapping: Option<[Vec<i64>; 3]>,
    /// Memory per NPU, GiB (when the strategy is valid enough to size).
    pub memory_gib: Option<f64>,
    /// Layers per pipeline device and the device timed
    /// (`transformer::StageCut::describe`), for the strategies solved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<String>,
    /// The accelerator it runs on, where the search spans several
    /// (`[npu.arch]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npu: Option<String>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Row {
    /// The tp, pp and dp groups in LIBRA notation, joined by `sep`.
    pub fn groups(&self, sep: &str) -> String {
        self.mapping.as_ref().map_or(String::new(), |m| {
            m.iter().map(|g| format!("{g:?}")).collect::<Vec<_>>().join(sep)
        })
    }

    /// Iteration time if solved.
    pub fn time_ms(&self) -> Option<f64> {
        match &self.verdict {
            Verdict::Solved { iteration_time_ms, .. } => Some(*iteration_time_ms),
            _ => None,
        }
    }

    /// The degrees, e.g. `tp 8 pp 4 dp 128`, with ` ep 8` where EP > 1
    /// and ` cp 2` where CP > 1.
    pub fn degrees(&self) -> String {
        let ep = if self.ep > 1 {
            format!(" ep {}", self.ep)
        } else {
            String::new()
        };
        let cp = if self.cp > 1 {
            format!(" cp {}", self.cp)
        } else {
            String::new()
        };
        format!("tp {} pp {} dp {}{ep}{cp}", self.tp, self.pp, self.dp)
    }

    /// The degrees with the order and the recipe, e.g. `tp 8 pp 4 dp 128
    /// (tp,pp,dp; mb 1, zero 1, sp, recompute none, v 1)`.
    pub fn strategy(&self) -> String {
        format!("{} ({}; {})", self.degrees(), self.order, self.recipe())
    }

    /// The recipe, e.g. `mb 2, zero 1, sp, recompute none, v 1` (and `,
    /// fp8` in FP8).
    pub fn recipe(&self) -> String {
        format!(
            "mb {}, zero {}, {}, recompute {}, v {}{}",
            self.micro_batch,
            self.zero,
            if self.sequence_parallel { "sp" } else { "no sp" },
            crate::error::Named::as_name(self.recompute),
            self.virtual_stages,
            if self.precision.is_bf16() { "" } else { ", fp8" }
        )
    }

    fn equal_ms(&self) -> Option<f64> {
        match &self.verdict {
            Verdict::Solved { equal_split_ms, .. } | Verdict::Pruned { equal_split_ms, .. } => {
                Some(*equal_split_ms).filter(|t| t.is_finite())
            }
            _ => None,
        }
    }
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coopt {
    /// Every strategy, solved ones first by iteration time.
    pub strategies: Vec<Row>,
    /// Distinct strategies enumerated (placements that put the same group
    /// sizes on the same dimensions counted once).
    pub searched: usize,
    /// Solved with the optimizer.
    pub solved: usize,
    /// Skipped by the bound.
    pub pruned: usize,
    /// Invalid.
    pub rejected: usize,
    /// The allocation the equal-split comparison uses, GB/s per NPU.
    pub equal_split_gbps: Vec<f64>,
    /// Best iteration time of any strategy at that equal split, ms.
    pub best_on_equal_split_ms: Option<f64>,
    /// The study's own strategy at its optimal allocation, ms.
    pub default_optimized_ms: Option<f64>,
    /// Why the study's own strategy has no time beside the optimum (it
    /// names none, or it does not fit: the reason), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_invalid: Option<String>,
    /// How every strategy's design was priced and bounded.
    pub priced_by: Pricing,
    /// The recipes searched.
    pub recipe_space: RecipeSpace,
    /// The joint optimum (the first row) as the search planned it, to
    /// generate its iteration again ([`replay`]); none without a solved
    /// strategy.
    #[serde(skip)]
    pub optimum: Option<Optimum>,
}

/// The joint optimum: what generates its iteration again.
#[derive(Debug, Clone, PartialEq)]
pub struct Optimum {
    /// The model, at the optimum's micro-batch.
    pub model: ModelSpec,
    /// The accelerator it runs on.
    pub npu: Npu,
    /// The strategy, recipe and placement.
    pub strategy: Strategy,
    /// Its allocation, GB/s per NPU.
    pub bw_gbps: Vec<f64>,
}

/// Why the joint optimum could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Its iteration could not be generated again (a solved strategy's
    /// always can).
    #[error("the joint optimum's iteration: {0}")]
    Strategy(#[from] transformer::StrategyError),
    /// A schedule could not be built or replayed.
    #[error(transparent)]
    Scheduled(#[from] ScheduledError),
}

/// The joint optimum replayed at its allocation: every distinct collective
/// of its iteration (the TP all-reduces, a MoE layer's dispatch and
/// combine all-to-alls, the gradient buckets, ZeRO's gathers) on the best
/// schedule dimsum builds over its group's links (`procure::best_spec`:
/// every builder, the all-to-all's flow schedule among them, the fastest
/// replay kept; the pipeline's sends keep the analytic time), beside the
/// iteration with every collective at its certified bound (the larger of
/// the analytic bandwidth bound and its group topology's: exact cut,
/// injection, latency) and the analytic model's time the search ranked it
/// by.
pub fn replay(study: &Study, optimum: &Optimum, progress: Progress) -> Result<Measured, ReplayError> {
    replay_on(&ReplayOn::of(study, &optimum.npu), optimum, progress)
}

/// What replaying a joint optimum reads from its study.
#[derive(Debug, Clone)]
pub struct ReplayOn {
    /// The fabric.
    pub fabric: crate::model::fabric::Fabric,
    /// The collective model with the optimum's accelerator (its HBM
    /// bandwidth for reductions, where the study's follows its NPU's).
    pub collectives: CollectiveModel,
    /// The training loop.
    pub training_loop: crate::model::training::Loop,
    /// The schedule evaluator: `best` in the study's link model
    /// (`procure::best_spec`).
    pub spec: crate::optimize::scheduled::Spec,
}

impl ReplayOn {
    /// The inputs of `study`'s replays of an optimum on `npu`.
    pub fn of(study: &Study, npu: &Npu) -> ReplayOn {
        ReplayOn {
            fabric: study.fabric.clone(),
            collectives: collective_model_on(study, npu),
            training_loop: study.training_loop,
            spec: procure::best_spec(study),
        }
    }
}

/// [`replay`] from its narrow inputs.
pub fn replay_on(on: &ReplayOn, optimum: &Optimum, progress: Progress) -> Result<Measured, ReplayError> {
    let g = transformer::generate(&optimum.model, &optimum.npu, &optimum.strategy, &on.fabric)?;
    let backed = Backed::new(&on.fabric, &g.workload, &on.collectives, on.training_loop, &on.spec);
    Ok(procure::measure(&backed, &optimum.bw_gbps, REPLAY, progress)?)
}

/// The task [`replay`] reports: distinct collectives replayed.
pub const REPLAY: &str = "replay the joint optimum on the best schedules";

fn divisors(n: u64) -> Vec<u64> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

const ORDERS: [[Par; 3]; 6] = [
    [Par::Tp, Par::Pp, Par::Dp],
    [Par::Tp, Par::Dp, Par::Pp],
    [Par::Pp, Par::Tp, Par::Dp],
    [Par::Pp, Par::Dp, Par::Tp],
    [Par::Dp, Par::Tp, Par::Pp],
    [Par::Dp, Par::Pp, Par::Tp],
];

/// Every strategy for `n` NPUs, the study's ZeRO stage, sequence
/// parallelism and recomputation kept; for a model of `experts` routed
/// experts (0: dense), every expert-parallel degree that divides both the
/// data-parallel degree and the experts.
pub fn strategies(n: u64, base: &Strategy, experts: u32) -> Vec<Strategy> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for t in divisors(n) {
        for p in divisors(n / t) {
            let d = n / t / p;
            for order in ORDERS {
                // Orders that differ only in where a degree-1 group sits are the same placement.
                let trivial = |par: Par| match par {
                    Par::Tp => t == 1,
                    Par::Pp => p == 1,
                    Par::Dp => d == 1,
                };
                let kept: Vec<Par> = order.iter().copied().filter(|q| !trivial(*q)).collect();
                if !seen.insert((t, p, kept)) {
                    continue;
                }
                for ep in divisors(d) {
                    if ep == 1 || (experts > 0 && u64::from(experts).is_multiple_of(ep)) {
                        // The data-parallel slot whole: the recipes split
                        // it by context parallelism (`RecipeSpace::each`).
                        out.push(Strategy {
                            tp: t,
                            pp: p,
                            dp: d,
                            ep,
                            order,
                            cp: 1,
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    out
}

fn collective_model(study: &Study) -> CollectiveModel {
    CollectiveModel {
        time_model: study.collective.time_model,
        group_bandwidth: study.collective.group_bandwidth,
        algorithms: study.collective.algorithms.clone(),
        reduction_gbps: study.collective.reduction_gbps,
    }
}

/// The collective model of `study` with `npu`: `reduction_memory`, where
/// it follows the study's NPU's HBM (its default, or `true`), follows
/// `npu`'s.
fn collective_model_on(study: &Study, npu: &Npu) -> CollectiveModel {
    let mut cm = collective_model(study);
    if let Some(own) = &study.npu
        && cm.reduction_gbps.map(f64::to_bits) == Some(own.device.hbm_gbps.to_bits())
    {
        cm.reduction_gbps = Some(npu.device.hbm_gbps).filter(|g| *g > 0.0);
    }
    cm
}

/// Why a study cannot be co-optimized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CooptError {
    /// The study does not describe a model to parallelize.
    #[error("coopt needs a study with [model] and [npu]")]
    NoModel,
    /// More candidates than a search may hold.
    #[error(
        "{placements} placements x {recipes} recipes{} = {candidates} candidates, more than a search may hold ({MAX_CANDIDATES}, about 1 GB of plans): give [coopt] (or [npu.arch]) fewer values",
        if *npus > 1 { format!(" x {npus} accelerators") } else { String::new() }
    )]
    TooMany {
        /// Placements (t x p x d and order).
        placements: usize,
        /// Recipes in the space.
        recipes: usize,
        /// Accelerators searched together.
        npus: usize,
        /// Their product.
        candidates: usize,
    },
    /// The observer asked the search to stop.
    #[error("cancelled")]
    Cancelled,
}

/// Most candidates (placements x recipes) a search plans: 2^22, about
/// 250 bytes of plan each.
pub const MAX_CANDIDATES: usize = 1 << 22;

/// Co-optimizes the study's model parallelization with its fabric over the
/// study's recipe space (`[coopt]`, else its own recipe).
pub fn coopt(study: &Study, progress: Progress) -> Result<Coopt, CooptError> {
    let (Some(model), Some(base)) = (&study.model, study.search_base()) else {
        return Err(CooptError::NoModel);
    };
    let space = study
        .recipe_space
        .clone()
        .unwrap_or_else(|| RecipeSpace::only(model, &base));
    coopt_in(study, &space, progress)
}

/// A candidate visited: its verdict, its problem (solved ones, for the
/// equal split), its workload's fingerprint (solved ones) and its time on
/// the study's own allocation (built ones, when the study gives one).
type Visited = (Verdict, Option<Problem>, Option<u64>, Option<f64>);

/// Candidates visited in parallel between two updates of the cut: larger
/// waves wait less on each other's solves and may solve a few candidates
/// a cut updated mid-wave would have pruned. Fixed, not a multiple of the
/// thread count: which candidates are solved and which pruned (and so the
/// rows and the solve counts) must not depend on the machine.
const WAVE: usize = 16;

/// How many of the best strategies are exact: no candidate that could be
/// among them is pruned (the rows after them are the ones solved).
pub const EXACT_TOP: usize = 10;

/// Group sizes per dimension of tp, pp and dp (LIBRA notation).
type Mapping = [Vec<i64>; 3];

/// One candidate: a placed strategy with its recipe, on one NPU.
struct Cand {
    s: Strategy,
    /// Index of its NPU in the search's NPUs.
    npu: usize,
    /// Index of its model (micro-batch) in the search's models.
    model: usize,
    mapping: Option<[Vec<i64>; 3]>,
    memory: Option<f64>,
    /// Its compute bound, ms, or why it is invalid.
    planned: Result<f64, StrategyError>,
    /// Its time at the most bandwidth, ms, from its counted collectives:
    /// exact under no-overlap (up to rounding, about 1e-13), a lower bound
    /// under overlap (NaN where not known).
    most_ms: f64,
    /// Its time at the study's own allocation (`bw`), ms, from its counts
    /// under no-overlap (NaN otherwise).
    equal_ms: f64,
}

impl Cand {
    /// Its compute bound, ms (infinite if invalid).
    fn bound(&self) -> f64 {
        self.planned.as_ref().map_or(f64::INFINITY, |b| *b)
    }

    /// Its best lower bound, ms: the compute bound, or the time at the
    /// most bandwidth where larger.
    fn key(&self) -> f64 {
        if self.most_ms > self.bound() {
            self.most_ms
        } else {
            self.bound()
        }
    }

    /// Its verdict once visited by its bound at or past `cut`: pruned by
    /// the bound that reaches it, or rejected.
    fn pruned_by(&self, cut: f64) -> Verdict {
        match &self.planned {
            Err(reason) => Verdict::rejected(reason),
            Ok(b) if *b >= cut => Verdict::Pruned {
                bound_ms: *b,
                bound: Bound::Compute,
                equal_split_ms: f64::NAN,
            },
            Ok(_) => Verdict::Pruned {
                bound_ms: self.most_ms,
                bound: Bound::MostBandwidth,
                equal_split_ms: f64::NAN,
            },
        }
    }
}

/// Co-optimizes over `space`: every placement of every TP x PP x DP, with
/// every recipe of the space.
pub fn coopt_in(study: &Study, space: &RecipeSpace, progress: Progress) -> Result<Coopt, CooptError> {
    let Some(npu) = &study.npu else {
        return Err(CooptError::NoModel);
    };
    coopt_on(study, space, std::slice::from_ref(npu), progress)
}

/// Co-optimizes over `space` and `npus` together: every placement of every
/// TP x PP x DP, with every recipe of the space, on every NPU (the first is
/// the study's own: its strategy's time is the default's). One search, one
/// best-bound-first order and one cut over all of them.
pub fn coopt_on(study: &Study, space: &RecipeSpace, npus: &[Npu], progress: Progress) -> Result<Coopt, CooptError> {
    let (Some(model), Some(base), Some(own_npu)) = (&study.model, study.search_base(), npus.first()) else {
        return Err(CooptError::NoModel);
    };
    let search = Search::new(study, model, space, npus);
    let all = search.candidates(&base)?;
    let mut cands = search.plan(all);
    let searched = cands.len();
    // Visited best bound first.
    cands.sort_by(|a, b| a.key().total_cmp(&b.key()));
    let mut v = search.visit(&cands, progress)?;
    search.equal_split(&cands, &mut v, progress)?;
    // The study's own strategy (its placement, recipe and micro-batch):
    // its row if the search solved it (the order compared by where it puts
    // the groups, virtual stages as `each` keeps them), else solved here,
    // even when the space leaves its recipe out.
    let unordered = |s: &Strategy| {
        let mut s = s.clone();
        s.order = base.order;
        if s.pp == 1 {
            s.virtual_stages = 1;
        }
        s
    };
    let base_mapping = mapping_of(&base, search.fabric);
    // A study that names no strategy has no own row.
    let own = cands.iter().position(|c| {
        study.parallelism.is_some()
            && c.npu == 0
            && unordered(&c.s) == unordered(&base)
            && c.mapping == base_mapping
            && search.models[c.model].micro_batch == model.micro_batch
    });
    let optimum = search.optimum(&cands, &v.verdicts);
    let Visit { verdicts, equal_bw, .. } = v;
    let mut rows = search.rows(cands, verdicts);
    let best_on_equal_split_ms = rows.iter().filter_map(Row::equal_ms).min_by(f64::total_cmp);
    // Why the study's own strategy is not in the comparison, if it is not:
    // it names none, or it is invalid (its row's reason).
    let own_invalid = match (&study.parallelism, own.map(|at| &rows[at].verdict)) {
        (None, _) => Some("the study names no strategy ([parallelism])".to_string()),
        (Some(_), Some(Verdict::Rejected { reason })) => Some(reason.clone()),
        (Some(_), None) => study.workload_missing.as_ref().map(|e| e.message.clone()),
        _ => None,
    };
    let default_optimized_ms = match own.and_then(|at| rows[at].time_ms()) {
        Some(t) => Some(t),
        None if study.parallelism.is_none() => None,
        None => transformer::generate(model, own_npu, &base, search.fabric)
            .ok()
            .and_then(|g| search.problem(&g.workload, 0).ok())
            .and_then(|p| match search.solve(&p) {
                Verdict::Solved { iteration_time_ms, .. } => Some(iteration_time_ms),
                _ => None,
            }),
    };
    let count = |f: fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.verdict)).count();
    let solved = count(|v| matches!(v, Verdict::Solved { .. }));
    let pruned = count(|v| matches!(v, Verdict::Pruned { .. }));
    let rejected = count(|v| matches!(v, Verdict::Rejected { .. }));
    rows.sort_by(|a, b| {
        a.time_ms()
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.time_ms().unwrap_or(f64::INFINITY))
    });
    Ok(Coopt {
        strategies: rows,
        searched,
        solved,
        pruned,
        rejected,
        equal_split_gbps: equal_bw,
        best_on_equal_split_ms,
        default_optimized_ms,
        own_invalid,
        priced_by: search.priced_by,
        recipe_space: space.clone(),
        optimum,
    })
}

/// The groups of `s` on `fabric` in LIBRA's notation (tp, pp, dp).
fn mapping_of(s: &Strategy, fabric: &Fabric) -> Option<Mapping> {
    s.groups(fabric)
        .map(|g| [g[0].to_libra(), g[1].to_libra(), g[2].to_libra()])
}

/// What every candidate of one search shares: the study's fabric, model
/// (one per micro-batch), NPUs and their collective models, the loop, the
/// pricing with its parts, and the most bandwidth each dimension can get.
struct Search<'a> {
    study: &'a Study,
    fabric: &'a Fabric,
    space: &'a RecipeSpace,
    npus: &'a [Npu],
    /// The model at each micro-batch of the space.
    models: Vec<ModelSpec>,
    /// Each NPU's collective model.
    cms: Vec<CollectiveModel>,
    lp: Loop,
    priced_by: Pricing,
    /// The study's constraints (the same whatever the workload), or why
    /// they cannot be built.
    constraints: Result<Vec<Constraint>, InputError>,
    /// Each dimension's purchasable designs (catalog pricing).
    options: Vec<Vec<DimOption>>,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    /// The most bandwidth each dimension can get: the same for every
    /// candidate (the constraints are the study's, whatever the workload;
    /// a bought design takes one of each dimension's options).
    most: Option<Vec<f64>>,
}

/// The state of the best-bound-first visit.
struct Visit {
    /// Each candidate's verdict (`None`: not visited).
    verdicts: Vec<Option<Verdict>>,
    /// The solved candidates' problems.
    problems: Vec<Option<Problem>>,
    /// Equal-split times by the representative of the strategies that
    /// build the same iteration.
    equal_of: HashMap<Same, f64>,
    /// The equal split: the study's `bw`, else the best design's total
    /// spread evenly.
    equal_bw: Vec<f64>,
}

/// A candidate before planning: its NPU and model (indices), strategy
/// and mapping.
type Placed = (usize, usize, Strategy, Option<Mapping>);

/// The strategies that build the same iteration (`transformer::same_iteration`)
/// on one NPU and model, in one placement.
type Same = (Strategy, usize, usize, Option<Mapping>);

fn same(c: &Cand) -> Same {
    (transformer::same_iteration(&c.s), c.npu, c.model, c.mapping.clone())
}

impl<'a> Search<'a> {
    fn new(study: &'a Study, model: &ModelSpec, space: &'a RecipeSpace, npus: &'a [Npu]) -> Search<'a> {
        let fabric = &study.fabric;
        let models = space
            .micro_batch
            .iter()
            .map(|&mb| ModelSpec {
                micro_batch: mb,
                ..model.clone()
            })
            .collect();
        let priced_by = Pricing::of(study);
        // The parts of the study's one fabric, for every strategy.
        let parts = study.procurement();
        let options = match priced_by {
            Pricing::Catalog => procure::dim_options(fabric, &parts),
            Pricing::Linear => Vec::new(),
        };
        let mut s = Search {
            study,
            fabric,
            space,
            npus,
            models,
            cms: npus.iter().map(|n| collective_model_on(study, n)).collect(),
            lp: study.training_loop,
            priced_by,
            constraints: study.constraints(&[]),
            options,
            budget_usd: parts.budget_usd,
            budget_w: parts.budget_w,
            most: None,
        };
        s.most = match priced_by {
            Pricing::Linear => s
                .problem(&crate::model::workload::Workload { layers: Vec::new() }, 0)
                .ok()
                .map(|p| optimize::most_bandwidth(&p)),
            Pricing::Catalog => Some(
                s.options
                    .iter()
                    .map(|o| o.iter().map(|x| x.gbps).fold(0.0, f64::max))
                    .collect(),
            ),
        };
        s
    }

    /// Every (NPU, micro-batch, strategy, mapping) to search: placements
    /// with the same mapping dropped, each with every recipe of the space.
    fn candidates(&self, base: &Strategy) -> Result<Vec<Placed>, CooptError> {
        let experts = self
            .models
            .first()
            .and_then(|m| m.moe.as_ref())
            .map_or(0, |x| x.experts);
        // Orders that land every group on the same dimensions with the same
        // sizes are one placement: keep the first.
        let mut seen = std::collections::HashSet::new();
        let placements: Vec<(Strategy, Option<Mapping>)> = strategies(self.fabric.npus(), base, experts)
            .into_iter()
            .filter_map(|s| {
                let mapping = mapping_of(&s, self.fabric);
                let mut unordered = s.clone();
                unordered.order = base.order;
                (mapping.is_none() || seen.insert((unordered, mapping.clone()))).then_some((s, mapping))
            })
            .collect();
        let (space, npus) = (self.space, self.npus.len());
        let candidates = placements.len().saturating_mul(space.len()).saturating_mul(npus);
        if candidates > MAX_CANDIDATES {
            return Err(CooptError::TooMany {
                placements: placements.len(),
                recipes: space.len(),
                npus,
                candidates,
            });
        }
        Ok((0..npus)
            .flat_map(|n| {
                placements.iter().flat_map(move |(p, mapping)| {
                    space.each(p).into_iter().map(move |(mb, s)| {
                        let model = space.micro_batch.iter().position(|&m| m == mb).unwrap_or(0);
                        (n, model, s, mapping.clone())
                    })
                })
            })
            .collect())
    }

    /// Every candidate planned (no records): valid ones get their compute
    /// bound, and their time at the most bandwidth from their counted
    /// collectives (`transformer::census_of`): a second lower bound, the
    /// time itself under no-overlap, the compute stream's under overlap.
    fn plan(&self, all: Vec<Placed>) -> Vec<Cand> {
        all.into_par_iter()
            .map(|(npu, model, s, mapping)| {
                let n = &self.npus[npu];
                let (memory, planned, most_ms, equal_ms) =
                    match transformer::plan(&self.models[model], n, &s, self.fabric) {
                        Ok(p) => {
                            let census = transformer::census_of(&self.models[model], n, &s, self.fabric, &p);
                            let counted = Counted::new(census.compute_ns, &census.comms, self.fabric, &self.cms[npu]);
                            let at = |bw: &[f64]| crate::model::units::ns_to_ms(counted.iteration_ns(bw, self.lp));
                            // The study's own allocation is the equal split: its
                            // time there, exact under no-overlap.
                            let equal_ms = match (&self.study.bw, self.lp) {
                                (Some(bw), Loop::NoOverlap) => at(bw),
                                _ => f64::NAN,
                            };
                            let most_ms = self.most.as_deref().map_or(f64::NAN, at);
                            let planned = Ok(crate::model::units::ns_to_ms(p.compute_ns));
                            (Some(p.memory.gib()), planned, most_ms, equal_ms)
                        }
                        Err(reason) => (None, Err(reason), f64::NAN, f64::NAN),
                    };
                Cand {
                    s,
                    npu,
                    model,
                    mapping,
                    memory,
                    planned,
                    most_ms,
                    equal_ms,
                }
            })
            .collect()
    }

    fn generate(&self, c: &Cand) -> Result<transformer::Generated, StrategyError> {
        transformer::generate(&self.models[c.model], &self.npus[c.npu], &c.s, self.fabric)
    }

    /// The study's problem for `workload` on NPU `npu`.
    fn problem(&self, workload: &crate::model::workload::Workload, npu: usize) -> Result<Problem, &InputError> {
        let it = IterationModel::new(workload, self.fabric, &self.cms[npu], self.lp);
        let cons = self.constraints.as_ref()?;
        Ok(Problem::new(self.fabric, it, self.study.linear_cost(), cons.clone()))
    }

    fn build(&self, c: &Cand) -> Option<Problem> {
        let g = self.generate(c).ok()?;
        self.problem(&g.workload, c.npu).ok()
    }

    /// The fastest design of `p` as the search prices it.
    fn solve(&self, p: &Problem) -> Verdict {
        let solved = match self.priced_by {
            Pricing::Linear => optimize::solve(p, Objective::Perf).map(|s| {
                (
                    s.bw_gbps,
                    s.iteration_time_ms,
                    s.gap,
                    s.network_cost_usd,
                    s.network_power_w,
                )
            }),
            Pricing::Catalog => procure::fastest_bought(p, self.options.clone(), self.budget_usd, self.budget_w)
                .map(|s| (s.bw_gbps, s.iteration_time_ms, s.mip_rel_gap, s.capex_usd, s.power_w)),
        };
        match solved {
            Ok((bw_gbps, iteration_time_ms, gap, network_cost_usd, network_power_w)) => Verdict::Solved {
                equal_split_ms: f64::NAN,
                bw_gbps,
                iteration_time_ms,
                gap,
                network_cost_usd,
                network_power_w,
            },
            Err(e) => Verdict::Failed { reason: e.to_string() },
        }
    }

    /// Visits the candidates (sorted best bound first) in waves of
    /// [`WAVE`], pruning against the [`EXACT_TOP`]-th best time solved so
    /// far, and stops at the first candidate whose bound reaches it (or
    /// with [`CooptError::Cancelled`] before a wave once `progress`
    /// cancels).
    fn visit(&self, cands: &[Cand], progress: Progress) -> Result<Visit, CooptError> {
        let mut v = Visit {
            verdicts: vec![None; cands.len()],
            problems: (0..cands.len()).map(|_| None).collect(),
            equal_of: HashMap::new(),
            equal_bw: match &self.study.bw {
                Some(bw) => bw.clone(),
                None => vec![0.0; self.fabric.ndims()],
            },
        };
        // Solved iterations by fingerprint: an equal workload (checked
        // record by record) shares the verdict; and by the representative
        // of the strategies that build the same iteration (`same`), which
        // shares it without building.
        let mut by_print: HashMap<(u64, usize), usize> = HashMap::new();
        let mut by_same: HashMap<Same, usize> = HashMap::new();
        let mut best = f64::INFINITY;
        // The EXACT_TOP best times solved so far: a candidate is pruned once a
        // bound reaches the last of them, so the first EXACT_TOP rows are the
        // true best (ties included).
        let mut top: Vec<f64> = Vec::with_capacity(EXACT_TOP + 1);
        let mut i = 0;
        while i < cands.len() {
            if progress.cancelled() {
                return Err(CooptError::Cancelled);
            }
            let end = (i + WAVE).min(cands.len());
            // Both bounds are closed forms whose rounding differs from the
            // built iteration's (about 1e-13): they prune with a margin of 1e-9.
            let cut = if top.len() >= EXACT_TOP {
                top[EXACT_TOP - 1] * (1.0 - 1e-9)
            } else {
                f64::INFINITY
            };
            if cut.is_finite() && cands[i].key() >= cut {
                // Visited by their bound: this one and every one after it are
                // pruned (or invalid).
                for (k, c) in cands.iter().enumerate().skip(i) {
                    v.verdicts[k] = Some(c.pruned_by(cut));
                }
                progress.progress(STRATEGIES, cands.len(), cands.len());
                break;
            }
            let seen = Seen {
                cands,
                verdicts: &v.verdicts,
                by_print: &by_print,
                by_same: &by_same,
                cut,
            };
            let done: Vec<Visited> = cands[i..end].par_iter().map(|c| self.visit_one(c, &seen)).collect();
            for (k, (verdict, p, print, eq)) in done.into_iter().enumerate() {
                let at = i + k;
                if let Some(t) = eq {
                    v.equal_of.insert(same(&cands[at]), t);
                }
                if let Verdict::Solved {
                    iteration_time_ms,
                    bw_gbps,
                    ..
                } = &verdict
                {
                    let k = top.partition_point(|t| t <= iteration_time_ms);
                    top.insert(k, *iteration_time_ms);
                    top.truncate(EXACT_TOP);
                    if *iteration_time_ms < best {
                        best = *iteration_time_ms;
                        if self.study.bw.is_none() {
                            let total: f64 = bw_gbps.iter().sum();
                            let n = self.fabric.ndims();
                            v.equal_bw = vec![total / n as f64; n];
                        }
                    }
                }
                if let Some(print) = print {
                    by_print.entry((print, cands[at].npu)).or_insert(at);
                }
                if matches!(
                    verdict,
                    Verdict::Solved { .. }
                        | Verdict::Pruned {
                            bound: Bound::MostBandwidth,
                            ..
                        }
                ) {
                    by_same.entry(same(&cands[at])).or_insert(at);
                }
                v.verdicts[at] = Some(verdict);
                v.problems[at] = p;
            }
            i = end;
            progress.progress(STRATEGIES, i, cands.len());
        }
        Ok(v)
    }

    /// One candidate of a wave: rejected, pruned by a bound, sharing the
    /// verdict of an equal iteration, or built and solved.
    fn visit_one(&self, c: &Cand, seen: &Seen) -> Visited {
        let bound = match &c.planned {
            Err(reason) => return (Verdict::rejected(reason), None, None, None),
            Ok(b) => *b,
        };
        let cut = seen.cut;
        let pruned = |bound_ms: f64, which: Bound| Verdict::Pruned {
            bound_ms,
            bound: which,
            equal_split_ms: f64::NAN,
        };
        if cut.is_finite() && bound >= cut {
            return (pruned(bound, Bound::Compute), None, None, None);
        }
        if cut.is_finite() && c.most_ms >= cut {
            return (pruned(c.most_ms, Bound::MostBandwidth), None, None, None);
        }
        if let Some(&j) = seen.by_same.get(&same(c))
            && let Some(v) = &seen.verdicts[j]
        {
            return (v.clone(), None, None, None);
        }
        let g = match self.generate(c) {
            Ok(g) => g,
            Err(reason) => return (Verdict::rejected(&reason), None, None, None),
        };
        let print = g.workload.fingerprint();
        if let Some(&j) = seen.by_print.get(&(print, c.npu))
            && let Some(v) = &seen.verdicts[j]
            && self.generate(&seen.cands[j]).is_ok_and(|h| h.workload == g.workload)
        {
            return (v.clone(), None, None, None);
        }
        let p = match self.problem(&g.workload, c.npu) {
            Ok(p) => p,
            Err(reason) => return (Verdict::rejected(reason), None, None, None),
        };
        // With the study's own allocation the equal split is fixed: time
        // every built candidate there too, so the pass below need not
        // build it again.
        let eq = self.study.bw.as_ref().map(|bw| p.time_ms(bw));
        // Under overlap the counted bound is the compute stream's: the
        // built iteration's own time at the most bandwidth is tighter.
        if self.lp == Loop::Overlap
            && let Some(most) = &self.most
        {
            let t = p.time_ms(most);
            if cut.is_finite() && t >= cut {
                return (pruned(t, Bound::MostBandwidth), None, None, eq);
            }
        }
        (self.solve(&p), Some(p), Some(print), eq)
    }

    /// Every solved strategy at the equal split (cheap: no solve), and the
    /// best strategy there: every candidate whose compute bound is below
    /// the best equal-split time so far (in waves of [`EQUAL_WAVE`]), timed
    /// from its counts under no-overlap, else built. Failed strategies do
    /// not count. Stops before a wave once `progress` cancels.
    fn equal_split(&self, cands: &[Cand], v: &mut Visit, progress: Progress) -> Result<(), CooptError> {
        let mut best_eq = f64::INFINITY;
        // Where the equal split gives no dimension more than the most it
        // can get, a candidate's time there is at least its time at the
        // most bandwidth: that bound skips it too.
        let equal_bw = &v.equal_bw;
        let equal_below_most = self
            .most
            .as_ref()
            .is_some_and(|m| m.len() == equal_bw.len() && equal_bw.iter().zip(m).all(|(e, x)| e <= x));
        let mut at = 0;
        while at < cands.len() {
            if progress.cancelled() {
                return Err(CooptError::Cancelled);
            }
            let end = (at + EQUAL_WAVE).min(cands.len());
            let need = |k: usize| {
                let counted = matches!(v.verdicts[k], Some(Verdict::Solved { .. } | Verdict::Pruned { .. }));
                let solved = matches!(v.verdicts[k], Some(Verdict::Solved { .. }));
                let bound = if equal_below_most {
                    cands[k].key()
                } else {
                    cands[k].bound()
                };
                counted && (solved || bound < best_eq)
            };
            let times: Vec<Option<f64>> = (at..end)
                .into_par_iter()
                .map(|k| need(k).then(|| self.equal_time(&cands[k], v.problems[k].as_ref(), &v.equal_of, equal_bw))?)
                .collect();
            for (k, t) in (at..end).zip(times) {
                if let Some(t) = t {
                    v.equal_of.insert(same(&cands[k]), t);
                    set_equal(v.verdicts[k].as_mut(), t);
                    if t.is_finite() {
                        best_eq = best_eq.min(t);
                    }
                }
            }
            at = end;
        }
        Ok(())
    }

    /// `c`'s time at the equal split: from its problem, an equal
    /// iteration's, its counts, or built.
    fn equal_time(
        &self,
        c: &Cand,
        p: Option<&Problem>,
        equal_of: &HashMap<Same, f64>,
        equal_bw: &[f64],
    ) -> Option<f64> {
        match (p, equal_of.get(&same(c))) {
            (Some(p), _) => Some(p.time_ms(equal_bw)),
            (None, Some(t)) => Some(*t),
            (None, None) if c.equal_ms.is_finite() => Some(c.equal_ms),
            // Counted, the time itself under no-overlap: no records needed.
            (None, None) if self.lp == Loop::NoOverlap => {
                transformer::census(&self.models[c.model], &self.npus[c.npu], &c.s, self.fabric)
                    .ok()
                    .map(|n| {
                        let counted = Counted::new(n.compute_ns, &n.comms, self.fabric, &self.cms[c.npu]);
                        crate::model::units::ns_to_ms(counted.iteration_ns(equal_bw, self.lp))
                    })
            }
            (None, None) => self.build(c).map(|p| p.time_ms(equal_bw)),
        }
    }

    /// The joint optimum: the first of the fastest, as the rows' stable
    /// sort puts it first.
    fn optimum(&self, cands: &[Cand], verdicts: &[Option<Verdict>]) -> Option<Optimum> {
        let fastest = verdicts
            .iter()
            .enumerate()
            .filter_map(|(k, v)| match v {
                Some(Verdict::Solved {
                    iteration_time_ms,
                    bw_gbps,
                    ..
                }) => Some((k, *iteration_time_ms, bw_gbps)),
                _ => None,
            })
            .filter(|x| x.1.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1));
        fastest.map(|(k, _, bw)| Optimum {
            model: self.models[cands[k].model].clone(),
            npu: self.npus[cands[k].npu].clone(),
            strategy: cands[k].s.clone(),
            bw_gbps: bw.clone(),
        })
    }

    /// The candidates as rows (moved, not copied: a search may hold
    /// millions), the solved ones with their stage cuts.
    fn rows(&self, cands: Vec<Cand>, verdicts: Vec<Option<Verdict>>) -> Vec<Row> {
        cands
            .into_iter()
            .zip(verdicts)
            .map(|(c, v)| {
                // The solved ones' stage cuts (planned again: tens to hundreds).
                let stages = matches!(v, Some(Verdict::Solved { .. }))
                    .then(|| transformer::plan(&self.models[c.model], &self.npus[c.npu], &c.s, self.fabric).ok())
                    .flatten()
                    .map(|p| p.cut.describe());
                Row {
                    tp: c.s.tp,
                    pp: c.s.pp,
                    dp: c.s.dp,
                    ep: c.s.ep,
                    cp: c.s.cp,
                    precision: c.s.precision,
                    order: c.s.order_name(),
                    micro_batch: self.models[c.model].micro_batch,
                    zero: c.s.zero,
                    sequence_parallel: c.s.sequence_parallel,
                    recompute: c.s.recompute,
                    virtual_stages: c.s.virtual_stages,
                    mapping: c.mapping,
                    memory_gib: c.memory,
                    stages,
                    npu: (self.npus.len() > 1).then(|| self.npus[c.npu].name.clone()),
                    verdict: v.unwrap_or(Verdict::Failed {
                        reason: "not visited".into(),
                    }),
                }
            })
            .collect()
    }
}

/// What a wave's candidates read of the visit so far.
struct Seen<'a> {
    cands: &'a [Cand],
    verdicts: &'a [Option<Verdict>],
    by_print: &'a HashMap<(u64, usize), usize>,
    by_same: &'a HashMap<Same, usize>,
    /// The pruning cut, ms (infinite until EXACT_TOP are solved).
    cut: f64,
}

/// Candidates timed at the equal split in parallel between two updates
/// of the best equal-split time (fixed, as [`WAVE`]).
const EQUAL_WAVE: usize = 128;

/// The task the search reports its progress as.
pub const STRATEGIES: &str = "strategies";

fn set_equal(v: Option<&mut Verdict>, t: f64) {
    if let Some(Verdict::Solved { equal_split_ms, .. } | Verdict::Pruned { equal_split_ms, .. }) = v {
        *equal_split_ms = t;
    }
}

/// Up to `per_kind` examples of each reason strategies lost to `best_ms`.
pub(crate) fn why_lost(r: &Coopt, best_ms: f64, per_kind: usize) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut out = Vec::new();
    for row in &r.strategies {
        let (kind, why) = match &row.verdict {
            Verdict::Solved { iteration_time_ms, .. } if *iteration_time_ms > best_ms => (
                "slower".to_string(),
                format!("{iteration_time_ms:.3} ms at its own optimal allocation"),
            ),
            Verdict::Solved { .. } => continue,
            Verdict::Pruned {
                bound_ms,
                bound: Bound::Compute,
                ..
            } => (
                "pruned".to_string(),
                format!("its compute alone takes {bound_ms:.3} ms, no faster than {best_ms:.3} ms"),
            ),
            Verdict::Pruned {
                bound_ms,
                bound: Bound::MostBandwidth,
                ..
            } => (
                "pruned at most bandwidth".to_string(),
                format!(
                    "even with every dimension at its most bandwidth it takes at least {bound_ms:.3} ms, no faster than {best_ms:.3} ms"
                ),
            ),
            Verdict::Rejected { reason } | Verdict::Failed { reason } => {
                // Group reasons by their first words (memory, heads, layers, batch, placement).
                let key: String = reason.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                (key, reason.clone())
            }
        };
        let generic = kind.chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
        match seen.iter_mut().find(|(k, _)| *k == generic) {
            Some((_, n)) if *n >= per_kind => continue,
            Some((_, n)) => *n += 1,
            None => seen.push((generic, 1)),
        }
        let recipe = if r.recipe_space.len() > 1 {
            format!(", {}", row.recipe())
        } else {
            String::new()
        };
        out.push(format!("{} ({}{recipe}): {why}", row.degrees(), row.order));
    }
    out
}

/// One accelerator's best design (`[npu] type = [...]`): its fastest
/// strategy and fabric, what the cluster costs and draws, and the
/// objectives accelerators are compared by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AcceleratorDesign {
    /// The accelerator type.
    pub npu: String,
    /// NPUs in the cluster.
    pub npus: u64,
    /// Price per accelerator, $ (`[npu] price_usd`).
    pub price_usd: f64,
    /// Board power per accelerator, W.
    pub tdp_w: f64,
    /// Its fastest strategy and fabric (the search's first row), if any.
    pub best: Option<Row>,
    /// The search's counts: searched, solved, pruned, invalid.
    pub counts: [usize; 4],
    /// The accelerators' capex, $.
    pub npu_capex_usd: f64,
    /// The fabric's capex (the bill of materials with catalog pricing, else
    /// the linear price), $.
    pub network_capex_usd: Option<f64>,
    /// Accelerators and fabric, $.
    pub capex_usd: Option<f64>,
    /// Accelerators at their board power and the fabric, W.
    pub power_w: Option<f64>,
    /// Iteration time, ms.
    pub iteration_ms: Option<f64>,
    /// Tokens trained per second.
    pub tokens_per_s: Option<f64>,
    /// Tokens per $: per second, over the capex written off across the
    /// cluster's life plus the energy bought, per second.
    pub tokens_per_usd: Option<f64>,
    /// Tokens per joule of the cluster's power.
    pub tokens_per_joule: Option<f64>,
    /// Iteration time x capex, ms x $M.
    pub time_x_cost: Option<f64>,
    /// Why it is not a candidate (over a budget, nothing valid), if so.
    pub note: Option<String>,
}

/// A design's figure to minimize (`None`: it has none).
type Key = dyn Fn(&AcceleratorDesign) -> Option<f64>;

/// What accelerators are compared by, and the best by each.
pub const ACCELERATOR_OBJECTIVES: [&str; 4] = ["time", "time x cost", "tokens per $", "tokens per joule"];

/// The accelerator choice: each type's best design and the best type by
/// each of [`ACCELERATOR_OBJECTIVES`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accelerators {
    /// One per type, in the study's order.
    pub designs: Vec<AcceleratorDesign>,
    /// (objective, the best type), over the designs within the budgets.
    pub best: Vec<(String, String)>,
    /// The life, energy price and budgets used.
    pub economics: crate::study::Economics,
}

/// Co-optimizes the strategy and the fabric for every accelerator of
/// `[npu] type = [...]` (each its own search over the study's recipe
/// space, [`coopt`]), prices each cluster (accelerators at their price and
/// board power, the fabric at its bill of materials or linear price) and
/// picks the best type by each objective. With catalog pricing, the
/// fabric's budgets are what the cluster's (`[coopt] budget_usd`,
/// `budget_w`) leave after the accelerators; otherwise a design over them
/// is reported and not chosen.
pub fn coopt_accelerators(study: &Study, progress: Progress) -> Result<Accelerators, CooptError> {
    let Some(model) = &study.model else {
        return Err(CooptError::NoModel);
    };
    let econ = &study.economics;
    let n = study.fabric.npus();
    let tokens = model.global_batch as f64 * model.seq as f64;
    let types = study.npu_choices.len().max(1);
    // The types side by side (each search is parallel too; together they
    // keep the cores busy through each other's sequential steps).
    let designs = study
        .npu_choices
        .par_iter()
        .enumerate()
        .map(|(k, npu)| -> Result<AcceleratorDesign, CooptError> {
            let price = npu.price_usd.unwrap_or(0.0);
            let tdp = npu.tdp_w.unwrap_or(0.0);
            let npu_capex = n as f64 * price;
            let npu_power = n as f64 * tdp;
            let mut s = study.clone();
            // `reduction_memory = true` follows the accelerator's HBM.
            s.collective.reduction_gbps = collective_model_on(study, npu).reduction_gbps;
            s.npu = Some(npu.clone());
            let mut note = None;
            if Pricing::of(study) == Pricing::Catalog {
                let mut parts = s.procurement();
                let left = |cluster: Option<f64>, own: Option<f64>, spent: f64| match (cluster, own) {
                    (Some(c), Some(o)) => Some(o.min(c - spent)),
                    (Some(c), None) => Some(c - spent),
                    (None, o) => o,
                };
                parts.budget_usd = left(econ.budget_usd, parts.budget_usd, npu_capex);
                parts.budget_w = left(econ.budget_w, parts.budget_w, npu_power);
                if parts.budget_usd.is_some_and(|b| b <= 0.0) || parts.budget_w.is_some_and(|b| b <= 0.0) {
                    note = Some("the accelerators alone exceed the cluster's budget".to_string());
                }
                s.procurement = Some(parts);
            }
            let r = if note.is_none() {
                Some(coopt(&s, &Part::new(progress, k, types))?)
            } else {
                None
            };
            let best = r
                .as_ref()
                .and_then(|r| r.strategies.first().filter(|x| x.time_ms().is_some()).cloned());
            let counts = r
                .as_ref()
                .map_or([0; 4], |r| [r.searched, r.solved, r.pruned, r.rejected]);
            let solved = best.as_ref().and_then(|b| match &b.verdict {
                Verdict::Solved {
                    iteration_time_ms,
                    network_cost_usd,
                    network_power_w,
                    ..
                } => Some((*iteration_time_ms, *network_cost_usd, *network_power_w)),
                _ => None,
            });
            if solved.is_none() && note.is_none() {
                note = Some("no valid strategy".to_string());
            }
            let capex = solved.map(|(_, c, _)| npu_capex + c);
            let power = solved.map(|(_, _, w)| npu_power + w);
            if note.is_none() {
                if let (Some(b), Some(c)) = (econ.budget_usd, capex)
                    && c > b * (1.0 + 1e-9)
                {
                    note = Some(format!("${:.1}M, over the cluster's ${:.1}M budget", c / 1e6, b / 1e6));
                } else if let (Some(b), Some(w)) = (econ.budget_w, power)
                    && w > b * (1.0 + 1e-9)
                {
                    note = Some(format!(
                        "{:.0} kW, over the cluster's {:.0} kW budget",
                        w / 1e3,
                        b / 1e3
                    ));
                }
            }
            let per_s = solved.map(|(ms, _, _)| tokens / (ms / 1e3));
            let life_s = econ.life_years * 365.25 * 86400.0;
            let usd_per_s = capex
                .zip(power)
                .map(|(c, w)| c / life_s + w / 1e3 * econ.usd_per_kwh / 3600.0);
            Ok(AcceleratorDesign {
                npu: npu.name.clone(),
                npus: n,
                price_usd: price,
                tdp_w: tdp,
                best,
                counts,
                npu_capex_usd: npu_capex,
                network_capex_usd: solved.map(|(_, c, _)| c),
                capex_usd: capex,
                power_w: power,
                iteration_ms: solved.map(|(ms, _, _)| ms),
                tokens_per_s: per_s,
                tokens_per_usd: per_s.zip(usd_per_s).map(|(t, u)| t / u),
                tokens_per_joule: per_s.zip(power).map(|(t, w)| t / w),
                time_x_cost: solved.zip(capex).map(|((ms, _, _), c)| ms * c / 1e6),
                note,
            })
        })
        .collect::<Result<Vec<_>, CooptError>>()?;
    let within: Vec<&AcceleratorDesign> = designs.iter().filter(|d| d.note.is_none()).collect();
    let pick = |key: &Key| {
        within
            .iter()
            .filter_map(|d| key(d).map(|v| (v, d.npu.clone())))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, name)| name)
    };
    let keys: [&Key; 4] = [
        &|d| d.iteration_ms,
        &|d| d.time_x_cost,
        &|d| d.tokens_per_usd.map(|x| -x),
        &|d| d.tokens_per_joule.map(|x| -x),
    ];
    let best = ACCELERATOR_OBJECTIVES
        .iter()
        .zip(keys)
        .filter_map(|(o, k)| pick(k).map(|name| ((*o).to_string(), name)))
        .collect();
    Ok(Accelerators {
        designs,
        best,
        economics: econ.clone(),
    })
}

/// One architecture of `[npu.arch]`: its figures, area and power, and what
/// the search certifies about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchDesign {
    /// The architecture.
    pub arch: Arch,
    /// Its name, as the search's rows give it.
    pub name: String,
    /// Peak dense BF16 TFLOP/s.
    pub peak_tflops: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// HBM capacity, GiB.
    pub hbm_gib: f64,
    /// Its area by component.
    pub area: Area,
    /// Its design power by component.
    pub power: Power,
    /// Its best solved iteration time, ms, where one of its strategies
    /// was solved (the search is exact for its ten best rows, not for each
    /// architecture: a faster strategy on it may have been pruned by the
    /// global cut, unless `exact`).
    pub best_ms: Option<f64>,
    /// No strategy on it is faster than this, ms: the least of its solved
    /// times and the bounds that pruned its other strategies (infinite if
    /// none is valid).
    pub bound_ms: f64,
    /// `best_ms` is its best time: no pruned strategy's bound is below it.
    pub exact: bool,
}

/// The architecture search (`[npu.arch]`): one co-optimization over every
/// architecture within the budgets, the strategies and the fabric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchSearch {
    /// The search: its rows name their architecture.
    pub coopt: Coopt,
    /// Every architecture within the budgets, the study's own first.
    pub archs: Vec<ArchDesign>,
    /// Architectures of the space over the area or power budget.
    pub over_budget: usize,
    /// The space searched.
    pub space: ArchSpace,
    /// The area and energy constants.
    pub technology: Technology,
    /// The study's own architecture's best strategy and fabric (its own
    /// search, exact).
    pub own_best: Option<Row>,
}

impl ArchSearch {
    /// The architectures, fastest first by what is certain of each (its
    /// least bound).
    pub fn ranked(&self) -> Vec<&ArchDesign> {
        let mut order: Vec<&ArchDesign> = self.archs.iter().collect();
        order.sort_by(|x, y| x.bound_ms.total_cmp(&y.bound_ms));
        order
    }
}

/// Co-optimizes the architecture of `[npu.arch]` with the strategy and the
/// fabric: every combination of its lists within its area and power
/// budgets, each an NPU of [`coopt_on`]'s one exact search (the study's
/// own, its first combination within the budgets, first). `own_search`:
/// the study's own search ([`coopt`]) where already done, else done here.
pub fn coopt_archs(study: &Study, own_search: Option<&Coopt>, progress: Progress) -> Result<ArchSearch, CooptError> {
    let (Some(space), Some(model), Some(base), Some(own)) =
        (&study.arch_space, &study.model, study.search_base(), &study.npu)
    else {
        return Err(CooptError::NoModel);
    };
    let base = &base;
    let tech = arch::N7;
    let all = space.all();
    let within: Vec<Arch> = all.iter().copied().filter(|a| space.within(a, &tech)).collect();
    let npus: Vec<Npu> = within
        .iter()
        .map(|a| crate::study::arch_npu(space, a, own.headroom_gib))
        .collect();
    let recipes = study
        .recipe_space
        .clone()
        .unwrap_or_else(|| RecipeSpace::only(model, base));
    let coopt = coopt_on(study, &recipes, &npus, progress)?;
    let mut best: std::collections::HashMap<&str, (Option<f64>, f64)> = std::collections::HashMap::new();
    for r in &coopt.strategies {
        let Some(name) = r.npu.as_deref() else { continue };
        let e = best.entry(name).or_insert((None, f64::INFINITY));
        match &r.verdict {
            Verdict::Solved { iteration_time_ms, .. } => {
                e.0 = Some(e.0.map_or(*iteration_time_ms, |t: f64| t.min(*iteration_time_ms)));
                e.1 = e.1.min(*iteration_time_ms);
            }
            Verdict::Pruned { bound_ms, .. } => e.1 = e.1.min(*bound_ms),
            _ => {}
        }
    }
    let archs: Vec<ArchDesign> = within
        .iter()
        .zip(&npus)
        .map(|(a, n)| {
            let (best_ms, bound_ms) = best.get(n.name.as_str()).copied().unwrap_or((None, f64::INFINITY));
            ArchDesign {
                arch: *a,
                name: n.name.clone(),
                peak_tflops: a.peak_tflops(),
                hbm_gbps: a.hbm_gbps(),
                hbm_gib: a.hbm_gib(),
                area: a.area(&tech),
                power: a.power(&tech),
                best_ms,
                bound_ms,
                exact: best_ms == Some(bound_ms),
            }
        })
        .collect();
    let own_best = match own_search {
        Some(c) => c.strategies.first().cloned(),
        None => coopt_in(study, &recipes, &Quiet)?.strategies.into_iter().next(),
    }
    .filter(|r| r.time_ms().is_some());
    Ok(ArchSearch {
        over_budget: all.len() - within.len(),
        archs,
        space: space.clone(),
        technology: tech,
        own_best,
        coopt,
    })
}

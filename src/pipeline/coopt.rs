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
use super::run::Progress;
use crate::model::arch::{self, Arch, ArchSpace, Area, Power, Technology};
use crate::model::collective::CollectiveModel;
use crate::model::fabric::Fabric;
use crate::model::training::{Counted, IterationModel};
use crate::model::transformer::{self, ModelSpec, Npu, Par, Precision, RecipeSpace, Recompute, Strategy};
use crate::optimize::scheduled::{Backed, Measured, ScheduledError};
use crate::optimize::{self, Objective, Problem};
use crate::study::Study;
use rayon::prelude::*;
use serde::Serialize;

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
    let g = transformer::generate(&optimum.model, &optimum.npu, &optimum.strategy, &study.fabric)?;
    let backed = Backed::new(
        &study.fabric,
        &g.workload,
        &collective_model_on(study, &optimum.npu),
        study.training_loop,
        &procure::best_spec(study),
    );
    let task = "replay the joint optimum on the best schedules";
    Ok(procure::measure(&backed, &optimum.bw_gbps, task, progress)?)
}

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

fn problem(
    study: &Study,
    fabric: &Fabric,
    workload: &crate::model::workload::Workload,
    cm: &CollectiveModel,
) -> Result<Problem, String> {
    let it = IterationModel::new(workload, fabric, cm, study.training_loop);
    let cons = study.constraints(&[]).map_err(|e| e.to_string())?;
    Ok(Problem::new(fabric, it, study.linear_cost(), cons))
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
}

/// Most candidates (placements x recipes) a search plans: 2^22, about
/// 250 bytes of plan each.
pub const MAX_CANDIDATES: usize = 1 << 22;

/// Co-optimizes the study's model parallelization with its fabric over the
/// study's recipe space (`[coopt]`, else its own recipe).
pub fn coopt(study: &Study, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Coopt, CooptError> {
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

/// Candidates visited per thread between two updates of the cut: larger
/// chunks wait less on each other's solves and may solve a few candidates
/// a cut updated mid-chunk would have pruned.
const CHUNK: usize = 8;

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
    planned: Result<f64, String>,
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
}

/// Co-optimizes over `space`: every placement of every TP x PP x DP, with
/// every recipe of the space.
pub fn coopt_in(
    study: &Study,
    space: &RecipeSpace,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Coopt, CooptError> {
    let Some(npu) = &study.npu else {
        return Err(CooptError::NoModel);
    };
    coopt_on(study, space, std::slice::from_ref(npu), progress)
}

/// Co-optimizes over `space` and `npus` together: every placement of every
/// TP x PP x DP, with every recipe of the space, on every NPU (the first is
/// the study's own: its strategy's time is the default's). One search, one
/// best-bound-first order and one cut over all of them.
pub fn coopt_on(
    study: &Study,
    space: &RecipeSpace,
    npus: &[Npu],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Coopt, CooptError> {
    let (Some(model), Some(base), Some(own_npu)) = (&study.model, study.search_base(), npus.first()) else {
        return Err(CooptError::NoModel);
    };
    let base = &base;
    let fabric = &study.fabric;
    let models: Vec<ModelSpec> = space
        .micro_batch
        .iter()
        .map(|&mb| ModelSpec {
            micro_batch: mb,
            ..model.clone()
        })
        .collect();
    let experts = model.moe.as_ref().map_or(0, |x| x.experts);
    // Orders that land every group on the same dimensions with the same
    // sizes are one placement: keep the first.
    let mut seen = std::collections::HashSet::new();
    let placements: Vec<(Strategy, Option<Mapping>)> = strategies(fabric.npus(), base, experts)
        .into_iter()
        .filter_map(|s| {
            let mapping = s
                .groups(fabric)
                .map(|g| [g[0].to_libra(), g[1].to_libra(), g[2].to_libra()]);
            let mut unordered = s.clone();
            unordered.order = base.order;
            (mapping.is_none() || seen.insert((unordered, mapping.clone()))).then_some((s, mapping))
        })
        .collect();
    let candidates = placements.len().saturating_mul(space.len()).saturating_mul(npus.len());
    if candidates > MAX_CANDIDATES {
        return Err(CooptError::TooMany {
            placements: placements.len(),
            recipes: space.len(),
            npus: npus.len(),
            candidates,
        });
    }
    let all: Vec<(usize, usize, Strategy, &Option<Mapping>)> = (0..npus.len())
        .flat_map(|n| {
            placements.iter().flat_map(move |(p, mapping)| {
                space.each(p).into_iter().map(move |(mb, s)| {
                    (
                        n,
                        space.micro_batch.iter().position(|&m| m == mb).unwrap_or(0),
                        s,
                        mapping,
                    )
                })
            })
        })
        .collect();
    let priced_by = Pricing::of(study);
    // The parts of the study's one fabric, for every strategy.
    let parts = study.procurement();
    let options = match priced_by {
        Pricing::Catalog => procure::dim_options(fabric, &parts),
        Pricing::Linear => Vec::new(),
    };
    // The most bandwidth each dimension can get: the same for every
    // candidate (the constraints are the study's, whatever the workload;
    // a bought design takes one of each dimension's options).
    let most: Option<Vec<f64>> = match priced_by {
        Pricing::Linear => problem(
            study,
            fabric,
            &crate::model::workload::Workload { layers: Vec::new() },
            &collective_model(study),
        )
        .ok()
        .map(|p| optimize::most_bandwidth(&p)),
        Pricing::Catalog => Some(
            options
                .iter()
                .map(|o| o.iter().map(|x| x.gbps).fold(0.0, f64::max))
                .collect(),
        ),
    };
    let cms: Vec<CollectiveModel> = npus.iter().map(|n| collective_model_on(study, n)).collect();
    let lp = study.training_loop;
    // Plan every candidate (no records): valid ones get their compute
    // bound, and their time at the most bandwidth from their counted
    // collectives (`transformer::census_of`): a second lower bound, the
    // time itself under no-overlap, the compute stream's under overlap.
    let mut cands: Vec<Cand> = all
        .into_par_iter()
        .map(|(ni, mi, s, mapping)| {
            let (ni, mi, s, mapping) = (&ni, &mi, &s, mapping.clone());
            let npu = &npus[*ni];
            match transformer::plan(&models[*mi], npu, s, fabric) {
                Ok(p) => {
                    let census = transformer::census_of(&models[*mi], npu, s, fabric, &p);
                    let counted = Counted::new(census.compute_ns, &census.comms, fabric, &cms[*ni]);
                    let at = |bw: &[f64]| crate::model::units::ns_to_ms(counted.iteration_ns(bw, lp));
                    let most_ms = most.as_deref().map_or(f64::NAN, at);
                    // The study's own allocation is the equal split: its
                    // time there, exact under no-overlap.
                    let equal_ms = match (&study.bw, lp) {
                        (Some(bw), crate::model::training::Loop::NoOverlap) => at(bw),
                        _ => f64::NAN,
                    };
                    Cand {
                        s: s.clone(),
                        npu: *ni,
                        model: *mi,
                        mapping,
                        memory: Some(p.memory.gib()),
                        planned: Ok(crate::model::units::ns_to_ms(p.compute_ns)),
                        most_ms,
                        equal_ms,
                    }
                }
                Err(reason) => Cand {
                    s: s.clone(),
                    npu: *ni,
                    model: *mi,
                    mapping,
                    memory: None,
                    planned: Err(reason.to_string()),
                    most_ms: f64::NAN,
                    equal_ms: f64::NAN,
                },
            }
        })
        .collect();
    let searched = cands.len();
    let equal = match &study.bw {
        Some(bw) => bw.clone(),
        None => vec![0.0; fabric.ndims()],
    };
    let generate =
        |c: &Cand| transformer::generate(&models[c.model], &npus[c.npu], &c.s, fabric).map_err(|e| e.to_string());
    let build = |c: &Cand| -> Result<Problem, String> { problem(study, fabric, &generate(c)?.workload, &cms[c.npu]) };
    let solve = |p: &Problem| -> Verdict {
        let solved = match priced_by {
            Pricing::Linear => optimize::solve(p, Objective::Perf).map(|s| {
                (
                    s.bw_gbps,
                    s.iteration_time_ms,
                    s.gap,
                    s.network_cost_usd,
                    s.network_power_w,
                )
            }),
            Pricing::Catalog => procure::fastest_bought(p, options.clone(), parts.budget_usd, parts.budget_w)
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
    };
    // Visited best bound first.
    cands.sort_by(|a, b| a.key().total_cmp(&b.key()));
    let mut verdicts: Vec<Option<Verdict>> = vec![None; cands.len()];
    let mut problems: Vec<Option<Problem>> = (0..cands.len()).map(|_| None).collect();
    // Solved iterations by fingerprint: an equal workload (checked record
    // by record) shares the verdict; and by the representative of the
    // strategies that build the same iteration (`same_iteration`), which
    // shares it without building.
    let mut by_print: std::collections::HashMap<(u64, usize), usize> = std::collections::HashMap::new();
    let same = |c: &Cand| (transformer::same_iteration(&c.s), c.npu, c.model, c.mapping.clone());
    let mut by_same: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    // Equal-split times by the same representative.
    let mut equal_of: std::collections::HashMap<_, f64> = std::collections::HashMap::new();
    let mut best = f64::INFINITY;
    // The EXACT_TOP best times solved so far: a candidate is pruned once a
    // bound reaches the last of them, so the first EXACT_TOP rows are the
    // true best (ties included).
    let mut top: Vec<f64> = Vec::with_capacity(EXACT_TOP + 1);
    let mut equal_bw = equal;
    let threads = rayon::current_num_threads().max(1);
    let mut i = 0;
    while i < cands.len() {
        let end = (i + CHUNK * threads).min(cands.len());
        let chunk = &cands[i..end];
        // With the study's own allocation the equal split is fixed: time
        // every built candidate there too, so the pass below need not
        // build it again.
        let fixed_equal = study.bw.as_ref();
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
                verdicts[k] = Some(match &c.planned {
                    Err(reason) => Verdict::Rejected { reason: reason.clone() },
                    Ok(b) if *b >= cut => Verdict::Pruned {
                        bound_ms: *b,
                        bound: Bound::Compute,
                        equal_split_ms: f64::NAN,
                    },
                    Ok(_) => Verdict::Pruned {
                        bound_ms: c.most_ms,
                        bound: Bound::MostBandwidth,
                        equal_split_ms: f64::NAN,
                    },
                });
            }
            progress(cands.len(), cands.len());
            break;
        }
        let done: Vec<Visited> = chunk
            .par_iter()
            .map(|c| {
                let bound = match &c.planned {
                    Err(reason) => return (Verdict::Rejected { reason: reason.clone() }, None, None, None),
                    Ok(b) => *b,
                };
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
                if let Some(&j) = by_same.get(&same(c))
                    && let Some(v) = &verdicts[j]
                {
                    return (v.clone(), None, None, None);
                }
                let g = match generate(c) {
                    Ok(g) => g,
                    Err(reason) => return (Verdict::Rejected { reason }, None, None, None),
                };
                let print = g.workload.fingerprint();
                if let Some(&j) = by_print.get(&(print, c.npu))
                    && let Some(v) = &verdicts[j]
                    && generate(&cands[j]).is_ok_and(|h| h.workload == g.workload)
                {
                    return (v.clone(), None, None, None);
                }
                let p = match problem(study, fabric, &g.workload, &cms[c.npu]) {
                    Ok(p) => p,
                    Err(reason) => return (Verdict::Rejected { reason }, None, None, None),
                };
                let eq = fixed_equal.map(|bw| p.time_ms(bw));
                // Under overlap the counted bound is the compute stream's:
                // the built iteration's own time at the most bandwidth is
                // tighter.
                if lp == crate::model::training::Loop::Overlap
                    && let Some(most) = &most
                {
                    let t = p.time_ms(most);
                    if cut.is_finite() && t >= cut {
                        return (pruned(t, Bound::MostBandwidth), None, None, eq);
                    }
                }
                (solve(&p), Some(p), Some(print), eq)
            })
            .collect();
        for (k, (v, p, print, eq)) in done.into_iter().enumerate() {
            let at = i + k;
            if let Some(t) = eq {
                equal_of.insert(same(&cands[at]), t);
            }
            if let Verdict::Solved { iteration_time_ms, .. } = &v {
                let k = top.partition_point(|t| t <= iteration_time_ms);
                top.insert(k, *iteration_time_ms);
                top.truncate(EXACT_TOP);
            }
            if let Verdict::Solved {
                iteration_time_ms,
                bw_gbps,
                ..
            } = &v
                && *iteration_time_ms < best
            {
                best = *iteration_time_ms;
                if study.bw.is_none() {
                    let total: f64 = bw_gbps.iter().sum();
                    equal_bw = vec![total / fabric.ndims() as f64; fabric.ndims()];
                }
            }
            if let Some(print) = print {
                by_print.entry((print, cands[at].npu)).or_insert(at);
            }
            if matches!(
                v,
                Verdict::Solved { .. }
                    | Verdict::Pruned {
                        bound: Bound::MostBandwidth,
                        ..
                    }
            ) {
                by_same.entry(same(&cands[at])).or_insert(at);
            }
            verdicts[at] = Some(v);
            problems[at] = p;
        }
        i = end;
        progress(i, cands.len());
    }
    // Every solved strategy at the equal split (cheap: no solve), and the
    // best strategy there: every candidate whose compute bound is below the
    // best equal-split time so far (in parallel chunks), timed from its
    // counts under no-overlap, else built. Failed strategies do not count.
    let mut best_eq = f64::INFINITY;
    // Where the equal split gives no dimension more than the most it can
    // get, a candidate's time there is at least its time at the most
    // bandwidth: that bound skips it too.
    let equal_below_most = most
        .as_ref()
        .is_some_and(|m| m.len() == equal_bw.len() && equal_bw.iter().zip(m).all(|(e, x)| e <= x));
    let mut at = 0;
    while at < cands.len() {
        let end = (at + 64 * threads).min(cands.len());
        let need = |k: usize| {
            let counted = matches!(verdicts[k], Some(Verdict::Solved { .. } | Verdict::Pruned { .. }));
            let solved = matches!(verdicts[k], Some(Verdict::Solved { .. }));
            let bound = if equal_below_most {
                cands[k].key()
            } else {
                cands[k].bound()
            };
            counted && (solved || bound < best_eq)
        };
        let times: Vec<Option<f64>> = (at..end)
            .into_par_iter()
            .map(|k| {
                if !need(k) {
                    return None;
                }
                let c = &cands[k];
                match (&problems[k], equal_of.get(&same(c))) {
                    (Some(p), _) => Some(p.time_ms(&equal_bw)),
                    (None, Some(t)) => Some(*t),
                    (None, None) if c.equal_ms.is_finite() => Some(c.equal_ms),
                    // Counted, the time itself under no-overlap: no records
                    // needed.
                    (None, None) if lp == crate::model::training::Loop::NoOverlap => {
                        transformer::census(&models[c.model], &npus[c.npu], &c.s, fabric)
                            .ok()
                            .map(|n| {
                                let counted = Counted::new(n.compute_ns, &n.comms, fabric, &cms[c.npu]);
                                crate::model::units::ns_to_ms(counted.iteration_ns(&equal_bw, lp))
                            })
                    }
                    (None, None) => build(c).ok().map(|p| p.time_ms(&equal_bw)),
                }
            })
            .collect();
        for (k, t) in (at..end).zip(times) {
            if let Some(t) = t {
                equal_of.insert(same(&cands[k]), t);
                set_equal(verdicts[k].as_mut(), t);
                if t.is_finite() {
                    best_eq = best_eq.min(t);
                }
            }
        }
        at = end;
    }
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
    let base_mapping = base
        .groups(fabric)
        .map(|g| [g[0].to_libra(), g[1].to_libra(), g[2].to_libra()]);
    // A study that names no strategy has no own row.
    let own = cands.iter().position(|c| {
        study.parallelism.is_some()
            && c.npu == 0
            && unordered(&c.s) == unordered(base)
            && c.mapping == base_mapping
            && models[c.model].micro_batch == model.micro_batch
    });
    // The joint optimum: the first of the fastest, as the rows' stable
    // sort puts it first.
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
    let optimum = fastest.map(|(k, _, bw)| Optimum {
        model: models[cands[k].model].clone(),
        npu: npus[cands[k].npu].clone(),
        strategy: cands[k].s.clone(),
        bw_gbps: bw.clone(),
    });
    // The candidates become the rows (moved, not copied: a search may
    // hold millions).
    drop(problems);
    let mut rows: Vec<Row> = cands
        .into_iter()
        .zip(verdicts)
        .map(|(c, v)| {
            // The solved ones' stage cuts (planned again: tens to hundreds).
            let stages = matches!(v, Some(Verdict::Solved { .. }))
                .then(|| transformer::plan(&models[c.model], &npus[c.npu], &c.s, fabric).ok())
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
                micro_batch: models[c.model].micro_batch,
                zero: c.s.zero,
                sequence_parallel: c.s.sequence_parallel,
                recompute: c.s.recompute,
                virtual_stages: c.s.virtual_stages,
                mapping: c.mapping,
                memory_gib: c.memory,
                stages,
                npu: (npus.len() > 1).then(|| npus[c.npu].name.clone()),
                verdict: v.unwrap_or(Verdict::Failed {
                    reason: "not visited".into(),
                }),
            }
        })
        .collect();
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
        None => transformer::generate(model, own_npu, base, fabric)
            .ok()
            .and_then(|g| problem(study, fabric, &g.workload, &cms[0]).ok())
            .and_then(|p| match solve(&p) {
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
        priced_by,
        recipe_space: space.clone(),
        optimum,
    })
}

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
pub fn coopt_accelerators(study: &Study, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Accelerators, CooptError> {
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
                Some(coopt(&s, &|d, t| progress(k * t + d, types * t))?)
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
pub fn coopt_archs(
    study: &Study,
    own_search: Option<&Coopt>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<ArchSearch, CooptError> {
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
        None => coopt_in(study, &recipes, &|_, _| {})?.strategies.into_iter().next(),
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

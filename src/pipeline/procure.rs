//! A study's procurement: each recommended allocation bought from the
//! catalog (its bill of materials) with a red flag wherever the bill is
//! over a budget or a dimension's cap, each objective answered by the
//! catalog itself (the MILP over purchasable designs: within the budgets
//! and caps by construction), the decision (the first objective's bought
//! design, with what the next faster purchasable design costs per ms), the
//! catalog-constrained optimum under the study's budget beside its
//! continuous bound, and the catalog frontier (the fastest purchasable
//! fabric at budgets from the cheapest purchasable fabric to the least
//! capex of the fastest one).
//!
//! The decision's time is replayed (`Procured::replay_decision`): every collective of the
//! iteration on the best schedule dimsum builds for it (`best`: every
//! builder on the group's own links, the fastest replay kept), beside the
//! iteration with each collective at its certified bound (the exact cut
//! of its group's links). The MILP chooses on the analytic model, the fast
//! inner estimate; the report shows its error at the design bought.

use crate::error::InputError;
use crate::model::bom::{self, Bom, BomError, DimOption, Procurement};
use crate::model::fabric::Fabric;
use crate::optimize::catalog::{self, CatalogSolution, Comparison, Goal};
use crate::optimize::scheduled::{self, Backed, Evaluator, Measured, ScheduledError};
use crate::optimize::{Objective, OptError, Problem};
use crate::progress::{Progress, ticking};
use crate::schedule::algorithm::Algorithm;
use crate::study::Study;
use crate::study::objective::Source;
use serde::Serialize;
use std::sync::atomic::Ordering;

/// Why a catalog design could not be found or bought.
#[derive(Debug, thiserror::Error)]
pub enum ProcureError {
    /// The MILP or its relaxation failed.
    #[error(transparent)]
    Opt(#[from] OptError),
    /// The optimum could not be bought as parts.
    #[error(transparent)]
    Bom(#[from] BomError),
    /// The objective has no catalog form (perf-per-cost) or lacks a
    /// target, or a budget given is not one: bad input.
    #[error(transparent)]
    Objective(#[from] InputError),
}

/// How a search prices the designs it compares (written as `priced_by` in
/// its outputs). A study with `[procurement]` is priced by its catalog
/// everywhere a design is chosen (the decision, sweeps, the
/// co-optimization): the fastest purchasable design within the budgets and
/// caps, by the catalog MILP. A study without it is priced by its linear
/// `[cost.tiers]`, a continuous approximation that its outputs label as
/// such.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pricing {
    /// The catalog's bill of materials (ports, switches, cables).
    Catalog,
    /// Linear $ and W per GB/s from `[cost.tiers]`.
    Linear,
}

impl Pricing {
    /// The pricing of `study`'s searches.
    pub fn of(study: &Study) -> Pricing {
        if study.procurement.is_some() {
            Pricing::Catalog
        } else {
            Pricing::Linear
        }
    }

    /// The name written in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Pricing::Catalog => "catalog",
            Pricing::Linear => "linear",
        }
    }

    /// How a report labels a cost priced this way.
    pub fn label(self) -> &'static str {
        match self {
            Pricing::Catalog => "bought from the catalog",
            Pricing::Linear => "linear $ per GB/s, an approximation",
        }
    }
}

/// The fastest purchasable design of `problem` over `options` (a
/// dimension's each, [`dim_options`]): the catalog MILP within the
/// problem's GB/s constraints (its caps among them) and the budgets given.
pub fn fastest_bought(
    problem: &Problem,
    options: Vec<Vec<DimOption>>,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> Result<CatalogSolution, OptError> {
    let budget_usd = match (budget_usd, budget_w) {
        (None, None) => Some(UNLIMITED_USD),
        (b, _) => b,
    };
    let (cp, _) = catalog::CatalogProblem::new(problem, options, budget_usd, budget_w);
    catalog::solve(&cp, Goal::Perf)
}

/// Every purchasable design of every dimension of `fabric` from `spec`'s
/// parts (none bought included).
pub fn dim_options(fabric: &Fabric, spec: &Procurement) -> Vec<Vec<DimOption>> {
    (0..fabric.ndims())
        .map(|d| bom::options(fabric, spec, d, true))
        .collect()
}

/// What buying reads from a study: its fabric and its `[procurement]`
/// (catalog, budgets; the defaults where the study has none).
#[derive(Debug, Clone)]
pub struct Buying {
    /// The fabric.
    pub fabric: Fabric,
    /// The catalog and the budgets.
    pub spec: Procurement,
}

impl Buying {
    /// `study`'s.
    pub fn of(study: &Study) -> Buying {
        Buying {
            fabric: study.fabric.clone(),
            spec: study.procurement(),
        }
    }

    /// Every purchasable design of every dimension.
    fn options(&self) -> Vec<Vec<DimOption>> {
        dim_options(&self.fabric, &self.spec)
    }
}

/// Each of `study`'s objectives by name, as the study states it (a target
/// it cannot meet is its located error).
pub fn objectives(study: &Study) -> Vec<(String, Result<Objective, InputError>)> {
    study
        .objectives
        .iter()
        .map(|name| (name.clone(), study.objective_named(name, None, Source::Study)))
        .collect()
}

/// The catalog-constrained optimum of `goal` under the budgets given (no
/// default from the study), beside its continuous relaxation, and its bill
/// of materials.
pub fn compare(
    on: &Buying,
    problem: &Problem,
    goal: Goal,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> Result<(Comparison, Bom), ProcureError> {
    let c = catalog::compare(problem, on.options(), budget_usd, budget_w, goal)?;
    // The bill of the designs the MILP chose (the cheapest way to buy the
    // same bandwidths may draw more power than a min-power answer chose).
    let b = bom::bom_of(&on.fabric, &on.spec, &c.catalog.choice)?;
    Ok((c, b))
}

/// The catalog-constrained optimum `dimsum optimize --catalog` asks for.
#[derive(Debug)]
pub struct CatalogAnswer {
    /// The optimum beside its continuous relaxation.
    pub comparison: Comparison,
    /// Its bill of materials.
    pub bom: Bom,
    /// The capex budget applied (the one given, else the study's), $.
    pub budget_usd: Option<f64>,
    /// The power budget applied (the one given, else the study's), W.
    pub budget_w: Option<f64>,
}

/// The catalog goal of an objective (`perf-per-cost` has none).
fn goal_of(objective: Objective) -> Result<Goal, InputError> {
    match objective {
        Objective::Perf => Ok(Goal::Perf),
        Objective::MinCost { target_ms } => Ok(Goal::MinCapex { target_ms }),
        Objective::MinPower { target_ms } => Ok(Goal::MinPower { target_ms }),
        Objective::PerfPerCost => Err(InputError::arg(
            "--objective",
            "perf-per-cost is not offered against the catalog: use perf with a budget, min-cost or min-power",
        )),
    }
}

/// The catalog-constrained optimum of `objective` under the budgets given
/// (each must be > 0), else the study's; `perf` needs a budget.
pub fn catalog_optimum(
    on: &Buying,
    problem: &Problem,
    objective: Objective,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> Result<CatalogAnswer, ProcureError> {
    for (flag, v) in [("--budget-usd", budget_usd), ("--budget-w", budget_w)] {
        if let Some(x) = v.filter(|x| !(x.is_finite() && *x > 0.0)) {
            return Err(InputError::arg(flag, format!("{x} is not allowed: use a budget > 0")).into());
        }
    }
    let goal = goal_of(objective)?;
    let spec = &on.spec;
    let budget_usd = budget_usd.or(spec.budget_usd);
    let budget_w = budget_w.or(spec.budget_w);
    if goal == Goal::Perf && budget_usd.is_none() && budget_w.is_none() {
        return Err(InputError::arg(
            "--budget-usd",
            "the fastest purchasable fabric needs a budget: pass --budget-usd (or --budget-w) or set budget_usd in [procurement]",
        )
        .into());
    }
    let (comparison, bom) = compare(on, problem, goal, budget_usd, budget_w)?;
    Ok(CatalogAnswer {
        comparison,
        bom,
        budget_usd,
        budget_w,
    })
}

/// The catalog optimum at `points` budgets, geometrically spaced from the
/// cheapest purchasable fabric to the least capex of the fastest one (empty
/// when nothing is purchasable under the study's power budget).
pub fn frontier(on: &Buying, problem: &Problem, points: usize) -> Result<Vec<(f64, Comparison)>, OptError> {
    let spec = &on.spec;
    let options = on.options();
    let (cp, _) = catalog::CatalogProblem::new(problem, options.clone(), None, spec.budget_w);
    let Ok(cheapest) = catalog::solve(&cp, Goal::MinCapex { target_ms: f64::MAX }) else {
        return Ok(Vec::new());
    };
    let big = catalog::CatalogProblem::new(problem, options.clone(), Some(1e18), spec.budget_w).0;
    let fastest = catalog::solve(&big, Goal::Perf)?;
    let dearest = catalog::solve(
        &cp,
        Goal::MinCapex {
            target_ms: fastest.iteration_time_ms * (1.0 + 1e-9),
        },
    )?;
    let (lo, hi) = (cheapest.capex_usd, dearest.capex_usd.max(cheapest.capex_usd));
    let n = points.max(2);
    let mut out = Vec::new();
    for i in 0..n {
        let b = lo * (hi / lo).powf(i as f64 / (n - 1) as f64) * if i == 0 { 1.0 + 1e-9 } else { 1.0 };
        if let Ok(c) = catalog::compare(problem, options.clone(), Some(b), spec.budget_w, Goal::Perf) {
            out.push((b, c));
        }
    }
    Ok(out)
}

/// Why a design cannot be bought as recommended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "flag", rename_all = "kebab-case")]
pub enum Flag {
    /// Its bill of materials costs more than the capex budget.
    OverCapex {
        /// The bill's capex, $.
        capex_usd: f64,
        /// The budget, $.
        budget_usd: f64,
    },
    /// Its bill of materials draws more than the power budget.
    OverPower {
        /// The bill's power, W.
        power_w: f64,
        /// The budget, W.
        budget_w: f64,
    },
    /// The bandwidth bought in a dimension (ports rounded up) is over the
    /// dimension's `max_gbps`.
    OverCap {
        /// The dimension.
        dimension: String,
        /// GB/s per NPU bought.
        bought_gbps: f64,
        /// The cap, GB/s per NPU.
        max_gbps: f64,
    },
    /// The catalog sells no such design.
    NotSold {
        /// Why.
        reason: String,
    },
}

/// Relative slack under which a figure counts as within its limit (the
/// solvers' tolerances).
const SLACK: f64 = 1e-9;

/// The red flags of buying `bom` for `study` (empty: within every budget
/// and cap).
pub fn flags(study: &Study, bom: &Result<Bom, BomError>) -> Vec<Flag> {
    flags_on(&Buying::of(study), bom)
}

/// [`flags`] from what buying reads.
pub fn flags_on(on: &Buying, bom: &Result<Bom, BomError>) -> Vec<Flag> {
    let b = match bom {
        Ok(b) => b,
        Err(e) => return vec![Flag::NotSold { reason: e.to_string() }],
    };
    let spec = &on.spec;
    let mut out = Vec::new();
    if let Some(budget) = spec.budget_usd
        && b.capex_usd > budget * (1.0 + SLACK)
    {
        out.push(Flag::OverCapex {
            capex_usd: b.capex_usd,
            budget_usd: budget,
        });
    }
    if let Some(budget) = spec.budget_w
        && b.power_w > budget * (1.0 + SLACK)
    {
        out.push(Flag::OverPower {
            power_w: b.power_w,
            budget_w: budget,
        });
    }
    for (d, &x) in on.fabric.dims.iter().zip(&b.bought_gbps) {
        if let Some(m) = d.max_gbps
            && x > m * (1.0 + SLACK)
        {
            out.push(Flag::OverCap {
                dimension: d.name.clone(),
                bought_gbps: x,
                max_gbps: m,
            });
        }
    }
    out
}

/// One recommended allocation, bought.
#[derive(Debug)]
pub struct Bought {
    /// The objective that recommended it.
    pub objective: String,
    /// The allocation asked for, GB/s per NPU per dimension.
    pub asked: Vec<f64>,
    /// Its parts, or why the catalog cannot sell it.
    pub bom: Result<Bom, BomError>,
    /// What stands in the way of buying it as recommended.
    pub flags: Vec<Flag>,
}

/// The next faster purchasable design than an answer, from the catalog
/// frontier: what more capex buys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Its capex, $.
    pub capex_usd: f64,
    /// Its iteration time, ms.
    pub time_ms: f64,
    /// Iteration time saved per extra $1M of capex, ms.
    pub ms_per_musd: f64,
}

/// One objective answered by the catalog: the purchasable design that
/// optimizes it within the study's budgets and caps.
#[derive(Debug)]
pub struct Answer {
    /// The objective.
    pub objective: String,
    /// What the catalog was asked (`None` where the objective has no
    /// catalog form).
    pub goal: Option<Goal>,
    /// The catalog optimum beside its continuous relaxation, and its parts;
    /// or why there is none.
    pub outcome: Result<(Comparison, Bom), ProcureError>,
    /// The next faster design on the catalog frontier, if any.
    pub next: Option<Step>,
}

/// The answer a purchase follows: the first of the study's objectives the
/// catalog answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Its position in [`Procured::answers`].
    pub answer: usize,
}

/// The catalog optimum under the study's capex budget.
#[derive(Debug)]
pub struct CatalogOptimum {
    /// The budget, $.
    pub budget_usd: f64,
    /// The optimum with its comparison and parts, or why there is none.
    pub outcome: Result<(Comparison, Bom), ProcureError>,
}

/// Everything the procurement section of a study shows.
#[derive(Debug)]
pub struct Procured {
    /// Each recommended allocation (the continuous optimum of an
    /// objective), bought, with its red flags.
    pub bought: Vec<Bought>,
    /// Each objective answered by the catalog.
    pub answers: Vec<Answer>,
    /// The answer to buy, if the catalog answers any objective.
    pub decision: Option<Decision>,
    /// The catalog optimum, when the study sets `budget_usd`.
    pub optimum: Option<CatalogOptimum>,
    /// The catalog frontier: (budget $, comparison) per budget.
    pub frontier: Vec<(f64, Comparison)>,
    /// The decision's design replayed on the best schedules ([`best_spec`]),
    /// once asked for (`None` until then or without a decision).
    pub replay: Option<Result<Measured, ScheduledError>>,
}

impl Procured {
    /// The design to buy: its answer, comparison and parts.
    pub fn decided(&self) -> Option<(&Answer, &Comparison, &Bom)> {
        let a = &self.answers[self.decision?.answer];
        a.outcome.as_ref().ok().map(|(c, b)| (a, c, b))
    }

    /// Replays the decision's design on `backed` (the study's workload on
    /// [`best_spec`]) and keeps the result, reporting the distinct
    /// collectives replayed so far.
    pub fn replay_decision(&mut self, backed: &Backed, progress: Progress) {
        let Some(bw) = self.decided().map(|(_, c, _)| c.catalog.bw_gbps.clone()) else {
            return;
        };
        self.replay = Some(measure(
            backed,
            &bw,
            "replay the decision on the best schedules",
            progress,
        ));
    }
}

/// `backed.measure(bw)`, reporting the distinct collectives replayed so
/// far as `task`.
pub(crate) fn measure(backed: &Backed, bw: &[f64], task: &str, progress: Progress) -> Result<Measured, ScheduledError> {
    let total = backed.distinct();
    let measured = ticking(
        &|| {
            progress.progress(task, backed.replayed.load(Ordering::Relaxed).min(total), total);
            if progress.cancelled() {
                backed.cancel();
            }
        },
        || backed.measure(bw),
    );
    progress.progress(task, total, total);
    measured
}

/// The schedule evaluator that times a design as it would run: every
/// collective on `best` (each builder on the group's links, the fastest
/// replay kept), in the study's link model, chunks chosen by the builders.
pub fn best_spec(study: &Study) -> scheduled::Spec {
    scheduled::Spec {
        evaluator: Evaluator::Schedule,
        algorithm: Algorithm::Best,
        per_collective: Vec::new(),
        chunks_per_npu: 1,
        ..study.evaluator.clone()
    }
}

/// Budgets of the catalog frontier in a study's results.
pub(crate) const FRONTIER_POINTS: usize = 16;

/// The catalog's answer to `goal` within the study's budgets: `perf`
/// without a budget is the fastest purchasable design within the caps.
pub(crate) fn answer(on: &Buying, problem: &Problem, goal: Goal) -> Result<(Comparison, Bom), ProcureError> {
    let spec = &on.spec;
    let budget_usd = match (goal, spec.budget_usd, spec.budget_w) {
        (Goal::Perf, None, None) => Some(UNLIMITED_USD),
        (_, b, _) => b,
    };
    compare(on, problem, goal, budget_usd, spec.budget_w)
}

/// A capex "budget" no fabric reaches, for the fastest design.
const UNLIMITED_USD: f64 = 1e18;

/// The cheapest point of `frontier` faster than `time_ms` (by more than
/// the solvers' tolerance), as a step from a design of `capex_usd`.
fn next_step(frontier: &[(f64, Comparison)], time_ms: f64, capex_usd: f64) -> Option<Step> {
    frontier
        .iter()
        .map(|(_, c)| &c.catalog)
        .filter(|c| c.iteration_time_ms < time_ms * (1.0 - 1e-6) && c.capex_usd > capex_usd)
        .min_by(|a, b| a.capex_usd.total_cmp(&b.capex_usd))
        .map(|c| Step {
            capex_usd: c.capex_usd,
            time_ms: c.iteration_time_ms,
            ms_per_musd: (time_ms - c.iteration_time_ms) / ((c.capex_usd - capex_usd) / 1e6),
        })
}

/// Buys `recommended` (objective, allocation) from the catalog of `on`,
/// answers each of `objectives` (the study's, [`objectives`]) from the
/// catalog, and finds the catalog optimum and frontier.
pub fn procure(
    on: &Buying,
    objectives: &[(String, Result<Objective, InputError>)],
    problem: &Problem,
    recommended: &[(String, Vec<f64>)],
) -> Result<Procured, OptError> {
    let spec = &on.spec;
    let bought = recommended
        .iter()
        .map(|(name, bw)| {
            let bom = bom::bom(&on.fabric, spec, bw);
            Bought {
                objective: name.clone(),
                asked: bw.clone(),
                flags: flags_on(on, &bom),
                bom,
            }
        })
        .collect();
    let optimum = spec.budget_usd.map(|budget| CatalogOptimum {
        budget_usd: budget,
        outcome: compare(on, problem, Goal::Perf, Some(budget), spec.budget_w),
    });
    let frontier = frontier(on, problem, FRONTIER_POINTS)?;
    let answers: Vec<Answer> = objectives
        .iter()
        .map(|(name, objective)| {
            // The objective as a catalog goal, with the study's target.
            let goal = objective.clone().and_then(goal_of);
            let outcome = goal
                .clone()
                .map_err(ProcureError::from)
                .and_then(|g| answer(on, problem, g));
            let goal = goal.ok();
            let next = outcome
                .as_ref()
                .ok()
                .and_then(|(c, _)| next_step(&frontier, c.catalog.iteration_time_ms, c.catalog.capex_usd));
            Answer {
                objective: name.clone(),
                goal,
                outcome,
                next,
            }
        })
        .collect();
    let decision = answers
        .iter()
        .position(|a| a.outcome.is_ok())
        .map(|answer| Decision { answer });
    Ok(Procured {
        bought,
        answers,
        decision,
        optimum,
        frontier,
        replay: None,
    })
}

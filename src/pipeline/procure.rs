//! A study's procurement: each recommended allocation bought from the
//! catalog (its bill of materials), the catalog-constrained optimum under
//! the study's budget beside its continuous bound, and the catalog
//! frontier (the fastest purchasable fabric at budgets from the cheapest
//! purchasable fabric to the least capex of the fastest one).

use super::run::RunError;
use crate::error::InputError;
use crate::model::bom::{self, Bom, BomError, DimOption};
use crate::optimize::catalog::{self, Comparison, Goal};
use crate::optimize::{Objective, OptError, Problem};
use crate::study::Study;

/// Why a catalog design could not be found or bought.
#[derive(Debug, thiserror::Error)]
pub enum ProcureError {
    /// The MILP or its relaxation failed.
    #[error(transparent)]
    Opt(#[from] OptError),
    /// The optimum could not be bought as parts.
    #[error(transparent)]
    Bom(#[from] BomError),
}

/// Every purchasable design of every dimension of `study`.
fn options(study: &Study) -> Vec<Vec<DimOption>> {
    let spec = study.procurement();
    (0..study.fabric.ndims())
        .map(|d| bom::options(&study.fabric, &spec, d, true))
        .collect()
}

/// The catalog-constrained optimum of `goal` under the budgets given (no
/// default from the study), beside its continuous relaxation, and its bill
/// of materials.
pub fn compare(
    study: &Study,
    problem: &Problem,
    goal: Goal,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> Result<(Comparison, Bom), ProcureError> {
    let c = catalog::compare(problem, options(study), budget_usd, budget_w, goal)?;
    let b = bom::bom(&study.fabric, &study.procurement(), &c.catalog.bw_gbps)?;
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
    study: &Study,
    problem: &Problem,
    objective: Objective,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
) -> Result<CatalogAnswer, RunError> {
    for (flag, v) in [("--budget-usd", budget_usd), ("--budget-w", budget_w)] {
        if let Some(x) = v.filter(|x| !(x.is_finite() && *x > 0.0)) {
            return Err(InputError::arg(flag, format!("{x} is not allowed: use a budget > 0")).into());
        }
    }
    let goal = goal_of(objective)?;
    let spec = study.procurement();
    let budget_usd = budget_usd.or(spec.budget_usd);
    let budget_w = budget_w.or(spec.budget_w);
    if goal == Goal::Perf && budget_usd.is_none() && budget_w.is_none() {
        return Err(InputError::arg(
            "--budget-usd",
            "the fastest purchasable fabric needs a budget: pass --budget-usd (or --budget-w) or set budget_usd in [procurement]",
        )
        .into());
    }
    let (comparison, bom) = compare(study, problem, goal, budget_usd, budget_w)?;
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
pub fn frontier(study: &Study, problem: &Problem, points: usize) -> Result<Vec<(f64, Comparison)>, OptError> {
    let spec = study.procurement();
    let options = options(study);
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

/// One recommended allocation, bought.
#[derive(Debug)]
pub struct Bought {
    /// The objective that recommended it.
    pub objective: String,
    /// The allocation asked for, GB/s per NPU per dimension.
    pub asked: Vec<f64>,
    /// Its parts, or why the catalog cannot sell it.
    pub bom: Result<Bom, BomError>,
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
    /// Each recommended allocation, bought.
    pub bought: Vec<Bought>,
    /// The catalog optimum, when the study sets `budget_usd`.
    pub optimum: Option<CatalogOptimum>,
    /// The catalog frontier: (budget $, comparison) per budget.
    pub frontier: Vec<(f64, Comparison)>,
}

/// Budgets of the catalog frontier in a study's results.
const FRONTIER_POINTS: usize = 16;

/// Buys `recommended` (objective, allocation) from the study's catalog and
/// finds the catalog optimum and frontier.
pub fn procure(study: &Study, problem: &Problem, recommended: &[(String, Vec<f64>)]) -> Result<Procured, OptError> {
    let spec = study.procurement();
    let bought = recommended
        .iter()
        .map(|(name, bw)| Bought {
            objective: name.clone(),
            asked: bw.clone(),
            bom: bom::bom(&study.fabric, &spec, bw),
        })
        .collect();
    let optimum = spec.budget_usd.map(|budget| CatalogOptimum {
        budget_usd: budget,
        outcome: compare(study, problem, Goal::Perf, Some(budget), spec.budget_w),
    });
    let frontier = frontier(study, problem, FRONTIER_POINTS)?;
    Ok(Procured {
        bought,
        optimum,
        frontier,
    })
}

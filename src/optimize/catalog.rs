//! Optimizing against the catalog: every dimension takes one purchasable
//! design (a port class and a port count, with its real capex and watts,
//! switch tiers included; `bom::options`), and the fabric is the best one
//! that can actually be bought under the budget.
//!
//! With a binary `u_{d,o}` per option, both `B_d = sum_o u v_o` and
//! `1/B_d = sum_o u / v_o` are linear (one option is chosen), so the time
//! model of `training` (every collective's per-dimension rows, every path)
//! is linear in u and the problem is a MILP that the solver (`lp`) solves exactly
//! (relative MIP gap `optimize::MIP_REL_GAP`, 1e-9): no tangents needed.
//! Capex and power are sums of option prices, so budgets are linear too.
//! The study's linear constraints over B apply as written; constraints on
//! the linear `cost` / `power` model do not (the catalog's prices replace
//! it) and are reported as skipped.
//!
//! Against the continuous optimum: pricing each dimension at the catalog's
//! cheapest dollars per GB/s (`min_o capex_o / v_o`) under-prices every
//! option, so the continuous problem with that linear cost, the same budget
//! and `B_d` at most the largest option is a relaxation: its certified
//! optimum is a lower bound on the catalog optimum's time. Rounding the
//! continuous optimum up (each dimension to its cheapest option with at
//! least that bandwidth) is a purchasable design; when it fits the budget
//! the catalog optimum is no slower.

use super::expr::{Constraint, Sense, Unit};
use super::{MIP_REL_GAP, OptError, Problem};
use crate::lp::{self, Expr, LpError, Var, var};
use crate::model::bom::{self, DimOption};
use crate::model::collective::{Coefficients, DimCoeff};
use crate::model::training::IterationModel;
use crate::model::units::{ns_to_ms, usd_to_musd, w_to_kw};
use serde::Serialize;
use std::collections::HashMap;

/// What to optimize against the catalog.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// Least iteration time under the budgets.
    Perf,
    /// Least capex with the iteration time at most `target_ms`.
    MinCapex {
        /// ms.
        target_ms: f64,
    },
    /// Least power with the iteration time at most `target_ms`.
    MinPower {
        /// ms.
        target_ms: f64,
    },
}

/// A catalog-constrained problem.
#[derive(Debug, Clone)]
pub struct CatalogProblem {
    /// Dimension names.
    pub dim_names: Vec<String>,
    /// The time model.
    pub iteration: IterationModel,
    /// Per dimension, its purchasable designs.
    pub options: Vec<Vec<DimOption>>,
    /// Linear constraints over B (GB/s expressions only).
    pub constraints: Vec<Constraint>,
    /// Capex budget, $.
    pub budget_usd: Option<f64>,
    /// Power budget, W.
    pub budget_w: Option<f64>,
}

impl CatalogProblem {
    /// From a continuous problem: its iteration model and its GB/s
    /// constraints (the others are returned as skipped).
    pub fn new(
        p: &Problem,
        options: Vec<Vec<DimOption>>,
        budget_usd: Option<f64>,
        budget_w: Option<f64>,
    ) -> (CatalogProblem, Vec<String>) {
        let (keep, skip): (Vec<&Constraint>, Vec<&Constraint>) =
            p.constraints.iter().partition(|c| c.unit == Unit::Gbps);
        (
            CatalogProblem {
                dim_names: p.dim_names.clone(),
                iteration: p.iteration.clone(),
                options,
                constraints: keep.into_iter().cloned().collect(),
                budget_usd,
                budget_w,
            },
            skip.into_iter().map(|c| c.text.clone()).collect(),
        )
    }
}

/// The catalog-constrained optimum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogSolution {
    /// Per dimension, the chosen design.
    pub choice: Vec<DimOption>,
    /// The bandwidth bought, GB/s per NPU.
    pub bw_gbps: Vec<f64>,
    /// Iteration time, ms.
    pub iteration_time_ms: f64,
    /// Capex, $.
    pub capex_usd: f64,
    /// Power, W.
    pub power_w: f64,
    /// The solver's relative MIP gap bound.
    pub mip_rel_gap: f64,
    /// Designs considered (options summed over dimensions).
    pub options: usize,
}

/// Solves the catalog MILP (module doc). For `Perf`, a second solve takes
/// the cheapest of the fastest designs (ties in time are common: a
/// dimension off the critical collectives buys no time).
pub fn solve(p: &CatalogProblem, goal: Goal) -> Result<CatalogSolution, OptError> {
    let first = solve_once(p, goal)?;
    if goal != Goal::Perf {
        return Ok(first);
    }
    let target_ms = first.iteration_time_ms * (1.0 + 1e-9);
    match solve_once(p, Goal::MinCapex { target_ms }) {
        Ok(cheaper) if cheaper.capex_usd <= first.capex_usd && cheaper.iteration_time_ms <= target_ms => Ok(cheaper),
        _ => Ok(first),
    }
}

fn solve_once(p: &CatalogProblem, goal: Goal) -> Result<CatalogSolution, OptError> {
    let n = p.dim_names.len();
    let opts = purchasable(p)?;
    let mut vars = lp::Problem::new();
    let u: Vec<Vec<Var>> = opts
        .iter()
        .map(|o| o.iter().map(|_| vars.add(var().binary())).collect())
        .collect();
    let m = Choice { opts: &opts, u: &u };
    let (capex, power) = (m.capex(), m.power());
    let (terms, term_of) = distinct_terms(&p.iteration);
    let t: Vec<Var> = terms.iter().map(|_| vars.add(var().min(0.0))).collect();
    let big_t = vars.add(var().min(0.0));
    let objective: Expr = match goal {
        Goal::Perf => big_t.into(),
        Goal::MinCapex { .. } => capex.clone(),
        Goal::MinPower { .. } => power.clone(),
    };
    let mut model = vars.minimise(objective).mip_rel_gap(MIP_REL_GAP);
    for ud in &u {
        model.add(ud.iter().copied().sum::<Expr>().eq(1.0));
    }
    m.add_time_rows(&mut model, &terms, &t);
    for path in &p.iteration.paths {
        let mut counts: HashMap<usize, f64> = HashMap::new();
        for &c in &path.collectives {
            *counts.entry(term_of[c]).or_default() += 1.0;
        }
        let sum: Expr = counts.iter().map(|(k, cnt)| *cnt * t[*k]).sum();
        model.add((big_t - sum).geq(ns_to_ms(path.constant_ns)));
    }
    model.add(Expr::from(big_t).geq(ns_to_ms(p.iteration.compute_ns)));
    if let Goal::MinCapex { target_ms } | Goal::MinPower { target_ms } = goal {
        model.add(Expr::from(big_t).leq(target_ms));
    }
    if let Some(b) = p.budget_usd {
        model.add(capex.clone().leq(usd_to_musd(b)));
    }
    if let Some(b) = p.budget_w {
        model.add(power.clone().leq(w_to_kw(b)));
    }
    m.add_constraints(&mut model, &p.constraints);
    let sol = model.solve().map_err(|e| match e {
        LpError::Infeasible => infeasible(p, &opts, goal),
        other => OptError::Solver(other.to_string()),
    })?;
    let choice: Vec<DimOption> = (0..n)
        .map(|d| {
            let i = (0..opts[d].len())
                .max_by(|&a, &b| sol.value(u[d][a]).total_cmp(&sol.value(u[d][b])))
                .unwrap_or(0);
            opts[d][i].clone()
        })
        .collect();
    let bw_gbps: Vec<f64> = choice.iter().map(|o| o.gbps).collect();
    Ok(CatalogSolution {
        iteration_time_ms: ns_to_ms(p.iteration.iteration_ns(&bw_gbps)),
        capex_usd: choice.iter().map(|o| o.capex_usd).sum(),
        power_w: choice.iter().map(|o| o.power_w).sum(),
        bw_gbps,
        choice,
        mip_rel_gap: MIP_REL_GAP,
        options: opts.iter().map(Vec::len).sum(),
    })
}

/// Per dimension, the options the MILP chooses from: a dimension that
/// carries traffic cannot buy nothing.
fn purchasable(p: &CatalogProblem) -> Result<Vec<Vec<&DimOption>>, OptError> {
    let n = p.dim_names.len();
    let traffic: Vec<bool> = (0..n)
        .map(|d| p.iteration.collectives.iter().any(|c| c.coeffs.uses(d)))
        .collect();
    let opts: Vec<Vec<&DimOption>> = p
        .options
        .iter()
        .enumerate()
        .map(|(d, o)| o.iter().filter(|x| !(traffic[d] && x.gbps <= 0.0)).collect())
        .collect();
    if let Some(d) = (0..n).find(|&d| opts[d].is_empty()) {
        return Err(OptError::Infeasible(vec![format!(
            "the catalog sells nothing that builds dimension `{}`",
            p.dim_names[d]
        )]));
    }
    Ok(opts)
}

/// The distinct collective terms of an iteration (equal coefficients share
/// one time variable) and, per collective, its term.
fn distinct_terms(it: &IterationModel) -> (Vec<&Coefficients>, Vec<usize>) {
    let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut term_of = Vec::new();
    let mut terms: Vec<&Coefficients> = Vec::new();
    for c in &it.collectives {
        let mut key: Vec<u64> = c
            .coeffs
            .dims
            .iter()
            .flat_map(|k| [k.alpha_ns.to_bits(), k.bytes.to_bits()])
            .collect();
        key.push(u64::from(c.coeffs.sequential));
        for r in &c.coeffs.rows {
            key.push(u64::MAX);
            key.extend(r.iter().flat_map(|k| [k.alpha_ns.to_bits(), k.bytes.to_bits()]));
        }
        let next = terms.len();
        let i = *index.entry(key).or_insert_with(|| {
            terms.push(&c.coeffs);
            next
        });
        term_of.push(i);
    }
    (terms, term_of)
}

/// The choice variables `u[d][o]` over the options `opts[d][o]`, and the
/// linear expressions they make.
struct Choice<'a> {
    opts: &'a [Vec<&'a DimOption>],
    u: &'a [Vec<Var>],
}

impl Choice<'_> {
    /// B_d, GB/s.
    fn bw(&self, d: usize) -> Expr {
        self.u[d].iter().zip(&self.opts[d]).map(|(v, o)| o.gbps * *v).sum()
    }

    /// 1/B_d (0 for an option that buys nothing).
    fn inv(&self, d: usize) -> Expr {
        self.u[d]
            .iter()
            .zip(&self.opts[d])
            .map(|(v, o)| {
                if o.gbps > 0.0 {
                    *v * (1.0 / o.gbps)
                } else {
                    Expr::from(0.0)
                }
            })
            .sum()
    }

    /// Capex, $M.
    fn capex(&self) -> Expr {
        (0..self.u.len())
            .flat_map(|d| {
                self.u[d]
                    .iter()
                    .zip(&self.opts[d])
                    .map(|(v, o)| usd_to_musd(o.capex_usd) * *v)
            })
            .sum()
    }

    /// Power, kW.
    fn power(&self) -> Expr {
        (0..self.u.len())
            .flat_map(|d| {
                self.u[d]
                    .iter()
                    .zip(&self.opts[d])
                    .map(|(v, o)| w_to_kw(o.power_w) * *v)
            })
            .sum()
    }

    /// A row's constant (ms) and its bandwidth part (ms, linear in u).
    fn sum_row(&self, row: &[DimCoeff]) -> (f64, Expr) {
        let mut alpha = 0.0;
        let mut e = Expr::from(0.0);
        for (d, k) in row.iter().enumerate() {
            if k.bytes > 0.0 || k.alpha_ns > 0.0 {
                alpha += ns_to_ms(k.alpha_ns);
                if k.bytes > 0.0 {
                    // bytes / (GB/s) = ns.
                    e += ns_to_ms(k.bytes) * self.inv(d);
                }
            }
        }
        (alpha, e)
    }

    /// Each term's time variable above each of its rows.
    fn add_time_rows(&self, model: &mut lp::Model, terms: &[&Coefficients], t: &[Var]) {
        for (c, tc) in terms.iter().zip(t) {
            if c.sequential {
                let (alpha, e) = self.sum_row(&c.dims);
                model.add((*tc - e).geq(alpha));
            } else {
                for (d, k) in c.dims.iter().enumerate() {
                    if k.bytes > 0.0 || k.alpha_ns > 0.0 {
                        let e = ns_to_ms(k.bytes) * self.inv(d);
                        model.add((*tc - e).geq(ns_to_ms(k.alpha_ns)));
                    }
                }
            }
            for r in &c.rows {
                let (alpha, e) = self.sum_row(r);
                model.add((*tc - e).geq(alpha));
            }
        }
    }

    /// The study's linear constraints over B, each scaled to its largest
    /// coefficient.
    fn add_constraints(&self, model: &mut lp::Model, constraints: &[Constraint]) {
        for c in constraints {
            let scale = c.coeffs.iter().fold(0.0f64, |a, x| a.max(x.abs())).max(1e-300);
            let lhs: Expr = c
                .coeffs
                .iter()
                .enumerate()
                .filter(|(_, k)| **k != 0.0)
                .map(|(d, k)| (k / scale) * self.bw(d))
                .sum();
            let rhs = c.rhs / scale;
            model.add(match c.sense {
                Sense::Le => lhs.leq(rhs),
                Sense::Ge => lhs.geq(rhs),
                Sense::Eq => lhs.eq(rhs),
            });
        }
    }
}

/// Why the MILP has no solution: every constraint that could be to blame.
fn infeasible(p: &CatalogProblem, opts: &[Vec<&DimOption>], goal: Goal) -> OptError {
    let mut why: Vec<String> = p.constraints.iter().map(|c| c.text.clone()).collect();
    if let Some(b) = p.budget_usd {
        let least: f64 = opts
            .iter()
            .map(|o| o.iter().map(|x| x.capex_usd).fold(f64::INFINITY, f64::min))
            .sum();
        why.push(format!(
            "capex <= {b} $ (the cheapest purchasable fabric, bounds aside, costs {least:.0} $)"
        ));
    }
    if let Some(b) = p.budget_w {
        why.push(format!("power <= {b} W"));
    }
    if let Goal::MinCapex { target_ms } | Goal::MinPower { target_ms } = goal {
        why.push(format!("time <= {target_ms} ms"));
    }
    why.push("only the catalog's designs".into());
    OptError::Infeasible(why)
}

/// The cheapest option of each dimension with at least `bw[d]` (rounding a
/// continuous design up to purchasable parts), or `None` where the catalog
/// cannot buy that much.
fn round_up(options: &[Vec<DimOption>], bw: &[f64]) -> Option<Vec<DimOption>> {
    options
        .iter()
        .zip(bw)
        .map(|(o, b)| {
            o.iter()
                .filter(|x| x.gbps >= b * (1.0 - 1e-9))
                .min_by(|a, c| a.capex_usd.total_cmp(&c.capex_usd))
                .cloned()
        })
        .collect()
}

/// Per dimension, the catalog's cheapest dollars per GB/s per NPU (the
/// linear under-estimate of every option's capex; module doc).
fn cheapest_usd_per_gbps(options: &[Vec<DimOption>], npus: f64) -> Vec<f64> {
    cheapest_per_gbps(options, npus, |o| o.capex_usd)
}

/// Per dimension, `bom::cheapest_per_gbps`.
fn cheapest_per_gbps(options: &[Vec<DimOption>], npus: f64, of: impl Fn(&DimOption) -> f64) -> Vec<f64> {
    options.iter().map(|o| bom::cheapest_per_gbps(o, npus, &of)).collect()
}

/// A purchasable design and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Design {
    /// Per dimension, the design.
    pub choice: Vec<DimOption>,
    /// GB/s per NPU.
    pub bw_gbps: Vec<f64>,
    /// Iteration time, ms.
    pub iteration_time_ms: f64,
    /// Capex, $.
    pub capex_usd: f64,
    /// Power, W.
    pub power_w: f64,
    /// Within the budgets and the GB/s constraints.
    pub feasible: bool,
}

/// The catalog optimum beside the continuous one (module doc).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The catalog-constrained optimum.
    pub catalog: CatalogSolution,
    /// The continuous relaxation's certified optimum (linear prices at the
    /// catalog's cheapest $ per GB/s).
    pub continuous: super::Solution,
    /// The continuous optimum rounded up to purchasable parts, if the
    /// catalog sells that much.
    pub rounded: Option<Design>,
    /// Study constraints that do not apply to catalog designs.
    pub skipped: Vec<String>,
}

/// Solves the catalog problem and its continuous relaxation, and rounds
/// the continuous optimum up.
pub fn compare(
    p: &Problem,
    options: Vec<Vec<DimOption>>,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    goal: Goal,
) -> Result<Comparison, OptError> {
    let npus = p.cost.npus;
    let (cp, skipped) = CatalogProblem::new(p, options, budget_usd, budget_w);
    let catalog = solve(&cp, goal)?;
    // The relaxation: cheapest linear prices, the same budgets and GB/s
    // constraints, and no more than the catalog sells.
    let mut relaxed = p.clone();
    relaxed.cost.usd_per_gbps = cheapest_usd_per_gbps(&cp.options, npus);
    relaxed.cost.w_per_gbps = cheapest_per_gbps(&cp.options, npus, |o| o.power_w);
    for v in relaxed
        .cost
        .usd_per_gbps
        .iter_mut()
        .chain(relaxed.cost.w_per_gbps.iter_mut())
    {
        if !v.is_finite() {
            *v = 0.0;
        }
    }
    relaxed.constraints = cp.constraints.clone();
    relaxed.options = vec![None; p.dim_names.len()];
    let n = p.dim_names.len();
    for (d, o) in cp.options.iter().enumerate() {
        let top = o.iter().map(|x| x.gbps).fold(0.0, f64::max);
        let mut coeffs = vec![0.0; n];
        coeffs[d] = 1.0;
        relaxed.constraints.push(Constraint {
            text: format!("{} <= {top} (the most the catalog sells)", p.dim_names[d]),
            coeffs,
            sense: Sense::Le,
            rhs: top,
            unit: Unit::Gbps,
        });
    }
    if let Some(b) = budget_usd {
        relaxed.constraints.push(Constraint {
            text: format!("cost <= {b} (at the catalog's cheapest $ per GB/s)"),
            coeffs: relaxed.cost.usd_per_gbps.iter().map(|c| c * npus).collect(),
            sense: Sense::Le,
            rhs: b,
            unit: Unit::Usd,
        });
    }
    if let Some(b) = budget_w {
        relaxed.constraints.push(Constraint {
            text: format!("power <= {b} (at the catalog's least W per GB/s)"),
            coeffs: relaxed.cost.w_per_gbps.iter().map(|c| c * npus).collect(),
            sense: Sense::Le,
            rhs: b,
            unit: Unit::Watts,
        });
    }
    let objective = match goal {
        Goal::Perf => super::Objective::Perf,
        Goal::MinCapex { target_ms } => super::Objective::MinCost { target_ms },
        Goal::MinPower { target_ms } => super::Objective::MinPower { target_ms },
    };
    let continuous = super::solve(&relaxed, objective)?;
    let rounded = round_up(&cp.options, &continuous.bw_gbps).map(|choice| {
        let bw_gbps: Vec<f64> = choice.iter().map(|o| o.gbps).collect();
        let capex_usd: f64 = choice.iter().map(|o| o.capex_usd).sum();
        let power_w: f64 = choice.iter().map(|o| o.power_w).sum();
        let t = ns_to_ms(p.iteration.iteration_ns(&bw_gbps));
        let feasible = budget_usd.is_none_or(|b| capex_usd <= b * (1.0 + 1e-9))
            && budget_w.is_none_or(|b| power_w <= b * (1.0 + 1e-9))
            && cp.constraints.iter().all(|c| {
                let lhs = c.lhs(&bw_gbps);
                let tol = 1e-9 * c.rhs.abs().max(1.0);
                match c.sense {
                    Sense::Le => lhs <= c.rhs + tol,
                    Sense::Ge => lhs >= c.rhs - tol,
                    Sense::Eq => (lhs - c.rhs).abs() <= tol,
                }
            })
            && match goal {
                Goal::Perf => true,
                Goal::MinCapex { target_ms } | Goal::MinPower { target_ms } => t <= target_ms * (1.0 + 1e-9),
            };
        Design {
            choice,
            bw_gbps,
            iteration_time_ms: t,
            capex_usd,
            power_w,
            feasible,
        }
    });
    Ok(Comparison {
        catalog,
        continuous,
        rounded,
        skipped,
    })
}

//! The per-dimension bandwidth optimizer: exact, certified, with open solvers.
//!
//! Variables are `B_d >= 0` (GB/s per NPU). Every collective's time is
//! `max_d` (or `sum_d`) of `alpha_d + bytes_d / B_d` and the iteration time is
//! `max over paths of (constant + sum of collective times)` (see `training`),
//! so the time is convex in B and LIBRA's non-convex bilinear model
//! (`B * B_inv == 1` in Gurobi) is not needed. We write `z_d >= 1 / B_d`; then
//! every time term is *linear* in z, and the only non-linear constraints are
//! the N one-dimensional convex curves `z_d >= 1 / B_d`.
//!
//! **Outer approximation** (Kelley's cutting planes). Each curve is replaced
//! by tangents `z_d >= 2 / b - B_d / b^2` at points b; the tangents lie under
//! the convex curve, so the LP (solved through [`lp`]) is a relaxation and its
//! optimum is a certified **lower bound**. Its B is feasible for every linear
//! constraint, so the true time at that B is a certified **upper bound**. A
//! tangent is added at each B where the LP under-estimated 1/B, and the loop
//! stops when `(upper - lower) / upper <= 1e-7`. That relative gap is what
//! `gap` reports. Units are MB and ms (t = MB / (GB/s) is ms), cost in $M and
//! power in kW, so the LP is well scaled.
//!
//! Objectives:
//! - `perf`: minimize the iteration time.
//! - `min-cost` / `min-power`: minimize the linear cost (power) subject to
//!   `time <= target`. The LP's optimum is a lower bound; the upper bound is
//!   the cost of the feasible point nearest the LP's point on the segment to
//!   the fastest design (the time is convex, so the segment's feasible part is
//!   an interval, found by bisection).
//! - `perf-per-cost`: minimize time x cost (LIBRA's PerfPerCostOpt). Not
//!   convex, so it is solved as a one-dimensional problem over the cost level
//!   X: with g(X) = min time subject to cost <= X (a convex solve), the
//!   optimum is `min over X of g(X) * X` (for the minimizer B° with cost X°,
//!   g(X°) X° <= time(B°) X°; and every g(X) X is at least the time x cost of
//!   the point attaining g(X)). X ranges from the least cost the constraints
//!   allow to the cost of the fastest design (beyond it g is constant and the
//!   product only grows). argmin's Brent method finds a good X fast; then a
//!   branch and bound over X certifies it globally: on [a, b], g is
//!   non-increasing, so `g(X) X >= a * g_lower(b)`, and intervals are split
//!   until no interval's bound is below the incumbent by more than the gap.
//!
//! A dimension that carries traffic gets at least `MIN_TRAFFIC_GBPS` (1e-6
//! GB/s): at zero its time is infinite, and the floor keeps the tangents
//! finite. Constraints that hold such a dimension at zero are reported as
//! infeasible.
//!
//! Discrete technology: a dimension with `options_gbps` takes one of them. A
//! binary per option makes both B_d and 1/B_d linear (`B_d = sum u_o v_o`,
//! `z_d = sum u_o / v_o`, `sum u_o = 1`), so those dimensions need no cuts and
//! the LP becomes a MILP that the solver solves exactly (relative MIP gap 1e-9).
//!
//! Infeasible constraints are reported with an irreducible infeasible subset
//! (deletion filter: drop each constraint whose removal keeps the rest
//! infeasible).
//!
//! Solvers: every LP and MILP goes through the [`lp`] seam (the solver is
//! named there, once). The one-shot LPs over B alone (feasibility, the IIS,
//! each dimension's range, the least cost) are [`lp::Model`]s; the master LP
//! of the cutting-plane loop is an [`lp::Incremental`] because it keeps one
//! solver instance per convex solve and re-solves it from the previous basis
//! after adding the new tangents (`master`). Tangents are pooled across the
//! solves of one problem (perf-per-cost runs many), and each master starts
//! from a seed grid plus the pooled tangents nearest the last answer. Only
//! `optimize` uses argmin.
//!
//! ```
//! use dimsum::optimize::{self, Objective};
//! # let study = dimsum::study::Study::parse(r#"
//! # name = "tiny"
//! # [[fabric.dims]]
//! # name = "package"
//! # block = "ring"
//! # npus = 4
//! # [[fabric.dims]]
//! # name = "pod"
//! # block = "switch"
//! # npus = 8
//! # [cost.tiers.package]
//! # link_usd_per_gbps = 2.0
//! # [cost.tiers.pod]
//! # link_usd_per_gbps = 8.0
//! # switch_usd_per_gbps = 10.0
//! # nic_usd_per_gbps = 20.0
//! # [workload]
//! # communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 8] }
//! # [[workload.layers]]
//! # name = "l0"
//! # forward = { compute_ns = 1000 }
//! # input_grad = { compute_ns = 2000, collective = "all-reduce", bytes = 64e6 }
//! # weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
//! # [optimize]
//! # constraints = ["package + pod <= 500"]
//! # "#, std::path::Path::new("tiny.toml"))?;
//! let problem = study.problem()?;
//! let fastest = optimize::solve(&problem, Objective::Perf)?;
//! // The cheapest design within 10% of the fastest: slower, never cheaper than needed.
//! let target_ms = 1.1 * fastest.iteration_time_ms;
//! let cheap = optimize::solve(&problem, Objective::MinCost { target_ms })?;
//! assert!(cheap.iteration_time_ms <= target_ms * (1.0 + 1e-6));
//! assert!(cheap.network_cost_usd <= fastest.network_cost_usd);
//! assert!(cheap.gap <= 1e-6 && fastest.gap <= 1e-6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod catalog;
pub mod expr;
pub mod frontier;
mod master;
pub mod scheduled;

/// The LP / MILP seam every solve of this module goes through (defined at
/// the bottom layer, [`crate::lp`], so that `schedule` can use it too).
pub use crate::lp;

use crate::lp::{Expr, LpError, Var, var};
use crate::model::cost::Linear;
use crate::model::fabric::Fabric;
use crate::model::training::IterationModel;
use crate::model::units::{USD_PER_MUSD, W_PER_KW, ns_to_ms, usd_to_musd, w_to_kw};
use expr::{Constraint, Sense, Unit};
use master::{Master, Spec};
use std::cell::RefCell;
use std::collections::HashMap;

/// Relative optimality gap the convex solves stop at.
const GAP: f64 = 1e-7;
/// Relative gap the perf-per-cost branch and bound stops at.
const PPC_GAP: f64 = 1e-6;
/// Relative MIP gap the solver is asked for wherever a solve has integer
/// variables (discrete options, the catalog MILP): tight enough that the
/// MILP's answer is the optimum, not a near one.
pub const MIP_REL_GAP: f64 = 1e-9;
/// Smallest bandwidth a dimension that carries traffic may get, GB/s.
pub const MIN_TRAFFIC_GBPS: f64 = 1e-6;
/// Cutting-plane rounds per convex solve before it returns with its gap.
const MAX_ROUNDS: usize = 500;
/// Branch-and-bound rounds of perf-per-cost before it returns with its gap.
const PPC_ROUNDS: usize = 200;

/// What to optimize.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// Minimize iteration time.
    Perf,
    /// Minimize iteration time x network cost.
    PerfPerCost,
    /// Minimize network cost subject to iteration time <= target (ms).
    MinCost {
        /// Iteration-time target, ms.
        target_ms: f64,
    },
    /// Minimize network power subject to iteration time <= target (ms).
    MinPower {
        /// Iteration-time target, ms.
        target_ms: f64,
    },
}

impl Objective {
    /// Names accepted on the command line and in studies.
    pub(crate) const NAMES: [&'static str; 4] = ["perf", "perf-per-cost", "min-cost", "min-power"];

    /// The name.
    pub fn name(&self) -> &'static str {
        match self {
            Objective::Perf => "perf",
            Objective::PerfPerCost => "perf-per-cost",
            Objective::MinCost { .. } => "min-cost",
            Objective::MinPower { .. } => "min-power",
        }
    }

    /// The objective's unit, for reports.
    pub(crate) fn unit(&self) -> &'static str {
        match self {
            Objective::Perf => "ms",
            Objective::PerfPerCost => "ms x $M",
            Objective::MinCost { .. } => "$M",
            Objective::MinPower { .. } => "kW",
        }
    }
}

/// A bandwidth-allocation problem.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Dimension names, for messages.
    pub dim_names: Vec<String>,
    /// The time model.
    pub iteration: IterationModel,
    /// Cost and power coefficients.
    pub cost: Linear,
    /// Linear constraints over B (the fabric's bounds included).
    pub constraints: Vec<Constraint>,
    /// Per dimension: the bandwidths that can be bought, if discrete.
    pub options: Vec<Option<Vec<f64>>>,
}

impl Problem {
    /// A problem on `fabric`: its bounds and options become constraints,
    /// `extra` are the user's.
    pub fn new(fabric: &Fabric, iteration: IterationModel, cost: Linear, extra: Vec<Constraint>) -> Self {
        let n = fabric.ndims();
        let mut constraints = Vec::new();
        for (d, dim) in fabric.dims.iter().enumerate() {
            let unit = |k: f64| {
                let mut c = vec![0.0; n];
                c[d] = k;
                c
            };
            if let Some(lo) = dim.min_gbps.filter(|v| *v > 0.0) {
                constraints.push(Constraint {
                    text: format!("{} >= {lo} (min_gbps)", dim.name),
                    coeffs: unit(1.0),
                    sense: Sense::Ge,
                    rhs: lo,
                    unit: Unit::Gbps,
                });
            }
            if let Some(hi) = dim.max_gbps {
                constraints.push(Constraint {
                    text: format!("{} <= {hi} (max_gbps)", dim.name),
                    coeffs: unit(1.0),
                    sense: Sense::Le,
                    rhs: hi,
                    unit: Unit::Gbps,
                });
            }
        }
        constraints.extend(extra);
        Problem {
            dim_names: fabric.dims.iter().map(|d| d.name.clone()).collect(),
            iteration,
            cost,
            constraints,
            options: fabric.dims.iter().map(|d| d.options_gbps.clone()).collect(),
        }
    }

    fn n(&self) -> usize {
        self.dim_names.len()
    }

    /// Dimensions some collective moves bytes over.
    fn traffic(&self) -> Vec<bool> {
        (0..self.n())
            .map(|d| self.iteration.collectives.iter().any(|c| c.coeffs.uses(d)))
            .collect()
    }

    /// Iteration time at `bw`, ms.
    pub fn time_ms(&self, bw: &[f64]) -> f64 {
        ns_to_ms(self.iteration.iteration_ns(bw))
    }
}

/// A constraint that holds with equality at the optimum.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Binding {
    /// The constraint as written.
    pub constraint: String,
    /// Change of the objective per unit of relaxation of the right-hand
    /// side: per GB/s, per $1M or per kW (negative: relaxing helps). `None`
    /// when the problem had integer variables.
    pub marginal: Option<f64>,
    /// "GB/s", "$1M", "kW" (or "ms" for a time target).
    pub per: &'static str,
}

/// A certified optimum.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Solution {
    /// Objective name.
    pub objective: &'static str,
    /// Objective value at `bw` (the upper bound), in `objective_unit`.
    pub objective_value: f64,
    /// Unit of the objective.
    pub objective_unit: &'static str,
    /// Certified lower bound on the objective.
    pub lower_bound: f64,
    /// `(value - lower_bound) / value`.
    pub gap: f64,
    /// The allocation, GB/s per NPU per dimension.
    pub bw_gbps: Vec<f64>,
    /// Iteration time at `bw`, ms.
    pub iteration_time_ms: f64,
    /// Network cost at `bw`, dollars.
    pub network_cost_usd: f64,
    /// Network power at `bw`, watts.
    pub network_power_w: f64,
    /// Constraints that hold with equality, with their marginal values.
    pub binding_constraints: Vec<Binding>,
    /// Time at the equal split of the same total bandwidth over time at `bw`.
    pub speedup_vs_equal_split: Option<f64>,
    /// LP / MILP solves used.
    pub lp_solves: usize,
}

/// Why there is no optimum.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptError {
    /// The linear constraints cannot hold together.
    #[error("infeasible: these constraints cannot hold together: {}", .0.join("; "))]
    Infeasible(Vec<String>),
    /// Nothing bounds a dimension that more bandwidth would help.
    #[error(
        "unbounded: nothing limits the bandwidth of dimension `{0}`, so the time keeps falling as it grows; add a total-bandwidth, cost or power constraint"
    )]
    Unbounded(String),
    /// The time target cannot be met.
    #[error(
        "infeasible: the fastest design allowed by the constraints takes {best_ms:.6} ms, above the target {target_ms} ms"
    )]
    TargetUnreachable {
        /// Best achievable time, ms.
        best_ms: f64,
        /// Target, ms.
        target_ms: f64,
    },
    /// The solver failed.
    #[error("solver failure: {0}")]
    Solver(String),
    /// The observer asked the work to stop.
    #[error("cancelled")]
    Cancelled,
}

/// What the LP minimizes.
#[derive(Debug, Clone)]
enum Goal {
    /// The time T, ms.
    Time,
    /// A linear form over B, scaled.
    Linear(Vec<f64>),
    /// Nothing (feasibility).
    Nothing,
}

/// What a one-shot LP (no time model) holds besides the linear constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// B >= 0 only.
    Plain,
    /// Traffic-carrying dimensions get at least `MIN_TRAFFIC_GBPS`.
    Floored,
}

/// One LP / MILP and its answer.
struct LpAnswer {
    bw: Vec<f64>,
    z: Vec<f64>,
    objective: f64,
    /// d objective / d rhs of each constraint (original units), if continuous.
    duals: Option<Vec<f64>>,
}

/// The outer approximation: tangent points per dimension, shared by every
/// solve of one problem (each tangent is valid whatever the constraints).
/// Any subset of tangents is still a relaxation, so an LP uses the seed grid
/// plus the `NEAR` points closest (in log scale) to where the last LP was:
/// the LP stays small however many solves the pool has served.
#[derive(Clone)]
struct Cuts {
    /// The seed grid, always used.
    seed: Vec<Vec<f64>>,
    /// Every refinement point.
    points: Vec<Vec<f64>>,
    /// The last LP's bandwidth per dimension.
    center: Vec<f64>,
    /// The top of each dimension's seed grid: the master's column scale.
    scale: Vec<f64>,
}

const NEAR: usize = 24;

impl Cuts {
    fn add(&mut self, d: usize, b: f64) -> bool {
        if !(b.is_finite() && b > 0.0)
            || self.points[d]
                .iter()
                .chain(&self.seed[d])
                .any(|p| (p - b).abs() <= 1e-12 * b)
        {
            return false;
        }
        self.points[d].push(b);
        true
    }

    /// The tangent points an LP uses on dimension d.
    fn active(&self, d: usize) -> Vec<f64> {
        let mut near = self.points[d].clone();
        let c = self.center[d];
        if near.len() > NEAR && c > 0.0 {
            near.sort_by(|a, b| (a / c).ln().abs().total_cmp(&(b / c).ln().abs()));
            near.truncate(NEAR);
        }
        near.extend(&self.seed[d]);
        near
    }
}

/// Adds the linear constraint `c` over the bandwidths `b` to `model`, its
/// row scaled by [`row_scale`].
fn add_row(model: &mut lp::Model, c: &Constraint, b: &[Var]) {
    let s = row_scale(&c.coeffs);
    let lhs: Expr = c.coeffs.iter().zip(b).map(|(k, v)| (k * s) * *v).sum();
    let rhs = c.rhs * s;
    model.add(match c.sense {
        Sense::Le => lhs.leq(rhs),
        Sense::Ge => lhs.geq(rhs),
        Sense::Eq => lhs.eq(rhs),
    });
}

/// Row scale so the largest coefficient is 1 (keeps the solver well conditioned).
fn row_scale(coeffs: &[f64]) -> f64 {
    let m = coeffs.iter().fold(0.0f64, |a, c| a.max(c.abs()));
    if m > 0.0 { 1.0 / m } else { 1.0 }
}

/// (alpha_ms, mb) per dimension.
type Row = Vec<(f64, f64)>;

/// Collectives deduplicated: distinct coefficient sets and, per path, how
/// many times each appears.
struct Terms {
    /// (alpha_ms, mb) per dimension, whether the dims sum, and the extra
    /// rows (each a sum over dimensions).
    distinct: Vec<(Row, bool, Vec<Row>)>,
    /// Per path: constant ms and (term, count).
    paths: Vec<(f64, Vec<(usize, f64)>)>,
}

impl Terms {
    fn new(it: &IterationModel) -> Self {
        let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut distinct = Vec::new();
        let mut of_coll = Vec::new();
        for c in &it.collectives {
            let dims: Vec<(f64, f64)> = c
                .coeffs
                .dims
                .iter()
                .map(|k| (ns_to_ms(k.alpha_ns), ns_to_ms(k.bytes)))
                .collect();
            let rows: Vec<Vec<(f64, f64)>> = c
                .coeffs
                .rows
                .iter()
                .map(|r| r.iter().map(|k| (ns_to_ms(k.alpha_ns), ns_to_ms(k.bytes))).collect())
                .collect();
            let mut key: Vec<u64> = dims.iter().flat_map(|(a, b)| [a.to_bits(), b.to_bits()]).collect();
            key.push(u64::from(c.coeffs.sequential));
            for r in &rows {
                key.push(u64::MAX);
                key.extend(r.iter().flat_map(|(a, b)| [a.to_bits(), b.to_bits()]));
            }
            let next = distinct.len();
            let i = *index.entry(key).or_insert_with(|| {
                distinct.push((dims, c.coeffs.sequential, rows));
                next
            });
            of_coll.push(i);
        }
        let paths = it
            .paths
            .iter()
            .map(|p| {
                let mut counts: HashMap<usize, f64> = HashMap::new();
                for &c in &p.collectives {
                    *counts.entry(of_coll[c]).or_default() += 1.0;
                }
                let mut v: Vec<(usize, f64)> = counts.into_iter().collect();
                v.sort_by_key(|x| x.0);
                (ns_to_ms(p.constant_ns), v)
            })
            .collect();
        Terms { distinct, paths }
    }
}

/// Solver state for one problem.
struct Solver<'a> {
    p: &'a Problem,
    terms: Terms,
    traffic: Vec<bool>,
    cuts: Cuts,
    solves: usize,
}

impl<'a> Solver<'a> {
    fn new(p: &'a Problem) -> Self {
        let n = p.n();
        Solver {
            p,
            terms: Terms::new(&p.iteration),
            traffic: p.traffic(),
            cuts: Cuts {
                seed: vec![Vec::new(); n],
                points: vec![Vec::new(); n],
                center: vec![0.0; n],
                scale: vec![1.0; n],
            },
            solves: 0,
        }
    }

    /// Builds and solves one LP over B alone (no time model): feasibility,
    /// ranges, the least cost. `rows` are the constraints to use (indices
    /// into the problem's). When the solver ends in an unexpected state (a
    /// numerical failure), the LP is solved again with the solver's defaults.
    fn lp(&mut self, goal: &Goal, rows: &[usize], mode: Mode) -> Result<LpAnswer, LpError> {
        match self.lp_once(goal, rows, mode, false) {
            Err(LpError::Failed(_)) => self.lp_once(goal, rows, mode, true),
            r => r,
        }
    }

    fn lp_once(&mut self, goal: &Goal, rows: &[usize], mode: Mode, careful: bool) -> Result<LpAnswer, LpError> {
        self.solves += 1;
        let n = self.p.n();
        let mut vars = lp::Problem::new();
        let b: Vec<Var> = (0..n)
            .map(|d| {
                let lo = if self.traffic[d] && mode == Mode::Floored {
                    MIN_TRAFFIC_GBPS
                } else {
                    0.0
                };
                vars.add(var().min(lo))
            })
            .collect();
        let discrete = |d: usize| self.p.options[d].as_ref().filter(|o| !o.is_empty());
        // Binary choice per option on discrete dimensions.
        let choice: Vec<Vec<Var>> = (0..n)
            .map(|d| match discrete(d) {
                Some(opts) => opts.iter().map(|_| vars.add(var().binary())).collect(),
                None => Vec::new(),
            })
            .collect();
        let objective: Expr = match goal {
            Goal::Linear(c) => c.iter().zip(&b).map(|(k, v)| *k * *v).sum(),
            Goal::Time | Goal::Nothing => Expr::from(0.0),
        };
        let mut model = vars.minimise(objective);
        let has_int = (0..n).any(|d| discrete(d).is_some());
        if has_int {
            model = model.mip_rel_gap(MIP_REL_GAP);
        } else if !careful {
            model = model.simplex();
        }
        for d in 0..n {
            if let Some(opts) = discrete(d) {
                let u = &choice[d];
                model.add(u.iter().copied().sum::<Expr>().eq(1.0));
                let bsum: Expr = u.iter().zip(opts).map(|(v, o)| *o * *v).sum();
                model.add(bsum.eq(b[d]));
            }
        }
        for c in rows.iter().map(|&i| &self.p.constraints[i]) {
            add_row(&mut model, c, &b);
        }
        let sol = model.solve()?;
        let bw: Vec<f64> = b.iter().map(|v| sol.value(*v).max(0.0)).collect();
        let objective = match goal {
            Goal::Linear(c) => c.iter().zip(&bw).map(|(k, v)| k * v).sum(),
            Goal::Time | Goal::Nothing => 0.0,
        };
        Ok(LpAnswer {
            bw,
            z: vec![0.0; n],
            objective,
            duals: None,
        })
    }

    fn all_rows(&self) -> Vec<usize> {
        (0..self.p.constraints.len()).collect()
    }

    /// Feasibility of the linear constraints alone; on failure, an
    /// irreducible infeasible subset by the deletion filter.
    fn check_feasible(&mut self) -> Result<(), OptError> {
        let rows = self.all_rows();
        match self.lp(&Goal::Nothing, &rows, Mode::Plain) {
            Ok(_) => Ok(()),
            Err(LpError::Infeasible) => {
                let mut keep = rows;
                let mut i = 0;
                while i < keep.len() {
                    let mut without = keep.clone();
                    without.remove(i);
                    match self.lp(&Goal::Nothing, &without, Mode::Plain) {
                        Err(LpError::Infeasible) => keep = without,
                        _ => i += 1,
                    }
                }
                Err(OptError::Infeasible(
                    keep.iter()
                        .map(|&r| format!("`{}`", self.p.constraints[r].text))
                        .collect(),
                ))
            }
            Err(e) => Err(OptError::Solver(e.to_string())),
        }
    }

    /// Largest B_d the constraints allow (None = unbounded).
    fn max_bw(&mut self, d: usize) -> Result<Option<f64>, OptError> {
        let mut c = vec![0.0; self.p.n()];
        c[d] = -1.0;
        let rows = self.all_rows();
        match self.lp(&Goal::Linear(c), &rows, Mode::Plain) {
            Ok(a) => Ok(Some(a.bw[d])),
            Err(LpError::Unbounded) => Ok(None),
            Err(LpError::Infeasible) => Err(OptError::Infeasible(vec!["the linear constraints".into()])),
            Err(e) => Err(OptError::Solver(e.to_string())),
        }
    }

    /// Seeds the tangents: a geometric grid over each dimension's range.
    fn seed(&mut self, hi: &[Option<f64>]) {
        for (d, h) in hi.iter().enumerate() {
            if !self.traffic[d] || self.p.options[d].is_some() {
                continue;
            }
            let top = h.unwrap_or(1e5).max(1e-3);
            let bottom = top * 1e-4;
            let k = 12;
            self.cuts.seed[d] = (0..=k)
                .map(|i| bottom * (top / bottom).powf(i as f64 / k as f64))
                .collect();
            self.cuts.center[d] = top;
            self.cuts.scale[d] = top;
        }
    }

    /// The outer-approximation loop (module doc) for the time (`cap` None,
    /// `fastest` None) or for a linear form with `time <= cap`, whose upper
    /// bounds come from the segment towards the `fastest` design. Returns the
    /// best point, its objective value, the certified lower bound and the last
    /// LP. After `MAX_ROUNDS` it returns what it has; the gap says how good.
    fn converge(
        &mut self,
        goal: &Goal,
        extra: &[Constraint],
        cap: Option<f64>,
        fastest: Option<&[f64]>,
    ) -> Result<(Vec<f64>, f64, f64, LpAnswer), OptError> {
        let n = self.p.n();
        let constraints: Vec<&Constraint> = self.p.constraints.iter().chain(extra).collect();
        let spec = Spec {
            goal,
            constraints,
            cap,
            traffic: &self.traffic,
            options: &self.p.options,
            terms: &self.terms,
            floor: MIN_TRAFFIC_GBPS,
            scale: &self.cuts.scale,
        };
        let mut used: Vec<Vec<f64>> = (0..n).map(|d| self.cuts.active(d)).collect();
        let mut master = Master::new(&spec, &used, false);
        let mut careful = false;
        let value = |bw: &[f64]| match goal {
            Goal::Linear(c) => c.iter().zip(bw).map(|(k, b)| k * b).sum::<f64>(),
            _ => self.p.time_ms(bw),
        };
        let mut best: Option<(Vec<f64>, f64)> = fastest.map(|f| (f.to_vec(), value(f)));
        let mut lower = 0.0f64;
        let mut round = 0;
        let mut new_points = Vec::new();
        let result = loop {
            round += 1;
            let a = match master.solve() {
                Ok(a) => a,
                Err(LpError::Failed(_)) if !careful => {
                    // A warm re-solve ended in a numerical failure: from now
                    // on build each round's LP afresh, with presolve.
                    careful = true;
                    self.solves += master.solves;
                    master = Master::new(&spec, &used, true);
                    continue;
                }
                Err(LpError::Infeasible) => {
                    break Err(OptError::Infeasible(vec!["the constraints with the time model".into()]));
                }
                Err(LpError::Unbounded) => break Err(OptError::Solver("the master LP is unbounded".into())),
                Err(LpError::Failed(m)) => break Err(OptError::Solver(m)),
            };
            lower = lower.max(a.objective);
            // An upper bound from a feasible point.
            let point = match (cap, fastest) {
                (Some(cap), Some(f)) if self.p.time_ms(&a.bw) > cap => {
                    // Nearest point to the LP's on the segment to the fastest
                    // design with time <= cap (time is convex along it).
                    let at = |l: f64| -> Vec<f64> { a.bw.iter().zip(f).map(|(x, y)| (1.0 - l) * x + l * y).collect() };
                    let (mut lo, mut hi) = (0.0, 1.0);
                    for _ in 0..60 {
                        let mid = 0.5 * (lo + hi);
                        if self.p.time_ms(&at(mid)) <= cap {
                            hi = mid;
                        } else {
                            lo = mid;
                        }
                    }
                    at(hi)
                }
                _ => a.bw.clone(),
            };
            let v = value(&point);
            if best.as_ref().is_none_or(|(_, bv)| v < *bv) {
                best = Some((point, v));
            }
            let (bw, ub) = best.clone().unwrap_or((a.bw.clone(), v));
            // New tangents wherever the LP under-estimated 1/B.
            let mut added = false;
            if (ub - lower) > GAP * ub.abs().max(1e-300) && round < MAX_ROUNDS {
                for (d, pts) in used.iter_mut().enumerate() {
                    let b = a.bw[d];
                    if self.traffic[d]
                        && self.p.options[d].is_none()
                        && b > 0.0
                        && a.z[d] < (1.0 / b) * (1.0 - 1e-12)
                        && !pts.iter().any(|p| (p - b).abs() <= 1e-12 * b)
                    {
                        if !careful {
                            master.add_cut(d, b);
                        }
                        pts.push(b);
                        new_points.push((d, b));
                        added = true;
                    }
                }
            }
            if !added {
                self.cuts.center.clone_from(&a.bw);
                break Ok((bw, ub, lower.min(ub), a));
            }
            if careful {
                self.solves += master.solves;
                master = Master::new(&spec, &used, true);
            }
        };
        self.solves += master.solves;
        for (d, b) in new_points {
            self.cuts.add(d, b);
        }
        result
    }

    /// Minimizes the time under the constraints (and `extra`).
    fn min_time(&mut self, extra: &[Constraint]) -> Result<(Vec<f64>, f64, f64, LpAnswer), OptError> {
        self.converge(&Goal::Time, extra, None, None)
    }
}

fn lp_err(e: LpError) -> OptError {
    match e {
        LpError::Infeasible => OptError::Infeasible(vec!["the constraints with the time model".into()]),
        other => OptError::Solver(other.to_string()),
    }
}

/// A solver ready for `p`: the linear constraints checked, each dimension's
/// range found (None: unbounded) and the tangents seeded over it.
fn prepare(p: &Problem) -> Result<(Solver<'_>, Vec<Option<f64>>), OptError> {
    let mut s = Solver::new(p);
    s.check_feasible()?;
    let mut hi = Vec::with_capacity(p.n());
    for d in 0..p.n() {
        let m = s.max_bw(d)?;
        if s.traffic[d] && m.is_some_and(|m| m < MIN_TRAFFIC_GBPS) {
            return Err(OptError::Infeasible(vec![format!(
                "dimension `{}` carries traffic but the constraints hold it at 0 GB/s",
                p.dim_names[d]
            )]));
        }
        hi.push(m);
    }
    s.seed(&hi);
    Ok((s, hi))
}

/// The most bandwidth each dimension can get under `p`'s constraints alone
/// (one LP per dimension: maximize B_d; a discrete dimension at most its
/// largest option), GB/s per NPU; infinite where nothing bounds it (or the
/// constraints are infeasible). Every feasible allocation lies below it,
/// and the iteration time falls as any bandwidth grows, so the time there
/// is a lower bound on the time at any feasible allocation.
pub fn most_bandwidth(p: &Problem) -> Vec<f64> {
    let n = p.n();
    (0..n)
        .map(|d| {
            let cap = p.options[d]
                .as_ref()
                .and_then(|o| o.iter().copied().reduce(f64::max))
                .unwrap_or(f64::INFINITY);
            let mut vars = lp::Problem::new();
            let b: Vec<Var> = (0..n)
                .map(|k| {
                    let cap_k = p.options[k]
                        .as_ref()
                        .and_then(|o| o.iter().copied().reduce(f64::max))
                        .unwrap_or(f64::INFINITY);
                    if cap_k.is_finite() {
                        vars.add(var().min(0.0).max(cap_k))
                    } else {
                        vars.add(var().min(0.0))
                    }
                })
                .collect();
            let mut model = vars.maximise(b[d]);
            for c in &p.constraints {
                add_row(&mut model, c, &b);
            }
            match model.solve() {
                Ok(sol) => sol.value(b[d]).min(cap),
                Err(_) => cap,
            }
        })
        .collect()
}

/// Solves `p` for `objective`, to a certified optimum.
pub fn solve(p: &Problem, objective: Objective) -> Result<Solution, OptError> {
    let (mut s, hi) = prepare(p)?;
    let n = p.n();
    let cost_m: Vec<f64> = (0..n)
        .map(|d| usd_to_musd(p.cost.npus * p.cost.usd_per_gbps[d]))
        .collect();
    let power_k: Vec<f64> = (0..n).map(|d| w_to_kw(p.cost.npus * p.cost.w_per_gbps[d])).collect();
    let unbounded_dim = || {
        (0..n)
            .find(|&d| hi[d].is_none() && s_traffic(p, d))
            .map(|d| OptError::Unbounded(p.dim_names[d].clone()))
    };
    let (bw, value, lower, last) = match objective {
        Objective::Perf => {
            if let Some(e) = unbounded_dim() {
                return Err(e);
            }
            s.min_time(&[])?
        }
        Objective::MinCost { target_ms } | Objective::MinPower { target_ms } => {
            let fastest = fastest_for_target(&mut s, &hi, target_ms)?;
            let coeffs = if matches!(objective, Objective::MinCost { .. }) {
                &cost_m
            } else {
                &power_k
            };
            s.converge(&Goal::Linear(coeffs.clone()), &[], Some(target_ms), Some(&fastest))?
        }
        Objective::PerfPerCost => {
            if let Some(e) = unbounded_dim() {
                return Err(e);
            }
            perf_per_cost(&mut s, &cost_m)?
        }
    };
    let gap = if value.abs() > 0.0 {
        ((value - lower) / value).max(0.0)
    } else {
        0.0
    };
    // Binding constraints and their marginal values (from the last LP, whose
    // relaxation is tight to within the gap).
    let mut binding_constraints: Vec<Binding> = p
        .constraints
        .iter()
        .enumerate()
        .filter(|(_, c)| is_tight(c, &bw))
        .map(|(i, c)| {
            let (per, scale) = match c.unit {
                Unit::Gbps => ("GB/s", 1.0),
                Unit::Usd => ("$1M", USD_PER_MUSD),
                Unit::Watts => ("kW", W_PER_KW),
            };
            let marginal = match objective {
                Objective::PerfPerCost => None,
                _ => last.duals.as_ref().map(|d| d[i] * scale),
            };
            Binding {
                constraint: c.text.clone(),
                marginal,
                per,
            }
        })
        .collect();
    // The time target binds min-cost and min-power when it is met exactly.
    if let Objective::MinCost { target_ms } | Objective::MinPower { target_ms } = objective
        && p.time_ms(&bw) >= target_ms * (1.0 - 1e-6)
    {
        binding_constraints.push(Binding {
            constraint: format!("iteration time <= {target_ms} ms"),
            marginal: None,
            per: "ms",
        });
    }
    let total: f64 = bw.iter().sum();
    let equal = vec![total / n as f64; n];
    let t = p.time_ms(&bw);
    let t_eq = p.time_ms(&equal);
    Ok(Solution {
        objective: objective.name(),
        objective_value: value,
        objective_unit: objective.unit(),
        lower_bound: lower,
        gap,
        iteration_time_ms: t,
        network_cost_usd: p.cost.cost(&bw),
        network_power_w: p.cost.power(&bw),
        binding_constraints,
        speedup_vs_equal_split: (t_eq.is_finite() && t > 0.0).then(|| t_eq / t),
        bw_gbps: bw,
        lp_solves: s.solves,
    })
}

fn s_traffic(p: &Problem, d: usize) -> bool {
    p.iteration.collectives.iter().any(|c| c.coeffs.uses(d))
}

/// Whether `c` holds with equality at `bw` (relative 1e-6).
fn is_tight(c: &Constraint, bw: &[f64]) -> bool {
    let lhs = c.lhs(bw);
    let scale = c
        .rhs
        .abs()
        .max(c.coeffs.iter().zip(bw).map(|(a, b)| (a * b).abs()).sum::<f64>())
        .max(1e-9);
    (lhs - c.rhs).abs() <= 1e-6 * scale
}

/// The fastest design, checked against a time target.
fn fastest_for_target(s: &mut Solver, hi: &[Option<f64>], target_ms: f64) -> Result<Vec<f64>, OptError> {
    if (0..s.p.n()).any(|d| hi[d].is_none() && s.traffic[d]) {
        // Unbounded bandwidth: some finite point reaches any target above the
        // compute time; scale a feasible point up until it does.
        let floor = ns_to_ms(s.p.iteration.compute_ns);
        if target_ms <= floor {
            return Err(OptError::TargetUnreachable {
                best_ms: floor,
                target_ms,
            });
        }
    }
    let hi_rows: Vec<Constraint> = (0..s.p.n())
        .filter(|&d| hi[d].is_none() && s.traffic[d])
        .map(|d| {
            let mut c = vec![0.0; s.p.n()];
            c[d] = 1.0;
            Constraint {
                text: String::new(),
                coeffs: c,
                sense: Sense::Le,
                rhs: 1e9,
                unit: Unit::Gbps,
            }
        })
        .collect();
    let (bw, t, lower, _) = s.min_time(&hi_rows)?;
    if lower > target_ms * (1.0 + GAP) {
        return Err(OptError::TargetUnreachable { best_ms: t, target_ms });
    }
    Ok(bw)
}

/// Global minimization of time x cost over the cost level (module doc).
fn perf_per_cost(s: &mut Solver, cost_m: &[f64]) -> Result<(Vec<f64>, f64, f64, LpAnswer), OptError> {
    let rows = s.all_rows();
    let cost_of = |bw: &[f64]| cost_m.iter().zip(bw).map(|(k, b)| k * b).sum::<f64>();
    // The cost range: least cost allowed, and the cost of the fastest design.
    let x_lo = s
        .lp(&Goal::Linear(cost_m.to_vec()), &rows, Mode::Floored)
        .map_err(lp_err)?
        .objective
        .max(0.0);
    let (fast_bw, fast_t, _, fast_lp) = s.min_time(&[])?;
    let x_hi = cost_of(&fast_bw);
    let mut best = (fast_bw.clone(), fast_t * x_hi);
    if x_hi <= x_lo * (1.0 + 1e-12) || x_hi <= 0.0 {
        let v = best.1;
        return Ok((fast_bw, v, v * (1.0 - GAP), fast_lp));
    }
    // g(X): min time with cost <= X; returns (point, time, certified lower bound).
    let budget = |x: f64| Constraint {
        text: format!("cost <= {x}"),
        coeffs: cost_m.to_vec(),
        sense: Sense::Le,
        rhs: x,
        unit: Unit::Usd,
    };
    // Samples of g: (X, certified lower bound, subgradient of the lower
    // bound's LP value in X, upper bound).
    let state = RefCell::new((s, &mut best, Vec::<Sample>::new()));
    let eval = |x: f64| -> Result<f64, OptError> {
        let mut st = state.borrow_mut();
        let (solver, best, samples) = &mut *st;
        let (bw, t, _, last) = solver.min_time(&[budget(x)])?;
        let h = t * cost_of(&bw);
        if h < best.1 {
            **best = (bw, h);
        }
        // The last LP is a relaxation whatever X is; its optimum and the
        // budget row's dual give a line under g everywhere.
        let slope = last
            .duals
            .as_ref()
            .and_then(|d| d.last().copied())
            .filter(|v| v.is_finite());
        samples.push(Sample {
            x,
            lower: last.objective.min(t),
            slope,
            upper: t,
        });
        Ok(h)
    };
    // Start just above the least cost, so the budget row is not degenerate
    // (the solver may fail on it; then a little higher). The sliver [x_lo, x_start]
    // is bounded below by x_lo * g(x_start).
    let mut x_start = x_hi * 1e-6;
    if x_lo > 0.0 {
        for rel in [1e-8, 1e-6, 1e-4] {
            x_start = x_lo * (1.0 + rel);
            if eval(x_start).is_ok() {
                break;
            }
        }
    }
    // Incumbent: Brent's method (argmin) on [x_start, x_hi].
    {
        use argmin::core::{CostFunction, Error, Executor};
        struct H<'f>(&'f dyn Fn(f64) -> Result<f64, OptError>);
        impl CostFunction for H<'_> {
            type Param = f64;
            type Output = f64;
            fn cost(&self, x: &f64) -> Result<f64, Error> {
                (self.0)(*x).map_err(|e| Error::msg(e.to_string()))
            }
        }
        let solver = argmin::solver::brent::BrentOpt::new(x_start, x_hi).set_tolerance(1e-7, 0.0);
        // A failed Brent run only costs the incumbent; the search below is exact.
        let _ = Executor::new(H(&eval), solver).configure(|st| st.max_iters(60)).run();
    }
    if state.borrow().2.is_empty() {
        eval(x_start)?;
    }
    eval(x_hi)?;
    // Branch and bound over X (module doc), with g's convexity for bounds.
    let mut rounds = 0;
    let mut stuck = false;
    loop {
        let (incumbent, mut pts) = {
            let st = state.borrow();
            (st.1.1, st.2.clone())
        };
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        pts.dedup_by(|a, b| a.x.total_cmp(&b.x).is_eq());
        let worst = (0..pts.len().saturating_sub(1))
            .map(|i| (interval_bound(&pts, i), pts[i].x, pts[i + 1].x))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let sliver = pts.first().map_or(f64::INFINITY, |p| x_lo * p.lower);
        let lb = worst.map_or(incumbent, |w| w.0.min(incumbent)).min(sliver);
        rounds += 1;
        // Split at the geometric mean: the optimum may sit at a cost orders
        // of magnitude below the fastest design's.
        let split = |a: f64, b: f64| if a > 0.0 { (a * b).sqrt() } else { 0.5 * (a + b) };
        let done = match worst {
            None => true,
            Some((_, a, b)) => {
                let mid = split(a, b);
                incumbent - lb <= PPC_GAP * incumbent || rounds > PPC_ROUNDS || stuck || mid <= a || mid >= b
            }
        };
        if done {
            let (_, best, _) = state.into_inner();
            let (bw, v) = best.clone();
            // No marginals for perf-per-cost: its value function is not convex.
            let last = LpAnswer {
                bw: bw.clone(),
                z: Vec::new(),
                objective: lb,
                duals: None,
            };
            return Ok((bw, v, lb, last));
        }
        if let Some((_, a, b)) = worst {
            // A numerical failure of the solver inside the weakest interval ends
            // the search; the gap reported says what is still open.
            stuck = eval(split(a, b)).is_err();
        }
    }
}

/// One evaluation of g(X) = min time subject to cost <= X.
#[derive(Debug, Clone, Copy)]
struct Sample {
    x: f64,
    /// Certified: g(x) >= lower.
    lower: f64,
    /// With it, g(X) >= lower + slope (X - x) for every X (LP duality on a
    /// relaxation whose value is convex in X).
    slope: Option<f64>,
    /// g(x) <= upper (the time of a feasible point).
    upper: f64,
}

/// Lower bound of `X g(X)` on `[pts[i].x, pts[i+1].x]`, from samples sorted
/// by X. g is convex and non-increasing, so on the interval g is above: its
/// lower bound at the right end; the supporting lines (LP duals) at both
/// ends; the secant through the two samples left of the interval extended
/// rightwards, and the one through the two samples right of it extended
/// leftwards (each built from bounds so that it stays below g). The bound is
/// the minimum of `X * max(lines)`, which lies at an end, at a crossing of two
/// lines, or at a stationary point of one `X * line`.
fn interval_bound(pts: &[Sample], i: usize) -> f64 {
    let (p1, p2) = (pts[i], pts[i + 1]);
    let (x1, x2) = (p1.x, p2.x);
    // Lines (c, s): g(X) >= c + s X on the interval.
    let mut lines = vec![(p2.lower, 0.0)];
    for p in [p1, p2] {
        if let Some(s) = p.slope {
            lines.push((p.lower - s * p.x, s));
        }
    }
    if i >= 1 {
        let p0 = pts[i - 1];
        let s = (p1.lower - p0.upper) / (x1 - p0.x);
        lines.push((p1.lower - s * x1, s));
    }
    if i + 2 < pts.len() {
        let p3 = pts[i + 2];
        let s = (p3.upper - p2.lower) / (p3.x - x2);
        lines.push((p2.lower - s * x2, s));
    }
    let mut cands = vec![x1, x2];
    for (j, &(cj, sj)) in lines.iter().enumerate() {
        if sj > 0.0 {
            cands.push(-cj / (2.0 * sj));
        }
        for &(ck, sk) in &lines[j + 1..] {
            if sj.total_cmp(&sk).is_ne() {
                cands.push((ck - cj) / (sj - sk));
            }
        }
    }
    cands
        .into_iter()
        .filter(|x| *x >= x1 && *x <= x2)
        .map(|x| x * lines.iter().map(|(c, s)| c + s * x).fold(f64::NEG_INFINITY, f64::max))
        .fold(f64::INFINITY, f64::min)
}

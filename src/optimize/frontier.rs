//! The budget-vs-time frontier: the fastest design at each budget on one axis
//! (network cost, network power or total bandwidth), from the cheapest
//! feasible design to the fastest one (see the range below).
//!
//! Each point is a certified perf solve with one more constraint,
//! `axis(B) <= X`; all points share one solver, so the tangents found for one
//! budget serve the next. The range:
//! - low end: the least the axis can be under the constraints (an LP), with
//!   dimensions that carry traffic at their floor, or, when that design is
//!   more than `SLOWDOWN` (2x) slower than the fastest, the budget at which
//!   it is exactly 2x slower (bisection: the time is non-increasing in the
//!   budget). Below that the budget buys no network anyone would build;
//!   dimension floors (`min_gbps`) move the start where the study needs it;
//! - high end: the axis value of the fastest design when the constraints
//!   bound it; otherwise, doubling the budget until the time is within 1e-3
//!   of the time at infinite bandwidth (compute plus latency).
//!
//! Points are spaced geometrically when the range spans more than a decade,
//! linearly otherwise. The knee is the point farthest below the chord from
//! the first point to the last, in the chart's (normalized, log where the
//! chart is log) coordinates: past it, each extra unit of budget buys much
//! less time.

use super::expr::{Constraint, Sense, Unit};
use super::{Goal, Mode, OptError, Problem, is_tight, lp_err, prepare};
use crate::model::units::{usd_to_musd, w_to_kw};
use crate::progress::Progress;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many runs of consecutive budgets a frontier is solved in, in
/// parallel. Fixed, not the thread count: each run warm-starts its solver
/// from the points before it, so the split decides the rounding of every
/// point (in the ninth digit) and the LP solves counted.
pub const CHAINS: usize = 2;

/// The frontier starts where the fastest design is this many times slower
/// than the best one (unless the least feasible budget is already faster).
pub const SLOWDOWN: f64 = 2.0;

/// The budget axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// Network cost, $M.
    Cost,
    /// Network power, kW.
    Power,
    /// Sum of the bandwidths, GB/s per NPU.
    TotalBw,
}

impl crate::error::Named for Axis {
    const WHAT: &'static str = "an axis";
    const ALL: &'static [Axis] = &[Axis::Cost, Axis::Power, Axis::TotalBw];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(Axis);

impl Axis {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Cost => "cost",
            Axis::Power => "power",
            Axis::TotalBw => "total-bw",
        }
    }

    /// Unit of the budget.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Axis::Cost => "$M",
            Axis::Power => "kW",
            Axis::TotalBw => "GB/s per NPU",
        }
    }

    /// Per-GB/s coefficients of the axis on each dimension, in its unit.
    pub fn coeffs(self, p: &Problem) -> Vec<f64> {
        (0..p.n())
            .map(|d| match self {
                Axis::Cost => usd_to_musd(p.cost.npus * p.cost.usd_per_gbps[d]),
                Axis::Power => w_to_kw(p.cost.npus * p.cost.w_per_gbps[d]),
                Axis::TotalBw => 1.0,
            })
            .collect()
    }

    /// The unit of a budget on this axis, for constraints.
    pub(crate) fn unit_kind(self) -> Unit {
        match self {
            Axis::Cost => Unit::Usd,
            Axis::Power => Unit::Watts,
            Axis::TotalBw => Unit::Gbps,
        }
    }
}

/// One point of the frontier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The budget, in the axis unit.
    pub budget: f64,
    /// What the design spends on the axis (at most the budget).
    pub spent: f64,
    /// Iteration time, ms.
    pub iteration_time_ms: f64,
    /// Certified lower bound on the time at this budget, ms.
    pub lower_bound_ms: f64,
    /// Relative gap.
    pub gap: f64,
    /// The allocation, GB/s per NPU.
    pub bw_gbps: Vec<f64>,
    /// Network cost, dollars.
    pub network_cost_usd: f64,
    /// Network power, watts.
    pub network_power_w: f64,
    /// Constraints that hold with equality (`budget` for the axis).
    pub binding: Vec<String>,
    /// Time of the equal split spending the same budget, ms; NaN where the
    /// study's constraints rule the equal split out.
    pub equal_split_ms: f64,
}

/// A frontier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frontier {
    /// Its axis.
    pub axis: Axis,
    /// Points by increasing budget.
    pub points: Vec<Point>,
    /// Index of the knee in `points`.
    pub knee: usize,
    /// Whether the points are spaced geometrically (the chart is log-x).
    pub log_x: bool,
    /// LP solves used.
    pub lp_solves: usize,
}

/// The frontier of `p` on `axis` with `n` points (at least 2).
pub fn frontier(p: &Problem, axis: Axis, n: usize) -> Result<Frontier, OptError> {
    frontier_with(p, axis, n, "frontier", &crate::progress::Quiet)
}

/// As [`frontier`], reporting `(task, points done, n)` to `progress`
/// after each point (from any of the rayon threads the points are spread
/// over), and stopping with [`OptError::Cancelled`] at the next point
/// once it cancels.
pub fn frontier_with(p: &Problem, axis: Axis, n: usize, task: &str, progress: Progress) -> Result<Frontier, OptError> {
    let n = n.max(2);
    let (mut s, hi) = prepare(p)?;
    let k = axis.coeffs(p);
    let value = |bw: &[f64]| k.iter().zip(bw).map(|(a, b)| a * b).sum::<f64>();
    let rows: Vec<usize> = (0..p.constraints.len()).collect();
    let x_lo = s
        .lp(&Goal::Linear(k.clone()), &rows, Mode::Floored)
        .map_err(lp_err)?
        .objective
        .max(0.0);
    // The high end.
    let unbounded = (0..p.n()).any(|d| hi[d].is_none() && s.traffic[d]);
    let budget = |x: f64| Constraint {
        text: "budget".into(),
        coeffs: k.clone(),
        sense: Sense::Le,
        rhs: x,
        unit: axis.unit_kind(),
    };
    let x_hi = if unbounded {
        let floor = p.time_ms(&vec![1e12; p.n()]);
        let mut x = (x_lo * 2.0).max(value(&vec![1.0; p.n()]));
        for _ in 0..60 {
            let (_, t, _, _) = s.min_time(&[budget(x)])?;
            if t <= floor * (1.0 + 1e-3) {
                break;
            }
            x *= 2.0;
        }
        x
    } else {
        let (bw, _, _, _) = s.min_time(&[])?;
        value(&bw)
    };
    let x_hi = x_hi.max(x_lo);
    // Start a little above the least budget (there the budget row is
    // degenerate), or where the design is SLOWDOWN times slower than the
    // fastest, whichever is higher: below that, the budget buys no network
    // anyone would build (with no floors set, the least budget is ~0 GB/s).
    let mut start = if x_lo > 0.0 { x_lo * (1.0 + 1e-3) } else { x_hi * 1e-6 };
    let (_, t_best, _, _) = s.min_time(&[budget(x_hi)])?;
    // A budget so small that HiGHS cannot solve it counts as too slow.
    let mut too_slow = |x: f64| {
        s.min_time(&[budget(x)])
            .map_or(true, |(_, t, _, _)| t > SLOWDOWN * t_best)
    };
    if start < x_hi && too_slow(start) {
        // T(X) is non-increasing: bisect in log X for T = SLOWDOWN * t_best.
        let (mut lo, mut hi) = (start.ln(), x_hi.ln());
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            if too_slow(mid.exp()) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        start = hi.exp();
    }
    let log_x = start > 0.0 && x_hi / start > 10.0;
    let budgets: Vec<f64> = (0..n)
        .map(|i| {
            let f = i as f64 / (n - 1) as f64;
            if log_x {
                start * (x_hi / start).powf(f)
            } else {
                start + (x_hi - start) * f
            }
        })
        .collect();
    let sum_k: f64 = k.iter().sum();
    // The points are independent: split them into `CHAINS` runs of
    // consecutive budgets, solved in parallel, each by its own solver
    // starting from the tangents found so far and warm-started by the
    // points before it in its run. The split does not depend on the
    // number of threads, so neither do the points nor the solve count.
    let done = AtomicUsize::new(0);
    let chunk = n.div_ceil(CHAINS);
    let pool = s.cuts.clone();
    let solved = AtomicUsize::new(s.solves);
    let parts: Vec<Result<Vec<Point>, OptError>> = budgets
        .par_chunks(chunk)
        .map(|xs| {
            let (mut s, _) = prepare(p)?;
            s.cuts = pool.clone();
            let mut out = Vec::with_capacity(xs.len());
            for &x in xs {
                if progress.cancelled() {
                    return Err(OptError::Cancelled);
                }
                let (bw, t, lower, _) = s.min_time(&[budget(x)])?;
                let mut binding: Vec<String> = p
                    .constraints
                    .iter()
                    .filter(|c| is_tight(c, &bw))
                    .map(|c| c.text.clone())
                    .collect();
                if is_tight(&budget(x), &bw) {
                    binding.push("budget".into());
                }
                // The equal split of the budget, when the study's constraints allow it.
                let equal = vec![x / sum_k; p.n()];
                let equal_ok = p.constraints.iter().all(|c| c.holds(&equal, 1e-9));
                out.push(Point {
                    budget: x,
                    spent: value(&bw),
                    iteration_time_ms: t,
                    lower_bound_ms: lower,
                    gap: if t > 0.0 { ((t - lower) / t).max(0.0) } else { 0.0 },
                    network_cost_usd: p.cost.cost(&bw),
                    network_power_w: p.cost.power(&bw),
                    bw_gbps: bw,
                    binding,
                    equal_split_ms: if equal_ok { p.time_ms(&equal) } else { f64::NAN },
                });
                progress.progress(task, done.fetch_add(1, Ordering::Relaxed) + 1, n);
            }
            solved.fetch_add(s.solves, Ordering::Relaxed);
            Ok(out)
        })
        .collect();
    let mut points = Vec::with_capacity(n);
    for part in parts {
        points.extend(part?);
    }
    let knee = knee(&points, log_x);
    Ok(Frontier {
        axis,
        points,
        knee,
        log_x,
        lp_solves: solved.into_inner(),
    })
}

/// The point farthest below the chord from the first point to the last, in
/// normalized coordinates (log budget when `log_x`, log time when the time
/// spans more than a decade).
pub fn knee(points: &[Point], log_x: bool) -> usize {
    if points.len() < 3 {
        return 0;
    }
    let ts: Vec<f64> = points.iter().map(|p| p.iteration_time_ms).collect();
    let (tmin, tmax) = ts
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), t| (a.min(*t), b.max(*t)));
    let log_y = tmin > 0.0 && tmax / tmin > 10.0;
    let fx = |x: f64| if log_x { x.ln() } else { x };
    let fy = |y: f64| if log_y { y.ln() } else { y };
    let xs: Vec<f64> = points.iter().map(|p| fx(p.budget)).collect();
    let ys: Vec<f64> = ts.iter().map(|t| fy(*t)).collect();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let (y0, y1) = (ys[0], ys[ys.len() - 1]);
    if (x1 - x0).abs() < 1e-300 || (y0 - y1).abs() < 1e-300 {
        return 0;
    }
    let norm = |x: f64, y: f64| ((x - x0) / (x1 - x0), (y - y1) / (y0 - y1));
    (0..points.len())
        .map(|i| {
            let (u, v) = norm(xs[i], ys[i]);
            // The chord runs from (0, 1) to (1, 0): distance below it.
            (i, 1.0 - u - v)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(0, |(i, _)| i)
}

/// A fixed design to show beside the frontier.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Label.
    pub name: String,
    /// Budget spent, in the axis unit.
    pub budget: f64,
    /// Iteration time, ms.
    pub time_ms: f64,
}

//! The master LP of the outer approximation, kept in one solver instance
//! ([`crate::lp::Incremental`]): each round adds the new tangent rows and re-solves
//! from the previous basis (dual simplex warm start), which a build-and-solve
//! [`crate::lp::Model`] cannot do. One master serves one convex solve.
//!
//! Columns: B_d (GB/s), z_d >= 1/B_d (traffic dimensions), one t_k per
//! distinct collective (ms), T (ms), and a binary per option on discrete
//! dimensions. Rows: the user's constraints (scaled so the largest
//! coefficient is 1), tangents `p z_d + B_d / p >= 2`, `t_k >= alpha_kd +
//! MB_kd z_d` (or the sum), `T >= c_p + sum t_k` per path, `T <= cap`.

use super::expr::{Constraint, Sense as CSense};
use super::{Goal, LpAnswer, MIP_REL_GAP, Terms, row_scale};
use crate::lp::{Col, Incremental, LpError, Row};

/// What a master LP holds.
pub(super) struct Spec<'a> {
    pub goal: &'a Goal,
    pub constraints: Vec<&'a Constraint>,
    pub cap: Option<f64>,
    pub traffic: &'a [bool],
    pub options: &'a [Option<Vec<f64>>],
    pub terms: &'a Terms,
    pub floor: f64,
    /// Column scale per dimension (GB/s): the LP's columns are B_d / scale_d
    /// and z_d * scale_d, so tangents at B in [1e-4, 1] x scale keep their
    /// two coefficients within a few decades of 1.
    pub scale: &'a [f64],
}

pub(super) struct Master {
    model: Incremental,
    scale: Vec<f64>,
    b: Vec<Col>,
    z: Vec<Option<Col>>,
    big_t: Col,
    /// Row and scale of each user constraint, in `Spec::constraints` order.
    user_rows: Vec<(Row, f64)>,
    linear_goal: Option<Vec<f64>>,
    integer: bool,
    /// LP solves so far.
    pub solves: usize,
}

/// The (dimension, (alpha, MB)) pairs of the dimensions a collective's
/// per-dimension coefficients use.
fn used(coeffs: &[(f64, f64)]) -> impl Iterator<Item = (usize, &(f64, f64))> {
    coeffs.iter().enumerate().filter(|(_, (a, mb))| *a > 0.0 || *mb > 0.0)
}

/// The row `t_k - sum_d MB_d z_d >= sum_d alpha_d` over the dimensions
/// `coeffs` uses: its bound and its coefficients.
fn sum_row(tk: Col, coeffs: &[(f64, f64)], z: &[Option<Col>], sc: &[f64]) -> (f64, Vec<(Col, f64)>) {
    let mut f = vec![(tk, 1.0)];
    let mut alpha = 0.0;
    for (d, (a, mb)) in used(coeffs) {
        alpha += a;
        if let Some(zd) = z[d] {
            f.push((zd, -mb / sc[d]));
        }
    }
    (alpha, f)
}

impl Master {
    /// Builds the master with tangents at `cuts[d]`.
    pub fn new(spec: &Spec, cuts: &[Vec<f64>], careful: bool) -> Master {
        let n = spec.traffic.len();
        let discrete = |d: usize| spec.options[d].as_ref().filter(|o| !o.is_empty());
        let sc = spec.scale;
        let cost_of = |d: usize| match spec.goal {
            Goal::Linear(c) => c[d] * sc[d],
            _ => 0.0,
        };
        let inf = f64::INFINITY;
        let mut model = Incremental::new();
        let integer = (0..n).any(|d| discrete(d).is_some());
        if integer {
            model.mip_rel_gap(MIP_REL_GAP);
        } else if !careful {
            // Small LPs solve fastest by simplex without presolve; a retry
            // after a numerical failure gets the solver's defaults.
            model.simplex();
        }
        let b: Vec<Col> = (0..n)
            .map(|d| {
                let lo = if spec.traffic[d] { spec.floor / sc[d] } else { 0.0 };
                model.add_col(cost_of(d), lo, inf)
            })
            .collect();
        let z: Vec<Option<Col>> = (0..n)
            .map(|d| spec.traffic[d].then(|| model.add_col(0.0, 0.0, inf)))
            .collect();
        let t: Vec<Col> = spec
            .terms
            .distinct
            .iter()
            .map(|_| model.add_col(0.0, 0.0, inf))
            .collect();
        let time_cost = if matches!(spec.goal, Goal::Time) { 1.0 } else { 0.0 };
        let big_t = model.add_col(time_cost, 0.0, inf);
        let mut user_rows = Vec::new();
        // Discrete dimensions: B and z linear in a binary per option.
        for (d, &scd) in sc.iter().enumerate() {
            if let Some(opts) = discrete(d) {
                let u: Vec<Col> = opts.iter().map(|_| model.add_integer_col(0.0, 0.0, 1.0)).collect();
                model.add_row(1.0, 1.0, u.iter().map(|c| (*c, 1.0)));
                let mut f: Vec<(Col, f64)> = u.iter().zip(opts).map(|(c, o)| (*c, o / scd)).collect();
                f.push((b[d], -1.0));
                model.add_row(0.0, 0.0, f);
                if let Some(zd) = z[d] {
                    let mut f: Vec<(Col, f64)> = u.iter().zip(opts).map(|(c, o)| (*c, scd / o)).collect();
                    f.push((zd, -1.0));
                    model.add_row(0.0, 0.0, f);
                }
            }
        }
        for c in &spec.constraints {
            let k: Vec<f64> = c.coeffs.iter().zip(sc).map(|(k, x)| k * x).collect();
            let s = row_scale(&k);
            let f: Vec<(Col, f64)> = k
                .iter()
                .enumerate()
                .filter(|(_, k)| **k != 0.0)
                .map(|(d, k)| (b[d], k * s))
                .collect();
            let r = c.rhs * s;
            let (lo, hi) = match c.sense {
                CSense::Le => (f64::NEG_INFINITY, r),
                CSense::Ge => (r, inf),
                CSense::Eq => (r, r),
            };
            let i = model.add_row(lo, hi, f);
            user_rows.push((i, s));
        }
        for (d, pts) in cuts.iter().enumerate() {
            if let (Some(zd), None) = (z[d], discrete(d)) {
                for &p in pts {
                    let p = p / sc[d];
                    model.add_row(2.0, inf, [(zd, p), (b[d], 1.0 / p)]);
                }
            }
        }
        for ((dims, seq, rows), tk) in spec.terms.distinct.iter().zip(&t) {
            for r in rows {
                // One row each.
                let (alpha, f) = sum_row(*tk, r, &z, sc);
                model.add_row(alpha, inf, f);
            }
            if *seq {
                let (alpha, f) = sum_row(*tk, dims, &z, sc);
                model.add_row(alpha, inf, f);
            } else {
                for (d, (a, mb)) in used(dims) {
                    let mut f = vec![(*tk, 1.0)];
                    if let Some(zd) = z[d] {
                        f.push((zd, -mb / sc[d]));
                    }
                    model.add_row(*a, inf, f);
                }
            }
        }
        for (c, items) in &spec.terms.paths {
            let mut f = vec![(big_t, 1.0)];
            f.extend(items.iter().map(|(k, cnt)| (t[*k], -cnt)));
            model.add_row(*c, inf, f);
        }
        if let Some(cap) = spec.cap {
            model.add_row(f64::NEG_INFINITY, cap, [(big_t, 1.0)]);
        }
        Master {
            model,
            scale: sc.to_vec(),
            b,
            z,
            big_t,
            user_rows,
            linear_goal: match spec.goal {
                Goal::Linear(c) => Some(c.clone()),
                _ => None,
            },
            integer,
            solves: 0,
        }
    }

    /// Adds the tangent of z_d >= 1/B_d at B_d = p.
    pub(crate) fn add_cut(&mut self, d: usize, p: f64) {
        if let Some(zd) = self.z[d] {
            let p = p / self.scale[d];
            self.model.add_row(2.0, f64::INFINITY, [(zd, p), (self.b[d], 1.0 / p)]);
        }
    }

    /// Solves (warm from the last basis). A failed solve loses the model:
    /// the caller builds a new master.
    pub fn solve(&mut self) -> Result<LpAnswer, LpError> {
        self.solves += 1;
        let sol = self.model.solve()?;
        let bw: Vec<f64> = self
            .b
            .iter()
            .zip(&self.scale)
            .map(|(c, x)| sol.value(*c).max(0.0) * x)
            .collect();
        let z: Vec<f64> = self
            .z
            .iter()
            .zip(&self.scale)
            .map(|(c, x)| c.map_or(0.0, |c| sol.value(c) / x))
            .collect();
        let objective = match &self.linear_goal {
            Some(k) => k.iter().zip(&bw).map(|(a, b)| a * b).sum(),
            None => sol.value(self.big_t),
        };
        let duals = (!self.integer).then(|| self.user_rows.iter().map(|(i, s)| sol.dual(*i) * s).collect());
        Ok(LpAnswer {
            bw,
            z,
            objective,
            duals,
        })
    }
}

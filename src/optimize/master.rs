//! The master LP of the outer approximation, kept in one HiGHS instance: each
//! round adds the new tangent rows and re-solves from the previous basis
//! (dual simplex warm start), which good_lp's build-and-solve interface
//! cannot do. One master serves one convex solve.
//!
//! Columns: B_d (GB/s), z_d >= 1/B_d (traffic dimensions), one t_k per
//! distinct collective (ms), T (ms), and a binary per option on discrete
//! dimensions. Rows: the user's constraints (scaled so the largest
//! coefficient is 1), tangents `p z_d + B_d / p >= 2`, `t_k >= alpha_kd +
//! MB_kd z_d` (or the sum), `T >= c_p + sum t_k` per path, `T <= cap`.

use super::expr::{Constraint, Sense as CSense};
use super::{Goal, LpAnswer, MIP_REL_GAP, Terms, row_scale};
use highs::{Col, HighsModelStatus, Model, RowProblem, Sense};

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

/// Why a master LP has no optimum.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum MasterError {
    Infeasible,
    Unbounded,
    Failed(String),
}

pub(super) struct Master {
    model: Option<Model>,
    scale: Vec<f64>,
    b: Vec<Col>,
    z: Vec<Option<Col>>,
    big_t: Col,
    /// Row index and scale of each user constraint, in `Spec::constraints` order.
    user_rows: Vec<(usize, f64)>,
    rows: usize,
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
        let mut model = Model::new(RowProblem::default());
        model.make_quiet();
        model.set_sense(Sense::Minimise);
        let integer = (0..n).any(|d| discrete(d).is_some());
        if integer {
            model.set_option("mip_rel_gap", MIP_REL_GAP);
        } else if !careful {
            // Small LPs solve fastest by simplex without presolve; a retry
            // after a numerical failure gets HiGHS's defaults.
            model.set_option("presolve", "off");
            model.set_option("solver", "simplex");
        }
        let none: [(highs::Row, f64); 0] = [];
        let b: Vec<Col> = (0..n)
            .map(|d| {
                let lo = if spec.traffic[d] { spec.floor / sc[d] } else { 0.0 };
                model.add_col(cost_of(d), lo.., none)
            })
            .collect();
        let z: Vec<Option<Col>> = (0..n)
            .map(|d| spec.traffic[d].then(|| model.add_col(0.0, 0.0.., none)))
            .collect();
        let t: Vec<Col> = spec
            .terms
            .distinct
            .iter()
            .map(|_| model.add_col(0.0, 0.0.., none))
            .collect();
        let time_cost = if matches!(spec.goal, Goal::Time) { 1.0 } else { 0.0 };
        let big_t = model.add_col(time_cost, 0.0.., none);
        let mut m = Master {
            model: None,
            scale: sc.to_vec(),
            b,
            z,
            big_t,
            user_rows: Vec::new(),
            rows: 0,
            linear_goal: match spec.goal {
                Goal::Linear(c) => Some(c.clone()),
                _ => None,
            },
            integer,
            solves: 0,
        };
        let mut count = 0usize;
        let mut row = |model: &mut Model, lo: f64, hi: f64, f: Vec<(Col, f64)>| {
            model.add_row(lo..=hi, f);
            count += 1;
            count - 1
        };
        // Discrete dimensions: B and z linear in a binary per option.
        for (d, &scd) in sc.iter().enumerate() {
            if let Some(opts) = discrete(d) {
                let u: Vec<Col> = opts
                    .iter()
                    .map(|_| model.add_integer_column(0.0, 0.0..=1.0, none))
                    .collect();
                row(&mut model, 1.0, 1.0, u.iter().map(|c| (*c, 1.0)).collect());
                let mut f: Vec<(Col, f64)> = u.iter().zip(opts).map(|(c, o)| (*c, o / scd)).collect();
                f.push((m.b[d], -1.0));
                row(&mut model, 0.0, 0.0, f);
                if let Some(zd) = m.z[d] {
                    let mut f: Vec<(Col, f64)> = u.iter().zip(opts).map(|(c, o)| (*c, scd / o)).collect();
                    f.push((zd, -1.0));
                    row(&mut model, 0.0, 0.0, f);
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
                .map(|(d, k)| (m.b[d], k * s))
                .collect();
            let r = c.rhs * s;
            let (lo, hi) = match c.sense {
                CSense::Le => (f64::NEG_INFINITY, r),
                CSense::Ge => (r, f64::INFINITY),
                CSense::Eq => (r, r),
            };
            let i = row(&mut model, lo, hi, f);
            m.user_rows.push((i, s));
        }
        for (d, pts) in cuts.iter().enumerate() {
            if let (Some(zd), None) = (m.z[d], discrete(d)) {
                for &p in pts {
                    let p = p / sc[d];
                    row(&mut model, 2.0, f64::INFINITY, vec![(zd, p), (m.b[d], 1.0 / p)]);
                }
            }
        }
        for ((dims, seq, rows), tk) in spec.terms.distinct.iter().zip(&t) {
            for r in rows {
                // One row each.
                let (alpha, f) = sum_row(*tk, r, &m.z, sc);
                row(&mut model, alpha, f64::INFINITY, f);
            }
            if *seq {
                let (alpha, f) = sum_row(*tk, dims, &m.z, sc);
                row(&mut model, alpha, f64::INFINITY, f);
            } else {
                for (d, (a, mb)) in used(dims) {
                    let mut f = vec![(*tk, 1.0)];
                    if let Some(zd) = m.z[d] {
                        f.push((zd, -mb / sc[d]));
                    }
                    row(&mut model, *a, f64::INFINITY, f);
                }
            }
        }
        for (c, items) in &spec.terms.paths {
            let mut f = vec![(big_t, 1.0)];
            f.extend(items.iter().map(|(k, cnt)| (t[*k], -cnt)));
            row(&mut model, *c, f64::INFINITY, f);
        }
        if let Some(cap) = spec.cap {
            row(&mut model, f64::NEG_INFINITY, cap, vec![(big_t, 1.0)]);
        }
        m.rows = count;
        m.model = Some(model);
        m
    }

    /// Adds the tangent of z_d >= 1/B_d at B_d = p.
    pub(crate) fn add_cut(&mut self, d: usize, p: f64) {
        if let (Some(model), Some(zd)) = (self.model.as_mut(), self.z[d]) {
            let p = p / self.scale[d];
            model.add_row(2.0.., [(zd, p), (self.b[d], 1.0 / p)]);
            self.rows += 1;
        }
    }

    /// Solves (warm from the last basis).
    pub fn solve(&mut self) -> Result<LpAnswer, MasterError> {
        self.solves += 1;
        let model = self
            .model
            .take()
            .ok_or_else(|| MasterError::Failed("no model".into()))?;
        let solved = model.try_solve().map_err(|e| MasterError::Failed(format!("{e:?}")))?;
        let status = solved.status();
        let answer = match status {
            HighsModelStatus::Optimal => {
                let sol = solved.get_solution();
                let cols = sol.columns();
                let bw: Vec<f64> = self
                    .b
                    .iter()
                    .zip(&self.scale)
                    .map(|(c, x)| cols[c.index()].max(0.0) * x)
                    .collect();
                let z: Vec<f64> = self
                    .z
                    .iter()
                    .zip(&self.scale)
                    .map(|(c, x)| c.map_or(0.0, |c| cols[c.index()] / x))
                    .collect();
                let objective = match &self.linear_goal {
                    Some(k) => k.iter().zip(&bw).map(|(a, b)| a * b).sum(),
                    None => cols[self.big_t.index()],
                };
                let duals = (!self.integer).then(|| {
                    let rd = sol.dual_rows();
                    self.user_rows.iter().map(|(i, s)| rd[*i] * s).collect()
                });
                Ok(LpAnswer {
                    bw,
                    z,
                    objective,
                    duals,
                })
            }
            HighsModelStatus::Infeasible => Err(MasterError::Infeasible),
            HighsModelStatus::Unbounded | HighsModelStatus::UnboundedOrInfeasible => Err(MasterError::Unbounded),
            other => Err(MasterError::Failed(format!("HiGHS ended with {other:?}"))),
        };
        self.model = Some(Model::from(solved));
        answer
    }
}

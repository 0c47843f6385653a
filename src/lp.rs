//! The seam to the linear-programming solver: every LP and MILP of the
//! crate (the optimizer's LPs over the bandwidths, its cutting-plane master,
//! the catalog MILP, the all-to-all flow, the product orders' mixture) is
//! written in these types, and this is the only module that names the
//! solver ([`SOLVER`]) or its Rust bindings. Another solver is a change to
//! this file alone.
//!
//! Two ways to state a program:
//!
//! - [`Problem`] -> [`Model`] -> [`Solution`]: declare the variables
//!   ([`var`]: continuous, integer or binary, with bounds), write the
//!   objective and the constraints as linear expressions ([`Expr`], built
//!   from [`Var`]s and numbers with `+`, `-`, `*`, `sum`; compared with
//!   [`Expr::leq`], [`Expr::geq`], [`Expr::eq`]), solve once, read the values.
//! - [`Incremental`]: a minimisation built column by column and row by row
//!   that is kept between solves, so rows added after a solve are
//!   re-solved from the last basis (a warm start); [`Values`] gives the
//!   columns' values and the rows' duals.
//!
//! Both are quiet, solved with the solver's defaults unless asked for
//! [`Model::simplex`] (simplex without presolve) or a relative MIP gap, and
//! fail with one error type, [`LpError`]. Variables, constraints, rows and
//! columns reach the solver in the order they are added: solvers are
//! sensitive to it, so callers that need identical answers keep their order.

use good_lp::solvers::highs::{HighsProblem, HighsSolution, highs};
use good_lp::{ProblemVariables, ResolutionError, SolverModel as _, variable};
use std::ops::{Add, AddAssign, Mul, Sub, SubAssign};

/// The solver behind the seam.
pub const SOLVER: &str = "HiGHS";

/// Why a program has no optimum.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LpError {
    /// No point satisfies the constraints.
    #[error("Infeasible: The problem contains contradictory constraints. No solution exists.")]
    Infeasible,
    /// The objective improves without bound.
    #[error("Unbounded: The objective can be made infinitely large without violating any constraints.")]
    Unbounded,
    /// The solver failed (a numerical failure, an interrupted solve): its
    /// reason.
    #[error("An unexpected error occurred while running the optimizer: {0}.")]
    Failed(String),
}

impl From<ResolutionError> for LpError {
    fn from(e: ResolutionError) -> Self {
        match e {
            ResolutionError::Infeasible => LpError::Infeasible,
            ResolutionError::Unbounded => LpError::Unbounded,
            ResolutionError::Other(s) => LpError::Failed(s.to_string()),
            ResolutionError::Str(s) => LpError::Failed(s),
        }
    }
}

/// A variable of a [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Var(good_lp::Variable);

/// How a new variable is declared: its bounds and whether it is integer.
/// Made by [`var`].
#[derive(Clone)]
pub struct VarDef(good_lp::VariableDefinition);

/// A continuous variable without bounds (narrow it with [`VarDef::min`],
/// [`VarDef::max`], [`VarDef::integer`], [`VarDef::binary`]).
pub fn var() -> VarDef {
    VarDef(variable())
}

impl VarDef {
    /// Lower bound.
    pub fn min(self, lo: f64) -> Self {
        VarDef(self.0.min(lo))
    }

    /// Upper bound.
    pub fn max(self, hi: f64) -> Self {
        VarDef(self.0.max(hi))
    }

    /// Integer-valued.
    pub fn integer(self) -> Self {
        VarDef(self.0.integer())
    }

    /// Integer in [0, 1].
    pub fn binary(self) -> Self {
        VarDef(self.0.binary())
    }
}

/// A linear expression: a sum of variables times coefficients, plus a
/// constant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expr(good_lp::Expression);

/// A linear constraint over a [`Problem`]'s variables: made by
/// [`Expr::leq`], [`Expr::geq`] or [`Expr::eq`], added with [`Model::add`].
pub struct Constraint(good_lp::Constraint);

impl Expr {
    /// `self <= rhs`.
    pub fn leq(self, rhs: impl Into<Expr>) -> Constraint {
        Constraint(self.0.leq(rhs.into().0))
    }

    /// `self >= rhs`.
    pub fn geq(self, rhs: impl Into<Expr>) -> Constraint {
        Constraint(self.0.geq(rhs.into().0))
    }

    /// `self == rhs`.
    pub fn eq(self, rhs: impl Into<Expr>) -> Constraint {
        Constraint(self.0.eq(rhs.into().0))
    }
}

impl From<f64> for Expr {
    fn from(c: f64) -> Self {
        Expr(good_lp::Expression::from(c))
    }
}

impl From<Var> for Expr {
    fn from(v: Var) -> Self {
        Expr(good_lp::Expression::from(v.0))
    }
}

impl Mul<Var> for f64 {
    type Output = Expr;
    fn mul(self, v: Var) -> Expr {
        Expr(self * v.0)
    }
}

impl Mul<f64> for Var {
    type Output = Expr;
    fn mul(self, k: f64) -> Expr {
        Expr(self.0 * k)
    }
}

impl Mul<Expr> for f64 {
    type Output = Expr;
    fn mul(self, e: Expr) -> Expr {
        Expr(self * e.0)
    }
}

impl Mul<f64> for Expr {
    type Output = Expr;
    fn mul(self, k: f64) -> Expr {
        Expr(self.0 * k)
    }
}

/// `+` and `-` between variables and expressions, each side either.
macro_rules! add_sub {
    ($($l:ty, $r:ty);*) => {$(
        impl Add<$r> for $l {
            type Output = Expr;
            fn add(self, r: $r) -> Expr {
                Expr(self.0 + r.0)
            }
        }
        impl Sub<$r> for $l {
            type Output = Expr;
            fn sub(self, r: $r) -> Expr {
                Expr(self.0 - r.0)
            }
        }
    )*};
}
add_sub!(Expr, Expr; Expr, Var; Var, Expr; Var, Var);

impl AddAssign<Expr> for Expr {
    fn add_assign(&mut self, r: Expr) {
        self.0 += r.0;
    }
}

impl AddAssign<Var> for Expr {
    fn add_assign(&mut self, r: Var) {
        self.0 += r.0;
    }
}

impl SubAssign<Expr> for Expr {
    fn sub_assign(&mut self, r: Expr) {
        self.0 -= r.0;
    }
}

impl SubAssign<Var> for Expr {
    fn sub_assign(&mut self, r: Var) {
        self.0 -= r.0;
    }
}

impl std::iter::Sum<Expr> for Expr {
    fn sum<I: Iterator<Item = Expr>>(iter: I) -> Self {
        Expr(iter.map(|e| e.0).sum())
    }
}

impl std::iter::Sum<Var> for Expr {
    fn sum<I: Iterator<Item = Var>>(iter: I) -> Self {
        Expr(iter.map(|v| v.0).sum())
    }
}

/// The variables of a program; [`Problem::minimise`] or
/// [`Problem::maximise`] adds the objective and makes the [`Model`] the
/// constraints go into. The main entry point of the seam.
///
/// An LP by hand: max `x + y` s.t. `x + 2y <= 4`, `3x + y <= 6`, `x, y >=
/// 0`. The two constraints meet at `(1.6, 1.2)`, objective 2.8. The same
/// with integer x and y and the objective `3x + 2y`: the integer points are
/// `(0, 2)`, `(1, 1)`, `(2, 0)` and below, the best `(2, 0)` at 6.
///
/// ```
/// use dimsum::lp::{Expr, Problem, var};
///
/// let mut p = Problem::new();
/// let x = p.add(var().min(0.0));
/// let y = p.add(var().min(0.0));
/// let mut m = p.maximise(x + y);
/// m.add((x + 2.0 * y).leq(4.0));
/// m.add((3.0 * x + y).leq(6.0));
/// let s = m.solve()?;
/// assert!((s.value(x) - 1.6).abs() < 1e-9 && (s.value(y) - 1.2).abs() < 1e-9);
/// assert!((s.eval(&(x + y)) - 2.8).abs() < 1e-9);
///
/// // The MILP: integer variables, a relative MIP gap.
/// let mut p = Problem::new();
/// let x = p.add(var().min(0.0).integer());
/// let y = p.add(var().min(0.0).integer());
/// let objective: Expr = 3.0 * x + 2.0 * y;
/// let mut m = p.maximise(objective.clone()).mip_rel_gap(1e-9);
/// m.add((x + 2.0 * y).leq(4.0));
/// m.add((3.0 * x + y).leq(6.0));
/// let s = m.solve()?;
/// assert!((s.value(x) - 2.0).abs() < 1e-9 && s.value(y).abs() < 1e-9);
/// assert!((s.eval(&objective) - 6.0).abs() < 1e-9);
///
/// // No point satisfies x >= 3 and x <= 2.
/// let mut p = Problem::new();
/// let x = p.add(var());
/// let mut m = p.minimise(x);
/// m.add(Expr::from(x).geq(3.0));
/// m.add(Expr::from(x).leq(2.0));
/// assert_eq!(m.solve().err(), Some(dimsum::lp::LpError::Infeasible));
/// # Ok::<(), dimsum::lp::LpError>(())
/// ```
#[derive(Default)]
pub struct Problem(ProblemVariables);

impl Problem {
    /// No variables yet.
    pub fn new() -> Self {
        Problem(ProblemVariables::new())
    }

    /// Declares a variable (its column follows the ones declared before).
    pub fn add(&mut self, def: VarDef) -> Var {
        Var(self.0.add(def.0))
    }

    /// The model minimising `objective`.
    pub fn minimise(self, objective: impl Into<Expr>) -> Model {
        Model::solver(highs(self.0.minimise(objective.into().0)))
    }

    /// The model maximising `objective`.
    pub fn maximise(self, objective: impl Into<Expr>) -> Model {
        Model::solver(highs(self.0.maximise(objective.into().0)))
    }
}

/// A program ready for its constraints and solved once
/// ([`Problem::minimise`], [`Problem::maximise`]).
pub struct Model(HighsProblem);

impl Model {
    /// The solver's model of a program, quiet: where a one-shot program
    /// meets [`SOLVER`].
    fn solver(m: HighsProblem) -> Model {
        Model(m.set_option("output_flag", false))
    }

    /// Stops a MILP's branch and bound at this relative gap between the
    /// incumbent and the bound.
    pub fn mip_rel_gap(self, gap: f64) -> Self {
        Model(self.0.set_option("mip_rel_gap", gap))
    }

    /// Simplex without presolve (fastest on the crate's small LPs); without
    /// it, the solver chooses.
    pub fn simplex(self) -> Self {
        Model(self.0.set_option("presolve", "off").set_option("solver", "simplex"))
    }

    /// Adds a constraint (its row follows the ones added before).
    pub fn add(&mut self, c: Constraint) {
        self.0.add_constraint(c.0);
    }

    /// Solves to optimality (or to the MIP gap).
    pub fn solve(self) -> Result<Solution, LpError> {
        Ok(Solution(self.0.solve()?))
    }
}

/// The optimum of a [`Model`].
pub struct Solution(HighsSolution);

impl Solution {
    /// A variable's value.
    pub fn value(&self, v: Var) -> f64 {
        good_lp::Solution::value(&self.0, v.0)
    }

    /// An expression's value (e.g. the objective's).
    pub fn eval(&self, e: &Expr) -> f64 {
        e.0.eval_with(&self.0)
    }
}

/// A column of an [`Incremental`] model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Col(usize);

/// A row of an [`Incremental`] model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Row(usize);

/// A minimisation kept in one solver instance across solves: columns and
/// rows may be added at any time, and each [`Incremental::solve`] starts
/// from the previous one's basis (the cutting-plane master adds tangent
/// rows and re-solves by dual simplex).
///
/// ```
/// use dimsum::lp::Incremental;
///
/// // min x + y s.t. x + 2y >= 4, then also 3x + y >= 6.
/// let mut m = Incremental::new();
/// let x = m.add_col(1.0, 0.0, f64::INFINITY);
/// let y = m.add_col(1.0, 0.0, f64::INFINITY);
/// m.add_row(4.0, f64::INFINITY, [(x, 1.0), (y, 2.0)]);
/// let s = m.solve()?;
/// assert!(s.value(x).abs() < 1e-9 && (s.value(y) - 2.0).abs() < 1e-9);
/// let r = m.add_row(6.0, f64::INFINITY, [(x, 3.0), (y, 1.0)]);
/// let s = m.solve()?; // warm, from the last basis
/// assert!((s.value(x) - 1.6).abs() < 1e-9 && (s.value(y) - 1.2).abs() < 1e-9);
/// assert!((s.dual(r) - 0.2).abs() < 1e-9); // the objective per unit of the bound
/// # Ok::<(), dimsum::lp::LpError>(())
/// ```
pub struct Incremental {
    /// None after a failed solve.
    model: Option<highs::Model>,
    /// The solver's handle of each column, in [`Col`] order.
    cols: Vec<highs::Col>,
    /// Columns and rows added so far.
    ncols: usize,
    rows: usize,
}

impl Default for Incremental {
    fn default() -> Self {
        Self::new()
    }
}

impl Incremental {
    /// An empty, quiet minimisation.
    pub fn new() -> Self {
        let mut model = highs::Model::new(highs::RowProblem::default());
        model.make_quiet();
        model.set_sense(highs::Sense::Minimise);
        Incremental {
            model: Some(model),
            cols: Vec::new(),
            ncols: 0,
            rows: 0,
        }
    }

    /// Stops a MILP's branch and bound at this relative gap.
    pub fn mip_rel_gap(&mut self, gap: f64) {
        if let Some(m) = self.model.as_mut() {
            m.set_option("mip_rel_gap", gap);
        }
    }

    /// Simplex without presolve (fastest on small LPs); without it, the
    /// solver chooses.
    pub fn simplex(&mut self) {
        if let Some(m) = self.model.as_mut() {
            m.set_option("presolve", "off");
            m.set_option("solver", "simplex");
        }
    }

    /// Adds a continuous column in `[lo, hi]` with objective coefficient
    /// `cost`.
    pub fn add_col(&mut self, cost: f64, lo: f64, hi: f64) -> Col {
        self.col(cost, lo, hi, false)
    }

    /// Adds an integer column in `[lo, hi]` with objective coefficient
    /// `cost`.
    pub fn add_integer_col(&mut self, cost: f64, lo: f64, hi: f64) -> Col {
        self.col(cost, lo, hi, true)
    }

    fn col(&mut self, cost: f64, lo: f64, hi: f64, integer: bool) -> Col {
        let none: [(highs::Row, f64); 0] = [];
        if let Some(m) = self.model.as_mut() {
            let c = if integer {
                m.add_integer_column(cost, lo..=hi, none)
            } else {
                m.add_col(cost, lo..=hi, none)
            };
            self.cols.push(c);
        }
        self.ncols += 1;
        Col(self.ncols - 1)
    }

    /// Adds the row `lo <= sum coeff x_col <= hi` (infinite bounds for
    /// one-sided rows).
    pub fn add_row(&mut self, lo: f64, hi: f64, coeffs: impl IntoIterator<Item = (Col, f64)>) -> Row {
        if let Some(m) = self.model.as_mut() {
            let cols = &self.cols;
            m.add_row(lo..=hi, coeffs.into_iter().map(|(c, k)| (cols[c.0], k)));
        }
        self.rows += 1;
        Row(self.rows - 1)
    }

    /// Solves from the last basis. An infeasible-or-unbounded ending is
    /// reported as [`LpError::Unbounded`]; a failed solve loses the model
    /// (later solves fail too: build a new one).
    pub fn solve(&mut self) -> Result<Values, LpError> {
        let model = self.model.take().ok_or_else(|| LpError::Failed("no model".into()))?;
        let solved = model.try_solve().map_err(|e| LpError::Failed(format!("{e:?}")))?;
        let answer = match solved.status() {
            highs::HighsModelStatus::Optimal => Ok(Values(solved.get_solution())),
            highs::HighsModelStatus::Infeasible => Err(LpError::Infeasible),
            highs::HighsModelStatus::Unbounded | highs::HighsModelStatus::UnboundedOrInfeasible => {
                Err(LpError::Unbounded)
            }
            other => Err(LpError::Failed(format!("{SOLVER} ended with {other:?}"))),
        };
        self.model = Some(highs::Model::from(solved));
        answer
    }
}

/// The optimum of an [`Incremental`] model.
pub struct Values(highs::Solution);

impl Values {
    /// A column's value.
    pub fn value(&self, c: Col) -> f64 {
        self.0.columns()[c.0]
    }

    /// A row's dual value: the change of the objective per unit of the
    /// row's binding bound.
    pub fn dual(&self, r: Row) -> f64 {
        self.0.dual_rows()[r.0]
    }
}

//! The `[optimize]` section (the objective, iteration-time target and
//! constraint expressions `dimsum optimize` uses without command-line
//! options) and `[run]` (the objectives `dimsum run` solves). The solver
//! itself is `crate::optimize`.

use super::StudyFile;
use crate::error::{InputError, one_of};
use crate::model::cost::{CostModel, Linear};
use crate::model::fabric::Fabric;
use crate::optimize::Objective;
use crate::optimize::expr::{self, Constraint};
use serde::Deserialize;
use toml::Spanned;

/// The study's `[optimize]` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptimizeSpec {
    /// Objective name (checked when the study is read).
    pub objective: Option<String>,
    /// Iteration-time target for min-cost and min-power, ms.
    pub target_ms: Option<f64>,
    /// Constraint expressions, parsed against the fabric.
    pub constraints: Vec<Constraint>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOptimize {
    objective: Option<Spanned<String>>,
    target_ms: Option<Spanned<f64>>,
    #[serde(default)]
    constraints: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    #[serde(default)]
    objectives: Vec<Spanned<String>>,
}

/// `[optimize]`: the objective's name, a target > 0 ms, and each constraint
/// parsed against the fabric and its cost.
pub(super) fn optimize_spec(
    raw: &RawOptimize,
    fabric: &Fabric,
    cost: &CostModel,
    src: StudyFile<'_>,
) -> Result<OptimizeSpec, InputError> {
    let cost_lin = Linear::new(fabric, cost);
    let mut optimize = OptimizeSpec::default();
    if let Some(o) = &raw.objective {
        optimize.objective = Some(objective(o, "optimize.objective".into(), src)?);
    }
    if let Some(t) = &raw.target_ms {
        let v = *t.get_ref();
        if !(v.is_finite() && v > 0.0) {
            return Err(src.at(
                t.span(),
                "optimize.target_ms",
                format!("{v} is not allowed: use a time > 0 ms"),
            ));
        }
        optimize.target_ms = Some(v);
    }
    for (i, c) in raw.constraints.iter().enumerate() {
        let parsed = expr::parse(c.get_ref(), fabric, &cost_lin).map_err(|e| {
            src.at(
                c.span(),
                format!("optimize.constraints[{i}]"),
                format!("`{}` column {}: {}", c.get_ref(), e.column, e.message),
            )
        })?;
        optimize.constraints.push(parsed);
    }
    Ok(optimize)
}

/// `[run]`'s objectives; none given: the `[optimize]` objective, else perf.
pub(super) fn run_objectives(
    raw: &RawRun,
    optimize: &OptimizeSpec,
    src: StudyFile<'_>,
) -> Result<Vec<String>, InputError> {
    let mut objectives = Vec::new();
    for (i, o) in raw.objectives.iter().enumerate() {
        objectives.push(objective(o, format!("run.objectives[{i}]"), src)?);
    }
    if objectives.is_empty() {
        objectives.push(optimize.objective.clone().unwrap_or_else(|| "perf".into()));
    }
    Ok(objectives)
}

/// An objective's name, which must be one the optimizer knows.
fn objective(o: &Spanned<String>, field: String, src: StudyFile<'_>) -> Result<String, InputError> {
    if !Objective::NAMES.contains(&o.get_ref().as_str()) {
        return Err(src.at(
            o.span(),
            field,
            format!(
                "`{}` is not an objective; allowed: {}",
                o.get_ref(),
                one_of(&Objective::NAMES)
            ),
        ));
    }
    Ok(o.get_ref().clone())
}

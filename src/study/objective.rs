//! What a study asks the optimizer: its problem (the iteration model, the
//! linear cost and the study's constraints), its objectives by name, and
//! the stamp its results carry. Shared by `dimsum optimize`, `run` and the
//! library's pipeline, so a name means the same thing everywhere.

use super::Study;
use crate::error::{InputError, one_of};
use crate::io::Stamp;
use crate::model::eval::{Evaluation, evaluate};
use crate::model::units::ns_to_ms;
use crate::optimize::expr::Unit;
use crate::optimize::scheduled::{Measured, ScheduledError};
use crate::optimize::{Objective, Problem};
use serde::Serialize;

/// Where an objective's name came from, for the error's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The command line (`--objective`, `--target-ms`).
    Cli,
    /// The study file (`[optimize]`, `[run] objectives`).
    Study,
}

/// One of a study's constraints (its `[optimize]` constraints and the
/// dimensions' bounds) at an allocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The constraint as written (or generated, for a bound).
    pub constraint: String,
    /// Its left-hand side at the allocation.
    pub value: f64,
    /// Its right-hand side.
    pub rhs: f64,
    /// The unit of both: `GB/s`, `$` or `W` (cost and power at the study's
    /// linear prices).
    pub unit: &'static str,
    /// Whether it holds (relative tolerance 1e-9).
    pub holds: bool,
}

impl Study {
    /// Each of the study's constraints at `bw`.
    pub fn checks(&self, bw: &[f64]) -> Result<Vec<Check>, InputError> {
        Ok(self
            .problem()?
            .constraints
            .iter()
            .map(|c| Check {
                constraint: c.text.clone(),
                value: c.lhs(bw),
                rhs: c.rhs,
                unit: match c.unit {
                    Unit::Gbps => "GB/s",
                    Unit::Usd => "$",
                    Unit::Watts => "W",
                },
                holds: c.holds(bw, 1e-9),
            })
            .collect())
    }

    /// The study's problem: its iteration model, linear cost, constraints
    /// and the fabric's bounds.
    pub fn problem(&self) -> Result<Problem, InputError> {
        Ok(Problem::new(
            &self.fabric,
            self.iteration_model(),
            self.linear_cost(),
            self.constraints(&[])?,
        ))
    }

    /// The stamp of every file written from this study.
    pub fn stamp(&self) -> Stamp {
        Stamp::from_hash(self.hash.clone())
    }

    /// The objective `name` (else the study's `[optimize] objective`, else
    /// `perf`), with `target_ms` (else the study's) for the targeted ones.
    pub fn objective(&self, name: Option<&str>, target_ms: Option<f64>) -> Result<Objective, InputError> {
        let source = if name.is_some() { Source::Cli } else { Source::Study };
        let name = name.or(self.optimize.objective.as_deref()).unwrap_or("perf");
        self.objective_with(name, target_ms, source, true)
    }

    /// The objective `name` from `source`, with `target_ms` (else the
    /// study's `[optimize] target_ms`) for min-cost and min-power, for a
    /// command that takes no `--target-ms` (`run`).
    pub(crate) fn objective_named(
        &self,
        name: &str,
        target_ms: Option<f64>,
        source: Source,
    ) -> Result<Objective, InputError> {
        self.objective_with(name, target_ms, source, false)
    }

    /// [`Study::objective_named`]; `cli_target`: the command takes
    /// `--target-ms`, so a missing target may come from there.
    fn objective_with(
        &self,
        name: &str,
        target_ms: Option<f64>,
        source: Source,
        cli_target: bool,
    ) -> Result<Objective, InputError> {
        let target = target_ms.or(self.optimize.target_ms);
        if let Some(t) = target_ms
            && !(t.is_finite() && t > 0.0)
        {
            return Err(InputError::arg(
                "--target-ms",
                format!("{t} is not allowed: use a time > 0 ms"),
            ));
        }
        let need_target = |name: &str| {
            target.ok_or_else(|| {
                if cli_target {
                    InputError::arg(
                        "--target-ms",
                        format!(
                            "`{name}` needs an iteration-time target: pass --target-ms or set target_ms in [optimize]"
                        ),
                    )
                } else {
                    // `run`: only the study file can give it one.
                    InputError::at(
                        &self.path,
                        None,
                        "optimize.target_ms",
                        format!("`{name}` needs an iteration-time target: set target_ms in [optimize]"),
                    )
                }
            })
        };
        Ok(match name {
            "perf" => Objective::Perf,
            "perf-per-cost" => Objective::PerfPerCost,
            "min-cost" => Objective::MinCost {
                target_ms: need_target(name)?,
            },
            "min-power" => Objective::MinPower {
                target_ms: need_target(name)?,
            },
            other => {
                let field = match source {
                    Source::Cli => "--objective",
                    Source::Study => "optimize.objective",
                };
                return Err(InputError::arg(
                    field,
                    format!("`{other}` is not an objective; allowed: {}", one_of(&Objective::NAMES)),
                ));
            }
        })
    }

    /// The allocation `bw` evaluated against the study's schedules: every
    /// distinct collective replayed, the evaluation on the measured
    /// coefficients with the replays' own iteration time, and the
    /// measurement.
    pub fn evaluate_backed(&self, bw: &[f64]) -> Result<(Evaluation, Measured), ScheduledError> {
        let m = self.backed(&self.evaluator).measure(bw)?;
        let mut e = evaluate(&self.fabric, &m.model, &self.linear_cost(), bw);
        // The measured model reproduces the replays; report the replays' sum itself.
        e.iteration_time_ms = ns_to_ms(m.iteration_ns);
        e.comm_time_ms = ns_to_ms(m.iteration_ns - m.model.compute_ns);
        Ok((e, m))
    }

    /// A schedule-backed failure as the study's error: a schedule the
    /// study's `[evaluator]` names but that cannot be built is bad input
    /// (with the section's line); a replay or solver failure is not.
    pub fn evaluator_error(&self, e: ScheduledError) -> Result<InputError, ScheduledError> {
        match e {
            ScheduledError::Build { .. } => Ok(InputError::at(
                &self.path,
                self.evaluator_line,
                "evaluator.algorithm",
                e.to_string(),
            )),
            other => Err(other),
        }
    }
}

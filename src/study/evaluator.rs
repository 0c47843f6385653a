//! `[evaluator]`: how collectives are timed — analytically or by simulated
//! schedules (`kind`), the schedule algorithm overall and per collective,
//! chunks per NPU, the link model, and the fixed point's tolerance, iteration
//! limit, seed and restarts; `best_tolerance` (a fraction, 0.01, or a
//! percentage, "1%": where `best` stops, here and in the replays of the
//! decision and the joint optimum).

use super::StudyFile;
use crate::error::InputError;
use crate::model::workload::CollectiveKind;
use crate::optimize::scheduled::{self, Evaluator};
use crate::schedule::algorithm::Algorithm as ScheduleAlgorithm;
use crate::schedule::simulate::LinkModel;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEvaluator {
    kind: Option<Spanned<String>>,
    algorithm: Option<Spanned<String>>,
    #[serde(default)]
    algorithms: BTreeMap<String, Spanned<String>>,
    chunks_per_npu: Option<Spanned<i64>>,
    link_model: Option<Spanned<String>>,
    tolerance: Option<Spanned<f64>>,
    max_iterations: Option<Spanned<i64>>,
    seed: Option<u64>,
    restarts: Option<Spanned<i64>>,
    best_tolerance: Option<Spanned<toml::Value>>,
}

/// An error in `[evaluator]`, at the line of `span`.
fn at(src: StudyFile<'_>, span: std::ops::Range<usize>, field: &str, msg: String) -> InputError {
    src.at(span, format!("evaluator.{field}"), msg)
}

/// The `[evaluator]` section, checked: what is simulated, then how the fixed
/// point iterates.
pub(super) fn evaluator_spec(raw: &RawEvaluator, src: StudyFile<'_>) -> Result<scheduled::Spec, InputError> {
    let mut spec = scheduled::Spec::default();
    schedules(raw, &mut spec, src)?;
    fixed_point(raw, &mut spec, src)?;
    Ok(spec)
}

/// The evaluator's kind, the schedule algorithm (overall and per
/// collective), chunks per NPU and the link model.
fn schedules(raw: &RawEvaluator, spec: &mut scheduled::Spec, src: StudyFile<'_>) -> Result<(), InputError> {
    if let Some(k) = &raw.kind {
        spec.evaluator = k
            .get_ref()
            .parse::<Evaluator>()
            .map_err(|e| at(src, k.span(), "kind", e.to_string()))?;
    }
    if let Some(a) = &raw.algorithm {
        spec.algorithm = algorithm(a, "algorithm", src)?;
        if spec.algorithm == ScheduleAlgorithm::Flow {
            return Err(at(
                src,
                a.span(),
                "algorithm",
                "flow builds all-to-all only: give it as algorithms = { all-to-all = \"flow\" }".into(),
            ));
        }
    }
    for (kind, a) in &raw.algorithms {
        let k = kind
            .parse::<CollectiveKind>()
            .map_err(|e| at(src, a.span(), &format!("algorithms.{kind}"), e.to_string()))?;
        let chosen = algorithm(a, &format!("algorithms.{kind}"), src)?;
        if chosen == ScheduleAlgorithm::Flow && k != CollectiveKind::AllToAll {
            return Err(at(
                src,
                a.span(),
                &format!("algorithms.{kind}"),
                "flow builds all-to-all only".into(),
            ));
        }
        spec.per_collective.push((k, chosen));
    }
    if let Some(c) = &raw.chunks_per_npu {
        let v = *c.get_ref();
        if !(1..=64).contains(&v) {
            return Err(at(
                src,
                c.span(),
                "chunks_per_npu",
                format!("{v} is not allowed: use 1 to 64"),
            ));
        }
        spec.chunks_per_npu = v as u32;
    }
    if let Some(l) = &raw.link_model {
        spec.link_model = l
            .get_ref()
            .parse::<LinkModel>()
            .map_err(|e| at(src, l.span(), "link_model", e.to_string()))?;
    }
    Ok(())
}

/// A schedule algorithm's name, which must be one `scheduled` builds.
fn algorithm(a: &Spanned<String>, field: &str, src: StudyFile<'_>) -> Result<ScheduleAlgorithm, InputError> {
    scheduled::parse_algorithm(a.get_ref()).map_err(|e| at(src, a.span(), field, e.to_string()))
}

/// The fixed point's tolerance, iteration limit, seed and restarts.
fn fixed_point(raw: &RawEvaluator, spec: &mut scheduled::Spec, src: StudyFile<'_>) -> Result<(), InputError> {
    if let Some(t) = &raw.tolerance {
        let v = *t.get_ref();
        if !(v.is_finite() && v > 0.0 && v < 1.0) {
            return Err(at(
                src,
                t.span(),
                "tolerance",
                format!("{v} is not allowed: use a value in (0, 1)"),
            ));
        }
        spec.tolerance = v;
    }
    if let Some(m) = &raw.max_iterations {
        let v = *m.get_ref();
        if !(1..=1000).contains(&v) {
            return Err(at(
                src,
                m.span(),
                "max_iterations",
                format!("{v} is not allowed: use 1 to 1000"),
            ));
        }
        spec.max_iterations = v as usize;
    }
    if let Some(s) = raw.seed {
        spec.seed = s;
    }
    if let Some(t) = &raw.best_tolerance {
        let given = match t.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Integer(i) => i.to_string(),
            other => other.to_string(),
        };
        spec.best_tolerance = crate::schedule::algorithm::parse_tolerance(&given)
            .map_err(|e| at(src, t.span(), "best_tolerance", e.to_string()))?;
    }
    if let Some(r) = &raw.restarts {
        let v = *r.get_ref();
        if !(1..=1000).contains(&v) {
            return Err(at(
                src,
                r.span(),
                "restarts",
                format!("{v} is not allowed: use 1 to 1000"),
            ));
        }
        spec.restarts = v as u32;
    }
    Ok(())
}

impl super::Study {
    /// Overrides the study's `[evaluator]` with a command line's choices
    /// (`--evaluator`, `--schedule-algorithm`, `--schedule-chunks`), each
    /// refused under its flag, and returns the evaluator in force.
    pub fn override_evaluator(
        &mut self,
        kind: Option<&str>,
        algorithm: Option<&str>,
        chunks: Option<u32>,
    ) -> Result<Evaluator, InputError> {
        if let Some(f) = kind {
            self.evaluator.evaluator = f
                .parse::<Evaluator>()
                .map_err(|e| InputError::arg("--evaluator", e.to_string()))?;
        }
        if let Some(a) = algorithm {
            self.evaluator.algorithm =
                scheduled::parse_algorithm(a).map_err(|e| InputError::arg("--schedule-algorithm", e.to_string()))?;
            self.evaluator.per_collective.clear();
        }
        if let Some(k) = chunks {
            if !(1..=64).contains(&k) {
                return Err(InputError::arg(
                    "--schedule-chunks",
                    format!("{k} is not allowed: use 1 to 64"),
                ));
            }
            self.evaluator.chunks_per_npu = k;
        }
        Ok(self.evaluator.evaluator)
    }
}

//! `[evaluator]`: how collectives are timed — analytically or by simulated
//! schedules (`kind`), the schedule algorithm overall and per collective,
//! chunks per NPU, the link model, and the fixed point's tolerance, iteration
//! limit, seed and restarts.

use super::StudyFile;
use crate::error::{InputError, one_of};
use crate::model::workload::CollectiveKind;
use crate::optimize::scheduled::{self, Evaluator};
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
        spec.evaluator = Evaluator::parse(k.get_ref()).ok_or_else(|| {
            at(
                src,
                k.span(),
                "kind",
                format!(
                    "`{}` is not an evaluator; allowed: {}",
                    k.get_ref(),
                    one_of(&Evaluator::NAMES)
                ),
            )
        })?;
    }
    if let Some(a) = &raw.algorithm {
        spec.algorithm = algorithm(a, "algorithm", src)?;
    }
    for (kind, a) in &raw.algorithms {
        let k = CollectiveKind::NAMES
            .iter()
            .position(|n| n == kind)
            .map(|i| {
                [
                    CollectiveKind::AllReduce,
                    CollectiveKind::ReduceScatter,
                    CollectiveKind::AllGather,
                    CollectiveKind::AllToAll,
                    CollectiveKind::SendRecv,
                ][i]
            })
            .ok_or_else(|| {
                at(
                    src,
                    a.span(),
                    &format!("algorithms.{kind}"),
                    format!(
                        "`{kind}` is not a collective; allowed: {}",
                        one_of(&CollectiveKind::NAMES)
                    ),
                )
            })?;
        spec.per_collective
            .push((k, algorithm(a, &format!("algorithms.{kind}"), src)?));
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
        spec.link_model = LinkModel::parse(l.get_ref()).ok_or_else(|| {
            at(
                src,
                l.span(),
                "link_model",
                format!(
                    "`{}` is not a link model; allowed: {}",
                    l.get_ref(),
                    one_of(&LinkModel::NAMES)
                ),
            )
        })?;
    }
    Ok(())
}

/// A schedule algorithm's name, which must be one `scheduled` builds.
fn algorithm(a: &Spanned<String>, field: &str, src: StudyFile<'_>) -> Result<String, InputError> {
    if scheduled::ALGORITHMS.contains(&a.get_ref().as_str()) {
        Ok(a.get_ref().clone())
    } else {
        Err(at(
            src,
            a.span(),
            field,
            format!(
                "`{}` is not a schedule algorithm; allowed: {}",
                a.get_ref(),
                one_of(&scheduled::ALGORITHMS)
            ),
        ))
    }
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

//! `[[sweep]]`: a sweep over fabric shapes and budgets (total NPUs, the
//! blocks each dimension may take, a budget axis and budgets), and the other
//! study files whose workloads it sweeps too (`workloads`, read without their
//! own sweeps).

use super::frontier::axis;
use super::{Study, StudyFile};
use crate::error::InputError;
use crate::model::fabric::{Block, Fabric};
use crate::model::workload::Workload;
use crate::optimize::frontier::Axis;
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

/// A `[[sweep]]` over fabric shapes and budgets.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    /// Name (the CSV is `sweep-<name>.csv`).
    pub name: String,
    /// Total NPUs to split into the study's number of dimensions.
    pub npus: u64,
    /// Building blocks each dimension may take.
    pub blocks: Vec<Block>,
    /// Budget axis.
    pub axis: Axis,
    /// Budgets on that axis.
    pub budgets: Vec<f64>,
    /// Workloads to sweep besides the study's own (from the study files the
    /// sweep names), each with the fabric its communicators were written for.
    pub workloads: Vec<SweepWorkload>,
}

/// A workload a sweep takes from another study.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepWorkload {
    /// The other study's name.
    pub name: String,
    /// Its workload.
    pub workload: Workload,
    /// Its fabric (where its communicators sit).
    pub fabric: Fabric,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSweep {
    name: String,
    npus: Spanned<i64>,
    blocks: Option<Vec<Block>>,
    axis: Option<Spanned<String>>,
    budgets: Spanned<Vec<f64>>,
    #[serde(default)]
    workloads: Vec<Spanned<String>>,
}

/// Every `[[sweep]]`, in order.
pub(super) fn sweeps(
    raw: &[Spanned<RawSweep>],
    fabric: &Fabric,
    src: StudyFile<'_>,
) -> Result<Vec<SweepSpec>, InputError> {
    raw.iter()
        .enumerate()
        .map(|(i, sw)| sweep(i, sw, fabric, src))
        .collect()
}

/// The study files the sweeps name, in order, as paths.
pub(super) fn study_files<'a>(raw: &'a [Spanned<RawSweep>], src: StudyFile<'a>) -> impl Iterator<Item = PathBuf> + 'a {
    raw.iter()
        .flat_map(|sw| &sw.get_ref().workloads)
        .map(move |w| src.dir().join(w.get_ref()))
}

/// `[[sweep]]` number `i`: 4 to 2^30 NPUs, budgets > 0, a name usable in a
/// file name, the other studies' workloads, the axis.
fn sweep(i: usize, sw: &Spanned<RawSweep>, fabric: &Fabric, src: StudyFile<'_>) -> Result<SweepSpec, InputError> {
    let r = sw.get_ref();
    let npus = *r.npus.get_ref();
    if !(4..=1 << 30).contains(&npus) {
        return Err(src.at(
            r.npus.span(),
            format!("sweep[{i}].npus"),
            format!("{npus} is not allowed: use 4 to 2^30 NPUs"),
        ));
    }
    let budgets = r.budgets.get_ref().clone();
    if budgets.is_empty() || budgets.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
        return Err(src.at(
            r.budgets.span(),
            format!("sweep[{i}].budgets"),
            "list at least one budget, each > 0",
        ));
    }
    if r.name.is_empty()
        || !r
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(src.at(
            sw.span(),
            format!("sweep[{i}].name"),
            format!("`{}` is not usable in a file name: use letters, digits, - or _", r.name),
        ));
    }
    let mut workloads = Vec::new();
    for (j, w) in r.workloads.iter().enumerate() {
        workloads.push(sweep_workload(w, format!("sweep[{i}].workloads[{j}]"), fabric, src)?);
    }
    Ok(SweepSpec {
        workloads,
        name: r.name.clone(),
        npus: npus as u64,
        blocks: r
            .blocks
            .clone()
            .unwrap_or_else(|| vec![Block::Ring, Block::FullyConnected, Block::Switch]),
        axis: axis(&r.axis, format!("sweep[{i}].axis"), src)?,
        budgets,
    })
}

/// The workload of another study file (not this one), read without its
/// sweeps; its fabric must have as many dimensions as `fabric`.
fn sweep_workload(
    w: &Spanned<String>,
    field: String,
    fabric: &Fabric,
    src: StudyFile<'_>,
) -> Result<SweepWorkload, InputError> {
    let file = src.dir().join(w.get_ref());
    if file == src.path {
        return Err(src.at(w.span(), field, "a sweep cannot name its own study"));
    }
    let other = Study::load_with(&file, false)
        .map_err(|e| src.at(w.span(), field.clone(), format!("cannot use `{}`: {e}", w.get_ref())))?;
    if other.fabric.ndims() != fabric.ndims() {
        return Err(src.at(
            w.span(),
            field,
            format!(
                "`{}` has {} dimensions, this study {}: a sweep keeps the number of dimensions",
                w.get_ref(),
                other.fabric.ndims(),
                fabric.ndims()
            ),
        ));
    }
    Ok(SweepWorkload {
        name: other.name,
        workload: other.workload,
        fabric: other.fabric,
    })
}

impl Study {
    /// The study's `[[sweep]]`s named `name` (every one without a name);
    /// none is an error naming the ones the study has.
    pub fn sweeps_named(&self, name: Option<&str>) -> Result<Vec<&SweepSpec>, InputError> {
        let sweeps: Vec<&SweepSpec> = self
            .sweeps
            .iter()
            .filter(|s| name.is_none_or(|n| n == s.name))
            .collect();
        if !sweeps.is_empty() {
            return Ok(sweeps);
        }
        let names: Vec<&str> = self.sweeps.iter().map(|s| s.name.as_str()).collect();
        Err(InputError::arg(
            "--name",
            if names.is_empty() {
                format!("study `{}` declares no [[sweep]]", self.name)
            } else {
                format!(
                    "no sweep named `{}`; the study has {}",
                    name.unwrap_or_default(),
                    crate::error::one_of(&names)
                )
            },
        ))
    }
}

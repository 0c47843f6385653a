//! `[[alternative]]`: whole fabrics a person names, to be bought and
//! compared with the study's own by `run` (`pipeline::shapes`). Each has a
//! `name` and its own `[[alternative.dims]]`, read by the code that reads
//! `[[fabric.dims]]` (its errors' fields `alternative[1].dims[0].npus`),
//! and must join the study's number of NPUs.
//!
//! `[procurement.dims.<name>]` applies by dimension name to every shape
//! that has the dimension (a name no shape has is an error, as for the
//! study's fabric alone); dimensions without an entry get the catalog's
//! defaults. A dimension that names no cost tier is priced from its parts
//! on its own shape. The study's workload is placed on each shape: a
//! generated one (`[model]`, `[npu]`, `[parallelism]`) is generated again
//! on the shape, a written one has its communicators re-placed in rank
//! order (`Workload::replaced`, as sweeps do); a shape it cannot be placed
//! on keeps the reason ([`Unplaced`]) and is reported as infeasible, not
//! refused.

use super::fabric::{self, RawCost, RawDim};
use super::procurement::{self, RawProcurement};
use super::workload::Generator;
use super::{Refusal, StudyFile};
use crate::error::InputError;
use crate::model::bom::Procurement;
use crate::model::collective::CollectiveModel;
use crate::model::cost::CostModel;
use crate::model::fabric::Fabric;
use crate::model::transformer::{self, StrategyError};
use crate::model::workload::Workload;
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlternative {
    name: Spanned<String>,
    dims: Spanned<Vec<Spanned<RawDim>>>,
}

impl RawAlternative {
    /// The names of its dimensions, as written.
    fn dim_names(&self) -> impl Iterator<Item = &str> {
        self.dims.get_ref().iter().map(|d| d.get_ref().name.as_str())
    }
}

/// The name of the study's own fabric among the shapes `run` compares.
pub const FABRIC_SHAPE: &str = "fabric";

/// Why the study's workload cannot run on a shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unplaced {
    /// The generated workload's strategy does not fit the shape.
    #[error("the study's [parallelism] does not fit {shape}: {source}")]
    Strategy {
        /// The shape.
        shape: String,
        /// Why.
        source: StrategyError,
    },
    /// A written workload's communicator does not tile the shape's
    /// dimensions in rank order.
    #[error(
        "a communicator of the study's [workload] cannot be placed on {shape} in rank order (its group does not tile the dimensions)"
    )]
    Communicators {
        /// The shape.
        shape: String,
    },
}

/// One `[[alternative]]`: a whole fabric, bought and priced like the
/// study's own, with the study's workload placed on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// Its name.
    pub name: String,
    /// The fabric (server dimensions fixed at their server's bandwidth).
    pub fabric: Fabric,
    /// The linear cost tiers (the study's, with tiers derived from the
    /// catalog for this fabric's dimensions that name none).
    pub cost: CostModel,
    /// The study's collective model with this fabric's algorithms.
    pub collective: CollectiveModel,
    /// `[procurement]` for this fabric: the catalog, budgets, and the
    /// entries of the dimensions it has.
    pub procurement: Procurement,
    /// The study's workload on this fabric, or why it cannot be placed.
    pub workload: Result<Workload, Unplaced>,
}

/// What every alternative is read against: the study's sections.
pub(super) struct Against<'a> {
    /// The study's own fabric's name among the shapes.
    pub(super) own: &'a str,
    /// The study's fabric.
    pub(super) fabric: &'a Fabric,
    /// `[cost]` as written.
    pub(super) cost: &'a RawCost,
    /// `[procurement]` as written.
    pub(super) procurement: Option<&'a RawProcurement>,
    /// `[model]`, `[npu]`, `[parallelism]`.
    pub(super) generator: &'a Generator,
    /// The study's workload (on its fabric).
    pub(super) workload: &'a Workload,
    /// The study's collective model.
    pub(super) collective: &'a CollectiveModel,
}

/// The dimension names of every alternative, for `[procurement.dims.*]`
/// entries that the study's fabric lacks.
pub(super) fn dim_names(raw: &[Spanned<RawAlternative>]) -> Vec<&str> {
    raw.iter().flat_map(|a| a.get_ref().dim_names()).collect()
}

/// Every `[[alternative]]`, checked in order.
pub(super) fn alternatives(
    raw: &[Spanned<RawAlternative>],
    on: &Against<'_>,
    src: StudyFile<'_>,
) -> Result<Vec<Alternative>, InputError> {
    let mut out: Vec<Alternative> = Vec::new();
    for (i, sa) in raw.iter().enumerate() {
        let a = sa.get_ref();
        let field = |f: &str| format!("alternative[{i}].{f}");
        let name = a.name.get_ref();
        check_name(name, on.own, &out).map_err(|r| src.at(a.name.span(), field("name"), r.to_string()))?;
        let Some(raw_p) = on.procurement else {
            return Err(src.at(
                sa.span(),
                format!("alternative[{i}]"),
                "shapes are compared as bought: add [procurement] (its budgets apply to every shape)",
            ));
        };
        let prefix = field("dims");
        let (mut fab, algorithms) = fabric::fabric_at(&a.dims, &prefix, on.cost, src)?;
        let (n, want) = (fab.npus(), on.fabric.npus());
        if n != want {
            return Err(src.at(
                a.dims.span(),
                prefix,
                format!(
                    "{} has {n} NPUs but the study's fabric ({}) has {want}: an alternative joins the same NPUs",
                    fab.shape(),
                    on.fabric.shape()
                ),
            ));
        }
        // Entries of the other shapes' dimensions are theirs.
        let mut elsewhere: Vec<&str> = on.fabric.dims.iter().map(|d| d.name.as_str()).collect();
        for (j, other) in raw.iter().enumerate() {
            if j != i {
                elsewhere.extend(other.get_ref().dim_names());
            }
        }
        let spec = procurement::procurement_spec_among(raw_p, &fab, &elsewhere, src)?;
        let mut cost = CostModel {
            tiers: on.cost.tiers.clone(),
        };
        procurement::apply_servers(raw_p, &spec, &mut fab, &mut cost, src)?;
        fabric::fat_trees_at(&a.dims, &prefix, &mut fab, &spec, src)?;
        fabric::derive_tiers_at(&a.dims, &prefix, &fab, &mut cost, &spec, src)?;
        let workload = placed(on, &fab);
        out.push(Alternative {
            name: name.clone(),
            collective: CollectiveModel {
                algorithms,
                ..on.collective.clone()
            },
            fabric: fab,
            cost,
            procurement: spec,
            workload,
        });
    }
    Ok(out)
}

/// The study's own fabric's name among the shapes: `[fabric] name`, a
/// usable name ([`usable`]), else [`FABRIC_SHAPE`].
pub(super) fn fabric_name(raw: Option<&Spanned<String>>, src: StudyFile<'_>) -> Result<String, InputError> {
    let Some(n) = raw else {
        return Ok(FABRIC_SHAPE.into());
    };
    usable(n.get_ref()).map_err(|r| src.at(n.span(), "fabric.name", r.to_string()))?;
    Ok(n.get_ref().clone())
}

/// A shape's name is printable in a CSV cell: letters, digits, `-`, `_`,
/// `.`, `+`.
fn usable(name: &str) -> Result<(), Refusal> {
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || "-_.+".contains(c)) {
        return Err(Refusal::new(format!(
            "`{name}` is not a usable name: use letters, digits, -, _, . or +"
        )));
    }
    Ok(())
}

/// An alternative's name: usable, unique, and not the study's own
/// fabric's (`own`).
fn check_name(name: &str, own: &str, before: &[Alternative]) -> Result<(), Refusal> {
    usable(name)?;
    if name == own {
        return Err(Refusal::new(format!(
            "`{name}` is the study's own fabric's name among the shapes: choose another"
        )));
    }
    if before.iter().any(|b| b.name == name) {
        return Err(Refusal::new(format!(
            "`{name}` names two alternatives: names must be unique"
        )));
    }
    Ok(())
}

/// The study's workload on `fabric`: generated again from the study's
/// strategy, or a written one's communicators re-placed in rank order.
fn placed(on: &Against<'_>, fabric: &Fabric) -> Result<Workload, Unplaced> {
    let g = on.generator;
    match (&g.model, &g.npu, &g.parallelism) {
        (Some(m), Some(n), Some(s)) => transformer::generate(m, n, s, fabric)
            .map(|g| g.workload)
            .map_err(|source| Unplaced::Strategy {
                shape: fabric.shape(),
                source,
            }),
        _ => {
            let npus: Vec<u32> = fabric.dims.iter().map(|d| d.npus).collect();
            on.workload
                .replaced(on.fabric, &npus)
                .ok_or_else(|| Unplaced::Communicators { shape: fabric.shape() })
        }
    }
}

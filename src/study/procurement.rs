//! `[procurement]`: what the fabric is bought from — the catalog (built in,
//! or a file named by `catalog`), capex and power budgets, and per dimension
//! (`[procurement.dims.<name>]`) the allowed ports, cable reach and most ports.

use super::StudyFile;
use crate::error::{InputError, one_of};
use crate::model::bom::{DimSpec, Procurement};
use crate::model::catalog::Catalog;
use crate::model::fabric::{Block, Fabric};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProcurement {
    pub(super) catalog: Option<Spanned<String>>,
    budget_usd: Option<Spanned<f64>>,
    budget_w: Option<Spanned<f64>>,
    #[serde(default)]
    dims: BTreeMap<String, Spanned<RawProcDim>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProcDim {
    ports: Option<Spanned<Vec<String>>>,
    reach_m: Option<Spanned<f64>>,
    spine_reach_m: Option<Spanned<f64>>,
    max_ports: Option<Spanned<i64>>,
}

/// An error in `[procurement]`, at the line of `span`.
fn at(src: StudyFile<'_>, span: std::ops::Range<usize>, field: &str, msg: String) -> InputError {
    src.at(span, format!("procurement.{field}"), msg)
}

/// The `[procurement]` section, checked: the catalog, then each named
/// dimension (others keep their block's defaults), then the budgets.
pub(super) fn procurement_spec(
    raw: &RawProcurement,
    fabric: &Fabric,
    src: StudyFile<'_>,
) -> Result<Procurement, InputError> {
    let catalog = match &raw.catalog {
        None => Catalog::builtin(),
        Some(c) => {
            let f = src.dir().join(c.get_ref());
            Catalog::load(&f).map_err(|e| at(src, c.span(), "catalog", format!("cannot use `{}`: {e}", c.get_ref())))?
        }
    };
    let mut dims: Vec<DimSpec> = (0..fabric.dims.len())
        .map(|d| DimSpec::default_in(fabric, d, &catalog))
        .collect();
    for (name, sd) in &raw.dims {
        let Some(d) = fabric.dims.iter().position(|x| &x.name == name) else {
            let names: Vec<&str> = fabric.dims.iter().map(|x| x.name.as_str()).collect();
            return Err(at(
                src,
                sd.span(),
                &format!("dims.{name}"),
                format!("`{name}` is not a dimension; the fabric has {}", one_of(&names)),
            ));
        };
        dim_spec(name, sd.get_ref(), fabric.dims[d].block, &mut dims[d], &catalog, src)?;
    }
    Ok(Procurement {
        catalog,
        dims,
        budget_usd: budget(&raw.budget_usd, "budget_usd", src)?,
        budget_w: budget(&raw.budget_w, "budget_w", src)?,
    })
}

/// A budget, if given: > 0.
fn budget(b: &Option<Spanned<f64>>, field: &str, src: StudyFile<'_>) -> Result<Option<f64>, InputError> {
    match b {
        None => Ok(None),
        Some(v) => {
            let x = *v.get_ref();
            if x.is_finite() && x > 0.0 {
                Ok(Some(x))
            } else {
                Err(at(
                    src,
                    v.span(),
                    field,
                    format!("{x} is not allowed: use a budget > 0"),
                ))
            }
        }
    }
}

/// `[procurement.dims.<name>]` (a `block` dimension) over `spec`:
/// ports from the catalog that build the dimension's block, reaches > 0 m,
/// 1 to 4096 ports.
fn dim_spec(
    name: &str,
    r: &RawProcDim,
    block: Block,
    spec: &mut DimSpec,
    catalog: &Catalog,
    src: StudyFile<'_>,
) -> Result<(), InputError> {
    let field = |f: &str| format!("dims.{name}.{f}");
    if let Some(ports) = &r.ports {
        for p in ports.get_ref() {
            match catalog.port(p) {
                None => {
                    let known: Vec<&str> = catalog.ports.iter().map(|x| x.name.as_str()).collect();
                    return Err(at(
                        src,
                        ports.span(),
                        &field("ports"),
                        format!("`{p}` is not a port in the catalog; it has {}", one_of(&known)),
                    ));
                }
                Some(port) if !port.blocks.contains(&block) => {
                    return Err(at(
                        src,
                        ports.span(),
                        &field("ports"),
                        format!(
                            "`{p}` does not build a {} dimension (it builds {})",
                            block.name(),
                            port.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        spec.ports = ports.get_ref().clone();
    }
    for (f, v, slot) in [("reach_m", &r.reach_m, 0), ("spine_reach_m", &r.spine_reach_m, 1)] {
        if let Some(v) = v {
            let x = *v.get_ref();
            if !(x.is_finite() && x > 0.0) {
                return Err(at(
                    src,
                    v.span(),
                    &field(f),
                    format!("{x} is not allowed: use a length > 0 m"),
                ));
            }
            if slot == 0 {
                spec.reach_m = x;
            } else {
                spec.spine_reach_m = x;
            }
        }
    }
    if let Some(m) = &r.max_ports {
        let x = *m.get_ref();
        if !(1..=4096).contains(&x) {
            return Err(at(
                src,
                m.span(),
                &field("max_ports"),
                format!("{x} is not allowed: use 1 to 4096"),
            ));
        }
        spec.max_ports = x as u32;
    }
    Ok(())
}

//! `[procurement]`: what the fabric is bought from — the catalog (built in,
//! or a file named by `catalog`), capex and power budgets, and per dimension
//! (`[procurement.dims.<name>]`) the allowed ports, the technology
//! (`tech`), cable reach and most ports, or the server whose scale-up
//! fabric the dimension is (`server`: its bandwidth fixed at the server's,
//! nothing bought for it from the network).

use super::{Refusal, StudyFile};
use crate::error::{InputError, one_of};
use crate::model::bom::{DimSpec, Procurement};
use crate::model::catalog::{Catalog, TECHS, tech_kind};
use crate::model::cost::{CostModel, Tier};
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
    tech: Option<Spanned<String>>,
    server: Option<Spanned<String>>,
}

/// An error in `[procurement]`, at the line of `span`.
fn at(src: StudyFile<'_>, span: std::ops::Range<usize>, field: &str, msg: String) -> InputError {
    src.at(span, format!("procurement.{field}"), msg)
}

/// The `[procurement]` section, checked: the catalog, then each named
/// dimension (others keep their block's defaults), then the budgets.
///
/// For one of several shapes (the study's fabric and its
/// `[[alternative]]`s): a `[procurement.dims.<name>]` that this fabric
/// lacks but `elsewhere` (the other shapes' dimension names) has is left
/// to those shapes.
pub(super) fn procurement_spec_among(
    raw: &RawProcurement,
    fabric: &Fabric,
    elsewhere: &[&str],
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
            if elsewhere.contains(&name.as_str()) {
                continue;
            }
            let mut names: Vec<&str> = fabric.dims.iter().map(|x| x.name.as_str()).collect();
            for n in elsewhere {
                if !names.contains(n) {
                    names.push(n);
                }
            }
            return Err(at(
                src,
                sd.span(),
                &format!("dims.{name}"),
                format!("`{name}` is not a dimension; the fabric has {}", one_of(&names)),
            ));
        };
        dim_spec(name, sd.get_ref(), fabric.dims[d].block, &mut dims[d], &catalog, src)?;
        if let Some(server) = &sd.get_ref().server {
            if let Some(other) = dims.iter().position(|x| x.server.is_some()) {
                return Err(at(
                    src,
                    server.span(),
                    &format!("dims.{name}.server"),
                    format!(
                        "`{}` already comes with a server: one dimension per fabric is the servers' scale-up domain",
                        fabric.dims[other].name
                    ),
                ));
            }
            dims[d].server = Some(server_spec(name, server, sd.get_ref(), fabric, d, &catalog, src)?);
        }
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
    if let Some(t) = &r.tech {
        let Some(kind) = tech_kind(t.get_ref()) else {
            let names: Vec<&str> = TECHS.iter().map(|(n, _)| *n).collect();
            return Err(at(
                src,
                t.span(),
                &field("tech"),
                format!("`{}` is not a technology; allowed: {}", t.get_ref(), one_of(&names)),
            ));
        };
        if !catalog
            .ports
            .iter()
            .any(|p| p.kind == kind && p.blocks.contains(&block))
        {
            return Err(at(
                src,
                t.span(),
                &field("tech"),
                format!(
                    "the catalog has no `{}` port that builds a {} dimension",
                    t.get_ref(),
                    block.name()
                ),
            ));
        }
        spec.tech = Some(kind.to_string());
        // The technology replaces the default port list (NICs of every kind).
        spec.ports.clear();
    }
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
                Some(port) if spec.tech.as_ref().is_some_and(|t| *t != port.kind) => {
                    return Err(at(
                        src,
                        ports.span(),
                        &field("ports"),
                        format!(
                            "`{p}` is {}, not the `{}` that tech asks for",
                            port.kind,
                            r.tech.as_ref().map_or("", |t| t.get_ref().as_str())
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

/// `[procurement.dims.<name>] server`: a catalog server whose scale-up
/// domain is the dimension with the dimensions inside it; no ports, tech
/// or reaches beside it (nothing is bought for the dimension).
fn server_spec(
    name: &str,
    server: &Spanned<String>,
    r: &RawProcDim,
    fabric: &Fabric,
    d: usize,
    catalog: &Catalog,
    src: StudyFile<'_>,
) -> Result<crate::model::catalog::Server, InputError> {
    let field = format!("dims.{name}.server");
    let Some(s) = catalog.server(server.get_ref()) else {
        let known: Vec<&str> = catalog.servers.iter().map(|x| x.name.as_str()).collect();
        return Err(at(
            src,
            server.span(),
            &field,
            format!(
                "`{}` is not a server in the catalog; it has {}",
                server.get_ref(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    one_of(&known)
                }
            ),
        ));
    };
    if r.ports.is_some()
        || r.tech.is_some()
        || r.max_ports.is_some()
        || r.reach_m.is_some()
        || r.spine_reach_m.is_some()
    {
        return Err(at(
            src,
            server.span(),
            &field,
            format!(
                "`{name}` comes with `{}`: nothing is bought for it, so drop ports, tech, max_ports and the reaches",
                s.name
            ),
        ));
    }
    if d > 0 {
        return Err(at(
            src,
            server.span(),
            &field,
            format!(
                "`{}` ships the innermost fabric of its GPUs, but `{name}` has `{}` inside it: name the server on the first dimension (the dimensions inside a server would be bought twice)",
                s.name, fabric.dims[0].name
            ),
        ));
    }
    let npus = fabric.dims[0].npus;
    if npus != s.domain {
        return Err(at(
            src,
            server.span(),
            &field,
            format!(
                "`{}` joins {} GPUs in one scale-up domain, but `{name}` spans {npus} NPUs",
                s.name, s.domain
            ),
        ));
    }
    Ok(s.clone())
}

/// Fixes every server dimension of `fabric` at its server's bandwidth
/// (its bounds set to it: a `min_gbps`, `max_gbps` or `options_gbps` that
/// disagrees is refused with both values), takes the server's latency
/// where the dimension sets none, and prices it at zero in the linear
/// model (`cost`: a tier `<dim>.server` of zeros): the servers are bought
/// beside the network, not from its budget.
pub(super) fn apply_servers(
    raw: &RawProcurement,
    spec: &Procurement,
    fabric: &mut Fabric,
    cost: &mut CostModel,
    src: StudyFile<'_>,
) -> Result<(), InputError> {
    for (d, ds) in spec.dims.iter().enumerate() {
        let Some(server) = &ds.server else { continue };
        let dim = &mut fabric.dims[d];
        let span = raw.dims.get(&dim.name).map_or(0..0, |x| x.span());
        let b = server.gbps();
        let off = |x: f64| (x - b).abs() > 1e-9 * b;
        let mut disagree = Vec::new();
        for (key, v) in [("min_gbps", dim.min_gbps), ("max_gbps", dim.max_gbps)] {
            if let Some(x) = v.filter(|x| off(*x)) {
                disagree.push(format!("{key} = {x}"));
            }
        }
        if let Some(o) = &dim.options_gbps
            && !o.iter().any(|x| !off(*x))
        {
            disagree.push(format!("options_gbps = {o:?}"));
        }
        if !disagree.is_empty() {
            return Err(at(
                src,
                span,
                &format!("dims.{}.server", dim.name),
                format!(
                    "`{}` ships {b} GB/s per GPU ({} Gb/s) on `{}`, but the fabric sets {}: drop the bound or make it {b}",
                    server.name,
                    server.scale_up_gbits,
                    dim.name,
                    disagree.join(" and ")
                ),
            ));
        }
        dim.min_gbps = Some(b);
        dim.max_gbps = Some(b);
        dim.options_gbps = None;
        if dim.latency_ns == 0.0 {
            dim.latency_ns = server.latency_ns;
        }
        dim.tier = format!("{}.server", dim.name);
        cost.tiers.insert(dim.tier.clone(), Tier::default());
    }
    Ok(())
}

/// The study's `bw` (or a case's) on every server dimension equals the
/// server's bandwidth; `Err` names the first that does not.
pub(super) fn check_server_bw(spec: &Procurement, fabric: &Fabric, bw: &[f64]) -> Result<(), Refusal> {
    for (d, ds) in spec.dims.iter().enumerate() {
        if let Some(server) = &ds.server {
            let b = server.gbps();
            if (bw[d] - b).abs() > 1e-9 * b {
                return Err(Refusal::new(format!(
                    "{} GB/s on `{}`, but `{}` ships {b} GB/s per GPU ({} Gb/s) there: use {b}",
                    bw[d], fabric.dims[d].name, server.name, server.scale_up_gbits
                )));
            }
        }
    }
    Ok(())
}

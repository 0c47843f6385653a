//! The `[fabric]` and `[cost]` sections: `[[fabric.dims]]` (each dimension's
//! name, block, NPU count, latency, bandwidth bounds and options, cost tier
//! and collective algorithm) and `[cost.tiers.<name>]` (the $ and pJ/bit per
//! GB/s of each tier); and the check of an allocation (`bw`, `[[case]]`,
//! `--bw`) against the fabric.

use super::{Gbps, Refusal, StudyFile, find_line, gbps_values, zero};
use crate::error::{InputError, one_of};
use crate::model::bom::{self, Procurement};
use crate::model::collective::Algorithm;
use crate::model::cost::{CostModel, Tier};
use crate::model::fabric::{Block, Dim, Fabric, FatTree, Rails};
use crate::model::fattree;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFabric {
    /// The fabric's name among the shapes `run` compares (`[fabric] name`).
    pub(super) name: Option<Spanned<String>>,
    pub(super) dims: Spanned<Vec<Spanned<RawDim>>>,
}

/// A dimension's `block`: one of the model's, or `fat-tree` (a switch
/// dimension with a `FatTree`).
#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum RawBlock {
    Ring,
    FullyConnected,
    Switch,
    FatTree,
}

impl RawBlock {
    fn block(self) -> Block {
        match self {
            RawBlock::Ring => Block::Ring,
            RawBlock::FullyConnected => Block::FullyConnected,
            RawBlock::Switch | RawBlock::FatTree => Block::Switch,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDim {
    pub(super) name: String,
    block: Spanned<RawBlock>,
    levels: Option<Spanned<i64>>,
    oversubscription: Option<Spanned<Vec<f64>>>,
    rails: Option<Spanned<Rails>>,
    npus: Spanned<i64>,
    #[serde(default = "zero")]
    latency_ns: Spanned<f64>,
    min_gbps: Option<Spanned<Gbps>>,
    max_gbps: Option<Spanned<Gbps>>,
    tier: Option<Spanned<String>>,
    algorithm: Option<Spanned<Algorithm>>,
    options_gbps: Option<Spanned<Vec<Gbps>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCost {
    #[serde(default)]
    pub(super) tiers: BTreeMap<String, Tier>,
}

/// The fabric and each dimension's collective algorithm, every dimension
/// checked in order (its tier must be one of `cost`'s); then the cost tiers'
/// values.
pub(super) fn fabric(
    raw: &RawFabric,
    cost: &RawCost,
    src: StudyFile<'_>,
) -> Result<(Fabric, Vec<Algorithm>), InputError> {
    fabric_at(&raw.dims, "fabric.dims", cost, src)
}

/// [`fabric`] from its dimensions' table, its errors' fields under `prefix`
/// (`fabric.dims`, or an `[[alternative]]`'s `alternative[1].dims`).
pub(super) fn fabric_at(
    raw_dims: &Spanned<Vec<Spanned<RawDim>>>,
    prefix: &str,
    cost: &RawCost,
    src: StudyFile<'_>,
) -> Result<(Fabric, Vec<Algorithm>), InputError> {
    if raw_dims.get_ref().is_empty() {
        return Err(src.at(raw_dims.span(), prefix, "the fabric needs at least one dimension"));
    }
    let mut dims = Vec::new();
    let mut algorithms = Vec::new();
    for (i, sd) in raw_dims.get_ref().iter().enumerate() {
        let (dim, algorithm) = dim(prefix, i, sd, &dims, cost, src)?;
        algorithms.push(algorithm);
        dims.push(dim);
    }
    let fabric = Fabric { dims };
    fabric_npus_fit(&fabric).map_err(|r| src.at(raw_dims.span(), prefix, r.to_string()))?;
    check_tiers(cost, src)?;
    Ok((fabric, algorithms))
}

/// Every dimension without a tier of its own (no `tier` key and no
/// `[cost.tiers.<name>]`) gets the tier its catalog parts imply
/// (`bom::cheapest_tier`), entered into `cost` under the dimension's name;
/// returns the names of the dimensions so priced.
pub(super) fn derive_tiers(
    raw: &RawFabric,
    fabric: &Fabric,
    cost: &mut CostModel,
    parts: &Procurement,
    src: StudyFile<'_>,
) -> Result<Vec<String>, InputError> {
    derive_tiers_at(&raw.dims, "fabric.dims", fabric, cost, parts, src)
}

/// [`derive_tiers`] from the dimensions' table, errors under `prefix`.
pub(super) fn derive_tiers_at(
    raw_dims: &Spanned<Vec<Spanned<RawDim>>>,
    prefix: &str,
    fabric: &Fabric,
    cost: &mut CostModel,
    parts: &Procurement,
    src: StudyFile<'_>,
) -> Result<Vec<String>, InputError> {
    let mut derived = Vec::new();
    for (d, dim) in fabric.dims.iter().enumerate() {
        if cost.tiers.contains_key(&dim.tier) {
            continue;
        }
        let Some(tier) = bom::cheapest_tier(fabric, parts, d) else {
            return Err(src.at(
                raw_dims.get_ref()[d].span(),
                format!("{prefix}[{d}].tier"),
                format!(
                    "dimension `{}` names no cost tier and the catalog sells nothing to build it: add a tier in [cost.tiers] or parts in [procurement.dims.{}]",
                    dim.name, dim.name
                ),
            ));
        };
        cost.tiers.insert(dim.tier.clone(), tier);
        derived.push(dim.name.clone());
    }
    Ok(derived)
}

/// `[[fabric.dims]]` number `i` (its fields under `prefix`), given the
/// dimensions before it.
fn dim(
    prefix: &str,
    i: usize,
    sd: &Spanned<RawDim>,
    before: &[Dim],
    cost: &RawCost,
    src: StudyFile<'_>,
) -> Result<(Dim, Algorithm), InputError> {
    let d = sd.get_ref();
    let field = |f: &str| format!("{prefix}[{i}].{f}");
    let npus = *d.npus.get_ref();
    if npus < 2 || npus > i64::from(u32::MAX) {
        return Err(src.at(
            d.npus.span(),
            field("npus"),
            format!("{npus} NPUs is not allowed: a dimension has from 2 to 4294967295 NPUs"),
        ));
    }
    if before.iter().any(|x| x.name == d.name) {
        return Err(src.at(
            sd.span(),
            field("name"),
            format!("`{}` names two dimensions: names must be unique", d.name),
        ));
    }
    if d.name.parse::<f64>().is_ok() || d.name.is_empty() || d.name.contains(char::is_whitespace) {
        return Err(src.at(
            sd.span(),
            field("name"),
            format!("`{}` is not a usable name: use letters, digits, - or _", d.name),
        ));
    }
    let latency = *d.latency_ns.get_ref();
    if !(latency.is_finite() && latency >= 0.0) {
        return Err(src.at(
            d.latency_ns.span(),
            field("latency_ns"),
            format!("{latency} is not allowed: use a latency >= 0"),
        ));
    }
    for (name, b) in [("min_gbps", &d.min_gbps), ("max_gbps", &d.max_gbps)] {
        if let Some(b) = b {
            let v = b.get_ref().0;
            if !(v.is_finite() && v >= 0.0) {
                return Err(src.at(
                    b.span(),
                    field(name),
                    format!("{v} is not allowed: use a bandwidth >= 0 GB/s"),
                ));
            }
        }
    }
    if let (Some(lo), Some(hi)) = (&d.min_gbps, &d.max_gbps)
        && lo.get_ref().0 > hi.get_ref().0
    {
        return Err(src.at(
            hi.span(),
            field("max_gbps"),
            format!("{} is below min_gbps {}", hi.get_ref().0, lo.get_ref().0),
        ));
    }
    let tier = d.tier.as_ref().map_or(d.name.clone(), |t| t.get_ref().clone());
    // A dimension that names no tier and has none under its own name is
    // priced from the catalog (`Study::parse`); a tier named must exist.
    if d.tier.is_some() && !cost.tiers.contains_key(&tier) {
        let span = d.tier.as_ref().map_or(sd.span(), |t| t.span());
        let known: Vec<&str> = cost.tiers.keys().map(String::as_str).collect();
        return Err(src.at(
            span,
            field("tier"),
            format!(
                "cost tier `{tier}` is not defined in [cost.tiers]; defined: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    one_of(&known)
                }
            ),
        ));
    }
    let options = options(d, &field, src)?;
    let algorithm = algorithm(d, &field, src)?;
    let fat_tree = fat_tree(d, &field, src)?;
    let dim = Dim {
        name: d.name.clone(),
        block: d.block.get_ref().block(),
        npus: npus as u32,
        latency_ns: latency,
        min_gbps: d.min_gbps.as_ref().map(|b| b.get_ref().0),
        max_gbps: d.max_gbps.as_ref().map(|b| b.get_ref().0),
        tier,
        options_gbps: options,
        fat_tree,
    };
    Ok((dim, algorithm))
}

/// A dimension's `options_gbps`, sorted without repeats.
fn options(d: &RawDim, field: &dyn Fn(&str) -> String, src: StudyFile<'_>) -> Result<Option<Vec<f64>>, InputError> {
    let Some(o) = &d.options_gbps else {
        return Ok(None);
    };
    let mut v = gbps_values(o.get_ref());
    if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return Err(src.at(
            o.span(),
            field("options_gbps"),
            "list at least one bandwidth, each > 0 GB/s",
        ));
    }
    v.sort_by(f64::total_cmp);
    v.dedup();
    Ok(Some(v))
}

/// A dimension's `algorithm`, which must run on its block (default: the
/// block's own).
fn algorithm(d: &RawDim, field: &dyn Fn(&str) -> String, src: StudyFile<'_>) -> Result<Algorithm, InputError> {
    let block = d.block.get_ref().block();
    let Some(a) = &d.algorithm else {
        return Ok(Algorithm::default_for(block));
    };
    if !a.get_ref().fits(block) {
        return Err(src.at(
            a.span(),
            field("algorithm"),
            format!(
                "`{}` does not run on a {} dimension: use {}",
                a.get_ref(),
                block,
                one_of(Algorithm::allowed(block))
            ),
        ));
    }
    Ok(*a.get_ref())
}

/// A dimension's fat-tree keys (`levels`, `oversubscription`, `rails`):
/// only on `block = "fat-tree"`; levels from 1 to `fattree::MAX_LEVELS`,
/// every oversubscription finite and >= 1. The radix is set once the
/// catalog is known ([`fat_trees`]).
fn fat_tree(d: &RawDim, field: &dyn Fn(&str) -> String, src: StudyFile<'_>) -> Result<Option<FatTree>, InputError> {
    if *d.block.get_ref() != RawBlock::FatTree {
        let keys = [
            ("levels", d.levels.as_ref().map(Spanned::span)),
            ("oversubscription", d.oversubscription.as_ref().map(Spanned::span)),
            ("rails", d.rails.as_ref().map(Spanned::span)),
        ];
        if let Some((key, Some(span))) = keys.into_iter().find(|(_, s)| s.is_some()) {
            return Err(src.at(
                span,
                field(key),
                format!(
                    "`{key}` is a fat-tree key, but the block is {}: use block = \"fat-tree\" or drop `{key}`",
                    d.block.get_ref().block()
                ),
            ));
        }
        return Ok(None);
    }
    let levels = match &d.levels {
        None => None,
        Some(l) => {
            let v = *l.get_ref();
            if !(1..=i64::from(fattree::MAX_LEVELS)).contains(&v) {
                return Err(src.at(
                    l.span(),
                    field("levels"),
                    format!("{v} levels is not allowed: use 1 to {}", fattree::MAX_LEVELS),
                ));
            }
            Some(v as u32)
        }
    };
    let oversubscription = match &d.oversubscription {
        None => Vec::new(),
        Some(o) => {
            if let Some(x) = o
                .get_ref()
                .iter()
                .find(|x| !(x.is_finite() && **x >= 1.0 && **x <= 1e6))
            {
                return Err(src.at(
                    o.span(),
                    field("oversubscription"),
                    format!("{x} is not allowed: each level's down:up ratio is from 1 (non-blocking) to 1e6"),
                ));
            }
            o.get_ref().clone()
        }
    };
    Ok(Some(FatTree {
        levels,
        oversubscription,
        rails: d.rails.as_ref().map_or(Rails::PerGroup, |r| *r.get_ref()),
        radix: 0,
    }))
}

/// Every fat-tree dimension's radix, from the catalog it is bought from
/// (`bom::smallest_radix`), and its levels and oversubscription checked
/// against it: `levels` no fewer than the radix needs for the tree's span,
/// at most one oversubscription per level below the top.
pub(super) fn fat_trees(
    raw: &RawFabric,
    fabric: &mut Fabric,
    parts: &Procurement,
    src: StudyFile<'_>,
) -> Result<(), InputError> {
    fat_trees_at(&raw.dims, "fabric.dims", fabric, parts, src)
}

/// [`fat_trees`] from the dimensions' table, errors under `prefix`.
pub(super) fn fat_trees_at(
    raw_dims: &Spanned<Vec<Spanned<RawDim>>>,
    prefix: &str,
    fabric: &mut Fabric,
    parts: &Procurement,
    src: StudyFile<'_>,
) -> Result<(), InputError> {
    for d in 0..fabric.dims.len() {
        let Some(ft) = fabric.dims[d].fat_tree.clone() else {
            continue;
        };
        let rd = raw_dims.get_ref()[d].get_ref();
        let field = |f: &str| format!("{prefix}[{d}].{f}");
        let name = fabric.dims[d].name.clone();
        let Some(radix) = bom::smallest_radix(fabric, parts, d) else {
            return Err(src.at(
                rd.block.span(),
                field("block"),
                format!("the catalog sells no switch to build `{name}` as a fat-tree: name its ports in [procurement.dims.{name}]"),
            ));
        };
        let span = ft.span(fabric, d);
        let fewest = fattree::fewest_levels(radix, span);
        let at = rd.levels.as_ref().map_or(rd.block.span(), Spanned::span);
        let levels = match (ft.levels, fewest) {
            (Some(l), Some(f)) if l >= f => l,
            (None, Some(f)) => f,
            (Some(l), Some(f)) => {
                return Err(src.at(
                    at,
                    field("levels"),
                    format!(
                        "{l} levels of {radix}-port switches reach fewer than {span} NPUs: use levels = {f} or more"
                    ),
                ));
            }
            (_, None) => {
                return Err(src.at(
                    at,
                    field("levels"),
                    format!(
                        "{span} NPUs need more than {} levels of {radix}-port switches: use fewer NPUs",
                        fattree::MAX_LEVELS
                    ),
                ));
            }
        };
        if ft.oversubscription.len() > (levels - 1) as usize {
            let at = rd.oversubscription.as_ref().map_or(rd.block.span(), Spanned::span);
            return Err(src.at(
                at,
                field("oversubscription"),
                format!(
                    "{} ratios given but a {levels}-level tree has {} levels below its top: give at most {}",
                    ft.oversubscription.len(),
                    levels - 1,
                    levels - 1
                ),
            ));
        }
        if let Some(t) = &mut fabric.dims[d].fat_tree {
            t.radix = radix;
        }
    }
    Ok(())
}

/// The largest price ($ per GB/s) or energy (pJ/bit) a cost tier may give.
const MAX_TIER_FIGURE: f64 = 1e6;

/// Every cost tier's prices and energies are finite, >= 0 and at most
/// [`MAX_TIER_FIGURE`].
fn check_tiers(cost: &RawCost, src: StudyFile<'_>) -> Result<(), InputError> {
    for (name, tier) in &cost.tiers {
        for (f, v) in [
            ("link_usd_per_gbps", tier.link_usd_per_gbps),
            ("switch_usd_per_gbps", tier.switch_usd_per_gbps),
            ("nic_usd_per_gbps", tier.nic_usd_per_gbps),
            ("link_pj_per_bit", tier.link_pj_per_bit),
            ("switch_pj_per_bit", tier.switch_pj_per_bit),
            ("nic_pj_per_bit", tier.nic_pj_per_bit),
        ] {
            // At most $1M per GB/s and 1e6 pJ/bit: beyond is a typo that
            // would print an infinite network cost.
            if !(v.is_finite() && (0.0..=MAX_TIER_FIGURE).contains(&v)) {
                let line =
                    find_line(src.text, &format!("[cost.tiers.{name}]")).or_else(|| find_line(src.text, "[cost"));
                return Err(InputError::at(
                    src.path,
                    line,
                    format!("cost.tiers.{name}.{f}"),
                    format!("{v} is not allowed: use a value from 0 to {MAX_TIER_FIGURE:e}"),
                ));
            }
        }
    }
    Ok(())
}

/// Checks an allocation against a fabric: one finite value >= 0 per dimension.
pub(super) fn check_bw(values: &[f64], fabric: &Fabric) -> Result<Vec<f64>, Refusal> {
    if values.len() != fabric.ndims() {
        return Err(Refusal::new(format!(
            "{} values given but the fabric has {} dimensions ({}): give one GB/s per NPU value per dimension",
            values.len(),
            fabric.ndims(),
            fabric
                .dims
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some((d, v)) = values.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
        return Err(Refusal::new(format!(
            "{v} GB/s on dimension `{}` is not allowed: use a bandwidth >= 0",
            fabric.dims[d].name
        )));
    }
    Ok(values.to_vec())
}

/// Rejects fabrics whose NPU count overflows.
fn fabric_npus_fit(fabric: &Fabric) -> Result<u64, Refusal> {
    fabric
        .dims
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(u64::from(d.npus)))
        .filter(|n| *n <= 1 << 40)
        .ok_or_else(|| Refusal::of("fabric.dims", "the fabric has more than 2^40 NPUs"))
}

/// The bandwidths a study writes for each dimension (`min_gbps`,
/// `max_gbps`, `options_gbps` and the study's `bw`) against what the
/// catalog sells for it (`parts`: the study's `[procurement]` or the
/// defaults): a value above the fastest purchasable design is an error
/// inside `[procurement]` for `bw` and `min_gbps` (it cannot be bought) and
/// a warning otherwise; a value equal to one of the dimension's NIC speeds
/// in Gb/s (`max_gbps = 400` for an NDR400 port) is a warning, as
/// bandwidths here are GB/s. Returns the warnings, each located.
pub(super) fn bandwidth_checks(
    raw: &RawFabric,
    fabric: &Fabric,
    parts: &Procurement,
    in_procurement: bool,
    bw: Option<(&[Gbps], std::ops::Range<usize>)>,
    src: StudyFile<'_>,
) -> Result<Vec<String>, InputError> {
    let mut warnings = Vec::new();
    for (d, dim) in fabric.dims.iter().enumerate() {
        if parts.dims[d].server.is_some() {
            continue;
        }
        let sold = bom::options(fabric, parts, d, false);
        let Some(top) = sold.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps)) else {
            continue;
        };
        let rd = raw.dims.get_ref()[d].get_ref();
        let field = |f: &str| format!("fabric.dims[{d}].{f}");
        // (field, GB/s, where, written with a unit)
        let mut values: Vec<(String, f64, std::ops::Range<usize>, bool)> = Vec::new();
        for (name, v) in [("min_gbps", &rd.min_gbps), ("max_gbps", &rd.max_gbps)] {
            if let Some(v) = v {
                values.push((field(name), v.get_ref().0, v.span(), v.get_ref().1));
            }
        }
        if let Some(o) = &rd.options_gbps {
            values.extend(o.get_ref().iter().map(|x| (field("options_gbps"), x.0, o.span(), x.1)));
        }
        if let Some((b, span)) = &bw {
            values.push(("bw".into(), b[d].0, span.clone(), b[d].1));
        }
        // The Gb/s trap is looked for only where the dimension buys NICs.
        let allowed: Vec<&crate::model::catalog::Port> = parts
            .catalog
            .ports
            .iter()
            .filter(|p| p.blocks.contains(&dim.block))
            .filter(|p| parts.dims[d].ports.is_empty() || parts.dims[d].ports.contains(&p.name))
            .filter(|p| parts.dims[d].tech.as_ref().is_none_or(|t| *t == p.kind))
            .collect();
        let nics_only = !allowed.is_empty() && allowed.iter().all(|p| bom::NIC_KINDS.contains(&p.kind.as_str()));
        for (f, v, span, with_unit) in values {
            if v > top.gbps * (1.0 + 1e-9) {
                let msg = format!(
                    "{v} GB/s per NPU on `{}` is more than the catalog sells for it: at most {} GB/s ({} Gb/s), with `{}` ports{}",
                    dim.name,
                    top.gbps,
                    top.gbps * 8.0,
                    top.port,
                    if with_unit {
                        String::new()
                    } else {
                        format!(" (bandwidths are GB/s, 1 GB = 1e9 B; write \"{v}Gb/s\" if bits were meant)")
                    }
                );
                let hard = in_procurement && (f == "bw" || f.ends_with("min_gbps"));
                if hard {
                    return Err(src.at(span, f, msg));
                }
                warnings.push(src.at(span, f, msg).to_string());
                continue;
            }
            let nic = allowed
                .iter()
                .find(|p| nics_only && !with_unit && (p.gbits - v).abs() < 1e-9 * v);
            if let Some(p) = nic {
                warnings.push(
                    src.at(
                        span,
                        f,
                        format!(
                            "{v} GB/s per NPU on `{}` is the speed of `{}` in Gb/s ({} Gb/s = {} GB/s): bandwidths are GB/s, so this is {} such ports per NPU; write \"{v}Gb/s\" if one port was meant",
                            dim.name,
                            p.name,
                            p.gbits,
                            p.gbps(),
                            v / p.gbps()
                        ),
                    )
                    .to_string(),
                );
            }
        }
    }
    Ok(warnings)
}

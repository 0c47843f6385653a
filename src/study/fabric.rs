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
use crate::model::fabric::{Block, Dim, Fabric};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFabric {
    pub(super) dims: Spanned<Vec<Spanned<RawDim>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDim {
    pub(super) name: String,
    block: Block,
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
    let dim = Dim {
        name: d.name.clone(),
        block: d.block,
        npus: npus as u32,
        latency_ns: latency,
        min_gbps: d.min_gbps.as_ref().map(|b| b.get_ref().0),
        max_gbps: d.max_gbps.as_ref().map(|b| b.get_ref().0),
        tier,
        options_gbps: options,
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
    let Some(a) = &d.algorithm else {
        return Ok(Algorithm::default_for(d.block));
    };
    if !a.get_ref().fits(d.block) {
        return Err(src.at(
            a.span(),
            field("algorithm"),
            format!(
                "`{}` does not run on a {} dimension: use {}",
                a.get_ref(),
                d.block,
                one_of(Algorithm::allowed(d.block))
            ),
        ));
    }
    Ok(*a.get_ref())
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

//! The bill of materials of a fabric: an allocation (GB/s per NPU per
//! dimension) turned into the ports, switches and cables of a catalog that
//! buy it, with their capex and power, and the per-dimension options the
//! catalog-constrained optimizer chooses from.
//!
//! Per dimension of n NPUs per group (G = N/n groups), with a port class of
//! s GB/s per direction and k ports per link (LIBRA's per-link conversion,
//! `topology::per_link_gbps`):
//! - ring: each NPU links to its two neighbours at B/2 each way:
//!   k = ceil(B / 2s) per neighbour, 2k ports per NPU, N k links;
//!   bought 2 k s;
//! - fully-connected: n - 1 neighbours at B/(n-1): k = ceil(B / ((n-1) s)),
//!   (n-1) k ports per NPU, N (n-1) k / 2 links; bought (n-1) k s;
//! - switch: k = ceil(B / s) ports per NPU, one switch plane per port
//!   (rails), N k NPU links. A plane of a group that fits a switch of radix R
//!   (n <= R) takes one switch, and floor(R / n) groups share it (their
//!   traffic never meets); a larger group takes a non-blocking two-tier
//!   leaf-spine: L = ceil(n / (R/2)) leaves, each with R/2 ports down and
//!   R/2 up, and ceil(L R/2 / R) spines, L R/2 leaf-spine links (L <= R, so
//!   at most R^2/2 NPUs; beyond that the catalog needs a bigger switch).
//!   Of the catalog's switches with the port's kind and speed, the cheapest
//!   design is taken; bought k s.
//!
//! - fat-tree (a switch dimension with `Dim::fat_tree`): the tiers of
//!   `model::fattree` (leaf, spine, core; oversubscription removing
//!   uplinks and upper tiers), one tree per plane and span (a group, or
//!   with `rails = "optimized"` the group and every dimension below it:
//!   8 GPUs x 32 nodes on 64-port switches buy 8 leaves and 4 spines
//!   where the rail switches above share 4 switches between 8 rails).
//!
//! Cables: the cheapest cable of the port's speed, sold for its kind, that
//! reaches the dimension's `reach_m` (leaf-spine links, and a fat-tree's
//! links above its spines: `spine_reach_m`); on-package ports use package
//! traces only.
//!
//! A dimension bought with a server (`DimSpec::server`: an HGX baseboard's
//! NVLink, say) buys no ports, switches or cables: its bandwidth is the
//! server's scale-up bandwidth per GPU, fixed, and the servers (N / gpus
//! per server of them) are listed beside the network, outside its capex and
//! power. A dimension restricted to a technology (`DimSpec::tech`) buys
//! only ports of that catalog kind. Capex and power are the sums of the items;
//! more bandwidth never buys fewer parts (every count is non-decreasing in
//! k and k in B).

use crate::model::catalog::{Cable, Catalog, Port, Server, Switch};
use crate::model::cost::Tier;
use crate::model::fabric::{Block, Fabric};
use crate::model::fattree::{self, Tier as TreeTier};
use crate::model::topology::per_link_gbps;
use crate::model::units;
use serde::Serialize;

/// What a study says about buying one dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimSpec {
    /// Port classes it may use (empty: every catalog port for its block).
    pub ports: Vec<String>,
    /// Length of a link to a neighbour or a leaf switch, m.
    pub reach_m: f64,
    /// Length of a leaf-spine link, m.
    pub spine_reach_m: f64,
    /// Ports per NPU at most (default 64).
    pub max_ports: u32,
    /// The catalog kind its ports must be (`tech`; `None`: any).
    pub tech: Option<String>,
    /// The server whose scale-up fabric this dimension is (`None`: bought
    /// from the network's parts).
    pub server: Option<Server>,
}

/// The most NPUs a scale-up domain (NVLink-class ports and switches)
/// spans: 256, the largest NVLink Switch System domain NVIDIA has shipped
/// (DGX GH200, 2023).
pub const SCALE_UP_MAX_NPUS: u64 = 256;

/// Port kinds a scale-out dimension defaults to: NICs.
pub const NIC_KINDS: [&str; 2] = ["ethernet", "infiniband"];

/// Whether dimension `d` of `fabric` is scale-out by default: it lies
/// beyond a switch level (a rail or a spine above the node's switch), or
/// its groups, with the dimensions inside them, span more than
/// [`SCALE_UP_MAX_NPUS`].
pub fn scale_out(fabric: &Fabric, d: usize) -> bool {
    let span: u64 = fabric.dims[..=d].iter().map(|x| u64::from(x.npus)).product();
    span > SCALE_UP_MAX_NPUS || fabric.dims[..d].iter().any(|x| x.block == Block::Switch)
}

impl DimSpec {
    /// Defaults by block: rings and fully-connected groups inside a package
    /// (0.05 m), NPU to switch 3 m, leaf to spine 50 m.
    pub fn default_for(block: Block) -> DimSpec {
        DimSpec {
            ports: Vec::new(),
            reach_m: match block {
                Block::Ring | Block::FullyConnected => 0.05,
                Block::Switch => 3.0,
            },
            spine_reach_m: 50.0,
            max_ports: 64,
            tech: None,
            server: None,
        }
    }

    /// Defaults by the dimension's place in `fabric`: a scale-out dimension
    /// ([`scale_out`]) buys the catalog's NICs ([`NIC_KINDS`]) with 30 m to
    /// its switch or neighbour (across a row of racks) and 50 m leaf to
    /// spine; the others as [`DimSpec::default_for`] their block (every
    /// port, NVLink-class included).
    pub fn default_in(fabric: &Fabric, d: usize, catalog: &Catalog) -> DimSpec {
        let block = fabric.dims[d].block;
        let nics: Vec<String> = catalog
            .ports
            .iter()
            .filter(|p| NIC_KINDS.contains(&p.kind.as_str()) && p.blocks.contains(&block))
            .map(|p| p.name.clone())
            .collect();
        // A catalog with no NIC for the block keeps every port.
        if !scale_out(fabric, d) || nics.is_empty() {
            return DimSpec::default_for(block);
        }
        DimSpec {
            ports: nics,
            reach_m: 30.0,
            spine_reach_m: 50.0,
            max_ports: 64,
            tech: None,
            server: None,
        }
    }
}

/// A study's `[procurement]` section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Procurement {
    /// The catalog.
    pub catalog: Catalog,
    /// Per fabric dimension.
    pub dims: Vec<DimSpec>,
    /// Capex budget of the catalog-constrained optimum, $.
    pub budget_usd: Option<f64>,
    /// Power budget, W.
    pub budget_w: Option<f64>,
}

impl Procurement {
    /// The built-in catalog with every dimension's defaults
    /// ([`DimSpec::default_in`]).
    pub fn defaults(fabric: &Fabric) -> Procurement {
        let catalog = Catalog::builtin();
        Procurement {
            dims: (0..fabric.dims.len())
                .map(|d| DimSpec::default_in(fabric, d, &catalog))
                .collect(),
            catalog,
            budget_usd: None,
            budget_w: None,
        }
    }
}

/// One line of a bill of materials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    /// Catalog part.
    pub component: String,
    /// `port`, `switch` or `cable`.
    pub kind: &'static str,
    /// Where it goes: NPU ports, leaf or spine switches, NPU or leaf-spine links.
    pub role: String,
    /// Fabric dimension.
    pub dimension: String,
    /// How many.
    pub quantity: u64,
    /// Unit price, $.
    pub unit_price_usd: f64,
    /// Unit power, W.
    pub unit_power_w: f64,
}

impl Item {
    /// quantity x unit price.
    pub fn capex_usd(&self) -> f64 {
        self.quantity as f64 * self.unit_price_usd
    }

    /// quantity x unit power.
    pub fn power_w(&self) -> f64 {
        self.quantity as f64 * self.unit_power_w
    }
}

/// One dimension, bought.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimBom {
    /// Dimension name.
    pub dimension: String,
    /// Port class (`none` when nothing is bought; the server's name when
    /// the dimension comes with the servers).
    pub port: String,
    /// The port's catalog kind, its technology (`server` when the
    /// dimension comes with the servers, `none` when nothing is bought).
    pub kind: String,
    /// Ports per NPU.
    pub ports_per_npu: u32,
    /// The bandwidth asked for, GB/s per NPU.
    pub asked_gbps: f64,
    /// The bandwidth bought, GB/s per NPU (at least the asked).
    pub bought_gbps: f64,
    /// Switch model, leaves and spines (all planes and groups).
    pub switch: Option<SwitchPlan>,
    /// Its parts.
    pub items: Vec<Item>,
    /// Capex, $.
    pub capex_usd: f64,
    /// Power, W.
    pub power_w: f64,
}

/// The switches of a switch dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchPlan {
    /// Model.
    pub model: String,
    /// Tiers: 1 (one switch per plane and group), 2 (leaf-spine), 3 or
    /// more (a fat-tree's core and above).
    pub tiers: u32,
    /// Leaf (or single-tier) switches.
    pub leaves: u64,
    /// Spine switches.
    pub spines: u64,
    /// Switches above the spines (a fat-tree's core and any tier above).
    #[serde(skip_serializing_if = "is_zero")]
    pub core: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::fmt::Display for SwitchPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tiers == 1 {
            write!(f, "{} x {}", self.leaves, self.model)
        } else if self.core > 0 {
            write!(
                f,
                "{} leaf + {} spine + {} core {}",
                self.leaves, self.spines, self.core, self.model
            )
        } else {
            write!(f, "{} leaf + {} spine {}", self.leaves, self.spines, self.model)
        }
    }
}

/// Servers a fabric's scale-up dimension comes with: listed beside the
/// network, outside its capex and power.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerLine {
    /// The dimension they provide.
    pub dimension: String,
    /// Catalog server.
    pub server: String,
    /// Its scale-up link.
    pub link: String,
    /// How many (NPUs / GPUs per server).
    pub quantity: u64,
    /// Scale-up bandwidth per GPU per direction, GB/s.
    pub gbps: f64,
    /// Unit price, $ (`None`: not published; a quote is needed).
    pub unit_price_usd: Option<f64>,
    /// Unit power at most, W.
    pub unit_power_w: f64,
}

impl ServerLine {
    /// quantity x unit price, where priced.
    pub fn capex_usd(&self) -> Option<f64> {
        self.unit_price_usd.map(|u| self.quantity as f64 * u)
    }

    /// quantity x unit power.
    pub fn power_w(&self) -> f64 {
        self.quantity as f64 * self.unit_power_w
    }
}

/// A whole bill of materials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bom {
    /// The catalog's name and date.
    pub catalog: String,
    /// Per dimension.
    pub dims: Vec<DimBom>,
    /// Every item.
    pub items: Vec<Item>,
    /// Total capex, $.
    pub capex_usd: f64,
    /// Total power, W.
    pub power_w: f64,
    /// NPUs.
    pub npus: u64,
    /// Capex per NPU, $.
    pub cost_per_npu_usd: f64,
    /// Bandwidth bought per dimension, GB/s per NPU.
    pub bought_gbps: Vec<f64>,
    /// The servers scale-up dimensions come with (outside capex and power).
    pub servers: Vec<ServerLine>,
}

/// Why an allocation cannot be bought.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("dimension `{dimension}`: {message}")]
pub struct BomError {
    /// The dimension.
    pub dimension: String,
    /// What is missing.
    pub message: String,
}

/// Links per NPU-port pattern of a block: (ports per NPU, links, bought
/// GB/s) for k ports per link at `s` GB/s.
fn pattern(block: Block, n: u32, npus: u64, k: u32, s: f64) -> (u32, u64, f64) {
    match block {
        Block::Ring => (2 * k, npus * u64::from(k), 2.0 * f64::from(k) * s),
        Block::FullyConnected => {
            let m = n - 1;
            (m * k, npus * u64::from(m) * u64::from(k) / 2, f64::from(m * k) * s)
        }
        Block::Switch => (k, npus * u64::from(k), f64::from(k) * s),
    }
}

/// Ports per link needed for `gbps` per NPU (at the topology's per-link
/// bandwidth).
fn ports_for(block: Block, n: u32, gbps: f64, s: f64) -> u32 {
    let per_link = per_link_gbps(block, n, gbps);
    // A hair of tolerance so 50.000000001 GB/s of rounding noise is one port.
    ((per_link / s) * (1.0 - 1e-12)).ceil().max(0.0) as u32
}

fn cable_for<'a>(catalog: &'a Catalog, port: &Port, reach: f64) -> Option<&'a Cable> {
    catalog
        .cables
        .iter()
        .filter(|c| c.gbits.total_cmp(&port.gbits).is_eq() && c.reach_m >= reach)
        .filter(|c| c.kinds.is_empty() || c.kinds.contains(&port.kind))
        .filter(|c| (c.medium == "trace") == (port.kind == "on-package"))
        .min_by(|a, b| a.usd.total_cmp(&b.usd).then(a.watts.total_cmp(&b.watts)))
}

/// The switches of `k` planes of `groups` groups of `n` NPUs on `sw`:
/// (tiers, leaves, spines, leaf-spine links), or `None` beyond two tiers.
fn switches(sw: &Switch, n: u32, groups: u64, k: u32) -> Option<(u32, u64, u64, u64)> {
    let r = sw.ports;
    let k = u64::from(k);
    if n <= r {
        let share = u64::from(r / n);
        Some((1, k * groups.div_ceil(share), 0, 0))
    } else {
        let half = r / 2;
        let leaves = u64::from(n.div_ceil(half));
        if leaves > u64::from(r) {
            return None;
        }
        let uplinks = leaves * u64::from(half);
        let spines = uplinks.div_ceil(u64::from(r));
        Some((2, k * groups * leaves, k * groups * spines, k * groups * uplinks))
    }
}

/// The tiers of dimension `d`'s switches on `sw`, over every plane and
/// group (switches and uplinks per tier, leaves first): a fat-tree's
/// (`model::fattree`, one tree per plane and span), else one switch per
/// plane and group or the two-tier leaf-spine (`switches`); `None` where
/// `sw` cannot build it.
fn tree_of(fabric: &Fabric, d: usize, sw: &Switch, groups: u64, k: u32) -> Option<Vec<TreeTier>> {
    let dim = &fabric.dims[d];
    if let Some(ft) = &dim.fat_tree {
        let span = ft.span(fabric, d).max(1);
        let per_plane = fabric.npus() / span;
        let levels = ft.levels_for(sw.ports, span)?;
        let one = fattree::tiers(sw.ports, span, levels, &ft.oversubscription)?;
        // One-level trees share a switch as one-switch groups do.
        let trees = if levels == 1 {
            u64::from(k) * per_plane.div_ceil((u64::from(sw.ports) / span).max(1))
        } else {
            u64::from(k) * per_plane
        };
        return Some(
            one.iter()
                .map(|t| TreeTier {
                    switches: trees * t.switches,
                    uplinks: trees * t.uplinks,
                })
                .collect(),
        );
    }
    let (tiers, leaves, spines, uplinks) = switches(sw, dim.npus, groups, k)?;
    Some(if tiers == 1 {
        vec![TreeTier {
            switches: leaves,
            uplinks: 0,
        }]
    } else {
        vec![
            TreeTier {
                switches: leaves,
                uplinks,
            },
            TreeTier {
                switches: spines,
                uplinks: 0,
            },
        ]
    })
}

/// Tier `i`'s name of `n` tiers: leaf, spine, core, then `tier-4`, ...
fn tier_name(i: usize, n: usize) -> String {
    match (i, n) {
        (_, 1) => String::new(),
        (0, _) => "leaf".into(),
        (1, _) => "spine".into(),
        (2, _) => "core".into(),
        _ => format!("tier-{}", i + 1),
    }
}

/// The switch and cable items of `tiers` of `sw` (every link above the
/// leaves at `spine_reach_m`); `None` where no cable reaches.
fn tier_items(
    catalog: &Catalog,
    port: &Port,
    ds: &DimSpec,
    sw: &Switch,
    dimension: &str,
    tiers: &[TreeTier],
) -> Option<Vec<Item>> {
    let n = tiers.len();
    let mut its: Vec<Item> = tiers
        .iter()
        .enumerate()
        .map(|(i, t)| Item {
            component: sw.name.clone(),
            kind: "switch",
            role: if n == 1 {
                "switches".into()
            } else {
                format!("{} switches", tier_name(i, n))
            },
            dimension: dimension.to_string(),
            quantity: t.switches,
            unit_price_usd: sw.usd,
            unit_power_w: sw.watts,
        })
        .collect();
    for (i, t) in tiers.iter().enumerate().take(n.saturating_sub(1)) {
        let c = cable_for(catalog, port, ds.spine_reach_m)?;
        its.push(Item {
            component: c.name.clone(),
            kind: "cable",
            role: format!("{}-{} links", tier_name(i, n), tier_name(i + 1, n)),
            dimension: dimension.to_string(),
            quantity: t.uplinks,
            unit_price_usd: c.usd,
            unit_power_w: c.watts,
        });
    }
    Some(its)
}

/// The bill of materials of dimension `d` with `k` ports per link of
/// `port` (k = 0: nothing).
pub fn dim_bom(
    fabric: &Fabric,
    spec: &Procurement,
    d: usize,
    port: &Port,
    k: u32,
    asked: f64,
) -> Result<DimBom, BomError> {
    let dim = &fabric.dims[d];
    let ds = &spec.dims[d];
    let err = |m: String| BomError {
        dimension: dim.name.clone(),
        message: m,
    };
    let npus = fabric.npus();
    let n = dim.npus;
    let groups = npus / u64::from(n);
    let (per_npu, links, bought) = pattern(dim.block, n, npus, k, port.gbps());
    let mut items = Vec::new();
    let mut plan = None;
    if k > 0 {
        items.push(Item {
            component: port.name.clone(),
            kind: "port",
            role: "NPU ports".into(),
            dimension: dim.name.clone(),
            quantity: npus * u64::from(per_npu),
            unit_price_usd: port.usd,
            unit_power_w: port.watts,
        });
        let cable = cable_for(&spec.catalog, port, ds.reach_m).ok_or_else(|| {
            err(format!(
                "no cable in the catalog carries {} Gb/s over {} m for `{}`",
                port.gbits, ds.reach_m, port.name
            ))
        })?;
        items.push(Item {
            component: cable.name.clone(),
            kind: "cable",
            role: if dim.block == Block::Switch {
                "NPU-switch links".into()
            } else {
                "NPU-NPU links".into()
            },
            dimension: dim.name.clone(),
            quantity: links,
            unit_price_usd: cable.usd,
            unit_power_w: cable.watts,
        });
        if dim.block == Block::Switch {
            // The cheapest design over the catalog's matching switches.
            let mut best: Option<(f64, Vec<Item>, SwitchPlan)> = None;
            for sw in spec
                .catalog
                .switches
                .iter()
                .filter(|s| s.kind == port.kind && s.gbits.total_cmp(&port.gbits).is_eq())
            {
                let Some(tiers) = tree_of(fabric, d, sw, groups, k) else {
                    continue;
                };
                let Some(its) = tier_items(&spec.catalog, port, ds, sw, &dim.name, &tiers) else {
                    continue;
                };
                let capex: f64 = its.iter().map(Item::capex_usd).sum();
                if best.as_ref().is_none_or(|b| capex < b.0) {
                    let count = |i: usize| tiers.get(i).map_or(0, |t| t.switches);
                    best = Some((
                        capex,
                        its,
                        SwitchPlan {
                            model: sw.name.clone(),
                            tiers: tiers.len() as u32,
                            leaves: count(0),
                            spines: count(1),
                            core: tiers.iter().skip(2).map(|t| t.switches).sum(),
                        },
                    ));
                }
            }
            let (_, its, p) = best.ok_or_else(|| {
                err(match &dim.fat_tree {
                    None => format!(
                        "no switch in the catalog has {} Gb/s {} ports for groups of {n} (two tiers at most)",
                        port.gbits, port.kind
                    ),
                    Some(ft) => format!(
                        "no switch in the catalog has {} Gb/s {} ports for a fat-tree of {} NPUs{}",
                        port.gbits,
                        port.kind,
                        ft.span(fabric, d),
                        ft.levels.map_or(String::new(), |l| format!(" in {l} levels"))
                    ),
                })
            })?;
            items.extend(its);
            plan = Some(p);
        }
    }
    let capex_usd = items.iter().map(Item::capex_usd).sum();
    let power_w = items.iter().map(Item::power_w).sum();
    Ok(DimBom {
        dimension: dim.name.clone(),
        port: if k > 0 { port.name.clone() } else { "none".into() },
        kind: if k > 0 { port.kind.clone() } else { "none".into() },
        ports_per_npu: per_npu,
        asked_gbps: asked,
        bought_gbps: bought,
        switch: plan,
        items,
        capex_usd,
        power_w,
    })
}

/// The smallest radix of the catalog's switches that dimension `d` could
/// be built from (a switch of the kind and speed of one of its allowed
/// ports): the radix a fat-tree's time model assumes; `None` where none.
pub fn smallest_radix(fabric: &Fabric, spec: &Procurement, d: usize) -> Option<u32> {
    let ports = allowed_ports(fabric, spec, d);
    spec.catalog
        .switches
        .iter()
        .filter(|s| {
            ports
                .iter()
                .any(|p| s.kind == p.kind && s.gbits.total_cmp(&p.gbits).is_eq())
        })
        .map(|s| s.ports)
        .min()
}

/// The port classes dimension `d` may use.
fn allowed_ports<'a>(fabric: &Fabric, spec: &'a Procurement, d: usize) -> Vec<&'a Port> {
    let dim = &fabric.dims[d];
    spec.catalog
        .ports
        .iter()
        .filter(|p| p.blocks.contains(&dim.block))
        .filter(|p| spec.dims[d].ports.is_empty() || spec.dims[d].ports.contains(&p.name))
        .filter(|p| spec.dims[d].tech.as_ref().is_none_or(|t| *t == p.kind))
        .collect()
}

/// Dimension `d` as its server ships it: nothing bought from the network,
/// the server's bandwidth (`asked` must not exceed it).
fn server_dim(fabric: &Fabric, d: usize, server: &Server, asked: f64) -> Result<(DimBom, ServerLine), BomError> {
    let dim = &fabric.dims[d];
    if asked > server.gbps() * (1.0 + 1e-9) {
        return Err(BomError {
            dimension: dim.name.clone(),
            message: format!(
                "{} GB/s per NPU asked, but `{}` ships {} GB/s per GPU ({} Gb/s) and nothing more can be bought",
                asked,
                server.name,
                server.gbps(),
                server.scale_up_gbits
            ),
        });
    }
    let line = ServerLine {
        dimension: dim.name.clone(),
        server: server.name.clone(),
        link: server.link.clone(),
        quantity: fabric.npus() / u64::from(server.gpus),
        gbps: server.gbps(),
        unit_price_usd: server.usd,
        unit_power_w: server.watts,
    };
    let b = DimBom {
        dimension: dim.name.clone(),
        port: server.name.clone(),
        kind: "server".into(),
        ports_per_npu: 0,
        asked_gbps: asked,
        bought_gbps: server.gbps(),
        switch: None,
        items: Vec::new(),
        capex_usd: 0.0,
        power_w: 0.0,
    };
    Ok((b, line))
}

/// The cheapest way to buy at least `bw[d]` on every dimension.
pub fn bom(fabric: &Fabric, spec: &Procurement, bw: &[f64]) -> Result<Bom, BomError> {
    let mut dims = Vec::new();
    let mut servers = Vec::new();
    for (d, dim) in fabric.dims.iter().enumerate() {
        if let Some(server) = &spec.dims[d].server {
            let (b, line) = server_dim(fabric, d, server, bw[d])?;
            dims.push(b);
            servers.push(line);
            continue;
        }
        let ports = allowed_ports(fabric, spec, d);
        let err = |m: String| BomError {
            dimension: dim.name.clone(),
            message: m,
        };
        if ports.is_empty() {
            return Err(err(format!(
                "no port class in the catalog builds a {} dimension",
                dim.block.name()
            )));
        }
        let mut best: Option<DimBom> = None;
        let mut last_err = None;
        for p in ports {
            let k = ports_for(dim.block, dim.npus, bw[d], p.gbps());
            let (per_npu, _, _) = pattern(dim.block, dim.npus, fabric.npus(), k, p.gbps());
            if per_npu > spec.dims[d].max_ports {
                last_err = Some(err(format!(
                    "{} GB/s per NPU needs {per_npu} `{}` ports per NPU, more than max_ports = {}",
                    bw[d], p.name, spec.dims[d].max_ports
                )));
                continue;
            }
            match dim_bom(fabric, spec, d, p, k, bw[d]) {
                Ok(b) => {
                    if best.as_ref().is_none_or(|x| {
                        b.capex_usd
                            .total_cmp(&x.capex_usd)
                            .then(b.power_w.total_cmp(&x.power_w))
                            .is_lt()
                    }) {
                        best = Some(b);
                    }
                }
                Err(e) => last_err = Some(e),
            }
        }
        dims.push(best.ok_or_else(|| last_err.unwrap_or_else(|| err("nothing in the catalog buys it".into())))?);
    }
    Ok(assemble(fabric, spec, dims, servers))
}

/// The bill of materials of `dims` (each dimension bought) and the servers.
fn assemble(fabric: &Fabric, spec: &Procurement, dims: Vec<DimBom>, servers: Vec<ServerLine>) -> Bom {
    let items: Vec<Item> = dims.iter().flat_map(|d| d.items.clone()).collect();
    let capex_usd: f64 = items.iter().map(Item::capex_usd).sum();
    let power_w = items.iter().map(Item::power_w).sum();
    let npus = fabric.npus();
    Bom {
        catalog: format!("{} ({})", spec.catalog.name, spec.catalog.date),
        bought_gbps: dims.iter().map(|d| d.bought_gbps).collect(),
        dims,
        items,
        capex_usd,
        power_w,
        npus,
        cost_per_npu_usd: capex_usd / npus as f64,
        servers,
    }
}

/// The bill of materials of exactly the designs `choice` names, one per
/// dimension (the catalog MILP's choice: [`options`]' port and ports per
/// link), not the cheapest way to buy their bandwidth again: where two
/// designs sell the same bandwidth (one cheaper, one drawing less), the
/// bill is the one the optimizer chose, so its capex and power are the
/// optimizer's.
pub fn bom_of(fabric: &Fabric, spec: &Procurement, choice: &[DimOption]) -> Result<Bom, BomError> {
    let mut dims = Vec::new();
    let mut servers = Vec::new();
    for (d, o) in choice.iter().enumerate() {
        let dim = &fabric.dims[d];
        if let Some(server) = &spec.dims[d].server {
            let (b, line) = server_dim(fabric, d, server, o.gbps)?;
            dims.push(b);
            servers.push(line);
            continue;
        }
        let port = if o.k == 0 {
            allowed_ports(fabric, spec, d).first().copied()
        } else {
            spec.catalog.port(&o.port)
        };
        let port = port.ok_or_else(|| BomError {
            dimension: dim.name.clone(),
            message: format!("`{}` is not a port of the catalog that builds it", o.port),
        })?;
        dims.push(dim_bom(fabric, spec, d, port, o.k, o.gbps)?);
    }
    Ok(assemble(fabric, spec, dims, servers))
}

/// One purchasable design of one dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimOption {
    /// Port class (`none`: nothing bought).
    pub port: String,
    /// Ports per link.
    pub k: u32,
    /// Bandwidth bought, GB/s per NPU.
    pub gbps: f64,
    /// Capex, $.
    pub capex_usd: f64,
    /// Power, W.
    pub power_w: f64,
}

/// Every purchasable design of dimension `d`: each allowed port class with
/// 1, 2, ... ports per link up to `max_ports` ports per NPU, those that some
/// design of lower or equal bandwidth does not beat on both capex and
/// power dropped; with `zero`, buying nothing too.
pub fn options(fabric: &Fabric, spec: &Procurement, d: usize, zero: bool) -> Vec<DimOption> {
    let dim = &fabric.dims[d];
    // A server's dimension has one design, the server's own, at no network
    // cost: it is not bought from the network (and cannot be left out).
    if let Some(server) = &spec.dims[d].server {
        return vec![DimOption {
            port: server.name.clone(),
            k: 1,
            gbps: server.gbps(),
            capex_usd: 0.0,
            power_w: 0.0,
        }];
    }
    let mut out = Vec::new();
    if zero {
        out.push(DimOption {
            port: "none".into(),
            k: 0,
            gbps: 0.0,
            capex_usd: 0.0,
            power_w: 0.0,
        });
    }
    for p in allowed_ports(fabric, spec, d) {
        for k in 1.. {
            let (per_npu, _, _) = pattern(dim.block, dim.npus, fabric.npus(), k, p.gbps());
            if per_npu > spec.dims[d].max_ports {
                break;
            }
            if let Ok(b) = dim_bom(fabric, spec, d, p, k, 0.0) {
                out.push(DimOption {
                    port: p.name.clone(),
                    k,
                    gbps: b.bought_gbps,
                    capex_usd: b.capex_usd,
                    power_w: b.power_w,
                });
            }
        }
    }
    // Drop dominated designs: another with at least the bandwidth for no
    // more capex and no more power.
    let all = out.clone();
    out.retain(|o| {
        !all.iter().any(|x| {
            x.gbps >= o.gbps
                && x.capex_usd <= o.capex_usd
                && x.power_w <= o.power_w
                && (x.gbps > o.gbps || x.capex_usd < o.capex_usd || x.power_w < o.power_w)
        })
    });
    out.sort_by(|a, b| a.gbps.total_cmp(&b.gbps).then(a.capex_usd.total_cmp(&b.capex_usd)));
    out
}

/// The least `of(option)` per GB/s per NPU over the designs that buy
/// bandwidth (infinite where none does): the catalog's cheapest linear
/// price of a dimension.
pub(crate) fn cheapest_per_gbps(options: &[DimOption], npus: f64, of: impl Fn(&DimOption) -> f64) -> f64 {
    options
        .iter()
        .filter(|x| x.gbps > 0.0)
        .map(|x| of(x) / (x.gbps * npus))
        .fold(f64::INFINITY, f64::min)
}

/// The linear tier dimension `d`'s parts imply, for a study that names
/// none: the least dollars and watts per GB/s per NPU over its purchasable
/// designs (what the catalog MILP's relaxation prices, so it under-prices
/// every design), all carried as the link's price and energy per bit (a
/// tier's link counts on every block); `None` where the catalog sells
/// nothing for the dimension.
pub fn cheapest_tier(fabric: &Fabric, spec: &Procurement, d: usize) -> Option<Tier> {
    let npus = fabric.npus() as f64;
    let sold = options(fabric, spec, d, false);
    let usd = cheapest_per_gbps(&sold, npus, |o| o.capex_usd);
    let w = cheapest_per_gbps(&sold, npus, |o| o.power_w);
    (usd.is_finite() && w.is_finite()).then(|| Tier {
        link_usd_per_gbps: usd,
        // W per GB/s = GB/s * 8e9 bit/GB * pJ/bit * 1e-12: invert at 1 GB/s.
        link_pj_per_bit: w / units::watts(1.0, 1.0),
        ..Tier::default()
    })
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn ports_follow_the_topology_per_link_bandwidth() {
        // The per-link bandwidth bom used to compute itself, against the
        // topology's: identical on every block of at least 2 NPUs (a
        // fabric's dimensions always have 2 or more).
        let own = |block: Block, n: u32, gbps: f64| match block {
            Block::Ring => gbps / 2.0,
            Block::FullyConnected => gbps / f64::from(n - 1),
            Block::Switch => gbps,
        };
        for block in [Block::Ring, Block::FullyConnected, Block::Switch] {
            for n in 2..=130 {
                for gbps in [0.0, 1e-3, 12.5, 50.0, 100.0 / 3.0, 400.0, 1234.567, 1e6] {
                    assert_eq!(
                        per_link_gbps(block, n, gbps).to_bits(),
                        own(block, n, gbps).to_bits(),
                        "{block:?} n={n} gbps={gbps}"
                    );
                    for s in [12.5, 25.0, 50.0, 100.0] {
                        let k = ((own(block, n, gbps) / s) * (1.0 - 1e-12)).ceil().max(0.0) as u32;
                        assert_eq!(ports_for(block, n, gbps, s), k);
                    }
                }
            }
        }
    }
}

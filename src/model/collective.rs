//! Analytic time of a collective on a multi-dimensional fabric, written as
//! per-dimension coefficients: `t_d(B_d) = alpha_d + bytes_d / B_d`.
//!
//! This is the contract the optimizer consumes (DESIGN.md): whatever produced
//! the coefficients, a collective's time is `max_d t_d` when the dimensions
//! are pipelined (LIBRA, Themis) or `sum_d t_d` when they run one after
//! another. Both are convex in B.
//!
//! Bytes per NPU per dimension are LIBRA's hierarchical model
//! (astra-sim/libra, `src/model/model.py`), with S the phase's size and p the
//! group size on the dimension:
//! - all-reduce: dimensions in order, `2 S (p-1)/p`, then `S /= p`
//!   (reduce-scatter down, all-gather back up; Rashidi et al., Themis);
//! - reduce-scatter: in order, `S (p-1)/p`, then `S /= p`;
//! - all-gather: from the last dimension down, `S (p-1)`, then `S *= p`;
//! - all-to-all: `S (p-1)/p` on every involved dimension, no resizing;
//! - send-recv (pipeline stages): `S` on the innermost involved dimension,
//!   where neighbouring stages differ, one step.
//!
//! A group of p on a dimension of n > p NPUs (`GroupBandwidth`): LIBRA's
//! formulas give it all of `B_d`, which it gets through a switch port but
//! not elsewhere. The default, `links`, counts the group's own links, as
//! the schedule evaluator's group topologies do (`optimize::scheduled`): on
//! a fully-connected dimension each NPU reaches the p - 1 other members
//! over p - 1 of its n - 1 links, `B (p-1)/(n-1)`, so the bytes are scaled
//! by `(n-1)/(p-1)` (a group of 4 in a fully-connected 8 moves its bytes
//! at `3B/7`, and replays of it on the best schedules ran 33% slower than
//! LIBRA's formula); on a ring the p contiguous members form a line, B/2
//! per link each way and no wrap-around: an end NPU's one link must bring
//! it `(p-1)/p` of an all-gather or reduce-scatter buffer (twice LIBRA's
//! ring time) and the whole reduced buffer of an all-reduce (`p/(p-1)`
//! times LIBRA's; a pipelined chain meets it), and the middle link must
//! carry `floor(p/2) ceil(p/2)` all-to-all pieces. Send-recv keeps LIBRA's
//! bytes, and the `nccl` model's flat ring over several dimensions keeps
//! its own. `whole-dimension` is LIBRA's assumption, kept by the studies
//! that reproduce LIBRA's published cases.
//!
//! Reductions (`CollectiveModel::reduction_gbps`): adding a received
//! chunk into the NPU's own reads two operands and writes one, so an NPU
//! that reduces R bytes moves 3R through its memory, `3 R / M` at memory
//! bandwidth M, paid after the data arrives (ASTRA-sim charges the same
//! three passes per reduction step). R per level is what the level's
//! reduce-scatter receives: LIBRA's bytes for a reduce-scatter, half of
//! them for an all-reduce (its all-gather half only copies); the `nccl`
//! model's flat ring reduces `(n-1)/n` of the vector. The time joins
//! `alpha_d` (it does not depend on B), so under the max-combining models
//! the levels' reductions overlap as their transfers do (ASTRA-sim's
//! pipelined dataset splits charge them the same way), though one memory
//! serves them all: a lower estimate where several levels reduce much.
//! Without M (no `[npu]`, or `reduction_memory = false`) reductions are
//! free, LIBRA's assumption.
//!
//! Latency: `alpha_d = steps * hops * latency_d`, with steps from the
//! dimension's algorithm (Thakur, Rabenseifner and Gropp, "Optimization of
//! collective communication operations in MPICH", IJHPCA 2005):
//! ring `2(p-1)` for all-reduce and `p-1` otherwise; direct (fully-connected
//! or switch) 2 and 1; halving-doubling `2 ceil(log2 p)` and `ceil(log2 p)`.
//! A step through a switch is two link hops (up and down).
//!
//! Swing (`swing`, on rings and switches) is the exception to LIBRA's
//! bytes: its peers are `|rho(s)|` hops apart on a ring, so its bytes are
//! the vector times `model::swing::dim_model`'s factor (the load of the
//! most loaded link, step by step, with folds for sizes that are not powers
//! of two) and its latency is the hops of that chain of steps.
//!
//! A fat-tree dimension (`Dim::fat_tree`) with oversubscribed levels
//! scales its bytes by the taper of `model::fattree` (a constant per
//! algorithm, collective and group size: the form stays `alpha + bytes /
//! B`); non-blocking, it is the switch.
//!
//! Lower bound: an NPU of a group of P must move at least `2 S (P-1)/P` bytes
//! for an all-reduce (Patarasuk and Yuan, JPDC 2009), `S (P-1)/P` for a
//! reduce-scatter or all-to-all, and `S (P-1)` for an all-gather, through at
//! most `sum_d B_d` over the involved dimensions (traffic stays inside the
//! communicator, as in every hierarchical algorithm), so no algorithm beats
//! `min_bytes / sum_d B_d`.

use crate::model::fabric::{Block, Fabric};
use crate::model::units;
use crate::model::workload::{CollectiveKind, Comm, Group};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The algorithm a dimension runs its share of a collective with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Ring: p-1 neighbour steps per half.
    Ring,
    /// Direct: every NPU sends to every other at once (fully-connected, switch).
    Direct,
    /// Recursive halving then doubling (fully-connected, switch).
    HalvingDoubling,
    /// Swing (NSDI'24; rings and switches): `log2 p` steps each way to
    /// peers `+-rho(s)`, both directions at once; see `schedule::swing`.
    Swing,
}

impl Algorithm {
    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Direct => "direct",
            Algorithm::HalvingDoubling => "halving-doubling",
            Algorithm::Swing => "swing",
        }
    }

    /// What a dimension runs unless the study says otherwise: ring on rings,
    /// direct on fully-connected groups and switches.
    pub fn default_for(block: Block) -> Algorithm {
        match block {
            Block::Ring => Algorithm::Ring,
            Block::FullyConnected | Block::Switch => Algorithm::Direct,
        }
    }

    /// Whether the algorithm runs on this block. Direct and halving-doubling
    /// talk to non-neighbours, which a ring cannot do in one hop; Swing does,
    /// and its model counts the hops and the congestion they cause. Swing
    /// on a fully-connected group would send each step over one of the
    /// `p - 1` links, so it is not offered there.
    pub fn fits(self, block: Block) -> bool {
        Algorithm::allowed(block).contains(&self.name())
    }

    /// The algorithms a block runs.
    pub(crate) fn allowed(block: Block) -> &'static [&'static str] {
        match block {
            Block::Ring => &["ring", "swing"],
            Block::FullyConnected => &["direct", "halving-doubling"],
            Block::Switch => &["direct", "halving-doubling", "swing"],
        }
    }

    /// Communication steps for `kind` in a group of `p` on one dimension.
    pub fn steps(self, kind: CollectiveKind, p: u32) -> f64 {
        if p <= 1 {
            return 0.0;
        }
        if kind == CollectiveKind::SendRecv {
            return 1.0;
        }
        // A power of two needs no fold (Swing).
        let fold = if p.is_power_of_two() { 0.0 } else { 2.0 };
        let p = f64::from(p);
        let log = p.log2().ceil();
        match (self, kind) {
            (Algorithm::Ring, CollectiveKind::AllReduce) => 2.0 * (p - 1.0),
            (Algorithm::Ring, _) => p - 1.0,
            (Algorithm::Direct, CollectiveKind::AllReduce) => 2.0,
            (Algorithm::Direct, _) => 1.0,
            (Algorithm::HalvingDoubling, CollectiveKind::AllReduce) => 2.0 * log,
            (Algorithm::HalvingDoubling, _) => log,
            // log2 of the power of two below p, plus the fold in and out.
            (Algorithm::Swing, CollectiveKind::AllReduce) => 2.0 * p.log2().floor() + fold,
            (Algorithm::Swing, _) => p.log2().floor() + fold,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How per-dimension times combine into a collective's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeModel {
    /// LIBRA's model: `max_d bytes_d / B_d`, no latency.
    Libra,
    /// Dimensions pipelined: `max_d (alpha_d + bytes_d / B_d)`.
    Pipelined,
    /// Dimensions one after another: `sum_d (alpha_d + bytes_d / B_d)`.
    Sequential,
    /// As NCCL runs a collective over several dimensions: one flat ring
    /// over the group's NPUs in rank order, its channels spread so that
    /// every NPU's links carry an equal share; `max_d (alpha_d + bytes_d /
    /// B_d)` with `bytes_d` the ring's traffic times the fraction of its
    /// hops that cross dimension d (`ring_bytes_per_dim`). On one dimension,
    /// and for all-to-all and send-recv, the same as `pipelined`.
    Nccl,
}

impl TimeModel {
    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            TimeModel::Libra => "libra",
            TimeModel::Pipelined => "pipelined",
            TimeModel::Sequential => "sequential",
            TimeModel::Nccl => "nccl",
        }
    }
}

/// How much of a dimension's bandwidth a group spanning part of it gets
/// (a group of p on a dimension of n > p NPUs; module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GroupBandwidth {
    /// The group's own links: on a fully-connected dimension the p - 1
    /// links to its members, `B (p-1)/(n-1)`; on a ring the line of its p
    /// contiguous members, `B/2` each way without the wrap-around; a
    /// switch port carries all of B.
    #[default]
    Links,
    /// LIBRA's assumption: every group gets all of `B_d`.
    WholeDimension,
}

impl GroupBandwidth {
    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            GroupBandwidth::Links => "links",
            GroupBandwidth::WholeDimension => "whole-dimension",
        }
    }

    /// How many times LIBRA's bytes a `kind` over a group of `p` on a
    /// dimension of `n` NPUs with `block` takes (1 for a whole dimension,
    /// a switch or a send-recv): a fully-connected group `(n-1)/(p-1)`; a
    /// line of p (module doc): all-gather and reduce-scatter 2 (an end
    /// NPU's one link, B/2, carries its `(p-1)/p` of the buffer), all-reduce
    /// `p/(p-1)` (an end NPU receives the whole reduced buffer at B/2; a
    /// pipelined chain meets it), all-to-all `2 floor(p/2) ceil(p/2)/(p-1)`
    /// (the middle link carries `floor(p/2) ceil(p/2)` pieces of S/p).
    pub fn factor(self, kind: CollectiveKind, block: Block, p: u32, n: u32) -> f64 {
        if self == GroupBandwidth::WholeDimension || p <= 1 || p >= n || kind == CollectiveKind::SendRecv {
            return 1.0;
        }
        let (pf, nf) = (f64::from(p), f64::from(n));
        match (block, kind) {
            (Block::FullyConnected, _) => (nf - 1.0) / (pf - 1.0),
            (Block::Ring, CollectiveKind::AllReduce) => pf / (pf - 1.0),
            (Block::Ring, CollectiveKind::AllToAll) => 2.0 * f64::from(p / 2) * f64::from(p.div_ceil(2)) / (pf - 1.0),
            (Block::Ring, _) => 2.0,
            (Block::Switch, _) => 1.0,
        }
    }
}

impl crate::error::Named for GroupBandwidth {
    const WHAT: &'static str = "a group bandwidth";
    const ALL: &'static [GroupBandwidth] = &[GroupBandwidth::Links, GroupBandwidth::WholeDimension];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(GroupBandwidth);

/// How a study turns collectives into coefficients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveModel {
    /// How dimensions combine.
    pub time_model: TimeModel,
    /// The algorithm of each dimension.
    pub algorithms: Vec<Algorithm>,
    /// What a group spanning part of a dimension gets of its bandwidth.
    pub group_bandwidth: GroupBandwidth,
    /// The NPU's memory bandwidth for reductions, GB/s: every byte an NPU
    /// reduces reads two operands and writes one (`3 R / M`, module doc);
    /// `None`: reductions cost nothing (LIBRA's assumption).
    #[serde(default)]
    pub reduction_gbps: Option<f64>,
}

impl CollectiveModel {
    /// Default algorithms for `fabric` under `time_model`.
    pub fn defaults(fabric: &Fabric, time_model: TimeModel) -> Self {
        CollectiveModel {
            time_model,
            algorithms: fabric.dims.iter().map(|d| Algorithm::default_for(d.block)).collect(),
            group_bandwidth: GroupBandwidth::default(),
            reduction_gbps: None,
        }
    }

    /// The time an NPU's memory takes to reduce `reduced` bytes (three
    /// passes at `reduction_gbps`; 0 without it), ns.
    pub fn reduction_ns(&self, reduced: f64) -> f64 {
        self.reduction_gbps
            .map_or(0.0, |m| units::transfer_ns(3.0 * reduced, m))
    }
}

/// One dimension's share of a collective: `t_d(B) = alpha_ns + bytes / B`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct DimCoeff {
    /// Latency part, ns.
    pub alpha_ns: f64,
    /// Bytes one NPU moves over the dimension.
    pub bytes: f64,
}

impl DimCoeff {
    /// `alpha + bytes / B` in ns; zero if the dimension is not used.
    pub fn time_ns(&self, gbps: f64) -> f64 {
        if self.bytes <= 0.0 && self.alpha_ns <= 0.0 {
            0.0
        } else {
            self.alpha_ns + units::transfer_ns(self.bytes, gbps)
        }
    }
}

/// A collective's time coefficients on every dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coefficients {
    /// One per fabric dimension.
    pub dims: Vec<DimCoeff>,
    /// `true`: the time is the sum over dimensions; `false`: the max.
    pub sequential: bool,
    /// The bandwidth lower bound's bytes: no algorithm moves fewer per NPU.
    pub min_bytes: f64,
    /// More lower envelopes of the time, each a sum over dimensions: the
    /// time is the largest of `dims`' form and every row's sum. Measured
    /// coefficients (`scheduled`) put each dimension's busiest-link time
    /// here; the analytic model leaves it empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Vec<DimCoeff>>,
}

impl Coefficients {
    /// The collective's time at allocation `bw`, ns.
    pub fn time_ns(&self, bw: &[f64]) -> f64 {
        let per_dim = self.dims.iter().zip(bw).map(|(c, b)| c.time_ns(*b));
        let main = if self.sequential {
            per_dim.sum()
        } else {
            per_dim.fold(0.0, f64::max)
        };
        self.rows
            .iter()
            .map(|r| r.iter().zip(bw).map(|(c, b)| c.time_ns(*b)).sum::<f64>())
            .fold(main, f64::max)
    }

    /// Whether dimension `d` carries bytes in any form.
    pub(crate) fn uses(&self, d: usize) -> bool {
        self.dims.get(d).is_some_and(|c| c.bytes > 0.0)
            || self.rows.iter().any(|r| r.get(d).is_some_and(|c| c.bytes > 0.0))
    }

    /// A time no algorithm can beat at allocation `bw`: `min_bytes` through
    /// the summed bandwidth of the involved dimensions, ns.
    pub fn lower_bound_ns(&self, bw: &[f64]) -> f64 {
        let injection: f64 = self
            .dims
            .iter()
            .enumerate()
            .zip(bw)
            .filter(|((d, _), _)| self.uses(*d))
            .map(|(_, b)| *b)
            .sum();
        units::transfer_ns(self.min_bytes, injection)
    }
}

/// Bytes one NPU moves over each dimension for a hierarchical collective of
/// `size` bytes over `group` (LIBRA's model; see the module doc).
///
/// ```
/// use dimsum::model::collective::bytes_per_dim;
/// use dimsum::model::workload::{place, CollectiveKind};
///
/// // An all-reduce of 64 MB over 32 NPUs, 4 on a ring times 8 on a switch:
/// // 2 (4 - 1) / 4 of it on the ring, then 2 (8 - 1) / 8 of the quarter
/// // left on the switch.
/// let group = place(1, 32, &[4, 8]).ok_or("32 ranks tile 4 x 8")?;
/// let bytes = bytes_per_dim(CollectiveKind::AllReduce, 64e6, &group);
/// assert!((bytes[0] - 96e6).abs() < 1e-3 && (bytes[1] - 28e6).abs() < 1e-3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn bytes_per_dim(kind: CollectiveKind, size: f64, group: &Group) -> Vec<f64> {
    let mut out = vec![0.0; group.0.len()];
    let mut s = size;
    match kind {
        CollectiveKind::AllReduce | CollectiveKind::ReduceScatter => {
            let factor = if kind == CollectiveKind::AllReduce { 2.0 } else { 1.0 };
            for (d, g) in group.0.iter().enumerate() {
                if let Some(p) = g {
                    let p = f64::from(*p);
                    out[d] = factor * s * (p - 1.0) / p;
                    s /= p;
                }
            }
        }
        CollectiveKind::AllGather => {
            for (d, g) in group.0.iter().enumerate().rev() {
                if let Some(p) = g {
                    let p = f64::from(*p);
                    out[d] = s * (p - 1.0);
                    s *= p;
                }
            }
        }
        CollectiveKind::AllToAll => {
            for (d, g) in group.0.iter().enumerate() {
                if let Some(p) = g {
                    let p = f64::from(*p);
                    out[d] = s * (p - 1.0) / p;
                }
            }
        }
        CollectiveKind::SendRecv => {
            // Neighbours differ in the innermost involved dimension.
            if let Some(d) = group.0.iter().position(|g| g.is_some_and(|p| p > 1)) {
                out[d] = s;
            }
        }
    }
    out
}

/// Per dimension, the fraction of a flat ring's hops (over a group in rank
/// order) that cross it: with the involved dimensions' sizes p_1 (innermost)
/// to p_k, dimension i < k carries `(p_i - 1) / (p_1 ... p_i)` of the hops
/// and the outermost `1 / (p_1 ... p_{k-1})` (its wrap-around included);
/// the fractions sum to 1. `None` for a group on fewer than two dimensions.
pub fn ring_hop_shares(group: &Group) -> Option<Vec<f64>> {
    let involved: Vec<(usize, f64)> = group
        .0
        .iter()
        .enumerate()
        .filter_map(|(d, g)| g.filter(|p| *p > 1).map(|p| (d, f64::from(p))))
        .collect();
    if involved.len() < 2 {
        return None;
    }
    let mut out = vec![0.0; group.0.len()];
    let mut inner = 1.0;
    for (i, &(d, p)) in involved.iter().enumerate() {
        out[d] = if i + 1 == involved.len() {
            1.0 / inner
        } else {
            (p - 1.0) / (inner * p)
        };
        inner *= p;
    }
    Some(out)
}

/// The `nccl` time model's coefficients (see [`TimeModel::Nccl`]), if the
/// collective is a ring collective over two or more dimensions.
fn flat_ring(comm: &Comm, fabric: &Fabric, model: &CollectiveModel) -> Option<Coefficients> {
    let n = comm.group.size() as f64;
    // A ring's traffic per NPU: each of its n - 1 (twice for all-reduce)
    // steps forwards 1/n of the vector; all-gather's bytes are one NPU's share.
    let total = match comm.kind {
        CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n * comm.bytes,
        CollectiveKind::ReduceScatter => (n - 1.0) / n * comm.bytes,
        CollectiveKind::AllGather => (n - 1.0) * comm.bytes,
        CollectiveKind::AllToAll | CollectiveKind::SendRecv => return None,
    };
    let steps = if comm.kind == CollectiveKind::AllReduce {
        2.0 * (n - 1.0)
    } else {
        n - 1.0
    };
    let shares = ring_hop_shares(&comm.group)?;
    // The reduce-scatter half reduces (n - 1)/n of the vector; the
    // dimensions combine by max, so each carries it.
    let reduce = match comm.kind {
        CollectiveKind::AllReduce | CollectiveKind::ReduceScatter => model.reduction_ns((n - 1.0) / n * comm.bytes),
        _ => 0.0,
    };
    let dims = fabric
        .dims
        .iter()
        .zip(&shares)
        .map(|(dim, share)| {
            if *share > 0.0 {
                DimCoeff {
                    // Every step waits for its slowest hop.
                    alpha_ns: steps * dim.block.hops_per_step() * dim.latency_ns + reduce,
                    bytes: total * share,
                }
            } else {
                DimCoeff::default()
            }
        })
        .collect();
    Some(Coefficients {
        dims,
        sequential: false,
        min_bytes: min_bytes(comm.kind, comm.bytes, &comm.group),
        rows: Vec::new(),
    })
}

/// Bytes no algorithm can do without, per NPU (see the module doc).
pub fn min_bytes(kind: CollectiveKind, size: f64, group: &Group) -> f64 {
    let p = group.size() as f64;
    if p <= 1.0 {
        return 0.0;
    }
    match kind {
        CollectiveKind::AllReduce => 2.0 * size * (p - 1.0) / p,
        CollectiveKind::ReduceScatter | CollectiveKind::AllToAll => size * (p - 1.0) / p,
        CollectiveKind::AllGather => size * (p - 1.0),
        CollectiveKind::SendRecv => size,
    }
}

/// The coefficients of `comm` on `fabric` under `model`. The group must have
/// been checked against the fabric (`Group::check`).
pub fn coefficients(comm: &Comm, fabric: &Fabric, model: &CollectiveModel) -> Coefficients {
    if model.time_model == TimeModel::Nccl
        && let Some(c) = flat_ring(comm, fabric, model)
    {
        return c;
    }
    let bytes = bytes_per_dim(comm.kind, comm.bytes, &comm.group);
    let dims = fabric
        .dims
        .iter()
        .enumerate()
        .map(|(d, dim)| {
            let p = comm.group.0.get(d).copied().flatten().unwrap_or(1);
            let mut b = bytes.get(d).copied().unwrap_or(0.0);
            // What this level reduces: every byte a reduce-scatter receives,
            // the first half of an all-reduce's (LIBRA's bytes).
            let reduced = match comm.kind {
                CollectiveKind::ReduceScatter => b,
                CollectiveKind::AllReduce => b / 2.0,
                _ => 0.0,
            };
            let mut hops = model.algorithms[d].steps(comm.kind, p) * dim.block.hops_per_step();
            if model.algorithms[d] == Algorithm::Swing
                && p > 1
                && let Some(m) = super::swing::dim_model(comm.kind, p, dim.block == Block::Ring)
            {
                // LIBRA's bytes give the vector at this dimension back.
                let pf = f64::from(p);
                let size = match comm.kind {
                    CollectiveKind::AllReduce => b * pf / (2.0 * (pf - 1.0)),
                    _ => b * pf / (pf - 1.0),
                };
                b = m.factor * size;
                hops = m.hops;
            }
            // A group on part of the dimension.
            b *= model.group_bandwidth.factor(comm.kind, dim.block, p, dim.npus);
            // An oversubscribed fat-tree's taper (model::fattree).
            if let Some(t) = &dim.fat_tree {
                b *= t.taper(model.algorithms[d], comm.kind, p);
            }
            let alpha_ns = match model.time_model {
                TimeModel::Libra => 0.0,
                TimeModel::Pipelined | TimeModel::Sequential | TimeModel::Nccl => hops * dim.latency_ns,
            } + model.reduction_ns(reduced);
            DimCoeff { alpha_ns, bytes: b }
        })
        .collect();
    Coefficients {
        dims,
        sequential: model.time_model == TimeModel::Sequential,
        min_bytes: min_bytes(comm.kind, comm.bytes, &comm.group),
        rows: Vec::new(),
    }
}

impl crate::error::Named for Algorithm {
    const WHAT: &'static str = "an algorithm";
    const ALL: &'static [Algorithm] = &[
        Algorithm::Ring,
        Algorithm::Direct,
        Algorithm::HalvingDoubling,
        Algorithm::Swing,
    ];
    fn as_name(self) -> &'static str {
        self.name()
    }
}

impl std::str::FromStr for Algorithm {
    type Err = crate::error::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        <Algorithm as crate::error::Named>::from_name(s)
    }
}

impl crate::error::Named for TimeModel {
    const WHAT: &'static str = "a time model";
    const ALL: &'static [TimeModel] = &[
        TimeModel::Libra,
        TimeModel::Pipelined,
        TimeModel::Sequential,
        TimeModel::Nccl,
    ];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(TimeModel);

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::dim;
    use approx::assert_relative_eq;

    #[test]
    fn nccl_flat_ring_by_hand() {
        // A 16-NPU all-reduce over 8 NPUs of a switch and 2 of another (TP
        // 16 across two DGX nodes): a ring of 16 hops, 14 inside nodes and 2
        // between them. Per NPU the ring moves 2 * 15/16 * S; 7/8 of it
        // inside the node, 1/8 across.
        let f = Fabric {
            dims: vec![
                dim("node", Block::Switch, 8, 1000.0),
                dim("net", Block::Switch, 2, 3000.0),
            ],
        };
        let c = all_reduce(16e6, &[8, 2]);
        let g = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Nccl));
        let ring = 2.0 * 15.0 / 16.0 * 16e6;
        assert_relative_eq!(g.dims[0].bytes, ring * 7.0 / 8.0);
        assert_relative_eq!(g.dims[1].bytes, ring / 8.0);
        // 30 steps of two switch hops at each dimension's latency.
        assert_eq!(g.dims[1].alpha_ns, 30.0 * 2.0 * 3000.0);
        assert!(!g.sequential);
        // The hierarchical (pipelined) model sends only 2 * 1/2 * S / 8
        // across: NCCL's ring carries 15/8 as much over the network.
        let p = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Pipelined));
        assert_relative_eq!(g.dims[1].bytes / p.dims[1].bytes, 15.0 / 8.0);
        // Shares over three dimensions (4 x 2 x 3): 3/4, 1/8, 1/8.
        let shares = ring_hop_shares(&Group(vec![Some(4), Some(2), Some(3)])).unwrap();
        assert_eq!(shares, vec![0.75, 0.125, 0.125]);
        // One dimension: as pipelined.
        let one = all_reduce(16e6, &[8, -1]);
        assert_eq!(
            coefficients(&one, &f, &CollectiveModel::defaults(&f, TimeModel::Nccl)).dims,
            coefficients(&one, &f, &CollectiveModel::defaults(&f, TimeModel::Pipelined)).dims
        );
    }

    fn ring4_switch8() -> Fabric {
        Fabric {
            dims: vec![dim("a", Block::Ring, 4, 100.0), dim("b", Block::Switch, 8, 500.0)],
        }
    }

    fn all_reduce(bytes: f64, group: &[i64]) -> Comm {
        Comm {
            kind: CollectiveKind::AllReduce,
            bytes,
            group: Group::from_libra(group).unwrap(),
        }
    }

    /// One 64 MB all-reduce on Ring(4) x Switch(8) at B = (100, 50) GB/s.
    ///
    /// Bytes: dim 0: 2 * 64e6 * 3/4 = 96e6; S becomes 16e6;
    ///        dim 1: 2 * 16e6 * 7/8 = 28e6.
    /// Transfer: 96e6 / 100 = 960_000 ns; 28e6 / 50 = 560_000 ns.
    /// Latency (ring on the ring, direct on the switch):
    ///        dim 0: 2*(4-1) = 6 steps * 1 hop * 100 ns = 600 ns;
    ///        dim 1: 2 steps * 2 hops * 500 ns = 2000 ns.
    #[test]
    fn all_reduce_ring4_switch8_each_time_model() {
        let f = ring4_switch8();
        let c = all_reduce(64e6, &[4, 8]);
        let bw = [100.0, 50.0];
        let libra = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Libra));
        assert_relative_eq!(libra.dims[0].bytes, 96e6);
        assert_relative_eq!(libra.dims[1].bytes, 28e6);
        assert_relative_eq!(libra.time_ns(&bw), 960_000.0);
        let pipe = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Pipelined));
        assert_relative_eq!(pipe.dims[0].alpha_ns, 600.0);
        assert_relative_eq!(pipe.dims[1].alpha_ns, 2000.0);
        // max(600 + 960_000, 2000 + 560_000)
        assert_relative_eq!(pipe.time_ns(&bw), 960_600.0);
        let seq = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Sequential));
        // 960_600 + 562_000
        assert_relative_eq!(seq.time_ns(&bw), 1_522_600.0);
        // Lower bound: 2 * 64e6 * 31/32 = 124e6 bytes through 150 GB/s.
        assert_relative_eq!(libra.lower_bound_ns(&bw), 124e6 / 150.0);
    }

    #[test]
    fn reduce_scatter_all_gather_all_to_all_bytes() {
        let g = Group::from_libra(&[4, -1, 8]).unwrap();
        // RS: 3/4 S, then S/4 * 7/8.
        let rs = bytes_per_dim(CollectiveKind::ReduceScatter, 32.0, &g);
        assert_eq!(rs, vec![24.0, 0.0, 7.0]);
        // AG from the last dimension: S * 7, then 8 S * 3.
        let ag = bytes_per_dim(CollectiveKind::AllGather, 1.0, &g);
        assert_eq!(ag, vec![24.0, 0.0, 7.0]);
        // A2A: S * 3/4 and S * 7/8, no resizing.
        let a2a = bytes_per_dim(CollectiveKind::AllToAll, 32.0, &g);
        assert_eq!(a2a, vec![24.0, 0.0, 28.0]);
        // All-gather moves S (P - 1) = 31 bytes in all, the minimum.
        assert_relative_eq!(min_bytes(CollectiveKind::AllGather, 1.0, &g), 31.0);
    }

    #[test]
    fn steps_per_algorithm() {
        use CollectiveKind::*;
        assert_eq!(Algorithm::Ring.steps(AllReduce, 8), 14.0);
        assert_eq!(Algorithm::Ring.steps(AllGather, 8), 7.0);
        assert_eq!(Algorithm::Direct.steps(AllReduce, 8), 2.0);
        assert_eq!(Algorithm::Direct.steps(ReduceScatter, 8), 1.0);
        assert_eq!(Algorithm::HalvingDoubling.steps(AllReduce, 8), 6.0);
        assert_eq!(Algorithm::HalvingDoubling.steps(AllGather, 6), 3.0);
        assert_eq!(Algorithm::Ring.steps(AllReduce, 1), 0.0);
        assert!(!Algorithm::Direct.fits(Block::Ring));
        assert!(Algorithm::HalvingDoubling.fits(Block::Switch));
    }

    #[test]
    fn uninvolved_dimension_costs_nothing_even_at_zero_bandwidth() {
        let f = ring4_switch8();
        let c = all_reduce(1e6, &[4, -1]);
        let k = coefficients(&c, &f, &CollectiveModel::defaults(&f, TimeModel::Pipelined));
        assert_eq!(k.dims[1], DimCoeff::default());
        assert!(k.time_ns(&[10.0, 0.0]).is_finite());
        assert!(k.time_ns(&[0.0, 10.0]).is_infinite());
    }
}

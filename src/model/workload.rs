//! The training workload: layers, each with three phases (forward,
//! input-grad, weight-grad); each phase has a compute time and at most one
//! collective, with its type, size and communicator.
//!
//! This is the ASTRA-sim 1.0 / LIBRA workload model. A communicator gives the
//! group size per fabric dimension (LIBRA's `[4, 4, -1, -1]`, -1 = dimension
//! not involved); the collective runs hierarchically over the involved
//! dimensions. The workload only describes; `collective` and `training` turn it
//! into times on a fabric.

use crate::model::fabric::Fabric;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The collectives a phase can issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveKind {
    /// Every NPU ends with the sum of every NPU's buffer.
    AllReduce,
    /// Every NPU ends with its 1/p share of the sum.
    ReduceScatter,
    /// Every NPU ends with every NPU's buffer.
    AllGather,
    /// Every NPU sends a distinct 1/p slice to every other.
    AllToAll,
    /// Point-to-point between neighbouring members of the group (pipeline
    /// stages): every NPU sends the buffer to the next and receives one.
    SendRecv,
}

impl CollectiveKind {
    /// The collectives a schedule can describe (all but send-recv), in the
    /// order the command line lists them.
    pub const SCHEDULED: [CollectiveKind; 4] = [
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce,
        CollectiveKind::AllToAll,
    ];

    /// The collective `s` names, one of [`CollectiveKind::SCHEDULED`].
    pub fn scheduled(s: &str) -> Result<CollectiveKind, crate::error::UnknownName> {
        Self::SCHEDULED
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| crate::error::UnknownName {
                what: "a collective",
                given: s.to_string(),
                allowed: crate::error::one_of(&Self::SCHEDULED.map(CollectiveKind::name)),
            })
    }

    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::AllToAll => "all-to-all",
            CollectiveKind::SendRecv => "send-recv",
        }
    }
}

impl fmt::Display for CollectiveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl crate::error::Named for CollectiveKind {
    const WHAT: &'static str = "a collective";
    const ALL: &'static [CollectiveKind] = &[
        CollectiveKind::AllReduce,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather,
        CollectiveKind::AllToAll,
        CollectiveKind::SendRecv,
    ];
    fn as_name(self) -> &'static str {
        self.name()
    }
}

impl std::str::FromStr for CollectiveKind {
    type Err = crate::error::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        <CollectiveKind as crate::error::Named>::from_name(s)
    }
}

/// A fast, deterministic (not DoS-resistant) hasher for fingerprints: each
/// word multiplied into the state (the Fx hash's rotate-xor-multiply).
struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Why a communicator is not allowed (`Group::from_libra`) or does not fit
/// a fabric (`Group::check`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// A LIBRA group size that is neither -1 nor at least 1.
    #[error("group size {size} on dimension {dim} is not allowed: use -1 (not involved) or a size >= 1")]
    BadSize {
        /// The size given.
        size: i64,
        /// Its position.
        dim: usize,
    },
    /// One entry per dimension is needed.
    #[error("communicator has {entries} entries but the fabric has {dims} dimensions ({shape})")]
    Entries {
        /// Entries given.
        entries: usize,
        /// The fabric's dimensions.
        dims: usize,
        /// The fabric's shape.
        shape: String,
    },
    /// A group larger than its dimension.
    #[error("group size {size} exceeds dimension `{dim}`, which has {npus} NPUs")]
    Exceeds {
        /// The group size.
        size: u32,
        /// The dimension's name.
        dim: String,
        /// Its NPUs.
        npus: u32,
    },
    /// A group that does not tile its dimension.
    #[error("group size {size} does not divide dimension `{dim}` ({npus} NPUs), so groups cannot tile it")]
    NotDividing {
        /// The group size.
        size: u32,
        /// The dimension's name.
        dim: String,
        /// Its NPUs.
        npus: u32,
    },
}

/// A communicator: the group size on each fabric dimension, `None` where the
/// dimension is not involved.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Group(pub Vec<Option<u32>>);

impl Group {
    /// From LIBRA's notation: -1 means not involved. Values must be -1 or >= 1.
    pub fn from_libra(sizes: &[i64]) -> Result<Group, GroupError> {
        sizes
            .iter()
            .enumerate()
            .map(|(d, &s)| match s {
                -1 => Ok(None),
                s if s >= 1 && s <= i64::from(u32::MAX) => Ok(Some(s as u32)),
                size => Err(GroupError::BadSize { size, dim: d }),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Group)
    }

    /// LIBRA's notation, -1 for not involved.
    pub fn to_libra(&self) -> Vec<i64> {
        self.0.iter().map(|g| g.map_or(-1, i64::from)).collect()
    }

    /// Total NPUs in the group.
    pub fn size(&self) -> u64 {
        self.0.iter().flatten().map(|&g| u64::from(g)).product()
    }

    /// Checks the group against a fabric: one entry per dimension, each
    /// involved size dividing that dimension's NPU count (so groups tile it).
    pub fn check(&self, fabric: &Fabric) -> Result<(), GroupError> {
        if self.0.len() != fabric.ndims() {
            return Err(GroupError::Entries {
                entries: self.0.len(),
                dims: fabric.ndims(),
                shape: fabric.shape(),
            });
        }
        for (g, d) in self.0.iter().zip(&fabric.dims) {
            if let Some(g) = *g {
                if g > d.npus {
                    return Err(GroupError::Exceeds {
                        size: g,
                        dim: d.name.clone(),
                        npus: d.npus,
                    });
                }
                if d.npus % g != 0 {
                    return Err(GroupError::NotDividing {
                        size: g,
                        dim: d.name.clone(),
                        npus: d.npus,
                    });
                }
            }
        }
        Ok(())
    }
}

/// One collective issued by a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comm {
    /// Type.
    pub kind: CollectiveKind,
    /// Size in bytes as LIBRA reads it: the buffer for all-reduce,
    /// reduce-scatter and all-to-all; each NPU's contribution for all-gather.
    pub bytes: f64,
    /// Communicator.
    pub group: Group,
}

/// One phase of a layer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Phase {
    /// Compute time, ns.
    pub compute_ns: f64,
    /// The collective issued after the compute, if any.
    pub comm: Option<Comm>,
    /// Compute elsewhere in the iteration that the collective runs under
    /// instead of after (ns; 0: it blocks, as LIBRA's phases do): a ring
    /// attention's KV exchange under the attention core, a tensor-parallel
    /// collective pipelined with its matrix products. The `overlap` loop
    /// times the collectives of one communicator that hide as one stream
    /// beside their compute (see `model::training`); `no-overlap` and the
    /// exports treat them as blocking.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden_ns: f64,
    /// What the collective hides under (a stream of its own per
    /// communicator and kind of hiding: two kinds never share compute).
    #[serde(default, skip_serializing_if = "Hiding::is_none")]
    pub hidden_by: Hiding,
}

/// The compute a hidden collective runs under (`Phase::hidden_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hiding {
    /// It blocks.
    #[default]
    None,
    /// Its block's linear products (tensor-parallel overlap).
    Products,
    /// Its attention core (ring attention's key-value exchange).
    AttentionCore,
    /// Its MoE layer's experts (another micro-batch's, DualPipe-style).
    Experts,
    /// The micro-batch's layers (ZeRO-3 prefetch).
    Layers,
}

impl Hiding {
    /// Whether it blocks (left out of written workloads).
    pub fn is_none(&self) -> bool {
        *self == Hiding::None
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// The three phases, in the order a layer's record lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Forward pass.
    Forward,
    /// Gradient with respect to the layer's input (backward, on the critical path).
    InputGrad,
    /// Gradient with respect to the layer's weights.
    WeightGrad,
}

impl PhaseKind {
    /// All three, in record order.
    pub const ALL: [PhaseKind; 3] = [PhaseKind::Forward, PhaseKind::InputGrad, PhaseKind::WeightGrad];

    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::Forward => "forward",
            PhaseKind::InputGrad => "input_grad",
            PhaseKind::WeightGrad => "weight_grad",
        }
    }
}

/// One layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    /// Name, e.g. `Q1`.
    pub name: String,
    /// Forward phase.
    pub forward: Phase,
    /// Input-gradient phase.
    pub input_grad: Phase,
    /// Weight-gradient phase.
    pub weight_grad: Phase,
}

impl Layer {
    /// The phase of the given kind.
    pub(crate) fn phase(&self, kind: PhaseKind) -> &Phase {
        match kind {
            PhaseKind::Forward => &self.forward,
            PhaseKind::InputGrad => &self.input_grad,
            PhaseKind::WeightGrad => &self.weight_grad,
        }
    }
}

/// A training iteration's layers, in forward order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Workload {
    /// Layers, first to last.
    pub layers: Vec<Layer>,
}

impl Workload {
    /// A hash of every record (names, compute, collectives, bytes, groups):
    /// equal workloads have equal fingerprints, so a search can solve one
    /// of them for all (the fingerprint only finds candidates; equality
    /// is what it stands for).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = FastHasher(0);
        for l in &self.layers {
            l.name.hash(&mut h);
            for p in [&l.forward, &l.input_grad, &l.weight_grad] {
                p.compute_ns.to_bits().hash(&mut h);
                if let Some(c) = &p.comm {
                    c.kind.hash(&mut h);
                    c.bytes.to_bits().hash(&mut h);
                    c.group.hash(&mut h);
                }
            }
        }
        h.finish()
    }

    /// Total compute time of one iteration, ns.
    pub fn compute_ns(&self) -> f64 {
        self.layers
            .iter()
            .flat_map(|l| PhaseKind::ALL.map(|k| l.phase(k).compute_ns))
            .sum()
    }

    /// Every collective with its layer index and phase.
    pub(crate) fn comms(&self) -> impl Iterator<Item = (usize, PhaseKind, &Comm)> {
        self.layers.iter().enumerate().flat_map(|(i, l)| {
            PhaseKind::ALL
                .into_iter()
                .filter_map(move |k| l.phase(k).comm.as_ref().map(|c| (i, k, c)))
        })
    }
}

/// Places a group of `size` consecutive-stride ranks that skips the first
/// `skip` ranks (rank order, dimension 0 fastest) on dimensions of `npus`:
/// the group size per dimension, or `None` if the group does not tile the
/// dimensions evenly.
pub fn place(skip: u64, size: u64, npus: &[u32]) -> Option<Group> {
    let (mut skip, mut take) = (skip, size);
    let mut out = Vec::with_capacity(npus.len());
    for &n in npus {
        let mut cap = u64::from(n);
        let s = skip.min(cap);
        if skip % s != 0 || cap % s != 0 {
            return None;
        }
        skip /= s;
        cap /= s;
        let t = take.min(cap);
        if take % t != 0 || cap % t != 0 {
            return None;
        }
        take /= t;
        out.push((t > 1).then_some(t as u32));
    }
    (take == 1 && skip == 1).then_some(Group(out))
}

/// Where `group` sits on `fabric` in rank order (dimension 0 fastest): it
/// skips `skip` NPUs' worth of inner dimensions and spans `size` NPUs
/// outward, as `(skip, size)`. A group that goes on outward covers the
/// outer part of its first dimension; one that stays inside it is taken
/// from its start.
pub fn rank_position(group: &Group, fabric: &Fabric) -> (u64, u64) {
    let size = group.size();
    let first = group.0.iter().position(|g| g.is_some_and(|g| g > 1));
    let Some(first) = first else { return (1, 1) };
    let inner: u64 = fabric.dims[..first].iter().map(|d| u64::from(d.npus)).product();
    let g = u64::from(group.0[first].unwrap_or(1));
    let outward = group.0[first + 1..].iter().any(|g| g.is_some_and(|g| g > 1));
    let partial = if outward {
        u64::from(fabric.dims[first].npus) / g
    } else {
        1
    };
    (inner * partial, size)
}

impl Workload {
    /// This workload, whose groups sit on `origin`, with every
    /// communicator re-placed on a fabric of `npus` per dimension at the
    /// same position in rank order ([`rank_position`], [`place`]); `None`
    /// where a group cannot be placed so.
    pub fn replaced(&self, origin: &Fabric, npus: &[u32]) -> Option<Workload> {
        let mut workload = self.clone();
        for layer in &mut workload.layers {
            for phase in [&mut layer.forward, &mut layer.input_grad, &mut layer.weight_grad] {
                if let Some(c) = &mut phase.comm {
                    let (skip, size) = rank_position(&c.group, origin);
                    c.group = place(skip, size, npus)?;
                }
            }
        }
        Some(workload)
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::libra_4d;

    #[test]
    fn libra_notation() {
        let g = Group::from_libra(&[-1, 2, 4, 32]).unwrap();
        assert_eq!(g.0, vec![None, Some(2), Some(4), Some(32)]);
        assert_eq!(g.size(), 256);
        assert_eq!(g.to_libra(), vec![-1, 2, 4, 32]);
        assert!(
            Group::from_libra(&[0, 1])
                .unwrap_err()
                .to_string()
                .contains("group size 0")
        );
        assert!(Group::from_libra(&[-2]).is_err());
    }

    #[test]
    fn group_checks() {
        let f = libra_4d();
        assert!(Group::from_libra(&[4, 4, -1, -1]).unwrap().check(&f).is_ok());
        let e = Group::from_libra(&[4, 4, -1])
            .unwrap()
            .check(&f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 entries") && e.contains("4 dimensions"), "{e}");
        let e = Group::from_libra(&[8, -1, -1, -1])
            .unwrap()
            .check(&f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exceeds dimension `chiplet`"), "{e}");
        let e = Group::from_libra(&[-1, 3, -1, -1])
            .unwrap()
            .check(&f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not divide"), "{e}");
    }
}

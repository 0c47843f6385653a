//! The fabric: N dimensions, each a building block (ring, fully-connected
//! group or switch) of `npus` NPUs, with a link latency, optional bandwidth
//! bounds and a cost tier.
//!
//! This is the shape LIBRA (Won et al., ISPASS'24) and ASTRA-sim's analytical
//! network optimize over: a multi-dimensional network where every NPU has one
//! bandwidth `B_d` (GB/s per NPU) on each dimension d. Ranks map to coordinates
//! with dimension 0 varying fastest, as ASTRA-sim numbers NPUs: rank =
//! c0 + n0 * (c1 + n1 * (c2 + ...)).
//!
//! The fabric knows nothing of files, costs or solvers; `study` builds it from
//! the study file and validates it there with line numbers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The building block of one dimension (astra-network-analytical's basic
/// topologies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Block {
    /// Bidirectional ring: each NPU has a link to both neighbours.
    Ring,
    /// Every pair of NPUs in the group has a direct link.
    FullyConnected,
    /// Every NPU has an up and a down link to one switch.
    Switch,
}

impl Block {
    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            Block::Ring => "ring",
            Block::FullyConnected => "fully-connected",
            Block::Switch => "switch",
        }
    }

    /// Link hops an NPU-to-NPU transfer takes on one step: two through a
    /// switch (up, down), one on a direct link.
    pub(crate) fn hops_per_step(self) -> f64 {
        match self {
            Block::Switch => 2.0,
            Block::Ring | Block::FullyConnected => 1.0,
        }
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension of the fabric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dim {
    /// A name for reports and constraints, e.g. `package`.
    pub name: String,
    /// Building block.
    pub block: Block,
    /// NPUs along this dimension (>= 2).
    pub npus: u32,
    /// Latency of one link hop in ns.
    pub latency_ns: f64,
    /// Smallest allowed bandwidth, GB/s per NPU.
    pub min_gbps: Option<f64>,
    /// Largest allowed bandwidth (e.g. a technology cap), GB/s per NPU.
    pub max_gbps: Option<f64>,
    /// Cost tier: the key into the cost model.
    pub tier: String,
    /// The bandwidths that can actually be bought, GB/s per NPU, if the
    /// dimension is discrete (the optimizer then picks one of them).
    pub options_gbps: Option<Vec<f64>>,
    /// A switch dimension built as a fat-tree (`block = "fat-tree"`):
    /// levels, oversubscription, rails (`model::fattree`); `None`: one
    /// switch per group and plane, or today's two-tier leaf-spine where a
    /// group outgrows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_tree: Option<FatTree>,
}

impl Dim {
    /// The study-file name of its block: `fat-tree` for a switch built as
    /// one, else [`Block::name`].
    pub fn block_name(&self) -> &'static str {
        match self.fat_tree {
            Some(_) => "fat-tree",
            None => self.block.name(),
        }
    }
}

/// How a fat-tree dimension's tree meets the dimensions below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rails {
    /// One tree per group of the dimension (and per port plane).
    PerGroup,
    /// Rail-optimized: one tree spans the dimension's groups and every
    /// dimension below it, its leaves rail-aligned.
    Optimized,
}

/// A switch dimension built as a fat-tree; counts and taper in
/// `model::fattree`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FatTree {
    /// Levels of switches (`None`: the fewest the radix allows).
    pub levels: Option<u32>,
    /// Down:up ratio per level below the top, leaves first (>= 1; a level
    /// not listed is non-blocking).
    pub oversubscription: Vec<f64>,
    /// Per group or rail-optimized.
    pub rails: Rails,
    /// The switch radix the time model assumes: the smallest of the
    /// catalog's switches that can build the dimension (the study sets it).
    pub radix: u32,
}

impl FatTree {
    /// Endpoints one tree of dimension `d` of `fabric` spans: the group's
    /// size, times every dimension below it when rail-optimized.
    pub fn span(&self, fabric: &Fabric, d: usize) -> u64 {
        match self.rails {
            Rails::PerGroup => u64::from(fabric.dims[d].npus),
            Rails::Optimized => fabric.dims[..=d].iter().map(|x| u64::from(x.npus)).product(),
        }
    }
}

/// A multi-dimensional fabric.
///
/// ```
/// use dimsum::model::fabric::{Block, Dim, Fabric};
/// let dim = |name: &str, block, npus| Dim {
///     name: name.into(),
///     block,
///     npus,
///     latency_ns: 500.0,
///     min_gbps: None,
///     max_gbps: None,
///     tier: name.into(),
///     options_gbps: None,
///     fat_tree: None,
/// };
/// // 4 NPUs on a ring in each of 8 nodes on a switch: 32 NPUs.
/// let f = Fabric { dims: vec![dim("node", Block::Ring, 4), dim("pod", Block::Switch, 8)] };
/// assert_eq!(f.npus(), 32);
/// assert_eq!(f.shape(), "Ring(4) x Switch(8)");
/// // Dimension 0 varies fastest: rank 13 = 1 + 4 x 3.
/// assert_eq!(f.coords(13), Some(vec![1, 3]));
/// assert_eq!(f.rank(&[1, 3]), Some(13));
/// assert_eq!(f.coords(32), None);
/// assert_eq!(f.rank(&[4, 0]), None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fabric {
    /// Dimensions, innermost (fastest varying) first.
    pub dims: Vec<Dim>,
}

impl Fabric {
    /// Number of dimensions.
    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// Total NPUs: the product of every dimension's size.
    pub fn npus(&self) -> u64 {
        self.dims.iter().map(|d| u64::from(d.npus)).product()
    }

    /// Shape, e.g. `Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)`.
    pub fn shape(&self) -> String {
        let parts: Vec<String> = self
            .dims
            .iter()
            .map(|d| {
                let b = match d.block {
                    Block::Ring => "Ring",
                    Block::FullyConnected => "FullyConnected",
                    Block::Switch if d.fat_tree.is_some() => "FatTree",
                    Block::Switch => "Switch",
                };
                format!("{b}({})", d.npus)
            })
            .collect();
        parts.join(" x ")
    }

    /// Coordinates of `rank`, dimension 0 varying fastest. `None` if the rank
    /// is outside the fabric.
    pub fn coords(&self, rank: u64) -> Option<Vec<u32>> {
        if rank >= self.npus() {
            return None;
        }
        let mut r = rank;
        let mut out = Vec::with_capacity(self.dims.len());
        for d in &self.dims {
            let n = u64::from(d.npus);
            out.push((r % n) as u32);
            r /= n;
        }
        Some(out)
    }

    /// Rank of `coords`, dimension 0 varying fastest. `None` if the
    /// coordinates do not fit the fabric.
    pub fn rank(&self, coords: &[u32]) -> Option<u64> {
        if coords.len() != self.dims.len() {
            return None;
        }
        let mut rank = 0u64;
        let mut stride = 1u64;
        for (c, d) in coords.iter().zip(&self.dims) {
            if *c >= d.npus {
                return None;
            }
            rank += u64::from(*c) * stride;
            stride *= u64::from(d.npus);
        }
        Some(rank)
    }

    /// Index of the dimension called `name`.
    pub(crate) fn dim_index(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d.name == name)
    }
}

impl crate::error::Named for Block {
    const WHAT: &'static str = "a building block";
    const ALL: &'static [Block] = &[Block::Ring, Block::FullyConnected, Block::Switch];
    fn as_name(self) -> &'static str {
        self.name()
    }
}

impl std::str::FromStr for Block {
    type Err = crate::error::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        <Block as crate::error::Named>::from_name(s)
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
pub(crate) mod tests {
    use super::*;

    pub(crate) fn dim(name: &str, block: Block, npus: u32, latency_ns: f64) -> Dim {
        Dim {
            name: name.into(),
            block,
            npus,
            latency_ns,
            min_gbps: None,
            max_gbps: None,
            tier: name.into(),
            options_gbps: None,
            fat_tree: None,
        }
    }

    pub(crate) fn libra_4d() -> Fabric {
        Fabric {
            dims: vec![
                dim("chiplet", Block::Ring, 4, 0.0),
                dim("package", Block::FullyConnected, 8, 0.0),
                dim("node", Block::Ring, 4, 0.0),
                dim("pod", Block::Switch, 32, 0.0),
            ],
        }
    }

    #[test]
    fn npus_and_shape() {
        let f = libra_4d();
        assert_eq!(f.npus(), 4 * 8 * 4 * 32);
        assert_eq!(f.shape(), "Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)");
        assert_eq!(f.dim_index("node"), Some(2));
        assert_eq!(f.dim_index("rack"), None);
    }

    #[test]
    fn dim0_varies_fastest() {
        let f = libra_4d();
        assert_eq!(f.coords(0), Some(vec![0, 0, 0, 0]));
        assert_eq!(f.coords(1), Some(vec![1, 0, 0, 0]));
        assert_eq!(f.coords(4), Some(vec![0, 1, 0, 0]));
        // 4*8 = 32 is the first rank with c2 = 1; 32*4 = 128 the first with c3 = 1.
        assert_eq!(f.coords(32), Some(vec![0, 0, 1, 0]));
        assert_eq!(f.coords(128 + 32 + 8 + 3), Some(vec![3, 2, 1, 1]));
        assert_eq!(f.coords(4096), None);
        assert_eq!(f.rank(&[3, 2, 1, 1]), Some(171));
        assert_eq!(f.rank(&[4, 0, 0, 0]), None);
        assert_eq!(f.rank(&[0, 0, 0]), None);
    }

    #[test]
    fn rank_coords_roundtrip() {
        let f = libra_4d();
        for r in 0..f.npus() {
            assert_eq!(f.rank(&f.coords(r).unwrap()), Some(r));
        }
    }
}

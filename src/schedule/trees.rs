//! The data of a forest schedule: the arcs of a switch-free network
//! ([`Arc`]), spanning out-trees ([`Tree`]), a packing of them
//! ([`Forest`]), why one was not built ([`ForestError`]) and the size
//! limits those errors name. Shared by `schedule::forest` (which packs
//! trees on any topology and builds the schedule) and `schedule::product`
//! (which writes them down in closed form on product networks).

use std::collections::HashMap;

/// Most NPUs a forest is packed for (a max-flow per arc tried).
pub const MAX_NPUS: u32 = 256;

/// Most transfers `forest::auto_pieces` lets one tree packing's pieces make.
pub const MAX_TRANSFERS: u64 = 1 << 20;

/// An arc of the switch-free network: its capacity and its route (link ids).
#[derive(Debug, Clone, PartialEq)]
pub struct Arc {
    /// Tail NPU.
    pub src: u32,
    /// Head NPU.
    pub dst: u32,
    /// Capacity, GB/s.
    pub gbps: f64,
    /// The topology's links, in the arc's direction.
    pub route: Vec<u32>,
    /// The switches the route passes, in order.
    pub via: Vec<u32>,
}

/// One spanning out-tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// Root NPU.
    pub root: u32,
    /// Weight: the rate of the root's shard it carries, GB/s.
    pub weight: f64,
    /// Arc ids (into [`Forest::arcs`]), each arc's tail before its head.
    pub arcs: Vec<u32>,
}

/// A packing of spanning out-trees.
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    /// The switch-free network.
    pub arcs: Vec<Arc>,
    /// The trees.
    pub trees: Vec<Tree>,
    /// The rate per shard packed, GB/s (every root's trees sum to it).
    pub rate: f64,
    /// The topology's exact cut rate over the rate packed (1 + 1e-6: the
    /// split lost nothing; the packing keeps 1e-6 for rounding).
    pub split_loss: f64,
    /// Whether an all-gather down these trees paces each link in rounds
    /// (step 3 of the module doc; a reduce-scatter always is). A general
    /// packing needs it; the dimension-ordered trees of a product network
    /// do not: every link of a dimension carries the same pieces in the
    /// same order, and pacing only holds back pieces a free link could send
    /// (measured: at 1 GiB the DGX-like 4x8 fabric 1.038 -> 1.003 of the
    /// bound, at 1 MiB a 4x4 torus 2.01 -> 1.14).
    pub paced: bool,
}

impl Forest {
    /// The deepest tree's depth (arcs on the longest root-to-leaf path).
    pub fn depth(&self) -> usize {
        self.trees.iter().map(|t| depth(&self.arcs, t)).max().unwrap_or(0)
    }
}

/// Why a forest was not built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ForestError {
    /// The collective is not one a forest builds.
    #[error("forest builds all-gather, reduce-scatter and all-reduce, not {0}")]
    Collective(&'static str),
    /// Too many NPUs.
    #[error(
        "forest packs trees for at most {MAX_NPUS} NPUs (a max-flow per arc tried) unless the network is a product of rings, lines, fully-connected groups and switches; this topology has {0}"
    )]
    TooLarge(u32),
    /// Some NPU cannot be reached.
    #[error("the topology does not connect every NPU to every other")]
    Disconnected,
    /// The packing found no arc to grow a tree with (numerical trouble).
    #[error("no arc extends a tree of root {0} (the packing ran out of numerical tolerance)")]
    Stuck(u32),
    /// The schedule would exceed the simulator's state limit.
    #[error("{0}")]
    TooBig(String),
    /// A linear program failed.
    #[error("{0}")]
    Solver(String),
}

/// Each node's depth in tree `t` (the root 0), from its arcs in order.
pub(super) fn levels(arcs: &[Arc], t: &Tree, step: &dyn Fn(u32) -> u32) -> HashMap<u32, u32> {
    let mut level = HashMap::new();
    level.insert(t.root, 0);
    for &e in &t.arcs {
        let a = &arcs[e as usize];
        let d = level.get(&a.src).copied().unwrap_or(0) + step(e);
        level.insert(a.dst, d);
    }
    level
}

/// The depth of tree `t`: arcs on its longest root-to-leaf path.
pub(super) fn depth(arcs: &[Arc], t: &Tree) -> usize {
    levels(arcs, t, &|_| 1).values().copied().max().unwrap_or(0) as usize
}

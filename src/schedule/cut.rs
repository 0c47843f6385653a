//! The exact cut bound of a collective on any topology (ForestColl, Zhao et
//! al., arXiv 2402.06787): for an all-gather of N shards of m bytes, no
//! schedule beats `max over node sets S holding an NPU of (NPUs outside S)
//! x m / (bandwidth into S)`, switches included in S or not as the cut
//! likes. A reduce-scatter is the all-gather on the reversed links (bandwidth
//! out of S); an all-reduce needs its whole vector M into and out of every S
//! with NPUs on both sides: `M / min(bandwidth into S, out of S)`.
//!
//! How it is computed, exactly, with max-flows (Dinic, on f64 capacities):
//! - all-gather at a rate x per shard is feasible iff, for every NPU t, the
//!   max-flow from a source joined to every NPU by capacity x to t is at
//!   least N x (a cut with t on the sink side S costs `x |NPUs in S| +
//!   B_in(S)`). The largest feasible x is found by Newton's (Dinkelbach's)
//!   method: start at the ingress bound, and whenever an NPU fails, take the
//!   min cut S that failed and set x to its ratio `B_in(S) / |NPUs outside
//!   S|` (strictly smaller); a t that passes at x passes at every smaller x,
//!   so each NPU is settled once. The last S is the bottleneck.
//! - all-reduce: fix an NPU r; every S with NPUs on both sides either holds r
//!   (some NPU u is outside: the min cut from u to r) or not (the min cut from
//!   r to some t inside): 2 (N - 1) max-flows.

use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use serde::Serialize;

/// The exact cut: time = `ns_per_byte` x the collective's buffer, attained
/// by the node set `set`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExactCut {
    /// Time per byte of the collective's buffer (the all-gather output, the
    /// reduce-scatter input, the all-reduce vector, one NPU's all-to-all
    /// send buffer), ns.
    pub ns_per_byte: f64,
    /// The bottleneck set S (node ids: NPUs first, then switches).
    pub set: Vec<u32>,
}

/// Largest topology the exact cut is computed for (NPUs): above it the
/// max-flows (one or two per NPU) take seconds per call (a 32x32 torus
/// takes 0.6 s), and the cheaper bounds stand alone.
pub const MAX_NPUS: u32 = 1024;

/// A flow network: edges in pairs (forward, residual).
pub(super) struct Net {
    head: Vec<usize>,
    next: Vec<usize>,
    to: Vec<u32>,
    cap: Vec<f64>,
}

const NONE: usize = usize::MAX;

impl Net {
    pub(super) fn new(nodes: usize) -> Net {
        Net {
            head: vec![NONE; nodes],
            next: Vec::new(),
            to: Vec::new(),
            cap: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, a: u32, b: u32, c: f64) {
        for (from, to, cap) in [(a, b, c), (b, a, 0.0)] {
            self.next.push(self.head[from as usize]);
            self.head[from as usize] = self.to.len();
            self.to.push(to);
            self.cap.push(cap);
        }
    }

    /// Max-flow from `s` to `t` on a copy of the capacities; returns the
    /// flow and the sink side of a min cut (nodes that cannot reach... i.e.
    /// not reachable from `s` in the residual network).
    pub(super) fn max_flow(&self, s: u32, t: u32, eps: f64) -> (f64, Vec<bool>) {
        let n = self.head.len();
        let mut cap = self.cap.clone();
        let mut flow = 0.0;
        let mut level = vec![u32::MAX; n];
        let mut it = vec![NONE; n];
        let mut queue = Vec::with_capacity(n);
        loop {
            // Levels by breadth-first search on residual edges.
            level.iter_mut().for_each(|l| *l = u32::MAX);
            level[s as usize] = 0;
            queue.clear();
            queue.push(s);
            let mut qi = 0;
            while qi < queue.len() {
                let u = queue[qi];
                qi += 1;
                let mut e = self.head[u as usize];
                while e != NONE {
                    let v = self.to[e];
                    if cap[e] > eps && level[v as usize] == u32::MAX {
                        level[v as usize] = level[u as usize] + 1;
                        queue.push(v);
                    }
                    e = self.next[e];
                }
            }
            if level[t as usize] == u32::MAX {
                let sink_side = level.iter().map(|l| *l == u32::MAX).collect();
                return (flow, sink_side);
            }
            it.copy_from_slice(&self.head);
            // Blocking flow by iterative depth-first search.
            loop {
                let pushed = self.augment(s, t, &mut cap, &level, &mut it, eps);
                if pushed <= eps {
                    break;
                }
                flow += pushed;
            }
        }
    }

    /// One augmenting path in the level graph (iterative), its flow pushed.
    fn augment(&self, s: u32, t: u32, cap: &mut [f64], level: &[u32], it: &mut [usize], eps: f64) -> f64 {
        let mut path: Vec<usize> = Vec::new();
        let mut u = s;
        loop {
            if u == t {
                let f = path.iter().map(|&e| cap[e]).fold(f64::INFINITY, f64::min);
                for &e in &path {
                    cap[e] -= f;
                    cap[e ^ 1] += f;
                }
                return f;
            }
            let mut advanced = false;
            while it[u as usize] != NONE {
                let e = it[u as usize];
                let v = self.to[e];
                if cap[e] > eps && level[v as usize] == level[u as usize] + 1 {
                    path.push(e);
                    u = v;
                    advanced = true;
                    break;
                }
                it[u as usize] = self.next[e];
            }
            if !advanced {
                // Dead end: retreat and skip the edge that led here.
                let Some(e) = path.pop() else {
                    return 0.0;
                };
                u = self.to[e ^ 1];
                it[u as usize] = self.next[it[u as usize]];
            }
        }
    }
}

/// The topology's links as arcs `(from, to, GB/s)`, reversed for a
/// reduce-scatter.
fn arcs_of(topo: &Topology, reversed: bool) -> Vec<(u32, u32, f64)> {
    topo.links
        .iter()
        .map(|l| {
            if reversed {
                (l.dst, l.src, l.gbps)
            } else {
                (l.src, l.dst, l.gbps)
            }
        })
        .collect()
}

/// Arcs as a flow network of `nodes` nodes and one extra node for a source.
fn network(nodes: usize, arcs: &[(u32, u32, f64)]) -> Net {
    let mut net = Net::new(nodes + 1);
    for &(a, b, c) in arcs {
        net.add(a, b, c);
    }
    net
}

/// Bandwidth of `arcs` into the node set `inside` (true = in S), GB/s.
fn into(arcs: &[(u32, u32, f64)], inside: &[bool]) -> f64 {
    arcs.iter()
        .filter(|(a, b, _)| !inside[*a as usize] && inside[*b as usize])
        .map(|(_, _, c)| c)
        .sum()
}

/// The all-gather cut on `topo` (reversed: the reduce-scatter's): the
/// largest feasible rate per shard x (GB/s) and its bottleneck set.
fn gather_rate(topo: &Topology, reversed: bool) -> Option<(f64, Vec<bool>)> {
    gather_rate_of(topo.nodes() as usize, topo.npus, &arcs_of(topo, reversed))
}

/// [`gather_rate`] on any arcs among `nodes` nodes whose first `n` are NPUs.
pub(super) fn gather_rate_of(nodes: usize, n: u32, arcs: &[(u32, u32, f64)]) -> Option<(f64, Vec<bool>)> {
    if n < 2 {
        return None;
    }
    let mut net = network(nodes, arcs);
    let source = nodes as u32;
    let first_source_edge = net.to.len();
    for v in 0..n {
        net.add(source, v, 0.0);
    }
    let max_cap = arcs.iter().map(|a| a.2).fold(0.0, f64::max);
    let eps = max_cap * 1e-12;
    // Start at the ingress bound: one NPU alone.
    let mut best: Option<(f64, Vec<bool>)> = None;
    for v in 0..n as usize {
        let mut s = vec![false; nodes + 1];
        s[v] = true;
        let x = into(arcs, &s) / f64::from(n - 1);
        if best.as_ref().is_none_or(|(b, _)| x < *b) {
            best = Some((x, s));
        }
    }
    let (mut x, mut set) = best?;
    if x <= 0.0 {
        return Some((0.0, set));
    }
    let passes = |net: &Net, x: f64, t: u32| -> (bool, Vec<bool>) {
        let (f, sink_side) = net.max_flow(source, t, eps * 1e-3);
        (f >= f64::from(n) * x * (1.0 - 1e-9), sink_side)
    };
    for v in 0..n as usize {
        net.cap[first_source_edge + 2 * v] = x;
    }
    // Every NPU checked at the ingress rate, in parallel; only those that
    // fail need Newton steps (a sink that passes at x passes below it).
    let failing: Vec<u32> = {
        use rayon::prelude::*;
        let net = &net;
        (0..n).into_par_iter().filter(|&t| !passes(net, x, t).0).collect()
    };
    for t in failing {
        // Newton steps on this sink until it passes. Each step moves x to
        // a strictly smaller ratio of a real cut, and there are finitely
        // many cuts, so the loop ends; whichever way it ends, x is the
        // ratio of the set `set`, a valid bound.
        loop {
            for v in 0..n as usize {
                net.cap[first_source_edge + 2 * v] = x;
            }
            let (ok, sink_side) = passes(&net, x, t);
            if ok {
                break;
            }
            let outside = (0..n as usize).filter(|&v| !sink_side[v]).count();
            if outside == 0 {
                break;
            }
            let ratio = into(arcs, &sink_side) / outside as f64;
            if ratio >= x {
                break;
            }
            x = ratio;
            set = sink_side;
        }
    }
    Some((x, set))
}

/// The least bandwidth into or out of a node set with NPUs on both sides
/// (the all-reduce cut), and that set.
fn reduce_cut(topo: &Topology) -> Option<(f64, Vec<bool>)> {
    let n = topo.npus;
    if n < 2 {
        return None;
    }
    let net = network(topo.nodes() as usize, &arcs_of(topo, false));
    let max_cap = topo.links.iter().map(|l| l.gbps).fold(0.0, f64::max);
    let eps = max_cap * 1e-15;
    use rayon::prelude::*;
    let cuts: Vec<(f64, Vec<bool>)> = (1..n)
        .into_par_iter()
        .flat_map_iter(|u| [(0, u), (u, 0)])
        .map(|(a, b)| net.max_flow(a, b, eps))
        .collect();
    // The least, the first in order among equals (deterministic).
    let mut best: Option<(f64, Vec<bool>)> = None;
    for (f, side) in cuts {
        if best.as_ref().is_none_or(|(v, _)| f < *v) {
            best = Some((f, side));
        }
    }
    best
}

/// The exact cut of `kind` on `topo`, or `None` for send-recv, one NPU
/// (all-to-all: 0), or more than [`MAX_NPUS`] NPUs (all-gather and
/// reduce-scatter by `schedule::product`'s closed form: on a product network
/// at any size, on a product of switches under another numbering up to
/// `schedule::product::MAX_RELABEL_NPUS`). For an all-to-all: the optimal
/// multi-commodity flow's time (`schedule::flow`, no set), within that
/// program's size limit.
pub fn exact_cut(topo: &Topology, kind: CollectiveKind) -> Option<ExactCut> {
    if kind == CollectiveKind::AllToAll {
        // The multi-commodity flow program (`schedule::flow`), within its
        // size limit (any size on a product network).
        let t = super::flow::bound_ns_per_byte(topo).ok()?;
        return Some(ExactCut {
            ns_per_byte: t,
            set: Vec::new(),
        });
    }
    if matches!(kind, CollectiveKind::AllGather | CollectiveKind::ReduceScatter)
        && let Some(dims) = super::shape::dims(topo)
    {
        // A product network: the closed form (schedule::product), at any
        // size; a reduce-scatter's reversed network is the same product.
        let (t, d) = super::shape::gather_cut(&dims);
        return Some(ExactCut {
            ns_per_byte: t / f64::from(topo.npus),
            set: super::shape::cut_set(topo, &dims, &d),
        });
    }
    if matches!(kind, CollectiveKind::AllGather | CollectiveKind::ReduceScatter)
        && let Some(r) = super::shape::switch_product(topo)
        && let Some(dims) = super::shape::dims(&r.product)
    {
        // A product of switches under another numbering (an edge list):
        // the same closed form, its node set renamed.
        let (t, d) = super::shape::gather_cut(&dims);
        return Some(ExactCut {
            ns_per_byte: t / f64::from(topo.npus),
            set: r.nodes(&super::shape::cut_set(&r.product, &dims, &d)),
        });
    }
    if topo.npus > MAX_NPUS {
        return None;
    }
    let n = f64::from(topo.npus);
    let (ns_per_byte, side) = match kind {
        CollectiveKind::AllGather | CollectiveKind::ReduceScatter => {
            let (x, side) = gather_rate(topo, kind == CollectiveKind::ReduceScatter)?;
            // A shard of M / N bytes at x GB/s (bytes per ns).
            (1.0 / (n * x), side)
        }
        CollectiveKind::AllReduce => {
            let (c, side) = reduce_cut(topo)?;
            (1.0 / c, side)
        }
        // All-to-all was answered above.
        CollectiveKind::AllToAll | CollectiveKind::SendRecv => return None,
    };
    let set = side
        .iter()
        .take(topo.nodes() as usize)
        .enumerate()
        .filter(|(_, s)| **s)
        .map(|(v, _)| v as u32)
        .collect();
    Some(ExactCut { ns_per_byte, set })
}

//! `forest`: all-gather, reduce-scatter and all-reduce schedules that reach
//! the exact cut bound (ForestColl, Zhao et al., arXiv 2402.06787): a
//! packing of spanning out-trees, each root's shard split over its trees in
//! proportion to their weights, every tree pipelined in pieces.
//!
//! How it is built:
//! 1. Switches are removed by splitting: each pair of a link into a switch
//!    and a link out of it (not back to where it came from) becomes a
//!    direct arc between the two neighbours, routed through the switch, its
//!    capacity from a proportional split of the switch's traffic
//!    (iterative proportional fitting: every in-link's bandwidth spread over
//!    the out-links in proportion to theirs). A switch never copies data:
//!    every arc through it is one route. The split network's own cut rate is
//!    computed (`schedule::cut`) and is the rate the trees are packed at;
//!    when it is below the topology's exact cut, the schedule says so
//!    ([`Forest::split_loss`]).
//! 2. Trees are packed at rate x (GB/s per shard) by Edmonds' theorem in the
//!    form Lovász proved it: with a source s joined to every NPU r by its
//!    remaining demand d_r, the trees still to pack exist iff every NPU t
//!    has a max-flow from s of at least D = sum of d_r. A tree of root r and
//!    weight mu is grown one arc at a time (breadth first, widest arc
//!    first); an arc is kept when the condition still holds with the tree's
//!    arcs reduced by mu and the tree's nodes fed mu by s (one max-flow per
//!    NPU); when it fails, mu drops to the ratio of the failing cut (a Newton
//!    step, as in `schedule::cut`). A finished tree takes mu from its arcs
//!    and from d_r.
//! 3. Root r's shard, `c` chunks, is apportioned to its trees by weight
//!    (largest remainder); each tree's chunks go down it in `k` pieces, a
//!    piece sent on an arc once it has arrived at the arc's tail.
//!    Reduce-scatter packs on the reversed links and sends each piece up the
//!    tree, reducing; all-reduce is the reduce-scatter followed by the
//!    all-gather, each piece of the all-gather leaving its root once the
//!    pieces of the reduce-scatter that hold its chunks have arrived there.
//!
//! Cost: one max-flow per NPU per arc tried, so the packing is for networks
//! of up to [`MAX_NPUS`] NPUs.

use super::cut::{Net, gather_rate_of};
use super::{MAX_STATE, Op, Run, Schedule, Transfer};
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use rayon::prelude::*;

/// Most NPUs a forest is packed for (one max-flow per NPU per arc tried).
pub const MAX_NPUS: u32 = 64;

/// Chunks of a shard the tree weights are rounded to (at least; more with
/// many trees per root).
const MIN_CHUNKS: u32 = 96;

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
    /// The topology's exact cut rate over the split network's (1: the
    /// split lost nothing).
    pub split_loss: f64,
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
    #[error("forest packs trees for at most {MAX_NPUS} NPUs (one max-flow per NPU per arc tried); this topology has {0}")]
    TooLarge(u32),
    /// Some NPU cannot be reached.
    #[error("the topology does not connect every NPU to every other")]
    Disconnected,
    /// The packing found no arc to grow a tree with (numerical trouble).
    #[error("no arc extends a tree of root {0} (numerical tolerance); try another size")]
    Stuck(u32),
    /// The schedule would exceed the simulator's state limit.
    #[error("{0}")]
    TooBig(String),
}

/// The arcs of `topo` with switches split away (module doc), in the link
/// direction or reversed.
pub fn split(topo: &Topology, reversed: bool) -> Vec<Arc> {
    let mut arcs: Vec<Arc> = topo
        .links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.gbps > 0.0)
        .map(|(i, l)| {
            let (src, dst) = if reversed { (l.dst, l.src) } else { (l.src, l.dst) };
            Arc {
                src,
                dst,
                gbps: l.gbps,
                route: vec![i as u32],
            }
        })
        .collect();
    for w in topo.npus..topo.nodes() {
        let (ins, rest): (Vec<Arc>, Vec<Arc>) = arcs.into_iter().partition(|a| a.dst == w);
        let (outs, mut keep): (Vec<Arc>, Vec<Arc>) = rest.into_iter().partition(|a| a.src == w);
        let f = proportional(&ins, &outs);
        for (i, a) in ins.iter().enumerate() {
            for (j, b) in outs.iter().enumerate() {
                if f[i][j] > 0.0 {
                    let mut route = a.route.clone();
                    route.extend(&b.route);
                    keep.push(Arc {
                        src: a.src,
                        dst: b.dst,
                        gbps: f[i][j],
                        route,
                    });
                }
            }
        }
        arcs = keep;
    }
    arcs
}

/// A split of a switch's in-arcs over its out-arcs, no arc back to where it
/// came from: iterative proportional fitting towards row sums `ins` and
/// column sums `outs` (scaled to the smaller total).
fn proportional(ins: &[Arc], outs: &[Arc]) -> Vec<Vec<f64>> {
    let allowed = |i: usize, j: usize| ins[i].src != outs[j].dst;
    let total_in: f64 = ins.iter().map(|a| a.gbps).sum();
    let total_out: f64 = outs.iter().map(|a| a.gbps).sum();
    let scale = total_in.min(total_out);
    let row: Vec<f64> = ins.iter().map(|a| a.gbps * scale / total_in.max(1e-300)).collect();
    let col: Vec<f64> = outs.iter().map(|a| a.gbps * scale / total_out.max(1e-300)).collect();
    let mut f: Vec<Vec<f64>> = (0..ins.len())
        .map(|i| {
            (0..outs.len())
                .map(|j| if allowed(i, j) { row[i] * col[j] } else { 0.0 })
                .collect()
        })
        .collect();
    for _ in 0..200 {
        for (i, fi) in f.iter_mut().enumerate() {
            let s: f64 = fi.iter().sum();
            if s > 0.0 {
                fi.iter_mut().for_each(|x| *x *= row[i] / s);
            }
        }
        for j in 0..outs.len() {
            let s: f64 = f.iter().map(|fi| fi[j]).sum();
            if s > 0.0 {
                f.iter_mut().for_each(|fi| fi[j] *= col[j] / s);
            }
        }
    }
    // Never more than an in- or out-link carries.
    for (i, fi) in f.iter_mut().enumerate() {
        let s: f64 = fi.iter().sum();
        if s > row[i] {
            fi.iter_mut().for_each(|x| *x *= row[i] / s);
        }
    }
    for j in 0..outs.len() {
        let s: f64 = f.iter().map(|fi| fi[j]).sum();
        if s > col[j] {
            f.iter_mut().for_each(|fi| fi[j] *= col[j] / s);
        }
    }
    f
}

/// Packs spanning out-trees on the switch-free `arcs` of `n` NPUs at the
/// network's cut rate (module doc).
pub fn pack(n: u32, arcs: &[Arc]) -> Result<(f64, Vec<Tree>), ForestError> {
    let flat: Vec<(u32, u32, f64)> = arcs.iter().map(|a| (a.src, a.dst, a.gbps)).collect();
    let (x, _) = gather_rate_of(n as usize, n, &flat).ok_or(ForestError::Disconnected)?;
    if x <= 0.0 {
        return Err(ForestError::Disconnected);
    }
    // A hair under the rate, so that rounding never makes it infeasible.
    let x = x * (1.0 - 1e-9);
    let max_cap = arcs.iter().map(|a| a.gbps).fold(0.0, f64::max);
    let eps = max_cap * 1e-11;
    let mut cap: Vec<f64> = arcs.iter().map(|a| a.gbps).collect();
    let mut demand = vec![x; n as usize];
    let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
    for (i, a) in arcs.iter().enumerate() {
        out_of[a.src as usize].push(i as u32);
    }
    let mut trees = Vec::new();
    let limit = 64 * arcs.len().max(1) + 16 * n as usize;
    while let Some(r) = (0..n).filter(|&r| demand[r as usize] > x * 1e-7).max_by(|&a, &b| {
        demand[a as usize]
            .total_cmp(&demand[b as usize])
            .then(b.cmp(&a))
    }) {
        if trees.len() >= limit {
            return Err(ForestError::Stuck(r));
        }
        let tree = grow(n, arcs, &out_of, &cap, &demand, r, eps)?;
        for &e in &tree.arcs {
            cap[e as usize] = (cap[e as usize] - tree.weight).max(0.0);
        }
        demand[r as usize] -= tree.weight;
        trees.push(tree);
    }
    Ok((x, trees))
}

/// Grows one tree of root `r` (module doc).
fn grow(
    n: u32,
    arcs: &[Arc],
    out_of: &[Vec<u32>],
    cap: &[f64],
    demand: &[f64],
    r: u32,
    eps: f64,
) -> Result<Tree, ForestError> {
    let total: f64 = demand.iter().sum();
    let mut mu = demand[r as usize];
    let mut in_tree = vec![false; n as usize];
    in_tree[r as usize] = true;
    let mut order = vec![r];
    let mut chosen: Vec<u32> = Vec::new();
    while order.len() < n as usize {
        let mut best: Option<(f64, u32)> = None;
        'search: for &u in &order {
            let mut cands: Vec<u32> = out_of[u as usize]
                .iter()
                .copied()
                .filter(|&e| !in_tree[arcs[e as usize].dst as usize] && cap[e as usize] > eps)
                .collect();
            cands.sort_by(|a, b| cap[*b as usize].total_cmp(&cap[*a as usize]));
            for e in cands {
                let try_mu = mu.min(cap[e as usize]);
                if best.is_some_and(|(b, _)| try_mu <= b) {
                    continue;
                }
                let mut with = chosen.clone();
                with.push(e);
                let mut nodes = in_tree.clone();
                nodes[arcs[e as usize].dst as usize] = true;
                let got = feasible(n, arcs, cap, demand, total, r, &with, &nodes, try_mu, eps);
                if got > eps && best.is_none_or(|(b, _)| got > b) {
                    best = Some((got, e));
                    if got >= mu * (1.0 - 1e-12) {
                        break 'search;
                    }
                }
            }
        }
        let Some((got, e)) = best else {
            return Err(ForestError::Stuck(r));
        };
        mu = got.min(mu);
        chosen.push(e);
        let v = arcs[e as usize].dst;
        in_tree[v as usize] = true;
        order.push(v);
    }
    Ok(Tree {
        root: r,
        weight: mu,
        arcs: chosen,
    })
}

/// The largest weight at most `mu` the partial tree (`tree` arcs over
/// `nodes`, root `r`) may carry with the rest still packable: Newton steps
/// on the failing cuts (module doc); 0 if none.
#[allow(clippy::too_many_arguments)]
fn feasible(
    n: u32,
    arcs: &[Arc],
    cap: &[f64],
    demand: &[f64],
    total: f64,
    r: u32,
    tree: &[u32],
    nodes: &[bool],
    mut mu: f64,
    eps: f64,
) -> f64 {
    let s = n;
    let f = n + 1;
    let on_tree = {
        let mut v = vec![false; arcs.len()];
        tree.iter().for_each(|&e| v[e as usize] = true);
        v
    };
    let need = total * (1.0 - 1e-9);
    for _ in 0..64 {
        let mut net = Net::new(n as usize + 2);
        for (i, a) in arcs.iter().enumerate() {
            let c = if on_tree[i] { cap[i] - mu } else { cap[i] };
            if c > 0.0 {
                net.add(a.src, a.dst, c);
            }
        }
        for v in 0..n {
            let d = demand[v as usize] - if v == r { mu } else { 0.0 };
            if d > 0.0 {
                net.add(s, v, d);
            }
            if nodes[v as usize] {
                net.add(f, v, f64::INFINITY);
            }
        }
        net.add(s, f, mu);
        let failed = (0..n).into_par_iter().find_map_first(|t| {
            let (flow, sink) = net.max_flow(s, t, eps * 1e-3);
            (flow < need).then_some(sink)
        });
        let Some(x) = failed else {
            return mu;
        };
        // The failing cut's value is a - mu b.
        let inside = |v: u32| x[v as usize];
        let mut a = 0.0;
        let mut b = 0.0;
        for (i, arc) in arcs.iter().enumerate() {
            if !inside(arc.src) && inside(arc.dst) {
                a += cap[i];
                if on_tree[i] {
                    b += 1.0;
                }
            }
        }
        for v in 0..n {
            if inside(v) {
                a += demand[v as usize];
            }
        }
        if inside(r) {
            b += 1.0;
        }
        if x[f as usize] {
            b -= 1.0;
        }
        if b <= 0.0 {
            return 0.0;
        }
        let next = (a - total) / b;
        if !(next < mu) || next <= eps {
            return 0.0;
        }
        mu = next;
    }
    0.0
}

fn depth(arcs: &[Arc], t: &Tree) -> usize {
    let mut level = std::collections::HashMap::new();
    level.insert(t.root, 0usize);
    let mut deepest = 0;
    for &e in &t.arcs {
        let a = &arcs[e as usize];
        let d = level.get(&a.src).copied().unwrap_or(0) + 1;
        level.insert(a.dst, d);
        deepest = deepest.max(d);
    }
    deepest
}

/// The forest of `topo` for an all-gather (or, `reversed`, a reduce-scatter).
pub fn forest(topo: &Topology, reversed: bool) -> Result<Forest, ForestError> {
    let n = topo.npus;
    if n > MAX_NPUS {
        return Err(ForestError::TooLarge(n));
    }
    let arcs = split(topo, reversed);
    let (rate, trees) = if n < 2 { (0.0, Vec::new()) } else { pack(n, &arcs)? };
    let full = super::cut::exact_cut(
        topo,
        if reversed {
            CollectiveKind::ReduceScatter
        } else {
            CollectiveKind::AllGather
        },
    );
    let split_loss = match full {
        Some(c) if rate > 0.0 => 1.0 / (c.ns_per_byte * f64::from(n)) / rate,
        _ => 1.0,
    };
    Ok(Forest {
        arcs,
        trees,
        rate,
        split_loss,
    })
}

/// Each tree's chunks of its root's shard (largest remainder), summing to `c`.
fn apportion(f: &Forest, n: u32, c: u32) -> Vec<(u32, u32)> {
    let mut out = vec![(0u32, 0u32); f.trees.len()];
    for r in 0..n {
        let ids: Vec<usize> = (0..f.trees.len()).filter(|&i| f.trees[i].root == r).collect();
        let sum: f64 = ids.iter().map(|&i| f.trees[i].weight).sum();
        let exact: Vec<f64> = ids
            .iter()
            .map(|&i| f64::from(c) * f.trees[i].weight / sum)
            .collect();
        let mut count: Vec<u32> = exact.iter().map(|x| x.floor() as u32).collect();
        let mut left = c - count.iter().sum::<u32>();
        let mut by_rest: Vec<usize> = (0..ids.len()).collect();
        by_rest.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
        for &k in &by_rest {
            if left == 0 {
                break;
            }
            count[k] += 1;
            left -= 1;
        }
        let mut start = 0;
        for (k, &i) in ids.iter().enumerate() {
            out[i] = (start, count[k]);
            start += count[k];
        }
    }
    out
}

/// The pieces of a tree's `(start, count)` chunks: at most `k`, contiguous.
fn pieces(start: u32, count: u32, k: u32) -> Vec<(u32, u32)> {
    let p = k.min(count).max(1);
    (0..p)
        .map(|j| {
            let a = start + count * j / p;
            let b = start + count * (j + 1) / p;
            (a, b - a)
        })
        .filter(|(_, len)| *len > 0)
        .collect()
}

/// The chunk ids `start..start + count` of root `r`'s shard (chunk `i` of
/// NPU r's shard is `r + i n`).
fn run(r: u32, n: u32, start: u32, count: u32) -> Run {
    Run {
        start: r + start * n,
        count,
        stride: n,
    }
}

/// Pieces per tree for a buffer of `size` bytes: as many as keep the
/// pipeline's fill (depth x one piece per arc) under 1% of the bandwidth
/// term, at most 64.
pub fn auto_pieces(f: &Forest, n: u32, size: f64) -> u32 {
    if f.rate <= 0.0 {
        return 1;
    }
    let bandwidth_ns = size / f64::from(n) / f.rate;
    let slowest = f.arcs.iter().map(|a| a.gbps).fold(f64::INFINITY, f64::min).max(1e-300);
    let per_root = (0..n)
        .map(|r| f.trees.iter().filter(|t| t.root == r).count())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    // A piece of one tree: shard / (trees x k) bytes on the slowest arc.
    let fill = |k: f64| f.depth() as f64 * size / f64::from(n) / per_root / k / slowest;
    let mut k = 1u32;
    while k < 64 && fill(f64::from(k)) > 0.01 * bandwidth_ns {
        k *= 2;
    }
    k
}

/// The forest schedule of `kind` on `topo`, `k` pieces per tree (0: chosen
/// by [`auto_pieces`] for `size` bytes).
pub fn build(topo: &Topology, kind: CollectiveKind, k: u32, size: f64) -> Result<Schedule, ForestError> {
    let n = topo.npus;
    let (ag, rs) = match kind {
        CollectiveKind::AllGather => (Some(forest(topo, false)?), None),
        CollectiveKind::ReduceScatter => (None, Some(forest(topo, true)?)),
        CollectiveKind::AllReduce => (Some(forest(topo, false)?), Some(forest(topo, true)?)),
        other => return Err(ForestError::Collective(other.name())),
    };
    let trees = ag.iter().chain(&rs).map(|f| per_root(f, n)).max().unwrap_or(1);
    let k = if k == 0 {
        ag.iter().chain(&rs).map(|f| auto_pieces(f, n, size)).max().unwrap_or(1)
    } else {
        k
    };
    let c = (MIN_CHUNKS.max(k)).saturating_mul(trees as u32);
    let state = u64::from(n) * u64::from(n) * u64::from(c);
    if state > MAX_STATE {
        return Err(ForestError::TooBig(format!(
            "{n} NPUs x {c} chunks per shard would track {state} NPU-chunk pairs, over the simulator's {MAX_STATE}"
        )));
    }
    let mut s = Schedule::new(format!("forest(k={k})"), kind, n, c);
    s.topology = topo.name.clone();
    // Per root and chunk: the reduce-scatter transfers into the root that
    // complete it.
    let mut done_at: Vec<Vec<Vec<u32>>> = vec![vec![Vec::new(); c as usize]; n as usize];
    if let Some(f) = &rs {
        let parts = apportion(f, n, c);
        for (t, &(start, count)) in f.trees.iter().zip(&parts) {
            for (a, len) in pieces(start, count, k) {
                let into_root = up(&mut s, f, t, run(t.root, n, a, len));
                for i in a..a + len {
                    done_at[t.root as usize][i as usize].extend(&into_root);
                }
            }
        }
    }
    if let Some(f) = &ag {
        let parts = apportion(f, n, c);
        for (t, &(start, count)) in f.trees.iter().zip(&parts) {
            for (a, len) in pieces(start, count, k) {
                let mut deps: Vec<u32> = (a..a + len)
                    .flat_map(|i| done_at[t.root as usize][i as usize].iter().copied())
                    .collect();
                deps.sort_unstable();
                deps.dedup();
                down(&mut s, f, t, run(t.root, n, a, len), &deps);
            }
        }
    }
    Ok(s)
}

fn per_root(f: &Forest, n: u32) -> usize {
    (0..n)
        .map(|r| f.trees.iter().filter(|t| t.root == r).count())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// One piece down tree `t` (an all-gather): each arc sends once the piece
/// has reached its tail; the root's sends wait for `root_deps`.
fn down(s: &mut Schedule, f: &Forest, t: &Tree, chunks: Run, root_deps: &[u32]) {
    let mut arrived: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for &e in &t.arcs {
        let a = &f.arcs[e as usize];
        let deps = match arrived.get(&a.src) {
            Some(&d) => vec![d],
            None => root_deps.to_vec(),
        };
        let id = s.transfers.len() as u32;
        s.transfers.push(Transfer {
            src: a.src,
            dst: a.dst,
            op: Op::Send,
            chunks: vec![chunks],
            deps,
            route: a.route.clone(),
            after: Vec::new(),
            bytes: None,
            duration_ns: 0.0,
        });
        arrived.insert(a.dst, id);
    }
}

/// One piece up tree `t` of the reversed network (a reduce-scatter): each
/// node sends its partial sum to its parent once every child's has arrived.
/// Returns the transfers into the root.
fn up(s: &mut Schedule, f: &Forest, t: &Tree, chunks: Run) -> Vec<u32> {
    // In the reversed network the tree's arc a.src -> a.dst is the link
    // path a.dst -> a.src: the child a.dst sends to its parent a.src.
    let mut children: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for &e in &t.arcs {
        let a = &f.arcs[e as usize];
        children.entry(a.src).or_default().push(e);
    }
    let mut sent: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    // Leaves first: the reverse of the growth order puts children first.
    for &e in t.arcs.iter().rev() {
        let a = &f.arcs[e as usize];
        let deps: Vec<u32> = children
            .get(&a.dst)
            .map(|cs| cs.iter().filter_map(|c| sent.get(c).copied()).collect())
            .unwrap_or_default();
        let id = s.transfers.len() as u32;
        let mut route = a.route.clone();
        route.reverse();
        s.transfers.push(Transfer {
            src: a.dst,
            dst: a.src,
            op: Op::Reduce,
            chunks: vec![chunks],
            deps,
            route,
            after: Vec::new(),
            bytes: None,
            duration_ns: 0.0,
        });
        sent.insert(e, id);
    }
    children
        .get(&t.root)
        .map(|cs| cs.iter().filter_map(|c| sent.get(c).copied()).collect())
        .unwrap_or_default()
}

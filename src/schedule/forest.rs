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
//!    when it is below the topology's exact cut, the schedule's name says
//!    by how much (`forest(k=.., split loss x..)`, [`Forest::split_loss`]).
//! 2. Trees are packed at rate x (GB/s per shard) by Edmonds' theorem in the
//!    form Lovász proved it: with a source s joined to every NPU r by its
//!    remaining demand d_r, the trees still to pack exist iff every NPU t
//!    has a max-flow from s of at least D = sum of d_r. A tree of root r and
//!    weight mu is grown one arc at a time (breadth first, widest arc
//!    first); an arc is kept when the condition still holds with the tree's
//!    arcs reduced by mu and the tree's nodes fed mu by s (through one extra
//!    node, so a cut pays mu once if it holds any of them). Adding arc
//!    (u, v) lowers only the cuts that hold v, not u, and a tree node, so
//!    one max-flow, to v, checks it; when it fails, mu drops to the ratio
//!    of the failing cut (a Newton step, as in `schedule::cut`; lowering mu
//!    never lowers a cut, since every cut holding a tree node but not the
//!    root is entered by a tree arc). A finished tree takes mu from its
//!    arcs and from d_r.
//! 3. Root r's shard, `c` chunks, is apportioned to its trees by weight
//!    (largest remainder); each tree's chunks go down it in `k` pieces, a
//!    piece sent on an arc once it has arrived at the arc's tail. On a
//!    general packing each link is paced in rounds (a round is the
//!    bandwidth term over k; piece j crosses an arc in round j plus the
//!    rounds of the arcs above it, each one round and the rounds its
//!    route's latency spans, a tree with m < k pieces having them in m of
//!    the k rounds, evenly spaced; a transfer waits for its links'
//!    transfers of the latest round a few rounds before), which makes FIFO links a
//!    synchronous pipeline; an all-gather down the dimension-ordered trees
//!    of a product network flows unpaced ([`Forest::paced`]).
//!    Reduce-scatter packs on the reversed links and sends each piece up the
//!    tree, reducing; all-reduce is the reduce-scatter followed by the
//!    all-gather, each piece of the all-gather leaving its root once the
//!    pieces of the reduce-scatter that hold its chunks have arrived there
//!    (on a general packing, once all of the root's have).
//!
//! Cost: a max-flow per arc tried (and per Newton step), so the packing is
//! for networks of up to [`MAX_NPUS`] NPUs, and above [`MAX_ANY_NPUS`] for
//! sparse ones only (at most [`MAX_ARCS_PER_NPU`] arcs per NPU once the
//! switches are split): a random 256-NPU network with three arcs per NPU
//! packs in about 30 s, within 1.2% of its exact cut at 1 GiB replayed,
//! while splitting a two-level fat tree's switches makes hundreds of arcs
//! per NPU and takes minutes at 64.

use super::cut::{Net, gather_rate_of};
pub use super::trees::{Arc, Forest, ForestError, MAX_NPUS, MAX_TRANSFERS, Tree};
use super::trees::{depth, levels};
use super::{MAX_STATE, Op, Run, Schedule, SmallVec, Transfer, smallvec};
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use std::collections::{BTreeMap, HashMap};

/// Most NPUs a forest is packed for whatever the arcs per NPU.
pub const MAX_ANY_NPUS: u32 = 64;

/// Most arcs per NPU (switches split) above [`MAX_ANY_NPUS`] NPUs.
pub const MAX_ARCS_PER_NPU: usize = 8;

/// Chunks of a shard the tree weights are rounded to (at least; more with
/// many trees per root).
const MIN_CHUNKS: u32 = 96;

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
                via: Vec::new(),
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
                    let mut via = a.via.clone();
                    via.push(w);
                    via.extend(&b.via);
                    keep.push(Arc {
                        src: a.src,
                        dst: b.dst,
                        gbps: f[i][j],
                        route,
                        via,
                    });
                }
            }
        }
        arcs = keep;
    }
    arcs
}

/// A split of a switch's in-arcs over its out-arcs, no route visiting a
/// node twice (nothing goes back where it came from): iterative
/// proportional fitting towards row sums `ins` and column sums `outs`
/// (scaled to the smaller total).
fn proportional(ins: &[Arc], outs: &[Arc]) -> Vec<Vec<f64>> {
    let allowed = |i: usize, j: usize| {
        let (a, b) = (&ins[i], &outs[j]);
        a.src != b.dst && !a.via.contains(&b.dst) && !b.via.contains(&a.src) && !a.via.iter().any(|v| b.via.contains(v))
    };
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
    // A hair (1e-6) under the rate, so that every cut keeps a little room
    // for rounding.
    let x = x * (1.0 - 1e-6);
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
    // Crumbs under 1e-4 of a root's rate are left (up to 1e-3 when the
    // last tree cannot be grown for rounding): its trees carry its whole
    // shard, so their loads rise by as much.
    let crumb = x * 1e-4;
    let mut done = vec![false; n as usize];
    while let Some(r) = (0..n)
        .filter(|&r| !done[r as usize] && demand[r as usize] > crumb)
        .max_by(|&a, &b| demand[a as usize].total_cmp(&demand[b as usize]).then(b.cmp(&a)))
    {
        if trees.len() >= limit {
            return Err(ForestError::Stuck(r));
        }
        let tree = match grow(n, arcs, &out_of, &cap, &demand, r, eps) {
            Ok(t) => t,
            // The last crumbs of a root can fall below rounding: left.
            Err(_) if demand[r as usize] <= 10.0 * crumb => {
                done[r as usize] = true;
                continue;
            }
            Err(e) => return Err(e),
        };
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
                let head = arcs[e as usize].dst;
                let got = feasible(n, arcs, cap, demand, total, r, &with, &nodes, head, try_mu, eps);
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
    head: u32,
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
    // A flow within rounding of D passes: the max-flow pushes nothing
    // under `eps`, so allow a few of those.
    let need = total - 8.0 * eps;
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
        // Only cuts holding the new arc's head can have dropped below D
        // (module doc): one max-flow, to it.
        let (flow, x) = net.max_flow(s, head, eps * 1e-3);
        if flow >= need {
            return mu;
        }
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
        if a - mu * b >= need {
            // The cut the flow stopped at is not below D: the max-flow's
            // own rounding.
            return mu;
        }
        if b <= 0.0 {
            return 0.0;
        }
        // A hair under the cut's own root, so the cut is not left exactly
        // tight for rounding to break.
        let next = (a - total) / b * (1.0 - 1e-9);
        if next.is_nan() || next >= mu || next <= eps {
            return 0.0;
        }
        mu = next;
    }
    0.0
}
/// The forest of `topo` for an all-gather (or, `reversed`, a reduce-scatter).
pub fn forest(topo: &Topology, reversed: bool) -> Result<Forest, ForestError> {
    if let Some(f) = super::product::forest(topo, reversed)? {
        return Ok(f);
    }
    let n = topo.npus;
    if n > MAX_NPUS {
        return Err(ForestError::TooLarge(n));
    }
    let arcs = split(topo, reversed);
    if n > MAX_ANY_NPUS && arcs.len() > MAX_ARCS_PER_NPU * n as usize {
        return Err(ForestError::TooBig(format!(
            "forest packs trees for more than {MAX_ANY_NPUS} NPUs only on sparse networks, at most {MAX_ARCS_PER_NPU} arcs per NPU \
             once switches are split into routes (a max-flow per arc tried); this topology's {n} NPUs have {} ({:.1} per NPU)",
            arcs.len(),
            arcs.len() as f64 / f64::from(n)
        )));
    }
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
        paced: true,
    })
}

/// Each tree's chunks of its root's shard (largest remainder), summing to `c`.
fn apportion(f: &Forest, n: u32, c: u32) -> Vec<(u32, u32)> {
    let mut out = vec![(0u32, 0u32); f.trees.len()];
    for r in 0..n {
        let ids: Vec<usize> = (0..f.trees.len()).filter(|&i| f.trees[i].root == r).collect();
        let sum: f64 = ids.iter().map(|&i| f.trees[i].weight).sum();
        let exact: Vec<f64> = ids.iter().map(|&i| f64::from(c) * f.trees[i].weight / sum).collect();
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

/// Every tree's pieces `(tree, first chunk, chunks)`, in the order they are
/// issued: `k` pieces per tree (fewer if it has fewer chunks), so a piece's
/// size is in proportion to its tree's weight and every tree moves one
/// piece per arc in the same time at its weight; pieces are issued round by
/// round (the pieces of round j of every tree before any of round j + 1;
/// on a general packing a tree with m < k pieces has them in m of the k
/// rounds, evenly spaced), so that each
/// link serves its trees in the proportion the packing gave them and the
/// schedule runs as k rounds plus the trees' depth in rounds (each arc one
/// and the rounds its latency spans).
fn interleaved(f: &Forest, n: u32, c: u32, k: u32) -> Vec<(u32, usize, u32, u32)> {
    let parts = apportion(f, n, c);
    let mut all: Vec<(u32, usize, u32, u32)> = Vec::new();
    for (t, &(start, count)) in parts.iter().enumerate() {
        let m = k.min(count);
        for i in 0..m {
            // In u64: count x i can pass u32.
            let cut = |i: u32| start + (u64::from(count) * u64::from(i) / u64::from(m)) as u32;
            let (a, b) = (cut(i), cut(i + 1));
            // On a general packing a tree with fewer chunks than k spreads
            // its m pieces over the k rounds (piece i in the round at its
            // middle), so every round carries its share of the tree's
            // weight: numbered 0..m they crowded the first rounds, the arcs
            // of a light tree's slow link fell behind and the pacing held
            // every link after them back (a 4-NPU network with a 1 GB/s
            // link saturated by two light trees: 1.57x its bound, 1.001
            // spread). A product network's trees keep 0..m (measured: the
            // reduce-scatter on switch 8 x switch 4, whose light trees
            // carry 0.5% of a shard, 1.038 -> 1.051 of its bound spread).
            let round = if f.paced {
                ((2 * u64::from(i) + 1) * u64::from(k) / (2 * u64::from(m))) as u32
            } else {
                i
            };
            if b > a {
                all.push((round, t, a, b - a));
            }
        }
    }
    all.sort_by_key(|x| (x.0, x.1));
    all
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

/// Pieces per tree for a buffer of `size` bytes: the power of two (1 to
/// 256) that minimises an estimate of the pipeline's time,
/// `B + d h B / k + D a + k a / 64`: B the bandwidth term at the packed
/// rate, d the trees' depth (mean, by weight) and D the deepest, h the most links an arc's
/// route has (a piece is stored and forwarded at every one), a the slowest
/// route's latency, and a / 64 per piece (measured, with rounds that count
/// latency: 4-6 ns per piece at 500 ns links on meshes and random networks;
/// a / 64 errs towards fewer pieces); and no more than [`MAX_TRANSFERS`]
/// transfers.
pub fn auto_pieces(f: &Forest, topo: &Topology, size: f64) -> u32 {
    let n = topo.npus;
    if f.rate <= 0.0 || n < 2 {
        return 1;
    }
    let b = size / f64::from(n) / f.rate;
    let alpha = f
        .arcs
        .iter()
        .map(|a| topo.route_latency_ns(&a.route))
        .fold(0.0, f64::max);
    let hops = f.arcs.iter().map(|a| a.route.len()).max().unwrap_or(1) as f64;
    let weight: f64 = f.trees.iter().map(|t| t.weight).sum();
    let mean_depth = f.trees.iter().map(|t| t.weight * depth(&f.arcs, t) as f64).sum::<f64>() / weight.max(1e-300);
    let deepest = f.depth() as f64;
    let estimate = |k: f64| b + mean_depth * hops * b / k + deepest * alpha + k * alpha / 64.0;
    let per_piece = (f.trees.len() as u64 * u64::from(n - 1)).max(1);
    (0..=8)
        .map(|p| 1u32 << p)
        .filter(|&k| k == 1 || u64::from(k) * per_piece <= MAX_TRANSFERS)
        .min_by(|&x, &y| estimate(f64::from(x)).total_cmp(&estimate(f64::from(y))))
        .unwrap_or(1)
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
        ag.iter()
            .chain(&rs)
            .map(|f| auto_pieces(f, topo, size))
            .max()
            .unwrap_or(1)
    } else {
        k
    };
    let c = MIN_CHUNKS.max(k.saturating_mul(8)).saturating_mul(trees as u32);
    let state = u64::from(n) * u64::from(n) * u64::from(c);
    let transfers =
        ag.iter().chain(&rs).map(|f| f.trees.len() as u64).sum::<u64>() * u64::from(k) * u64::from(n.saturating_sub(1));
    if transfers > MAX_TRANSFERS * 4 {
        return Err(ForestError::TooBig(format!(
            "{k} pieces per tree would make {transfers} transfers, over forest's limit of {}: {}",
            MAX_TRANSFERS * 4,
            if k > 1 {
                "give fewer --chunks-per-npu"
            } else {
                "too large to build and replay (on a torus-like product network `dimsum collective --algorithm forest` times it in rounds; a mesh cannot be: use fewer NPUs)"
            }
        )));
    }
    if state > MAX_STATE {
        return Err(ForestError::TooBig(format!(
            "{n} NPUs x {c} chunks per shard would track {state} NPU-chunk pairs, over the simulator's {MAX_STATE}"
        )));
    }
    let loss = ag.iter().chain(&rs).map(|f| f.split_loss).fold(1.0, f64::max);
    let name = if loss > 1.0 + 1e-4 {
        format!("forest(k={k}, split loss x{loss:.4})")
    } else {
        format!("forest(k={k})")
    };
    // A round: one piece of every tree over each arc, the bandwidth term
    // over k. An arc takes one round and as many more as its route's
    // latency spans (`step`): numbering a piece's rounds by hops alone put
    // the deep levels of a tree rounds behind their number whenever a round
    // is shorter than a latency, and the pacing then held every link back
    // to them (1 MiB all-gather on the 5x5 mesh at 50 / 75 GiB/s: 20.6 ->
    // 13.1 us; 1 GiB on the DGX-like edge list, packed in general before
    // `product::switch_product` took it, 2384 -> 2150 us).
    let round_ns = ag
        .iter()
        .chain(&rs)
        .map(|f| {
            if f.rate > 0.0 {
                size / f64::from(n) / f.rate / f64::from(k)
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    let steps = |f: &Forest| -> Vec<u32> {
        f.arcs
            .iter()
            .map(|a| 1 + latency_rounds(topo, &a.route, round_ns))
            .collect()
    };
    let mut s = Schedule::new(name, kind, n, c);
    s.topology = topo.name.clone();
    // Per root: its reduce-scatter pieces (first chunk, end, the transfers
    // into the root that complete them), sorted by first chunk.
    let mut done_at: Vec<Vec<(u32, u32, Vec<u32>)>> = vec![Vec::new(); n as usize];
    // Per transfer: its round (see `rounds`).
    let mut slots: Vec<u32> = Vec::new();
    let mut rs_rounds = 0;
    let mut rs_transfers = 0;
    if let Some(f) = &rs {
        let step = steps(f);
        for (j, t, a, len) in interleaved(f, n, c, k) {
            let tree = &f.trees[t];
            let into_root = up(&mut s, &mut slots, f, &step, tree, j, run(tree.root, n, a, len));
            done_at[tree.root as usize].push((a, a + len, into_root));
        }
        rs_transfers = slots.len();
        rs_rounds = slots.iter().map(|x| x + 1).max().unwrap_or(0);
        done_at.iter_mut().for_each(|d| d.sort_by_key(|p| p.0));
    }
    if let Some(f) = &ag {
        let step = steps(f);
        for (j, t, a, len) in interleaved(f, n, c, k) {
            let tree = &f.trees[t];
            // The reduce-scatter pieces overlapping chunks a..a + len; on a
            // paced (general) packing every piece into the root: its
            // reduce-scatter trees split the shard unlike the all-gather's,
            // so a first all-gather piece could wait for a last
            // reduce-scatter piece and hold its paced rounds back (1 GiB on
            // a 5x5 mesh: 29.1 ms, 20.7 with the barrier, 10.3 + 10.3 for
            // the two alone).
            let done = &done_at[tree.root as usize];
            let (first, whole) = if f.paced {
                (0, true)
            } else {
                (done.partition_point(|p| p.1 <= a), false)
            };
            let mut deps: Vec<u32> = done[first..]
                .iter()
                .take_while(|p| whole || p.0 < a + len)
                .flat_map(|p| p.2.iter().copied())
                .collect();
            deps.sort_unstable();
            deps.dedup();
            down(
                &mut s,
                &mut slots,
                f,
                &step,
                tree,
                j + rs_rounds,
                run(tree.root, n, a, len),
                &deps,
            );
        }
    }
    // The reduce-scatter's transfers always (unpaced, a node's partial sums
    // wait on the slowest child and the trees drift apart: 1.57x the bound
    // on a ring 8 x ring 4 at 50 / 200 GB/s, and as much replaying the
    // all-gather's timeline reversed, since a reduction then runs as soon
    // as its children have arrived, not as late as the reversal would),
    // the all-gather's unless the forest flows unpaced.
    let paced = if ag.as_ref().is_none_or(|f| f.paced) {
        s.transfers.len()
    } else {
        rs_transfers
    };
    rounds(&mut s, &slots[..paced], topo, round_ns);
    Ok(s)
}

/// Makes each link send its transfers round by round: a transfer of round
/// s over h links waits, on each of them, for the transfers of the latest
/// round at or before s - h - 1 - l that used it, l the rounds its route's
/// latency spans (the first
/// `slots.len()` transfers; the rest are not paced). Every round moves one piece of every tree over each of its arcs, which
/// fits a link's bandwidth by the packing, so the schedule runs as a
/// synchronous pipeline of rounds instead of letting early pieces of later
/// rounds delay the pieces a busy link downstream is waiting for.
fn rounds(s: &mut Schedule, slots: &[u32], topo: &Topology, round_ns: f64) {
    // Rounds a transfer may run ahead of the others on its links: one per
    // hop of its route, one more (a round's arrivals overlap the next
    // round's sends; a route through switches is a pipeline of its hops)
    // and the rounds its latency spans.
    // Per link, its transfers by round. A transfer waits for the latest
    // round at or before its window that used the link, not that round
    // alone: a light tree has pieces in few rounds, and looking up one
    // round let its pieces skip the pacing whenever that round had none,
    // flood a slow link ahead of the pieces the other trees were waiting
    // for there, and hold every link after it back (a 4-NPU network whose
    // 1 GB/s link two light trees saturate: 1.62x its bound).
    let mut by: HashMap<u32, BTreeMap<u32, Vec<u32>>> = HashMap::new();
    for (i, &round) in slots.iter().enumerate() {
        for &link in &s.transfers[i].route {
            by.entry(link).or_default().entry(round).or_default().push(i as u32);
        }
    }
    for (i, &round) in slots.iter().enumerate() {
        let route = &s.transfers[i].route;
        let window = route.len() as u32 + 1 + latency_rounds(topo, route, round_ns);
        if round < window {
            continue;
        }
        let mut extra: Vec<u32> = Vec::new();
        for link in &s.transfers[i].route {
            if let Some((_, prev)) = by.get(link).and_then(|r| r.range(..=round - window).next_back()) {
                extra.extend(prev);
            }
        }
        if !extra.is_empty() {
            let deps = &mut s.transfers[i].deps;
            deps.extend(extra);
            deps.sort_unstable();
            deps.dedup();
        }
    }
}

/// Rounds of `round_ns` the latency of `route` spans (0 for a zero round,
/// at most 2^16): to the nearest round on one link; rounded up through a
/// switch, where a piece also queues at the egress behind the other
/// in-links' pieces, so a level through it gets a round of slack (1 GiB on
/// the DGX-like 4 x 8 edge list as a general packing: 2384 us rounded to
/// the nearest, 2150 up;
/// rounded up on one link, an 8x8 mesh at 100 / 25 GB/s lost 2%).
fn latency_rounds(topo: &Topology, route: &[u32], round_ns: f64) -> u32 {
    if round_ns > 0.0 {
        let x = topo.route_latency_ns(route) / round_ns;
        (if route.len() > 1 { x.ceil() } else { x.round() }).min(65536.0) as u32
    } else {
        0
    }
}

fn per_root(f: &Forest, n: u32) -> usize {
    (0..n)
        .map(|r| f.trees.iter().filter(|t| t.root == r).count())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Appends a transfer of `chunks` in round `round`; its id.
#[allow(clippy::too_many_arguments)]
fn push(
    s: &mut Schedule,
    slots: &mut Vec<u32>,
    round: u32,
    (src, dst): (u32, u32),
    op: Op,
    chunks: Run,
    deps: Vec<u32>,
    route: Vec<u32>,
) -> u32 {
    slots.push(round);
    s.transfers.push(Transfer {
        src,
        dst,
        op,
        chunks: smallvec![chunks],
        deps: deps.into(),
        route: route.into(),
        after: SmallVec::new(),
        bytes: None,
        duration_ns: 0.0,
    });
    s.transfers.len() as u32 - 1
}

/// One piece down tree `t` (an all-gather): each arc sends once the piece
/// has reached its tail; the root's sends wait for `root_deps`.
#[allow(clippy::too_many_arguments)]
fn down(
    s: &mut Schedule,
    slots: &mut Vec<u32>,
    f: &Forest,
    step: &[u32],
    t: &Tree,
    j: u32,
    chunks: Run,
    root_deps: &[u32],
) {
    let mut arrived: HashMap<u32, (u32, u32)> = HashMap::new();
    for &e in &t.arcs {
        let a = &f.arcs[e as usize];
        let (deps, level) = match arrived.get(&a.src) {
            Some(&(d, level)) => (vec![d], level),
            None => (root_deps.to_vec(), 0),
        };
        let id = push(
            s,
            slots,
            j + level,
            (a.src, a.dst),
            Op::Send,
            chunks,
            deps,
            a.route.clone(),
        );
        arrived.insert(a.dst, (id, level + step[e as usize]));
    }
}

/// One piece up tree `t` of the reversed network (a reduce-scatter): each
/// node sends its partial sum to its parent once every child's has arrived.
/// Returns the transfers into the root.
fn up(s: &mut Schedule, slots: &mut Vec<u32>, f: &Forest, step: &[u32], t: &Tree, j: u32, chunks: Run) -> Vec<u32> {
    // In the reversed network the tree's arc a.src -> a.dst is the link
    // path a.dst -> a.src: the child a.dst sends to its parent a.src.
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for &e in &t.arcs {
        let a = &f.arcs[e as usize];
        children.entry(a.src).or_default().push(e);
    }
    let mut sent: HashMap<u32, u32> = HashMap::new();
    // Each arc's head depth, for its round: the deepest send first.
    let level = levels(&f.arcs, t, &|e| step[e as usize]);
    let deepest = level.values().copied().max().unwrap_or(0);
    // Leaves first: the reverse of the growth order puts children first.
    for &e in t.arcs.iter().rev() {
        let a = &f.arcs[e as usize];
        let deps: Vec<u32> = children
            .get(&a.dst)
            .map(|cs| cs.iter().filter_map(|c| sent.get(c).copied()).collect())
            .unwrap_or_default();
        let mut route = a.route.clone();
        route.reverse();
        let round = j + deepest - level.get(&a.dst).copied().unwrap_or(0);
        let id = push(s, slots, round, (a.dst, a.src), Op::Reduce, chunks, deps, route);
        sent.insert(e, id);
    }
    children
        .get(&t.root)
        .map(|cs| cs.iter().filter_map(|c| sent.get(c).copied()).collect())
        .unwrap_or_default()
}

//! Lower bounds on a collective's time on an explicit topology: no schedule,
//! whatever its algorithm, finishes sooner.
//!
//! With M the collective's buffer (the all-gather output, the reduce-scatter
//! input, the all-reduce vector, one NPU's all-to-all send buffer) and N NPUs:
//! - ingress / egress: an NPU must receive (N-1)/N M for an all-gather (every
//!   shard but its own) and send (N-1)/N M for a reduce-scatter (its
//!   contribution to every other shard) and an all-to-all (and receive as
//!   much), through the sum of its links' bandwidth;
//! - all-reduce: every NPU sends at least M (each element of its input must
//!   leave it) and receives at least M (each element of its output needs
//!   outside data), and all NPUs together send at least 2(N-1) M: per
//!   element, everyone learning a function of everyone's value takes at
//!   least 2N-2 one-way messages (the directed gossip bound), so the time
//!   is at least 2(N-1) M over the summed injection bandwidth. On a
//!   symmetric network that is the familiar 2(N-1)/N M / B_inject that ring
//!   all-reduce meets (Patarasuk and Yuan, JPDC 2009); it is not a bound on
//!   each NPU (an NPU behind a slow link can validly send only M);
//! - cuts: for a set S of s NPUs, what must cross into S — all-gather
//!   (N-s)/N M (shards owned outside), reduce-scatter s/N M (S's shards need
//!   outside contributions), all-reduce M (the result depends on every
//!   outside input), all-to-all s(N-s)/N M — and out of S symmetrically,
//!   through the links that cross; S is each half of every dimension (the
//!   NPUs whose coordinate is below n/2, and the rest) or, without
//!   dimensions, the lower half of the ranks; a switch sits on whichever side
//!   leaves the smaller crossing bandwidth (either placement is a valid cut);
//! - the exact cut (`schedule::cut`): the same cut bound maximised over every
//!   node set S, switches placed as the cut likes (all-gather, reduce-scatter
//!   and all-reduce, up to `cut::MAX_NPUS` NPUs; all-gather and
//!   reduce-scatter on product networks at any size, in closed form,
//!   `schedule::product`); it replaces the
//!   half-dimension cut when larger, named `exact` with its set S;
//! - all-to-all: the least time of any multi-commodity flow that carries
//!   every pair's piece (`schedule::flow`'s linear program), named `flow`;
//! - latency: some chunk must travel between the two NPUs farthest apart in
//!   link latency (the latency diameter), `hops x latency` on a uniform
//!   network.
//!
//! The bound reported is the largest of these.

pub use super::cut::{ExactCut, exact_cut};
use crate::model::topology::Topology;
use crate::model::units;
use crate::model::workload::CollectiveKind;
use serde::Serialize;

/// The bounds, ns.
#[derive(Debug, Clone, Serialize)]
pub struct Bounds {
    /// Per-NPU ingress / egress (all-reduce: injection) bound.
    pub injection_ns: f64,
    /// Best cut bound.
    pub cut_ns: f64,
    /// Which cut, e.g. `dim 1 half`, `ranks half` or `exact`.
    pub cut: String,
    /// The exact cut's bottleneck node set S (node ids, NPUs first), when
    /// the exact cut is the best cut.
    pub cut_set: Vec<u32>,
    /// Latency diameter.
    pub latency_ns: f64,
    /// The largest.
    pub bound_ns: f64,
}

/// Bytes that must enter and leave a set of `s` of `n` NPUs.
fn cut_bytes(kind: CollectiveKind, size: f64, s: f64, n: f64) -> (f64, f64) {
    match kind {
        CollectiveKind::AllGather => (size * (n - s) / n, size * s / n),
        CollectiveKind::ReduceScatter => (size * s / n, size * (n - s) / n),
        CollectiveKind::AllReduce => (size, size),
        CollectiveKind::AllToAll => (size * s * (n - s) / n, size * s * (n - s) / n),
        CollectiveKind::SendRecv => (0.0, 0.0),
    }
}

/// Bandwidth into and out of the NPU set `side` (true = in S), switches on
/// the side that leaves less crossing bandwidth.
fn crossing(topo: &Topology, side: &[bool]) -> (f64, f64) {
    let n = topo.npus as usize;
    let nodes = topo.nodes() as usize;
    // Per switch: bandwidth to/from S and the rest.
    let mut to_s = vec![0.0; nodes];
    let mut from_s = vec![0.0; nodes];
    let mut to_r = vec![0.0; nodes];
    let mut from_r = vec![0.0; nodes];
    let (mut into, mut out) = (0.0, 0.0);
    for l in &topo.links {
        let (a, b) = (l.src as usize, l.dst as usize);
        match (a < n, b < n) {
            (true, true) => {
                if !side[a] && side[b] {
                    into += l.gbps;
                } else if side[a] && !side[b] {
                    out += l.gbps;
                }
            }
            (true, false) => {
                if side[a] {
                    from_s[b] += l.gbps;
                } else {
                    from_r[b] += l.gbps;
                }
            }
            (false, true) => {
                if side[b] {
                    to_s[a] += l.gbps;
                } else {
                    to_r[a] += l.gbps;
                }
            }
            // Switch-to-switch links: counted as crossing both ways (a cut
            // with fewer crossing links only weakens the bound).
            (false, false) => {
                into += l.gbps;
                out += l.gbps;
            }
        }
    }
    // Direction "into S": switch in S -> from_r crosses; switch in R -> to_s.
    let (mut i2, mut o2) = (into, out);
    for w in n..nodes {
        i2 += from_r[w].min(to_s[w]);
        o2 += from_s[w].min(to_r[w]);
    }
    (i2, o2)
}

/// The lower bounds for `kind` of `size` bytes on `topo`.
///
/// ```
/// use dimsum::model::topology;
/// use dimsum::model::workload::CollectiveKind;
/// use dimsum::schedule::bounds::lower_bounds;
///
/// // An all-gather of 8 MB on a ring of 8 NPUs, 50 GB/s links: every NPU
/// // receives the 7 MB it lacks over its two links, 100 GB/s: 70 us.
/// let topo = topology::from_spec("ring:8", &[50.0], &[0.0])?;
/// let b = lower_bounds(&topo, CollectiveKind::AllGather, 8e6);
/// assert!((b.injection_ns - 70_000.0).abs() < 1e-6);
/// assert!(b.bound_ns >= b.injection_ns && b.bound_ns >= b.cut_ns);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lower_bounds(topo: &Topology, kind: CollectiveKind, size: f64) -> Bounds {
    lower_bounds_with(topo, kind, size, exact_cut(topo, kind).as_ref())
}

/// The lower bounds with the exact cut already computed (it depends on the
/// topology and the collective, not on the size): what a caller timing many
/// sizes on one topology uses.
pub fn lower_bounds_with(topo: &Topology, kind: CollectiveKind, size: f64, exact: Option<&ExactCut>) -> Bounds {
    let n = topo.npus as usize;
    let nf = n as f64;
    // Ingress / egress per NPU.
    let mut inn = vec![0.0; topo.nodes() as usize];
    let mut out = vec![0.0; topo.nodes() as usize];
    for l in &topo.links {
        out[l.src as usize] += l.gbps;
        inn[l.dst as usize] += l.gbps;
    }
    let mut injection_ns: f64 = 0.0;
    for r in 0..n {
        let (need_in, need_out) = match kind {
            CollectiveKind::AllReduce => (size, size),
            _ => cut_bytes(kind, size, 1.0, nf),
        };
        injection_ns = injection_ns.max(units::transfer_ns(need_in, inn[r]).max(units::transfer_ns(need_out, out[r])));
    }
    if kind == CollectiveKind::AllReduce {
        let (all_in, all_out): (f64, f64) = (inn[..n].iter().sum(), out[..n].iter().sum());
        let total = 2.0 * (nf - 1.0) * size;
        injection_ns = injection_ns
            .max(units::transfer_ns(total, all_out))
            .max(units::transfer_ns(total, all_in));
    }
    // Cuts.
    let mut cuts: Vec<(String, Vec<bool>)> = Vec::new();
    if topo.dims.is_empty() {
        cuts.push(("ranks half".into(), (0..n).map(|r| r < n / 2).collect()));
    } else {
        let mut stride = 1usize;
        for dim in &topo.dims {
            let size_d = dim.size as usize;
            if size_d >= 2 {
                let side: Vec<bool> = (0..n).map(|r| (r / stride) % size_d < size_d / 2).collect();
                cuts.push((format!("{} half", dim.name), side));
            }
            stride *= size_d;
        }
    }
    let (mut cut_ns, mut cut) = (0.0, String::new());
    for (name, side) in &cuts {
        let s = side.iter().filter(|&&x| x).count() as f64;
        for (sd, flip) in [
            (side.clone(), false),
            (side.iter().map(|x| !x).collect::<Vec<bool>>(), true),
        ] {
            let s_here = if flip { nf - s } else { s };
            let (need_in, need_out) = cut_bytes(kind, size, s_here, nf);
            let (bw_in, bw_out) = crossing(topo, &sd);
            let t = units::transfer_ns(need_in, bw_in).max(units::transfer_ns(need_out, bw_out));
            if t > cut_ns {
                cut_ns = t;
                cut = name.clone();
            }
        }
    }
    let mut cut_set = Vec::new();
    if let Some(e) = exact {
        let t = e.ns_per_byte * size;
        if t > cut_ns * (1.0 + 1e-9) {
            cut_ns = t;
            cut = if kind == CollectiveKind::AllToAll {
                "flow"
            } else {
                "exact"
            }
            .into();
            cut_set = e.set.clone();
        }
    }
    let latency_ns = latency_diameter(topo);
    Bounds {
        injection_ns,
        cut_ns,
        cut,
        cut_set,
        latency_ns,
        bound_ns: injection_ns.max(cut_ns).max(latency_ns),
    }
}

/// The largest, over pairs of NPUs, of the least total link latency between
/// them. Dimensioned topologies: the sum over dimensions of each
/// dimension's diameter; otherwise Dijkstra from every NPU (up to 2048).
fn latency_diameter(topo: &Topology) -> f64 {
    if !topo.dims.is_empty() {
        let mut total = 0.0;
        for (d, dim) in topo.dims.iter().enumerate() {
            if dim.size < 2 {
                continue;
            }
            let members = topo.members(0, d);
            let far = members
                .iter()
                .filter_map(|&m| topo.route(0, m).ok())
                .map(|r| topo.route_latency_ns(&r))
                .fold(0.0, f64::max);
            total += far;
        }
        return total;
    }
    if topo.npus > 2048 {
        return 0.0;
    }
    let nodes = topo.nodes() as usize;
    let mut worst: f64 = 0.0;
    for s in 0..topo.npus {
        let mut dist = vec![f64::INFINITY; nodes];
        dist[s as usize] = 0.0;
        let mut heap = std::collections::BinaryHeap::new();
        heap.push(std::cmp::Reverse((0u64, s)));
        while let Some(std::cmp::Reverse((db, u))) = heap.pop() {
            let du = f64::from_bits(db);
            if du > dist[u as usize] {
                continue;
            }
            for &l in topo.out_links(u) {
                let link = &topo.links[l as usize];
                let nd = du + link.latency_ns;
                if nd < dist[link.dst as usize] {
                    dist[link.dst as usize] = nd;
                    heap.push(std::cmp::Reverse((nd.to_bits(), link.dst)));
                }
            }
        }
        worst = worst.max(
            dist[..topo.npus as usize]
                .iter()
                .copied()
                .filter(|d| d.is_finite())
                .fold(0.0, f64::max),
        );
    }
    worst
}

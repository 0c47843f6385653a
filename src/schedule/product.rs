//! Forests on product networks: tori, rings, fully-connected groups and
//! switches, one dimension after another, each dimension's links alike
//! (what `Topology::from_fabric`, `torus` and ASTRA-sim's network.yml
//! build). There the exact cut and its optimal trees have a closed form,
//! so neither the max-flows of `schedule::cut` nor the packing of
//! `schedule::forest` is needed, at any size.
//!
//! With dimension i of n_i NPUs giving each NPU E_i GB/s out and in (a ring
//! 2 links, a fully-connected group n_i - 1, a switch one port):
//! - The cut. The sub-product through NPU 0 spanning the dimensions outside
//!   a set D (its switches with it) holds P = prod over i outside D of n_i
//!   NPUs, needs (N - P) shards from outside, and has P sum_{i in D} E_i
//!   coming in: an all-gather of shards of m bytes takes at least
//!   `t* = m max over D of (prod_{i in D} n_i - 1) / sum_{i in D} E_i`.
//! - The trees. A dimension-ordered tree (order s: spread along s_1, then
//!   every NPU reached spreads along s_2, ...) uses
//!   `x_i = (n_i - 1) prod_{j before i in s} n_j` hops of dimension i.
//!   Translated to every root, each link of a dimension carries the same
//!   share, so a mixture of orders with weights w sends every NPU's shard at
//!   time `m max_i sum_s w_s x_i(s) / E_i`. The hop counts of any spanning
//!   tree satisfy x(D) >= prod_{i in D} n_i - 1 (contract every other
//!   dimension's hops: the D-coordinates must all be joined), a supermodular
//!   lower bound whose base polytope has the dimension orders as its
//!   vertices (Edmonds' greedy); by polymatroid intersection a point with
//!   x_i <= t E_i / m exists iff t >= t*. So the best mixture meets the cut
//!   bound exactly: the cut above is the exact cut over every node set, and
//!   the mixture is found by a small linear program over the d! orders
//!   (`crate::lp`; d <= [`MAX_DIMS`]).
//! - Within a dimension: a ring spreads both ways (ceil((n-1)/2) hops
//!   forward and the rest back; with an even ring, each tree is paired
//!   with its mirror image so both directions carry the same); a
//!   fully-connected group sends to every peer directly; a switch relays along a binomial tree (peer j from peer
//!   j minus its highest bit), each hop up the sender's port and down the
//!   receiver's, so the switch never copies data (translated to every root,
//!   each port carries n - 1 hops, as the cut needs).
//!
//! - Meshes. A line of n NPUs is a dimension too, with E_i one link (an end
//!   NPU's): the node sets above taken at a corner give the same cut, and a
//!   line's own tree runs from the root's coordinate to both ends, so the
//!   busiest link of a line (its last) carries `x_i` hops of every order's
//!   trees over all roots, the ring's share for E_i = one link: the same
//!   mixture meets the cut. Without translation symmetry the trees of
//!   every root are materialised ([`forest`]), never timed in rounds
//!   ([`symmetric`]).
//!
//! Reduce-scatter uses the same trees on the reversed links (a product
//! network is its own reverse). [`forest`] materialises the trees of every
//! root for `schedule::forest::build`; [`round_time`] times the schedule
//! from root 0's trees alone (translation symmetry) without materialising
//! it, for networks too large to replay transfer by transfer.

pub use super::shape::{
    Dim, LinkClasses, MAX_DIMS, MAX_RELABEL_NPUS, Relabel, cut_set, dims, gather_cut, link_classes, switch_product,
    symmetric,
};
use super::trees::{Arc, Forest, ForestError, Tree};
use crate::lp::{self, Expr, Var, var};
use crate::model::topology::{DimKind, Topology};
use crate::model::workload::CollectiveKind;
use serde::Serialize;
use std::collections::HashMap;

/// Most arcs (all roots' trees together) [`forest`] materialises: what
/// `forest::build` replays at one piece per tree.
pub const MAX_ARCS: u64 = 4 * super::trees::MAX_TRANSFERS;

impl Relabel {
    /// A forest of `product` as the original's: NPUs, switches and links
    /// renamed.
    fn forest(&self, f: Forest) -> Forest {
        let node = |x: u32| self.node[x as usize];
        Forest {
            arcs: f
                .arcs
                .into_iter()
                .map(|a| Arc {
                    src: node(a.src),
                    dst: node(a.dst),
                    gbps: a.gbps,
                    route: a.route.iter().map(|&l| self.link[l as usize]).collect(),
                    via: a.via.iter().map(|&x| node(x)).collect(),
                })
                .collect(),
            trees: f
                .trees
                .into_iter()
                .map(|t| Tree {
                    root: node(t.root),
                    ..t
                })
                .collect(),
            ..f
        }
    }
}

/// Hops of each dimension (positions in `dims`) a tree of `order` uses.
fn hop_counts(dims: &[Dim], order: &[usize]) -> Vec<f64> {
    let mut x = vec![0.0; dims.len()];
    let mut reached = 1.0;
    for &i in order {
        let n = f64::from(dims[i].size);
        x[i] = (n - 1.0) * reached;
        reached *= n;
    }
    x
}

fn permutations(d: usize) -> Vec<Vec<usize>> {
    fn go(prefix: &mut Vec<usize>, left: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if left.is_empty() {
            out.push(prefix.clone());
            return;
        }
        for i in 0..left.len() {
            let v = left.remove(i);
            prefix.push(v);
            go(prefix, left, out);
            prefix.pop();
            left.insert(i, v);
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), &mut (0..d).collect(), &mut out);
    out
}

/// A dimension order and the share of every shard its trees carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Order {
    /// Positions in the product's dimensions, first spread first.
    pub dims: Vec<usize>,
    /// Share of each shard (the orders' shares sum to 1).
    pub weight: f64,
}

/// The mixture of dimension orders that meets the cut (module doc): the
/// linear program `min t: sum_s w_s x_i(s) / E_i <= t t*, sum w = 1`, whose
/// optimum is t = 1.
pub fn mixture(dims: &[Dim]) -> Result<Vec<Order>, ForestError> {
    if dims.len() > MAX_DIMS {
        return Err(ForestError::TooBig(format!(
            "a product of {} dimensions: forest weighs the orders of at most {MAX_DIMS}",
            dims.len()
        )));
    }
    let orders = permutations(dims.len());
    if orders.len() == 1 {
        return Ok(vec![Order {
            dims: orders[0].clone(),
            weight: 1.0,
        }]);
    }
    let (t_star, _) = gather_cut(dims);
    let x: Vec<Vec<f64>> = orders.iter().map(|o| hop_counts(dims, o)).collect();
    let mut vars = lp::Problem::new();
    let w: Vec<Var> = orders.iter().map(|_| vars.add(var().min(0.0))).collect();
    let t = vars.add(var().min(0.0));
    let mut model = vars.minimise(t);
    model.add(w.iter().copied().sum::<Expr>().eq(1.0));
    for (i, dim) in dims.iter().enumerate() {
        let scale = 1.0 / (dim.egress_gbps() * t_star);
        let load: Expr = w.iter().zip(&x).map(|(&v, xs)| xs[i] * scale * v).sum();
        model.add((load - t).leq(0.0));
    }
    let sol = model
        .solve()
        .map_err(|e| ForestError::Solver(format!("the order mixture's linear program failed: {e}")))?;
    let mut out: Vec<Order> = orders
        .iter()
        .zip(&w)
        .map(|(o, &v)| Order {
            dims: o.clone(),
            weight: sol.value(v).max(0.0),
        })
        .filter(|o| o.weight > 1e-9)
        .collect();
    let sum: f64 = out.iter().map(|o| o.weight).sum();
    out.iter_mut().for_each(|o| o.weight /= sum);
    Ok(out)
}

/// The time per shard byte of a mixture: `max_i sum_s w_s x_i(s) / E_i`.
pub fn mixture_ns_per_byte(dims: &[Dim], orders: &[Order]) -> f64 {
    (0..dims.len())
        .map(|i| {
            orders
                .iter()
                .map(|o| o.weight * hop_counts(dims, &o.dims)[i])
                .sum::<f64>()
                / dims[i].egress_gbps()
        })
        .fold(0.0, f64::max)
}

/// One hop of a dimension's own tree: from the NPU at offset `from` to the
/// one at `to` (offsets from the root's coordinate, wrapping), and for a
/// ring or a line the direction (+1 forward, -1 back).
#[derive(Clone, Copy)]
struct Hop {
    from: u32,
    to: u32,
    dir: i8,
}

/// A dimension's own tree (module doc), parents before children; `mirror`
/// swaps a ring's two directions; `at` is the root's coordinate along it
/// (a line's tree runs from there to both ends).
fn dim_tree(dim: &Dim, mirror: bool, at: u32) -> Vec<Hop> {
    let n = dim.size;
    match dim.kind {
        DimKind::Ring | DimKind::Line => {
            let (mut fwd, mut back) = if dim.kind == DimKind::Line {
                (n - 1 - at, at)
            } else {
                (n / 2, (n - 1) / 2)
            };
            if mirror && dim.kind == DimKind::Ring {
                std::mem::swap(&mut fwd, &mut back);
            }
            let ahead = (1..=fwd).map(|j| Hop {
                from: j - 1,
                to: j,
                dir: 1,
            });
            let behind = (1..=back).map(|j| Hop {
                from: (n - j + 1) % n,
                to: n - j,
                dir: -1,
            });
            ahead.chain(behind).collect()
        }
        DimKind::FullyConnected => (1..n).map(|j| Hop { from: 0, to: j, dir: 0 }).collect(),
        DimKind::Switch => (1..n)
            .map(|j| Hop {
                from: j - (1 << (31 - j.leading_zeros())),
                to: j,
                dir: 0,
            })
            .collect(),
    }
}

/// Rank `r` moved `off` places along dimension `d` (wrapping: a line's
/// trees never wrap, their offsets stay within it).
fn shift(topo: &Topology, r: u32, d: usize, off: u32) -> u32 {
    let stride = topo.stride(d);
    let n = topo.dims[d].size;
    let c = (r / stride) % n;
    r - c * stride + ((c + off) % n) * stride
}

/// The links of a hop from `u` to `v` along `dim` (`dir` for rings).
fn hop_links(topo: &Topology, dim: &Dim, u: u32, v: u32, dir: i8) -> (Vec<u32>, Vec<u32>) {
    let d = dim.index;
    let link = |a, b| topo.link_between(a, b).unwrap_or(u32::MAX);
    match dim.kind {
        DimKind::Ring | DimKind::Line => (vec![topo.neighbour_link(u, d, dir).unwrap_or(u32::MAX)], Vec::new()),
        DimKind::FullyConnected => (vec![link(u, v)], Vec::new()),
        DimKind::Switch => {
            let sw = topo.switch_node(u, d);
            (vec![link(u, sw), link(sw, v)], vec![sw])
        }
    }
}

/// The mirror images each order's trees come in: `[false, true]` when a
/// ring of even size is present (its own tree goes n / 2 hops forward and
/// n / 2 - 1 back; of two NPUs, only its forward link), else `[false]` (an
/// odd ring's tree is already even). Each carries an equal share.
fn mirrors(dims: &[Dim]) -> &'static [bool] {
    if dims.iter().any(|d| d.kind == DimKind::Ring && d.size % 2 == 0) {
        &[false, true]
    } else {
        &[false]
    }
}

/// One tree of root `root`: its hops (tail, head, dimension position, ring
/// direction), each tail reached before it is used.
fn tree_hops(topo: &Topology, dims: &[Dim], root: u32, order: &[usize], mirror: bool) -> Vec<(u32, u32, usize, i8)> {
    let mut nodes = vec![root];
    let mut hops = Vec::with_capacity(topo.npus as usize);
    for &i in order {
        let d = dims[i].index;
        // Every node reached so far shares the root's coordinate along d.
        let own = dim_tree(&dims[i], mirror, (root / topo.stride(d)) % topo.dims[d].size);
        for p in 0..nodes.len() {
            let base = nodes[p];
            for h in &own {
                let u = shift(topo, base, dims[i].index, h.from);
                let v = shift(topo, base, dims[i].index, h.to);
                hops.push((u, v, i, h.dir));
                nodes.push(v);
            }
        }
    }
    hops
}

/// Whether `topo` is a product network whose forest schedule of `kind` is
/// too large to build and replay transfer by transfer (more than
/// `4 x forest::MAX_TRANSFERS` transfers at one piece per tree, both passes
/// of an all-reduce counted): it is timed in rounds instead ([`round_time`]).
pub fn needs_rounds(topo: &Topology, kind: CollectiveKind) -> bool {
    let Some(dims) = symmetric(topo) else {
        return false;
    };
    let Ok(orders) = mixture(&dims) else {
        return false;
    };
    let passes = if kind == CollectiveKind::AllReduce { 2 } else { 1 };
    tree_arcs(topo.npus, orders.len() * mirrors(&dims).len()) * passes > 4 * super::trees::MAX_TRANSFERS
}

/// Whether a forest of `kind` on `topo` is timed in rounds rather than
/// built and replayed: on a torus-like product network when it is too
/// large to build ([`needs_rounds`]) or when no schedule is wanted (an
/// all-to-all is no forest; a mesh is always built).
pub fn timed_in_rounds(topo: &Topology, kind: CollectiveKind, wants_schedule: bool) -> bool {
    needs_rounds(topo, kind) || (!wants_schedule && kind != CollectiveKind::AllToAll && symmetric(topo).is_some())
}

/// Arcs of every root's trees: n (n - 1) per tree of a root.
fn tree_arcs(n: u32, per_root: usize) -> u64 {
    u64::from(n) * u64::from(n.saturating_sub(1)) * per_root as u64
}

/// The trees of every root (`reversed`: for a reduce-scatter, each arc's
/// route the reverse of its head-to-tail links), or `None` when `topo` is
/// not a product network.
pub fn forest(topo: &Topology, reversed: bool) -> Result<Option<Forest>, ForestError> {
    if let Some(dims) = dims(topo) {
        return dims_forest(topo, &dims, reversed).map(Some);
    }
    match switch_product(topo).and_then(|r| dims(&r.product).map(|d| (r, d))) {
        Some((r, d)) => Ok(Some(r.forest(dims_forest(&r.product, &d, reversed)?))),
        None => Ok(None),
    }
}

fn dims_forest(topo: &Topology, dims: &[Dim], reversed: bool) -> Result<Forest, ForestError> {
    let n = topo.npus;
    let orders = mixture(dims)?;
    let mirror = mirrors(dims);
    let per_root = orders.len() * mirror.len();
    let arcs_needed = tree_arcs(n, per_root);
    if arcs_needed > MAX_ARCS {
        let instead = if dims.iter().any(|d| d.kind == DimKind::Line) {
            "a mesh has no translation symmetry to time it in rounds: use fewer NPUs"
        } else {
            "`dimsum collective --algorithm forest` times it in rounds"
        };
        return Err(ForestError::TooBig(format!(
            "{n} NPUs x {per_root} trees per root would make {arcs_needed} tree arcs, over forest's {MAX_ARCS}: \
             too large to build and replay ({instead})"
        )));
    }
    let (t_star, _) = gather_cut(dims);
    let rate = 1.0 / t_star;
    let mut arcs: Vec<Arc> = Vec::new();
    let mut index: HashMap<(u32, u32), u32> = HashMap::new();
    let mut trees = Vec::with_capacity(n as usize * per_root);
    for root in 0..n {
        for o in &orders {
            for &m in mirror {
                let hops = tree_hops(topo, dims, root, &o.dims, m);
                let mut ids = Vec::with_capacity(hops.len());
                for (u, v, i, dir) in hops {
                    let dim = &dims[i];
                    let (route, via) = if reversed {
                        let (mut r, v2) = hop_links(topo, dim, v, u, -dir);
                        r.reverse();
                        (r, v2)
                    } else {
                        hop_links(topo, dim, u, v, dir)
                    };
                    let key = (route[0], route[route.len() - 1]);
                    let id = *index.entry(key).or_insert_with(|| {
                        arcs.push(Arc {
                            src: u,
                            dst: v,
                            gbps: dim.link_gbps,
                            route,
                            via,
                        });
                        arcs.len() as u32 - 1
                    });
                    ids.push(id);
                }
                trees.push(Tree {
                    root,
                    weight: rate * o.weight / mirror.len() as f64,
                    arcs: ids,
                });
            }
        }
    }
    Ok(Forest {
        arcs,
        trees,
        rate,
        split_loss: 1.0,
        paced: false,
    })
}

/// A schedule timed in synchronous rounds (see [`round_time`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTime {
    /// The collective.
    pub collective: &'static str,
    /// Pieces per tree.
    pub pieces: u32,
    /// Rounds (k + depth - 1; twice for an all-reduce).
    pub rounds: u32,
    /// The deepest tree, links (a switch hop is two: up, then down).
    pub depth: u32,
    /// Trees per root.
    pub trees_per_root: u32,
    /// The time, ns.
    pub time_ns: f64,
    /// The bandwidth term at the exact cut rate, ns: the cut bound of an
    /// all-gather or reduce-scatter; for an all-reduce the two together
    /// (what its forest's bandwidth can reach, not a bound on every
    /// all-reduce).
    pub bandwidth_ns: f64,
    /// Per dimension of the topology: the rounds' latency, ns (each
    /// round's largest link latency, charged to its dimension).
    pub alpha_ns_per_dim: Vec<f64>,
    /// Per dimension: the rounds' serialization, ns (each round's busiest
    /// link class, charged to its dimension).
    pub beta_ns_per_dim: Vec<f64>,
    /// The rounds' reductions at the receivers' memory, ns (a
    /// reduce-scatter's pass; 0 without a memory bandwidth).
    pub reduce_ns: f64,
    /// Per dimension: its busiest link's bytes over the whole collective
    /// divided by its bandwidth, ns (every link of a class carries the
    /// same).
    pub busiest_ns_per_dim: Vec<f64>,
}

/// The least gain of a doubling of the pieces that keeps `round_time`'s
/// search going (two doublings below it end it).
const PIECES_GAIN: f64 = 1e-3;

/// Most pieces per tree [`round_time`] tries (powers of two).
pub const MAX_ROUND_PIECES: u32 = 1 << 16;

/// [`round_time_with`] with free reductions.
pub fn round_time(
    topo: &Topology,
    kind: CollectiveKind,
    size: f64,
    pieces: u32,
) -> Result<Option<RoundTime>, ForestError> {
    round_time_with(topo, kind, size, pieces, None)
}

/// The forest schedule of `kind` on a product network, `size` bytes, timed
/// without materialising it: piece j of every tree crosses the links of
/// depth l in round j + l - 1 (a switch hop is two links deep: its up port
/// in one round, its down port in the next); by translation symmetry every
/// link of a class (a dimension, and a ring's direction, a fully-connected
/// group's offset or a switch's up or down ports) carries in each round
/// what the links of that class in root 0's trees carry, so a round takes
/// the largest class load over its bandwidth plus the largest link latency
/// and, in a reduce-scatter with `reduce_gbps`, the receivers' reductions
/// of what the round brought (`3 bytes / M`, as the simulator charges:
/// every NPU receives alike), and the schedule the sum of its rounds: an
/// execution in synchronous rounds, one message per link per round
/// (merging a round's pieces on a link), valid in either link model.
/// `pieces` 0 tries powers of two up to 65,536 and keeps the fastest. An
/// all-reduce is the reduce-scatter (the same rounds on the reversed
/// links) then the all-gather. `None` when `topo` is not a product network with translation
/// symmetry ([`symmetric`]: a mesh has none).
pub fn round_time_with(
    topo: &Topology,
    kind: CollectiveKind,
    size: f64,
    pieces: u32,
    reduce_gbps: Option<f64>,
) -> Result<Option<RoundTime>, ForestError> {
    let (gathers, reduces) = match kind {
        CollectiveKind::AllGather => (1.0, 0.0),
        CollectiveKind::ReduceScatter => (0.0, 1.0),
        CollectiveKind::AllReduce => (1.0, 1.0),
        other => return Err(ForestError::Collective(other.name())),
    };
    if pieces > MAX_ROUND_PIECES {
        return Err(ForestError::TooBig(format!(
            "{pieces} pieces per tree: forest's rounds take at most {MAX_ROUND_PIECES}"
        )));
    }
    let Some(dims) = symmetric(topo) else {
        return Ok(None);
    };
    let n = f64::from(topo.npus);
    let orders = mixture(&dims)?;
    let mirror = mirrors(&dims);
    let Some((class, classes)) = link_classes(topo) else {
        return Ok(None);
    };
    // Per class: ns per byte, its dimension, its latency, whether it ends
    // at an NPU.
    let mut class_cost = vec![0.0; classes];
    let mut class_dim = vec![0usize; classes];
    let mut class_latency = vec![0.0f64; classes];
    let mut into_npu = vec![false; classes];
    for (e, l) in topo.links.iter().enumerate() {
        let c = class[e];
        class_cost[c] = 1.0 / l.gbps;
        class_dim[c] = usize::from(l.dim.unwrap_or(0));
        class_latency[c] = l.latency_ns;
        into_npu[c] = l.dst < topo.npus;
    }
    let (load, parents) = root_loads(topo, &dims, &orders, mirror, &class, classes);
    let depth = load.len();
    // Prefix sums over levels, per class.
    let mut prefix = vec![vec![0.0; classes]; depth + 1];
    for l in 0..depth {
        for c in 0..classes {
            prefix[l + 1][c] = prefix[l][c] + load[l][c];
        }
    }
    let shard = size / n;
    let nd = topo.dims.len();
    // Per level (1-based), the classes loaded there; per class, its levels.
    let classes_at: Vec<Vec<usize>> = (0..depth)
        .map(|l| (0..classes).filter(|&c| load[l][c] > 0.0).collect())
        .collect();
    let levels_of: Vec<Vec<usize>> = (0..classes)
        .map(|c| (1..=depth).filter(|&l| load[l - 1][c] > 0.0).collect())
        .collect();
    let pass = |k: usize, reduce: Option<f64>, trace: bool| -> Pass {
        asynchronous_rounds(
            &Rounds {
                prefix: &prefix,
                parents: &parents,
                classes_at: &classes_at,
                levels_of: &levels_of,
                cost: &class_cost,
                latency: &class_latency,
                dim: &class_dim,
                into_npu: &into_npu,
                dims: nd,
            },
            k,
            shard / k as f64,
            reduce,
            trace,
        )
    };
    let total = |k: usize| gathers * pass(k, None, false).time_ns + reduces * pass(k, reduce_gbps, false).time_ns;
    let k = if pieces > 0 {
        pieces as usize
    } else {
        fastest_pieces(total)
    };
    let (mut alpha_ns, mut beta_ns, mut reduce_ns, mut time_ns) = (vec![0.0; nd], vec![0.0; nd], 0.0, 0.0);
    for (times, reduce) in [(gathers, None), (reduces, reduce_gbps)] {
        if times > 0.0 {
            let p = pass(k, reduce, true);
            time_ns += p.time_ns;
            reduce_ns += p.reduce_ns;
            alpha_ns.iter_mut().zip(&p.alpha_ns).for_each(|(x, y)| *x += y);
            beta_ns.iter_mut().zip(&p.beta_ns).for_each(|(x, y)| *x += y);
        }
    }
    let mut busiest_ns_per_dim = vec![0.0f64; nd];
    for c in 0..classes {
        let d = class_dim[c];
        busiest_ns_per_dim[d] =
            busiest_ns_per_dim[d].max((gathers + reduces) * prefix[depth][c] * shard * class_cost[c]);
    }
    let (t_star, _) = gather_cut(&dims);
    let passes = (gathers + reduces) as u32;
    Ok(Some(RoundTime {
        collective: kind.name(),
        pieces: k as u32,
        rounds: passes * (k + depth - 1) as u32,
        depth: depth as u32,
        trees_per_root: (orders.len() * mirror.len()) as u32,
        time_ns,
        bandwidth_ns: f64::from(passes) * shard * t_star,
        alpha_ns_per_dim: alpha_ns,
        beta_ns_per_dim: beta_ns,
        reduce_ns,
        busiest_ns_per_dim,
    }))
}

/// Root 0's trees of every order and mirror image, level by level:
/// `load[level][class]`, the share of a shard crossing one link of the
/// class at that depth in links (summed over the trees, weighted), and
/// `parents[level][class]`, the classes of the links that brought the data
/// its hops at that level send (`classes` for a root's own).
fn root_loads(
    topo: &Topology,
    dims: &[Dim],
    orders: &[Order],
    mirror: &[bool],
    class: &[usize],
    classes: usize,
) -> (Vec<Vec<f64>>, Vec<Vec<Vec<usize>>>) {
    let mut load: Vec<Vec<f64>> = Vec::new();
    let mut parents: Vec<Vec<Vec<usize>>> = Vec::new();
    for o in orders {
        for &m in mirror {
            let w = o.weight / mirror.len() as f64;
            let hops = tree_hops(topo, dims, 0, &o.dims, m);
            // Per NPU reached: its depth and the class that brought it.
            let mut depth: HashMap<u32, (usize, usize)> = HashMap::with_capacity(hops.len() + 1);
            depth.insert(0, (0, classes));
            for (u, v, i, dir) in hops {
                let (mut h, mut via) = depth[&u];
                for e in hop_links(topo, &dims[i], u, v, dir).0 {
                    h += 1;
                    if load.len() < h {
                        load.resize(h, vec![0.0; classes]);
                        parents.resize(h, vec![Vec::new(); classes]);
                    }
                    let c = class[e as usize];
                    load[h - 1][c] += w;
                    if !parents[h - 1][c].contains(&via) {
                        parents[h - 1][c].push(via);
                    }
                    via = c;
                }
                depth.insert(v, (h, via));
            }
        }
    }
    (load, parents)
}

/// The pieces per tree that time fastest by `total`: powers of two from 1
/// up to [`MAX_ROUND_PIECES`], until two doublings in a row gain less than
/// `PIECES_GAIN` each (the first of equal times kept).
fn fastest_pieces(total: impl Fn(usize) -> f64) -> usize {
    let (mut best, mut best_t, mut flat) = (1usize, total(1), 0);
    let mut k = 2usize;
    while k <= MAX_ROUND_PIECES as usize && flat < 2 {
        let t = total(k);
        flat = if t < best_t * (1.0 - PIECES_GAIN) { 0 } else { flat + 1 };
        if t < best_t {
            (best, best_t) = (k, t);
        }
        k *= 2;
    }
    best
}

/// One pass of a product's forest, per link class (`round_time_with`).
struct Rounds<'a> {
    /// Prefix sums over levels of each class's load (share of a shard).
    prefix: &'a [Vec<f64>],
    /// Per level and class, the classes that bring its data (the number of
    /// classes for a root's own data).
    parents: &'a [Vec<Vec<usize>>],
    classes_at: &'a [Vec<usize>],
    levels_of: &'a [Vec<usize>],
    /// ns per byte, latency ns, dimension and whether it ends at an NPU,
    /// per class.
    cost: &'a [f64],
    latency: &'a [f64],
    dim: &'a [usize],
    into_npu: &'a [bool],
    dims: usize,
}

/// A pass's time and its critical path's pieces.
struct Pass {
    time_ns: f64,
    alpha_ns: Vec<f64>,
    beta_ns: Vec<f64>,
    reduce_ns: f64,
}

/// One message of a class in a round, on the critical path's graph.
#[derive(Clone, Copy)]
struct Message {
    /// What it waited for last: the class's previous message, or the data
    /// it carries (the message that brought it), `usize::MAX` for none.
    pred: usize,
    /// The wait for data: the bringing link's latency (its dimension) and
    /// the receiver's reductions.
    alpha: f64,
    alpha_dim: usize,
    reduce: f64,
    /// Its serialization and dimension.
    beta: f64,
    dim: usize,
}

/// The pass in rounds, each link sending as soon as it can: in round q a
/// class's link sends one message per level it serves (the pieces of every
/// tree's hops at that level), each once the link is free and the data it
/// carries has arrived (what round q - 1 brought to the level above, its
/// latency after it left; at an NPU of a reduction, once the receiver's
/// memory has reduced it, `3 bytes / M`, in the order the data arrived),
/// the ready ones first. Translation symmetry makes every link of a class
/// alike, so the links of a class are one. An execution of the schedule:
/// latency overlaps the next messages' sends, paid once per level rather
/// than once per round. The critical path is walked back from the last
/// arrival, so its latency, serialization and reductions tile the time.
/// Without `trace` only the time is kept (no path).
fn asynchronous_rounds(r: &Rounds, k: usize, piece: f64, reduce: Option<f64>, trace: bool) -> Pass {
    let depth = r.classes_at.len();
    let classes = r.cost.len();
    let none = usize::MAX;
    let mut nodes: Vec<Message> = Vec::new();
    // Per class: its last message and when it was out. Per level: when
    // the last round's data arrived there, from which message, with that
    // link's latency (and its dimension) and the reductions after it.
    let mut last = vec![none; classes];
    let mut free = vec![0.0f64; classes];
    let blank = (0.0f64, none, 0.0f64, 0usize, 0.0f64);
    // arrived[level][class]: the last round's data at that level, brought
    // by that class.
    let mut arrived = vec![vec![blank; classes]; depth + 1];
    let mut memory_free = 0.0f64;
    let (mut end, mut end_at) = (0.0f64, (none, 0.0, 0usize, 0.0));
    type Arrival = (f64, usize, f64, usize, f64);
    let mut ready: Vec<(f64, usize, Arrival)> = Vec::new();
    let mut landed: Vec<(f64, usize, usize, usize, f64)> = Vec::new();
    for q in 0..k + depth - 1 {
        let hi = (q + 1).min(depth);
        let lo = (q + 1).saturating_sub(k);
        let mut next = vec![vec![blank; classes]; depth + 1];
        landed.clear();
        for c in 0..classes {
            ready.clear();
            for &l in &r.levels_of[c] {
                if l > lo && l <= hi {
                    // The latest of the data its hops carry.
                    let a = r.parents[l - 1][c]
                        .iter()
                        .filter(|&&p| p < classes)
                        .map(|&p| arrived[l - 1][p])
                        .fold(blank, |m, x| if x.0 > m.0 { x } else { m });
                    ready.push((a.0, l, a));
                }
            }
            ready.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for &(at, l, a) in &ready {
                // What it waited for last: the link's previous message, or
                // the data's arrival.
                let (pred, alpha, alpha_dim, reduced) = if last[c] != none && free[c] >= at {
                    (last[c], 0.0, 0, 0.0)
                } else {
                    (a.1, a.2, a.3, a.4)
                };
                let start = free[c].max(at);
                let beta = load_at(r, l, c) * piece * r.cost[c];
                let id = if trace {
                    nodes.push(Message {
                        pred,
                        alpha,
                        alpha_dim,
                        reduce: reduced,
                        beta,
                        dim: r.dim[c],
                    });
                    nodes.len() - 1
                } else {
                    0
                };
                last[c] = id;
                free[c] = start + beta;
                let got = start + beta + r.latency[c];
                if r.into_npu[c] && reduce.is_some() {
                    landed.push((got, id, l, c, load_at(r, l, c) * piece));
                    continue;
                }
                next[l][c] = (got, id, r.latency[c], r.dim[c], 0.0);
                if got > end {
                    (end, end_at) = (got, (id, r.latency[c], r.dim[c], 0.0));
                }
            }
        }
        if let Some(m) = reduce {
            // The receiver's memory reduces what landed, in arrival order.
            landed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for &(got, id, l, c, bytes) in &landed {
                memory_free = memory_free.max(got) + crate::model::units::transfer_ns(3.0 * bytes, m);
                let waited = memory_free - got;
                next[l][c] = (memory_free, id, r.latency[c], r.dim[c], waited);
                if memory_free > end {
                    (end, end_at) = (memory_free, (id, r.latency[c], r.dim[c], waited));
                }
            }
        }
        arrived = next;
    }
    // The critical path, back from the last arrival.
    let (mut alpha_ns, mut beta_ns, mut reduce_ns) = (vec![0.0; r.dims], vec![0.0; r.dims], 0.0);
    let (mut at, mut alpha, mut alpha_dim, mut red) = end_at;
    while trace && at != none {
        if let Some(a) = alpha_ns.get_mut(alpha_dim) {
            *a += alpha;
        }
        reduce_ns += red;
        let m = nodes[at];
        if let Some(b) = beta_ns.get_mut(m.dim) {
            *b += m.beta;
        }
        (at, alpha, alpha_dim, red) = (m.pred, m.alpha, m.alpha_dim, m.reduce);
    }
    Pass {
        time_ns: end,
        alpha_ns,
        beta_ns,
        reduce_ns,
    }
}

/// Class `c`'s load at level `l` (1-based).
fn load_at(r: &Rounds, l: usize, c: usize) -> f64 {
    r.prefix[l][c] - r.prefix[l - 1][c]
}

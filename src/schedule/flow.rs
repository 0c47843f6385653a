//! `flow`: all-to-all at the throughput of a maximum concurrent
//! multi-commodity flow (`--algorithm flow`).
//!
//! In an all-to-all every NPU s sends a piece of M / N bytes to every other
//! NPU t. Whatever the schedule, the bytes of every pair cross the links
//! along some paths, so the link loads are a multi-commodity flow and the
//! time is at least `max over links e of load(e) / B_e`; the least such
//! time over all flows is a linear program, and it is achievable (up to
//! pipelining) by sending each pair's piece along the optimal flow's paths.
//!
//! The program, with a commodity per source (its pieces to every other NPU
//! together; the pairs are recovered by decomposing it into paths):
//! minimise T subject to flow conservation (source s emits N - 1 pieces,
//! every other NPU absorbs one, switches pass what they receive) and
//! `sum_s f_s(e) <= B_e T` on every link. A second solve keeps T within
//! 1e-7 of its optimum and minimises the total flow (pieces x hops), so
//! the flow has no cycles and the paths are short. Solved through [`crate::lp`].
//!
//! On a product network (`schedule::product`: tori, rings, fully-connected
//! groups, switches, each dimension's links alike) the translations act on
//! the NPUs and carry every link to every other link of its class (a
//! dimension and a ring direction, a fully-connected offset, or a switch's
//! up or down ports), so averaging an optimal flow over the translations
//! gives one as good that is the same from every source: one commodity
//! (source 0) and a capacity row per class, `sum_{e in class} f_0(e) <=
//! B_class T` (each link of the class carries, over all sources, what
//! source 0 sends over the whole class). That program has one commodity
//! whatever N, so a 256-NPU torus solves in milliseconds; its paths are
//! translated to every source.
//!
//! The schedule: pair (s, t)'s `chunks_per_npu` chunks are apportioned to
//! its paths in proportion to their flow (the rounding offset rotates from
//! pair to pair so every path gets its share on average), each chunk one
//! transfer along its path's links, all issued at once, so a path's chunks
//! pipeline over its hops; the simulator times and checks it.

use super::shape::{self, LinkClasses};
use super::{MAX_STATE, Op, Run, Schedule, SmallVec, Transfer, smallvec};
use crate::lp::{self, Expr, LpError, Var, var};
use crate::model::topology::{DimKind, Topology};
use crate::model::workload::CollectiveKind;
use std::collections::VecDeque;

/// Most flow variables (commodities x links) the program takes: 32,768,
/// a 64x64 torus (one commodity, 16,384 links: 2.4 s) or 64 NPUs of 512
/// links in general; beyond it the bound falls back to the cuts.
pub const MAX_VARIABLES: u64 = 1 << 15;

/// Why an all-to-all flow was not found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlowError {
    /// Not an all-to-all.
    #[error("flow builds all-to-all, not {0}")]
    Collective(&'static str),
    /// The program would be too large.
    #[error("{0}")]
    TooBig(String),
    /// Some NPU cannot reach another.
    #[error("the topology does not connect every NPU to every other")]
    Disconnected,
    /// The LP solver failed.
    #[error("the flow program failed: {0}")]
    Solver(String),
}

/// One path of a pair's piece.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// Sender NPU.
    pub src: u32,
    /// Receiver NPU.
    pub dst: u32,
    /// Links, in order.
    pub links: Vec<u32>,
    /// The share of the pair's piece it carries (a pair's shares sum to 1).
    pub share: f64,
}

/// An optimal all-to-all flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// The least time per byte of one NPU's send buffer, ns: no all-to-all
    /// of M bytes per NPU beats `ns_per_byte x M`.
    pub ns_per_byte: f64,
    /// Every pair's paths, grouped by pair (senders in order).
    pub paths: Vec<Path>,
    /// Whether the product network's symmetry was used (one commodity).
    pub symmetric: bool,
}

/// The least all-to-all time per byte of one NPU's send buffer, ns (the
/// first solve of [`solve`] alone): a lower bound on every all-to-all
/// schedule.
pub fn bound_ns_per_byte(topo: &Topology) -> Result<f64, FlowError> {
    if topo.npus < 2 {
        return Ok(0.0);
    }
    let (sym, sources, top) = setup(topo)?;
    let t = program(topo, &sources, sym.as_ref(), top, None)?.0;
    Ok(t / (f64::from(topo.npus) * top))
}

/// The product symmetry (if any), the commodities' sources and the
/// bandwidth scale, or why the program is refused.
fn setup(topo: &Topology) -> Result<(Option<LinkClasses>, Vec<u32>, f64), FlowError> {
    let n = topo.npus;
    let sym = shape::link_classes(topo);
    let sources: Vec<u32> = if sym.is_some() { vec![0] } else { (0..n).collect() };
    let links = topo.links.len() as u64;
    let vars = sources.len() as u64 * links;
    if vars > MAX_VARIABLES {
        return Err(FlowError::TooBig(format!(
            "{n} NPUs x {links} links would make {vars} flow variables, over flow's {MAX_VARIABLES} (a network that is not a product of rings, fully-connected groups and switches takes one commodity per NPU)"
        )));
    }
    // Bandwidths scaled to the fastest link (for the solver's tolerances).
    let top = topo.links.iter().map(|l| l.gbps).fold(0.0, f64::max);
    if top <= 0.0 {
        return Err(FlowError::Disconnected);
    }
    Ok((sym, sources, top))
}

/// The optimal all-to-all flow of `topo` (module doc).
pub fn solve(topo: &Topology) -> Result<Flow, FlowError> {
    let n = topo.npus;
    if n < 2 {
        return Ok(Flow {
            ns_per_byte: 0.0,
            paths: Vec::new(),
            symmetric: false,
        });
    }
    let (sym, sources, top) = setup(topo)?;
    let t_star = program(topo, &sources, sym.as_ref(), top, None)?.0;
    let (_, f) = program(topo, &sources, sym.as_ref(), top, Some(t_star * (1.0 + 1e-7)))?;
    // T is in ns per piece at `top`-scaled bandwidth: a piece of M / N
    // bytes crosses a link of `top` GB/s in (M / N) / top ns.
    let ns_per_byte = t_star / (f64::from(n) * top);
    let mut paths = Vec::new();
    for (i, &s) in sources.iter().enumerate() {
        paths.extend(decompose(topo, s, &f[i])?);
    }
    if sym.is_some() {
        paths = (0..n)
            .flat_map(|s| paths.iter().map(move |p| (s, p)))
            .map(|(s, p)| translate(topo, p, s))
            .collect();
    }
    Ok(Flow {
        ns_per_byte,
        paths,
        symmetric: sym.is_some(),
    })
}

/// One solve: minimise T (`cap` None) or, with T held at `cap`, the total
/// flow. Returns T and every source's flow per link.
fn program(
    topo: &Topology,
    sources: &[u32],
    sym: Option<&LinkClasses>,
    top: f64,
    cap: Option<f64>,
) -> Result<(f64, Vec<Vec<f64>>), FlowError> {
    let n = topo.npus;
    let mut vars = lp::Problem::new();
    let f: Vec<Vec<Var>> = sources
        .iter()
        .map(|_| topo.links.iter().map(|_| vars.add(var().min(0.0))).collect())
        .collect();
    let t = vars.add(var().min(0.0));
    let objective: Expr = match cap {
        None => t.into(),
        Some(_) => f.iter().flatten().copied().sum(),
    };
    let mut model = vars.minimise(objective);
    for (i, &s) in sources.iter().enumerate() {
        let mut net: Vec<Expr> = vec![Expr::from(0.0); topo.nodes() as usize];
        for (e, l) in topo.links.iter().enumerate() {
            net[l.src as usize] += f[i][e];
            net[l.dst as usize] -= f[i][e];
        }
        for (v, expr) in net.into_iter().enumerate() {
            let v = v as u32;
            let b = if v == s {
                f64::from(n - 1)
            } else if v < n {
                -1.0
            } else {
                0.0
            };
            model.add(expr.eq(b));
        }
    }
    match sym {
        Some((class, count)) => {
            let mut rows: Vec<Expr> = vec![Expr::from(0.0); *count];
            let mut gbps = vec![0.0; *count];
            for (e, l) in topo.links.iter().enumerate() {
                rows[class[e]] += f[0][e];
                gbps[class[e]] = l.gbps / top;
            }
            for (row, g) in rows.into_iter().zip(gbps) {
                model.add((row - g * t).leq(0.0));
            }
        }
        None => {
            for (e, l) in topo.links.iter().enumerate() {
                let load: Expr = f.iter().map(|fs| fs[e]).sum();
                model.add((load - (l.gbps / top) * t).leq(0.0));
            }
        }
    }
    if let Some(c) = cap {
        model.add(Expr::from(t).leq(c));
    }
    let sol = model.solve().map_err(|e| match e {
        LpError::Infeasible => FlowError::Disconnected,
        other => FlowError::Solver(other.to_string()),
    })?;
    let flows = f
        .iter()
        .map(|fs| fs.iter().map(|&v| sol.value(v).max(0.0)).collect())
        .collect();
    Ok((sol.value(t), flows))
}

/// Source `s`'s flow as paths to every other NPU, each with its share of
/// the pair's piece.
fn decompose(topo: &Topology, s: u32, flow: &[f64]) -> Result<Vec<Path>, FlowError> {
    const EPS: f64 = 1e-9;
    let n = topo.npus;
    let mut left = flow.to_vec();
    let mut paths = Vec::new();
    for t in (0..n).filter(|&t| t != s) {
        let mut need = 1.0;
        let mut found: Vec<Path> = Vec::new();
        while need > 1e-7 {
            // Breadth first from s over links still carrying flow.
            let mut via = vec![u32::MAX; topo.nodes() as usize];
            let mut seen = vec![false; topo.nodes() as usize];
            seen[s as usize] = true;
            let mut queue = VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                if u == t {
                    break;
                }
                for &e in topo.out_links(u) {
                    let v = topo.links[e as usize].dst;
                    if left[e as usize] > EPS && !seen[v as usize] {
                        seen[v as usize] = true;
                        via[v as usize] = e;
                        queue.push_back(v);
                    }
                }
            }
            if !seen[t as usize] {
                break;
            }
            let mut links = Vec::new();
            let mut v = t;
            while v != s {
                let e = via[v as usize];
                links.push(e);
                v = topo.links[e as usize].src;
            }
            links.reverse();
            let push = links.iter().map(|&e| left[e as usize]).fold(need, f64::min);
            for &e in &links {
                left[e as usize] -= push;
            }
            need -= push;
            found.push(Path {
                src: s,
                dst: t,
                links,
                share: push,
            });
        }
        let got: f64 = found.iter().map(|p| p.share).sum();
        if found.is_empty() || got < 0.99 {
            return Err(FlowError::Solver(format!(
                "the flow from NPU {s} reaches NPU {t} with {got:.4} of its piece"
            )));
        }
        found.iter_mut().for_each(|p| p.share /= got);
        paths.extend(found);
    }
    Ok(paths)
}

/// NPU `r` moved by NPU `by`'s coordinates (per dimension, wrapping).
fn shifted(topo: &Topology, r: u32, by: u32) -> u32 {
    let (a, b) = (topo.coords(r), topo.coords(by));
    let mut rank = 0;
    let mut stride = 1;
    for (d, dim) in topo.dims.iter().enumerate() {
        rank += ((a[d] + b[d]) % dim.size) * stride;
        stride *= dim.size;
    }
    rank
}

/// Source 0's path moved to source `s` (a product network's translation).
fn translate(topo: &Topology, p: &Path, s: u32) -> Path {
    let links = p
        .links
        .iter()
        .map(|&e| {
            let l = &topo.links[e as usize];
            let d = usize::from(l.dim.unwrap_or(0));
            match topo.dims[d].kind {
                DimKind::Ring | DimKind::Line => {
                    let dir = if topo.neighbour_link(l.src, d, 1) == Some(e) {
                        1
                    } else {
                        -1
                    };
                    topo.neighbour_link(shifted(topo, l.src, s), d, dir)
                }
                DimKind::FullyConnected => topo.link_between(shifted(topo, l.src, s), shifted(topo, l.dst, s)),
                DimKind::Switch if l.src < topo.npus => {
                    let u = shifted(topo, l.src, s);
                    topo.link_between(u, topo.switch_node(u, d))
                }
                DimKind::Switch => {
                    let v = shifted(topo, l.dst, s);
                    topo.link_between(topo.switch_node(v, d), v)
                }
            }
            .unwrap_or(u32::MAX)
        })
        .collect();
    Path {
        src: shifted(topo, p.src, s),
        dst: shifted(topo, p.dst, s),
        links,
        share: p.share,
    }
}

/// Most transfers [`build`] makes when it chooses the chunk count.
pub const MAX_TRANSFERS: u64 = 1 << 22;

/// The flow schedule of an all-to-all on `topo`, `k` chunks per pair (0:
/// the most, up to 16, a power of two, within [`MAX_TRANSFERS`] and the
/// simulator's state; more paths than [`MAX_TRANSFERS`] are refused).
pub fn build(topo: &Topology, kind: CollectiveKind, k: u32) -> Result<Schedule, FlowError> {
    if kind != CollectiveKind::AllToAll {
        return Err(FlowError::Collective(kind.name()));
    }
    let n = topo.npus;
    // The simulator tracks every NPU's view of every chunk it may hold: n
    // NPUs x n k chunks of its own buffer (as `builtin` counts).
    let state = |k: u32| (u64::from(n) * u64::from(n)).saturating_mul(u64::from(k.max(1)));
    if state(k) > MAX_STATE {
        return Err(FlowError::TooBig(format!(
            "{n} NPUs x {n} x {} chunks would track {} NPU-chunk pairs, over the simulator's {MAX_STATE}: give fewer --chunks-per-npu",
            k.max(1),
            state(k)
        )));
    }
    let flow = solve(topo)?;
    let paths = flow.paths.len() as u64;
    if paths > MAX_TRANSFERS {
        return Err(FlowError::TooBig(format!(
            "{paths} paths would make more than flow's {MAX_TRANSFERS} transfers"
        )));
    }
    let k = if k > 0 {
        k
    } else {
        (0..=4)
            .rev()
            .map(|p| 1u32 << p)
            .find(|&k| state(k) <= MAX_STATE && paths * u64::from(k) <= MAX_TRANSFERS)
            .unwrap_or(1)
    };
    let mut s = Schedule::new(format!("flow(k={k})"), kind, n, k);
    s.topology = topo.name.clone();
    let mut at = 0;
    let golden = 0.618_033_988_749_895;
    while at < flow.paths.len() {
        let (src, dst) = (flow.paths[at].src, flow.paths[at].dst);
        let end = at
            + flow.paths[at..]
                .iter()
                .take_while(|p| (p.src, p.dst) == (src, dst))
                .count();
        // Chunk boundaries at round(k x cumulative share + offset), the
        // offset rotating from pair to pair.
        let offset = ((u64::from(src) * u64::from(n) + u64::from(dst)) as f64 * golden).fract();
        let base = (src * n + dst) * k;
        let mut cum = 0.0;
        let mut first = 0u32;
        for (j, p) in flow.paths[at..end].iter().enumerate() {
            cum += p.share;
            let last = if at + j + 1 == end {
                k
            } else {
                ((f64::from(k) * cum + offset).floor() as u32).min(k)
            };
            // One transfer per chunk: a path's chunks pipeline over its
            // hops (a transfer crosses a link once it has crossed the one
            // before).
            for c in first..last {
                s.transfers.push(Transfer {
                    src,
                    dst,
                    op: Op::Send,
                    chunks: smallvec![Run {
                        start: base + c,
                        count: 1,
                        stride: 1,
                    }],
                    deps: SmallVec::new(),
                    route: p.links.clone().into(),
                    after: SmallVec::new(),
                    bytes: None,
                    duration_ns: 0.0,
                });
            }
            first = first.max(last);
        }
        at = end;
    }
    // Issue order: chunk by chunk (every pair's first chunk, then every
    // pair's second, ...), the longest routes first within each, and the
    // pairs shifted (receiver minus sender), so that every link's queue
    // mixes the pairs it serves instead of taking one pair's chunks in a
    // burst while the links after it wait, and no receiver is sent to by
    // everyone at once.
    let k_of = |t: &Transfer| t.chunks[0].start % k;
    s.transfers.sort_by_key(|t| {
        (
            k_of(t),
            std::cmp::Reverse(t.route.len()),
            (t.dst + n - t.src) % n,
            t.src,
        )
    });
    Ok(s)
}

//! Swing (De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings
//! for Higher Bandwidth Allreduce", NSDI'24) and recursive doubling on tori,
//! as explicit schedules.
//!
//! **Peers.** At step `s`, `rho(s) = sum_{i=0..s} (-2)^i` (1, -1, 3, -5, 11,
//! ...); an even rank `r` talks to `(r + rho(s)) mod p` and an odd one to
//! `(r - rho(s)) mod p`. `rho` is odd, so on an even `p` an even rank's peer
//! is odd and the relation is symmetric; its distance `|rho(s)|` is about
//! `2^(s+1) / 3`, against recursive doubling's `2^s` (peer `r xor 2^s`).
//!
//! **Variants.** Bandwidth-optimal: a reduce-scatter in `log2 p` steps, at
//! step `s` rank `r` sending its peer `q` the blocks of every rank `q` still
//! reaches in steps `s+1..` (the reach sets halve each step and the two
//! sides' sets are disjoint: the peers form a butterfly, which the builder
//! checks), then the same steps mirrored as an all-gather. Latency-optimal
//! (all-reduce only): `log2 p` steps, each an exchange of the whole vector,
//! which both sides reduce once their own send is out (`after`, the
//! receive buffer).
//!
//! **Tori.** Each dimension keeps its own step counter; the steps alternate
//! between dimensions round-robin, skipping a dimension whose steps are used
//! up (a 4x16 torus: x y x y y y). A step changes one coordinate, so every
//! transfer stays on one dimension and takes the shorter way round it
//! (`|rho(s)| < p/2`). The reach set of a rank is the product of its
//! per-dimension reach sets, which keeps the chunk runs few.
//!
//! **Multiport.** On a torus with `D` dimensions that are not trivial, `2D`
//! collectives run at once, each on its own `1/2D` of the vector (its own
//! lanes): collective `j` starts on dimension `j / 2`, and odd `j` mirror
//! the peers (an even rank goes `-rho`), so at every step both directions of
//! every link are in use. `--single-port` runs one.
//!
//! **Sizes that are not powers of two.** On an even dimension the peers
//! (mod p) stay symmetric and, in `ceil(log2 p)` steps, every coordinate
//! still reaches every other (checked when the schedule is built; true for
//! every even p up to 200), only some of them along more than one path.
//! The bandwidth-optimal variant then drops the duplicates, as the authors
//! do: at each step a rank hands its peer exactly the blocks it reaches now
//! but would not reach without this step. Each block's contributions follow
//! one path, so every block leaves every rank once: `(p-1)/p` of the vector,
//! still bandwidth-optimal, in uneven steps. An odd dimension (and, for the
//! latency-optimal variant and recursive doubling, any dimension that is not
//! a power of two: they need a true butterfly) folds instead: with `q` the
//! size run natively and `e = p - q`, the first `2e` coordinates pair up,
//! `2i+1` handing its data to `2i` (one neighbour hop) before the
//! collective and getting the result back after it, dimension by dimension
//! (dimension 0 first in, last out). The `q` remaining coordinates run as
//! virtual ranks, virtual `v` sitting at physical `2v` (for `v < e`) or
//! `v + e` and owning the blocks of the coordinates folded into it. The
//! fold costs a whole-vector hop each way on the folded links.

use super::builtin::BuildError;
use super::{Op, Run, Schedule, SmallVec, Transfer};
use crate::model::swing::{CoordSet, Dim, NotButterfly, Reach, arith_runs};
pub use crate::model::swing::{DimModel, Peers, Variant, dim_model, peer, rho};
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;

/// How to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwingOptions {
    /// Peer function.
    pub peers: Peers,
    /// Bandwidth- or latency-optimal.
    pub variant: Variant,
    /// `2D` concurrent collectives (else one).
    pub multiport: bool,
    /// Lanes per collective.
    pub chunks_per_npu: u32,
}

impl SwingOptions {
    /// The schedule's algorithm name, e.g. `swing` or `recursive-doubling`.
    pub fn name(&self) -> String {
        let base = match (self.peers, self.variant) {
            (Peers::Swing, Variant::Bandwidth) => "swing",
            (Peers::Swing, Variant::Latency) => "swing-latency",
            (Peers::Doubling, Variant::Bandwidth) => "recursive-doubling-bw",
            (Peers::Doubling, Variant::Latency) => "recursive-doubling",
        };
        if self.multiport {
            base.to_string()
        } else {
            format!("{base}(single-port)")
        }
    }
}

/// Chunk runs of lane `lane` for the product of per-dimension coordinate
/// sets (shard = sum of coordinate x stride).
fn product_runs(sets: &[&CoordSet], dims: &[Dim], lane_base: u32) -> Vec<Run> {
    // The dimension cut into runs: the one that gives the fewest.
    let total: u64 = sets.iter().map(|s| s.elems.len() as u64).product();
    if total == 0 {
        return Vec::new();
    }
    let inner = (0..sets.len())
        .min_by_key(|&i| sets[i].runs.len() as u64 * (total / sets[i].elems.len().max(1) as u64))
        .unwrap_or(0);
    let mut out = Vec::new();
    let mut idx = vec![0usize; sets.len()];
    loop {
        let offset: u32 = (0..sets.len())
            .filter(|&d| d != inner)
            .map(|d| sets[d].elems[idx[d]] * dims[d].stride)
            .sum();
        for &(a, count, m) in &sets[inner].runs {
            let stride = if count == 1 { 1 } else { m * dims[inner].stride };
            out.push(Run {
                start: lane_base + offset + a * dims[inner].stride,
                count,
                stride,
            });
        }
        // Next combination of the other dimensions.
        let mut d = 0;
        loop {
            if d == sets.len() {
                return out;
            }
            if d != inner {
                idx[d] += 1;
                if idx[d] < sets[d].elems.len() {
                    break;
                }
                idx[d] = 0;
            }
            d += 1;
        }
    }
}

/// The order of (dimension, local step) for a collective that starts on
/// active dimension `start`.
fn step_order(dims: &[Dim], active: &[usize], start: usize) -> Vec<(usize, u32)> {
    let total: u32 = active.iter().map(|&d| dims[d].steps).sum();
    let mut used = vec![0u32; dims.len()];
    let mut out = Vec::with_capacity(total as usize);
    let mut cur = start;
    while out.len() < total as usize {
        for i in 0..active.len() {
            let d = active[(cur + i) % active.len()];
            if used[d] < dims[d].steps {
                out.push((d, used[d]));
                used[d] += 1;
                cur = (cur + i + 1) % active.len();
                break;
            }
        }
    }
    out
}

struct Builder<'a> {
    topo: &'a Topology,
    out: Vec<Transfer>,
    /// Per NPU: the transfers its lane's data depends on.
    tokens: Vec<Vec<u32>>,
}

impl Builder<'_> {
    fn push(&mut self, src: u32, dst: u32, op: Op, chunks: Vec<Run>) -> Result<u32, BuildError> {
        let route = self.topo.route(src, dst)?;
        self.out.push(Transfer {
            src,
            dst,
            op,
            chunks: chunks.into(),
            deps: self.tokens[src as usize].clone().into(),
            route: route.into(),
            after: SmallVec::new(),
            bytes: None,
            duration_ns: 0.0,
        });
        Ok((self.out.len() - 1) as u32)
    }
}

/// Builds `kind` (all-reduce; reduce-scatter and all-gather for the
/// bandwidth variant) on `topo` with Swing's or recursive doubling's peers.
pub fn build(topo: &Topology, kind: CollectiveKind, opt: &SwingOptions) -> Result<Schedule, BuildError> {
    let n = topo.npus;
    let (up, down) = halves(kind, &opt.name())?;
    if opt.variant == Variant::Latency && kind != CollectiveKind::AllReduce {
        return Err(BuildError::Unsupported(format!(
            "{} is an all-reduce; reduce-scatter and all-gather use the bandwidth-optimal variant",
            opt.name()
        )));
    }
    let dims = torus_dims(topo, opt.peers, opt.variant);
    let active: Vec<usize> = (0..dims.len()).filter(|&d| dims[d].q > 1).collect();
    let ports = if opt.multiport {
        2 * active.len().max(1) as u32
    } else {
        1
    };
    let k = opt.chunks_per_npu.max(1);
    let lanes = ports * k;
    check_state(n, lanes)?;
    let plan = Plan::new(n, dims, opt, up, down)?;
    let mut b = Builder {
        topo,
        out: Vec::new(),
        tokens: vec![Vec::new(); n as usize],
    };
    for port in 0..ports {
        let mirror = opt.multiport && port % 2 == 1 && opt.peers == Peers::Swing;
        let start = if active.is_empty() {
            0
        } else {
            (port as usize / 2) % active.len()
        };
        let order = step_order(&plan.dims, &active, start);
        for kk in 0..k {
            let lane = port * k + kk;
            let lane = Lane {
                plan: &plan,
                order: &order,
                mirror,
                lane,
                base: lane * n,
            };
            for t in &mut b.tokens {
                t.clear();
            }
            lane.fold_in(&mut b)?;
            if opt.variant == Variant::Latency {
                lane.latency_steps(&mut b)?;
            } else {
                lane.bandwidth_steps(&mut b)?;
            }
            lane.unfold(&mut b)?;
        }
    }
    let mut s = Schedule::new(opt.name(), kind, n, lanes);
    s.topology = topo.name.clone();
    s.transfers = b.out;
    Ok(s)
}

/// What every lane of a Swing build shares: the torus's dimensions, their
/// reach tables and the halves to build.
struct Plan<'a> {
    n: u32,
    dims: Vec<Dim>,
    /// Per dimension: the reach sets, normal and (multiport Swing) mirrored.
    reach: Vec<[Option<Reach>; 2]>,
    virtual_ranks: u32,
    opt: &'a SwingOptions,
    /// Build the reduce-scatter half.
    up: bool,
    /// Build the all-gather half.
    down: bool,
}

impl<'a> Plan<'a> {
    fn new(n: u32, dims: Vec<Dim>, opt: &'a SwingOptions, up: bool, down: bool) -> Result<Plan<'a>, BuildError> {
        let mut reach: Vec<[Option<Reach>; 2]> = Vec::new();
        for d in &dims {
            let normal = Reach::new(d, opt.peers, false)?;
            let mirrored = if opt.multiport && opt.peers == Peers::Swing {
                Some(Reach::new(d, opt.peers, true)?)
            } else {
                None
            };
            reach.push([Some(normal), mirrored]);
        }
        let virtual_ranks = dims.iter().map(|d| d.q).product();
        Ok(Plan {
            n,
            dims,
            reach,
            virtual_ranks,
            opt,
            up,
            down,
        })
    }

    /// Physical coordinates of rank `r`.
    fn coords(&self, r: u32) -> Vec<u32> {
        self.dims.iter().map(|d| (r / d.stride) % d.p).collect()
    }

    /// The rank at physical coordinates `xs`.
    fn rank(&self, xs: &[u32]) -> u32 {
        xs.iter().zip(&self.dims).map(|(x, d)| x * d.stride).sum()
    }

    /// Virtual coordinates of virtual rank `v`.
    fn virt_coords(&self, v: u32) -> Vec<u32> {
        let mut v = v;
        self.dims
            .iter()
            .map(|d| {
                let c = v % d.q;
                v /= d.q;
                c
            })
            .collect()
    }

    /// The physical rank a virtual coordinate vector sits at.
    fn phys_rank(&self, vc: &[u32]) -> u32 {
        vc.iter().zip(&self.dims).map(|(&v, d)| d.phys(v) * d.stride).sum()
    }

    /// Fold sets: the physical coordinates NPU `r` holds the blocks of after
    /// the fold stages below dimension `upto` (its own on the others).
    fn fold_set(&self, r: u32, upto: usize) -> Vec<CoordSet> {
        let dims = &self.dims;
        self.coords(r)
            .iter()
            .enumerate()
            .map(|(d, &x)| {
                let elems = if d < upto && dims[d].absorbs(x) {
                    vec![x, x + 1]
                } else {
                    vec![x]
                };
                let runs = arith_runs(&elems, dims[d].p);
                CoordSet { elems, runs }
            })
            .collect()
    }
}

/// One lane of one of the concurrent collectives: its step order, its
/// peers' direction and its chunks.
struct Lane<'p, 'a> {
    plan: &'p Plan<'a>,
    order: &'p [(usize, u32)],
    mirror: bool,
    lane: u32,
    /// The lane's first chunk.
    base: u32,
}

impl Lane<'_, '_> {
    /// The whole lane.
    fn whole(&self) -> Vec<Run> {
        vec![Run::range(self.lane * self.plan.n, self.plan.n)]
    }

    fn reach_of(&self, d: usize) -> &Reach {
        self.plan.reach[d][usize::from(self.mirror)]
            .as_ref()
            .unwrap_or_else(|| unreachable!())
    }

    /// Fold in, dimension 0 first.
    fn fold_in(&self, b: &mut Builder) -> Result<(), BuildError> {
        let (plan, dims) = (self.plan, &self.plan.dims);
        for (d, dim) in dims.iter().enumerate() {
            if dim.e == 0 {
                continue;
            }
            for r in 0..plan.n {
                let x = plan.coords(r);
                if !dim.extra(x[d]) || (0..d).any(|e| dims[e].extra(x[e])) {
                    continue;
                }
                let to = r - dim.stride;
                let (op, chunks) = if plan.up {
                    (Op::Reduce, self.whole())
                } else {
                    let sets = plan.fold_set(r, d);
                    let refs: Vec<&CoordSet> = sets.iter().collect();
                    (Op::Send, product_runs(&refs, dims, self.base))
                };
                let id = b.push(r, to, op, chunks)?;
                b.tokens[to as usize].push(id);
            }
        }
        Ok(())
    }

    /// What virtual rank `vc` hands its peer at step `pos` of the
    /// reduce-scatter (the peer hands it back in the all-gather): on the
    /// step's dimension, what it reaches now but not after the step; on the
    /// others, what it still reaches.
    fn handed(&self, vc: &[u32], pos: usize) -> Vec<Run> {
        let dims = &self.plan.dims;
        let mut c = vec![0u32; dims.len()];
        for &(d, _) in &self.order[..pos] {
            c[d] += 1;
        }
        let (sd, k) = self.order[pos];
        let sets: Vec<&CoordSet> = (0..dims.len())
            .map(|d| {
                let r = self.reach_of(d);
                if d == sd {
                    &r.diff[k as usize][vc[d] as usize]
                } else {
                    &r.sets[c[d] as usize][vc[d] as usize]
                }
            })
            .collect();
        product_runs(&sets, dims, self.base)
    }

    /// The peer of virtual coordinates `vc` at step `pos`.
    fn step_peer(&self, vc: &[u32], pos: usize) -> Vec<u32> {
        let (d, ks) = self.order[pos];
        let mut w = vc.to_vec();
        w[d] = self.plan.dims[d].peer(vc[d], ks, self.plan.opt.peers, self.mirror);
        w
    }

    /// The latency-optimal steps: whole-vector exchanges, each side
    /// applying the peer's vector once its own is out.
    fn latency_steps(&self, b: &mut Builder) -> Result<(), BuildError> {
        let plan = self.plan;
        for pos in 0..self.order.len() {
            let mut new: Vec<(u32, u32)> = Vec::new();
            for v in 0..plan.virtual_ranks {
                let vc = plan.virt_coords(v);
                let wc = self.step_peer(&vc, pos);
                let (u, w) = (plan.phys_rank(&vc), plan.phys_rank(&wc));
                let id = b.push(u, w, Op::Reduce, self.whole())?;
                new.push((w, id));
            }
            // Each side applies the peer's vector once its own is out.
            for v in 0..plan.virtual_ranks as usize {
                let wc = self.step_peer(&plan.virt_coords(v as u32), pos);
                let w = rank_of_virtual(&wc, &plan.dims);
                let back = new[w as usize].1;
                let id = new[v].1 as usize;
                b.out[id].after.push(back);
            }
            for (w, id) in new {
                b.tokens[w as usize].push(id);
            }
        }
        Ok(())
    }

    /// The bandwidth-optimal steps: the reduce-scatter, then the same steps
    /// mirrored as the all-gather.
    fn bandwidth_steps(&self, b: &mut Builder) -> Result<(), BuildError> {
        let plan = self.plan;
        let step = |pos: usize, gather: bool, b: &mut Builder| -> Result<(), BuildError> {
            let mut new = Vec::new();
            for v in 0..plan.virtual_ranks {
                let vc = plan.virt_coords(v);
                let wc = self.step_peer(&vc, pos);
                let chunks = if gather {
                    self.handed(&wc, pos)
                } else {
                    self.handed(&vc, pos)
                };
                if chunks.is_empty() {
                    continue;
                }
                let (u, w) = (plan.phys_rank(&vc), plan.phys_rank(&wc));
                let op = if gather { Op::Send } else { Op::Reduce };
                new.push((w, b.push(u, w, op, chunks)?));
            }
            for (w, id) in new {
                b.tokens[w as usize].push(id);
            }
            Ok(())
        };
        if plan.up {
            for pos in 0..self.order.len() {
                step(pos, false, b)?;
            }
        }
        if plan.down {
            for pos in (0..self.order.len()).rev() {
                step(pos, true, b)?;
            }
        }
        Ok(())
    }

    /// Unfold, last dimension first.
    fn unfold(&self, b: &mut Builder) -> Result<(), BuildError> {
        let (plan, dims) = (self.plan, &self.plan.dims);
        for (d, dim) in dims.iter().enumerate().rev() {
            if dim.e == 0 {
                continue;
            }
            for r in 0..plan.n {
                let x = plan.coords(r);
                if !dim.absorbs(x[d]) || (0..=d).any(|e| dims[e].extra(x[e])) {
                    continue;
                }
                let to = r + dim.stride;
                let chunks = if plan.down {
                    self.whole()
                } else {
                    let mut xs = x.clone();
                    xs[d] += 1;
                    let sets = plan.fold_set(plan.rank(&xs), d);
                    let refs: Vec<&CoordSet> = sets.iter().collect();
                    product_runs(&refs, dims, self.base)
                };
                let id = b.push(r, to, Op::Send, chunks)?;
                b.tokens[to as usize].push(id);
            }
        }
        Ok(())
    }
}

impl From<NotButterfly> for BuildError {
    fn from(e: NotButterfly) -> BuildError {
        BuildError::Unsupported(e.0)
    }
}

/// Reduce-scatter and all-gather halves of `kind`, or why `name` cannot
/// build it.
fn halves(kind: CollectiveKind, name: &str) -> Result<(bool, bool), BuildError> {
    match kind {
        CollectiveKind::AllReduce => Ok((true, true)),
        CollectiveKind::ReduceScatter => Ok((true, false)),
        CollectiveKind::AllGather => Ok((false, true)),
        _ => Err(BuildError::Unsupported(format!(
            "{name} builds all-reduce, reduce-scatter and all-gather, not {}",
            kind.name()
        ))),
    }
}

/// The torus's dimensions (one of all NPUs when the topology has none),
/// native sizes as `peers` and `variant` need them.
fn torus_dims(topo: &Topology, peers: Peers, variant: Variant) -> Vec<Dim> {
    let n = topo.npus;
    let sizes: Vec<u32> = if topo.dims.is_empty() || topo.dims.iter().map(|d| d.size).product::<u32>() != n {
        vec![n]
    } else {
        topo.dims.iter().map(|d| d.size).collect()
    };
    let mut stride = 1;
    sizes
        .iter()
        .map(|&p| {
            let d = Dim::new(p, stride, peers, variant);
            stride *= p;
            d
        })
        .collect()
}

/// Refuses schedules the simulator could not track.
fn check_state(n: u32, lanes: u32) -> Result<(), BuildError> {
    let chunks = u64::from(n) * u64::from(lanes);
    if chunks > super::builtin::MAX_CHUNKS || u64::from(n) * chunks > super::MAX_STATE {
        return Err(BuildError::Unsupported(format!(
            "{n} NPUs x {chunks} chunks is more than the simulator tracks ({} NPU-chunk pairs): use fewer chunks per NPU, --single-port or fewer NPUs",
            super::MAX_STATE
        )));
    }
    Ok(())
}

/// The bucket algorithm (Jain and Sabharwal; the baseline of the Swing
/// paper): on every dimension in turn a ring reduce-scatter of what the
/// earlier dimensions left, then ring all-gathers back in the reverse
/// order. Multiport (`multiport`), `2D` of them run at once on their own
/// lanes, collective `j` starting on dimension `j / 2` and going round its
/// rings in direction `+1` (even `j`) or `-1`, so every port is busy; any
/// size, `2 sum_d (p_d - 1)` steps for an all-reduce.
pub fn bucket(
    topo: &Topology,
    kind: CollectiveKind,
    multiport: bool,
    chunks_per_npu: u32,
) -> Result<Schedule, BuildError> {
    let n = topo.npus;
    let (up, down) = halves(kind, "bucket")?;
    let dims = torus_dims(topo, Peers::Swing, Variant::Bandwidth);
    let active: Vec<usize> = (0..dims.len()).filter(|&d| dims[d].p > 1).collect();
    let ports = if multiport { 2 * active.len().max(1) as u32 } else { 1 };
    let k = chunks_per_npu.max(1);
    let lanes = ports * k;
    check_state(n, lanes)?;
    let coords = |r: u32| -> Vec<u32> { dims.iter().map(|d| (r / d.stride) % d.p).collect() };
    let single = |x: u32, p: u32| CoordSet {
        elems: vec![x],
        runs: arith_runs(&[x], p),
    };
    let full: Vec<CoordSet> = dims
        .iter()
        .map(|d| {
            let elems: Vec<u32> = (0..d.p).collect();
            let runs = arith_runs(&elems, d.p);
            CoordSet { elems, runs }
        })
        .collect();
    let mut b = Builder {
        topo,
        out: Vec::new(),
        tokens: vec![Vec::new(); n as usize],
    };
    for port in 0..ports {
        let dir: i64 = if port % 2 == 0 { 1 } else { -1 };
        let start = if active.is_empty() {
            0
        } else {
            (port as usize / 2) % active.len()
        };
        let order: Vec<usize> = (0..active.len()).map(|i| active[(start + i) % active.len()]).collect();
        for kk in 0..k {
            let base = (port * k + kk) * n;
            for t in &mut b.tokens {
                t.clear();
            }
            // Block `j` of level `l` for NPU coordinates `x`: the earlier
            // dimensions fixed at x, this one at j, the later ones whole.
            let block = |x: &[u32], l: usize, j: u32| -> Vec<Run> {
                let mut owned: Vec<CoordSet> = Vec::with_capacity(dims.len());
                for (d, dim) in dims.iter().enumerate() {
                    let pos = order.iter().position(|&o| o == d);
                    owned.push(match pos {
                        Some(m) if m < l => single(x[d], dim.p),
                        Some(m) if m == l => single(j, dim.p),
                        Some(_) => full[d].clone(),
                        None => single(x[d], dim.p),
                    });
                }
                let refs: Vec<&CoordSet> = owned.iter().collect();
                product_runs(&refs, &dims, base)
            };
            let ring = |l: usize, gather: bool, b: &mut Builder| -> Result<(), BuildError> {
                let d = order[l];
                let p = i64::from(dims[d].p);
                for s in 0..p - 1 {
                    let mut new = Vec::with_capacity(n as usize);
                    for r in 0..n {
                        let x = coords(r);
                        let xd = i64::from(x[d]);
                        let to_c = (xd + dir).rem_euclid(p) as u32;
                        let to = r - x[d] * dims[d].stride + to_c * dims[d].stride;
                        let j = if gather {
                            (xd - dir * s).rem_euclid(p)
                        } else {
                            (xd - dir * (s + 1)).rem_euclid(p)
                        } as u32;
                        let op = if gather { Op::Send } else { Op::Reduce };
                        new.push((to, b.push(r, to, op, block(&x, l, j))?));
                    }
                    for (to, id) in new {
                        b.tokens[to as usize].push(id);
                    }
                }
                Ok(())
            };
            if up {
                for l in 0..order.len() {
                    ring(l, false, &mut b)?;
                }
            }
            if down {
                for l in (0..order.len()).rev() {
                    ring(l, true, &mut b)?;
                }
            }
        }
    }
    let name = if multiport { "bucket" } else { "bucket(single-port)" };
    let mut s = Schedule::new(name, kind, n, lanes);
    s.topology = topo.name.clone();
    s.transfers = b.out;
    Ok(s)
}

/// Index of virtual coordinates `vc` among the virtual ranks.
fn rank_of_virtual(vc: &[u32], dims: &[Dim]) -> u32 {
    let mut r = 0;
    for (v, d) in vc.iter().zip(dims).rev() {
        r = r * d.q + v;
    }
    r
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn rho_and_peers() {
        assert_eq!((0..5).map(rho).collect::<Vec<_>>(), vec![1, -1, 3, -5, 11]);
        assert_eq!((0..4).map(|s| peer(0, s, 16)).collect::<Vec<_>>(), vec![1, 15, 3, 11]);
    }

    #[test]
    fn runs_of_residue_classes() {
        // {0, 3, 4, 7, 8, 11, 12, 15}: two classes mod 4.
        let xs = [0, 3, 4, 7, 8, 11, 12, 15];
        assert_eq!(arith_runs(&xs, 16), vec![(0, 4, 4), (3, 4, 4)]);
        assert_eq!(arith_runs(&[5], 16), vec![(5, 1, 1)]);
    }

    #[test]
    fn round_robin_skips_used_up_dimensions() {
        let dims = vec![
            Dim::new(4, 1, Peers::Swing, Variant::Bandwidth),
            Dim::new(16, 4, Peers::Swing, Variant::Bandwidth),
        ];
        let order = step_order(&dims, &[0, 1], 0);
        let ds: Vec<usize> = order.iter().map(|x| x.0).collect();
        assert_eq!(ds, vec![0, 1, 0, 1, 1, 1]);
        let from_y: Vec<usize> = step_order(&dims, &[0, 1], 1).iter().map(|x| x.0).collect();
        assert_eq!(from_y, vec![1, 0, 1, 0, 1, 1]);
    }
}

//! Built-in collective algorithms as explicit schedules on a topology.
//!
//! - `ring`: p-1 steps in one direction; reduce-scatter step s sends block
//!   i-s-1 to i+1, all-gather step s forwards block i-s; all-reduce is both
//!   (Patarasuk and Yuan, JPDC 2009).
//! - `bidirectional-ring`: half of every block runs a ring one way and half
//!   the other, so both links of a ring dimension carry half the data, which
//!   is what LIBRA's per-NPU bandwidth (B/2 per direction) assumes. Where a
//!   block is a single chunk (a flat ring, or a ring as the last dimension)
//!   every chunk is split in two instead, so the schedule has twice the
//!   chunks per NPU.
//! - `direct`: every NPU sends every other its block at once (reduce-scatter:
//!   the block the peer owns; all-gather: its own).
//! - `halving-doubling`: recursive halving for reduce-scatter and recursive
//!   doubling for all-gather (Thakur, Rabenseifner and Gropp, IJHPCA 2005).
//!   For p not a power of two, with p' the largest power of two below p and
//!   r = p - p', the first 2r members fold in pairs first (2i+1 hands its data
//!   to 2i), p' participants run the power-of-two algorithm with 2i owning
//!   both blocks, and the pairs unfold at the end.
//! - `hierarchical`: the chosen algorithm per dimension, reduce-scatter up the
//!   dimensions (dimension 0 first, on the whole buffer) and all-gather back
//!   down, as Themis and LIBRA's model assume; every NPU's data shrinks by the
//!   group size per dimension, so the bytes per dimension are LIBRA's.
//! - all-to-all: `direct` sends each destination its slice; `ring` and
//!   `bidirectional-ring` forward slices neighbour to neighbour (the shorter
//!   way round for the bidirectional one); `halving-doubling` exchanges half
//!   the data with the partner across each bit (power-of-two groups);
//!   hierarchically, one exchange per dimension.
//!
//! `chunks_per_npu` = K cuts every shard into K lanes that run the algorithm
//! independently, so a lane can go on to the next dimension (or the next
//! step of a multi-hop route) while the others are still on the wire.
//!
//! Dependencies are data dependencies: a transfer waits for the transfers
//! that brought or reduced the data it sends (and, across phases, every
//! transfer that wrote the sender's part of the buffer).

use super::{Op, Run, Schedule, SmallVec, Transfer};
use crate::model::topology::{DimKind, NoRoute, Topology};
use crate::model::workload::CollectiveKind;

/// An algorithm for one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algo {
    /// One-direction ring.
    Ring,
    /// Half of every chunk each way round.
    BidirectionalRing,
    /// Everyone to everyone.
    Direct,
    /// Recursive halving / doubling.
    HalvingDoubling,
}

impl Algo {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Ring => "ring",
            Algo::BidirectionalRing => "bidirectional-ring",
            Algo::Direct => "direct",
            Algo::HalvingDoubling => "halving-doubling",
        }
    }

    /// What a dimension runs by default in a hierarchical schedule:
    /// bidirectional ring on rings and lines, direct on fully-connected
    /// groups and switches.
    pub fn default_for(kind: DimKind) -> Algo {
        match kind {
            DimKind::Ring | DimKind::Line => Algo::BidirectionalRing,
            DimKind::FullyConnected | DimKind::Switch => Algo::Direct,
        }
    }
}

/// Why a schedule cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Two NPUs that must talk are not connected.
    #[error(transparent)]
    NoRoute(#[from] NoRoute),
    /// The combination is not supported; the message says what is.
    #[error("{0}")]
    Unsupported(String),
}

/// Chunk ids above which a schedule is refused (memory of the simulator's
/// chunk state).
pub(crate) const MAX_CHUNKS: u64 = 1 << 26;

struct Builder<'a> {
    topo: &'a Topology,
    lanes: u32,
    out: Vec<Transfer>,
    /// Per NPU and lane: the transfers its current data depends on.
    tokens: Vec<Vec<u32>>,
}

/// A group phase: members (by coordinate), the dimension (for neighbour
/// links) and the blocks of one lane (block j belongs to member j).
struct Group<'g> {
    m: &'g [u32],
    dim: Option<usize>,
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Splits a chunk set into its first and second half (by count).
fn halves(runs: &[Run]) -> (Vec<Run>, Vec<Run>) {
    let total: u32 = runs.iter().map(|r| r.count).sum();
    let mut left = total / 2;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in runs {
        if left >= r.count {
            a.push(*r);
            left -= r.count;
        } else if left == 0 {
            b.push(*r);
        } else {
            a.push(Run { count: left, ..*r });
            b.push(Run {
                start: r.start + left * r.stride,
                count: r.count - left,
                stride: r.stride,
            });
            left = 0;
        }
    }
    (a, b)
}

/// Concatenates runs, merging neighbours that continue one another.
fn concat<'r>(parts: impl Iterator<Item = &'r Vec<Run>>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for r in parts.flatten() {
        if let Some(last) = out.last_mut() {
            if last.count == 1 && r.count == 1 && r.start == last.start + 1 {
                last.count = 2;
                last.stride = 1;
                continue;
            }
            if r.stride == last.stride && r.start == last.start + last.count * last.stride {
                last.count += r.count;
                continue;
            }
            if last.count >= 2 && r.count == 1 && r.start == last.start + last.count * last.stride {
                last.count += 1;
                continue;
            }
        }
        out.push(*r);
    }
    out
}

impl Builder<'_> {
    fn tok(&self, npu: u32, lane: u32) -> &Vec<u32> {
        &self.tokens[(npu * self.lanes + lane) as usize]
    }

    fn add_tokens(&mut self, npu: u32, lane: u32, new: &[u32]) {
        let t = &mut self.tokens[(npu * self.lanes + lane) as usize];
        *t = union(t, new);
    }

    /// Adds a transfer of `lane`. Besides `deps` (what the sender's data
    /// needs) a reduction waits for the receiver's tokens: the receiver's
    /// part of the buffer must be settled from earlier phases before a sum
    /// lands in it, or an overwrite from an earlier phase (the
    /// halving-doubling unfold) could land after it and erase it. Sends into
    /// chunks the receiver does not hold yet need no such wait.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        lane: u32,
        src: u32,
        dst: u32,
        op: Op,
        chunks: Vec<Run>,
        deps: Vec<u32>,
        hint: Option<(usize, i8)>,
    ) -> Result<u32, BuildError> {
        let deps = if op == Op::Reduce {
            union(&deps, self.tok(dst, lane))
        } else {
            deps
        };
        let route = match hint.and_then(|(d, dir)| self.topo.neighbour_link(src, d, dir)) {
            Some(l) if self.topo.links[l as usize].dst == dst => vec![l],
            _ => self.topo.route(src, dst)?,
        };
        self.out.push(Transfer {
            src,
            dst,
            op,
            chunks: chunks.into(),
            deps: deps.into(),
            route: route.into(),
            after: SmallVec::new(),
            bytes: None,
            duration_ns: 0.0,
        });
        Ok((self.out.len() - 1) as u32)
    }

    fn hint(&self, g: &Group, dir: i8) -> Option<(usize, i8)> {
        g.dim
            .filter(|&d| matches!(self.topo.dims[d].kind, DimKind::Ring | DimKind::Line))
            .map(|d| (d, dir))
    }

    /// A ring reduce-scatter; returns the transfers each member's data now
    /// depends on (applied by the caller, so two rings can run at once).
    fn rs_ring(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, dir: i8) -> Result<Vec<Vec<u32>>, BuildError> {
        let p = g.m.len() as i64;
        let mut prev: Vec<Option<u32>> = vec![None; p as usize];
        for s in 0..p - 1 {
            let mut next = vec![None; p as usize];
            for i in 0..p {
                let to = (i + i64::from(dir)).rem_euclid(p) as usize;
                let blk = (i - i64::from(dir) * (s + 1)).rem_euclid(p) as usize;
                let mut deps = self.tok(g.m[i as usize], lane).clone();
                deps.extend(prev[i as usize]);
                let id = self.push(
                    lane,
                    g.m[i as usize],
                    g.m[to],
                    Op::Reduce,
                    blocks[blk].clone(),
                    deps,
                    self.hint(g, dir),
                )?;
                next[to] = Some(id);
            }
            prev = next;
        }
        Ok(prev.into_iter().map(|t| t.into_iter().collect()).collect())
    }

    /// A ring all-gather; returns the additions like `rs_ring`.
    fn ag_ring(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, dir: i8) -> Result<Vec<Vec<u32>>, BuildError> {
        let p = g.m.len() as i64;
        let mut prev: Vec<Option<u32>> = vec![None; p as usize];
        let mut all: Vec<Vec<u32>> = vec![Vec::new(); p as usize];
        for s in 0..p - 1 {
            let mut next = vec![None; p as usize];
            for i in 0..p {
                let to = (i + i64::from(dir)).rem_euclid(p) as usize;
                let blk = (i - i64::from(dir) * s).rem_euclid(p) as usize;
                let deps = match prev[i as usize] {
                    Some(t) => vec![t],
                    None => self.tok(g.m[i as usize], lane).clone(),
                };
                let id = self.push(
                    lane,
                    g.m[i as usize],
                    g.m[to],
                    Op::Send,
                    blocks[blk].clone(),
                    deps,
                    self.hint(g, dir),
                )?;
                next[to] = Some(id);
                all[to].push(id);
            }
            prev = next;
        }
        Ok(all)
    }

    fn ring(
        &mut self,
        g: &Group,
        blocks: &[Vec<Run>],
        lane: u32,
        dir: i8,
        gather: bool,
    ) -> Result<Vec<Vec<u32>>, BuildError> {
        if gather {
            self.ag_ring(g, blocks, lane, dir)
        } else {
            self.rs_ring(g, blocks, lane, dir)
        }
    }

    /// Runs a ring in both directions at once, half of every block each way
    /// (or, when a block is one chunk, the whole lane one way by parity).
    fn both_ways(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, gather: bool) -> Result<(), BuildError> {
        let adds = if blocks.iter().all(|b| b.iter().map(|r| r.count).sum::<u32>() >= 2) {
            let (fwd, bwd): (Vec<Vec<Run>>, Vec<Vec<Run>>) = blocks.iter().map(|b| halves(b)).unzip();
            let mut a = self.ring(g, &fwd, lane, 1, gather)?;
            for (x, y) in a.iter_mut().zip(self.ring(g, &bwd, lane, -1, gather)?) {
                x.extend(y);
            }
            a
        } else {
            self.ring(g, blocks, lane, if lane.is_multiple_of(2) { 1 } else { -1 }, gather)?
        };
        for (i, a) in adds.iter().enumerate() {
            self.add_tokens(g.m[i], lane, a);
        }
        Ok(())
    }

    fn one_way(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, gather: bool) -> Result<(), BuildError> {
        let adds = self.ring(g, blocks, lane, 1, gather)?;
        for (i, a) in adds.iter().enumerate() {
            self.add_tokens(g.m[i], lane, a);
        }
        Ok(())
    }

    fn direct(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, reduce: bool) -> Result<(), BuildError> {
        let p = g.m.len();
        let mut inc: Vec<Vec<u32>> = vec![Vec::new(); p];
        for i in 0..p {
            let deps = self.tok(g.m[i], lane).clone();
            for o in 1..p {
                let j = (i + o) % p;
                let (op, blk) = if reduce { (Op::Reduce, j) } else { (Op::Send, i) };
                let id = self.push(lane, g.m[i], g.m[j], op, blocks[blk].clone(), deps.clone(), None)?;
                inc[j].push(id);
            }
        }
        for (j, a) in inc.iter().enumerate() {
            self.add_tokens(g.m[j], lane, a);
        }
        Ok(())
    }

    /// Recursive halving (`rs`), doubling (`ag`) or both (all-reduce), with
    /// the fold for groups that are not a power of two (module doc).
    fn halving_doubling(
        &mut self,
        g: &Group,
        blocks: &[Vec<Run>],
        lane: u32,
        rs: bool,
        ag: bool,
    ) -> Result<(), BuildError> {
        let p = g.m.len();
        let p2 = 1usize << (usize::BITS - 1 - p.leading_zeros());
        let r = p - p2;
        let member = |v: usize| if v < r { 2 * v } else { v + r };
        let owned = |v: usize| if v < r { vec![2 * v, 2 * v + 1] } else { vec![v + r] };
        let runs_of = |lo: usize, len: usize| concat((lo..lo + len).flat_map(owned).map(|j| &blocks[j]));
        let all_blocks = || concat(blocks.iter());
        let mut inc: Vec<Vec<u32>> = vec![Vec::new(); p2];
        // Fold: 2i+1 hands its data to 2i.
        for i in 0..r {
            let (chunks, op) = if rs {
                (all_blocks(), Op::Reduce)
            } else {
                (blocks[2 * i + 1].clone(), Op::Send)
            };
            let deps = self.tok(g.m[2 * i + 1], lane).clone();
            let id = self.push(lane, g.m[2 * i + 1], g.m[2 * i], op, chunks, deps, None)?;
            inc[i].push(id);
        }
        if rs {
            let mut lo = vec![0usize; p2];
            let mut size = p2;
            while size > 1 {
                let half = size / 2;
                let mut new_inc: Vec<Vec<u32>> = vec![Vec::new(); p2];
                for v in 0..p2 {
                    let w = v ^ half;
                    let (keep, send) = if v < lo[v] + half {
                        (lo[v], lo[v] + half)
                    } else {
                        (lo[v] + half, lo[v])
                    };
                    let deps = union(self.tok(g.m[member(v)], lane), &inc[v]);
                    let id = self.push(
                        lane,
                        g.m[member(v)],
                        g.m[member(w)],
                        Op::Reduce,
                        runs_of(send, half),
                        deps,
                        None,
                    )?;
                    new_inc[w].push(id);
                    lo[v] = keep;
                }
                for (a, b) in inc.iter_mut().zip(new_inc.iter_mut()) {
                    a.extend(std::mem::take(b));
                }
                size = half;
            }
        }
        if ag {
            let mut size = 1;
            while size < p2 {
                let mut new_inc: Vec<Vec<u32>> = vec![Vec::new(); p2];
                for (v, inc_v) in inc.iter().enumerate() {
                    let w = v ^ size;
                    let lo = v & !(size - 1);
                    let deps = union(self.tok(g.m[member(v)], lane), inc_v);
                    let id = self.push(
                        lane,
                        g.m[member(v)],
                        g.m[member(w)],
                        Op::Send,
                        runs_of(lo, size),
                        deps,
                        None,
                    )?;
                    new_inc[w].push(id);
                }
                for (a, b) in inc.iter_mut().zip(new_inc.iter_mut()) {
                    a.extend(std::mem::take(b));
                }
                size *= 2;
            }
        }
        // Unfold: 2i gives 2i+1 what it must end with.
        for i in 0..r {
            let chunks = if ag {
                concat(
                    blocks
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| rs || *j != 2 * i + 1)
                        .map(|(_, b)| b),
                )
            } else {
                blocks[2 * i + 1].clone()
            };
            let deps = union(self.tok(g.m[2 * i], lane), &inc[i]);
            let id = self.push(lane, g.m[2 * i], g.m[2 * i + 1], Op::Send, chunks, deps, None)?;
            self.add_tokens(g.m[2 * i + 1], lane, &[id]);
        }
        for (v, a) in inc.iter().enumerate() {
            self.add_tokens(g.m[member(v)], lane, a);
        }
        Ok(())
    }

    fn reduce_scatter(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, algo: Algo) -> Result<(), BuildError> {
        match algo {
            Algo::Ring => self.one_way(g, blocks, lane, false),
            Algo::BidirectionalRing => self.both_ways(g, blocks, lane, false),
            Algo::Direct => self.direct(g, blocks, lane, true),
            Algo::HalvingDoubling => self.halving_doubling(g, blocks, lane, true, false),
        }
    }

    fn all_gather(&mut self, g: &Group, blocks: &[Vec<Run>], lane: u32, algo: Algo) -> Result<(), BuildError> {
        match algo {
            Algo::Ring => self.one_way(g, blocks, lane, true),
            Algo::BidirectionalRing => self.both_ways(g, blocks, lane, true),
            Algo::Direct => self.direct(g, blocks, lane, false),
            Algo::HalvingDoubling => self.halving_doubling(g, blocks, lane, false, true),
        }
    }

    /// All-to-all within a group: `hold[i][j]` is what member i must deliver
    /// to member j.
    fn all_to_all(&mut self, g: &Group, mut hold: Vec<Vec<Vec<Run>>>, lane: u32, algo: Algo) -> Result<(), BuildError> {
        let p = g.m.len();
        let mut inc: Vec<Vec<u32>> = vec![Vec::new(); p];
        match algo {
            Algo::Direct => {
                for (i, row) in hold.iter_mut().enumerate() {
                    let deps = self.tok(g.m[i], lane).clone();
                    for o in 1..p {
                        let j = (i + o) % p;
                        let id = self.push(
                            lane,
                            g.m[i],
                            g.m[j],
                            Op::Send,
                            std::mem::take(&mut row[j]),
                            deps.clone(),
                            None,
                        )?;
                        inc[j].push(id);
                    }
                }
            }
            Algo::Ring | Algo::BidirectionalRing => {
                // fwd[i][j] travels +1, bwd[i][j] travels -1.
                let mut streams: Vec<(i8, Vec<Vec<Vec<Run>>>)> = Vec::new();
                let mut fwd = vec![vec![Vec::new(); p]; p];
                let mut bwd = vec![vec![Vec::new(); p]; p];
                for (i, row) in hold.iter_mut().enumerate() {
                    for (j, runs) in row.iter_mut().enumerate() {
                        let dist = (j + p - i) % p;
                        if algo == Algo::Ring || dist <= p / 2 {
                            fwd[i][j] = std::mem::take(runs);
                        } else {
                            bwd[i][j] = std::mem::take(runs);
                        }
                    }
                }
                streams.push((1, fwd));
                streams.push((-1, bwd));
                for (dir, mut h) in streams {
                    let mut prev: Vec<Option<u32>> = vec![None; p];
                    for _ in 0..p - 1 {
                        let mut next = vec![None; p];
                        let mut moved: Vec<(usize, usize, Vec<Run>)> = Vec::new();
                        for i in 0..p {
                            let to = (i as i64 + i64::from(dir)).rem_euclid(p as i64) as usize;
                            let targets: Vec<usize> = (0..p).filter(|&j| j != i && !h[i][j].is_empty()).collect();
                            if targets.is_empty() {
                                continue;
                            }
                            let chunks = concat(targets.iter().map(|&j| &h[i][j]));
                            let mut deps = self.tok(g.m[i], lane).clone();
                            deps.extend(prev[i]);
                            let id = self.push(lane, g.m[i], g.m[to], Op::Send, chunks, deps, self.hint(g, dir))?;
                            next[to] = Some(id);
                            inc[to].push(id);
                            for j in targets {
                                moved.push((to, j, std::mem::take(&mut h[i][j])));
                            }
                        }
                        for (to, j, runs) in moved {
                            h[to][j].extend(runs);
                        }
                        prev = next;
                    }
                }
            }
            Algo::HalvingDoubling => {
                if !p.is_power_of_two() {
                    return Err(BuildError::Unsupported(format!(
                        "halving-doubling all-to-all needs a power-of-two group, not {p}: use flow, direct or ring"
                    )));
                }
                let mut mask = p / 2;
                while mask >= 1 {
                    let mut moved: Vec<(usize, usize, Vec<Run>)> = Vec::new();
                    let mut new_inc: Vec<Vec<u32>> = vec![Vec::new(); p];
                    for i in 0..p {
                        let w = i ^ mask;
                        let targets: Vec<usize> = (0..p)
                            .filter(|&j| (j & mask) != (i & mask) && !hold[i][j].is_empty())
                            .collect();
                        let chunks = concat(targets.iter().map(|&j| &hold[i][j]));
                        let deps = union(self.tok(g.m[i], lane), &inc[i]);
                        let id = self.push(lane, g.m[i], g.m[w], Op::Send, chunks, deps, None)?;
                        new_inc[w].push(id);
                        for j in targets {
                            moved.push((w, j, std::mem::take(&mut hold[i][j])));
                        }
                    }
                    for (w, j, runs) in moved {
                        hold[w][j].extend(runs);
                    }
                    for (a, b) in inc.iter_mut().zip(new_inc.iter_mut()) {
                        a.extend(std::mem::take(b));
                    }
                    mask /= 2;
                }
            }
        }
        for (j, a) in inc.iter().enumerate() {
            self.add_tokens(g.m[j], lane, a);
        }
        Ok(())
    }
}

/// The phases of a schedule: groups of NPUs along "levels" (one level for a
/// flat algorithm over every NPU, one per dimension for a hierarchical one).
struct Level {
    /// Groups of members, each in coordinate order.
    groups: Vec<Vec<u32>>,
    /// Product of the sizes of the levels below (the stride of this level).
    lower: u32,
    /// Group size.
    p: u32,
    dim: Option<usize>,
    algo: Algo,
}

fn levels(topo: &Topology, algos: Option<&[Algo]>, flat: Algo) -> Result<Vec<Level>, BuildError> {
    let n = topo.npus;
    match algos {
        None => Ok(vec![Level {
            groups: vec![(0..n).collect()],
            lower: 1,
            p: n,
            dim: (topo.dims.len() == 1).then_some(0),
            algo: flat,
        }]),
        Some(algos) => {
            if topo.dims.is_empty() {
                return Err(BuildError::Unsupported(format!(
                    "a hierarchical schedule needs a topology of dimensions; `{}` has none: use ring, direct or halving-doubling",
                    topo.name
                )));
            }
            if algos.len() != topo.dims.len() {
                return Err(BuildError::Unsupported(format!(
                    "{} algorithms for {} dimensions: give one per dimension",
                    algos.len(),
                    topo.dims.len()
                )));
            }
            let mut out = Vec::new();
            let mut lower = 1;
            for (d, dim) in topo.dims.iter().enumerate() {
                if dim.size >= 2 {
                    let groups = (0..n)
                        .filter(|r| (r / lower) % dim.size == 0)
                        .map(|r| topo.members(r, d))
                        .collect();
                    out.push(Level {
                        groups,
                        lower,
                        p: dim.size,
                        dim: Some(d),
                        algo: algos[d],
                    });
                }
                lower *= dim.size;
            }
            Ok(out)
        }
    }
}

/// Blocks of one lane for a group at a level: block j is every shard whose
/// index agrees with the group on the levels below and is j on this one.
fn blocks(n: u32, lane: u32, base: u32, lower: u32, p: u32) -> Vec<Vec<Run>> {
    let upper = lower * p;
    (0..p)
        .map(|j| {
            vec![Run {
                start: lane * n + base + lower * j,
                count: n / upper,
                stride: upper,
            }]
        })
        .collect()
}

/// Builds `kind` on `topo` with one algorithm over all NPUs in rank order
/// (`algos = None`, using `flat`) or hierarchically with one algorithm per
/// dimension.
pub fn build(
    topo: &Topology,
    kind: CollectiveKind,
    flat: Algo,
    algos: Option<&[Algo]>,
    chunks_per_npu: u32,
) -> Result<Schedule, BuildError> {
    let n = topo.npus;
    let levels = levels(topo, algos, flat)?;
    // A bidirectional ring sends half of each block each way; where a block
    // is a single chunk there is no half, so every chunk is split in two
    // (two lanes per chunk, one per direction).
    let k = chunks_per_npu.max(1);
    let bidir = levels
        .iter()
        .any(|l| l.algo == Algo::BidirectionalRing && n / (l.lower * l.p) < 2)
        && kind != CollectiveKind::AllToAll;
    let lanes = k * if bidir { 2 } else { 1 };
    check_chunks(n, kind, lanes)?;
    let what = if algos.is_some() { "hierarchical" } else { flat.name() };
    check_transfers(n, kind, &levels, lanes, what)?;
    let name = match algos {
        None => flat.name().to_string(),
        Some(a) => format!(
            "hierarchical({})",
            a.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")
        ),
    };
    let mut b = Builder {
        topo,
        lanes,
        out: Vec::new(),
        tokens: vec![Vec::new(); (n * lanes) as usize],
    };
    match kind {
        CollectiveKind::ReduceScatter | CollectiveKind::AllReduce | CollectiveKind::AllGather => {
            let (up, down) = match kind {
                CollectiveKind::ReduceScatter => (true, false),
                CollectiveKind::AllGather => (false, true),
                _ => (true, true),
            };
            // A flat all-reduce with halving-doubling folds only once.
            let fused_hd = algos.is_none() && flat == Algo::HalvingDoubling && up && down;
            for lane in 0..lanes {
                if fused_hd {
                    let g = &levels[0].groups[0];
                    let bl = blocks(n, lane, 0, 1, n);
                    b.halving_doubling(
                        &Group {
                            m: g,
                            dim: levels[0].dim,
                        },
                        &bl,
                        lane,
                        true,
                        true,
                    )?;
                } else {
                    b.by_levels(&levels, lane, up, down)?;
                }
            }
        }
        CollectiveKind::AllToAll => {
            for lane in 0..lanes {
                b.all_to_all_levels(&levels, lane)?;
            }
        }
        CollectiveKind::SendRecv => {
            return Err(BuildError::Unsupported(
                "send-recv has no schedule: use all-gather, reduce-scatter, all-reduce or all-to-all".into(),
            ));
        }
    }
    let mut s = Schedule::new(name, kind, n, lanes);
    s.topology = topo.name.clone();
    s.transfers = b.out;
    Ok(s)
}

/// Refuses `kind` on `n` NPUs in `lanes` lanes when its chunks, or the
/// NPU-chunk pairs the simulator tracks (every NPU's copy of every chunk
/// it can receive), are more than it takes.
fn check_chunks(n: u32, kind: CollectiveKind, lanes: u32) -> Result<(), BuildError> {
    let chunks = match kind {
        CollectiveKind::AllToAll => u64::from(n) * u64::from(n) * u64::from(lanes),
        _ => u64::from(n) * u64::from(lanes),
    };
    // The simulator tracks every NPU's copy of every chunk it can receive.
    let state = u64::from(n)
        * if kind == CollectiveKind::AllToAll {
            chunks / u64::from(n)
        } else {
            chunks
        };
    if chunks > MAX_CHUNKS || state > super::MAX_STATE {
        return Err(BuildError::Unsupported(format!(
            "{n} NPUs x {chunks} chunks is more than the simulator tracks ({} NPU-chunk pairs): use fewer chunks per NPU (or NPUs)",
            super::MAX_STATE
        )));
    }
    Ok(())
}

/// Refuses a schedule (`what`: its algorithm's name) of `kind` on `n` NPUs
/// over `levels` in `lanes` lanes whose transfers or dependency entries,
/// estimated before they are built, are more than a schedule may hold.
fn check_transfers(n: u32, kind: CollectiveKind, levels: &[Level], lanes: u32, what: &str) -> Result<(), BuildError> {
    // Transfers per lane and phase: every NPU sends once per step of each
    // level (twice on a bidirectional ring; halving-doubling's fold for
    // sizes off powers of two adds at most two steps).
    let steps: u64 = levels
        .iter()
        .map(|l| {
            let p = u64::from(l.p);
            match l.algo {
                Algo::HalvingDoubling => u64::from(p.next_power_of_two().trailing_zeros()) + 2,
                // Each lane goes one way when the block was split in two
                // lanes (`bidir`), both ways otherwise.
                Algo::BidirectionalRing if n / (l.lower * l.p) < 2 => p - 1,
                Algo::BidirectionalRing => 2 * (p - 1),
                Algo::Ring | Algo::Direct => p - 1,
            }
        })
        .sum();
    let phases = if kind == CollectiveKind::AllReduce { 2 } else { 1 };
    let transfers = u64::from(n) * u64::from(lanes) * steps * phases;
    // Dependencies: a direct level's transfers each wait for the p - 1
    // receives of the step before; elsewhere a transfer waits for a few.
    let deps: u64 = levels
        .iter()
        .map(|l| {
            let p = u64::from(l.p);
            if l.algo == Algo::Direct { (p - 1) * p } else { 0 }
        })
        .sum::<u64>()
        * u64::from(n)
        * u64::from(lanes)
        * phases
        + 2 * transfers;
    if transfers > super::MAX_TRANSFERS {
        return Err(BuildError::Unsupported(format!(
            "{what} on {n} NPUs is about {transfers} transfers, more than a schedule may hold ({}): use a hierarchical or halving-doubling schedule, fewer chunks per NPU or fewer NPUs",
            super::MAX_TRANSFERS
        )));
    }
    if deps > super::MAX_DEPS {
        // About 4.5 bytes an entry with its share of the replay (MAX_DEPS).
        let gb = deps as f64 * 4.5 / 1e9;
        let fix = if kind == CollectiveKind::AllToAll {
            "a direct all-to-all level of p NPUs holds about n p^2 of them: use fewer NPUs or a topology of several dimensions"
        } else {
            "use a ring or halving-doubling schedule (or a hierarchical one over smaller levels), fewer chunks per NPU or fewer NPUs"
        };
        return Err(BuildError::Unsupported(format!(
            "{what} on {n} NPUs is about {deps} dependency entries (~{gb:.0} GB), more than a schedule may hold ({}): {fix}",
            super::MAX_DEPS
        )));
    }
    Ok(())
}

impl Builder<'_> {
    /// One lane of a reduce-scatter (`up`: each level's groups, innermost
    /// first), an all-gather (`down`: outermost first) or both in turn (an
    /// all-reduce), each group with its level's algorithm on its blocks.
    fn by_levels(&mut self, levels: &[Level], lane: u32, up: bool, down: bool) -> Result<(), BuildError> {
        let n = self.topo.npus;
        if up {
            for l in levels {
                for g in &l.groups {
                    let bl = blocks(n, lane, g[0] % l.lower, l.lower, l.p);
                    self.reduce_scatter(&Group { m: g, dim: l.dim }, &bl, lane, l.algo)?;
                }
            }
        }
        if down {
            for l in levels.iter().rev() {
                for g in &l.groups {
                    let bl = blocks(n, lane, g[0] % l.lower, l.lower, l.p);
                    self.all_gather(&Group { m: g, dim: l.dim }, &bl, lane, l.algo)?;
                }
            }
        }
        Ok(())
    }

    /// One lane of an all-to-all, level by level (innermost first): each
    /// member of a group holds, per position j in the group, the pieces
    /// sent by the NPUs of its block on the levels below to the
    /// destinations that agree with it below this level and are j on it.
    fn all_to_all_levels(&mut self, levels: &[Level], lane: u32) -> Result<(), BuildError> {
        let (n, k) = (self.topo.npus, self.lanes);
        for l in levels {
            let upper = l.lower * l.p;
            for g in &l.groups {
                let hold: Vec<Vec<Vec<Run>>> = g
                    .iter()
                    .map(|&r| {
                        let s0 = r - r % l.lower;
                        (0..l.p)
                            .map(|j| {
                                (0..l.lower)
                                    .map(|sl| Run {
                                        start: ((s0 + sl) * n + r % l.lower + l.lower * j) * k + lane,
                                        count: n / upper,
                                        stride: upper * k,
                                    })
                                    .collect()
                            })
                            .collect()
                    })
                    .collect();
                self.all_to_all(&Group { m: g, dim: l.dim }, hold, lane, l.algo)?;
            }
        }
        Ok(())
    }
}

//! Event-driven, congestion-aware replay of a schedule on a topology, with
//! the check that the schedule really computes its collective.
//!
//! Link model (`alpha-beta`): a link sends one transfer at a time, in the
//! order transfers become ready at its source (FIFO; ties by transfer
//! index); a transfer of `s` bytes that starts on a link at `t` occupies it
//! for `s / bw` and reaches the far end at `t + latency + s / bw`; switches
//! and forwarding NPUs store and forward. In the `tacos` model (TACOS, Won et
//! al., MICRO'24) the link stays busy for `latency + s / bw`, so back-to-back
//! transfers do not overlap their latencies.
//!
//! A transfer is issued when its last dependency arrives (or at 0) and the
//! receiver stores (or reduces) the chunks on arrival, or, when the transfer
//! lists `after` transfers (a receive buffer, for exchanges), once those
//! have arrived too: the data is read on arrival and applied then. The sender's chunks
//! must not change between issue and arrival: a chunk the sender did not
//! hold at issue ("used before it arrives") or that another transfer
//! rewrote while it was on the wire (a missing dependency) is an error, so
//! the value read at arrival is the value at issue. Data is tracked
//! symbolically: every NPU's contribution is a fixed pseudo-random odd 64-bit
//! number and a chunk's value is the wrapping sum of the contributions
//! reduced into it (0: not held), so duplicated and missing contributions
//! are both caught (a wrong sum that matches has probability about 2^-64) and
//! the report names the NPU whose contribution is missing or doubled. At the end: all-gather — every NPU holds every chunk with
//! its owner's value; reduce-scatter — every NPU holds its shard reduced over
//! all NPUs exactly once; all-reduce — every NPU every chunk; all-to-all —
//! every NPU holds every piece addressed to it. Sending a chunk the sender
//! does not hold yet ("used before it arrives") is an error too.
//!
//! Reported: completion time; per link busy time, bytes and utilization; the
//! bytes each NPU sends per dimension (the `bytes_d` of the time-coefficient
//! contract, measured; the maximum over NPUs); and the critical path, walked
//! back from the last arrival through whatever delayed each transfer last (a
//! busy link or its last dependency).

use crate::error::Named;
use crate::model::topology::{Link, NONE, Topology};
use crate::model::units;
use crate::model::workload::CollectiveKind;
use crate::schedule::{Op, Schedule, Transfer};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// How a link is occupied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkModel {
    /// Busy for size / bandwidth; latency overlaps the next transfer.
    AlphaBeta,
    /// Busy for latency + size / bandwidth (TACOS's model).
    Tacos,
}

impl Named for LinkModel {
    const WHAT: &'static str = "a link model";
    const ALL: &'static [LinkModel] = &[LinkModel::AlphaBeta, LinkModel::Tacos];
    fn as_name(self) -> &'static str {
        match self {
            LinkModel::AlphaBeta => "alpha-beta",
            LinkModel::Tacos => "tacos",
        }
    }
}
crate::named!(LinkModel);

/// One step of the critical path.
#[derive(Debug, Clone, Serialize)]
pub struct PathStep {
    /// Transfer index.
    pub transfer: u32,
    /// Sender.
    pub src: u32,
    /// Receiver.
    pub dst: u32,
    /// Issue time, ns.
    pub issue_ns: f64,
    /// Arrival time, ns.
    pub arrive_ns: f64,
    /// What it waited for: `start`, `dependency` or `link`.
    pub waited_for: &'static str,
}

/// One transfer on one link, for timelines.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Hop {
    /// Transfer index.
    pub transfer: u32,
    /// Link id.
    pub link: u32,
    /// When the link started sending it, ns.
    pub start_ns: f64,
    /// When the link was free again, ns.
    pub end_ns: f64,
}

/// What a replay found.
#[derive(Debug, Clone, Serialize)]
pub struct SimResult {
    /// When the last transfer arrived, ns.
    pub time_ns: f64,
    /// The schedule computes its collective and never uses a chunk early
    /// (for an untracked schedule: only that every transfer runs).
    pub valid: bool,
    /// Whether the data was checked (false for untracked schedules: a
    /// foreign trace names sizes, not chunks).
    pub data_checked: bool,
    /// The first problems found (each names the NPU and the chunk).
    pub errors: Vec<String>,
    /// How many problems there were in all.
    pub error_count: u64,
    /// Transfers replayed.
    pub transfers: u64,
    /// Link traversals replayed.
    pub hops: u64,
    /// Chunk deliveries (chunks times hops... counted once per transfer).
    pub chunk_moves: u64,
    /// Busy time per link, ns.
    pub link_busy_ns: Vec<f64>,
    /// Bytes per link.
    pub link_bytes: Vec<f64>,
    /// Per dimension (link label): the most bytes one NPU sends over it.
    pub bytes_per_dim: Vec<f64>,
    /// Per dimension: the mean over NPUs of the bytes sent.
    pub mean_bytes_per_dim: Vec<f64>,
    /// The critical path, first transfer first.
    pub critical_path: Vec<PathStep>,
    /// Per dimension: the link latency on the critical path, ns — the
    /// measured `alpha_d` of the time-coefficient contract. A hop's latency
    /// counts when the next step waited for the transfer's arrival (or it
    /// is the last); where the next waited for the link, only the hops up
    /// to that link count, and of that link only its serialization.
    pub alpha_ns_per_dim: Vec<f64>,
    /// Per dimension: the serialization time (bytes / link bandwidth) of
    /// the critical path's hops on the dimension's links, ns. With
    /// `alpha_ns_per_dim` this splits the completion time by dimension: the
    /// measured `bytes_d / B_d` of the time-coefficient contract (see
    /// `scheduled`). With `local_ns_on_path` and `reduce_ns_on_path` they
    /// sum to the time, except for time spent waiting for receive buffers.
    pub beta_ns_per_dim: Vec<f64>,
    /// Local operations (copies, compute of a trace) on the critical path, ns.
    pub local_ns_on_path: f64,
    /// Reductions at the receivers' memory on the critical path (from a
    /// reduce transfer's arrival on the wire to its data being usable,
    /// waits for the memory included), ns: with the pieces above they sum
    /// to the time, but for waits for receive buffers.
    pub reduce_ns_on_path: f64,
    /// Every hop, if recorded.
    #[serde(skip)]
    pub timeline: Vec<Hop>,
    /// Issue and arrival time of every transfer, ns.
    #[serde(skip)]
    pub transfer_times: Vec<(f64, f64)>,
}

impl SimResult {
    /// Busy time over completion time, per link.
    pub(crate) fn utilization(&self) -> Vec<f64> {
        self.link_busy_ns
            .iter()
            .map(|b| if self.time_ns > 0.0 { b / self.time_ns } else { 0.0 })
            .collect()
    }
}

/// Why a schedule cannot be replayed at all on a topology.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The schedule is malformed.
    #[error(transparent)]
    Schedule(#[from] crate::schedule::ScheduleError),
    /// NPU counts differ.
    #[error("the schedule is for {schedule} NPUs but the topology has {topology}")]
    Size {
        /// The schedule's NPUs.
        schedule: u32,
        /// The topology's NPUs.
        topology: u32,
    },
    /// The schedule's chunk state would not fit in memory.
    #[error(
        "{npus} NPUs x {chunks} chunks is more chunk state than the simulator tracks (at most {max} NPU-chunk pairs): use fewer chunks per NPU"
    )]
    TooLarge {
        /// NPUs.
        npus: u32,
        /// Chunks of the buffer.
        chunks: u64,
        /// The limit.
        max: u64,
    },
    /// A route is broken or missing.
    #[error("transfer {transfer} (NPU {src} -> {dst}): {message}")]
    Route {
        /// Transfer index.
        transfer: usize,
        /// Sender.
        src: u32,
        /// Receiver.
        dst: u32,
        /// What is wrong.
        message: String,
    },
}

/// Options of a replay.
#[derive(Debug, Clone, Copy)]
pub struct SimOptions {
    /// The collective's buffer, bytes (see [`Schedule::chunk_bytes`]).
    pub size_bytes: f64,
    /// Link model.
    pub model: LinkModel,
    /// Keep every hop for a timeline.
    pub record: bool,
    /// The receivers' memory bandwidth for reductions, GB/s: a reduce
    /// transfer's data is usable `3 bytes / M` after it lands (two operands
    /// read, one written), each NPU's reductions one after another; `None`:
    /// reductions are free.
    pub reduce_gbps: Option<f64>,
}

use super::MAX_STATE;

const MAX_ERRORS: usize = 10;

fn contribution(npu: u32) -> u64 {
    // splitmix64: a fixed pseudo-random 64-bit value per NPU.
    let mut z = u64::from(npu).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

/// Chunk values (the wrapping sum of contributions, 0 = not held) and the
/// arrival sequence number of the last write, per NPU and chunk; dense for
/// reductions and all-gathers, sparse for all-to-all.
enum State {
    Dense {
        chunks: u64,
        /// At `npu * chunks + perm[chunk]`: the value minus `base(npu)`
        /// (low and high 32 bits) and the write sequence, in one 12-byte
        /// cell (zeroed memory is the initial state, so untouched pages cost
        /// nothing and one cache line holds both).
        cell: Vec<[u32; 3]>,
        /// Where chunk c is stored within an NPU's row.
        perm: Vec<u32>,
        /// Whether every NPU starts with its own contribution in every
        /// chunk (reductions): then `base(npu)` is that contribution.
        own: bool,
    },
    Sparse(HashMap<u64, (u64, u32)>),
}

impl State {
    /// Index of (npu, chunk) in a dense state's cells.
    #[inline]
    fn at(chunks: u64, perm: &[u32], npu: u32, chunk: u32) -> usize {
        (u64::from(npu) * chunks) as usize + perm[chunk as usize] as usize
    }

    #[inline]
    fn get(&self, npu: u32, chunk: u32) -> (u64, u32) {
        match self {
            State::Dense {
                chunks,
                cell,
                perm,
                own,
            } => {
                let c = cell[State::at(*chunks, perm, npu, chunk)];
                (value(c).wrapping_add(base(*own, npu)), c[2])
            }
            State::Sparse(m) => m
                .get(&(u64::from(npu) << 32 | u64::from(chunk)))
                .copied()
                .unwrap_or((0, 0)),
        }
    }

    #[inline]
    fn apply(&mut self, npu: u32, chunk: u32, v: u64, reduce: bool, at: u32) {
        match self {
            State::Dense {
                chunks,
                cell,
                perm,
                own,
            } => {
                let c = &mut cell[State::at(*chunks, perm, npu, chunk)];
                let x = if reduce {
                    value(*c).wrapping_add(v)
                } else {
                    v.wrapping_sub(base(*own, npu))
                };
                *c = [x as u32, (x >> 32) as u32, at];
            }
            State::Sparse(m) => {
                let e = m.entry(u64::from(npu) << 32 | u64::from(chunk)).or_insert((0, 0));
                e.0 = if reduce { e.0.wrapping_add(v) } else { v };
                e.1 = at;
            }
        }
    }
}

/// The stored 64-bit value of a cell.
#[inline]
fn value(c: [u32; 3]) -> u64 {
    u64::from(c[0]) | u64::from(c[1]) << 32
}

/// The value dense storage is relative to (see `State::Dense`).
#[inline]
fn base(own: bool, npu: u32) -> u64 {
    if own { contribution(npu) } else { 0 }
}

/// The order chunks are stored in within an NPU's row: the candidate that
/// keeps the chunk sets of the transfers most contiguous in memory (fewest
/// separate stretches, on a sample of transfers). Candidates: identity;
/// shard-major (each shard's chunks side by side: trees and pipelines move
/// one shard's pieces at a time); the shard index with its digits reversed over the topology's dimensions
/// (hierarchical schedules: after the reduce-scatter on the first
/// dimensions an NPU holds every P-th shard, which this makes contiguous);
/// and every coordinate of a power-of-two dimension bit-reversed (Swing and
/// recursive doubling: their sets are residue classes modulo powers of two,
/// which bit reversal makes contiguous). The last two keep lanes apart.
fn storage_order(s: &Schedule, topo: &Topology) -> Vec<u32> {
    let n = u64::from(s.npus);
    let chunks = s.chunks();
    let identity: Vec<u32> = (0..chunks as u32).collect();
    let sizes: Vec<u64> = topo.dims.iter().map(|d| u64::from(d.size)).collect();
    if sizes.is_empty() || sizes.iter().product::<u64>() != n || s.transfers.is_empty() {
        return identity;
    }
    let per_shard =
        |f: &dyn Fn(u64) -> u64| -> Vec<u32> { (0..chunks).map(|c| ((c / n) * n + f(c % n)) as u32).collect() };
    let mut candidates = vec![identity];
    // Shard-major: every shard's chunks (`c % n` equal) side by side, for
    // the trees and pipelines that move one shard's pieces at a time.
    if chunks > n {
        let per = chunks / n;
        candidates.push((0..chunks).map(|c| ((c % n) * per + c / n) as u32).collect());
    }
    if sizes.len() >= 2 {
        candidates.push(per_shard(&|mut shard| {
            let mut rev = 0u64;
            for &size in &sizes {
                rev = rev * size + shard % size;
                shard /= size;
            }
            rev
        }));
    }
    if sizes.iter().any(|p| p.is_power_of_two() && *p > 2) {
        candidates.push(per_shard(&|mut shard| {
            let (mut out, mut stride) = (0u64, 1u64);
            for &size in &sizes {
                let x = shard % size;
                shard /= size;
                let y = if size.is_power_of_two() && size > 1 {
                    x.reverse_bits() >> (64 - size.trailing_zeros())
                } else {
                    x
                };
                out += y * stride;
                stride *= size;
            }
            out
        }));
    }
    if candidates.len() == 1 {
        return candidates.pop().unwrap_or_default();
    }
    // Stretches on up to 256 transfers spread over the schedule.
    let step = (s.transfers.len() / 256).max(1);
    let mut best = (u64::MAX, 0);
    let mut pos = Vec::new();
    for (i, perm) in candidates.iter().enumerate() {
        let mut stretches = 0u64;
        for t in s.transfers.iter().step_by(step) {
            pos.clear();
            pos.extend(
                t.chunks
                    .iter()
                    .flat_map(|r| r.iter())
                    .take(1 << 16)
                    .map(|c| perm[c as usize]),
            );
            pos.sort_unstable();
            stretches += 1 + pos.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64;
        }
        if stretches < best.0 {
            best = (stretches, i);
        }
    }
    candidates.swap_remove(best.1)
}

/// `len` zeroed cells. Large states ask the kernel for huge pages before
/// the first touch: the state is written all over during a replay, and with
/// 4 KiB pages faulting it in took a third of the time of a big replay.
fn zeroed_cells(len: usize) -> Vec<[u32; 3]> {
    let cells = vec![[0u32; 3]; len];
    crate::sys::advise_huge_pages(&cells);
    cells
}

fn initial_state(s: &Schedule, topo: &Topology) -> State {
    let n = s.npus;
    let chunks = s.chunks();
    match s.collective {
        CollectiveKind::AllToAll | CollectiveKind::SendRecv => {
            let mut m = HashMap::new();
            let per = u64::from(n) * u64::from(s.chunks_per_npu);
            for src in 0..n {
                for c in 0..per {
                    m.insert(
                        u64::from(src) << 32 | (u64::from(src) * per + c),
                        (contribution(src), 0),
                    );
                }
            }
            State::Sparse(m)
        }
        CollectiveKind::AllGather => {
            let perm = storage_order(s, topo);
            let mut cell = zeroed_cells((u64::from(n) * chunks) as usize);
            for c in 0..chunks {
                let owner = (c % u64::from(n)) as u32;
                let h = contribution(owner);
                cell[(u64::from(owner) * chunks) as usize + perm[c as usize] as usize] =
                    [h as u32, (h >> 32) as u32, 0];
            }
            State::Dense {
                chunks,
                cell,
                perm,
                own: false,
            }
        }
        CollectiveKind::ReduceScatter | CollectiveKind::AllReduce => {
            let len = (u64::from(n) * chunks) as usize;
            State::Dense {
                chunks,
                cell: zeroed_cells(len),
                perm: storage_order(s, topo),
                own: true,
            }
        }
    }
}

/// What is wrong with a reduced value: which NPU's contribution is missing or
/// doubled, when it is one.
fn diagnose(v: u64, n: u32, total: u64) -> String {
    if v == 0 {
        return "never receives it".to_string();
    }
    if let Some(x) = (0..n).find(|&x| v == total.wrapping_sub(contribution(x))) {
        return format!("misses NPU {x}'s contribution");
    }
    if let Some(x) = (0..n).find(|&x| v == total.wrapping_add(contribution(x))) {
        return format!("has NPU {x}'s contribution twice");
    }
    "has a wrong set of contributions (several missing or doubled)".to_string()
}

fn final_errors(s: &Schedule, st: &State, errors: &mut Vec<String>, count: &mut u64) {
    let n = s.npus;
    let chunks = s.chunks();
    let total = (0..n).fold(0u64, |a, r| a.wrapping_add(contribution(r)));
    let mut report = |m: &dyn Fn() -> String| {
        *count += 1;
        if errors.len() < MAX_ERRORS {
            errors.push(m());
        }
    };
    let mut reduced = |r: u32, c: u32| {
        let (v, _) = st.get(r, c);
        if v != total {
            report(&|| {
                format!(
                    "NPU {r} ends with chunk {c} not reduced over all {n} NPUs: it {}",
                    diagnose(v, n, total)
                )
            });
        }
    };
    match s.collective {
        CollectiveKind::AllGather => {
            for r in 0..n {
                for c in 0..chunks as u32 {
                    let owner = c % n;
                    let (v, _) = st.get(r, c);
                    if v == 0 {
                        report(&|| format!("NPU {r} never receives chunk {c} (NPU {owner}'s)"));
                    } else if v != contribution(owner) {
                        report(&|| {
                            format!("NPU {r} holds chunk {c} but not NPU {owner}'s data (a reduction reached it)")
                        });
                    }
                }
            }
        }
        CollectiveKind::ReduceScatter => {
            for r in 0..n {
                for c in (r..chunks as u32).step_by(n as usize) {
                    reduced(r, c);
                }
            }
        }
        CollectiveKind::AllReduce => {
            // Fast path: every stored value equals total - base(npu).
            if let State::Dense { chunks, cell, own, .. } = st
                && (0..n).all(|r| {
                    let want = total.wrapping_sub(base(*own, r));
                    let at = (u64::from(r) * chunks) as usize;
                    cell[at..at + *chunks as usize].iter().all(|&c| value(c) == want)
                })
            {
                return;
            }
            for r in 0..n {
                for c in 0..chunks as u32 {
                    reduced(r, c);
                }
            }
        }
        CollectiveKind::AllToAll | CollectiveKind::SendRecv => {
            let k = s.chunks_per_npu;
            for d in 0..n {
                for src in 0..n {
                    for piece in 0..k {
                        let c = (src * n + d) * k + piece;
                        let (v, _) = st.get(d, c);
                        if v == 0 {
                            report(&|| format!("NPU {d} never receives chunk {c} (NPU {src}'s piece {piece} for it)"));
                        } else if v != contribution(src) {
                            report(&|| format!("NPU {d} holds chunk {c} with the wrong data"));
                        }
                    }
                }
            }
        }
    }
}

/// Replays `s` on `topo`. Structural problems (bad indices, broken routes)
/// are errors; a schedule that runs but computes the wrong thing is a result
/// with `valid = false` and the problems listed.
pub fn simulate(s: &Schedule, topo: &Topology, opt: &SimOptions) -> Result<SimResult, SimError> {
    simulate_observed(s, topo, opt, &AtomicU64::new(0))
}

/// [`simulate`], storing in `landed` how many transfers have landed so
/// far (every 4,096; at the end all of them, also when a cycle left some
/// unlanded: the replay is over), for a progress bar with an ETA read from
/// another thread.
pub fn simulate_observed(
    s: &Schedule,
    topo: &Topology,
    opt: &SimOptions,
    landed: &AtomicU64,
) -> Result<SimResult, SimError> {
    let input = Input::new(s, topo, opt)?;
    let mut r = replay(&input, landed);
    landed.store(s.transfers.len() as u64, Ordering::Relaxed);
    end_errors(s, &mut r);
    let path = critical_path(&input, &mut r);
    Ok(result(&input, r, path))
}

/// What a replay reads: the schedule, the topology, the options, and per
/// transfer its route (link ids, empty for a local operation) and bytes.
struct Input<'a> {
    s: &'a Schedule,
    topo: &'a Topology,
    opt: &'a SimOptions,
    routes: Csr,
    bytes: Vec<f64>,
    /// Dimensions (link labels), at least 1.
    ndims: usize,
}

impl<'a> Input<'a> {
    /// Checks that `s` can be replayed on `topo` and flattens its routes.
    fn new(s: &'a Schedule, topo: &'a Topology, opt: &'a SimOptions) -> Result<Input<'a>, SimError> {
        s.check()?;
        let tracked = u64::from(s.npus)
            * if s.collective == CollectiveKind::AllToAll {
                s.chunks() / u64::from(s.npus)
            } else {
                s.chunks()
            };
        if tracked > MAX_STATE {
            return Err(SimError::TooLarge {
                npus: s.npus,
                chunks: s.chunks(),
                max: MAX_STATE,
            });
        }
        if s.npus != topo.npus {
            return Err(SimError::Size {
                schedule: s.npus,
                topology: topo.npus,
            });
        }
        let routes = routes(s, topo)?;
        let chunk_bytes = s.chunk_bytes(opt.size_bytes);
        let bytes: Vec<f64> = s
            .transfers
            .iter()
            .map(|t| t.bytes.unwrap_or(t.chunk_count() as f64 * chunk_bytes))
            .collect();
        let ndims = topo.dim_names().len().max(1);
        Ok(Input {
            s,
            topo,
            opt,
            routes,
            bytes,
            ndims,
        })
    }
}

/// A compressed adjacency (CSR): the items of node `i` are
/// `items[at[i]..at[i + 1]]`.
struct Csr {
    at: Vec<u32>,
    items: Vec<u32>,
}

impl Csr {
    /// The items of node `i`.
    #[inline]
    fn of(&self, i: usize) -> &[u32] {
        &self.items[self.at[i] as usize..self.at[i + 1] as usize]
    }
}

/// The schedule's dependencies turned around, in two passes over the
/// transfers (they are large and a big schedule's do not fit in cache).
struct Inverted {
    /// Per transfer, the transfers whose `deps` name it, in order.
    dependents: Csr,
    /// Per transfer, the transfers whose `after` name it, in order.
    after_of: Csr,
    /// Per transfer, its `deps` count.
    remaining: Vec<u32>,
    /// Per transfer, its `after` count.
    after_left: Vec<u32>,
}

impl Inverted {
    fn new(s: &Schedule) -> Inverted {
        let nt = s.transfers.len();
        let mut remaining = vec![0u32; nt];
        let mut after_left = vec![0u32; nt];
        let mut dep_at = vec![0u32; nt + 1];
        let mut after_at = vec![0u32; nt + 1];
        let mut any_after = false;
        for (i, t) in s.transfers.iter().enumerate() {
            remaining[i] = t.deps.len() as u32;
            for &d in &t.deps {
                dep_at[d as usize + 1] += 1;
            }
            if !t.after.is_empty() {
                any_after = true;
                after_left[i] = t.after.len() as u32;
                for &d in &t.after {
                    after_at[d as usize + 1] += 1;
                }
            }
        }
        for i in 0..nt {
            dep_at[i + 1] += dep_at[i];
            after_at[i + 1] += after_at[i];
        }
        let mut dep_fill = dep_at.clone();
        let mut dep_items = vec![0u32; dep_at[nt] as usize];
        let mut after_fill = if any_after { after_at.clone() } else { Vec::new() };
        let mut after_items = vec![0u32; after_at[nt] as usize];
        for (i, t) in s.transfers.iter().enumerate() {
            for &d in &t.deps {
                dep_items[dep_fill[d as usize] as usize] = i as u32;
                dep_fill[d as usize] += 1;
            }
            for &d in &t.after {
                after_items[after_fill[d as usize] as usize] = i as u32;
                after_fill[d as usize] += 1;
            }
        }
        Inverted {
            dependents: Csr {
                at: dep_at,
                items: dep_items,
            },
            after_of: Csr {
                at: after_at,
                items: after_items,
            },
            remaining,
            after_left,
        }
    }
}

/// Every transfer's route as link ids (its own, checked, or the topology's
/// when it names none), flattened.
fn routes(s: &Schedule, topo: &Topology) -> Result<Csr, SimError> {
    let mut at = Vec::with_capacity(s.transfers.len() + 1);
    let mut items: Vec<u32> = Vec::new();
    for (i, t) in s.transfers.iter().enumerate() {
        at.push(items.len() as u32);
        let bad = |m: String| SimError::Route {
            transfer: i,
            src: t.src,
            dst: t.dst,
            message: m,
        };
        if t.route.is_empty() {
            let r = topo.route(t.src, t.dst).map_err(|e| bad(e.to_string()))?;
            items.extend(r);
        } else {
            let mut at = t.src;
            for &l in &t.route {
                let link = topo
                    .links
                    .get(l as usize)
                    .ok_or_else(|| bad(format!("link {l} is not in the topology")))?;
                if link.src != at {
                    return Err(bad(format!("link {l} starts at node {}, not at node {at}", link.src)));
                }
                at = link.dst;
            }
            if at != t.dst {
                return Err(bad(format!("the route ends at node {at}")));
            }
            items.extend(&t.route);
        }
    }
    at.push(items.len() as u32);
    Ok(Csr { at, items })
}

/// The links' and the NPUs' tallies during a replay.
struct Links {
    /// When each link is free again, ns.
    free_at: Vec<f64>,
    /// The transfer each link sent last.
    last_on: Vec<u32>,
    /// Busy time per link, ns.
    busy: Vec<f64>,
    /// Bytes per link.
    bytes: Vec<f64>,
    /// Bytes sent per NPU per dimension, at `npu * ndims + dim`.
    sent: Vec<f64>,
    npus: u32,
    ndims: usize,
    model: LinkModel,
    record: bool,
    /// Every wait for a link: (transfer, its hop, link, the transfer ahead).
    blocks: Vec<(u32, u32, u32, u32)>,
    /// Every hop, if recorded.
    timeline: Vec<Hop>,
    /// Link traversals.
    hops: u64,
}

impl Links {
    fn new(input: &Input) -> Links {
        let nlinks = input.topo.links.len();
        Links {
            free_at: vec![0.0f64; nlinks],
            last_on: vec![NONE; nlinks],
            busy: vec![0.0f64; nlinks],
            bytes: vec![0.0f64; nlinks],
            sent: vec![0.0f64; input.s.npus as usize * input.ndims],
            npus: input.s.npus,
            ndims: input.ndims,
            model: input.opt.model,
            record: input.opt.record,
            blocks: Vec::new(),
            timeline: Vec::new(),
            hops: 0,
        }
    }

    /// Puts transfer `t` of `bytes` bytes on link `l`, hop `h` of its
    /// route, at `now`; returns when it reaches the link's far end.
    #[inline(always)]
    fn occupy(&mut self, link: &Link, l: usize, t: usize, h: u32, bytes: f64, now: f64) -> f64 {
        let start = now.max(self.free_at[l]);
        if start > now {
            self.blocks.push((t as u32, h, l as u32, self.last_on[l]));
        }
        let ser = if bytes > 0.0 { bytes / link.gbps } else { 0.0 };
        let hold = match self.model {
            LinkModel::AlphaBeta => ser,
            LinkModel::Tacos => ser + link.latency_ns,
        };
        self.free_at[l] = start + hold;
        self.last_on[l] = t as u32;
        self.busy[l] += hold;
        self.bytes[l] += bytes;
        if link.src < self.npus {
            let d = link.dim.map_or(0, usize::from).min(self.ndims - 1);
            self.sent[link.src as usize * self.ndims + d] += bytes;
        }
        self.hops += 1;
        if self.record {
            self.timeline.push(Hop {
                transfer: t as u32,
                link: l as u32,
                start_ns: start,
                end_ns: start + hold,
            });
        }
        start + link.latency_ns + ser
    }
}

/// What the replay recorded.
struct Replay {
    /// Issue time per transfer, ns (NaN: never issued).
    issue: Vec<f64>,
    /// Arrival time per transfer, ns (NaN: never landed).
    arrive: Vec<f64>,
    /// The dependency whose arrival issued each transfer (`NONE`: none).
    cause: Vec<u32>,
    links: Links,
    /// The chunks' values at the end.
    state: State,
    /// Per transfer, its reduction at the receiver's memory, waits
    /// included, ns (empty when reductions are free).
    reduce_ns: Vec<f64>,
    errors: Vec<String>,
    error_count: u64,
    chunk_moves: u64,
}

/// Replays the transfers, in time order, on the links.
///
/// `hop!`, `issue!` and `land!` are macros, not closures or methods: they
/// call one another (a landing issues the transfers waiting for it, an
/// issue puts a transfer on its first link) and update the same locals,
/// which closures could not borrow mutably at once; as macros they expand
/// into this one loop, the hot path stays inlined and nothing is allocated
/// per event but the receive buffers `after` asks for.
fn replay(input: &Input, landed: &AtomicU64) -> Replay {
    let (s, topo, routes, bytes) = (input.s, input.topo, &input.routes, &input.bytes[..]);
    let nt = s.transfers.len();
    let Inverted {
        dependents,
        after_of,
        mut remaining,
        mut after_left,
    } = Inverted::new(s);
    let mut links = Links::new(input);
    let mut issue = vec![f64::NAN; nt];
    let mut arrive = vec![f64::NAN; nt];
    let mut cause = vec![NONE; nt];
    let mut state = initial_state(s, topo);
    let mut errors = Vec::new();
    let mut error_count = 0u64;
    let mut chunk_moves = 0u64;
    let mut issue_seq = vec![0u32; nt];
    let mut seq = 0u32;
    // Events keyed (time bits, transfer, hop): times are non-negative, so
    // their bits order like the times.
    let key = |time: f64, t: usize, h: u32| (time.to_bits(), (t as u64) << 32 | u64::from(h));
    let mut heap = Events::default();
    // Receive buffers: arrived, and what is held back.
    let mut wire = vec![false; nt];
    let mut held: HashMap<usize, Held> = HashMap::new();
    // When each NPU's memory is free of reductions again, ns, and each
    // transfer's time from the wire to its data being usable.
    let reducing = input.opt.reduce_gbps.is_some();
    let mut memory_free = vec![0.0f64; if reducing { s.npus as usize } else { 0 }];
    let mut reduce_ns = vec![0.0f64; if reducing { nt } else { 0 }];

    // Puts transfer `t` on hop `h` of its route at `now`.
    macro_rules! hop {
        ($t:expr, $h:expr, $now:expr) => {{
            let (t, h, now): (usize, u32, f64) = ($t, $h, $now);
            let l = routes.items[routes.at[t] as usize + h as usize] as usize;
            let at = links.occupy(&topo.links[l], l, t, h, bytes[t], now);
            heap.push(key(at, t, h + 1));
        }};
    }
    // Issues transfer `t` at `now` and puts it on its first link.
    macro_rules! issue {
        ($t:expr, $now:expr) => {{
            let (t, now): (usize, f64) = ($t, $now);
            issue[t] = now;
            issue_seq[t] = seq;
            if routes.at[t + 1] > routes.at[t] {
                hop!(t, 0, now);
            } else {
                // A local operation: done after its duration.
                heap.push(key(now + s.transfers[t].duration_ns, t, 0));
            }
        }};
    }
    // Lands transfer `t` at `now`: the sender's chunks, unchanged since
    // issue, are stored or reduced at the receiver, and the dependents that
    // were waiting for it are issued.
    macro_rules! land {
        ($t:expr, $t32:expr, $now:expr) => {{
            let (t, t32, now): (usize, u32, f64) = ($t, $t32, $now);
            arrive[t] = now;
            seq += 1;
            if seq & 0xFFF == 0 {
                landed.store(u64::from(seq), Ordering::Relaxed);
            }
            let tr = &s.transfers[t];
            let first_bad = if let Some((vals, bad)) = (!held.is_empty()).then(|| held.remove(&t)).flatten() {
                // Read when it arrived (see below), applied now.
                apply_held(&mut state, tr, &vals, seq, &mut chunk_moves);
                bad
            } else {
                move_chunks(&mut state, tr, issue_seq[t], seq, &mut chunk_moves, &mut error_count)
            };
            if let Some(bad) = first_bad
                && errors.len() < MAX_ERRORS
            {
                errors.push(send_error(tr, t, bad));
            }
            for &d in dependents.of(t) {
                let d = d as usize;
                remaining[d] -= 1;
                if remaining[d] == 0 {
                    cause[d] = t32;
                    issue!(d, now);
                }
            }
        }};
    }

    let ready: Vec<usize> = (0..nt).filter(|&t| remaining[t] == 0).collect();
    for t in ready {
        issue!(t, 0.0);
    }
    while let Some((bits, k)) = heap.pop() {
        let (now, t32, h) = (f64::from_bits(bits), (k >> 32) as u32, k as u32);
        let t = t32 as usize;
        let hops = routes.at[t + 1] - routes.at[t];
        if h < hops {
            hop!(t, h, now);
            continue;
        }
        // A reduction, landed: its data is usable once the receiver's
        // memory has read both operands and written the sum.
        if h == hops
            && hops > 0
            && s.transfers[t].op == Op::Reduce
            && let Some(m) = input.opt.reduce_gbps
        {
            let dst = s.transfers[t].dst as usize;
            let start = now.max(memory_free[dst]);
            memory_free[dst] = start + units::transfer_ns(3.0 * bytes[t], m);
            reduce_ns[t] = memory_free[dst] - now;
            heap.push(key(memory_free[dst], t, hops + 1));
            continue;
        }
        wire[t] = true;
        if after_left[t] > 0 {
            // A receive buffer: read the data now, apply it once the
            // receiver's own sends in `after` are out.
            held.insert(t, read_held(&state, &s.transfers[t], issue_seq[t], &mut error_count));
        } else {
            land!(t, t32, now);
        }
        for &w in after_of.of(t) {
            let w = w as usize;
            after_left[w] -= 1;
            if after_left[w] == 0 && wire[w] {
                land!(w, w as u32, now);
            }
        }
    }
    Replay {
        issue,
        arrive,
        cause,
        links,
        state,
        reduce_ns,
        errors,
        error_count,
        chunk_moves,
    }
}

/// The replay's events in time order, ties by (transfer, hop): a radix
/// heap on the times' bits (a replay never schedules an event before the
/// one it is handling, so the queue is monotone), with the events at the
/// current time sorted once when they become current (ties). Pushes cost
/// O(1) and each event moves down at most 64 buckets over the whole
/// replay, instead of a binary heap's O(log n) 128-bit comparisons on
/// every push and pop (the same order: `tests` below).
struct Events {
    /// The time (bits) of the events being handled.
    last: u64,
    /// The events at `last` when it became current, latest key first:
    /// popped from the end.
    now: Vec<(u64, u64)>,
    /// The events pushed at or before `last` since (zero-time hops and
    /// local operations: an event can only be at `last`, and an earlier
    /// one would still come first), in a binary heap so that many of them
    /// cost O(log n) each.
    early: BinaryHeap<Reverse<(u64, u64)>>,
    /// Bucket `i > 0`: the events whose time differs from `last` first in
    /// bit `i - 1` (counting from the least significant).
    buckets: [Vec<(u64, u64)>; 65],
}

impl Default for Events {
    fn default() -> Events {
        Events {
            last: 0,
            now: Vec::new(),
            early: BinaryHeap::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
        }
    }
}

impl Events {
    #[inline]
    fn push(&mut self, e: (u64, u64)) {
        if e.0 <= self.last {
            self.early.push(Reverse(e));
        } else {
            let i = 64 - (e.0 ^ self.last).leading_zeros() as usize;
            self.buckets[i].push(e);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(u64, u64)> {
        match (self.now.last(), self.early.peek()) {
            (Some(a), Some(Reverse(b))) if b < a => return self.early.pop().map(|Reverse(e)| e),
            (Some(_), _) => return self.now.pop(),
            (None, Some(_)) => return self.early.pop().map(|Reverse(e)| e),
            (None, None) => {}
        }
        // The first non-empty bucket holds the earliest events: move
        // `last` to their earliest time and spread them out again (each
        // lands in a lower bucket, or at `last`: those sorted once).
        let i = (1..65).find(|&i| !self.buckets[i].is_empty())?;
        let mut b = std::mem::take(&mut self.buckets[i]);
        self.last = b.iter().map(|e| e.0).min().unwrap_or(self.last);
        for e in b.drain(..) {
            if e.0 <= self.last {
                self.now.push(e);
            } else {
                let j = 64 - (e.0 ^ self.last).leading_zeros() as usize;
                self.buckets[j].push(e);
            }
        }
        // Keep the bucket's allocation for later.
        self.buckets[i] = b;
        self.now.sort_unstable_by(|a, b| b.cmp(a));
        self.now.pop()
    }
}

/// A receive buffer's data, read on arrival: the values, and the first
/// chunk that was not final at the sender (chunk, value).
type Held = (Vec<u64>, Option<(u32, u64)>);

/// Reads the sender's chunks of `tr` (issued at sequence `limit`) into a
/// receive buffer, counting the chunks not final there.
fn read_held(state: &State, tr: &Transfer, limit: u32, error_count: &mut u64) -> Held {
    let mut vals = Vec::with_capacity(tr.chunk_count() as usize);
    let mut bad = None;
    for run in &tr.chunks {
        for c in run.iter() {
            let (v, w) = state.get(tr.src, c);
            if v == 0 || w > limit {
                *error_count += 1;
                bad = bad.or(Some((c, v)));
            }
            vals.push(v);
        }
    }
    (vals, bad)
}

/// Applies a receive buffer's values at the receiver of `tr`.
fn apply_held(state: &mut State, tr: &Transfer, vals: &[u64], seq: u32, chunk_moves: &mut u64) {
    let reduce = tr.op == Op::Reduce;
    let mut i = 0;
    for run in &tr.chunks {
        *chunk_moves += u64::from(run.count);
        for c in run.iter() {
            state.apply(tr.dst, c, vals[i], reduce, seq);
            i += 1;
        }
    }
}

/// Stores (or reduces) the sender's chunks of `tr`, issued at sequence
/// `limit`, at the receiver as write `seq`, counting the chunk moves and
/// the errors. Returns the first chunk the sender did not hold
/// or that changed after issue (chunk, value). The replay's hot loop:
/// inlined into `land!`, the two rows as slices, no per-chunk dispatch.
#[inline(always)]
fn move_chunks(
    state: &mut State,
    tr: &Transfer,
    limit: u32,
    seq: u32,
    chunk_moves: &mut u64,
    error_count: &mut u64,
) -> Option<(u32, u64)> {
    let reduce = tr.op == Op::Reduce;
    match state {
        State::Dense {
            chunks,
            cell,
            perm,
            own,
        } => {
            let w = *chunks as usize;
            let (sb, db) = (tr.src as usize * w, tr.dst as usize * w);
            let (src_base, dst_base) = (base(*own, tr.src), base(*own, tr.dst));
            let mut bad = None;
            if sb == db {
                // A copy onto the same NPU: the value stays, the write
                // is recorded.
                for run in &tr.chunks {
                    *chunk_moves += u64::from(run.count);
                    for c in run.iter() {
                        let e = &mut cell[sb + perm[c as usize] as usize];
                        let v = value(*e).wrapping_add(src_base);
                        if v == 0 || e[2] > limit {
                            *error_count += 1;
                            bad = bad.or(Some((c, v)));
                        }
                        e[2] = seq;
                    }
                }
            } else {
                let (src_row, dst_row): (&[[u32; 3]], &mut [[u32; 3]]) = if sb < db {
                    let (a, b) = cell.split_at_mut(db);
                    (&a[sb..sb + w], &mut b[..w])
                } else {
                    let (a, b) = cell.split_at_mut(sb);
                    (&b[..w], &mut a[db..db + w])
                };
                for run in &tr.chunks {
                    *chunk_moves += u64::from(run.count);
                    let (start, end) = (run.start as usize, run.end() as usize);
                    for (i, &p) in perm[start..end].iter().step_by(run.stride.max(1) as usize).enumerate() {
                        let p = p as usize;
                        let from = src_row[p];
                        let v = value(from).wrapping_add(src_base);
                        if v == 0 || from[2] > limit {
                            *error_count += 1;
                            bad = bad.or(Some(((start + i * run.stride as usize) as u32, v)));
                        }
                        let e = &mut dst_row[p];
                        let x = if reduce {
                            value(*e).wrapping_add(v)
                        } else {
                            v.wrapping_sub(dst_base)
                        };
                        *e = [x as u32, (x >> 32) as u32, seq];
                    }
                }
            }
            bad
        }
        State::Sparse(_) => {
            let mut bad = None;
            for run in &tr.chunks {
                *chunk_moves += u64::from(run.count);
                for c in run.iter() {
                    let (v, w) = state.get(tr.src, c);
                    if v == 0 || w > limit {
                        *error_count += 1;
                        bad = bad.or(Some((c, v)));
                    }
                    state.apply(tr.dst, c, v, reduce, seq);
                }
            }
            bad
        }
    }
}

/// The error for a chunk (chunk, value) that transfer `t` sends but its
/// sender did not hold (value 0) or that changed after issue.
fn send_error(tr: &Transfer, t: usize, (c, v): (u32, u64)) -> String {
    if v == 0 {
        format!("NPU {} sends chunk {c} (transfer {t}) but never holds it", tr.src)
    } else {
        format!(
            "NPU {} sends chunk {c} (transfer {t}) before it is final there: a transfer that changed it arrived after this one was issued (a missing dependency)",
            tr.src
        )
    }
}

/// The errors found once the replay is over: transfers that never landed
/// (a cycle), else, for tracked schedules, chunks that do not hold the
/// collective's result.
fn end_errors(s: &Schedule, r: &mut Replay) {
    let never: Vec<usize> = (0..s.transfers.len()).filter(|&t| r.arrive[t].is_nan()).collect();
    if let Some(&t) = never.first() {
        r.error_count += never.len() as u64;
        r.errors.push(format!(
            "{} transfers never land (transfer {t}, NPU {} -> {}, first): their dependencies form a cycle (through `deps` or `after`)",
            never.len(),
            s.transfers[t].src,
            s.transfers[t].dst
        ));
    }
    if never.is_empty() && !s.untracked {
        final_errors(s, &r.state, &mut r.errors, &mut r.error_count);
    }
}

/// The critical path and its split by dimension (see `SimResult`).
struct CriticalPath {
    steps: Vec<PathStep>,
    alpha_ns_per_dim: Vec<f64>,
    beta_ns_per_dim: Vec<f64>,
    local_ns: f64,
    reduce_ns: f64,
}

/// The critical path, walked back from the last arrival. A transfer on it
/// owns the time from when it got going (its issue, or its start on the
/// last link it waited for before the hop that matters) to when the next
/// one got going (its arrival, or the end of its serialization on the link
/// the next one waited for): the path tiles [0, time], and each piece is
/// the latency and serialization of the hops in between, per dimension
/// (waits for receive buffers and local operations aside).
fn critical_path(input: &Input, r: &mut Replay) -> CriticalPath {
    let (s, topo, routes, bytes, ndims) = (input.s, input.topo, &input.routes, &input.bytes, input.ndims);
    let nt = s.transfers.len();
    // (transfer, hop) is unique: no order among equal keys to keep.
    r.links.blocks.sort_unstable_by_key(|b| (b.0, b.1));
    let blocks = &r.links.blocks;
    let blocks_of = |t: usize| {
        let lo = blocks.partition_point(|b| (b.0 as usize) < t);
        let hi = blocks.partition_point(|b| (b.0 as usize) <= t);
        &blocks[lo..hi]
    };
    let mut steps = Vec::new();
    let mut alpha_ns_per_dim = vec![0.0; ndims];
    let mut beta_ns_per_dim = vec![0.0; ndims];
    let mut local_ns = 0.0;
    let mut reduce_ns = 0.0;
    let (issue, arrive, cause) = (&r.issue, &r.arrive, &r.cause);
    // (transfer, the hop whose link the next step waited for; None: arrival)
    let mut cur: Option<(usize, Option<usize>)> = (0..nt)
        .filter(|&t| !arrive[t].is_nan())
        .max_by(|&a, &b| arrive[a].total_cmp(&arrive[b]).then(b.cmp(&a)))
        .map(|t| (t, None));
    let limit = nt + blocks.len();
    while let Some((t, until)) = cur {
        let hops = routes.of(t);
        if hops.is_empty() {
            local_ns += s.transfers[t].duration_ns;
        }
        // The next step waited for its data: its reduction too.
        if until.is_none() {
            reduce_ns += r.reduce_ns.get(t).copied().unwrap_or(0.0);
        }
        let block = blocks_of(t)
            .iter()
            .rev()
            .find(|b| until.is_none_or(|j| b.1 as usize <= j));
        let (from, next, why) = match block {
            Some(&(_, h, l, ahead)) => {
                let a = ahead as usize;
                let at = routes.of(a).iter().position(|&x| x == l);
                (h as usize, Some((a, at)), "link")
            }
            None if cause[t] != NONE => (0, Some((cause[t] as usize, None)), "dependency"),
            None => (0, None, "start"),
        };
        for (h, &l) in hops.iter().enumerate().skip(from) {
            if until.is_some_and(|j| h > j) {
                break;
            }
            let link = &topo.links[l as usize];
            let d = link.dim.map_or(0, usize::from).min(ndims - 1);
            if bytes[t] > 0.0 {
                beta_ns_per_dim[d] += bytes[t] / link.gbps;
            }
            if until != Some(h) || input.opt.model == LinkModel::Tacos {
                alpha_ns_per_dim[d] += link.latency_ns;
            }
        }
        steps.push(PathStep {
            transfer: t as u32,
            src: s.transfers[t].src,
            dst: s.transfers[t].dst,
            issue_ns: issue[t],
            arrive_ns: arrive[t],
            waited_for: why,
        });
        cur = next.filter(|_| steps.len() < limit);
    }
    steps.reverse();
    CriticalPath {
        steps,
        alpha_ns_per_dim,
        beta_ns_per_dim,
        local_ns,
        reduce_ns,
    }
}

/// The result: the replay's record, per-dimension bytes and the critical
/// path.
fn result(input: &Input, r: Replay, path: CriticalPath) -> SimResult {
    let (npus, ndims) = (input.s.npus as usize, input.ndims);
    let sent = &r.links.sent;
    let bytes_per_dim = (0..ndims)
        .map(|d| (0..npus).map(|n| sent[n * ndims + d]).fold(0.0, f64::max))
        .collect();
    let mean_bytes_per_dim = (0..ndims)
        .map(|d| (0..npus).map(|n| sent[n * ndims + d]).sum::<f64>() / npus as f64)
        .collect();
    SimResult {
        time_ns: r.arrive.iter().copied().filter(|a| !a.is_nan()).fold(0.0, f64::max),
        valid: r.error_count == 0,
        data_checked: !input.s.untracked,
        errors: r.errors,
        error_count: r.error_count,
        transfers: input.s.transfers.len() as u64,
        hops: r.links.hops,
        chunk_moves: r.chunk_moves,
        link_busy_ns: r.links.busy,
        link_bytes: r.links.bytes,
        bytes_per_dim,
        mean_bytes_per_dim,
        critical_path: path.steps,
        alpha_ns_per_dim: path.alpha_ns_per_dim,
        beta_ns_per_dim: path.beta_ns_per_dim,
        local_ns_on_path: path.local_ns,
        reduce_ns_on_path: path.reduce_ns,
        timeline: r.links.timeline,
        transfer_times: r.issue.into_iter().zip(r.arrive).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::Events;
    use std::collections::BTreeSet;

    /// The radix heap pops what a sorted set of (time bits, transfer and
    /// hop) pops, on a replay-like stream: every push at or after the
    /// time being handled, ties and zero-time pushes included.
    #[test]
    fn events_pop_in_the_order_of_their_keys() {
        let mut x = 99u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..50 {
            let (mut q, mut reference) = (Events::default(), BTreeSet::new());
            let mut now = 0.0f64;
            let mut id = 0u64;
            let push = |q: &mut Events, r: &mut BTreeSet<(u64, u64)>, t: f64, id: &mut u64| {
                let e = (t.to_bits(), *id << 32 | (*id % 3));
                *id += 1;
                q.push(e);
                r.insert(e);
            };
            for _ in 0..8 {
                push(&mut q, &mut reference, f64::from(next(5) as u32) * 0.5, &mut id);
            }
            let mut popped = 0;
            while let Some(e) = q.pop() {
                let want = reference.pop_first();
                assert_eq!(Some(e), want, "round {round}, pop {popped}");
                popped += 1;
                now = f64::from_bits(e.0);
                if popped < 400 {
                    // 0 to 3 new events, some at the current time itself.
                    for _ in 0..next(4) {
                        let later = if next(3) == 0 {
                            0.0
                        } else {
                            next(1000) as f64 * 0.25 + 1e-3
                        };
                        push(&mut q, &mut reference, now + later, &mut id);
                    }
                }
            }
            assert!(reference.is_empty() && now >= 0.0);
        }
    }
}

//! Topology-aware collective synthesis in the manner of TACOS (Won et al.,
//! MICRO'24; astra-sim/tacos): greedy link-chunk matching over the
//! time-expanded network.
//!
//! All-gather: time advances from event to event (a link frees, a chunk
//! lands). At each event time every free link u -> v is offered, fastest
//! links first (latency + chunk / bandwidth; ties in link order from a
//! seeded random link, drawn at each event time), a chunk that u holds and
//! v neither holds nor is already receiving, picked from a seeded random
//! position (the second-level word where searches start is drawn once per
//! event time, the bit rotation per search) among, first, the chunks no
//! other NPU with a link into v holds (so what only u can give is not left
//! for later, when v's other sources may have nothing new; this is what
//! lets every seed reach TACOS's best on its 5x5 mesh). On heterogeneous
//! networks a link prefers chunks that no NPU in v's strongly connected
//! component of strictly faster links holds or is receiving: those will
//! come that way sooner, and otherwise every member of a fast group pulls
//! the same chunk over its own slow link (this plays the part of TACOS's
//! re-matching when a chunk arrives by a faster path). It takes one of the
//! others only while v still lacks more chunks than its faster in-links
//! can bring before this one would land (arrival time, not link speed
//! alone): on a 5x5 mesh at 50 / 75 GiB/s the strict rule let each chunk
//! into a column over one slow link, and a corner NPU then waited on its
//! one fast in-link (1 GiB: 1.39x the cut; now 1.04x). Of the chunks a
//! slow link may carry in the word where its search stops, it takes the
//! one the fewest NPUs hold or are receiving (ties: the rotation's first):
//! the slow links are where the network is short of bandwidth, and the
//! least spread chunk is the one with the most of them still to cross.
//! Picked at random, a 4x8 torus at 100 / 25 GB/s (the cut: a row of 4
//! taking in 28 shards over its eight slow links) was left with chunks two
//! rows from an NPU at the end (1 GiB all-gather: 1.051x the cut at the
//! chosen 16 chunks per NPU; now 1.014x at 16, 1.007x at the chosen 64).
//! The chunk lands
//! latency + chunk / bandwidth after the start; the link stays busy that
//! long in TACOS's link model, or chunk / bandwidth in the alpha-beta model
//! (`SynthOptions::timing`). A destination is never sent a chunk twice (a
//! chunk on its way counts as received). A link with nothing to offer waits
//! until its source receives a new chunk. The simulator then replays the
//! schedule in the link model asked for.
//!
//! Scale: the state is a cell of four words per NPU and word of 64 chunks
//! (held, held or on its way, and held by at least one / two of the NPUs
//! with a link into it), laid out word-major so neighbours in a dimension
//! share cache lines, and two summaries per link (the words where its
//! source may have something for its destination, and something only it
//! can give), kept as chunks land and trimmed as searches find them empty:
//! a search reads a few words, not every word its destination has not
//! filled (where links differ in speed, a slow link still rereads the
//! words its destination's faster component covers). With links matched
//! in order and searches starting together, a 200x200 torus (40,000 NPUs,
//! 1.6 billion deliveries) matches in 389 s in 0.9 GiB in the alpha-beta
//! model (`benches/synth.rs`).
//!
//! Latency: a free link takes not one chunk but up to `ceil(2 latency /
//! (chunk / bandwidth))` of them (at most 64), picked one after another by
//! the same rules, as one transfer that lands latency + m chunk / bandwidth
//! after it starts; so a transfer's serialization is at least twice its
//! latency whenever there is that much to send, and at large chunks (a
//! chunk's serialization over twice the latency) nothing changes. Without
//! it every chunk paid every hop's latency: the 1 MiB all-reduce took 2.9x
//! the hierarchical schedule's time on an 8x8x8 torus (now 0.50x; 0.56x
//! with reduce-scatters matched in TACOS's model only).
//!
//! Switches are relays that do not replicate: a switch node holds nothing,
//! and a transfer through it is matched as one NPU-to-NPU edge that needs
//! the sender's up-link free now and takes the receiver's down-link after
//! the store-and-forward delay (every copy crosses the up-link, as in a
//! switch without in-network multicast). One switch level: switch-to-switch
//! links are refused.
//!
//! Reduce-scatter is the time reversal of an all-gather on the transposed
//! topology: every send u -> v of chunk c at [t0, t1] becomes a reduction
//! v -> u at [T - t1, T - t0], which waits for every reduction that the
//! all-gather's sends out of v turn into, and, on a one-hop route, for the
//! latest reversed transfer on its link landed by its start (as the
//! all-gather's link order; in TACOS's link model the one before it). The
//! all-gather is matched in either link model: reversed, the alpha-beta
//! model's transfers on a link still overlap only in their latencies, so
//! the reductions pipeline a link as the sends do (each waited for the one
//! before it to land when reduce-scatters were matched in TACOS's model
//! only: 1 MiB all-reduce on an 8x8 mesh at 100 / 25 GB/s, 34.9 us, 3.7x
//! the bound; now 20.2 us, 2.1x). All-reduce is the reduce-scatter
//! followed by the all-gather, each chunk's all-gather starting from its
//! owner once that owner's reduction has landed.
//!
//! The result is a [`Schedule`] with data dependencies (the transfer that
//! brought the chunk) and, on one-hop routes, the synthesized order on each
//! link as dependencies too: each transfer waits for the latest transfer on
//! its link that had landed when it started (in TACOS's link model the one
//! before it, and on a network without switches the replay in that model
//! reproduces the synthesized times exactly; in the alpha-beta model the link frees a latency before the
//! transfer lands, so an earlier one, and the replay, ordering a link's
//! transfers as they become ready, may come out a little later).

use super::simulate::LinkModel;
use super::{Op, Run, Schedule, SmallVec, Transfer};
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Why synthesis cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SynthError {
    /// The collective or topology is not supported; the message says what is.
    #[error("{0}")]
    Unsupported(String),
    /// Some NPU can never receive some chunk.
    #[error("NPU {npu} can never receive chunk {chunk}: the topology does not connect it to the chunk's owner")]
    Stuck {
        /// The NPU.
        npu: u32,
        /// The chunk.
        chunk: u32,
    },
}

/// Options of one synthesis.
#[derive(Debug, Clone, Copy)]
pub struct SynthOptions {
    /// Seed of the random orders.
    pub seed: u64,
    /// Bytes of the collective's buffer (all-gather output).
    pub size_bytes: f64,
    /// Chunks per NPU.
    pub chunks_per_npu: u32,
    /// The link model the matching times transfers in: TACOS's (a link is
    /// busy for latency + size / bandwidth) or alpha-beta (a link is free
    /// again after size / bandwidth). At 1 GiB on a 200x200 torus, where a
    /// chunk (26.8 KB) serializes in 537 ns against 500 ns of latency, the
    /// alpha-beta matching keeps every link busy, 1.0005x the bound, where
    /// TACOS's model spends a latency of each link's time per transfer,
    /// 1.47x (`results/collectives/synthesis-scaling.md`); at small sizes
    /// either can replay faster, so `algorithm::build` tries both. The
    /// rules tuned in TACOS's model (the merging of chunks, the slow links'
    /// last choice) are kept as they are in the alpha-beta model.
    /// Reduce-scatters (and the first half of an all-reduce) reverse an
    /// all-gather matched in the same model (module doc), unless
    /// `reduce_timing` names another.
    pub timing: LinkModel,
    /// The link model of the all-gather a reduce-scatter (or an
    /// all-reduce's first half) reverses; `None`: `timing`. The two halves
    /// of an all-reduce are matched separately, and either model may
    /// replay faster for either half.
    pub reduce_timing: Option<LinkModel>,
}

/// A synthesized schedule and the time the synthesis expects.
#[derive(Debug, Clone)]
pub struct Synthesized {
    /// The schedule (empty transfers if synthesized without recording).
    pub schedule: Schedule,
    /// The completion time the matching reached, ns.
    pub time_ns: f64,
    /// The seed that produced it.
    pub seed: u64,
    /// Chunk deliveries matched.
    pub matches: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Direct,
    Up,
    Down(u32),
}

/// NPUs that reach one another over links faster than some class (strongly
/// connected components), and the union of what they hold or are receiving.
struct Part {
    comp: Vec<u32>,
    have: Vec<u64>,
}

/// The bits of word `k` that are chunks (the last word may be partial).
fn full_word(chunks: usize, k: usize) -> u64 {
    let left = chunks - k * 64;
    if left >= 64 { u64::MAX } else { (1u64 << left) - 1 }
}

/// Counts one more holder of chunk `c` among an NPU's in-neighbours (in
/// its cell of `c`'s word); true if it is the first. Without branches: the
/// synthesizer counts millions of holders at random cells, and straight
/// code lets the processor wait for many of them at once.
fn count_holder(cell: &mut [u64; 4], c: usize) -> bool {
    let bit = 1u64 << (c % 64);
    let first = cell[ONCE] & bit == 0;
    cell[TWICE] |= cell[ONCE] & bit;
    cell[ONCE] |= bit;
    first
}

/// Strongly connected components of a directed graph on `n` nodes
/// (Kosaraju, iterative): the component of each node and their number.
fn scc(n: usize, edges: impl Iterator<Item = (u32, u32)>) -> (Vec<u32>, u32) {
    let mut out = vec![Vec::new(); n];
    let mut inc = vec![Vec::new(); n];
    for (a, b) in edges {
        out[a as usize].push(b);
        inc[b as usize].push(a);
    }
    // First pass: finishing order on the graph.
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if let Some(&w) = out[v].get(*i) {
                *i += 1;
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    stack.push((w as usize, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    // Second pass: on the reversed graph, in reverse finishing order.
    let mut comp = vec![u32::MAX; n];
    let mut count = 0;
    for &s in order.iter().rev() {
        if comp[s] != u32::MAX {
            continue;
        }
        comp[s] = count;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            for &w in &inc[v] {
                if comp[w as usize] == u32::MAX {
                    comp[w as usize] = count;
                    stack.push(w as usize);
                }
            }
        }
        count += 1;
    }
    (comp, count)
}

/// Most speed classes the slow-link rule tells apart (beyond, links are
/// treated as one class).
const MAX_CLASSES: usize = 4;

/// Speed classes of the direct links (by flight time, equal within 1e-9) and
/// the components of the faster ones.
fn speed_classes(topo: &Topology, flight: &[f64], words: usize, bits: &[[u64; 4]]) -> (Vec<u8>, Vec<Part>) {
    let n = topo.npus as usize;
    let direct: Vec<usize> = (0..topo.links.len())
        .filter(|&i| (topo.links[i].src as usize) < n && (topo.links[i].dst as usize) < n)
        .collect();
    let mut speeds: Vec<f64> = direct.iter().map(|&i| flight[i]).collect();
    speeds.sort_by(f64::total_cmp);
    speeds.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
    let mut class = vec![0u8; topo.links.len()];
    if speeds.len() < 2 || speeds.len() > MAX_CLASSES {
        return (class, Vec::new());
    }
    for &i in &direct {
        class[i] = speeds
            .iter()
            .position(|s| (flight[i] - s).abs() <= 1e-9 * s.abs())
            .unwrap_or(0) as u8;
    }
    let mut parts = Vec::new();
    for k in 1..speeds.len() {
        // Strongly connected components of the links of classes below k:
        // every member can reach every other over faster links.
        let (comp, count) = scc(
            n,
            direct
                .iter()
                .filter(|&&i| (class[i] as usize) < k)
                .map(|&i| (topo.links[i].src, topo.links[i].dst)),
        );
        let ids = vec![(); count as usize];
        let mut have = vec![0u64; ids.len() * words];
        for v in 0..n {
            let at = comp[v] as usize * words;
            for k in 0..words {
                have[at + k] |= bits[k * n + v][HOLDS];
            }
        }
        parts.push(Part { comp, have });
    }
    (class, parts)
}

/// One matched delivery of a chunk, kept compactly while matching (no
/// allocation, no lookup); [`Core::transfers`] turns the rows into the
/// schedule.
#[derive(Clone, Copy)]
struct Row {
    src: u32,
    dst: u32,
    chunk: u32,
    /// The transfer that carries it (an index into `Core::sent`).
    sent: u32,
}

/// One matched transfer: its chunks are the rows `first..first + count`.
#[derive(Clone, Copy)]
struct Sent {
    /// One or two links (NONE-padded).
    route: [u32; 2],
    /// The latest transfer on its (one-hop) link that had landed when this
    /// one started (module doc).
    link_prev: u32,
    first: u32,
    count: u32,
}

const ARRIVE: u64 = 1 << 63;
/// Most transfers a kept schedule may have (about 200 bytes each with the
/// replay; 64x64 NPUs take 16.8 million).
const MAX_TRANSFERS: u64 = 40_000_000;
const NONE: u32 = u32::MAX;
/// The fields of a cell of [`Core::bits`].
const HOLDS: usize = 0;
const HAVE: usize = 1;
const ONCE: usize = 2;
const TWICE: usize = 3;
/// Most chunks one transfer carries.
const MAX_BATCH: usize = 64;

/// One all-gather synthesis on a topology; `record` keeps the transfers.
struct Core<'a> {
    topo: &'a Topology,
    n: usize,
    chunks: usize,
    words: usize,
    /// Per word of 64 chunks and NPU (index `word * n + npu`, so the
    /// NPUs next to one another in a dimension share cache lines): the
    /// chunks it holds (landed, `HOLDS`), holds or has on its way (`HAVE`),
    /// and that at least one (`ONCE`) and at least two (`TWICE`) distinct
    /// NPUs with a direct link into it hold (a chunk u holds is one only u
    /// can give v exactly when v's `TWICE` lacks it).
    bits: Vec<[u64; 4]>,
    /// Words of 64 words (second level): per NPU, the words where it holds
    /// a chunk, and the words of `have` that are full.
    words1: usize,
    held_words: Vec<u64>,
    full_words: Vec<u64>,
    /// Per direct link u -> v, `words1` words: a bit for every word where u
    /// may hold a chunk v lacks (set when u receives a chunk, cleared when
    /// a search finds nothing there), so a search looks only where the
    /// link can have something to carry, not through every word v has not
    /// filled.
    offer_words: Vec<u64>,
    /// Per direct link u -> v, `words1` words: a bit for every word where u
    /// may hold a chunk v lacks that no other NPU with a link into v holds
    /// (set when u is the first of them to receive it).
    rare_words: Vec<u64>,
    /// Per NPU: its direct out-links with their destinations, by
    /// destination (parallel links to one NPU adjacent).
    out_direct: Vec<Vec<(u32, u32)>>,
    free_at: Vec<f64>,
    idle: Vec<bool>,
    queued: Vec<bool>,
    kind: Vec<Kind>,
    /// Per switch: (member NPU, its up-link).
    ups: Vec<Vec<(u32, u32)>>,
    /// Per switch: its down-links.
    downs: Vec<Vec<u32>>,
    /// Per link: its speed class (0 = the fastest flight time).
    class: Vec<u8>,
    /// Per speed class k >= 1: the components of the links faster than
    /// class k, with what their members hold or receive.
    parts: Vec<Part>,
    /// Per link: latency + chunk / bandwidth: how long a chunk takes (and,
    /// in TACOS's model, how long the link stays busy).
    flight: Vec<f64>,
    /// Per link: chunk / bandwidth.
    ser: Vec<f64>,
    /// Per link: the part of a transfer's flight during which the link is
    /// free for the next one: nothing in TACOS's link model, the latency in
    /// the alpha-beta model (`SynthOptions::timing`).
    overlap: Vec<f64>,
    /// Per link: the most chunks one transfer carries (module doc).
    batch: Vec<usize>,
    /// Per direct link: the rate (chunks per ns) at which the strictly
    /// faster direct links into its destination deliver.
    fast_in: Vec<f64>,
    /// Per NPU: the chunks it neither holds nor has on its way.
    need: Vec<u32>,
    /// The chunks of the transfer being matched.
    got: Vec<usize>,
    rng: Rng,
    /// The second-level word where searches start this event time, drawn
    /// once per event time, so the links matched one after another look at
    /// the same words (cells next to one another).
    from: usize,
    record: bool,
    /// Per link: its recorded transfers not yet known to have landed, with
    /// their arrival times, in order, and the latest known to have landed.
    on_link: Vec<(std::collections::VecDeque<(u32, f64)>, u32)>,
    rows: Vec<Row>,
    sent: Vec<Sent>,
    /// (start, arrival) of each recorded transfer.
    spans: Vec<(f64, f64)>,
    /// Pending events by time (bits of the f64): link frees and arrivals.
    calendar: BTreeMap<u64, Vec<u64>>,
    /// Emptied event lists, reused.
    spare: Vec<Vec<u64>>,
    cand: Vec<u32>,
    matches: u64,
    end: f64,
    /// Per chunk: the NPUs that hold it or have it on their way.
    spread: Vec<u32>,
}

/// Per link its kind (between NPUs, up into a switch, down out of one) and
/// per switch its members' up-links (member, link) and its down-links;
/// refused where a link joins two switches (one switch level only).
#[allow(clippy::type_complexity)]
fn link_kinds(topo: &Topology) -> Result<(Vec<Kind>, Vec<Vec<(u32, u32)>>, Vec<Vec<u32>>), SynthError> {
    let n = topo.npus as usize;
    let mut kind = Vec::with_capacity(topo.links.len());
    let mut ups = vec![Vec::new(); topo.switches as usize];
    let mut downs = vec![Vec::new(); topo.switches as usize];
    for (i, l) in topo.links.iter().enumerate() {
        let (a, b) = (l.src as usize, l.dst as usize);
        kind.push(match (a < n, b < n) {
            (true, true) => Kind::Direct,
            (true, false) => {
                ups[b - n].push((l.src, i as u32));
                Kind::Up
            }
            (false, true) => {
                downs[a - n].push(i as u32);
                Kind::Down((a - n) as u32)
            }
            (false, false) => {
                return Err(SynthError::Unsupported(format!(
                    "link {i} joins two switches: synthesis handles one switch level (NPU - switch - NPU)"
                )));
            }
        });
    }
    Ok((kind, ups, downs))
}

/// Per link, for chunks of `chunk_bytes`: the serialization (chunk /
/// bandwidth), the flight (latency + serialization), the part of a flight
/// during which the link is free for the next transfer in the `timing`
/// model, and the most chunks one transfer carries (module doc).
fn link_times(topo: &Topology, chunk_bytes: f64, timing: LinkModel) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<usize>) {
    let ser: Vec<f64> = topo.links.iter().map(|l| chunk_bytes / l.gbps).collect();
    let flight: Vec<f64> = ser.iter().zip(&topo.links).map(|(s, l)| s + l.latency_ns).collect();
    let overlap = topo
        .links
        .iter()
        .map(|l| match timing {
            LinkModel::Tacos => 0.0,
            LinkModel::AlphaBeta => l.latency_ns,
        })
        .collect();
    let batch: Vec<usize> = ser
        .iter()
        .zip(&topo.links)
        .map(|(s, l)| {
            if *s > 0.0 {
                (2.0 * l.latency_ns / s).ceil().clamp(1.0, MAX_BATCH as f64) as usize
            } else {
                MAX_BATCH
            }
        })
        .collect();
    (ser, flight, overlap, batch)
}

/// What the `n` NPUs hold before the first transfer, chunk c on NPU c % n:
/// the `HOLDS` and `HAVE` bits per word of `words` and NPU (`Core::bits`),
/// and per NPU the second-level words where it holds a chunk and where its
/// `HAVE` word is full (`Core::held_words`, `Core::full_words`).
fn first_holdings(n: usize, chunks: usize, words: usize) -> (Vec<[u64; 4]>, Vec<u64>, Vec<u64>) {
    let mut bits = vec![[0u64; 4]; n * words];
    crate::sys::advise_huge_pages(&bits);
    for c in 0..chunks {
        let o = c % n;
        let cell = &mut bits[c / 64 * n + o];
        cell[HOLDS] |= 1 << (c % 64);
        cell[HAVE] |= 1 << (c % 64);
    }
    let words1 = words.div_ceil(64);
    let mut held_words = vec![0u64; n * words1];
    let mut full_words = vec![0u64; n * words1];
    for v in 0..n {
        for k in 0..words {
            if bits[k * n + v][HOLDS] != 0 {
                held_words[v * words1 + k / 64] |= 1 << (k % 64);
            }
            if bits[k * n + v][HAVE] == full_word(chunks, k) {
                full_words[v * words1 + k / 64] |= 1 << (k % 64);
            }
        }
    }
    (bits, held_words, full_words)
}

/// Per NPU, its direct in-links (source, link) and its direct out-links
/// (destination, link), the latter by destination (`Core::out_direct`).
#[allow(clippy::type_complexity)]
fn direct_links(topo: &Topology, kind: &[Kind]) -> (Vec<Vec<(u32, u32)>>, Vec<Vec<(u32, u32)>>) {
    let n = topo.npus as usize;
    let mut in_links = vec![Vec::new(); n];
    for (i, l) in topo.links.iter().enumerate() {
        if (l.src as usize) < n && (l.dst as usize) < n {
            in_links[l.dst as usize].push((l.src, i as u32));
        }
    }
    let mut out_direct = vec![Vec::new(); n];
    for (i, l) in topo.links.iter().enumerate() {
        if kind[i] == Kind::Direct {
            out_direct[l.src as usize].push((l.dst, i as u32));
        }
    }
    for o in &mut out_direct {
        o.sort_unstable();
    }
    (in_links, out_direct)
}

/// Per link of a speed class above 0 into an NPU (`Core::fast_in`): the
/// rate (chunks per ns) at which the strictly faster direct links into its
/// destination (`in_links`) deliver; 0 for the others.
fn fast_in(topo: &Topology, class: &[u8], flight: &[f64], in_links: &[Vec<(u32, u32)>]) -> Vec<f64> {
    let n = topo.npus as usize;
    let mut fast_in = vec![0.0; topo.links.len()];
    for (i, l) in topo.links.iter().enumerate() {
        if class[i] > 0 && (l.dst as usize) < n {
            fast_in[i] = in_links[l.dst as usize]
                .iter()
                .filter(|&&(_, j)| class[j as usize] < class[i])
                .map(|&(_, j)| 1.0 / flight[j as usize])
                .sum();
        }
    }
    fast_in
}

impl<'a> Core<'a> {
    fn new(
        topo: &'a Topology,
        chunks: usize,
        chunk_bytes: f64,
        seed: u64,
        timing: LinkModel,
        record: bool,
    ) -> Result<Core<'a>, SynthError> {
        let n = topo.npus as usize;
        let words = chunks.div_ceil(64);
        let nl = topo.links.len();
        let (kind, ups, downs) = link_kinds(topo)?;
        let (ser, flight, overlap, batch) = link_times(topo, chunk_bytes, timing);
        let (mut bits, held_words, full_words) = first_holdings(n, chunks, words);
        let words1 = words.div_ceil(64);
        let (in_links, out_direct) = direct_links(topo, &kind);
        let mut offer_words = vec![0u64; nl * words1];
        for (i, l) in topo.links.iter().enumerate() {
            if kind[i] == Kind::Direct {
                let u = l.src as usize;
                offer_words[i * words1..(i + 1) * words1].copy_from_slice(&held_words[u * words1..(u + 1) * words1]);
            }
        }
        let rare_words = offer_words.clone();
        for c in 0..chunks {
            let u = c % n;
            let mut last = u32::MAX;
            for &(v, _) in &out_direct[u] {
                if v != last {
                    last = v;
                    count_holder(&mut bits[c / 64 * n + v as usize], c);
                }
            }
        }
        let (class, parts) = speed_classes(topo, &flight, words, &bits);
        let fast_in = fast_in(topo, &class, &flight, &in_links);
        let own = (0..n).map(|v| (chunks - (chunks + n - 1 - v) / n) as u32).collect();
        Ok(Core {
            words1,
            held_words,
            full_words,
            offer_words,
            rare_words,
            out_direct,
            class,
            parts,
            topo,
            n,
            chunks,
            words,
            bits,
            free_at: vec![0.0; nl],
            idle: vec![false; nl],
            queued: vec![false; nl],
            kind,
            ups,
            downs,
            flight,
            ser,
            overlap,
            batch,
            fast_in,
            need: own,
            got: Vec::new(),
            rng: Rng(seed ^ 0x5DEE_CE66_D1CE_5EED),
            from: 0,
            record,
            on_link: vec![(std::collections::VecDeque::new(), NONE); if record { nl } else { 0 }],
            rows: Vec::new(),
            sent: Vec::new(),
            spans: Vec::new(),
            calendar: BTreeMap::new(),
            spare: Vec::new(),
            cand: Vec::new(),
            matches: 0,
            end: 0.0,
            spread: vec![1; chunks],
        })
    }

    /// A chunk `u` holds and `v` lacks for link `l`, from a random position
    /// (second-level words from a random start, words ascending, bits from
    /// a random rotation). Over a direct link, first a chunk no other NPU
    /// with a link into `v` holds (so what only `u` can give is not left for
    /// later, when `v`'s other sources may have nothing new). A link slower
    /// than others is further limited to chunks that nobody in `v`'s
    /// component of faster links holds or is receiving (they will come that
    /// way sooner); none if there is no such chunk.
    fn find(&mut self, u: usize, v: usize, l: usize, direct: bool) -> Option<usize> {
        let (w, w1) = (self.words, self.words1);
        let start = self.from;
        let rot = (self.rng.next() % 64) as u32;
        // A slow link takes, of the chunks it may carry in the word where
        // its search stops, the one the fewest NPUs hold or receive (ties:
        // the rotation's first): module doc.
        let rarest = direct && self.class[l] > 0;
        let spread = &self.spread;
        let pick = |x: u64, k: usize| {
            let mut y = x.rotate_right(rot);
            let first = k * 64 + ((y.trailing_zeros() + rot) % 64) as usize;
            if !rarest {
                return first;
            }
            let mut best = (spread[first], first);
            y &= y - 1;
            while y != 0 {
                let c = k * 64 + ((y.trailing_zeros() + rot) % 64) as usize;
                y &= y - 1;
                if spread[c] < best.0 {
                    best = (spread[c], c);
                }
            }
            best.1
        };
        let n = self.n;
        if !direct {
            // Through a switch: any chunk, over the words where u holds
            // something and v lacks something.
            let (su, fv) = (
                &self.held_words[u * w1..(u + 1) * w1],
                &self.full_words[v * w1..(v + 1) * w1],
            );
            return self.first_lacking(u, v, |k1| su[k1] & !fv[k1], pick);
        }
        let class = self.class[l] as usize;
        let faster = (class > 0).then(|| {
            let p = &self.parts[class - 1];
            (p.comp[v] as usize * w, &p.have)
        });
        // First a chunk only u can give (the link's rare words), then any
        // (its offer words); each summary loses the words found empty.
        for (summary, rare) in [(&mut self.rare_words, true), (&mut self.offer_words, false)] {
            let at = l * w1;
            for k1 in (start..w1).chain(0..start) {
                let mut words = summary[at + k1];
                while words != 0 {
                    let k = k1 * 64 + words.trailing_zeros() as usize;
                    words &= words - 1;
                    let cv = &self.bits[k * n + v];
                    let mut x = self.bits[k * n + u][HOLDS] & !cv[HAVE];
                    if rare {
                        x &= !cv[TWICE];
                    }
                    if x == 0 {
                        summary[at + k1] &= !(1 << (k % 64));
                        continue;
                    }
                    if let Some((c, have)) = faster {
                        x &= !have[c + k];
                    }
                    if x != 0 {
                        return Some(pick(x, k));
                    }
                }
            }
        }
        // A slow link whose faster in-links into v still have more to
        // deliver than they can before this link's chunk would land may
        // carry a chunk v's faster component holds (last choice).
        if faster.is_some() && f64::from(self.need[v]) > self.fast_in[l] * self.flight[l] {
            return self.first_lacking(u, v, |k1| self.offer_words[l * w1 + k1], pick);
        }
        None
    }

    /// The first chunk `u` holds and `v` lacks, in the search's order, over
    /// the words that `words` (of a second-level word) names.
    fn first_lacking(
        &self,
        u: usize,
        v: usize,
        words: impl Fn(usize) -> u64,
        pick: impl Fn(u64, usize) -> usize,
    ) -> Option<usize> {
        let (n, w1, start) = (self.n, self.words1, self.from);
        for k1 in (start..w1).chain(0..start) {
            let mut ks = words(k1);
            while ks != 0 {
                let k = k1 * 64 + ks.trailing_zeros() as usize;
                ks &= ks - 1;
                let x = self.bits[k * n + u][HOLDS] & !self.bits[k * n + v][HAVE];
                if x != 0 {
                    return Some(pick(x, k));
                }
            }
        }
        None
    }

    /// Schedules event `what` at time `t`.
    fn at(&mut self, t: f64, what: u64) {
        let spare = &mut self.spare;
        self.calendar
            .entry(t.to_bits())
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(what);
    }

    fn offer(&mut self, l: u32) {
        if !self.queued[l as usize] {
            self.queued[l as usize] = true;
            self.cand.push(l);
        }
    }

    /// Marks chunk `c` as on its way to `v`.
    fn claim(&mut self, v: usize, c: usize) {
        self.need[v] -= 1;
        self.spread[c] += 1;
        let k = c / 64;
        let have = &mut self.bits[k * self.n + v][HAVE];
        *have |= 1 << (c % 64);
        if *have == full_word(self.chunks, k) {
            self.full_words[v * self.words1 + k / 64] |= 1 << (k % 64);
        }
        for p in &mut self.parts {
            p.have[p.comp[v] as usize * self.words + c / 64] |= 1 << (c % 64);
        }
    }

    /// Up to `most` chunks `u` holds and `v` lacks for link `l` (see
    /// [`Core::find`]), claimed for `v`, into `self.got`.
    fn gather(&mut self, u: usize, v: usize, l: usize, direct: bool, most: usize) {
        self.got.clear();
        while self.got.len() < most {
            let Some(c) = self.find(u, v, l, direct) else {
                break;
            };
            self.claim(v, c);
            self.got.push(c);
        }
    }

    /// Books the chunks in `self.got` (claimed) as one transfer from `src`
    /// to `dst` over `route`, starting at `t`.
    fn book(&mut self, src: u32, dst: u32, route: &[u32], t: f64, arrive: f64) {
        let v = dst as usize;
        let got = std::mem::take(&mut self.got);
        for &c in &got {
            self.at(arrive, ARRIVE | (v as u64) << 32 | c as u64);
        }
        self.matches += got.len() as u64;
        self.end = self.end.max(arrive);
        if self.record {
            let id = self.sent.len() as u32;
            let mut link_prev = NONE;
            if let [l] = route {
                // One hop: keep the synthesized order on the link, with a
                // dependency on the latest transfer on it that has landed by
                // this one's start (in TACOS's link model the one before,
                // which lands as the link frees; in the alpha-beta model
                // the link frees a latency earlier, so the one before that
                // or earlier).
                let (flying, last) = &mut self.on_link[*l as usize];
                while let Some(&(prev, landed)) = flying.front() {
                    if landed > t {
                        break;
                    }
                    *last = prev;
                    flying.pop_front();
                }
                link_prev = *last;
                flying.push_back((id, arrive));
            }
            self.sent.push(Sent {
                route: [route[0], route.get(1).copied().unwrap_or(NONE)],
                link_prev,
                first: self.rows.len() as u32,
                count: got.len() as u32,
            });
            for &c in &got {
                self.rows.push(Row {
                    src,
                    dst,
                    chunk: c as u32,
                    sent: id,
                });
            }
            self.spans.push((t, arrive));
        }
        self.got = got;
    }

    /// Offers free link `l` a chunk at `t`; false if it has nothing to carry.
    fn assign(&mut self, l: u32, t: f64) -> bool {
        let li = l as usize;
        let link = self.topo.links[li];
        let v = link.dst as usize;
        match self.kind[li] {
            Kind::Direct => {
                self.gather(link.src as usize, v, li, true, self.batch[li]);
                if self.got.is_empty() {
                    return false;
                }
                let flight = link.latency_ns + self.got.len() as f64 * self.ser[li];
                self.free_at[li] = t + flight - self.overlap[li];
                self.at(self.free_at[li], u64::from(l));
                self.book(link.src, link.dst, &[l], t, t + flight);
                true
            }
            Kind::Down(w) => {
                let members = self.ups[w as usize].len();
                let first = self.rng.below(members.max(1));
                for i in 0..members {
                    let (u, up) = self.ups[w as usize][(first + i) % members];
                    if u as usize == v || self.free_at[up as usize] > t {
                        continue;
                    }
                    let upi = up as usize;
                    self.gather(u as usize, v, li, false, self.batch[li].min(self.batch[upi]));
                    if self.got.is_empty() {
                        continue;
                    }
                    let m = self.got.len() as f64;
                    let at_switch = t + self.topo.links[upi].latency_ns + m * self.ser[upi];
                    let arrive = at_switch + link.latency_ns + m * self.ser[li];
                    self.free_at[upi] = at_switch - self.overlap[upi];
                    self.free_at[li] = arrive - self.overlap[li];
                    self.at(self.free_at[upi], u64::from(up));
                    self.at(self.free_at[li], u64::from(l));
                    self.book(u, link.dst, &[up, l], t, arrive);
                    return true;
                }
                false
            }
            Kind::Up => false,
        }
    }

    /// Runs the matching to the end.
    fn run(&mut self) -> Result<(), SynthError> {
        let need = (self.n as u64 - 1) * self.chunks as u64;
        for l in 0..self.topo.links.len() as u32 {
            if self.kind[l as usize] != Kind::Up {
                self.offer(l);
            }
        }
        let mut t = 0.0f64;
        loop {
            // Fastest links first; ties in link order from a random link
            // (links next to one another, whose NPUs' cells share cache
            // lines, are matched one after another).
            let mut cand = std::mem::take(&mut self.cand);
            let from = self.rng.below(self.topo.links.len()) as u32;
            self.from = self.rng.below(self.words1);
            cand.sort_unstable();
            let first = cand.partition_point(|&l| l < from);
            cand.rotate_left(first);
            let flight = &self.flight;
            cand.sort_by(|&a, &b| flight[a as usize].total_cmp(&flight[b as usize]));
            for &l in &cand {
                self.queued[l as usize] = false;
                if self.free_at[l as usize] > t {
                    continue;
                }
                self.idle[l as usize] = !self.assign(l, t);
            }
            cand.clear();
            self.cand = cand;
            // The next event time, and everything that happens then.
            let Some((tb, mut events)) = self.calendar.pop_first() else {
                break;
            };
            t = f64::from_bits(tb);
            for &what in &events {
                if what & ARRIVE != 0 {
                    let (v, c) = (((what & !ARRIVE) >> 32) as usize, (what & 0xFFFF_FFFF) as usize);
                    self.bits[c / 64 * self.n + v][HOLDS] |= 1 << (c % 64);
                    self.held_words[v * self.words1 + c / 4096] |= 1 << ((c / 64) % 64);
                    // New data at v: its idle links may now have work.
                    // v is one more holder of c for its out-neighbours.
                    let (k1, bit1) = (c / 4096, 1u64 << ((c / 64) % 64));
                    let mut last = (u32::MAX, false);
                    for i in 0..self.out_direct[v].len() {
                        let (x, l) = self.out_direct[v][i];
                        if x != last.0 {
                            last = (x, count_holder(&mut self.bits[c / 64 * self.n + x as usize], c));
                        }
                        let li = l as usize * self.words1 + k1;
                        self.offer_words[li] |= bit1;
                        self.rare_words[li] |= bit1 * u64::from(last.1);
                    }
                    for &l in self.topo.out_links(v as u32) {
                        let li = l as usize;
                        match self.kind[li] {
                            Kind::Direct if self.idle[li] => self.offer(l),
                            Kind::Up => {
                                let w = self.topo.links[li].dst as usize - self.n;
                                for k in 0..self.downs[w].len() {
                                    let d = self.downs[w][k];
                                    if self.idle[d as usize] {
                                        self.offer(d);
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                } else {
                    let l = what as u32;
                    match self.kind[l as usize] {
                        Kind::Up => {
                            let w = self.topo.links[l as usize].dst as usize - self.n;
                            for k in 0..self.downs[w].len() {
                                let d = self.downs[w][k];
                                if self.idle[d as usize] {
                                    self.offer(d);
                                }
                            }
                        }
                        _ => self.offer(l),
                    }
                }
            }
            events.clear();
            self.spare.push(events);
        }
        if self.matches < need {
            // Somebody never got something: name one.
            for v in 0..self.n {
                for c in 0..self.chunks {
                    if self.bits[c / 64 * self.n + v][HAVE] & (1 << (c % 64)) == 0 {
                        return Err(SynthError::Stuck {
                            npu: v as u32,
                            chunk: c as u32,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

impl Core<'_> {
    /// The recorded transfers: each depends on the transfers that brought
    /// its chunks to its sender and on the transfer its link order names
    /// (`Sent::link_prev`; built in parallel: the lookups are independent).
    fn transfers(&self) -> Vec<Transfer> {
        // Rows by chunk (counting sort, each bucket in time order), then per
        // chunk: who delivered it to whom, in an array that stays in cache.
        let rows = &self.rows;
        let mut start = vec![0usize; self.chunks + 1];
        for r in rows {
            start[r.chunk as usize + 1] += 1;
        }
        for c in 0..self.chunks {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; rows.len()];
        for (i, r) in rows.iter().enumerate() {
            order[fill[r.chunk as usize]] = i as u32;
            fill[r.chunk as usize] += 1;
        }
        // Per row: the transfer that brought its chunk to its sender.
        let mut by = vec![NONE; rows.len()];
        let mut delivered = vec![NONE; self.n];
        for c in 0..self.chunks {
            let bucket = &order[start[c]..start[c + 1]];
            for &i in bucket {
                delivered[rows[i as usize].dst as usize] = rows[i as usize].sent;
            }
            for &i in bucket {
                by[i as usize] = delivered[rows[i as usize].src as usize];
            }
            for &i in bucket {
                delivered[rows[i as usize].dst as usize] = NONE;
            }
        }
        self.sent
            .par_iter()
            .map(|x| {
                let mine = x.first as usize..(x.first + x.count) as usize;
                let mut deps: Vec<u32> = by[mine.clone()].iter().copied().filter(|&d| d != NONE).collect();
                if x.link_prev != NONE {
                    deps.push(x.link_prev);
                }
                deps.sort_unstable();
                deps.dedup();
                let route = if x.route[1] == NONE {
                    vec![x.route[0]]
                } else {
                    x.route.to_vec()
                };
                let r = rows[x.first as usize];
                Transfer {
                    src: r.src,
                    dst: r.dst,
                    op: Op::Send,
                    chunks: rows[mine].iter().map(|r| Run::range(r.chunk, 1)).collect(),
                    deps: deps.into(),
                    route: route.into(),
                    after: SmallVec::new(),
                    bytes: None,
                    duration_ns: 0.0,
                }
            })
            .collect()
    }
}

/// The topology with every link reversed (same ids, bandwidths, latencies).
fn transposed(topo: &Topology) -> Topology {
    topo.reversed()
}

/// An all-gather's transfers, their (start, arrival) times, the synthesized
/// completion time and the number of deliveries.
struct Gathered {
    transfers: Vec<Transfer>,
    spans: Vec<(f64, f64)>,
    end: f64,
    matches: u64,
}

fn all_gather(topo: &Topology, opt: &SynthOptions, record: bool) -> Result<Gathered, SynthError> {
    let chunks = topo.npus as usize * opt.chunks_per_npu as usize;
    let chunk_bytes = opt.size_bytes / chunks as f64;
    let mut core = Core::new(topo, chunks, chunk_bytes, opt.seed, opt.timing, record)?;
    core.run()?;
    Ok(Gathered {
        transfers: core.transfers(),
        spans: core.spans,
        end: core.end,
        matches: core.matches,
    })
}

/// Time reversal of an all-gather on the transposed topology (module doc).
fn reduce_scatter(topo: &Topology, opt: &SynthOptions) -> Result<(Vec<Transfer>, f64, u64), SynthError> {
    let t = transposed(topo);
    let Gathered {
        transfers: ag,
        spans,
        end,
        matches,
    } = all_gather(
        &t,
        &SynthOptions {
            timing: opt.reduce_timing.unwrap_or(opt.timing),
            ..*opt
        },
        true,
    )?;
    // Reversed order: latest all-gather send first.
    let mut order: Vec<usize> = (0..ag.len()).collect();
    order.sort_by(|&a, &b| spans[b].1.total_cmp(&spans[a].1).then(b.cmp(&a)));
    let mut new_id = vec![0u32; ag.len()];
    for (i, &a) in order.iter().enumerate() {
        new_id[a] = i as u32;
    }
    // The all-gather sends out of (node, chunk): their reversals feed it.
    let mut feeds: std::collections::HashMap<(u32, u32), Vec<u32>> = std::collections::HashMap::new();
    for (i, x) in ag.iter().enumerate() {
        for r in &x.chunks {
            feeds.entry((x.src, r.start)).or_default().push(new_id[i]);
        }
    }
    let mut out = Vec::with_capacity(ag.len());
    // Per link: its reversed transfers not yet known to have landed (with
    // their reversed arrivals), and the latest known to have landed.
    let mut on_link = vec![(std::collections::VecDeque::new(), NONE); topo.links.len()];
    for &a in &order {
        let x = &ag[a];
        let mut deps: Vec<u32> = x
            .chunks
            .iter()
            .flat_map(|r| feeds.get(&(x.dst, r.start)).into_iter().flatten().copied())
            .collect();
        deps.sort_unstable();
        deps.dedup();
        let route: Vec<u32> = x.route.iter().rev().copied().collect();
        let id = out.len() as u32;
        if let [l] = route[..] {
            // The link order as in the all-gather: a dependency on the
            // latest reversed transfer on the link landed by this one's
            // start (matched in TACOS's link model, the one before it).
            let (start, arrive) = (end - spans[a].1, end - spans[a].0);
            let (flying, last) = &mut on_link[l as usize];
            while let Some(&(prev, landed)) = flying.front() {
                if landed > start {
                    break;
                }
                *last = prev;
                flying.pop_front();
            }
            if *last != NONE && !deps.contains(last) {
                deps.push(*last);
            }
            flying.push_back((id, arrive));
        }
        out.push(Transfer {
            src: x.dst,
            dst: x.src,
            op: Op::Reduce,
            chunks: x.chunks.clone(),
            deps: deps.into(),
            route: route.into(),
            after: SmallVec::new(),
            bytes: None,
            duration_ns: 0.0,
        });
    }
    Ok((out, end, matches))
}

/// Synthesizes `kind` on `topo` with one seed.
pub fn synthesize(topo: &Topology, kind: CollectiveKind, opt: &SynthOptions) -> Result<Synthesized, SynthError> {
    if opt.chunks_per_npu < 1 {
        return Err(SynthError::Unsupported("chunks per NPU must be at least 1".into()));
    }
    let chunks = u64::from(topo.npus) * u64::from(opt.chunks_per_npu);
    if chunks > u64::from(u32::MAX) {
        return Err(SynthError::Unsupported(format!(
            "{} NPUs x {} chunks per NPU = {chunks} chunks, above 2^32: give fewer chunks per NPU",
            topo.npus, opt.chunks_per_npu
        )));
    }
    let transfers = u64::from(topo.npus - 1) * chunks;
    if transfers > MAX_TRANSFERS {
        return Err(SynthError::Unsupported(format!(
            "the schedule would have {transfers} transfers (N(N-1) per chunk per NPU), more than {MAX_TRANSFERS} fit in memory: use fewer NPUs or chunks per NPU"
        )));
    }
    let mut s = Schedule::new("tacos", kind, topo.npus, opt.chunks_per_npu);
    s.topology = topo.name.clone();
    let (time_ns, matches) = match kind {
        CollectiveKind::AllGather => {
            let g = all_gather(topo, opt, true)?;
            s.transfers = g.transfers;
            (g.end, g.matches)
        }
        CollectiveKind::ReduceScatter => {
            let (rs, end, m) = reduce_scatter(topo, opt)?;
            s.transfers = rs;
            (end, m)
        }
        CollectiveKind::AllReduce => {
            let (rs, rs_end, m1) = reduce_scatter(topo, opt)?;
            let g = all_gather(topo, opt, true)?;
            let (mut ag, ag_end, m2) = (g.transfers, g.end, g.matches);
            let base = rs.len() as u32;
            // Each chunk's all-gather starts at its owner once the owner's
            // reductions of it have landed.
            let mut into_owner: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
            for (i, x) in rs.iter().enumerate() {
                for r in &x.chunks {
                    if x.dst == r.start % topo.npus {
                        into_owner.entry(r.start).or_default().push(i as u32);
                    }
                }
            }
            for x in &mut ag {
                for d in &mut x.deps {
                    *d += base;
                }
                let own: Vec<u32> = x
                    .chunks
                    .iter()
                    .filter(|r| x.src == r.start % topo.npus)
                    .flat_map(|r| into_owner.get(&r.start).into_iter().flatten().copied())
                    .collect();
                x.deps.extend(own);
                x.deps.sort_unstable();
                x.deps.dedup();
            }
            s.transfers = rs;
            s.transfers.extend(ag);
            (rs_end + ag_end, m1 + m2)
        }
        other => {
            return Err(SynthError::Unsupported(format!(
                "synthesis builds all-gather, reduce-scatter and all-reduce, not {other}: use flow, direct or ring for all-to-all"
            )));
        }
    };
    Ok(Synthesized {
        schedule: s,
        time_ns,
        seed: opt.seed,
        matches,
    })
}

/// The most restarts [`best_of`] takes: each synthesizes a whole schedule.
pub const MAX_RESTARTS: u32 = 1024;

/// The best of `restarts` seeds from `opt.seed` on (in parallel), by the
/// synthesized time; ties go to the lower seed, and any seed's error is
/// the answer (the lowest such seed's). Only the best so far is held per
/// thread, so memory does not grow with `restarts`.
pub fn best_of(
    topo: &Topology,
    kind: CollectiveKind,
    opt: &SynthOptions,
    restarts: u32,
) -> Result<Synthesized, SynthError> {
    type Run = (u64, Result<Synthesized, SynthError>);
    let pick = |a: Run, b: Run| -> Run {
        match (&a.1, &b.1) {
            (Err(_), Err(_)) if b.0 < a.0 => b,
            (Err(_), _) => a,
            (Ok(_), Err(_)) => b,
            (Ok(x), Ok(y)) => {
                if y.time_ns.total_cmp(&x.time_ns).then(b.0.cmp(&a.0)) == std::cmp::Ordering::Less {
                    b
                } else {
                    a
                }
            }
        }
    };
    (0..u64::from(restarts.clamp(1, MAX_RESTARTS)))
        .into_par_iter()
        .map(|i| {
            let r = synthesize(
                topo,
                kind,
                &SynthOptions {
                    seed: opt.seed.wrapping_add(i),
                    ..*opt
                },
            );
            (i, r)
        })
        .reduce_with(pick)
        .map_or_else(|| Err(SynthError::Unsupported("no restarts".into())), |(_, r)| r)
}

/// Most NPU-chunk pairs (NPUs x NPUs x chunks per NPU) a candidate of
/// [`auto_chunks`] may track: 4 Mi, 16 chunks per NPU on an 8x8x8 torus.
pub const AUTO_MAX_PAIRS: u64 = 1 << 22;

/// Synthesis with the chunk count chosen from the size, latency and
/// bandwidth by trying them: 1, 2, 4, ... chunks per NPU, each the best of
/// `restarts` seeds ([`best_of`]), scored by `time` (ns; the synthesized
/// time, or a replay in the link model the user asked for). The work is
/// bounded before each candidate is built (at most [`AUTO_MAX_PAIRS`]
/// NPU-chunk pairs), and the search stops as soon as a score is at or
/// below `good_enough` (ns: the bound and its tolerance; 0 for none) or two
/// doublings in a row have not lowered the score (a stop on small gains
/// moved committed results by up to 2.4%, over the tolerance); the lowest
/// score kept
/// (ties: fewer chunks), returned with its score. More chunks pipeline a shard over several paths
/// (1 GiB all-gather on a 4x8 torus at 100 / 25 GB/s: 1.29x the cut at one
/// chunk, 1.014x at 16) and cost latency when a buffer is small (merging,
/// module doc, takes most of it back).
pub fn auto_chunks(
    topo: &Topology,
    kind: CollectiveKind,
    opt: &SynthOptions,
    restarts: u32,
    good_enough: f64,
    time: impl Fn(&Synthesized) -> f64,
) -> Result<(f64, Synthesized), SynthError> {
    let n = u64::from(topo.npus);
    let at = |k: u32| {
        best_of(
            topo,
            kind,
            &SynthOptions {
                chunks_per_npu: k,
                ..*opt
            },
            restarts,
        )
        .map(|s| (time(&s), s))
    };
    let mut best = at(1)?;
    let (mut k, mut worse) = (1u32, 0);
    while best.0 > good_enough && worse < 2 {
        k = k.saturating_mul(2);
        if n.saturating_mul(n).saturating_mul(u64::from(k)) > AUTO_MAX_PAIRS {
            break;
        }
        let Ok(next) = at(k) else { break };
        if next.0 < best.0 {
            best = next;
            worse = 0;
        } else {
            worse += 1;
        }
    }
    Ok(best)
}

/// All-gather synthesis without keeping the schedule (for topologies whose
/// N(N-1) transfers would not fit in memory): the synthesized time, ns, and
/// the number of chunk deliveries matched.
pub fn all_gather_time(topo: &Topology, opt: &SynthOptions) -> Result<(f64, u64), SynthError> {
    let g = all_gather(topo, opt, false)?;
    Ok((g.end, g.matches))
}

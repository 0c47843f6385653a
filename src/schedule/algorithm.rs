//! Every algorithm dimsum builds a collective schedule with, by name
//! ([`Algorithm`]), and the one function that builds any of them
//! ([`build`]): the built-ins (`builtin`, flat or hierarchical per
//! dimension), Swing and recursive doubling (`swing`), the bucket
//! algorithm and TACOS-style synthesis (`synth`), spanning-tree packing
//! (`forest`), and `best` (every other one replayed, the fastest kept).
//! The command line, the
//! `compare` sweep and the schedule-backed evaluator all build through
//! here, so a name means one schedule everywhere.

use super::Schedule;
use super::bounds::{Bounds, lower_bounds};
use super::builtin::{self, Algo};
use super::product::{self, RoundTime, round_time_with};
use super::simulate::{LinkModel, SimOptions, SimResult, simulate};
use super::swing::{self, Peers, SwingOptions, Variant};
use super::synth::{self, SynthOptions};
use super::{flow, forest};
use crate::error::Named;
use crate::model::topology::Topology;
use crate::model::units;
use crate::model::workload::CollectiveKind;

/// A collective schedule's algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// One-direction ring over all NPUs.
    Ring,
    /// Half of every chunk each way round.
    BidirectionalRing,
    /// Everyone to everyone.
    Direct,
    /// Recursive halving and doubling.
    HalvingDoubling,
    /// One built-in per dimension, dimension by dimension.
    Hierarchical,
    /// TACOS-style greedy synthesis on the topology's links.
    Tacos,
    /// Swing, bandwidth-optimal.
    Swing,
    /// Swing, latency-optimal (whole-vector exchanges).
    SwingLatency,
    /// Recursive doubling, latency-optimal.
    RecursiveDoubling,
    /// Recursive doubling, bandwidth-optimal.
    RecursiveDoublingBw,
    /// Multiport ring reduce-scatter per dimension, all-gathers back.
    Bucket,
    /// A packing of spanning trees at the exact cut rate (`schedule::forest`).
    Forest,
    /// All-to-all along an optimal multi-commodity flow (`schedule::flow`).
    Flow,
    /// Every other algorithm that builds, replayed; the fastest valid one.
    Best,
}

impl Named for Algorithm {
    const WHAT: &'static str = "an algorithm";
    const ALL: &'static [Algorithm] = &[
        Algorithm::Ring,
        Algorithm::BidirectionalRing,
        Algorithm::Direct,
        Algorithm::HalvingDoubling,
        Algorithm::Hierarchical,
        Algorithm::Tacos,
        Algorithm::Swing,
        Algorithm::SwingLatency,
        Algorithm::RecursiveDoubling,
        Algorithm::RecursiveDoublingBw,
        Algorithm::Bucket,
        Algorithm::Forest,
        Algorithm::Flow,
        Algorithm::Best,
    ];
    fn as_name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::BidirectionalRing => "bidirectional-ring",
            Algorithm::Direct => "direct",
            Algorithm::HalvingDoubling => "halving-doubling",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Tacos => "tacos",
            Algorithm::Swing => "swing",
            Algorithm::SwingLatency => "swing-latency",
            Algorithm::RecursiveDoubling => "recursive-doubling",
            Algorithm::RecursiveDoublingBw => "recursive-doubling-bw",
            Algorithm::Bucket => "bucket",
            Algorithm::Forest => "forest",
            Algorithm::Flow => "flow",
            Algorithm::Best => "best",
        }
    }
}
crate::named!(Algorithm);

impl Named for Algo {
    const WHAT: &'static str = "an algorithm";
    const ALL: &'static [Algo] = &[Algo::Ring, Algo::BidirectionalRing, Algo::Direct, Algo::HalvingDoubling];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(Algo);

impl Algorithm {
    /// What a topology runs without a choice: hierarchical on a topology
    /// of dimensions, else a ring.
    pub fn default_for(topo: &Topology) -> Algorithm {
        if topo.dims.is_empty() {
            Algorithm::Ring
        } else {
            Algorithm::Hierarchical
        }
    }

    /// The built-in algorithm, for the four flat ones.
    pub fn builtin(self) -> Option<Algo> {
        match self {
            Algorithm::Ring => Some(Algo::Ring),
            Algorithm::BidirectionalRing => Some(Algo::BidirectionalRing),
            Algorithm::Direct => Some(Algo::Direct),
            Algorithm::HalvingDoubling => Some(Algo::HalvingDoubling),
            _ => None,
        }
    }

    /// Swing's peers and variant, for the butterflies.
    fn butterfly(self) -> Option<(Peers, Variant)> {
        match self {
            Algorithm::Swing => Some((Peers::Swing, Variant::Bandwidth)),
            Algorithm::SwingLatency => Some((Peers::Swing, Variant::Latency)),
            Algorithm::RecursiveDoubling => Some((Peers::Doubling, Variant::Latency)),
            Algorithm::RecursiveDoublingBw => Some((Peers::Doubling, Variant::Bandwidth)),
            _ => None,
        }
    }

    /// Whether the algorithm runs on several ports at once (2D concurrent
    /// collectives), which `multiport: false` turns off.
    fn has_ports(self) -> bool {
        self.butterfly().is_some() || self == Algorithm::Bucket
    }
}

/// How to build a schedule besides its algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Chunks (lanes) per NPU shard; at least 1.
    pub chunks_per_npu: u32,
    /// Hierarchical only: the algorithm of each dimension (default: each
    /// dimension's own, `Algo::default_for`).
    pub dim_algorithms: Option<Vec<Algo>>,
    /// Swing, recursive doubling and bucket: `2D` concurrent collectives
    /// (else one).
    pub multiport: bool,
    /// TACOS: the first seed.
    pub seed: u64,
    /// TACOS: seeds tried (the fastest kept); at least 1.
    pub restarts: u32,
    /// TACOS, forest and best: the collective's buffer, bytes (synthesis
    /// times transfers; forest chooses its pieces; best replays).
    pub size_bytes: f64,
    /// Best: the link model the candidates are replayed in.
    pub link_model: LinkModel,
    /// Best and TACOS's chunk choice: the receivers' memory bandwidth for
    /// reductions in the replays that choose (`SimOptions::reduce_gbps`).
    pub reduce_gbps: Option<f64>,
    /// Best, and TACOS's chunk choice: stop once a schedule is within this
    /// fraction of the certified bound (0: try every builder that might be
    /// faster, every chunk count that gains).
    pub tolerance: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            chunks_per_npu: 1,
            dim_algorithms: None,
            multiport: true,
            seed: 0,
            restarts: 1,
            size_bytes: 1e6,
            link_model: LinkModel::AlphaBeta,
            reduce_gbps: None,
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

/// `best`'s default tolerance: stop within 1% of the certified bound.
pub const DEFAULT_TOLERANCE: f64 = 0.01;

/// Most `best` accepts as a tolerance (a schedule twice the bound).
pub const MAX_TOLERANCE: f64 = 1.0;

/// A tolerance that is neither a fraction from 0 to [`MAX_TOLERANCE`] nor
/// such a percentage ([`parse_tolerance`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{given}`: give a fraction from 0 to {MAX_TOLERANCE} or a percentage (0.01 or 1%)")]
pub struct ToleranceError {
    /// The tolerance as written.
    pub given: String,
}

/// A tolerance as written: a fraction (`0.01`) or a percentage (`1%`),
/// from 0 to [`MAX_TOLERANCE`].
pub fn parse_tolerance(given: &str) -> Result<f64, ToleranceError> {
    let t = given.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(x) if (0.0..=MAX_TOLERANCE).contains(&x) => Ok(x),
        _ => Err(ToleranceError { given: given.into() }),
    }
}

/// Why a schedule was not built; each names the option at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// `chunks_per_npu` is 0.
    #[error("must be at least 1")]
    Chunks,
    /// Per-dimension algorithms for an algorithm that is not hierarchical.
    #[error("only a hierarchical schedule takes per-dimension algorithms")]
    DimAlgorithms,
    /// A single port for an algorithm without ports.
    #[error("only swing, swing-latency, recursive-doubling, recursive-doubling-bw and bucket have ports to choose")]
    Ports,
    /// `restarts` is 0 or above [`synth::MAX_RESTARTS`].
    #[error(
        "must be from 1 to {} (each restart synthesizes a whole schedule)",
        synth::MAX_RESTARTS
    )]
    Restarts,
    /// `tolerance` is negative, above [`MAX_TOLERANCE`] or not a number.
    #[error("must be from 0 to {MAX_TOLERANCE} (a fraction of the bound: 0.01 is 1%)")]
    Tolerance,
    /// The builder refused the topology or the collective.
    #[error("{0}")]
    Build(String),
}

/// Builds `algorithm`'s schedule of `kind` on `topo`.
///
/// ```
/// use dimsum::model::topology;
/// use dimsum::model::workload::CollectiveKind;
/// use dimsum::schedule::algorithm::{self, Algorithm, Options};
/// use dimsum::schedule::bounds::lower_bounds;
/// use dimsum::schedule::simulate::{simulate, LinkModel, SimOptions};
///
/// // A ring all-reduce on 4 NPUs: 2 (p - 1) = 6 steps of 4 sends.
/// let topo = topology::from_spec("ring:4", &[50.0], &[0.0])?;
/// let s = algorithm::build(&topo, CollectiveKind::AllReduce, Algorithm::Ring, &Options::default())?;
/// assert_eq!(s.transfers.len(), 24);
/// let opt = SimOptions { size_bytes: 4e6, model: LinkModel::AlphaBeta, record: false, reduce_gbps: None };
/// let r = simulate(&s, &topo, &opt)?;
/// // Each step moves a 1 MB chunk at 50 GB/s: 6 x 20 us.
/// assert!(r.valid && (r.time_ns - 120_000.0).abs() < 1e-6);
/// assert!(r.time_ns >= lower_bounds(&topo, CollectiveKind::AllReduce, 4e6).bound_ns);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn build(
    topo: &Topology,
    kind: CollectiveKind,
    algorithm: Algorithm,
    opt: &Options,
) -> Result<Schedule, SpecError> {
    let k = opt.chunks_per_npu;
    if k < 1 {
        return Err(SpecError::Chunks);
    }
    if opt.dim_algorithms.is_some() && algorithm != Algorithm::Hierarchical {
        return Err(SpecError::DimAlgorithms);
    }
    if !opt.multiport && !algorithm.has_ports() {
        return Err(SpecError::Ports);
    }
    let built = match algorithm {
        Algorithm::Best => {
            if !(0.0..=MAX_TOLERANCE).contains(&opt.tolerance) {
                return Err(SpecError::Tolerance);
            }
            best(topo, kind, opt)
                .map_err(|e| e.to_string())
                .and_then(|b| match b.won {
                    Won::Schedule(s, _) => Ok(*s),
                    Won::Rounds(_) => Err("best timed rounds where a schedule was asked for".into()),
                })
        }
        // As forest: the default (1) lets flow choose.
        Algorithm::Flow => flow::build(topo, kind, if k > 1 { k } else { 0 }).map_err(|e| e.to_string()),
        Algorithm::Bucket => swing::bucket(topo, kind, opt.multiport, k).map_err(|e| e.to_string()),
        // One piece per tree is never what anyone wants of a pipelined
        // tree: the default (1) lets forest choose from the size.
        Algorithm::Forest => {
            forest::build(topo, kind, if k > 1 { k } else { 0 }, opt.size_bytes).map_err(|e| e.to_string())
        }
        Algorithm::Tacos => {
            if !(1..=synth::MAX_RESTARTS).contains(&opt.restarts) {
                return Err(SpecError::Restarts);
            }
            let s = SynthOptions {
                seed: opt.seed,
                size_bytes: opt.size_bytes,
                chunks_per_npu: k,
                timing: LinkModel::Tacos,
                reduce_timing: None,
            };
            // As forest: the default (1) lets synthesis choose the chunks,
            // by the replay the user gets (an invalid one never wins).
            let sim = SimOptions {
                size_bytes: opt.size_bytes,
                model: opt.link_model,
                record: false,
                reduce_gbps: opt.reduce_gbps,
            };
            let replayed = |c: &synth::Synthesized| match simulate(&c.schedule, topo, &sim) {
                Ok(r) if r.valid => r.time_ns,
                _ => f64::INFINITY,
            };
            // In the alpha-beta model the all-gathers (and the ones a
            // reduce-scatter reverses) are matched in both link models
            // (TACOS's wins at small sizes, alpha-beta's where a chunk's
            // serialization is near the latency), the faster replay kept
            // (ties: the first); an all-reduce's halves as (TACOS's,
            // TACOS's), (TACOS's, alpha-beta) and (alpha-beta, alpha-beta).
            use LinkModel::{AlphaBeta, Tacos};
            let timings: &[(LinkModel, LinkModel)] = match (opt.link_model, kind) {
                (AlphaBeta, CollectiveKind::AllGather | CollectiveKind::ReduceScatter) => {
                    &[(Tacos, Tacos), (AlphaBeta, AlphaBeta)]
                }
                (AlphaBeta, CollectiveKind::AllReduce) => &[(Tacos, Tacos), (Tacos, AlphaBeta), (AlphaBeta, AlphaBeta)],
                _ => &[(Tacos, Tacos)],
            };
            // Done once a replay is within the tolerance of the bound.
            let good_enough = if opt.tolerance > 0.0 {
                lower_bounds(topo, kind, opt.size_bytes).bound_ns * (1.0 + opt.tolerance)
            } else {
                0.0
            };
            let mut best: Option<(f64, synth::Synthesized)> = None;
            for &(reduce, gather) in timings {
                if best.as_ref().is_some_and(|(b, _)| *b <= good_enough) {
                    break;
                }
                let s = SynthOptions {
                    timing: gather,
                    reduce_timing: Some(reduce),
                    ..s
                };
                let built = if k > 1 {
                    synth::best_of(topo, kind, &s, opt.restarts)
                        .map(|c| (if timings.len() > 1 { replayed(&c) } else { 0.0 }, c))
                } else {
                    // Scored by the replay already.
                    synth::auto_chunks(topo, kind, &s, opt.restarts, good_enough, replayed)
                };
                let (time, c) = built.map_err(|e| SpecError::Build(e.to_string()))?;
                if best.as_ref().is_none_or(|(b, _)| time < *b) {
                    best = Some((time, c));
                }
            }
            best.map(|(_, c)| c.schedule)
                .ok_or_else(|| "no link model to match in".to_string())
        }
        Algorithm::Hierarchical => {
            let algos: Vec<Algo> = match &opt.dim_algorithms {
                Some(a) => a.clone(),
                None => topo.dims.iter().map(|d| Algo::default_for(d.kind)).collect(),
            };
            builtin::build(topo, kind, Algo::Ring, Some(&algos), k).map_err(|e| e.to_string())
        }
        a => match (a.builtin(), a.butterfly()) {
            (Some(b), _) => builtin::build(topo, kind, b, None, k).map_err(|e| e.to_string()),
            (None, Some((peers, variant))) => {
                let s = SwingOptions {
                    peers,
                    variant,
                    multiport: opt.multiport,
                    chunks_per_npu: k,
                };
                swing::build(topo, kind, &s).map_err(|e| e.to_string())
            }
            (None, None) => Err(format!("`{a}` has no builder")),
        },
    };
    built
        .map(|mut s| {
            s.size_bytes = Some(opt.size_bytes);
            s
        })
        .map_err(SpecError::Build)
}

/// Most NPUs `best` synthesizes TACOS schedules for (it keeps N(N-1)
/// transfers per chunk; above this it takes minutes).
pub const BEST_MAX_TACOS_NPUS: u32 = 1024;

/// Most NPUs `best` synthesizes TACOS schedules for on a product network,
/// where the forest's rounds (at the exact cut rate, instant) already
/// stand: synthesis and its replays of an all-reduce over 512 NPUs take
/// tens of seconds, and TACOS too is a reduce-scatter then an all-gather,
/// bounded by the same twice-the-cut as the forest ([`own_bound`]).
pub const BEST_MAX_TACOS_NPUS_BY_ROUNDS: u32 = 256;

/// Most NPUs `best` builds and replays the forest for where its trees were
/// already timed in rounds: on small groups the replay, its trees not
/// merged per link class, can be faster (18% on a 4 x 8 group of a
/// ring and a fully-connected group); on large ones it takes seconds to
/// minutes (a 128-NPU switch: 14 s).
pub const BEST_MAX_FOREST_NPUS_BY_ROUNDS: u32 = 64;

/// What `best` kept.
#[derive(Debug, Clone)]
pub enum Won {
    /// A schedule built and replayed: the schedule and its replay.
    Schedule(Box<Schedule>, Box<SimResult>),
    /// The forest of a product network timed in synchronous rounds
    /// (`product::round_time_with`): an execution of its trees, not
    /// materialised.
    Rounds(RoundTime),
}

/// What `best` tried, skipped and kept.
#[derive(Debug, Clone)]
pub struct Best {
    /// The winner.
    pub won: Won,
    /// Its replayed (or round-timed) time, ns.
    pub time_ns: f64,
    /// The winner's name and what the search did (which builders ran, which
    /// were skipped and why): `best: NAME; ran ...; skipped ...`.
    pub label: String,
    /// The certified bound of the collective on the topology (exact cut).
    pub bounds: Bounds,
    /// Every builder in the order it was considered.
    pub tried: Vec<Tried>,
}

impl Best {
    /// The winning schedule, if one was built (not round-timed).
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.won {
            Won::Schedule(s, _) => Some(s),
            Won::Rounds(_) => None,
        }
    }
}

/// What became of one builder in `best`.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Built and replayed valid (or timed in rounds): its name and time, ns.
    Ran(String, f64),
    /// Did not build or replay valid: why.
    Failed(String),
    /// Not built: why (the best so far already within the tolerance of the
    /// bound, or the builder's own bound within the tolerance of the best
    /// so far).
    Skipped(String),
}

/// One algorithm `best` considered.
#[derive(Debug, Clone)]
pub struct Tried {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Its bound before it was built, ns: the certified bound, its steps
    /// times the least link latency, and the bytes an NPU sends over the
    /// ports it uses at once (see [`own_bound`]), whichever is largest.
    pub own_bound_ns: f64,
    /// What became of it.
    pub outcome: Outcome,
}

/// A bound on any schedule `a` builds for `kind` of `size` bytes on
/// `topo`, known before it is built: the largest of `certified` (the
/// collective's own bound), the builder's dependent steps times the least
/// latency of an NPU's link, and the bytes each NPU sends divided by the
/// ports it uses at once at the fastest link's bandwidth (a ring one, a
/// bidirectional ring two, halving-doubling one peer per step, Swing,
/// recursive doubling and bucket two per dimension, direct, hierarchical and
/// the synthesized ones every link). The latency-optimal butterflies send
/// the whole vector every step of an all-reduce.
///
/// On a torus-like product network (`product::symmetric`: not a mesh) an
/// all-reduce built as a reduce-scatter then an
/// all-gather (every builder but the latency-optimal butterflies) is also
/// bounded by twice the all-gather's exact cut, `reduce_gather_ns`: for a
/// node set S of the cut and its N translates S_t (the translations act
/// on the NPUs one to one, and a switch hop counts as a hop between its two
/// NPUs), the reduce-scatter must send out of each S_t a partial of every
/// shard S_t does not own, N - |S| shards, and over all translates the
/// hops leaving them equal the hops entering them (a hop from u to u + d
/// leaves as many translates as it enters), so on average, and every
/// translate has the same links in, N - |S| shards enter each S_t for the
/// reduce-scatter besides the all-gather's N - |S|.
pub fn own_bound(
    a: Algorithm,
    topo: &Topology,
    kind: CollectiveKind,
    size: f64,
    certified: f64,
    reduce_gather_ns: Option<f64>,
) -> f64 {
    let n = f64::from(topo.npus.max(1));
    let npu_links = || topo.links.iter().filter(|l| l.src < topo.npus);
    let gmax = npu_links().map(|l| l.gbps).fold(0.0, f64::max);
    let latency = npu_links().map(|l| l.latency_ns).fold(f64::INFINITY, f64::min);
    let mut degree = vec![0u32; topo.npus as usize];
    npu_links().for_each(|l| degree[l.src as usize] += 1);
    let deg = f64::from(degree.iter().copied().max().unwrap_or(1).max(1));
    if !(gmax > 0.0 && latency.is_finite()) {
        return certified;
    }
    let lg = n.log2().ceil();
    let dims = topo.dims.iter().filter(|d| d.size > 1).count().max(1) as f64;
    let share = (n - 1.0) / n * size;
    let reduce = kind == CollectiveKind::AllReduce;
    let passes = if reduce { 2.0 } else { 1.0 };
    let multi = (2.0 * dims).min(deg);
    let (passes, steps, ports, bytes) = match a {
        Algorithm::Ring => (passes, n - 1.0, 1.0, share),
        Algorithm::BidirectionalRing => (passes, n - 1.0, 2.0f64.min(deg), share),
        Algorithm::HalvingDoubling => (passes, lg, 1.0, share),
        Algorithm::Swing | Algorithm::RecursiveDoublingBw => (passes, lg, multi, share),
        Algorithm::SwingLatency | Algorithm::RecursiveDoubling if reduce => (1.0, lg, multi, lg * size),
        Algorithm::SwingLatency | Algorithm::RecursiveDoubling => (passes, lg, multi, share),
        Algorithm::Bucket => (passes, dims, multi, share),
        Algorithm::Hierarchical => (passes, dims, deg, share),
        Algorithm::Direct | Algorithm::Tacos | Algorithm::Forest | Algorithm::Flow | Algorithm::Best => {
            (passes, 1.0, deg, share)
        }
    };
    let whole_vectors = matches!(a, Algorithm::SwingLatency | Algorithm::RecursiveDoubling) && reduce;
    let phases = if whole_vectors {
        0.0
    } else {
        reduce_gather_ns.unwrap_or(0.0)
    };
    certified
        .max(phases)
        .max(passes * steps * latency)
        .max(passes * units::transfer_ns(bytes, ports * gmax))
}

/// How much a builder costs to build and replay, cheapest first: the
/// order among builders with equal bounds.
fn cost_rank(a: Algorithm) -> u8 {
    match a {
        Algorithm::Tacos => 3,
        Algorithm::Forest | Algorithm::Flow => 2,
        Algorithm::Swing
        | Algorithm::SwingLatency
        | Algorithm::RecursiveDoubling
        | Algorithm::RecursiveDoublingBw
        | Algorithm::Bucket => 1,
        _ => 0,
    }
}

/// Why [`best_with`] kept no schedule: no candidate built one that
/// replayed valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no algorithm builds a valid {collective} on {topology}")]
pub struct BestError {
    /// The collective's name.
    pub collective: &'static str,
    /// The topology's name.
    pub topology: String,
}

/// [`best_with`] without rounds: the winner is always a schedule.
pub fn best(topo: &Topology, kind: CollectiveKind, opt: &Options) -> Result<Best, BestError> {
    best_with(topo, kind, opt, false)
}

/// The fastest schedule dimsum builds for `kind` on `topo`, replayed at
/// `opt.size_bytes` in `opt.link_model`, found with as little work as the
/// answer needs. The certified bound (`bounds::lower_bounds`, exact cut)
/// comes first; with `rounds`, a product network's forest is timed in
/// rounds (instant, any size); then every builder (TACOS up to
/// [`BEST_MAX_TACOS_NPUS`]) in the order of its own bound ([`own_bound`],
/// the cheaper first among equals), each skipped when the best so far is
/// within `opt.tolerance` of the certified bound (the search is done) or
/// when its own bound is within `opt.tolerance` of the best so far (it
/// cannot win by more), else built and replayed. Ties keep the first. The per-dimension algorithms and
/// the ports are each candidate's own defaults; `opt.chunks_per_npu` goes to
/// every candidate.
pub fn best_with(topo: &Topology, kind: CollectiveKind, opt: &Options, rounds: bool) -> Result<Best, BestError> {
    let size = opt.size_bytes;
    let bounds = lower_bounds(topo, kind, size);
    let certified = bounds.bound_ns;
    let done = certified * (1.0 + opt.tolerance);
    let sim = SimOptions {
        size_bytes: size,
        model: opt.link_model,
        record: false,
        reduce_gbps: opt.reduce_gbps,
    };
    let each = Options {
        dim_algorithms: None,
        multiport: true,
        ..opt.clone()
    };
    let mut tried = Vec::new();
    let mut winner: Option<(f64, Won, String)> = None;
    // Rounds time what a product's forest builds (all-gather, reduce-scatter,
    // all-reduce); anything else is refused by `round_time_with` itself.
    if rounds && let Ok(Some(r)) = round_time_with(topo, kind, size, 0, opt.reduce_gbps) {
        let name = format!("forest(k={}, rounds)", r.pieces);
        tried.push(Tried {
            algorithm: Algorithm::Forest,
            own_bound_ns: certified,
            outcome: Outcome::Ran(name.clone(), r.time_ns),
        });
        winner = Some((r.time_ns, Won::Rounds(r.clone()), name));
    }
    let rounds_ran = winner.is_some();
    // An all-reduce as a reduce-scatter then an all-gather on a product:
    // twice the all-gather's exact cut ([`own_bound`]).
    let reduce_gather_ns = match (kind, product::symmetric(topo)) {
        (CollectiveKind::AllReduce, Some(d)) if !d.is_empty() => {
            Some(2.0 * product::gather_cut(&d).0 * size / f64::from(topo.npus))
        }
        _ => None,
    };
    let mut order: Vec<(f64, Algorithm)> = Algorithm::ALL
        .iter()
        .filter(|&&a| a != Algorithm::Best)
        .map(|&a| (own_bound(a, topo, kind, size, certified, reduce_gather_ns), a))
        .collect();
    order.sort_by(|x, y| x.0.total_cmp(&y.0).then(cost_rank(x.1).cmp(&cost_rank(y.1))));
    for (own, a) in order {
        let best_ns = winner.as_ref().map_or(f64::INFINITY, |w| w.0);
        let skip = if best_ns <= done {
            Some(format!("the best is within {}% of the bound", percent(opt.tolerance)))
        } else if own * (1.0 + opt.tolerance) >= best_ns {
            Some(if opt.tolerance > 0.0 {
                format!("its own bound is within {}% of the best", percent(opt.tolerance))
            } else {
                "its own bound is not below the best".to_string()
            })
        } else if a == Algorithm::Forest && rounds_ran && topo.npus > BEST_MAX_FOREST_NPUS_BY_ROUNDS {
            Some(format!(
                "its trees are timed in rounds above {BEST_MAX_FOREST_NPUS_BY_ROUNDS} NPUs"
            ))
        } else if a == Algorithm::Forest
            && topo.npus > BEST_MAX_FOREST_NPUS_BY_ROUNDS
            && product::symmetric(topo).is_none()
            && product::dims(topo).is_some()
        {
            // A mesh (a group over part of a ring, say): its trees would
            // be materialised and replayed, millions of transfers.
            Some(format!(
                "a mesh's trees are built transfer by transfer, not timed in rounds: not tried above {BEST_MAX_FOREST_NPUS_BY_ROUNDS} NPUs"
            ))
        } else if a == Algorithm::Tacos && rounds_ran && topo.npus > BEST_MAX_TACOS_NPUS_BY_ROUNDS {
            Some(format!(
                "not tried above {BEST_MAX_TACOS_NPUS_BY_ROUNDS} NPUs where the forest is timed in rounds"
            ))
        } else if a == Algorithm::Tacos && topo.npus > BEST_MAX_TACOS_NPUS {
            Some(format!("not tried above {BEST_MAX_TACOS_NPUS} NPUs"))
        } else {
            None
        };
        if let Some(why) = skip {
            tried.push(Tried {
                algorithm: a,
                own_bound_ns: own,
                outcome: Outcome::Skipped(why),
            });
            continue;
        }
        let built =
            build(topo, kind, a, &each)
                .map_err(|e| e.to_string())
                .and_then(|s| match simulate(&s, topo, &sim) {
                    Ok(r) if r.valid => Ok((s, r)),
                    Ok(r) => Err(format!("invalid: {}", r.errors.first().cloned().unwrap_or_default())),
                    Err(e) => Err(e.to_string()),
                });
        let outcome = match built {
            Ok((s, r)) => {
                let (t, name) = (r.time_ns, s.algorithm.clone());
                if t < best_ns {
                    winner = Some((t, Won::Schedule(Box::new(s), Box::new(r)), name.clone()));
                }
                Outcome::Ran(name, t)
            }
            Err(e) => Outcome::Failed(e),
        };
        tried.push(Tried {
            algorithm: a,
            own_bound_ns: own,
            outcome,
        });
    }
    let Some((time_ns, mut won, name)) = winner else {
        return Err(BestError {
            collective: kind.name(),
            topology: topo.name.clone(),
        });
    };
    let label = best_label(&name, &tried);
    if let Won::Schedule(s, _) = &mut won {
        s.algorithm = label.clone();
    }
    Ok(Best {
        won,
        time_ns,
        label,
        bounds,
        tried,
    })
}

/// A fraction as a percentage without trailing zeros: 0.01 -> "1".
fn percent(x: f64) -> String {
    let s = format!("{:.4}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `best: NAME; ran A, B; skipped C, D (why); ...; failed E`.
fn best_label(name: &str, tried: &[Tried]) -> String {
    let mut ran = Vec::new();
    let mut failed = Vec::new();
    let mut skipped: Vec<(&str, Vec<String>)> = Vec::new();
    for t in tried {
        match &t.outcome {
            Outcome::Ran(n, _) => ran.push(n.clone()),
            Outcome::Failed(_) => failed.push(t.algorithm.to_string()),
            Outcome::Skipped(why) => match skipped.iter_mut().find(|(w, _)| *w == why.as_str()) {
                Some((_, list)) => list.push(t.algorithm.to_string()),
                None => skipped.push((why.as_str(), vec![t.algorithm.to_string()])),
            },
        }
    }
    let mut out = format!("best: {name}; ran {}", ran.join(", "));
    for (why, list) in skipped {
        out.push_str(&format!("; skipped {} ({why})", list.join(", ")));
    }
    if !failed.is_empty() {
        out.push_str(&format!("; failed {}", failed.join(", ")));
    }
    out
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::topology::from_spec;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_allowed_ones() {
        for &a in Algorithm::ALL {
            assert_eq!(a.to_string().parse::<Algorithm>(), Ok(a));
        }
        let e = "magic".parse::<Algorithm>().unwrap_err().to_string();
        assert!(e.starts_with("`magic` is not an algorithm; allowed: `ring`,"), "{e}");
        assert!(e.ends_with("or `best`"), "{e}");
    }

    #[test]
    fn options_are_checked_against_the_algorithm() {
        let topo = from_spec("torus:4x4", &[50.0], &[0.0]).unwrap();
        let kind = CollectiveKind::AllReduce;
        let dims = Options {
            dim_algorithms: Some(vec![Algo::Ring, Algo::Ring]),
            ..Options::default()
        };
        assert_eq!(
            build(&topo, kind, Algorithm::Ring, &dims),
            Err(SpecError::DimAlgorithms)
        );
        assert!(build(&topo, kind, Algorithm::Hierarchical, &dims).is_ok());
        let single = Options {
            multiport: false,
            ..Options::default()
        };
        assert_eq!(build(&topo, kind, Algorithm::Direct, &single), Err(SpecError::Ports));
        assert!(build(&topo, kind, Algorithm::Swing, &single).is_ok());
        let none = Options {
            restarts: 0,
            ..Options::default()
        };
        assert_eq!(build(&topo, kind, Algorithm::Tacos, &none), Err(SpecError::Restarts));
        // Every algorithm but flow (all-to-all only) builds an all-reduce
        // on a 4x4 torus; flow builds the all-to-all.
        for &a in Algorithm::ALL {
            if a == Algorithm::Flow {
                assert!(build(&topo, kind, a, &Options::default()).is_err());
                let s = build(&topo, CollectiveKind::AllToAll, a, &Options::default()).unwrap();
                assert_eq!(s.npus, 16);
                continue;
            }
            let s = build(&topo, kind, a, &Options::default()).unwrap();
            assert_eq!(s.npus, 16, "{a}");
        }
    }
}

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
use super::builtin::{self, Algo};
use super::simulate::{LinkModel, SimOptions, simulate};
use super::swing::{self, Peers, SwingOptions, Variant};
use super::synth::{self, SynthOptions};
use super::{flow, forest};
use crate::error::Named;
use crate::model::topology::Topology;
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
        }
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
    /// The builder refused the topology or the collective.
    #[error("{0}")]
    Build(String),
}

/// Builds `algorithm`'s schedule of `kind` on `topo`.
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
        Algorithm::Best => best(topo, kind, opt).map(|b| b.schedule),
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
            let mut best: Option<(f64, synth::Synthesized)> = None;
            for &(reduce, gather) in timings {
                let s = SynthOptions {
                    timing: gather,
                    reduce_timing: Some(reduce),
                    ..s
                };
                let c = if k > 1 {
                    synth::best_of(topo, kind, &s, opt.restarts)
                } else {
                    synth::auto_chunks(topo, kind, &s, opt.restarts, replayed)
                }
                .map_err(|e| SpecError::Build(e.to_string()))?;
                let time = if timings.len() > 1 { replayed(&c) } else { 0.0 };
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
/// transfers per chunk; above this it takes minutes; with the default chunk
/// count tacos tries 1, 2 and 4 chunks per NPU at 1024 NPUs, see
/// [`synth::auto_chunks`], and in the alpha-beta model does so in both
/// link models' timings, about twice the work; an all-reduce's halves in
/// three pairs of them, three times).
pub const BEST_MAX_TACOS_NPUS: u32 = 1024;

/// What `best` tried and what won.
#[derive(Debug, Clone)]
pub struct Best {
    /// The winning schedule (its name says so: `best of N: ...`).
    pub schedule: Schedule,
    /// Every algorithm tried, in [`Algorithm::ALL`] order.
    pub tried: Vec<Tried>,
}

/// One algorithm `best` tried.
#[derive(Debug, Clone)]
pub struct Tried {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Its schedule's name and replayed time (ns), or why it did not build
    /// or replay valid.
    pub outcome: Result<(String, f64), String>,
}

/// Builds every other algorithm's schedule (TACOS up to
/// [`BEST_MAX_TACOS_NPUS`]), replays each valid one at `opt.size_bytes`
/// in `opt.link_model`, and keeps the fastest (ties: the first in
/// [`Algorithm::ALL`] order). The per-dimension algorithms and the ports
/// are each candidate's own defaults; `opt.chunks_per_npu` goes to every
/// candidate.
pub fn best(topo: &Topology, kind: CollectiveKind, opt: &Options) -> Result<Best, String> {
    let sim = SimOptions {
        size_bytes: opt.size_bytes,
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
    let mut winner: Option<(f64, Schedule)> = None;
    for &a in Algorithm::ALL {
        if a == Algorithm::Best {
            continue;
        }
        if a == Algorithm::Tacos && topo.npus > BEST_MAX_TACOS_NPUS {
            tried.push(Tried {
                algorithm: a,
                outcome: Err(format!("not tried above {BEST_MAX_TACOS_NPUS} NPUs")),
            });
            continue;
        }
        let outcome =
            build(topo, kind, a, &each)
                .map_err(|e| e.to_string())
                .and_then(|s| match simulate(&s, topo, &sim) {
                    Ok(r) if r.valid => Ok((s, r.time_ns)),
                    Ok(r) => Err(format!("invalid: {}", r.errors.first().cloned().unwrap_or_default())),
                    Err(e) => Err(e.to_string()),
                });
        match outcome {
            Ok((s, t)) => {
                tried.push(Tried {
                    algorithm: a,
                    outcome: Ok((s.algorithm.clone(), t)),
                });
                if winner.as_ref().is_none_or(|(best, _)| t < *best) {
                    winner = Some((t, s));
                }
            }
            Err(e) => tried.push(Tried {
                algorithm: a,
                outcome: Err(e),
            }),
        }
    }
    let Some((_, mut schedule)) = winner else {
        return Err(format!("no algorithm builds a valid {} on {}", kind.name(), topo.name));
    };
    let built = tried.iter().filter(|t| t.outcome.is_ok()).count();
    schedule.algorithm = format!("best of {built}: {}", schedule.algorithm);
    Ok(Best { schedule, tried })
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

//! Every algorithm dimsum builds a collective schedule with, by name
//! ([`Algorithm`]), and the one function that builds any of them
//! ([`build`]): the built-ins (`builtin`, flat or hierarchical per
//! dimension), Swing and recursive doubling (`swing`), the bucket
//! algorithm and TACOS-style synthesis (`synth`). The command line, the
//! `compare` sweep and the schedule-backed evaluator all build through
//! here, so a name means one schedule everywhere.

use super::Schedule;
use super::builtin::{self, Algo};
use super::forest;
use super::swing::{self, Peers, SwingOptions, Variant};
use super::synth::{self, SynthOptions};
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
    /// TACOS: the collective's buffer, bytes (synthesis times transfers).
    pub size_bytes: f64,
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
    /// `restarts` is 0.
    #[error("must be at least 1")]
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
        Algorithm::Bucket => swing::bucket(topo, kind, opt.multiport, k).map_err(|e| e.to_string()),
        // One piece per tree is never what anyone wants of a pipelined
        // tree: the default (1) lets forest choose from the size.
        Algorithm::Forest => {
            forest::build(topo, kind, if k > 1 { k } else { 0 }, opt.size_bytes).map_err(|e| e.to_string())
        }
        Algorithm::Tacos => {
            if opt.restarts < 1 {
                return Err(SpecError::Restarts);
            }
            let s = SynthOptions {
                seed: opt.seed,
                size_bytes: opt.size_bytes,
                chunks_per_npu: k,
            };
            synth::best_of(topo, kind, &s, opt.restarts)
                .map(|s| s.schedule)
                .map_err(|e| e.to_string())
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
    built.map_err(SpecError::Build)
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
        assert!(e.ends_with("or `forest`"), "{e}");
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
        // Every algorithm builds an all-reduce on a 4x4 torus.
        for &a in Algorithm::ALL {
            let s = build(&topo, kind, a, &Options::default()).unwrap();
            assert_eq!(s.npus, 16, "{a}");
        }
    }
}

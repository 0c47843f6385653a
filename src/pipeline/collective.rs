//! `dimsum collective` as one job: the command's options as the texts a
//! user gives them ([`Request`]: `--topology ring:8`, `--size 64MiB`,
//! `--algorithm tacos`, ...), parsed into the library's types with every
//! error an [`InputError`] naming its flag; the schedule built (or the
//! one given read) and replayed against the lower bounds, or, for a forest
//! on a product network, timed in rounds ([`Outcome`]). The command line
//! and the Python module both run it, so the two parse and refuse alike.
//!
//! ```
//! use dimsum::pipeline::collective::{Outcome, Request};
//! use dimsum::pipeline::exec::Executor;
//!
//! // A one-way ring all-reduce of 8 MB on 8 NPUs, 50 GB/s links, no
//! // latency: 2 (p - 1) = 14 steps of 1 MB at 50 GB/s, 20 us each.
//! let r = Request {
//!     algorithm: Some("ring".into()),
//!     size: Some("8MB".into()),
//!     link_latency_us: Some("0".into()),
//!     ..Request::new("ring:8")
//! };
//! let Outcome::Replayed(out) = Executor::quiet().run(r)? else { unreachable!() };
//! assert!(out.sim.valid);
//! assert!((out.sim.time_ns - 280_000.0).abs() < 1e-6);
//!
//! // A bad value is refused under its flag.
//! let bad = Request {
//!     collective: "gather".into(),
//!     size: Some("1MiB".into()),
//!     ..Request::new("ring:8")
//! };
//! let e = Executor::quiet().run(bad);
//! assert!(e.unwrap_err().to_string().starts_with("--collective: `gather` is not a collective"));
//! # Ok::<(), dimsum::RunError>(())
//! ```

use super::exec::{Executor, Job, RunError};
use super::jobs;
use crate::error::InputError;
use crate::model::topology::Topology;
use crate::model::workload::CollectiveKind;
use crate::schedule::Schedule;
use crate::schedule::algorithm::{self, Algorithm, Options, SpecError};
use crate::schedule::bounds::{self, Bounds};
use crate::schedule::builtin::Algo;
use crate::schedule::product::{self, RoundTime};
use crate::schedule::replay::Replay;
use crate::schedule::simulate::LinkModel;
use crate::study::topology;
use std::path::PathBuf;

/// The options of `dimsum collective`, as given (each `None` or default
/// is the flag left out; [`Request::new`] sets the command's defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `--topology`: `ring:8`, `fc:8`, `switch:8`, `torus:4x4`,
    /// `mesh:5x5`, `fabric:STUDY.toml`, `edges:FILE`, `astra:FILE.yml`.
    pub topology: String,
    /// `--collective`: all-gather, reduce-scatter, all-reduce, all-to-all.
    pub collective: String,
    /// `--algorithm` (default: hierarchical on topologies of dimensions,
    /// else ring).
    pub algorithm: Option<String>,
    /// `--dim-algorithms`: a hierarchical schedule's per-dimension
    /// algorithms, comma-separated.
    pub dim_algorithms: Option<String>,
    /// `--size`: the collective's whole buffer (`1GiB`, `64MB`, `1048576`;
    /// default: the one a `schedule_in` file records).
    pub size: Option<String>,
    /// `--chunks-per-npu` (default 1).
    pub chunks_per_npu: u32,
    /// `--link-gbps`: one value or one per dimension (default 50).
    pub link_gbps: Option<String>,
    /// `--link-latency-us`: one value or one per dimension (default 0.5).
    pub link_latency_us: Option<String>,
    /// `--bw`: a `fabric:` topology's GB/s per NPU per dimension.
    pub bw: Option<String>,
    /// `--link-model`: alpha-beta (default) or tacos.
    pub link_model: String,
    /// `--single-port`.
    pub single_port: bool,
    /// `--best-tolerance`: a fraction or a percentage (default `1%`).
    pub best_tolerance: String,
    /// `--seed` (default 0).
    pub seed: u64,
    /// `--restarts` (default 1).
    pub restarts: u32,
    /// `--schedule-in`: replay this schedule file instead of building one.
    pub schedule_in: Option<PathBuf>,
    /// `--replay`: a forest on a product network built and replayed
    /// transfer by transfer, not timed in rounds.
    pub replay: bool,
    /// `--schedule-out` is given: the schedule is wanted.
    pub schedule_out: bool,
    /// `--charts` is given: the schedule is wanted, every hop recorded.
    pub charts: bool,
}

impl Request {
    /// `dimsum collective --topology TOPOLOGY` with every other flag left
    /// out.
    pub fn new(topology: impl Into<String>) -> Request {
        Request {
            topology: topology.into(),
            collective: "all-reduce".into(),
            algorithm: None,
            dim_algorithms: None,
            size: None,
            chunks_per_npu: 1,
            link_gbps: None,
            link_latency_us: None,
            bw: None,
            link_model: "alpha-beta".into(),
            single_port: false,
            best_tolerance: "1%".into(),
            seed: 0,
            restarts: 1,
            schedule_in: None,
            replay: false,
            schedule_out: false,
            charts: false,
        }
    }

    /// The collective, builder and options asked for on `topo` (`size`
    /// matters to synthesis and is the buffer replayed).
    pub fn spec(&self, topo: &Topology, size: f64) -> Result<(CollectiveKind, Algorithm, Options), InputError> {
        let kind = collective_kind(&self.collective)?;
        let algorithm = match &self.algorithm {
            Some(a) => a
                .parse::<Algorithm>()
                .map_err(|e| InputError::arg("--algorithm", e.to_string()))?,
            None => Algorithm::default_for(topo),
        };
        let dim_algorithms = match &self.dim_algorithms {
            None => None,
            Some(list) => Some(
                list.split(',')
                    .map(|a| a.trim().parse::<Algo>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| InputError::arg("--dim-algorithms", e.to_string()))?,
            ),
        };
        let opt = Options {
            chunks_per_npu: self.chunks_per_npu,
            dim_algorithms,
            multiport: !self.single_port,
            seed: self.seed,
            restarts: self.restarts,
            size_bytes: size,
            link_model: link_model(&self.link_model)?,
            // `collective` replays the network alone (its topologies carry no
            // NPU memory).
            reduce_gbps: None,
            tolerance: tolerance(&self.best_tolerance)?,
        };
        Ok((kind, algorithm, opt))
    }

    /// A forest on a product network, timed in rounds (too large to
    /// replay, or no schedule asked for).
    fn rounds(&self, topo: Topology, size: f64) -> Result<Outcome, InputError> {
        let refuse = |flag: &str| {
            InputError::arg(
                flag,
                format!(
                    "forest on {} ({} NPUs) is timed in rounds, not built transfer by transfer: there is no schedule to write",
                    topo.name, topo.npus
                ),
            )
        };
        if self.schedule_out {
            return Err(refuse("--schedule-out"));
        }
        if self.charts {
            return Err(refuse("--charts"));
        }
        let kind = collective_kind(&self.collective)?;
        let pieces = if self.chunks_per_npu > 1 {
            self.chunks_per_npu
        } else {
            0
        };
        let time = product::round_time(&topo, kind, size, pieces)
            .map_err(|e| InputError::arg("--algorithm", e.to_string()))?
            .ok_or_else(|| InputError::arg("--algorithm", "forest rounds need a product network"))?;
        let bounds = bounds::lower_bounds(&topo, kind, size);
        Ok(Outcome::Rounds(Box::new(Rounds {
            topology: topo,
            size,
            time,
            bounds,
        })))
    }
}

/// What [`Request`] found.
#[derive(Debug)]
pub enum Outcome {
    /// The schedule, replayed and bounded.
    Replayed(Box<Replay>),
    /// A forest on a product network, timed in rounds.
    Rounds(Box<Rounds>),
}

/// A forest on a product network, timed in rounds
/// (`schedule::product::round_time`).
#[derive(Debug)]
pub struct Rounds {
    /// The network.
    pub topology: Topology,
    /// The buffer, bytes.
    pub size: f64,
    /// The rounds' time.
    pub time: RoundTime,
    /// The lower bounds.
    pub bounds: Bounds,
}

impl Job for Request {
    type Output = Outcome;
    fn name(&self) -> String {
        jobs::COLLECTIVE_STAGES.into()
    }
    fn run(self, ex: &Executor) -> Result<Outcome, RunError> {
        let topo = topology::from_flags(
            &self.topology,
            self.link_gbps.as_deref(),
            self.link_latency_us.as_deref(),
            self.bw.as_deref(),
        )?;
        // A schedule file records the buffer it was built for.
        let loaded = match &self.schedule_in {
            Some(path) => Some(Schedule::load(path)?),
            None => None,
        };
        let size = topology::collective_buffer(self.size.as_deref(), loaded.as_ref())?;
        let forest = self.algorithm.as_deref().and_then(|a| a.parse::<Algorithm>().ok()) == Some(Algorithm::Forest);
        if forest && self.schedule_in.is_none() {
            let kind = collective_kind(&self.collective)?;
            let wants_schedule = self.replay || self.schedule_out || self.charts;
            if product::timed_in_rounds(&topo, kind, wants_schedule) {
                return Ok(self.rounds(topo, size)?);
            }
        }
        let (kind, algorithm, options) = self.spec(&topo, size)?;
        let job = jobs::Collective {
            topology: topo,
            kind,
            algorithm,
            options,
            given: loaded,
            record: self.charts,
        };
        match ex.run(job) {
            Ok(r) => Ok(Outcome::Replayed(Box::new(r))),
            Err(RunError::Build(e)) => Err(spec_error(e).into()),
            Err(RunError::Simulate(e)) => Err(InputError::arg("--schedule-in", e.to_string()).into()),
            Err(other) => Err(other),
        }
    }
}

/// The `--collective` named.
pub fn collective_kind(s: &str) -> Result<CollectiveKind, InputError> {
    CollectiveKind::scheduled(s).map_err(|e| InputError::arg("--collective", e.to_string()))
}

/// The `--link-model` named.
pub fn link_model(name: &str) -> Result<LinkModel, InputError> {
    name.parse::<LinkModel>()
        .map_err(|e| InputError::arg("--link-model", e.to_string()))
}

/// `--best-tolerance`: a fraction (0.01) or a percentage (1%).
pub fn tolerance(given: &str) -> Result<f64, InputError> {
    algorithm::parse_tolerance(given).map_err(|e| InputError::arg("--best-tolerance", e.to_string()))
}

/// A builder's refusal, under the flag that asked for it.
fn spec_error(e: SpecError) -> InputError {
    let flag = match e {
        SpecError::Chunks => "--chunks-per-npu",
        SpecError::DimAlgorithms => "--dim-algorithms",
        SpecError::Ports => "--single-port",
        SpecError::Restarts => "--restarts",
        SpecError::Tolerance => "--best-tolerance",
        SpecError::Build(_) => "--algorithm",
    };
    InputError::arg(flag, e.to_string())
}

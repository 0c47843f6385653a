//! Schedule-backed evaluation: every collective of the workload timed by the
//! schedule it would actually run, replayed in the congestion-aware
//! simulator, and turned back into the time coefficients the optimizer
//! reads (DESIGN.md's contract), so the optimizer can work against
//! schedules instead of formulas.
//!
//! **Sub-topology.** A collective runs on its communicator's members only.
//! For each involved dimension (group size p > 1 on a dimension of n NPUs)
//! the group sees the links among its members, at the per-link bandwidth of
//! the whole dimension (LIBRA's conversion, `topology::per_link_gbps`):
//! a fully-connected dimension gives a fully-connected group of p whose
//! links carry `B/(n-1)` each (so a group of 4 in a fully-connected 8 can
//! inject only `3B/7`: LIBRA's formulas assume all of B); a switch gives a
//! switch of p with `B` per port; a ring gives a ring of p when the group is
//! the whole ring and otherwise a line of p (the contiguous members and the
//! links between them, `B/2` each way). Groups of the same shape are
//! identical by symmetry, so each distinct collective (type, size,
//! communicator) is built and replayed once.
//!
//! **Algorithms.** `hierarchical` (the default) runs each dimension's
//! algorithm from the study (ring → the bidirectional ring that LIBRA's
//! ring bytes assume, direct, halving-doubling) one dimension after
//! another, as `schedule::builtin` builds it; `ring`, `bidirectional-ring`,
//! `direct`, `halving-doubling` run flat over the group; `swing` is the
//! multiport bandwidth-optimal Swing; `tacos` synthesizes a schedule for the
//! group at the current bandwidths (`schedule::synth`); `forest` packs
//! spanning trees at the group's cut rate (`schedule::forest`: any size on
//! groups that are products of rings, lines, fully-connected groups and
//! switches, else at most 64 NPUs, 256 on sparse networks), also at the
//! current bandwidths; `flow` routes an
//! all-to-all along an optimal multi-commodity flow (`schedule::flow`, for
//! `algorithms = { all-to-all = "flow" }`); `best` searches every algorithm
//! `schedule::algorithm` knows (`best_with`: the certified bound first, a
//! product group's forest timed in rounds, then the builders by their own
//! bounds until one is within `best_tolerance` of the bound), at the exact
//! bandwidths, once per process for the same collective on the same links.
//! Point-to-point
//! (`send-recv`) collectives keep their analytic coefficients.
//!
//! **Coefficients by measurement.** A replay's critical path (`simulate`)
//! is a chain of hops that tiles the completion time `T`: each hop costs
//! its latency and its serialization, `bytes / link bandwidth`, and the link
//! bandwidth of dimension d is proportional to `B_d`. Summing the chain's
//! hops per dimension gives `alpha_d` and `beta_d` with `T = sum_d alpha_d +
//! beta_d` (waits for receive buffers, which the chain does not cover, are
//! spread over both in proportion). The collective becomes the sequential
//! coefficients `alpha_d + bytes_d / B_d` with `bytes_d = beta_d B_d`: exact
//! at the allocation it was measured at, with the critical path's own
//! sensitivity to each `B_d`. Holding the schedule and the order in which
//! links serve transfers fixed, the simulated time is the maximum over the
//! schedule's chains of functions of this form, so the measured
//! coefficients are a tangent to it from below in `z = 1/B`. Each
//! dimension's busiest link adds a row `link bytes / link bandwidth`: no
//! replay of the schedule at any allocation ends before that link has sent
//! its bytes, so the rows keep a dimension the critical path does not cross
//! from being starved.
//!
//! **Optimizing against schedules** is a fixed-point iteration: start from
//! the analytic optimum, measure the coefficients there, solve the
//! optimizer's (certified) problem with them, re-measure at the new
//! allocation, and repeat until the allocation moves less than `tolerance`
//! (relative to its largest entry). The tangents measured at earlier
//! allocations stay in the model as more rows (Kelley's cutting planes on
//! the replayed time): where the critical path flips between chains, the
//! iterates then close in on the kink instead of jumping between its sides. At a fixed point B* the allocation is
//! optimal for the coefficients measured at B*, which equal the simulated
//! time at B*; where the tangent bounds the simulated time from below this
//! makes B* optimal for the simulated time itself (any B: sim(B) >=
//! model(B) >= model(B*) = sim(B*)). If the allocation returns to one seen
//! before (the critical path flips between two chains) the cycle is
//! reported and the best allocation seen, by simulated objective, is
//! returned (also when an allocation seen on the way replayed faster than
//! the fixed point, which the tangents cannot rule out when link orders
//! change).
//!
//! Caches: schedules by (collective, group shape, algorithm; for TACOS also
//! the bandwidths, on a log grid of 1/64 octave, at which it is
//! synthesized), replays by (collective, exact bandwidths).

use crate::error::{Named, UnknownName, one_of};
use crate::model::collective::{Algorithm, Coefficients, CollectiveModel, DimCoeff};
use crate::model::fabric::{Block, Fabric};
use crate::model::topology::{DimKind, Topology, per_link_gbps};
use crate::model::training::{IterationModel, Loop};
use crate::model::units::{ns_to_ms, usd_to_musd, w_to_kw};
use crate::model::workload::{CollectiveKind, Comm, Group, Workload};
use crate::optimize::expr::{Constraint, Sense};
use crate::optimize::frontier::Frontier;
use crate::optimize::{self, Objective, OptError, Problem, Solution};
use crate::progress::{CancelOnly, Progress};
use crate::schedule::Schedule;
use crate::schedule::algorithm::{Algorithm as ScheduleAlgorithm, Won};
use crate::schedule::bounds;
use crate::schedule::builtin::{self, Algo};
use crate::schedule::simulate::{self, LinkModel, SimOptions};

use crate::schedule::synth::{self, SynthOptions};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The task [`optimize`] reports: allocations measured.
pub const FIXED_POINT: &str = "fixed point";
/// The task [`frontier`] reports: budgets done.
pub const SCHEDULE_BACKED_FRONTIER: &str = "schedule-backed frontier";

/// How a study's collectives are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evaluator {
    /// The formulas of `collective`.
    Analytic,
    /// Schedules replayed in the simulator (this module).
    Schedule,
}

impl Evaluator {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Evaluator::Analytic => "analytic",
            Evaluator::Schedule => "schedule",
        }
    }
}

impl Named for Evaluator {
    const WHAT: &'static str = "an evaluator";
    const ALL: &'static [Evaluator] = &[Evaluator::Analytic, Evaluator::Schedule];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(Evaluator);

/// The algorithms the schedule evaluator builds (module doc).
const ALGORITHMS: [ScheduleAlgorithm; 10] = [
    ScheduleAlgorithm::Hierarchical,
    ScheduleAlgorithm::Ring,
    ScheduleAlgorithm::BidirectionalRing,
    ScheduleAlgorithm::Direct,
    ScheduleAlgorithm::HalvingDoubling,
    ScheduleAlgorithm::Swing,
    ScheduleAlgorithm::Tacos,
    ScheduleAlgorithm::Forest,
    ScheduleAlgorithm::Flow,
    ScheduleAlgorithm::Best,
];

/// The schedule algorithm named `s`, if the evaluator builds it.
pub fn parse_algorithm(s: &str) -> Result<ScheduleAlgorithm, UnknownName> {
    s.parse::<ScheduleAlgorithm>()
        .ok()
        .filter(|a| ALGORITHMS.contains(a))
        .ok_or_else(|| UnknownName {
            what: "a schedule algorithm",
            given: s.to_string(),
            allowed: one_of(&ALGORITHMS.map(|a| a.as_name())),
        })
}

/// A study's `[evaluator]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Which evaluator `eval`, `optimize`, `frontier` and `run` use.
    pub evaluator: Evaluator,
    /// The algorithm of every collective without its own.
    pub algorithm: ScheduleAlgorithm,
    /// Per collective type, overriding `algorithm`.
    pub per_collective: Vec<(CollectiveKind, ScheduleAlgorithm)>,
    /// Chunks per NPU of the built schedules.
    pub chunks_per_npu: u32,
    /// Link model of the replays.
    pub link_model: LinkModel,
    /// The fixed point stops when the allocation moves less than this,
    /// relative to its largest entry.
    pub tolerance: f64,
    /// Fixed-point iterations at most.
    pub max_iterations: usize,
    /// Seed of TACOS synthesis.
    pub seed: u64,
    /// TACOS restarts (best of).
    pub restarts: u32,
    /// `best` stops once a schedule is within this fraction of the
    /// certified bound.
    pub best_tolerance: f64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            evaluator: Evaluator::Analytic,
            algorithm: ScheduleAlgorithm::Hierarchical,
            per_collective: Vec::new(),
            chunks_per_npu: 1,
            link_model: LinkModel::AlphaBeta,
            tolerance: 1e-3,
            max_iterations: 20,
            seed: 1,
            restarts: 1,
            best_tolerance: crate::schedule::algorithm::DEFAULT_TOLERANCE,
        }
    }
}

impl Spec {
    /// The algorithm `kind` runs with.
    fn algorithm_for(&self, kind: CollectiveKind) -> ScheduleAlgorithm {
        self.per_collective
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(self.algorithm, |(_, a)| *a)
    }
}

/// Why a schedule-backed evaluation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduledError {
    /// The study's algorithm cannot be built for a collective.
    #[error("cannot build `{algorithm}` for the {collective}: {message}")]
    Build {
        /// The algorithm.
        algorithm: String,
        /// Which collective.
        collective: String,
        /// Why.
        message: String,
    },
    /// A replay failed or found the schedule wrong.
    #[error("the `{algorithm}` schedule of the {collective} does not replay: {message}")]
    Replay {
        /// The algorithm.
        algorithm: String,
        /// Which collective.
        collective: String,
        /// Why.
        message: String,
    },
    /// The optimizer failed.
    #[error(transparent)]
    Opt(#[from] OptError),
    /// The observer asked the work to stop.
    #[error("cancelled")]
    Cancelled,
}

impl ScheduledError {
    /// Whether the work was stopped by its observer (here or in the
    /// optimizer it called).
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self,
            ScheduledError::Cancelled | ScheduledError::Opt(OptError::Cancelled)
        )
    }
}

/// The topology a collective over `group` runs on (module doc), and the
/// fabric dimension of each of its dimensions.
pub fn group_topology(fabric: &Fabric, group: &Group, bw: &[f64]) -> (Topology, Vec<usize>) {
    let mut dims = Vec::new();
    let mut gbps = Vec::new();
    let mut lat = Vec::new();
    let mut map = Vec::new();
    let mut shape = Vec::new();
    for (d, dim) in fabric.dims.iter().enumerate() {
        let Some(p) = group.0.get(d).copied().flatten().filter(|p| *p > 1) else {
            continue;
        };
        let kind = match dim.block {
            Block::Ring if p == dim.npus => DimKind::Ring,
            Block::Ring => DimKind::Line,
            Block::FullyConnected => DimKind::FullyConnected,
            Block::Switch => DimKind::Switch,
        };
        shape.push(if p == dim.npus {
            format!("{}:{}{p}", dim.name, kind.name())
        } else {
            format!("{}:{}{p}/{}", dim.name, kind.name(), dim.npus)
        });
        dims.push((dim.name.clone(), kind, p));
        gbps.push(per_link_gbps(dim.block, dim.npus, bw[d]));
        lat.push(dim.latency_ns);
        map.push(d);
    }
    (Topology::from_dims(&shape.join(" x "), &dims, &gbps, &lat), map)
}

/// The fabric dimensions a group spans (size above 1), in order: the
/// dimensions of its `group_topology`.
pub fn involved(fabric: &Fabric, group: &Group) -> Vec<usize> {
    (0..fabric.ndims())
        .filter(|&d| group.0.get(d).copied().flatten().is_some_and(|p| p > 1))
        .collect()
}

/// The bytes a schedule's buffer has for `comm` (LIBRA gives an
/// all-gather's per-NPU contribution; a schedule its output).
fn schedule_size(comm: &Comm) -> f64 {
    match comm.kind {
        CollectiveKind::AllGather => comm.bytes * comm.group.size() as f64,
        _ => comm.bytes,
    }
}

/// A name for a collective in messages and reports.
pub fn describe(comm: &Comm) -> String {
    format!(
        "{} of {} B over {:?}",
        comm.kind.name(),
        comm.bytes,
        comm.group.to_libra()
    )
}

/// One replay of one distinct collective.
#[derive(Debug, Clone)]
pub(crate) struct Measurement {
    /// Simulated time, ns.
    pub time_ns: f64,
    /// The measured coefficients (sequential; exact at the allocation).
    pub coeffs: Coefficients,
    /// The schedule's name.
    pub algorithm: String,
    /// Transfers replayed.
    pub transfers: u64,
    /// NPUs of the group.
    pub npus: u32,
    /// The group topology's lower bound without the exact cut
    /// (`schedule::bounds`: injection, dimension cuts, latency), ns; 0
    /// without a schedule.
    pub bound_ns: f64,
    /// The group topology and the schedule's buffer, to certify the bound
    /// with the exact cut when the figures are reported.
    group: Option<(Arc<Topology>, f64)>,
}

/// One distinct collective at one allocation, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveFigures {
    /// Type.
    pub kind: CollectiveKind,
    /// Size, bytes (LIBRA's convention).
    pub bytes: f64,
    /// Communicator, LIBRA's notation.
    pub group: Vec<i64>,
    /// How often the iteration issues it.
    pub count: usize,
    /// The schedule replayed (or `analytic` for send-recv).
    pub algorithm: String,
    /// NPUs of the group.
    pub npus: u32,
    /// Transfers of the schedule.
    pub transfers: u64,
    /// Simulated time, ms.
    pub simulated_ms: f64,
    /// The analytic model's time, ms.
    pub analytic_ms: f64,
    /// simulated / analytic (above 1: the analytic model is optimistic).
    pub ratio: f64,
    /// A time no algorithm beats, ms: the larger of the analytic model's
    /// bandwidth bound and the group topology's (the exact cut, injection
    /// and latency bounds of `schedule::bounds`).
    pub lower_bound_ms: f64,
    /// Measured per-dimension coefficients (fabric dimensions).
    pub dims: Vec<DimCoeff>,
}

/// The iteration at one allocation, schedule-backed.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The allocation.
    pub bw_gbps: Vec<f64>,
    /// The iteration with measured coefficients.
    pub model: IterationModel,
    /// Iteration time with simulated collectives, ns.
    pub iteration_ns: f64,
    /// Iteration time of the analytic model at the same allocation, ns.
    pub analytic_iteration_ns: f64,
    /// The lower bound (no schedule beats it), ns: the iteration with every
    /// collective at its own bound (the larger of the analytic bandwidth
    /// bound and the group topology's, `CollectiveFigures::lower_bound_ms`;
    /// the loop is monotone in each collective's time).
    pub lower_bound_ns: f64,
    /// Per distinct collective.
    pub collectives: Vec<CollectiveFigures>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ScheduleKey {
    distinct: usize,
    grid: Vec<i64>,
}

/// A replay: distinct collective and the bits of its dimensions' bandwidths.
type ReplayKey = (usize, Vec<u64>);

/// The schedule-backed evaluator of one study: its distinct collectives and
/// the caches.
pub struct Backed {
    fabric: Fabric,
    spec: Spec,
    algorithms: Vec<Algorithm>,
    /// The NPUs' memory bandwidth for reductions (the analytic model's).
    reduction_gbps: Option<f64>,
    analytic: IterationModel,
    /// Distinct collectives and how often each occurs.
    distinct: Vec<(Comm, usize)>,
    /// Per collective term of `analytic`: its distinct collective.
    index: Vec<usize>,
    /// Per distinct collective: its first term in `analytic`.
    first: Vec<usize>,
    schedules: Mutex<HashMap<ScheduleKey, Arc<Schedule>>>,
    replays: Mutex<HashMap<ReplayKey, Arc<Measurement>>>,
    /// The exact-cut bounds computed, ns, per replay.
    exact: Mutex<HashMap<ReplayKey, f64>>,
    /// Schedules built so far.
    pub built: AtomicUsize,
    /// Replays run so far.
    pub replayed: AtomicUsize,
    /// Evaluations answered from the replay cache.
    pub hits: AtomicUsize,
    /// Set by [`Backed::cancel`]: replays not yet started are refused.
    stop: AtomicBool,
}

impl Backed {
    /// The evaluator for a workload on a fabric. `model` gives each
    /// dimension's algorithm (for `hierarchical`) and the analytic model
    /// the figures are compared with.
    pub fn new(fabric: &Fabric, workload: &Workload, model: &CollectiveModel, lp: Loop, spec: &Spec) -> Backed {
        let analytic = IterationModel::new(workload, fabric, model, lp);
        let mut distinct: Vec<(Comm, usize)> = Vec::new();
        let mut index = Vec::new();
        for (_, _, comm) in workload.comms() {
            let at = distinct.iter().position(|(c, _)| {
                c.kind == comm.kind && c.group == comm.group && c.bytes.to_bits() == comm.bytes.to_bits()
            });
            let i = match at {
                Some(i) => i,
                None => {
                    distinct.push((comm.clone(), 0));
                    distinct.len() - 1
                }
            };
            distinct[i].1 += 1;
            index.push(i);
        }
        let first = (0..distinct.len())
            .map(|i| index.iter().position(|&x| x == i).unwrap_or(0))
            .collect();
        Backed {
            first,
            fabric: fabric.clone(),
            spec: spec.clone(),
            algorithms: model.algorithms.clone(),
            reduction_gbps: model.reduction_gbps,
            analytic,
            distinct,
            index,
            schedules: Mutex::new(HashMap::new()),
            replays: Mutex::new(HashMap::new()),
            exact: Mutex::new(HashMap::new()),
            built: AtomicUsize::new(0),
            replayed: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// Stops the work in flight: every collective not yet replayed fails
    /// with [`ScheduledError::Cancelled`] (from another thread, e.g. a
    /// progress ticker whose observer cancelled).
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The analytic iteration model.
    pub fn analytic(&self) -> &IterationModel {
        &self.analytic
    }

    /// The evaluator's settings.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Distinct collectives.
    pub fn distinct(&self) -> usize {
        self.distinct.len()
    }

    fn build(
        &self,
        i: usize,
        topo_at: &dyn Fn(&[f64]) -> Topology,
        bw: &[f64],
        map: &[usize],
    ) -> Result<Arc<Schedule>, ScheduledError> {
        let comm = &self.distinct[i].0;
        let algorithm = self.spec.algorithm_for(comm.kind);
        let algo = algorithm.to_string();
        // TACOS, forest and flow depend on the bandwidths: build at the grid
        // point (best does not come here: `best_timing`).
        let by_bandwidth = matches!(
            algorithm,
            ScheduleAlgorithm::Tacos | ScheduleAlgorithm::Forest | ScheduleAlgorithm::Flow
        );
        let grid: Vec<i64> = if by_bandwidth {
            map.iter().map(|&d| (bw[d].log2() * 64.0).round() as i64).collect()
        } else {
            Vec::new()
        };
        let key = ScheduleKey { distinct: i, grid };
        if let Some(s) = self.schedules.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok(s.clone());
        }
        let err = |m: String| ScheduledError::Build {
            algorithm: algo.clone(),
            collective: describe(comm),
            message: m,
        };
        let k = self.spec.chunks_per_npu.max(1);
        // The bandwidths of the grid point (the group's dimensions rounded).
        let at: Vec<f64> = bw
            .iter()
            .enumerate()
            .map(|(d, b)| match map.iter().position(|&m| m == d) {
                Some(j) if by_bandwidth => (key.grid[j] as f64 / 64.0).exp2(),
                _ => *b,
            })
            .collect();
        let schedule = match algorithm {
            ScheduleAlgorithm::Hierarchical => {
                let topo = topo_at(bw);
                let algos = map
                    .iter()
                    .map(|&d| match self.algorithms[d] {
                        Algorithm::Ring => Ok(Algo::BidirectionalRing),
                        Algorithm::Direct => Ok(Algo::Direct),
                        Algorithm::HalvingDoubling => Ok(Algo::HalvingDoubling),
                        Algorithm::Swing => Err(err(format!(
                            "dimension `{}` runs swing, which a hierarchical schedule does not build per dimension: set the evaluator's algorithm to `swing`",
                            self.fabric.dims[d].name
                        ))),
                    })
                    .collect::<Result<Vec<Algo>, _>>()?;
                builtin::build(&topo, comm.kind, Algo::Ring, Some(&algos), k).map_err(|e| err(e.to_string()))?
            }
            ScheduleAlgorithm::Tacos => {
                let opt = SynthOptions {
                    seed: self.spec.seed,
                    size_bytes: schedule_size(comm),
                    chunks_per_npu: k,
                    timing: LinkModel::Tacos,
                    reduce_timing: None,
                };
                synth::best_of(&topo_at(&at), comm.kind, &opt, self.spec.restarts.max(1))
                    .map_err(|e| err(e.to_string()))?
                    .schedule
            }
            other => {
                let opt = crate::schedule::algorithm::Options {
                    chunks_per_npu: k,
                    multiport: true,
                    size_bytes: schedule_size(comm),
                    link_model: self.spec.link_model,
                    seed: self.spec.seed,
                    restarts: self.spec.restarts.max(1),
                    reduce_gbps: self.reduction_gbps,
                    ..Default::default()
                };
                crate::schedule::algorithm::build(&topo_at(&at), comm.kind, other, &opt)
                    .map_err(|e| err(e.to_string()))?
            }
        };
        self.built.fetch_add(1, Ordering::Relaxed);
        let s = Arc::new(schedule);
        let mut cache = self.schedules.lock().map_err(|_| poisoned())?;
        if by_bandwidth {
            // One schedule per collective at a time: a forest or TACOS
            // schedule of a few hundred NPUs holds millions of transfers,
            // and the replay cache keeps what each grid point measured.
            cache.retain(|k, _| k.distinct != i);
        }
        cache.insert(key, s.clone());
        Ok(s)
    }

    /// Replays distinct collective `i` at `bw` (cached).
    fn measure_one(&self, i: usize, bw: &[f64]) -> Result<Arc<Measurement>, ScheduledError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ScheduledError::Cancelled);
        }
        let comm = &self.distinct[i].0;
        let (key, map) = self.replay_key(i, bw);
        if let Some(m) = self.replays.lock().map_err(|_| poisoned())?.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(m.clone());
        }
        let ndims = self.fabric.ndims();
        let analytic = &self.analytic.collectives[self.first[i]].coeffs;
        let m = if comm.kind == CollectiveKind::SendRecv || map.is_empty() {
            // No schedule: the analytic coefficients of the study's model.
            let c = analytic.clone();
            Measurement {
                time_ns: c.time_ns(bw),
                coeffs: c,
                algorithm: "analytic".into(),
                transfers: 0,
                npus: comm.group.size() as u32,
                bound_ns: 0.0,
                group: None,
            }
        } else {
            // The group's topology is counted before it is built.
            let kinds: Vec<(DimKind, u32)> = self
                .fabric
                .dims
                .iter()
                .enumerate()
                .filter_map(|(d, dim)| {
                    let p = comm.group.0.get(d).copied().flatten().filter(|p| *p > 1)?;
                    Some((DimKind::of(dim.block), p))
                })
                .collect();
            crate::model::topology::check_links(&kinds).map_err(|e| ScheduledError::Build {
                algorithm: "any".into(),
                collective: describe(comm),
                message: e.to_string(),
            })?;
            let topo_at = |b: &[f64]| group_topology(&self.fabric, &comm.group, b).0;
            let topo = topo_at(bw);
            let size = schedule_size(comm);
            let (t, group) = if self.spec.algorithm_for(comm.kind) == ScheduleAlgorithm::Best {
                // The best schedule at these bandwidths, found once per
                // process for every study and command (`best_timing`).
                (self.best_timing(comm, &topo, size)?, None)
            } else {
                let schedule = self.build(i, &topo_at, bw, &map)?;
                let opt = SimOptions {
                    size_bytes: size,
                    model: self.spec.link_model,
                    record: false,
                    reduce_gbps: self.reduction_gbps,
                };
                let replay_err = |m: String| ScheduledError::Replay {
                    algorithm: schedule.algorithm.clone(),
                    collective: describe(comm),
                    message: m,
                };
                let r = simulate::simulate(&schedule, &topo, &opt).map_err(|e| replay_err(e.to_string()))?;
                if !r.valid {
                    return Err(replay_err(r.errors.first().cloned().unwrap_or_default()));
                }
                let bound_ns = bounds::lower_bounds_with(&topo, schedule.collective, size, None).bound_ns;
                let t = Timing::of_replay(&r, &topo, schedule.algorithm.clone(), bound_ns);
                (Arc::new(t), Some((Arc::new(topo), size)))
            };
            self.replayed.fetch_add(1, Ordering::Relaxed);
            t.measurement(&map, bw, ndims, analytic.min_bytes, group)
        };
        let m = Arc::new(m);
        self.replays.lock().map_err(|_| poisoned())?.insert(key, m.clone());
        Ok(m)
    }

    /// `best`'s timing of `comm` on its group topology `topo` (rounds
    /// allowed: a product's forest is timed, not built), from the
    /// process-wide cache when the same collective on the same links was
    /// timed before, by this study or another, `run`, coopt or the fixed
    /// point.
    fn best_timing(&self, comm: &Comm, topo: &Topology, size: f64) -> Result<Arc<Timing>, ScheduledError> {
        let opt = crate::schedule::algorithm::Options {
            chunks_per_npu: self.spec.chunks_per_npu.max(1),
            multiport: true,
            size_bytes: size,
            link_model: self.spec.link_model,
            seed: self.spec.seed,
            restarts: self.spec.restarts.max(1),
            reduce_gbps: self.reduction_gbps,
            tolerance: self.spec.best_tolerance,
            ..Default::default()
        };
        let key = best_key(comm.kind, topo, &opt);
        if let Some(t) = BEST_CACHE.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok(t.clone());
        }
        let b =
            crate::schedule::algorithm::best_with(topo, comm.kind, &opt, true).map_err(|e| ScheduledError::Build {
                algorithm: "best".into(),
                collective: describe(comm),
                message: e.to_string(),
            })?;
        let t = Arc::new(match &b.won {
            Won::Schedule(_, r) => Timing::of_replay(r, topo, b.label.clone(), b.bounds.bound_ns),
            Won::Rounds(r) => Timing::of_rounds(r, topo, b.label.clone(), b.bounds.bound_ns),
        });
        BEST_CACHE.lock().map_err(|_| poisoned())?.insert(key, t.clone());
        Ok(t)
    }

    /// The cache key of distinct collective `i` at `bw` (the bits of its
    /// dimensions' bandwidths) and those dimensions.
    fn replay_key(&self, i: usize, bw: &[f64]) -> (ReplayKey, Vec<usize>) {
        let map = involved(&self.fabric, &self.distinct[i].0.group);
        let key = (i, map.iter().map(|&d| bw[d].to_bits()).collect());
        (key, map)
    }

    /// The bound of distinct collective `i` at `bw` with the exact cut
    /// (`schedule::cut`, cached): max-flows per NPU, so computed only for
    /// the measurements that are reported, not in the optimizer's loop.
    fn exact_bound(&self, i: usize, bw: &[f64], m: &Measurement) -> Result<f64, ScheduledError> {
        let Some((topo, size)) = &m.group else {
            return Ok(m.bound_ns);
        };
        let (key, _) = self.replay_key(i, bw);
        if let Some(b) = self.exact.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok(*b);
        }
        let b = bounds::lower_bounds(topo, self.distinct[i].0.kind, *size).bound_ns;
        self.exact.lock().map_err(|_| poisoned())?.insert(key, b);
        Ok(b)
    }

    /// The iteration at `bw`, every collective replayed (module doc), each
    /// collective's bound certified with the exact cut.
    pub fn measure(&self, bw: &[f64]) -> Result<Measured, ScheduledError> {
        self.measure_with(bw, true)
    }

    /// [`Backed::measure`]; with `exact` false the bounds leave out the
    /// exact cut (the optimizer's iterations, whose figures are not shown).
    fn measure_with(&self, bw: &[f64], exact: bool) -> Result<Measured, ScheduledError> {
        let ms: Vec<Arc<Measurement>> = (0..self.distinct.len())
            .into_par_iter()
            .map(|i| self.measure_one(i, bw))
            .collect::<Result<_, _>>()?;
        let bounds: Vec<f64> = if exact {
            (0..self.distinct.len())
                .into_par_iter()
                .map(|i| self.exact_bound(i, bw, &ms[i]))
                .collect::<Result<_, _>>()?
        } else {
            ms.iter().map(|m| m.bound_ns).collect()
        };
        let mut model = self.analytic.clone();
        for (term, &i) in model.collectives.iter_mut().zip(&self.index) {
            term.coeffs = ms[i].coeffs.clone();
        }
        let times: Vec<f64> = self.index.iter().map(|&i| ms[i].time_ns).collect();
        // Each term's bound: the analytic bandwidth bound or the group
        // topology's, whichever is larger.
        let floors: Vec<f64> = self
            .analytic
            .collectives
            .iter()
            .zip(&self.index)
            .map(|(term, &i)| term.coeffs.lower_bound_ns(bw).max(bounds[i]))
            .collect();
        let collectives = self
            .distinct
            .iter()
            .enumerate()
            .map(|(i, (comm, count))| {
                let term = &self.analytic.collectives[self.first[i]];
                let analytic_ns = term.coeffs.time_ns(bw);
                CollectiveFigures {
                    kind: comm.kind,
                    bytes: comm.bytes,
                    group: comm.group.to_libra(),
                    count: *count,
                    algorithm: ms[i].algorithm.clone(),
                    npus: ms[i].npus,
                    transfers: ms[i].transfers,
                    simulated_ms: ns_to_ms(ms[i].time_ns),
                    analytic_ms: ns_to_ms(analytic_ns),
                    ratio: if analytic_ns > 0.0 {
                        ms[i].time_ns / analytic_ns
                    } else {
                        1.0
                    },
                    lower_bound_ms: ns_to_ms(term.coeffs.lower_bound_ns(bw).max(bounds[i])),
                    dims: ms[i].coeffs.dims.clone(),
                }
            })
            .collect();
        Ok(Measured {
            bw_gbps: bw.to_vec(),
            iteration_ns: model.iteration_ns_from(&times),
            analytic_iteration_ns: self.analytic.iteration_ns(bw),
            lower_bound_ns: self.analytic.iteration_ns_from(&floors),
            model,
            collectives,
        })
    }
}

/// A collective's time on a group topology and its critical path's
/// pieces, from a replay or from forest rounds: what a [`Measurement`] is
/// made of.
#[derive(Debug, Clone)]
struct Timing {
    time_ns: f64,
    algorithm: String,
    transfers: u64,
    /// Per group-topology dimension: the path's latency and serialization.
    alpha_ns: Vec<f64>,
    beta_ns: Vec<f64>,
    /// Local operations on the path (scaled with the network time).
    local_ns: f64,
    /// Reductions at the receivers' memory on the path (not scaled).
    reduce_ns: f64,
    /// Per group-topology dimension: its busiest link's bytes over its
    /// bandwidth, ns.
    busiest_ns: Vec<f64>,
    /// The group topology's bound, ns.
    bound_ns: f64,
    npus: u32,
}

impl Timing {
    fn of_replay(r: &simulate::SimResult, topo: &Topology, algorithm: String, bound_ns: f64) -> Timing {
        let mut busiest = vec![0.0f64; topo.dims.len()];
        for (l, link) in topo.links.iter().enumerate() {
            if let Some(j) = link.dim.map(usize::from).filter(|j| *j < busiest.len())
                && link.gbps > 0.0
            {
                busiest[j] = busiest[j].max(r.link_bytes[l] / link.gbps);
            }
        }
        Timing {
            time_ns: r.time_ns,
            algorithm,
            transfers: r.transfers,
            alpha_ns: r.alpha_ns_per_dim.clone(),
            beta_ns: r.beta_ns_per_dim.clone(),
            local_ns: r.local_ns_on_path,
            reduce_ns: r.reduce_ns_on_path,
            busiest_ns: busiest,
            bound_ns,
            npus: topo.npus,
        }
    }

    fn of_rounds(r: &crate::schedule::product::RoundTime, topo: &Topology, algorithm: String, bound_ns: f64) -> Timing {
        let n = u64::from(topo.npus);
        let passes = u64::from(r.rounds / (r.pieces + r.depth - 1).max(1));
        Timing {
            time_ns: r.time_ns,
            algorithm,
            // What the schedule would hold: every root's trees' arcs, in
            // pieces, per pass.
            transfers: n * n.saturating_sub(1) * u64::from(r.trees_per_root) * u64::from(r.pieces) * passes,
            alpha_ns: r.alpha_ns_per_dim.clone(),
            beta_ns: r.beta_ns_per_dim.clone(),
            local_ns: 0.0,
            reduce_ns: r.reduce_ns,
            busiest_ns: r.busiest_ns_per_dim.clone(),
            bound_ns,
            npus: topo.npus,
        }
    }

    /// The measured coefficients (module doc) on the fabric's dimensions
    /// `map` (group-topology dimension j is fabric dimension `map[j]`).
    fn measurement(
        &self,
        map: &[usize],
        bw: &[f64],
        ndims: usize,
        min_bytes: f64,
        group: Option<(Arc<Topology>, f64)>,
    ) -> Measurement {
        // The critical path's pieces, scaled to the time (waits for
        // receive buffers are spread over them); its reductions at the
        // receivers' memory do not depend on B and join alpha as they are.
        let raw: f64 = self.alpha_ns.iter().sum::<f64>() + self.beta_ns.iter().sum::<f64>() + self.local_ns;
        let network = (self.time_ns - self.reduce_ns).max(0.0);
        let scale = if raw > 0.0 { network / raw } else { 0.0 };
        let mut dims = vec![DimCoeff::default(); ndims];
        for (j, &d) in map.iter().enumerate() {
            dims[d] = DimCoeff {
                alpha_ns: scale
                    * (self.alpha_ns.get(j).copied().unwrap_or(0.0) + if j == 0 { self.local_ns } else { 0.0 })
                    + if j == 0 { self.reduce_ns } else { 0.0 },
                bytes: scale * self.beta_ns.get(j).copied().unwrap_or(0.0) * bw[d],
            };
        }
        // Floors: no replay ends before its busiest link on each dimension
        // has sent its bytes, whatever the bandwidths.
        let rows = self
            .busiest_ns
            .iter()
            .enumerate()
            .filter(|(j, b)| **b > 0.0 && *j < map.len())
            .map(|(j, b)| {
                let mut row = vec![DimCoeff::default(); ndims];
                row[map[j]].bytes = b * bw[map[j]];
                row
            })
            .collect();
        Measurement {
            time_ns: self.time_ns,
            coeffs: Coefficients {
                dims,
                sequential: true,
                min_bytes,
                rows,
            },
            algorithm: self.algorithm.clone(),
            transfers: self.transfers,
            npus: self.npus,
            bound_ns: self.bound_ns,
            group,
        }
    }
}

/// `best`'s timings by (collective, group topology's links, options), for
/// the whole process: the same collective on the same links is searched
/// once whoever asks (each result depends on its key alone, so the cache
/// changes no figure).
type BestKey = (u8, Vec<u64>);
static BEST_CACHE: std::sync::LazyLock<Mutex<HashMap<BestKey, Arc<Timing>>>> =
    std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));

fn best_key(kind: CollectiveKind, topo: &Topology, opt: &crate::schedule::algorithm::Options) -> BestKey {
    let mut v = vec![
        u64::from(topo.npus),
        u64::from(topo.switches),
        opt.size_bytes.to_bits(),
        opt.link_model as u64,
        opt.reduce_gbps.map_or(u64::MAX, f64::to_bits),
        opt.tolerance.to_bits(),
        u64::from(opt.chunks_per_npu),
        opt.seed,
        u64::from(opt.restarts),
    ];
    for d in &topo.dims {
        v.push(d.kind as u64);
        v.push(u64::from(d.size));
    }
    for l in &topo.links {
        v.push(u64::from(l.src) << 32 | u64::from(l.dst));
        v.push(l.gbps.to_bits());
        v.push(l.latency_ns.to_bits());
        v.push(l.dim.map_or(u64::MAX, u64::from));
    }
    (kind as u8, v)
}

fn poisoned() -> ScheduledError {
    ScheduledError::Replay {
        algorithm: String::new(),
        collective: String::new(),
        message: "a replay thread panicked".into(),
    }
}

/// One step of the fixed point.
#[derive(Debug, Clone, Serialize)]
pub struct Iterate {
    /// The allocation measured.
    pub bw_gbps: Vec<f64>,
    /// Its schedule-backed iteration time, ms.
    pub iteration_time_ms: f64,
    /// Its analytic iteration time, ms.
    pub analytic_iteration_time_ms: f64,
    /// Its schedule-backed objective value.
    pub objective_value: f64,
    /// How far the next allocation is from this one (relative to the largest entry).
    pub moved: f64,
}

/// A schedule-backed optimum.
#[derive(Debug, Clone)]
pub struct FixedPoint {
    /// The analytic optimum the iteration started from.
    pub analytic: Solution,
    /// The optimizer's solve on the coefficients measured at `measured`'s
    /// allocation (its gap certifies the allocation for that model).
    pub solution: Solution,
    /// The iteration at the returned allocation.
    pub measured: Measured,
    /// The analytic optimum, replayed.
    pub analytic_measured: Measured,
    /// Every step.
    pub history: Vec<Iterate>,
    /// Whether the allocation stopped moving.
    pub converged: bool,
    /// Whether the iteration came back to an allocation seen before.
    pub cycle: bool,
    /// Whether the returned allocation is the best one seen rather than
    /// the last (after a cycle, without convergence, or when an earlier
    /// allocation replayed faster than the fixed point).
    pub best_seen: bool,
}

impl FixedPoint {
    /// Fixed-point iterations (allocations measured).
    pub fn iterations(&self) -> usize {
        self.history.len()
    }
}

/// The largest change between two allocations, relative to `b`'s largest entry.
pub fn moved(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().copied().fold(0.0, f64::max).max(1e-12);
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale
}

/// The objective's value at a measured allocation (`None` if a time target
/// is missed).
pub fn objective_value(problem: &Problem, objective: Objective, m: &Measured) -> Option<f64> {
    let t = ns_to_ms(m.iteration_ns);
    let bw = &m.bw_gbps;
    match objective {
        Objective::Perf => Some(t),
        Objective::PerfPerCost => Some(usd_to_musd(t * problem.cost.cost(bw))),
        Objective::MinCost { target_ms } => (t <= target_ms * (1.0 + 1e-6)).then(|| usd_to_musd(problem.cost.cost(bw))),
        Objective::MinPower { target_ms } => (t <= target_ms * (1.0 + 1e-6)).then(|| w_to_kw(problem.cost.power(bw))),
    }
}

/// Optimizes `problem` (its constraints and cost; its iteration model is
/// replaced by measured ones) against schedules (module doc). `progress`
/// hears `fixed point` (allocations measured, of the most allowed) and
/// stops the iterations, with [`ScheduledError::Cancelled`], once it
/// cancels.
pub fn optimize(
    backed: &Backed,
    problem: &Problem,
    objective: Objective,
    progress: Progress,
) -> Result<FixedPoint, ScheduledError> {
    let mut base = problem.clone();
    base.iteration = backed.analytic().clone();
    let analytic = optimize::solve(&base, objective)?;
    let mut bw = analytic.bw_gbps.clone();
    let mut steps: Vec<(Measured, Solution)> = Vec::new();
    let mut history = Vec::new();
    let (mut converged, mut cycle) = (false, false);
    // Tangents measured at earlier allocations, per collective term.
    let mut past: Vec<Vec<Vec<DimCoeff>>> = vec![Vec::new(); base.iteration.collectives.len()];
    let most = backed.spec.max_iterations.max(1);
    for _ in 0..most {
        if progress.cancelled() {
            return Err(ScheduledError::Cancelled);
        }
        let m = backed.measure_with(&bw, false)?;
        let mut p = base.clone();
        p.iteration = m.model.clone();
        for (term, rows) in p.iteration.collectives.iter_mut().zip(&past) {
            term.coeffs.rows.extend(rows.iter().cloned());
        }
        let sol = optimize::solve(&p, objective)?;
        for (term, rows) in m.model.collectives.iter().zip(past.iter_mut()) {
            if term.coeffs.sequential && !rows.contains(&term.coeffs.dims) {
                rows.push(term.coeffs.dims.clone());
            }
        }
        let step = moved(&sol.bw_gbps, &bw);
        history.push(Iterate {
            bw_gbps: bw.clone(),
            iteration_time_ms: ns_to_ms(m.iteration_ns),
            analytic_iteration_time_ms: ns_to_ms(m.analytic_iteration_ns),
            objective_value: objective_value(problem, objective, &m).unwrap_or(f64::INFINITY),
            moved: step,
        });
        progress.progress(FIXED_POINT, history.len(), most);
        let next = sol.bw_gbps.clone();
        steps.push((m, sol));
        if step <= backed.spec.tolerance {
            converged = true;
            break;
        }
        if steps
            .iter()
            .any(|(m, _)| moved(&next, &m.bw_gbps) <= backed.spec.tolerance)
        {
            cycle = true;
            break;
        }
        bw = next;
    }
    // The fixed point, unless an allocation seen on the way was better
    // (the tangents do not bound a replay everywhere; see the module doc).
    let seen = (0..history.len())
        .min_by(|&a, &b| history[a].objective_value.total_cmp(&history[b].objective_value))
        .unwrap_or(0);
    let last = history.len() - 1;
    let best = if converged && history[last].objective_value <= history[seen].objective_value * (1.0 + 1e-12) {
        last
    } else {
        seen
    };
    let best_seen = best != last;
    // The two reported measurements again, their bounds with the exact cut
    // (the replays come from the cache).
    let analytic_measured = backed.measure(&steps[0].0.bw_gbps)?;
    let (measured, solution) = steps.swap_remove(best);
    let measured = backed.measure(&measured.bw_gbps)?;
    Ok(FixedPoint {
        analytic,
        solution,
        measured,
        analytic_measured,
        history,
        converged,
        cycle,
        best_seen,
    })
}

/// One budget of a schedule-backed frontier: the analytic optimum at the
/// budget, replayed, and the schedule-backed optimum under the same budget.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierRow {
    /// The budget, in the axis unit.
    pub budget: f64,
    /// The analytic optimum's analytic time, ms.
    pub analytic_ms: f64,
    /// The analytic optimum, replayed, ms.
    pub analytic_simulated_ms: f64,
    /// The schedule-backed optimum, replayed, ms.
    pub schedule_ms: f64,
    /// The schedule-backed optimum's analytic time, ms.
    pub schedule_analytic_ms: f64,
    /// Fixed-point iterations.
    pub iterations: usize,
    /// Whether the fixed point converged.
    pub converged: bool,
    /// The schedule-backed allocation, GB/s per NPU per dimension.
    pub bw: Vec<f64>,
}

/// The analytic frontier `f`'s budgets, each optimized against schedules
/// (`perf` under the budget on `f`'s axis). `progress` hears
/// `schedule-backed frontier` (budgets done) and stops the work once it
/// cancels.
pub fn frontier(
    backed: &Backed,
    problem: &Problem,
    f: &Frontier,
    progress: Progress,
) -> Result<Vec<FrontierRow>, ScheduledError> {
    let axis = f.axis;
    let coeffs = axis.coeffs(problem);
    let mut rows = Vec::with_capacity(f.points.len());
    for (i, pt) in f.points.iter().enumerate() {
        let mut p = problem.clone();
        p.constraints.push(Constraint {
            text: format!("{} <= {}", axis.name(), pt.budget),
            coeffs: coeffs.clone(),
            sense: Sense::Le,
            rhs: pt.budget,
            unit: axis.unit_kind(),
        });
        let fp = optimize(backed, &p, Objective::Perf, &CancelOnly(progress))?;
        rows.push(FrontierRow {
            budget: pt.budget,
            analytic_ms: pt.iteration_time_ms,
            analytic_simulated_ms: ns_to_ms(fp.analytic_measured.iteration_ns),
            schedule_ms: ns_to_ms(fp.measured.iteration_ns),
            schedule_analytic_ms: ns_to_ms(fp.measured.analytic_iteration_ns),
            iterations: fp.iterations(),
            converged: fp.converged,
            bw: fp.measured.bw_gbps.clone(),
        });
        progress.progress(SCHEDULE_BACKED_FRONTIER, i + 1, f.points.len());
    }
    Ok(rows)
}

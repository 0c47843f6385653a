//! `dimsum failures`: the iteration time with one failed part, for every
//! dimension and part kind, and how often the cluster's parts fail.
//!
//! For each dimension d and each part its block has (`model::failure`),
//! the failed group is rebuilt around the failure; every distinct
//! collective of the workload that uses d (kind, bytes, group) is re-timed
//! once: its phase on d, the buffer `S_d` LIBRA's hierarchical bytes give
//! that level (`bytes_d = 2 (p-1)/p S_d` for all-reduce, `(p-1)/p S_d`
//! otherwise), is replayed on the failed group and on the healthy one (the
//! fastest of the ring, bidirectional ring and direct schedules, the
//! certified bound `schedule::bounds::lower_bounds` beside it), and d's
//! coefficient of the collective is scaled by the ratio, at least 1 (the
//! healthy fabric can run whatever schedule the failed one runs). A group
//! too large to replay takes the closed-form ratio, labelled `estimate`.
//! Send-recv keeps its time. The iteration is then timed as the healthy one
//! (`IterationModel::iteration_ns`): every group of d waits for the failed
//! one, so one failure anywhere slows the synchronous step. Its lower bound
//! is the healthy iteration's (a failure never speeds anything up).
//!
//! The parts come from the bill of materials (the decision's in `run`,
//! `bom::bom` of the allocation in the command): each line's failures per
//! day from its catalog MTBF, unknown where the catalog gives none; the
//! cluster's known sum gives the goodput after checkpoint-restart with the
//! study's `[reliability]`.

use super::exec::{Executor, Job, RunError};
use crate::error::InputError;
use crate::error::Named;
use crate::model::bom::Bom;
use crate::model::catalog::Catalog;
use crate::model::collective::bytes_per_dim;
use crate::model::fabric::Block;
use crate::model::failure::{self, DimGroup, Goodput, Part, Reliability, Remedy};
use crate::model::topology::{Topology, per_link_gbps};
use crate::model::training::IterationModel;
use crate::model::units::ns_to_ms;
use crate::model::workload::{CollectiveKind, Comm};
use crate::schedule::algorithm::{self, Algorithm, Options};
use crate::schedule::bounds::lower_bounds;
use crate::schedule::simulate::{LinkModel, SimOptions, simulate};
use crate::study::Study;
use serde::Serialize;
use std::collections::HashMap;

/// The failures of a study at one allocation.
#[derive(Debug, Clone, Copy)]
pub struct Failures<'a> {
    /// The study.
    pub study: &'a Study,
    /// GB/s per NPU per dimension.
    pub bw: &'a [f64],
    /// The parts bought for it, if known.
    pub bom: Option<&'a Bom>,
}

/// One collective re-timed with a failed part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retimed {
    /// The collective's kind.
    pub collective: &'static str,
    /// Its size, bytes (as the workload gives it).
    pub bytes: f64,
    /// Its group (LIBRA's notation).
    pub group: Vec<i64>,
    /// Its members on the failed dimension.
    pub members: u32,
    /// The buffer of its phase on the failed dimension, bytes.
    pub phase_bytes: f64,
    /// Its analytic time, healthy, ns.
    pub healthy_ns: f64,
    /// Its time with the failure, ns.
    pub time_ns: f64,
    /// The failed group's phase replayed, ns (none: estimated).
    pub replay_ns: Option<f64>,
    /// The failed group's certified lower bound, ns.
    pub bound_ns: Option<f64>,
    /// The healthy group's phase replayed, ns.
    pub healthy_replay_ns: Option<f64>,
    /// Failed over healthy phase, at least 1.
    pub ratio: f64,
    /// How the ratio was found: the replayed builder, or the estimate's reason.
    pub method: String,
    /// Whether the ratio is the closed-form estimate.
    pub estimate: bool,
}

/// One dimension's part failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureCase {
    /// The dimension's name.
    pub dimension: String,
    /// Its block.
    pub block: Block,
    /// The part that failed.
    pub part: Part,
    /// What the fabric did.
    pub remedy: Remedy,
    /// The iteration with the failure, ms (none: `restart`).
    pub iteration_time_ms: Option<f64>,
    /// Over the healthy iteration.
    pub slowdown: Option<f64>,
    /// Whether a re-timed collective is estimated.
    pub estimate: bool,
    /// Such parts' failures a day in the cluster (none: unknown).
    pub failures_per_day: Option<f64>,
    /// The collectives re-timed.
    pub collectives: Vec<Retimed>,
}

/// One line of the bill of materials and how often it fails.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartRate {
    /// Its dimension.
    pub dimension: String,
    /// The catalog part.
    pub component: String,
    /// `port`, `switch` or `cable`.
    pub kind: &'static str,
    /// Where it goes.
    pub role: String,
    /// How many.
    pub quantity: u64,
    /// The catalog's MTBF, hours (none: unknown).
    pub mtbf_h: Option<f64>,
    /// `quantity x 24 / MTBF`.
    pub failures_per_day: Option<f64>,
}

/// What failed parts cost a study at one allocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureResults {
    /// GB/s per NPU per dimension.
    pub bw_gbps: Vec<f64>,
    /// The healthy iteration, ms.
    pub healthy_ms: f64,
    /// Its lower bound, ms: below every time with a failure too.
    pub healthy_bound_ms: f64,
    /// Every dimension x part.
    pub failures: Vec<FailureCase>,
    /// The bill's lines (empty without one).
    pub parts: Vec<PartRate>,
    /// The cluster's failures a day over the parts with an MTBF.
    pub failures_per_day: Option<f64>,
    /// Parts with no MTBF in the catalog.
    pub unknown_mtbf: Vec<String>,
    /// The study's `[reliability]`.
    pub reliability: Option<Reliability>,
    /// Goodput after checkpoint-restart at `failures_per_day`.
    pub goodput: Option<Goodput>,
}

impl Job for Failures<'_> {
    type Output = FailureResults;
    fn name(&self) -> String {
        format!("failures {}", self.study.name)
    }
    fn run(self, ex: &Executor) -> Result<FailureResults, RunError> {
        let (study, bw) = (self.study, self.bw);
        if let Some(d) = bw.iter().position(|b| !(b.is_finite() && *b > 0.0)) {
            return Err(InputError::arg(
                "--bw",
                format!("dimension {d} gets no bandwidth: a failure is timed on links with some"),
            )
            .into());
        }
        let model = study.iteration_model();
        let healthy = model.iteration_ns(bw);
        let mut timer = Timer::new(study);
        let cases: Vec<(usize, Part)> = study
            .fabric
            .dims
            .iter()
            .enumerate()
            .flat_map(|(d, dim)| Part::of(dim.block).iter().map(move |p| (d, *p)))
            .collect();
        let mut failures = Vec::new();
        for (i, &(d, part)) in cases.iter().enumerate() {
            ex.step("time each failed part", i, cases.len())?;
            failures.push(case(study, &model, bw, d, part, healthy, &mut timer));
        }
        ex.step("time each failed part", cases.len(), cases.len())?;
        let procurement = study.procurement();
        let parts = self.bom.map(|b| rates(b, &procurement.catalog)).unwrap_or_default();
        for c in &mut failures {
            c.failures_per_day = case_rate(&parts, &c.dimension, c.part);
        }
        let known: Vec<f64> = parts.iter().filter_map(|p| p.failures_per_day).collect();
        let failures_per_day = (!parts.is_empty()).then(|| known.iter().sum::<f64>());
        let mut unknown_mtbf: Vec<String> = Vec::new();
        for p in parts.iter().filter(|p| p.mtbf_h.is_none()) {
            if !unknown_mtbf.contains(&p.component) {
                unknown_mtbf.push(p.component.clone());
            }
        }
        let goodput = match (study.reliability, failures_per_day) {
            (Some(r), Some(f)) => Some(r.goodput(f)),
            _ => None,
        };
        Ok(FailureResults {
            bw_gbps: bw.to_vec(),
            healthy_ms: ns_to_ms(healthy),
            healthy_bound_ms: ns_to_ms(model.lower_bound_ns(bw)),
            failures,
            parts,
            failures_per_day,
            unknown_mtbf,
            reliability: study.reliability,
            goodput,
        })
    }
}

/// The buffer of a collective's phase on a dimension where LIBRA's
/// hierarchical formula gives it `bytes` over `p` members (module doc).
pub fn phase_bytes(kind: CollectiveKind, bytes: f64, p: u32) -> f64 {
    let p = f64::from(p);
    match kind {
        CollectiveKind::AllReduce => bytes * p / (2.0 * (p - 1.0)),
        _ => bytes * p / (p - 1.0),
    }
}

/// The builders a phase is replayed with, the fastest kept: cheap on any
/// network (TACOS and the forest would find faster schedules round a
/// failure, at seconds a group; the bound beside the time says how much).
const REPLAYED: [Algorithm; 3] = [Algorithm::BidirectionalRing, Algorithm::Ring, Algorithm::Direct];

/// Most NPUs of a group without switches the forest is also tried on.
const FOREST_MAX_NPUS: u32 = 8;

/// A replayed phase: time and bound, ns, and the builder that won.
type Replayed = Option<(f64, f64, String)>;

/// Replays phases, each once.
struct Timer {
    options: Options,
    done: HashMap<(String, usize, CollectiveKind, u64), Replayed>,
}

impl Timer {
    fn new(study: &Study) -> Timer {
        Timer {
            options: Options {
                reduce_gbps: study.collective.reduction_gbps,
                ..Options::default()
            },
            done: HashMap::new(),
        }
    }

    /// `kind` of `size` bytes on `topo` (named by `key` on dimension `d`).
    fn replay(&mut self, key: &str, d: usize, topo: &Topology, kind: CollectiveKind, size: f64) -> Replayed {
        let k = (key.to_string(), d, kind, size.to_bits());
        if let Some(r) = self.done.get(&k) {
            return r.clone();
        }
        let opt = Options {
            size_bytes: size,
            ..self.options.clone()
        };
        let sim = SimOptions {
            size_bytes: size,
            model: LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: self.options.reduce_gbps,
        };
        let mut fastest: Option<(f64, Algorithm)> = None;
        // The forest too on small groups without switches or relays (a
        // line, a fully-connected group): tens of milliseconds there.
        let forest = (topo.switches == 0 && topo.npus <= FOREST_MAX_NPUS).then_some(Algorithm::Forest);
        for a in REPLAYED.into_iter().chain(forest) {
            let Ok(schedule) = algorithm::build(topo, kind, a, &opt) else {
                continue;
            };
            match simulate(&schedule, topo, &sim) {
                Ok(r) if r.valid && fastest.is_none_or(|(t, _)| r.time_ns < t) => fastest = Some((r.time_ns, a)),
                _ => {}
            }
        }
        let r = fastest.map(|(t, a)| (t, lower_bounds(topo, kind, size).bound_ns, a.as_name().to_string()));
        self.done.insert(k, r.clone());
        r
    }
}

/// Dimension `d`'s group of `p` members at `bw`.
fn dim_group(study: &Study, bw: &[f64], d: usize, p: u32) -> DimGroup {
    let dims = &study.fabric.dims;
    let dim = &dims[d];
    DimGroup {
        block: dim.block,
        npus: dim.npus,
        members: p,
        gbps: per_link_gbps(dim.block, dim.npus, bw[d]),
        latency_ns: dim.latency_ns,
        lower_gbps: d
            .checked_sub(1)
            .map(|l| per_link_gbps(dims[l].block, dims[l].npus, bw[l])),
    }
}

/// The iteration with `part` of dimension `d` failed.
fn case(
    study: &Study,
    model: &IterationModel,
    bw: &[f64],
    d: usize,
    part: Part,
    healthy: f64,
    timer: &mut Timer,
) -> FailureCase {
    let dim = &study.fabric.dims[d];
    let mut out = FailureCase {
        dimension: dim.name.clone(),
        block: dim.block,
        part,
        remedy: Remedy::Rerouted,
        iteration_time_ms: None,
        slowdown: None,
        estimate: false,
        failures_per_day: None,
        collectives: Vec::new(),
    };
    // The remedy is the dimension's, whatever group: the whole dimension's.
    let whole = dim_group(study, bw, d, dim.npus);
    out.remedy = whole.failed(part).map_or(Remedy::Restart, |f| f.remedy);
    if out.remedy == Remedy::Restart {
        return out;
    }
    let mut failed = model.clone();
    let mut ratios: HashMap<(CollectiveKind, u64, Vec<i64>), f64> = HashMap::new();
    for term in &mut failed.collectives {
        let Some(p) = members(&term.comm, d) else {
            continue;
        };
        let key = (term.comm.kind, term.comm.bytes.to_bits(), term.comm.group.to_libra());
        let r = match ratios.get(&key) {
            Some(r) => *r,
            None => {
                let t = retime(study, bw, d, part, &term.comm, p, &term.coeffs, timer);
                let r = t.ratio;
                out.estimate |= t.estimate;
                out.collectives.push(t);
                ratios.insert(key, r);
                r
            }
        };
        scale(&mut term.coeffs, d, r);
    }
    let t = failed.iteration_ns(bw);
    out.iteration_time_ms = Some(ns_to_ms(t));
    out.slowdown = Some(t / healthy);
    out
}

/// The comm's members on dimension `d`, if it uses it (send-recv never).
fn members(comm: &Comm, d: usize) -> Option<u32> {
    let p = comm.group.0.get(d).copied().flatten().filter(|p| *p > 1)?;
    (comm.kind != CollectiveKind::SendRecv).then_some(p)
}

/// Dimension `d`'s share of `c`, times `r`.
fn scale(c: &mut crate::model::collective::Coefficients, d: usize, r: f64) {
    if let Some(x) = c.dims.get_mut(d) {
        x.alpha_ns *= r;
        x.bytes *= r;
    }
    for row in &mut c.rows {
        if let Some(x) = row.get_mut(d) {
            x.alpha_ns *= r;
            x.bytes *= r;
        }
    }
}

/// One collective's phase on `d` replayed healthy and failed.
#[allow(clippy::too_many_arguments)]
fn retime(
    study: &Study,
    bw: &[f64],
    d: usize,
    part: Part,
    comm: &Comm,
    p: u32,
    coeffs: &crate::model::collective::Coefficients,
    timer: &mut Timer,
) -> Retimed {
    let group = dim_group(study, bw, d, p);
    let libra = bytes_per_dim(comm.kind, comm.bytes, &comm.group);
    let size = phase_bytes(comm.kind, libra.get(d).copied().unwrap_or(0.0), p);
    let failed = group.failed(part).ok();
    let estimate_ratio = failed.as_ref().map_or(1.0, |f| f.estimate);
    let failed_replay = failed
        .as_ref()
        .and_then(|f| f.topology.as_ref())
        .and_then(|t| timer.replay(&t.name, d, t, comm.kind, size));
    let healthy_replay = match failed_replay.is_some() {
        true => {
            let h = group.healthy();
            timer.replay(&h.name, d, &h, comm.kind, size)
        }
        false => None,
    };
    let (ratio, method, estimate) = match (&failed_replay, &healthy_replay) {
        (Some((f, _, a)), Some((h, _, b))) if *h > 0.0 => {
            ((f / h).max(1.0), format!("replay: {a} (healthy: {b})"), false)
        }
        _ => (
            estimate_ratio,
            match failed.as_ref().is_some_and(|f| f.topology.is_none()) {
                true if p > failure::MAX_REPLAY_NPUS => {
                    format!("estimate: closed form (more than {} members)", failure::MAX_REPLAY_NPUS)
                }
                _ => "estimate: closed form".to_string(),
            },
            true,
        ),
    };
    let mut scaled = coeffs.clone();
    scale(&mut scaled, d, ratio);
    Retimed {
        collective: comm.kind.name(),
        bytes: comm.bytes,
        group: comm.group.to_libra(),
        members: p,
        phase_bytes: size,
        healthy_ns: coeffs.time_ns(bw),
        time_ns: scaled.time_ns(bw),
        replay_ns: failed_replay.as_ref().map(|r| r.0),
        bound_ns: failed_replay.as_ref().map(|r| r.1),
        healthy_replay_ns: healthy_replay.as_ref().map(|r| r.0),
        ratio,
        method,
        estimate,
    }
}

/// The bill's lines with their catalog MTBFs.
fn rates(bom: &Bom, catalog: &Catalog) -> Vec<PartRate> {
    bom.items
        .iter()
        .map(|it| {
            let mtbf = match it.kind {
                "port" => catalog.port(&it.component).and_then(|p| p.mtbf.as_ref()),
                "switch" => catalog
                    .switches
                    .iter()
                    .find(|s| s.name == it.component)
                    .and_then(|s| s.mtbf.as_ref()),
                "cable" => catalog
                    .cables
                    .iter()
                    .find(|c| c.name == it.component)
                    .and_then(|c| c.mtbf.as_ref()),
                _ => None,
            }
            .map(|m| m.hours);
            PartRate {
                dimension: it.dimension.clone(),
                component: it.component.clone(),
                kind: it.kind,
                role: it.role.clone(),
                quantity: it.quantity,
                mtbf_h: mtbf,
                failures_per_day: mtbf.map(|h| failure::failures_per_day(it.quantity, h)),
            }
        })
        .collect()
}

/// A case's failures a day: the sum over its dimension's lines of its part
/// kind, unknown if any of them has no MTBF (or there are none).
fn case_rate(parts: &[PartRate], dimension: &str, part: Part) -> Option<f64> {
    let lines: Vec<&PartRate> = parts
        .iter()
        .filter(|p| p.dimension == dimension && part.is_item(p.kind) && p.quantity > 0)
        // An NPU's cable, not a leaf-spine link (counted in the cluster's sum).
        .filter(|p| p.kind != "cable" || p.role.starts_with("NPU"))
        .collect();
    if lines.is_empty() {
        return None;
    }
    lines.iter().map(|p| p.failures_per_day).sum()
}

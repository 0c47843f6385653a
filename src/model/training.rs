//! The training loop: how a workload's compute and collectives compose into
//! the time of one iteration.
//!
//! Every loop is written as an [`IterationModel`]: a set of collectives, each
//! with its time coefficients, and a set of paths; the iteration time is
//! `max over paths of (constant + sum of the path's collective times)`. That
//! form is convex in the bandwidths (a max of sums of convex functions) and is
//! what the optimizer linearizes; evaluating it is a loop over the paths.
//!
//! - `no-overlap` (LIBRA's `inputs/training_loop/no_overlap.py`): forward
//!   compute and collective of every layer in order, then for every layer in
//!   reverse the input-grad compute and collective and the weight-grad compute
//!   and collective, nothing overlapped. One path: all compute, all collectives.
//! - `overlap`: forward and input-grad collectives block the compute stream
//!   (the next step needs their result), but each weight-grad collective is
//!   handed to a second, FIFO communication stream when its compute ends and
//!   runs under the rest of the backward pass. The iteration ends when both
//!   streams are done. With s_k the time the k-th backward layer's weight-grad
//!   collective is issued, the FIFO stream ends at `max_k (s_k + sum of the
//!   weight-grad collectives issued at or after k)`, so the paths are: the
//!   compute stream (all compute, forward and input-grad collectives), and one
//!   per weight-grad collective k. The two streams are assumed not to slow each
//!   other down (as ASTRA-sim's analytical backend, which models no
//!   congestion): this is optimistic when they share a dimension.
//!   Forward and input-grad collectives that hide under compute
//!   (`Phase::hidden_ns`: a ring attention's KV exchange, tensor-parallel
//!   collectives pipelined with their products) leave the compute stream;
//!   those of one communicator form a stream of their own, which runs
//!   beside the `H` ns of compute they hide under, so each such stream adds
//!   the path `compute - H + blocking collectives + the stream's`. Per
//!   phase the time is `max(hidden, collective)`; a max of the sums is a
//!   lower bound on that sum of maxima, and equal to it when every hidden
//!   phase of the stream has the same ratio (a model's identical layers).
//!   Streams are keyed by communicator and by what they hide under
//!   (`Hiding`), so two kinds never count the same compute twice on one
//!   path. The weight-gradient paths keep the compute stream's issue times
//!   without a hidden stream's excess: optimistic when a hidden stream
//!   does not fit under its compute.

use crate::model::collective::{self, Coefficients, CollectiveModel};
use crate::model::fabric::Fabric;
use crate::model::workload::{Comm, Group, Hiding, Phase, PhaseKind, Workload};
use serde::{Deserialize, Serialize};

/// How phases overlap within an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loop {
    /// LIBRA's loop: nothing overlaps.
    NoOverlap,
    /// Weight-grad collectives run under the remaining backward compute.
    Overlap,
}

impl Loop {
    /// The study-file name.
    pub fn name(self) -> &'static str {
        match self {
            Loop::NoOverlap => "no-overlap",
            Loop::Overlap => "overlap",
        }
    }
}

/// One collective of the iteration with its coefficients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveTerm {
    /// Index of the layer that issues it.
    pub layer: usize,
    /// The phase that issues it.
    pub phase: PhaseKind,
    /// What it is: type, bytes, communicator.
    pub comm: Comm,
    /// Per-dimension coefficients.
    pub coeffs: Coefficients,
}

/// One path through the iteration: a constant plus a sum of collective times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    /// Compute on the path, ns.
    pub constant_ns: f64,
    /// Indices into [`IterationModel::collectives`].
    pub collectives: Vec<usize>,
}

/// Iteration time as `max_p (constant_p + sum_{c in p} t_c(B))`.
///
/// ```
/// use dimsum::model::training::{IterationModel, Loop};
/// // One layer on 4 NPUs on a ring x 8 on a switch, latency 0: 6 us of
/// // compute, a 64 MB all-reduce over the ring (input gradients) and one
/// // over the switch (weight gradients); the study file is LIBRA's
/// // format (see README.md).
/// # let study = dimsum::study::Study::parse(r#"
/// # name = "tiny"
/// # [[fabric.dims]]
/// # name = "package"
/// # block = "ring"
/// # npus = 4
/// # [[fabric.dims]]
/// # name = "pod"
/// # block = "switch"
/// # npus = 8
/// # [cost.tiers.package]
/// # link_usd_per_gbps = 2.0
/// # [cost.tiers.pod]
/// # link_usd_per_gbps = 8.0
/// # switch_usd_per_gbps = 10.0
/// # nic_usd_per_gbps = 20.0
/// # [workload]
/// # communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 8] }
/// # [[workload.layers]]
/// # name = "l0"
/// # forward = { compute_ns = 1000 }
/// # input_grad = { compute_ns = 2000, collective = "all-reduce", bytes = 64e6 }
/// # weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
/// # "#, std::path::Path::new("tiny.toml"))?;
/// let m = IterationModel::new(&study.workload, &study.fabric, &study.collective, Loop::NoOverlap);
/// // Nothing overlaps: 6 us + 2 (3/4) 64 MB / B0 + 2 (7/8) 64 MB / B1.
/// let t = m.iteration_ns(&[100.0, 50.0]);
/// assert!((t - (6_000.0 + 96e6 / 100.0 + 112e6 / 50.0)).abs() < 1e-6 * t);
/// assert!(m.lower_bound_ns(&[100.0, 50.0]) <= t);
/// // More bandwidth is never slower.
/// assert!(m.iteration_ns(&[200.0, 100.0]) < t);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationModel {
    /// Every collective of the iteration.
    pub collectives: Vec<CollectiveTerm>,
    /// The paths whose maximum is the iteration time.
    pub paths: Vec<Path>,
    /// All compute of the iteration, ns.
    pub compute_ns: f64,
}

impl IterationModel {
    /// Builds the model of `workload` on `fabric`. Every communicator must
    /// have been checked against the fabric.
    pub fn new(workload: &Workload, fabric: &Fabric, model: &CollectiveModel, lp: Loop) -> Self {
        // Equal collectives (a generated iteration repeats a few per layer
        // and micro-batch) share their coefficients, computed once.
        let mut known: std::collections::HashMap<(crate::model::workload::CollectiveKind, u64, &Group), Coefficients> =
            std::collections::HashMap::new();
        let collectives: Vec<CollectiveTerm> = workload
            .comms()
            .map(|(layer, phase, comm)| CollectiveTerm {
                layer,
                phase,
                comm: comm.clone(),
                coeffs: known
                    .entry((comm.kind, comm.bytes.to_bits(), &comm.group))
                    .or_insert_with(|| collective::coefficients(comm, fabric, model))
                    .clone(),
            })
            .collect();
        let compute_ns = workload.compute_ns();
        let paths = match lp {
            Loop::NoOverlap => vec![Path {
                constant_ns: compute_ns,
                collectives: (0..collectives.len()).collect(),
            }],
            Loop::Overlap => overlap_paths(workload, &collectives),
        };
        IterationModel {
            collectives,
            paths,
            compute_ns,
        }
    }

    /// Every collective's time at `bw`, ns.
    pub(crate) fn collective_times(&self, bw: &[f64]) -> Vec<f64> {
        self.collectives.iter().map(|c| c.coeffs.time_ns(bw)).collect()
    }

    /// Iteration time given each collective's time, ns.
    pub(crate) fn iteration_ns_from(&self, times: &[f64]) -> f64 {
        self.paths
            .iter()
            .map(|p| p.constant_ns + p.collectives.iter().map(|&c| times[c]).sum::<f64>())
            .fold(self.compute_ns, f64::max)
    }

    /// Iteration time at `bw`, ns.
    pub fn iteration_ns(&self, bw: &[f64]) -> f64 {
        self.iteration_ns_from(&self.collective_times(bw))
    }

    /// A time no schedule can beat at `bw`: the same loop with every
    /// collective at its bandwidth lower bound (the loop is monotone in each
    /// collective's time), ns.
    pub fn lower_bound_ns(&self, bw: &[f64]) -> f64 {
        let lb: Vec<f64> = self.collectives.iter().map(|c| c.coeffs.lower_bound_ns(bw)).collect();
        self.iteration_ns_from(&lb)
    }
}

/// How a phase issues its collective, as the `overlap` loop times it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Issue {
    /// A forward or input-gradient collective the compute waits for.
    Blocking,
    /// A weight-gradient collective (the second stream).
    WeightGrad,
    /// A forward or input-gradient collective that hides under this much
    /// compute, ns (`Phase::hidden_ns`), of this kind.
    Hidden(f64, Hiding),
}

impl Issue {
    /// How `phase`'s collective is issued in a phase of `kind`.
    pub fn of(kind: PhaseKind, phase: &Phase) -> Issue {
        match kind {
            PhaseKind::WeightGrad => Issue::WeightGrad,
            _ if phase.hidden_ns > 0.0 => Issue::Hidden(phase.hidden_ns, phase.hidden_by),
            _ => Issue::Blocking,
        }
    }
}

/// A workload counted instead of listed (each distinct collective with
/// how many times it is issued, as `transformer::census` gives it), with
/// each collective's coefficients: its time at any allocation without its
/// records.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// Compute, ns.
    pub compute_ns: f64,
    /// Each distinct collective's coefficients, communicator, how it is
    /// issued, and how many times.
    pub terms: Vec<(Coefficients, Group, Issue, u64)>,
}

impl Counted {
    /// The counted collectives `comms` (collective, how it is issued,
    /// count) on `fabric` under `model`.
    pub fn new(compute_ns: f64, comms: &[(Comm, Issue, u64)], fabric: &Fabric, model: &CollectiveModel) -> Counted {
        Counted {
            compute_ns,
            terms: comms
                .iter()
                .map(|(c, issue, n)| (collective::coefficients(c, fabric, model), c.group.clone(), *issue, *n))
                .collect(),
        }
    }

    /// The iteration time at `bw` under `lp`, ns: under `no-overlap` the
    /// time itself ([`IterationModel::iteration_ns`] of the listed
    /// workload); under `overlap` a lower bound on it (the compute stream
    /// with its blocking collectives, and each hidden stream's excess over
    /// the compute it hides under: the loop's paths without the
    /// weight-gradient ones).
    pub fn iteration_ns(&self, bw: &[f64], lp: Loop) -> f64 {
        let mut blocking = 0.0;
        // Per hidden stream (communicator and kind): its collectives' time
        // and the compute it hides under.
        let mut streams: Vec<((&Group, Hiding), f64, f64)> = Vec::new();
        for (c, group, issue, n) in &self.terms {
            let time = *n as f64 * c.time_ns(bw);
            match (lp, issue) {
                (Loop::NoOverlap, _) | (Loop::Overlap, Issue::Blocking) => blocking += time,
                (Loop::Overlap, Issue::WeightGrad) => {}
                (Loop::Overlap, Issue::Hidden(h, by)) => {
                    match streams.iter_mut().find(|(k, _, _)| *k == (group, *by)) {
                        Some((_, t, hid)) => {
                            *t += time;
                            *hid += *n as f64 * h;
                        }
                        None => streams.push(((group, *by), time, *n as f64 * h)),
                    }
                }
            }
        }
        let excess = streams.iter().map(|(_, t, h)| t - h).fold(0.0, f64::max);
        self.compute_ns + blocking + excess
    }
}

/// The overlap loop's paths (see the module doc).
fn overlap_paths(workload: &Workload, collectives: &[CollectiveTerm]) -> Vec<Path> {
    let of = |layer: usize, phase: PhaseKind| collectives.iter().position(|c| c.layer == layer && c.phase == phase);
    let forward_ns: f64 = workload.layers.iter().map(|l| l.forward.compute_ns).sum();
    // A forward or input-grad collective that hides under compute leaves
    // the compute stream for its communicator's stream.
    let hidden = |l: usize, phase: PhaseKind| workload.layers[l].phase(phase).hidden_ns > 0.0;
    let blocking_of = |l: usize, phase: PhaseKind| of(l, phase).filter(|_| !hidden(l, phase));
    let forward_colls: Vec<usize> = (0..workload.layers.len())
        .filter_map(|l| blocking_of(l, PhaseKind::Forward))
        .collect();
    // Backward order: last layer first.
    let backward: Vec<usize> = (0..workload.layers.len()).rev().collect();
    let mut paths = Vec::new();
    // Compute stream: everything but the weight-grad and hidden collectives.
    let mut blocking = forward_colls.clone();
    blocking.extend(backward.iter().filter_map(|&l| blocking_of(l, PhaseKind::InputGrad)));
    // Each hidden stream (communicator and kind) beside the compute it
    // hides under.
    let mut streams: Vec<((&Group, Hiding), f64, Vec<usize>)> = Vec::new();
    for (l, layer) in workload.layers.iter().enumerate() {
        for phase in [PhaseKind::Forward, PhaseKind::InputGrad] {
            let (Some(c), true) = (of(l, phase), hidden(l, phase)) else {
                continue;
            };
            let key = (&collectives[c].comm.group, layer.phase(phase).hidden_by);
            let h = layer.phase(phase).hidden_ns;
            match streams.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, hid, cs)) => {
                    *hid += h;
                    cs.push(c);
                }
                None => streams.push((key, h, vec![c])),
            }
        }
    }
    for (_, h, cs) in streams {
        let mut colls = blocking.clone();
        colls.extend(cs);
        paths.push(Path {
            constant_ns: workload.compute_ns() - h,
            collectives: colls,
        });
    }
    paths.insert(
        0,
        Path {
            constant_ns: workload.compute_ns(),
            collectives: blocking,
        },
    );
    // One path per weight-grad collective: the compute stream up to its issue,
    // then the FIFO stream from it to the end.
    let mut issued_ns = forward_ns;
    let mut issued_colls = forward_colls;
    for (k, &l) in backward.iter().enumerate() {
        let layer = &workload.layers[l];
        issued_ns += layer.input_grad.compute_ns + layer.weight_grad.compute_ns;
        issued_colls.extend(blocking_of(l, PhaseKind::InputGrad));
        if let Some(wg) = of(l, PhaseKind::WeightGrad) {
            let mut colls = issued_colls.clone();
            colls.push(wg);
            colls.extend(backward[k + 1..].iter().filter_map(|&j| of(j, PhaseKind::WeightGrad)));
            paths.push(Path {
                constant_ns: issued_ns,
                collectives: colls,
            });
        }
    }
    paths
}

impl crate::error::Named for Loop {
    const WHAT: &'static str = "a training loop";
    const ALL: &'static [Loop] = &[Loop::NoOverlap, Loop::Overlap];
    fn as_name(self) -> &'static str {
        self.name()
    }
}
crate::named!(Loop);

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::collective::TimeModel;
    use crate::model::fabric::{Block, tests::dim};
    use crate::model::workload::{CollectiveKind, Comm, Group, Layer, Phase};
    use approx::assert_relative_eq;

    fn phase(compute_ns: f64, bytes: f64) -> Phase {
        Phase {
            compute_ns,
            comm: (bytes > 0.0).then(|| Comm {
                kind: CollectiveKind::AllReduce,
                bytes,
                group: Group(vec![Some(2)]),
            }),
            ..Default::default()
        }
    }

    /// One switch dimension of 2 NPUs at 1 GB/s: an all-reduce of S bytes
    /// moves 2 S (1/2) = S bytes, so it takes S ns.
    fn two_layers() -> (Workload, Fabric, CollectiveModel) {
        let f = Fabric {
            dims: vec![dim("x", Block::Switch, 2, 0.0)],
        };
        let m = CollectiveModel::defaults(&f, TimeModel::Libra);
        let w = Workload {
            layers: vec![
                Layer {
                    name: "a".into(),
                    forward: phase(10.0, 0.0),
                    input_grad: phase(20.0, 0.0),
                    weight_grad: phase(30.0, 100.0),
                },
                Layer {
                    name: "b".into(),
                    forward: phase(1.0, 5.0),
                    input_grad: phase(2.0, 7.0),
                    weight_grad: phase(3.0, 40.0),
                },
            ],
        };
        (w, f, m)
    }

    #[test]
    fn no_overlap_adds_everything() {
        let (w, f, m) = two_layers();
        let it = IterationModel::new(&w, &f, &m, Loop::NoOverlap);
        // compute 10+20+30+1+2+3 = 66; comms 100+5+7+40 = 152.
        assert_relative_eq!(it.iteration_ns(&[1.0]), 218.0);
        // Doubling the bandwidth halves the comms: 66 + 76.
        assert_relative_eq!(it.iteration_ns(&[2.0]), 142.0);
    }

    #[test]
    fn overlap_by_hand() {
        let (w, f, m) = two_layers();
        let it = IterationModel::new(&w, &f, &m, Loop::Overlap);
        // Compute stream: fwd a 10, fwd b 1, comm 5 (t=16); backward b:
        // ig 2, comm 7 (t=25), wg 3 (t=28) -> issue wg_b (40 ns) at 28, done
        // at 68; backward a: ig 20 (t=48), wg 30 (t=78) -> issue wg_a (100)
        // at 78; the FIFO stream is free at 68, so wg_a ends at 178.
        // Compute stream ends at 78. Iteration = max(78, 178) = 178.
        assert_relative_eq!(it.iteration_ns(&[1.0]), 178.0);
        // At 10 GB/s the comms are wg_a 10, fwd_b 0.5, ig_b 0.7, wg_b 4:
        // wg_b is issued at 11 + 0.5 + 2 + 0.7 + 3 = 17.2 and ends at 21.2;
        // wg_a is issued at 17.2 + 20 + 30 = 67.2 and ends at 77.2, after the
        // compute stream (66 + 0.5 + 0.7 = 67.2).
        assert_relative_eq!(it.iteration_ns(&[10.0]), 77.2, max_relative = 1e-12);
        // Never slower than no overlap.
        let no = IterationModel::new(&w, &f, &m, Loop::NoOverlap);
        assert!(it.iteration_ns(&[1.0]) <= no.iteration_ns(&[1.0]));
    }

    /// Layer b's forward (5 bytes: 5 ns at 1 GB/s) and input-gradient (7)
    /// collectives hide under 8 ns of compute: they leave the compute
    /// stream and run beside it, one stream on their communicator.
    #[test]
    fn hidden_collectives_run_beside_their_compute() {
        let (mut w, f, m) = two_layers();
        w.layers[1].forward.hidden_ns = 4.0;
        w.layers[1].input_grad.hidden_ns = 4.0;
        w.layers[1].forward.hidden_by = Hiding::Products;
        w.layers[1].input_grad.hidden_by = Hiding::Products;
        let it = IterationModel::new(&w, &f, &m, Loop::Overlap);
        // At 1 GB/s the stream takes 5 + 7 = 12 ns beside 8 ns of compute:
        // 4 ns show. Compute stream 66 + 4 = 70; the weight-gradient
        // collectives as in overlap_by_hand (issued 5 + 7 ns earlier, the
        // hidden ones no longer on the way): wg_b issued at 16, done at
        // 56; wg_a issued at 66, done at 166.
        assert_relative_eq!(it.iteration_ns(&[1.0]), 166.0);
        // At 10 GB/s: 1.2 ns under 8: the compute stream alone, 66; wg_a
        // issued at 66 ends at 76.
        assert_relative_eq!(it.iteration_ns(&[10.0]), 76.0, max_relative = 1e-12);
        // The counted form: compute 66 + max(0, 12 - 8) = 70 at 1 GB/s,
        // the compute stream's path (no weight-gradient paths).
        let comms: Vec<(Comm, Issue, u64)> = w
            .comms()
            .map(|(l, k, c)| (c.clone(), Issue::of(k, w.layers[l].phase(k)), 1))
            .collect();
        let counted = Counted::new(w.compute_ns(), &comms, &f, &m);
        assert_relative_eq!(counted.iteration_ns(&[1.0], Loop::Overlap), 70.0);
        // LIBRA's loop overlaps nothing: 66 + 152.
        assert_relative_eq!(counted.iteration_ns(&[1.0], Loop::NoOverlap), 218.0);
        let no = IterationModel::new(&w, &f, &m, Loop::NoOverlap);
        assert_relative_eq!(no.iteration_ns(&[1.0]), 218.0);
    }

    #[test]
    fn lower_bound_below_time() {
        let (w, f, m) = two_layers();
        let it = IterationModel::new(&w, &f, &m, Loop::NoOverlap);
        // On one dimension the hierarchical model meets the bound exactly.
        assert_relative_eq!(it.lower_bound_ns(&[3.0]), it.iteration_ns(&[3.0]));
    }
}

//! Invariants of the analytic model, checked on random fabrics, workloads and
//! allocations (proptest).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::collective::{Algorithm, CollectiveModel, TimeModel};
use dimsum::model::cost::{CostModel, Linear, Tier};
use dimsum::model::fabric::{Block, Dim, Fabric};
use dimsum::model::training::{IterationModel, Loop};
use dimsum::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, Workload};
use proptest::prelude::*;

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![Just(Block::Ring), Just(Block::FullyConnected), Just(Block::Switch)]
}

fn kind() -> impl Strategy<Value = CollectiveKind> {
    prop_oneof![
        Just(CollectiveKind::AllReduce),
        Just(CollectiveKind::ReduceScatter),
        Just(CollectiveKind::AllGather),
        Just(CollectiveKind::AllToAll),
    ]
}

fn time_model() -> impl Strategy<Value = TimeModel> {
    prop_oneof![
        Just(TimeModel::Libra),
        Just(TimeModel::Pipelined),
        Just(TimeModel::Sequential)
    ]
}

fn lp() -> impl Strategy<Value = Loop> {
    prop_oneof![Just(Loop::NoOverlap), Just(Loop::Overlap)]
}

/// A fabric of 1..=4 dimensions with sizes from {2, 4, 8}.
fn fabric() -> impl Strategy<Value = Fabric> {
    prop::collection::vec((block(), prop::sample::select(vec![2u32, 4, 8]), 0.0..2000.0f64), 1..=4).prop_map(|ds| {
        Fabric {
            dims: ds
                .into_iter()
                .enumerate()
                .map(|(i, (block, npus, latency_ns))| Dim {
                    name: format!("d{i}"),
                    block,
                    npus,
                    latency_ns,
                    min_gbps: None,
                    max_gbps: None,
                    tier: format!("t{i}"),
                    options_gbps: None,
                    fat_tree: None,
                })
                .collect(),
        }
    })
}

/// A group on `f`: each dimension not involved, or a divisor of its size.
fn group(f: &Fabric, choice: &[u8]) -> Group {
    Group(
        f.dims
            .iter()
            .zip(choice)
            .map(|(d, c)| match c % 3 {
                0 => None,
                1 => Some(d.npus),
                _ => Some((d.npus / 2).max(1)),
            })
            .collect(),
    )
}

/// A workload of 1..=6 layers on `f`.
fn workload(f: Fabric) -> impl Strategy<Value = (Fabric, Workload)> {
    let n = f.ndims();
    let phase = || {
        (
            0.0..1e6f64,
            prop::option::of((kind(), 0.0..1e9f64, prop::collection::vec(any::<u8>(), n))),
        )
    };
    let layer = (phase(), phase(), phase());
    prop::collection::vec(layer, 1..=6).prop_map(move |ls| {
        let mk = |(compute_ns, c): (f64, Option<(CollectiveKind, f64, Vec<u8>)>)| Phase {
            compute_ns,
            comm: c.map(|(kind, bytes, g)| Comm {
                kind,
                bytes,
                group: group(&f, &g),
            }),
            ..Default::default()
        };
        let layers = ls
            .into_iter()
            .enumerate()
            .map(|(i, (a, b, c))| Layer {
                name: format!("l{i}"),
                forward: mk(a),
                input_grad: mk(b),
                weight_grad: mk(c),
            })
            .collect();
        (f.clone(), Workload { layers })
    })
}

fn model(f: &Fabric, tm: TimeModel, hd: bool) -> CollectiveModel {
    let mut m = CollectiveModel::defaults(f, tm);
    if hd {
        for (a, d) in m.algorithms.iter_mut().zip(&f.dims) {
            if Algorithm::HalvingDoubling.fits(d.block) {
                *a = Algorithm::HalvingDoubling;
            }
        }
    }
    m
}

fn bws(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1.0..1000.0f64, n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Raising any one dimension's bandwidth never raises the iteration time.
    #[test]
    fn more_bandwidth_is_never_slower(
        (f, w) in fabric().prop_flat_map(workload),
        tm in time_model(), l in lp(), hd in any::<bool>(),
        seed in bws(4), d in 0usize..4, factor in 1.0..10.0f64,
    ) {
        let it = IterationModel::new(&w, &f, &model(&f, tm, hd), l);
        let bw: Vec<f64> = seed[..f.ndims()].to_vec();
        let d = d % f.ndims();
        let mut more = bw.clone();
        more[d] *= factor;
        let (t0, t1) = (it.iteration_ns(&bw), it.iteration_ns(&more));
        prop_assert!(t1 <= t0 * (1.0 + 1e-12), "{t1} > {t0}");
        // And the lower bound stays below the time.
        prop_assert!(it.lower_bound_ns(&bw) <= t0 * (1.0 + 1e-12));
    }

    /// Under the libra time model, scaling every collective's size by k
    /// scales the communication time by k (no latency term).
    #[test]
    fn libra_time_is_linear_in_size(
        (f, w) in fabric().prop_flat_map(workload), seed in bws(4), k in 0.1..10.0f64,
    ) {
        let m = model(&f, TimeModel::Libra, false);
        let bw: Vec<f64> = seed[..f.ndims()].to_vec();
        let mut scaled = w.clone();
        for l in &mut scaled.layers {
            for p in [&mut l.forward, &mut l.input_grad, &mut l.weight_grad] {
                if let Some(c) = &mut p.comm {
                    c.bytes *= k;
                }
            }
        }
        let a = IterationModel::new(&w, &f, &m, Loop::NoOverlap);
        let b = IterationModel::new(&scaled, &f, &m, Loop::NoOverlap);
        let comm_a = a.iteration_ns(&bw) - a.compute_ns;
        let comm_b = b.iteration_ns(&bw) - b.compute_ns;
        prop_assert!((comm_b - k * comm_a).abs() <= 1e-9 * comm_b.abs().max(1.0), "{comm_b} vs {k} * {comm_a}");
    }

    /// Cost and power are linear: f(a x + b y) = a f(x) + b f(y).
    #[test]
    fn cost_and_power_are_linear(
        f in fabric(), prices in prop::collection::vec((0.0..100.0f64, 0.0..100.0f64, 0.0..100.0f64, 0.0..50.0f64), 4),
        x in bws(4), y in bws(4), a in 0.0..5.0f64, b in 0.0..5.0f64,
    ) {
        let mut cm = CostModel::default();
        for (i, (l, s, n, e)) in prices.iter().enumerate() {
            cm.tiers.insert(format!("t{i}"), Tier {
                link_usd_per_gbps: *l, switch_usd_per_gbps: *s, nic_usd_per_gbps: *n,
                link_pj_per_bit: *e, switch_pj_per_bit: e / 2.0, nic_pj_per_bit: e / 3.0,
            });
        }
        let lin = Linear::new(&f, &cm);
        let n = f.ndims();
        let z: Vec<f64> = (0..n).map(|i| a * x[i] + b * y[i]).collect();
        let close = |p: f64, q: f64| (p - q).abs() <= 1e-9 * p.abs().max(q.abs()).max(1.0);
        prop_assert!(close(lin.cost(&z), a * lin.cost(&x[..n]) + b * lin.cost(&y[..n])));
        prop_assert!(close(lin.power(&z), a * lin.power(&x[..n]) + b * lin.power(&y[..n])));
    }

    /// The overlap loop is never slower than the no-overlap loop and never
    /// faster than its compute.
    #[test]
    fn overlap_between_compute_and_no_overlap(
        (f, w) in fabric().prop_flat_map(workload), tm in time_model(), seed in bws(4),
    ) {
        let m = model(&f, tm, false);
        let bw: Vec<f64> = seed[..f.ndims()].to_vec();
        let no = IterationModel::new(&w, &f, &m, Loop::NoOverlap).iteration_ns(&bw);
        let ov = IterationModel::new(&w, &f, &m, Loop::Overlap);
        let t = ov.iteration_ns(&bw);
        prop_assert!(t <= no * (1.0 + 1e-12));
        prop_assert!(t >= ov.compute_ns * (1.0 - 1e-12));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A parametric accelerator's GEMM traffic never falls below each
    /// operand moved once, never rises with a larger buffer, and its time
    /// never falls below the array's peak; architects rely on "more buffer
    /// is never slower".
    #[test]
    fn tiled_gemm_is_bounded_and_monotone_in_the_buffer(
        m in 1.0..20_000.0f64, n in 1.0..20_000.0f64, k in 1.0..20_000.0f64,
        batch in 1.0..64.0f64, buffer_kib in 1.0..262_144.0f64, more in 1.0..16.0f64,
        width in 1u32..9, depth in 1u32..9, units in 1u32..512,
    ) {
        let (m, n, k, batch) = (m.round(), n.round(), k.round(), batch.round());
        let a = dimsum::model::arch::Arch {
            tensor_units: units,
            array_width: 1 << width,
            array_depth: 1 << depth,
            vector_units: 1,
            vector_width: 128,
            sram_mib: buffer_kib / 1024.0,
            hbm_stacks: 4,
            stack_gbps: 300.0,
            stack_gib: 8.0,
            clock_ghz: 1.0,
        };
        let bigger = dimsum::model::arch::Arch { sram_mib: a.sram_mib * more, ..a };
        let (d, e) = (a.device(1.0, 1.0), bigger.device(1.0, 1.0));
        let (o, p) = (d.onchip.unwrap(), e.onchip.unwrap());
        let once = batch * (m * k + k * n + m * n) * 2.0;
        let small = o.gemm_bytes(m, n, k, batch, 2.0);
        let large = p.gemm_bytes(m, n, k, batch, 2.0);
        prop_assert!(small >= once * (1.0 - 1e-12), "{small} < {once}");
        prop_assert!(large <= small * (1.0 + 1e-12), "{large} > {small}");
        let t = d.gemm_ns(m, n, k, batch, 2.0);
        prop_assert!(e.gemm_ns(m, n, k, batch, 2.0) <= t * (1.0 + 1e-12));
        // Peak: 2 FLOP per MAC per cycle at 1 GHz = 2 x MACs FLOP/ns.
        let peak = 2.0 * batch * m * n * k / (2.0 * a.macs());
        prop_assert!(t >= peak * (1.0 - 1e-12), "{t} < {peak}");
    }
}

/// Every way to cut `kinds` into `p` contiguous non-empty stages: each
/// stage's (dense, MoE) layers.
fn every_cut(kinds: &[bool], p: usize) -> Vec<Vec<(u64, u64)>> {
    fn go(kinds: &[bool], p: usize, from: usize, now: &mut Vec<(u64, u64)>, out: &mut Vec<Vec<(u64, u64)>>) {
        if now.len() == p - 1 {
            let moe = kinds[from..].iter().filter(|&&m| m).count() as u64;
            now.push(((kinds.len() - from) as u64 - moe, moe));
            out.push(now.clone());
            now.pop();
            return;
        }
        // Leave a layer for each stage after this one.
        for to in from + 1..=kinds.len() - (p - 1 - now.len()) {
            let moe = kinds[from..to].iter().filter(|&&m| m).count() as u64;
            now.push(((to - from) as u64 - moe, moe));
            go(kinds, p, to, now, out);
            now.pop();
        }
    }
    let mut out = Vec::new();
    go(kinds, p, 0, &mut Vec::new(), &mut out);
    out
}

fn linear(max: u32) -> impl Strategy<Value = dimsum::model::stages::Linear> {
    (0..=max, 0..=max, 0..=max).prop_map(|(f, d, m)| dimsum::model::stages::Linear {
        fixed: f64::from(f),
        dense: f64::from(d),
        moe: f64::from(m),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The pipeline stage cut is the best of every contiguous cut: its
    /// slowest stage equals brute force's least slowest, it fits where a
    /// cut fits, and it is a cut (every stage a layer or more, the layers
    /// in order); layers of one kind (the closed form) and mixed (the
    /// dynamic program) alike. Integer costs keep the sums exact.
    #[test]
    fn stage_cut_is_the_best_contiguous_cut(
        layers in 1usize..=9,
        devices in 1usize..=9,
        kind in 0u8..3,
        mixed in prop::collection::vec(any::<bool>(), 9),
        compute in prop::collection::vec(linear(30), 9),
        memory in prop::collection::vec(linear(12), 9),
        capacity in 0u32..100,
        shared in any::<bool>(),
    ) {
        use dimsum::model::stages::{cut, CutProblem};
        let p = devices.min(layers);
        // As a model's devices are: every layer costs the same on each,
        // only the fixed parts (the ends) differ.
        let mut compute = compute;
        if shared {
            let first = compute[0];
            for c in &mut compute {
                c.dense = first.dense;
                c.moe = first.moe;
            }
        }
        let kinds: Vec<bool> = (0..layers)
            .map(|l| match kind { 0 => false, 1 => true, _ => mixed[l] })
            .collect();
        let problem = CutProblem {
            moe: &kinds,
            compute: &compute[..p],
            memory: &memory[..p],
            capacity: f64::from(capacity),
        };
        let slowest = |c: &[(u64, u64)]| {
            c.iter().zip(problem.compute).map(|(&(d, m), x)| x.at(d, m)).fold(f64::NEG_INFINITY, f64::max)
        };
        let fits = |c: &[(u64, u64)]| {
            c.iter().zip(problem.memory).all(|(&(d, m), x)| x.at(d, m) <= problem.capacity)
        };
        let best = every_cut(&kinds, p)
            .iter()
            .filter(|c| fits(c))
            .map(|c| slowest(c))
            .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.min(t))));
        let got = cut(&problem);
        prop_assert_eq!(got.is_some(), best.is_some());
        if let (Some(got), Some(best)) = (got, best) {
            prop_assert!(every_cut(&kinds, p).contains(&got.layers), "{:?} is not a cut", got.layers);
            prop_assert!(fits(&got.layers));
            prop_assert_eq!(slowest(&got.layers), best);
            let (d, m) = got.layers[got.slowest];
            prop_assert_eq!(problem.compute[got.slowest].at(d, m), best);
            for k in got.slowest + 1..p {
                let (d, m) = got.layers[k];
                prop_assert!(problem.compute[k].at(d, m) < best, "a later stage is as slow");
            }
        }
    }
}

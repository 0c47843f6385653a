//! TACOS-style synthesis: TACOS's published test case, the ingress bound on
//! symmetric tori and meshes, the comparison with fixed algorithms, and
//! validity on random topologies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use approx::assert_relative_eq;
use assert_cmd::Command;
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::CollectiveKind::{self, AllGather, AllReduce, ReduceScatter};
use dimsum::schedule::Schedule;
use dimsum::schedule::bounds;
use dimsum::schedule::builtin::{self, Algo};
use dimsum::schedule::simulate::{self, LinkModel, SimOptions};
use dimsum::schedule::synth::{self, SynthOptions};
use proptest::prelude::*;
use std::path::Path;

fn sim(s: &Schedule, t: &Topology, size: f64, model: LinkModel) -> simulate::SimResult {
    simulate::simulate(
        s,
        t,
        &SimOptions {
            size_bytes: size,
            model,
            record: false,
        },
    )
    .unwrap()
}

fn opt(seed: u64, size: f64, k: u32) -> SynthOptions {
    SynthOptions {
        seed,
        size_bytes: size,
        chunks_per_npu: k,
    }
}

const GIB: f64 = 1_073_741_824.0;

/// TACOS's test case (astra-sim/tacos): a 5x5 mesh, 50 GiB/s and 0.5 us
/// links, one chunk per NPU, a 1 GiB all-gather: 9606 us.
///
/// A chunk is 2^30 / 25 B; one link moves it in (2^30 / 25) / (50 * 2^30 /
/// 1e9) ns = 1e9 / 1250 ns = 800 us, and it lands 0.5 us later: 800.5 us per
/// link step (TACOS's link model: busy until it lands). A corner NPU has
/// two links in and must receive the other 24 chunks, so each of its links
/// carries 12 of them one after another: 12 * 800.5 = 9606 us, which is
/// the best any schedule can do, and what the synthesis reaches.
#[test]
fn tacos_published_5x5_mesh() {
    let t = topology::from_spec("mesh:5x5", &[50.0 * GIB / 1e9], &[500.0]).unwrap();
    let step_ns = (GIB / 25.0) / (50.0 * GIB / 1e9) + 500.0;
    assert_relative_eq!(step_ns, 800_500.0, max_relative = 1e-12);
    let best = synth::best_of(&t, AllGather, &opt(0, GIB, 1), 20).unwrap();
    let r = sim(&best.schedule, &t, GIB, LinkModel::Tacos);
    assert!(r.valid, "{:?}", r.errors);
    assert!(
        (r.time_ns / 1e3 - 9606.0).abs() <= 0.01 * 9606.0,
        "{} us",
        r.time_ns / 1e3
    );
    assert_relative_eq!(r.time_ns, 12.0 * step_ns, max_relative = 1e-9);
    // The replay in TACOS's link model reproduces the synthesized time.
    assert_relative_eq!(r.time_ns, best.time_ns, max_relative = 1e-9);
    // Every seed gets there here, not only the best of 20.
    for seed in 0..5 {
        let s = synth::synthesize(&t, AllGather, &opt(seed, GIB, 1)).unwrap();
        assert_relative_eq!(s.time_ns, 12.0 * step_ns, max_relative = 1e-9);
    }
    // The bound: 24 chunks of 800 us through the corner's two links = 9600 us
    // (the ingress bound leaves out the latency).
    let b = bounds::lower_bounds(&t, AllGather, GIB);
    assert_relative_eq!(b.bound_ns, 24.0 * 800_000.0 / 2.0, max_relative = 1e-9);
    assert!(r.time_ns >= b.bound_ns);
}

/// On symmetric tori and meshes the synthesis meets the ingress bound in
/// whole link steps: an NPU with d links in needs ceil((N - 1) / d) steps.
/// 8x8 torus: ceil(63 / 4) = 16; 4x4x4 torus: ceil(63 / 6) = 11; 4x4 mesh
/// (corners have 2 links in): ceil(15 / 2) = 8.
#[test]
fn meets_the_ingress_bound_on_symmetric_tori_and_meshes() {
    for (spec, steps) in [
        ("torus:8x8", 16.0),
        ("torus:4x4x4", 11.0),
        ("mesh:4x4", 8.0),
        ("mesh:3x3", 4.0),
    ] {
        let t = topology::from_spec(spec, &[50.0], &[500.0]).unwrap();
        let size = 64.0 * 1_048_576.0;
        let step = size / f64::from(t.npus) / 50.0 + 500.0;
        let s = synth::best_of(&t, AllGather, &opt(0, size, 1), 4).unwrap();
        let r = sim(&s.schedule, &t, size, LinkModel::Tacos);
        assert!(r.valid);
        assert_relative_eq!(r.time_ns, steps * step, max_relative = 1e-9);
    }
}

/// Reduce-scatter is the all-gather reversed in time on the transposed
/// topology, so on a symmetric one it takes as long, and the all-reduce is
/// the two back to back.
#[test]
fn reduce_scatter_is_the_time_reversed_all_gather() {
    let t = topology::from_spec("torus:4x3", &[40.0], &[300.0]).unwrap();
    let size = 12e6;
    let ag = synth::synthesize(&t, AllGather, &opt(3, size, 2)).unwrap();
    let rs = synth::synthesize(&t, ReduceScatter, &opt(3, size, 2)).unwrap();
    let ar = synth::synthesize(&t, AllReduce, &opt(3, size, 2)).unwrap();
    assert_eq!(ag.schedule.transfers.len(), rs.schedule.transfers.len());
    let (a, r, all) = (
        sim(&ag.schedule, &t, size, LinkModel::Tacos),
        sim(&rs.schedule, &t, size, LinkModel::Tacos),
        sim(&ar.schedule, &t, size, LinkModel::Tacos),
    );
    assert!(a.valid && r.valid && all.valid, "{:?}", r.errors);
    assert_relative_eq!(r.time_ns, rs.time_ns, max_relative = 1e-9);
    assert!(all.time_ns <= a.time_ns + r.time_ns + 1e-6);
    // Same seed, same schedule.
    assert_eq!(
        synth::synthesize(&t, AllReduce, &opt(3, size, 2)).unwrap().schedule,
        ar.schedule
    );
}

/// The synthesized all-reduce beats the ring and the hierarchical schedules
/// on 2D and 3D tori and on heterogeneous meshes (64 MiB, alpha-beta links).
#[test]
fn synthesized_all_reduce_beats_fixed_algorithms() {
    let size = 64.0 * 1_048_576.0;
    for (spec, gbps) in [
        ("torus:4x4x4", vec![50.0]),
        ("torus:8x8", vec![50.0]),
        ("mesh:4x4", vec![100.0, 25.0]),
        ("mesh:4x4x4", vec![100.0, 50.0, 25.0]),
        ("torus:4x8", vec![100.0, 25.0]),
    ] {
        let t = topology::from_spec(spec, &gbps, &[500.0]).unwrap();
        let time = |s: &Schedule| {
            let r = sim(s, &t, size, LinkModel::AlphaBeta);
            assert!(r.valid);
            r.time_ns
        };
        let tacos = time(&synth::best_of(&t, AllReduce, &opt(0, size, 1), 4).unwrap().schedule);
        let algos: Vec<Algo> = t.dims.iter().map(|d| Algo::default_for(d.kind)).collect();
        let ring = time(&builtin::build(&t, AllReduce, Algo::Ring, None, 1).unwrap());
        for k in [1, 4] {
            let hier = time(&builtin::build(&t, AllReduce, Algo::Ring, Some(&algos), k).unwrap());
            assert!(tacos < hier, "{spec}: synthesized {tacos} vs hierarchical x{k} {hier}");
        }
        assert!(tacos < ring, "{spec}: synthesized {tacos} vs ring {ring}");
        assert!(tacos >= bounds::lower_bounds(&t, AllReduce, size).bound_ns);
    }
}

#[test]
fn switches_relay_and_all_to_all_is_refused() {
    let t = topology::from_spec("switch:6", &[50.0], &[500.0]).unwrap();
    let s = synth::synthesize(&t, AllReduce, &opt(1, 6e6, 1)).unwrap();
    let r = sim(&s.schedule, &t, 6e6, LinkModel::AlphaBeta);
    assert!(r.valid);
    // Every transfer goes up and down through the switch.
    assert!(s.schedule.transfers.iter().all(|x| x.route.len() == 2));
    assert!(synth::synthesize(&t, CollectiveKind::AllToAll, &opt(1, 6e6, 1)).is_err());
}

/// A random strongly connected edge list: a bidirectional spanning tree
/// (different bandwidth each way), extra one-way links, and sometimes a
/// switch joining some NPUs.
fn random_topology(n: u32, seed: u64) -> Topology {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut text = String::new();
    for v in 1..n {
        let u = (next() % u64::from(v)) as u32;
        let (a, b, lat) = (1 + next() % 100, 1 + next() % 100, next() % 1000);
        text += &format!("{u} -> {v} {a} {lat}\n{v} -> {u} {b} {lat}\n");
    }
    for _ in 0..next() % (u64::from(n) + 1) {
        let (u, v) = ((next() % u64::from(n)) as u32, (next() % u64::from(n)) as u32);
        if u != v {
            text += &format!("{u} -> {v} {} {}\n", 1 + next() % 100, next() % 1000);
        }
    }
    if n >= 3 && next() % 2 == 0 {
        for v in 0..n {
            if next() % 2 == 0 {
                text += &format!("{v} <-> s0 {} 100\n", 1 + next() % 100);
            }
        }
    }
    Topology::parse_edges(&text, Path::new("random")).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every synthesized schedule on a random connected topology (random
    /// sizes, bandwidths, asymmetric links, a switch) is valid in both link
    /// models and never beats the lower bound.
    #[test]
    fn synthesized_schedules_are_valid(n in 2u32..10, topo_seed in any::<u64>(), seed in any::<u64>(), kind in 0usize..3, k in 1u32..3) {
        let t = random_topology(n, topo_seed);
        let kind = [AllGather, ReduceScatter, AllReduce][kind];
        let size = 1e6;
        let s = synth::synthesize(&t, kind, &opt(seed, size, k)).unwrap();
        let b = bounds::lower_bounds(&t, kind, size);
        for model in [LinkModel::AlphaBeta, LinkModel::Tacos] {
            let r = sim(&s.schedule, &t, size, model);
            prop_assert!(r.valid, "{kind} on {n} NPUs: {:?}", r.errors);
            prop_assert!(r.time_ns >= b.bound_ns * (1.0 - 1e-9));
        }
    }
}

#[test]
fn cli_tacos() {
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .args([
            "collective",
            "--topology",
            "mesh:5x5",
            "--link-gbps",
            "50GiB/s",
            "--link-latency-us",
            "0.5",
        ])
        .args([
            "--size",
            "1GiB",
            "--collective",
            "all-gather",
            "--algorithm",
            "tacos",
            "--link-model",
            "tacos",
        ])
        .args(["--restarts", "3", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_relative_eq!(v["time_us"].as_f64().unwrap(), 9606.0, max_relative = 1e-9);
    assert_eq!(v["algorithm"], "tacos");
    let bad = Command::cargo_bin("dimsum")
        .unwrap()
        .args([
            "collective",
            "--topology",
            "ring:4",
            "--size",
            "1MB",
            "--algorithm",
            "tacos",
            "--collective",
            "all-to-all",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

//! The exact cut bound (`schedule::cut`): closed forms on rings, tori and
//! meshes, the heterogeneous 5x5 mesh of issue 21, brute force over every
//! node subset of random small networks with switches and asymmetric links,
//! and never above a valid schedule's time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

mod common;
use common::random_network;

use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::CollectiveKind::{self, AllGather, AllReduce, ReduceScatter};
use dimsum::schedule::algorithm::{self, Algorithm, Options};
use dimsum::schedule::bounds::{self, exact_cut};
use dimsum::schedule::simulate::{self, LinkModel, SimOptions};
use proptest::prelude::*;
use std::path::Path;

const GIB: f64 = 1_073_741_824.0;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[test]
fn rings_tori_and_meshes_have_the_ingress_bound() {
    // Ring of 8 at 50 GB/s per direction: an NPU takes 100 GB/s in and needs
    // 7 shards of M/8: 7/8 M / 100 GB/s.
    let r = topology::from_spec("ring:8", &[50.0], &[0.0]).unwrap();
    let c = exact_cut(&r, AllGather).unwrap();
    assert!(close(c.ns_per_byte, 7.0 / 8.0 / 100.0), "{}", c.ns_per_byte);
    // Reduce-scatter is the time-reversed all-gather: the same.
    assert!(close(
        exact_cut(&r, ReduceScatter).unwrap().ns_per_byte,
        7.0 / 8.0 / 100.0
    ));
    // All-reduce: the least cut with NPUs on both sides is two ring links
    // each way (100 GB/s): M / 100.
    assert!(close(exact_cut(&r, AllReduce).unwrap().ns_per_byte, 1.0 / 100.0));
    // 4x4 torus at 50: 4 links in, 200 GB/s, 15/16 M.
    let t = topology::from_spec("torus:4x4", &[50.0], &[0.0]).unwrap();
    assert!(close(
        exact_cut(&t, AllGather).unwrap().ns_per_byte,
        15.0 / 16.0 / 200.0
    ));
    // 3x3 mesh: a corner has 2 links in (100 GB/s) and needs 8/9 M.
    let m = topology::from_spec("mesh:3x3", &[50.0], &[0.0]).unwrap();
    let c = exact_cut(&m, AllGather).unwrap();
    assert!(close(c.ns_per_byte, 8.0 / 9.0 / 100.0));
    assert_eq!(c.set.len(), 1, "{:?}", c.set);
}

#[test]
fn heterogeneous_mesh_of_issue_21() {
    // mesh:5x5 at 50 and 75 GiB/s: a corner NPU takes 50 + 75 = 125 GiB/s
    // and needs 24/25 GiB of a 1 GiB all-gather: 7,680 us.
    let t = topology::from_spec("mesh:5x5", &[50.0 * GIB / 1e9, 75.0 * GIB / 1e9], &[500.0]).unwrap();
    let b = bounds::lower_bounds(&t, AllGather, GIB);
    let want_ns = (24.0 / 25.0) / 125.0 * 1e9;
    assert!(
        close(b.cut_ns.max(b.injection_ns), want_ns),
        "{} {}",
        b.cut_ns,
        b.injection_ns
    );
    assert!(close(exact_cut(&t, AllGather).unwrap().ns_per_byte * GIB, want_ns));
}

#[test]
fn a_slow_link_between_two_switched_halves() {
    // Two groups of 3 NPUs, each on its own switch at 100 GB/s per NPU, the
    // switches joined by one 10 GB/s link each way. S = one group and its
    // switch: the other group's 3 shards of M/6 must enter through 10 GB/s,
    // (3/6) M / 10 = M / 20. The per-NPU ingress bound is only
    // (5/6) M / 100 = M / 120.
    let mut text = String::new();
    for v in 0..3 {
        text.push_str(&format!("{v} <-> s0 100 0\n"));
    }
    for v in 3..6 {
        text.push_str(&format!("{v} <-> s1 100 0\n"));
    }
    text.push_str("s0 <-> s1 10 0\n");
    let t = Topology::parse_edges(&text, Path::new("two.txt")).unwrap();
    let c = exact_cut(&t, AllGather).unwrap();
    assert!(close(c.ns_per_byte, 0.5 / 10.0), "{}", c.ns_per_byte);
    // S is one group with its switch (3 NPUs + 1 switch).
    assert_eq!(c.set.len(), 4, "{:?}", c.set);
    let b = bounds::lower_bounds(&t, AllGather, 6e6);
    assert_eq!(b.cut, "exact");
    assert!(close(b.cut_ns, 6e6 / 20.0));
    // All-reduce: the whole vector through 10 GB/s.
    assert!(close(exact_cut(&t, AllReduce).unwrap().ns_per_byte, 1.0 / 10.0));
}

/// The cut bound by brute force over every node subset, ns per byte.
fn brute(t: &Topology, kind: CollectiveKind) -> f64 {
    let n = t.npus as usize;
    let nodes = t.nodes() as usize;
    let mut best: f64 = 0.0;
    for mask in 1u32..(1u32 << nodes) - 1 {
        let inside = |v: u32| mask >> v & 1 == 1;
        let npus_in = (0..n as u32).filter(|&v| inside(v)).count();
        let (mut bin, mut bout) = (0.0, 0.0);
        for l in &t.links {
            if !inside(l.src) && inside(l.dst) {
                bin += l.gbps;
            }
            if inside(l.src) && !inside(l.dst) {
                bout += l.gbps;
            }
        }
        let nf = n as f64;
        let v = match kind {
            AllGather if npus_in >= 1 => (nf - npus_in as f64) / nf / bin,
            ReduceScatter if npus_in >= 1 => (nf - npus_in as f64) / nf / bout,
            AllReduce if npus_in >= 1 && npus_in < n => 1.0 / bin.min(bout),
            _ => 0.0,
        };
        if v.is_finite() {
            best = best.max(v);
        }
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The max-flow bound equals brute force over all node subsets.
    #[test]
    fn exact_cut_equals_brute_force(
        n in 2u32..8, k in 0u32..4,
        ring in proptest::collection::vec(1.0..100.0f64, 12),
        extra in proptest::collection::vec((0u32..12, 0u32..12, 1.0..100.0f64), 0..14),
    ) {
        let t = random_network(n, k, &extra, &ring);
        for kind in [AllGather, ReduceScatter, AllReduce] {
            let c = exact_cut(&t, kind).unwrap();
            let b = brute(&t, kind);
            prop_assert!((c.ns_per_byte - b).abs() <= 1e-9 * b, "{kind:?}: {} vs {}", c.ns_per_byte, b);
        }
    }

    /// No valid schedule beats the bound: TACOS-style synthesis and the
    /// ring on random networks.
    #[test]
    fn bound_never_above_a_valid_schedule(
        n in 2u32..7, k in 0u32..3,
        ring in proptest::collection::vec(1.0..100.0f64, 10),
        extra in proptest::collection::vec((0u32..10, 0u32..10, 1.0..100.0f64), 0..10),
    ) {
        let t = random_network(n, k, &extra, &ring);
        let size = 6e6;
        for kind in [AllGather, ReduceScatter, AllReduce] {
            let b = bounds::lower_bounds(&t, kind, size);
            for alg in [Algorithm::Tacos, Algorithm::Ring] {
                // Two chunks per NPU, fixed: the default lets tacos double
                // its chunk count while the replay improves, which on these
                // 2-6 NPU networks goes to thousands of chunks (minutes).
                let opt = Options { size_bytes: size, chunks_per_npu: 2, ..Options::default() };
                let Ok(s) = algorithm::build(&t, kind, alg, &opt) else { continue };
                let sim = simulate::simulate(&s, &t, &SimOptions { size_bytes: size, model: LinkModel::AlphaBeta, record: false, reduce_gbps: None }).unwrap();
                if sim.valid {
                    prop_assert!(sim.time_ns >= b.bound_ns * (1.0 - 1e-9), "{kind:?} {alg}: {} < {}", sim.time_ns, b.bound_ns);
                }
            }
        }
    }
}

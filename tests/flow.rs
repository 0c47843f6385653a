//! `flow`: all-to-all along an optimal multi-commodity flow, its linear
//! program checked against closed forms (rings, tori, a one-way ring by
//! hand), the product symmetry against the general program, and the
//! schedule replayed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

mod common;
use common::random_network;

use dimsum::model::topology::{Topology, from_spec};
use dimsum::model::workload::CollectiveKind::{AllGather, AllToAll};
use dimsum::schedule::algorithm::Algorithm;
use dimsum::schedule::flow;
use proptest::prelude::*;
use std::path::Path;

const MIB64: f64 = 64.0 * 1024.0 * 1024.0;

fn replay(t: &Topology, size: f64) -> (f64, f64) {
    common::replay(t, AllToAll, Algorithm::Flow, 1, size)
}

#[test]
fn the_program_meets_closed_forms() {
    // ring:8 at 50 GB/s each way, M per NPU, pieces p = M / 8: the two
    // halves exchange 4 x 4 = 16 pieces each way over 2 links: 8 p / 50.
    let t = from_spec("ring:8", &[50.0], &[0.0]).unwrap();
    let want = 8.0 * (MIB64 / 8.0) / 50.0;
    assert!((flow::bound_ns_per_byte(&t).unwrap() * MIB64 - want).abs() < 1e-6 * want);
    // ring:7: the shortest paths of one source sum 2 (1 + 2 + 3) = 12 hops,
    // 7 x 12 = 84 piece-hops over 14 links: 6 p / 50, p = M / 7.
    let t = from_spec("ring:7", &[50.0], &[0.0]).unwrap();
    let want = 6.0 * (MIB64 / 7.0) / 50.0;
    assert!((flow::bound_ns_per_byte(&t).unwrap() * MIB64 - want).abs() < 1e-6 * want);
    // torus:4x4: a source's shortest paths sum 4 x 4 + 4 x 4 = 32 hops,
    // 16 x 32 = 512 piece-hops over 64 links: 8 p / 50, p = M / 16 (the
    // bisection gives the same: 8 x 8 pieces over 8 links each way).
    let t = from_spec("torus:4x4", &[50.0], &[0.0]).unwrap();
    let want = 8.0 * (MIB64 / 16.0) / 50.0;
    assert!((flow::bound_ns_per_byte(&t).unwrap() * MIB64 - want).abs() < 1e-6 * want);
}

#[test]
fn a_one_way_ring_by_hand() {
    // 0 -> 1 at 10, 1 -> 2 at 20, 2 -> 0 at 40 GB/s: every pair has one
    // path, so each link carries three pieces (its own pair and the two
    // two-hop pairs through it): the 10 GB/s link takes 3 p / 10, p = M / 3.
    let t = Topology::parse_edges("0 -> 1 10 0\n1 -> 2 20 0\n2 -> 0 40 0\n", Path::new("t.txt")).unwrap();
    let m = 3e6;
    let want = 3.0 * (m / 3.0) / 10.0;
    assert!((flow::bound_ns_per_byte(&t).unwrap() * m - want).abs() < 1e-6 * want);
    let f = flow::solve(&t).unwrap();
    assert!(!f.symmetric);
    let two_hop = f.paths.iter().find(|p| (p.src, p.dst) == (0, 2)).unwrap();
    assert_eq!(two_hop.links.len(), 2);
    assert_eq!(two_hop.share, 1.0);
}

#[test]
fn the_symmetric_program_equals_the_general_one() {
    // A 3x4 torus with 20 / 70 GB/s links as dimensions (one commodity and
    // a row per link class) and as an edge list (a commodity per NPU and a
    // row per link): the same optimum.
    let t = Topology::torus(&[3, 4], true, &[20.0, 70.0], &[0.0, 0.0]);
    let mut text = String::new();
    for l in &t.links {
        text.push_str(&format!("{} -> {} {} 0\n", l.src, l.dst, l.gbps));
    }
    let e = Topology::parse_edges(&text, Path::new("t.txt")).unwrap();
    let (a, b) = (flow::solve(&t).unwrap(), flow::solve(&e).unwrap());
    assert!(a.symmetric && !b.symmetric);
    assert!((a.ns_per_byte - b.ns_per_byte).abs() < 1e-6 * b.ns_per_byte);
}

#[test]
fn flow_replays_at_its_bound_on_rings_tori_and_switches() {
    for (spec, gbps) in [
        ("ring:8", vec![50.0]),
        ("torus:4x4", vec![50.0]),
        ("torus:4x3", vec![20.0, 70.0]),
        ("switch:8", vec![100.0]),
        ("fc:6", vec![30.0]),
    ] {
        let t = from_spec(spec, &gbps, &[0.0]).unwrap();
        let (time, bound) = replay(&t, MIB64);
        let lp = flow::bound_ns_per_byte(&t).unwrap() * MIB64;
        assert!(bound >= lp * (1.0 - 1e-9), "{spec}: the bound includes the program's");
        assert!(time >= bound * (1.0 - 1e-9), "{spec}");
        assert!(time <= bound * 1.02, "{spec}: {:.4}", time / bound);
    }
}

#[test]
fn flow_refuses_other_collectives() {
    let t = from_spec("ring:4", &[50.0], &[0.0]).unwrap();
    let e = flow::build(&t, AllGather, 0).unwrap_err().to_string();
    assert!(e.contains("all-to-all"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On random networks with switches and asymmetric links the program's
    /// time is never below the per-NPU ingress and egress bound (each NPU
    /// sends and receives N - 1 pieces), and the schedule replays valid
    /// and never faster than the program.
    #[test]
    fn flow_is_valid_and_bounded_on_random_networks(
        n in 2u32..7, k in 0u32..3,
        ring in proptest::collection::vec(1.0..100.0f64, 10),
        extra in proptest::collection::vec((0u32..10, 0u32..10, 1.0..100.0f64), 0..10),
    ) {
        let t = random_network(n, k, &extra, &ring);
        let m = 1e8;
        let lp = flow::bound_ns_per_byte(&t).unwrap() * m;
        let piece = m / f64::from(n);
        for r in 0..n {
            let (inn, out) = t.io_gbps(r);
            let need = f64::from(n - 1) * piece;
            prop_assert!(lp >= (need / inn).max(need / out) * (1.0 - 1e-6));
        }
        let (time, bound) = replay(&t, m);
        prop_assert!(bound >= lp * (1.0 - 1e-9));
        prop_assert!(time >= bound * (1.0 - 1e-9));
    }
}

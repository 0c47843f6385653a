//! `forest`: spanning-tree packings at the exact cut rate, worked by hand on
//! a 3-node and a 4-node network, and schedules that meet the cut bound on
//! rings, tori, heterogeneous meshes, switches and random networks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

mod common;
use common::random_network;

use dimsum::model::topology::{Topology, from_spec};
use dimsum::model::workload::CollectiveKind::{self, AllGather, AllReduce, ReduceScatter};
use dimsum::schedule::algorithm::Algorithm;
use dimsum::schedule::bounds::exact_cut;
use dimsum::schedule::forest::{self, Forest};
use proptest::prelude::*;
use std::path::Path;

fn edges(text: &str) -> Topology {
    Topology::parse_edges(text, Path::new("t.txt")).unwrap()
}

/// Every root's trees sum to the rate, every tree spans the NPUs, and no
/// arc carries more than its capacity.
fn check_packing(f: &Forest, n: u32) {
    for r in 0..n {
        let w: f64 = f.trees.iter().filter(|t| t.root == r).map(|t| t.weight).sum();
        assert!((w - f.rate).abs() <= 1e-3 * f.rate, "root {r}: {w} vs {}", f.rate);
    }
    let mut load = vec![0.0; f.arcs.len()];
    for t in &f.trees {
        assert_eq!(t.arcs.len() as u32, n - 1, "a spanning tree has n - 1 arcs");
        let mut reached = vec![false; n as usize];
        reached[t.root as usize] = true;
        for &e in &t.arcs {
            let a = &f.arcs[e as usize];
            assert!(
                reached[a.src as usize] && !reached[a.dst as usize],
                "arc {e} out of order"
            );
            reached[a.dst as usize] = true;
            load[e as usize] += t.weight;
        }
    }
    for (a, l) in f.arcs.iter().zip(&load) {
        assert!(*l <= a.gbps * (1.0 + 1e-9), "{}->{}: {l} > {}", a.src, a.dst, a.gbps);
    }
}

/// No physical link carries more than its bandwidth, summed over every arc
/// routed through it (what splitting a switch must keep).
fn check_links(f: &Forest, t: &Topology) {
    let mut load = vec![0.0; t.links.len()];
    for tree in &f.trees {
        for &e in &tree.arcs {
            for &l in &f.arcs[e as usize].route {
                load[l as usize] += tree.weight;
            }
        }
    }
    for (l, x) in t.links.iter().zip(&load) {
        assert!(*x <= l.gbps * (1.0 + 1e-6), "{}->{}: {x} > {}", l.src, l.dst, l.gbps);
    }
}

#[test]
fn three_nodes_on_a_one_way_ring() {
    // 0 -> 1 -> 2 -> 0 at 10 GB/s. Each NPU has 10 GB/s coming in and needs
    // 2 shards: x = 10 / 2 = 5 GB/s per shard. The only spanning tree of
    // root 0 is the chain 0 -> 1 -> 2, so every root gets one chain of
    // weight 5, and every link carries two chains: 2 x 5 = 10, full.
    let t = edges("0 -> 1 10 0\n1 -> 2 10 0\n2 -> 0 10 0\n");
    let f = forest::forest(&t, false).unwrap();
    assert!((f.rate - 5.0).abs() < 1e-4, "{}", f.rate);
    assert_eq!(f.trees.len(), 3);
    for tree in &f.trees {
        let chain: Vec<(u32, u32)> = tree
            .arcs
            .iter()
            .map(|&e| (f.arcs[e as usize].src, f.arcs[e as usize].dst))
            .collect();
        let r = tree.root;
        assert_eq!(chain, vec![(r, (r + 1) % 3), ((r + 1) % 3, (r + 2) % 3)]);
        assert!((tree.weight - 5.0).abs() < 1e-4);
    }
    check_packing(&f, 3);
}

#[test]
fn four_nodes_on_a_two_way_ring() {
    // A ring of 4, 10 GB/s each way. An NPU has 2 x 10 = 20 GB/s coming in
    // and 3 shards to receive: x = 20 / 3. A spanning tree of 4 nodes has 3
    // arcs, so the 4 roots need 4 x 3 x 20/3 = 80 GB/s of arcs: all 8 links
    // at 10, every link full. Root 0's trees are e.g. {0->1, 1->2, 0->3}
    // and {0->1, 0->3, 3->2} at 10/3 each.
    let t = from_spec("ring:4", &[10.0], &[0.0]).unwrap();
    let f = forest::forest(&t, false).unwrap();
    assert!((f.rate - 20.0 / 3.0).abs() < 1e-4, "{}", f.rate);
    check_packing(&f, 4);
    let mut load = vec![0.0; f.arcs.len()];
    for tree in &f.trees {
        for &e in &tree.arcs {
            load[e as usize] += tree.weight;
        }
    }
    for l in load {
        assert!((l - 10.0).abs() < 1e-3, "every link is full: {l}");
    }
    // The split lost nothing (no switches).
    assert!((f.split_loss - 1.0).abs() < 1e-5);
}

#[test]
fn a_switch_is_split_into_routes_through_it() {
    // 4 NPUs on one switch at 30 GB/s each way: every NPU's 30 GB/s out is
    // split over the 3 others, 10 each, each arc routed NPU -> switch -> NPU.
    let t = from_spec("switch:4", &[30.0], &[0.0]).unwrap();
    let arcs = forest::split(&t, false);
    assert_eq!(arcs.len(), 12);
    for a in &arcs {
        assert!((a.gbps - 10.0).abs() < 1e-9, "{a:?}");
        assert_eq!(a.route.len(), 2);
        assert_eq!(t.links[a.route[0] as usize].src, a.src);
        assert_eq!(t.links[a.route[1] as usize].dst, a.dst);
    }
    // The complete graph at 10 keeps the ingress bound: 30 / 3 = 10.
    let f = forest::forest(&t, false).unwrap();
    assert!((f.rate - 10.0).abs() < 1e-4);
    check_packing(&f, 4);
    check_links(&f, &t);
}

/// Replays the forest schedule of `kind` on `t` (k pieces per tree, 0 =
/// chosen) with a buffer of `size`: its time and the topology's bound.
fn replay(t: &Topology, kind: CollectiveKind, k: u32, size: f64) -> (f64, f64) {
    common::replay(t, kind, Algorithm::Forest, k, size)
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[test]
fn forest_meets_the_cut_bound_within_one_percent() {
    // No latency: the bound is the bandwidth term alone.
    for (spec, gbps) in [
        ("ring:8", vec![50.0]),
        ("torus:4x4", vec![50.0]),
        ("mesh:5x5", vec![50.0 * 1.073_741_824, 75.0 * 1.073_741_824]),
        ("switch:8", vec![100.0]),
    ] {
        let t = from_spec(spec, &gbps, &[0.0]).unwrap();
        for kind in [AllGather, ReduceScatter] {
            let (time, bound) = replay(&t, kind, 0, GIB);
            assert!(time >= bound * (1.0 - 1e-9), "{spec} {kind:?}");
            assert!(time <= bound * 1.01, "{spec} {kind:?}: {:.4}", time / bound);
        }
    }
    // The mesh: 5x5 at 50 and 75 GiB/s, 1 GiB: the bound is 7,680
    // us (a corner NPU has 125 GiB/s coming in and needs 24/25 GiB).
    let t = from_spec("mesh:5x5", &[50.0 * 1.073_741_824, 75.0 * 1.073_741_824], &[0.0]).unwrap();
    let (time, bound) = replay(&t, AllGather, 0, GIB);
    assert!((bound / 1e3 - 7680.0).abs() < 1e-6 * 7680.0, "{bound}");
    assert!(time / 1e3 < 7680.0 * 1.01, "{}", time / 1e3);
}

#[test]
fn two_switched_halves_are_limited_by_their_link() {
    // Three NPUs per switch at 100 GB/s, the switches joined at 10 GB/s:
    // the exact cut is M / 20 (see tests/cut.rs). The split keeps it.
    let mut text = String::new();
    for v in 0..3 {
        text.push_str(&format!("{v} <-> s0 100 0\n"));
    }
    for v in 3..6 {
        text.push_str(&format!("{v} <-> s1 100 0\n"));
    }
    text.push_str("s0 <-> s1 10 0\n");
    let t = edges(&text);
    let f = forest::forest(&t, false).unwrap();
    check_packing(&f, 6);
    check_links(&f, &t);
    assert!(f.split_loss < 1.0 + 1e-5, "{}", f.split_loss);
    let (time, bound) = replay(&t, AllGather, 0, 6e8);
    assert!((bound - 6e8 / 20.0).abs() < 1e-6 * bound);
    assert!(time <= bound * 1.01, "{:.4}", time / bound);
}

#[test]
fn all_reduce_is_the_reduce_scatter_then_the_all_gather() {
    // On a ring of 8 at 50 GB/s each way the reduce-scatter and the
    // all-gather each take (7/8) M / 100 at best; the all-reduce is their
    // sum, 2 (7/8) M / 100, within 1%.
    let t = from_spec("ring:8", &[50.0], &[0.0]).unwrap();
    let (time, _) = replay(&t, AllReduce, 0, GIB);
    let want = 2.0 * 7.0 / 8.0 * GIB / 100.0;
    assert!(time >= want * (1.0 - 1e-9) && time <= want * 1.01, "{:.4}", time / want);
}

#[test]
fn too_many_npus_and_all_to_all_are_refused() {
    // A random network of 300 NPUs is not a product network, so it takes
    // the general packing, capped at 256 NPUs. (A 16x16 mesh is a product
    // now: its trees are built, tests/product.rs.)
    let t = random_network(300, 0, &[(0, 150, 10.0)], &[50.0; 300]);
    let e = forest::build(&t, AllGather, 0, 1e6).unwrap_err().to_string();
    assert!(e.contains("at most 256 NPUs") && e.contains("300"), "{e}");
    let mesh = from_spec("mesh:16x16", &[50.0], &[0.0]).unwrap();
    assert!(forest::build(&mesh, AllGather, 1, 1e6).is_ok());
    // Above 64 NPUs only sparse networks: 70 NPUs on a ring with 9 chords
    // each (10 arcs per NPU) are refused before packing, the limit named.
    let chords: Vec<(u32, u32, f64)> = (0..70u32)
        .flat_map(|v| (1..10u32).map(move |j| (v, (v + 7 * j) % 70, 20.0)))
        .collect();
    let dense = random_network(70, 0, &chords, &[50.0; 70]);
    let e = forest::build(&dense, AllGather, 0, 1e6).unwrap_err().to_string();
    assert!(e.contains("at most 8 arcs per NPU") && e.contains("700"), "{e}");
    let t = from_spec("ring:4", &[50.0], &[0.0]).unwrap();
    let e = forest::build(&t, CollectiveKind::AllToAll, 0, 1e6)
        .unwrap_err()
        .to_string();
    assert!(e.contains("all-to-all"), "{e}");
}

#[test]
fn a_sparse_random_network_above_64_npus_meets_its_cut() {
    // 96 NPUs on a two-way ring at 20-100 GB/s with a one-way chord each
    // (from a fixed stream): the general packing, replayed at 1 GiB, is
    // valid and within 2% of the exact cut (max-flow over every node set).
    let mut x = 7u64;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let n = 96u32;
    let ring: Vec<f64> = (0..n).map(|_| 20.0 + next(81) as f64).collect();
    let chords: Vec<(u32, u32, f64)> = (0..n)
        .map(|v| (v, (v + 2 + next(u64::from(n) - 3) as u32) % n, 20.0 + next(81) as f64))
        .collect();
    let t = random_network(n, 0, &chords, &ring);
    let cut = exact_cut(&t, AllGather).unwrap().ns_per_byte * GIB;
    let (time, bound) = replay(&t, AllGather, 0, GIB);
    assert!(bound >= cut * (1.0 - 1e-9));
    assert!(time >= bound * (1.0 - 1e-9));
    assert!(time <= cut * 1.02, "{:.4}", time / cut);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On random networks with switches and asymmetric links the packing
    /// is valid and never faster than the exact cut, and its schedule is
    /// valid and never faster than the bound.
    #[test]
    fn forest_is_valid_on_random_networks_with_switches(
        n in 2u32..7, k in 0u32..3,
        ring in proptest::collection::vec(1.0..100.0f64, 10),
        extra in proptest::collection::vec((0u32..10, 0u32..10, 1.0..100.0f64), 0..10),
    ) {
        let t = random_network(n, k, &extra, &ring);
        let f = forest::forest(&t, false).unwrap();
        check_packing(&f, n);
        check_links(&f, &t);
        let cut = exact_cut(&t, AllGather).unwrap();
        // The packed rate never beats the cut: rate <= 1 / (n ns_per_byte).
        prop_assert!(f.rate * f64::from(n) * cut.ns_per_byte <= 1.0 + 1e-9);
        prop_assert!(f.split_loss >= 1.0 - 1e-6);
        let (time, bound) = replay(&t, AllGather, 64, 1e9);
        prop_assert!(time >= bound * (1.0 - 1e-9));
        // The reduce-scatter (reversed trees) and the all-reduce (both
        // forests, the all-gather waiting on the reduce-scatter) replay
        // valid (`replay` asserts it) and above their bounds.
        for kind in [ReduceScatter, AllReduce] {
            let (time, bound) = replay(&t, kind, 8, 1e9);
            prop_assert!(time >= bound * (1.0 - 1e-9), "{kind:?}");
        }
    }

    /// Without switches nothing is lost to splitting: on random networks
    /// of asymmetric links the schedule is within 2% of the exact cut
    /// bound (pieces chosen for the size, no latency; the 2% is the
    /// pipeline's fill, measured, not derived).
    #[test]
    fn forest_meets_the_bound_on_random_switch_free_networks(
        n in 2u32..8,
        ring in proptest::collection::vec(1.0..100.0f64, 8),
        extra in proptest::collection::vec((0u32..8, 0u32..8, 1.0..100.0f64), 0..12),
    ) {
        let t = random_network(n, 0, &extra, &ring);
        let f = forest::forest(&t, false).unwrap();
        prop_assert!(f.split_loss <= 1.0 + 1e-5, "no switch, no loss: {}", f.split_loss);
        let (time, bound) = replay(&t, AllGather, 0, 1e9);
        prop_assert!(time >= bound * (1.0 - 1e-9));
        prop_assert!(time <= bound * 1.02, "{:.4} of the bound", time / bound);
    }

    /// More bandwidth on one link never makes the forest slower by more than
    /// the 2% the schedule may sit above its bound: fast <= 1.02 x bound(fast)
    /// <= 1.02 x bound(slow) <= 1.02 x slow, the cut bound falling as
    /// bandwidth rises (switch-free networks, as the test above).
    #[test]
    fn more_bandwidth_never_slows_forest(
        n in 2u32..6,
        ring in proptest::collection::vec(1.0..100.0f64, 8),
        extra in proptest::collection::vec((0u32..8, 0u32..8, 1.0..100.0f64), 0..8),
        which in 0usize..8, factor in 1.0..4.0f64,
    ) {
        let t = random_network(n, 0, &extra, &ring);
        let mut faster = ring.clone();
        faster[which % n as usize] *= factor;
        let u = random_network(n, 0, &extra, &faster);
        let (slow, _) = replay(&t, AllGather, 0, 1e9);
        let (fast, _) = replay(&u, AllGather, 0, 1e9);
        prop_assert!(fast <= slow * 1.02, "{fast} > {slow}");
    }
}

/// A two-level switch fabric as an edge list: `nodes` nodes of `gpus`
/// GPUs, each node on its own switch at 450 GB/s per GPU, GPU i < `railed`
/// of every node on rail switch i at 50 GB/s, 500 ns per link. With every
/// GPU railed it is a product of switches under the edge list's numbering
/// (`schedule::product::switch_product`); with fewer it is not, and takes
/// the general packing.
fn two_level(nodes: u32, gpus: u32, railed: u32) -> Topology {
    let mut text = String::new();
    for node in 0..nodes {
        for g in 0..gpus {
            let v = node * gpus + g;
            text.push_str(&format!("{v} <-> s{node} 450 0.5us\n"));
            if g < railed {
                text.push_str(&format!("{v} <-> s{} 50 0.5us\n", nodes + g));
            }
        }
    }
    edges(&text)
}

#[test]
fn general_packings_meet_the_cut_plus_the_trees_latency() {
    // The target on networks that take the general packing (the
    // two-level switch edge lists; the meshes below are products now and
    // take their dimension-ordered trees, held to the same bound) at 1 MiB, where a
    // round (the bandwidth term over the k pieces) is shorter than a
    // link's latency: within 1% of the cut plus the deepest tree's arcs
    // times the slowest route, each of its links paying its latency and,
    // stored and forwarded, a piece (at most a round: no link carries more
    // than the cut's rate). Failed before rounds counted latency (mesh
    // 5x5: 20.6 us against 7.5 x 1.01 + 8.8 allowed).
    let mib = 1024.0 * 1024.0;
    for t in [
        from_spec("mesh:5x5", &[50.0 * 1.073_741_824, 75.0 * 1.073_741_824], &[500.0]).unwrap(),
        from_spec("mesh:4x4", &[100.0, 25.0], &[500.0]).unwrap(),
        two_level(2, 4, 2),
        two_level(4, 4, 3),
    ] {
        assert!(dimsum::schedule::product::switch_product(&t).is_none());
        let f = forest::forest(&t, false).unwrap();
        let route = f.arcs.iter().map(|a| a.route.len()).max().unwrap() as f64;
        let cut = exact_cut(&t, AllGather).unwrap().ns_per_byte * mib;
        let k = forest::auto_pieces(&f, &t, mib);
        let latency = f.depth() as f64 * route * (500.0 + cut / f64::from(k));
        let (time, _) = replay(&t, AllGather, 0, mib);
        assert!(
            time <= 1.01 * cut + latency,
            "{}: {time} ns vs 1.01 x {cut} + {latency}",
            t.name
        );
        // And a fixed figure, so deeper trees cannot loosen the test (the
        // previous code: 2.74x on the 5x5 mesh).
        assert!(time <= 1.9 * cut, "{}: {:.3} of the cut", t.name, time / cut);
    }
}

#[test]
fn two_level_switch_edge_lists_near_the_cut() {
    // 1 GiB all-gather. 2 nodes of 4 and 4 nodes of 4: the rails bound it,
    // the shards of the other nodes into a node's 4 rail links at 50 GB/s:
    // (4 / 8) GiB / 200 and (12 / 16) GiB / 200. 4 nodes of 8: every GPU's
    // in-links are full (it takes 31 / 32 GiB through 450 + 50 GB/s; a
    // node's rails, 24 / 32 GiB over 400 GB/s, 97%). Each is a product of
    // its switch classes (`switch_product`), so forest takes the product's
    // dimension-ordered trees: within 1% (the general packing was 3.4%
    // over at 4 x 8, its trees of unequal depth behind FIFO switches).
    for (nodes, gpus, want, slack) in [
        (2, 4, 0.5 * GIB / 200.0, 1.01),
        (4, 4, 0.75 * GIB / 200.0, 1.01),
        (4, 8, 31.0 / 32.0 * GIB / 500.0, 1.01),
    ] {
        let t = two_level(nodes, gpus, gpus);
        assert!(dimsum::schedule::product::switch_product(&t).is_some());
        let (time, bound) = replay(&t, AllGather, 0, GIB);
        assert!(
            (bound - want).abs() < 1e-6 * want,
            "{nodes}x{gpus}: bound {bound} vs {want}"
        );
        assert!(time <= bound * slack, "{nodes}x{gpus}: {:.4}", time / bound);
    }
}

/// The case CI's proptest found on 2026-11-27 (4 NPUs, two-way chords):
/// the forest sat 1.57x above its bound.
#[test]
fn forest_meets_the_bound_on_ci_case_4_npus() {
    let ring = [
        41.43789748490019,
        1.0,
        35.04509848822758,
        79.02362897628804,
        1.0,
        1.0,
        1.0,
        1.0,
    ];
    let extra = [
        (1, 3, 82.10909845890667),
        (2, 5, 1.0),
        (0, 2, 64.67653519529364),
        (2, 1, 64.06104847216585),
        (0, 6, 36.1038701500393),
        (0, 6, 11.357760663077864),
        (1, 4, 92.54083072428149),
    ];
    let t = common::random_network(4, 0, &extra, &ring);
    let f = forest::forest(&t, false).unwrap();
    assert!(f.split_loss <= 1.0 + 1e-5);
    let (time, bound) = replay(&t, AllGather, 0, 1e9);
    assert!(time >= bound * (1.0 - 1e-9));
    assert!(time <= bound * 1.02, "{:.4} of the bound", time / bound);
}

//! `schedule::product`: the closed-form cut and the dimension-ordered
//! trees of product networks (tori, meshes, rings, fully-connected groups,
//! switches), checked against brute force over every node set, worked by
//! hand, replayed in the simulator, and timed in rounds at 40,000 NPUs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::{DimKind, Topology};
use dimsum::model::workload::CollectiveKind::{self, AllGather, AllReduce, ReduceScatter};
use dimsum::schedule::bounds::{self, exact_cut};
use dimsum::schedule::simulate::{LinkModel, SimOptions, simulate};
use dimsum::schedule::{forest, product};
use proptest::prelude::*;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn product_of(dims: &[(DimKind, u32, f64)], latency_ns: f64) -> Topology {
    let spec: Vec<(String, DimKind, u32)> = dims
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("d{i}"), d.0, d.1))
        .collect();
    let gbps: Vec<f64> = dims.iter().map(|d| d.2).collect();
    Topology::from_dims("product", &spec, &gbps, &vec![latency_ns; dims.len()])
}

/// The all-gather cut over every node set (switches included or not), by
/// brute force: max over S holding an NPU of (NPUs outside S) x shard /
/// (bandwidth into S), as ns per byte of the whole buffer.
fn brute_force(t: &Topology) -> f64 {
    let nodes = t.nodes();
    assert!(nodes <= 16);
    let n = f64::from(t.npus);
    let mut best: f64 = 0.0;
    for mask in 1u32..(1 << nodes) {
        let inside = |v: u32| mask >> v & 1 == 1;
        let held = (0..t.npus).filter(|&v| inside(v)).count() as f64;
        if held == 0.0 {
            continue;
        }
        let into: f64 = t
            .links
            .iter()
            .filter(|l| inside(l.dst) && !inside(l.src))
            .map(|l| l.gbps)
            .sum();
        if n - held > 0.0 {
            best = best.max((n - held) / n / into);
        }
    }
    best
}

fn replay(t: &Topology, kind: CollectiveKind, k: u32, size: f64) -> (f64, f64) {
    let s = forest::build(t, kind, k, size).unwrap();
    let r = simulate(
        &s,
        t,
        &SimOptions {
            size_bytes: size,
            model: LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: None,
        },
    )
    .unwrap();
    assert!(r.valid, "{:?}", r.errors.first());
    (r.time_ns, bounds::lower_bounds(t, kind, size).bound_ns)
}

#[test]
fn the_cut_of_tori_by_hand() {
    // torus 4x4, 50 GB/s links: an NPU has 4 x 50 = 200 GB/s coming in
    // and needs 15 of 16 shards: (15 / 16) 2^30 B / 200 GB/s = 5,033,164.8
    // ns. No sub-torus does worse: a row needs 12 shards through 4 x 2 x
    // 50 = 400 GB/s, (12/16) 2^30 / 400 = 2,013,265.92 ns.
    let t = Topology::torus(&[4, 4], true, &[50.0, 50.0], &[0.0, 0.0]);
    let b = bounds::lower_bounds(&t, AllGather, GIB);
    assert!((b.bound_ns - 15.0 / 16.0 * GIB / 200.0).abs() < 1e-6, "{}", b.bound_ns);
    // torus 8x4 with 50 GB/s along x (8) and 200 along y (4): the
    // x-ring through NPU 0 (y = 0) holds 8 NPUs, needs the other 24 shards
    // and has 8 x 2 x 200 = 3,200 GB/s in: (24 / 32) 2^30 / 3,200 =
    // 251,658.24 ns. An NPU alone: (31/32) 2^30 / 500 = 2,080,374.784 ns.
    // The y-ring through NPU 0 (x = 0) holds 4, needs 28 shards through
    // 4 x 2 x 50 = 400: (28 / 32) 2^30 / 400 = 2,348,810.24 ns, the largest
    // (in the module's form: D = {x}, (8 - 1) / 100 ns per shard byte).
    let t = Topology::torus(&[8, 4], true, &[50.0, 200.0], &[0.0, 0.0]);
    let cut = exact_cut(&t, AllGather).unwrap();
    assert!((cut.ns_per_byte * GIB - 28.0 / 32.0 * GIB / 400.0).abs() < 1e-6);
    // The bottleneck set: the NPUs with x = 0 (rank = x + 8 y).
    assert_eq!(cut.set, vec![0, 8, 16, 24]);
}

#[test]
fn the_cut_agrees_with_brute_force_on_small_products() {
    use DimKind::{FullyConnected as Fc, Ring, Switch};
    for dims in [
        vec![(Ring, 3, 10.0), (Fc, 2, 35.0)],
        vec![(Switch, 4, 20.0)],
        vec![(Ring, 2, 10.0), (Switch, 3, 7.0)],
        vec![(Fc, 3, 5.0), (Ring, 3, 40.0)],
        vec![(Switch, 3, 30.0), (Switch, 2, 9.0)],
        vec![(Ring, 4, 10.0), (Ring, 3, 1.0)],
        vec![(Ring, 2, 10.0), (Ring, 2, 3.0), (Ring, 2, 50.0)],
        vec![(Fc, 2, 10.0), (Switch, 2, 3.0), (Ring, 2, 50.0)],
    ] {
        let t = product_of(&dims, 0.0);
        let want = brute_force(&t);
        for kind in [AllGather, ReduceScatter] {
            let got = exact_cut(&t, kind).unwrap().ns_per_byte;
            assert!((got - want).abs() <= 1e-12 * want, "{dims:?}: {got} vs {want}");
        }
    }
}

#[test]
fn a_switch_tree_is_binomial_and_never_copies() {
    // switch:4 at 20 GB/s: root 0 reaches 1 and 2 itself and 3 through 1
    // (3 minus its highest bit); every hop goes up the sender's port and
    // down the receiver's. Translated to all four roots each port carries
    // three hops: the cut, 3 shards through one 20 GB/s port.
    let t = Topology::from_dims("switch", &[("s".into(), DimKind::Switch, 4)], &[20.0], &[0.0]);
    let f = forest::forest(&t, false).unwrap();
    let tree = f.trees.iter().find(|t| t.root == 0).unwrap();
    let hops: Vec<(u32, u32)> = tree
        .arcs
        .iter()
        .map(|&e| (f.arcs[e as usize].src, f.arcs[e as usize].dst))
        .collect();
    assert_eq!(hops, vec![(0, 1), (0, 2), (1, 3)]);
    for &e in &tree.arcs {
        let a = &f.arcs[e as usize];
        assert_eq!(a.route.len(), 2);
        assert_eq!(a.via, vec![4]);
        assert_eq!(t.links[a.route[0] as usize].src, a.src);
        assert_eq!(t.links[a.route[1] as usize].dst, a.dst);
    }
    // rate: 20 GB/s / 3 shards per NPU.
    assert!((f.rate - 20.0 / 3.0).abs() < 1e-9, "{}", f.rate);
}

#[test]
fn a_torus_tree_spreads_both_ways_then_along_the_next_dimension() {
    // torus 3x3, equal links: by symmetry the orders x-then-y and
    // y-then-x carry half each; an odd ring's own tree is already even
    // (one hop each way), so no mirror images.
    // Root 0, x first: along x, one hop forward (0 -> 1) and one back
    // (0 -> 2); then from each of 0, 1, 2 along y, one forward (+3) and one
    // back (+6).
    let t = Topology::torus(&[3, 3], true, &[10.0, 10.0], &[0.0, 0.0]);
    let f = forest::forest(&t, false).unwrap();
    let roots: Vec<_> = f.trees.iter().filter(|t| t.root == 0).collect();
    assert_eq!(roots.len(), 2, "2 orders");
    for tree in &roots {
        assert!((tree.weight - f.rate / 2.0).abs() < 1e-9 * f.rate);
    }
    let hops: Vec<Vec<(u32, u32)>> = roots
        .iter()
        .map(|tree| {
            tree.arcs
                .iter()
                .map(|&e| (f.arcs[e as usize].src, f.arcs[e as usize].dst))
                .collect()
        })
        .collect();
    let x_first = vec![(0, 1), (0, 2), (0, 3), (0, 6), (1, 4), (1, 7), (2, 5), (2, 8)];
    assert!(hops.contains(&x_first), "{hops:?}");
    // rate: 8 shards through 4 x 10 GB/s: 5 GB/s per shard.
    assert!((f.rate - 5.0).abs() < 1e-9);
}

#[test]
fn meshes_are_products_whose_cut_agrees_with_brute_force() {
    use DimKind::{FullyConnected as Fc, Line, Ring, Switch};
    // A line's E is one link (an end NPU's), the cut's node set a corner.
    for dims in [
        vec![(Line, 3, 10.0), (Line, 4, 25.0)],
        vec![(Line, 4, 10.0), (Line, 4, 30.0)],
        vec![(Line, 3, 20.0), (Ring, 3, 5.0)],
        vec![(Line, 3, 8.0), (Switch, 2, 50.0)],
        vec![(Line, 5, 10.0), (Fc, 3, 4.0)],
        vec![(Line, 16, 10.0)],
    ] {
        let t = product_of(&dims, 0.0);
        assert!(product::dims(&t).is_some(), "{dims:?}");
        assert!(
            product::symmetric(&t).is_none(),
            "{dims:?}: a mesh has no translation symmetry"
        );
        let want = brute_force(&t);
        for kind in [AllGather, ReduceScatter] {
            let got = exact_cut(&t, kind).unwrap().ns_per_byte;
            assert!((got - want).abs() <= 1e-12 * want, "{dims:?}: {got} vs {want}");
        }
    }
}

#[test]
fn the_7x10_mesh_meets_its_cut_within_two_percent() {
    // mesh:7x10, 50 GB/s and 0.5 us per link, 1 GiB all-gather. The cut by
    // hand (E = 50 per dimension, one link at a corner): max of 6/50,
    // 9/50 and 69/100 shards per GB/s, so 0.69 m with m = 2^30 / 70:
    // 10,584.03 us. The dimension-ordered trees, materialised for every
    // root, replay within 2% of it (no translation symmetry: no rounds).
    let t = product_of(&[(DimKind::Line, 7, 50.0), (DimKind::Line, 10, 50.0)], 500.0);
    let cut = 0.69 * GIB / 70.0;
    let (time, bound) = replay(&t, AllGather, 0, GIB);
    assert!((bound - cut).abs() <= 1e-9 * cut, "{bound} vs {cut}");
    assert!(time >= bound * (1.0 - 1e-9));
    assert!(time <= cut * 1.02, "{:.4}", time / cut);
    // Not timed in rounds.
    assert!(product::round_time(&t, AllGather, GIB, 4).unwrap().is_none());
}

#[test]
fn products_replay_within_one_to_four_percent_of_the_cut() {
    use DimKind::{FullyConnected as Fc, Ring, Switch};
    // The all-gather within 1% everywhere (its pieces flow unpaced); the
    // reduce-scatter within 1%, but 4% where a switch dimension is the
    // bottleneck (measured 2.7% and 3.8%, not derived: its paced rounds
    // through the switch ports).
    for (dims, rs_within) in [
        (vec![(Ring, 4, 50.0), (Ring, 4, 50.0)], 1.01),
        (vec![(Ring, 8, 50.0), (Ring, 4, 200.0)], 1.01),
        (vec![(Ring, 4, 125.0), (Fc, 4, 1000.0 / 7.0), (Switch, 8, 24.4)], 1.04),
        (vec![(Switch, 8, 450.0), (Switch, 4, 50.0)], 1.04),
        (vec![(Fc, 8, 300.0 / 7.0), (Ring, 3, 40.0)], 1.01),
    ] {
        let t = product_of(&dims, 0.0);
        let mut times = Vec::new();
        for (kind, within) in [(AllGather, 1.01), (ReduceScatter, rs_within)] {
            let (time, bound) = replay(&t, kind, 0, GIB);
            assert!(time >= bound * (1.0 - 1e-9), "{dims:?} {kind:?}");
            assert!(time <= bound * within, "{dims:?} {kind:?}: {:.4}", time / bound);
            times.push(time);
        }
        // The all-reduce: the reduce-scatter then the all-gather.
        let (ar, _) = replay(&t, AllReduce, 0, GIB);
        assert!(ar <= (times[0] + times[1]) * 1.01, "{dims:?}: {ar} vs {times:?}");
    }
}

#[test]
fn all_gathers_meet_the_cut_plus_the_trees_latency() {
    use DimKind::{FullyConnected as Fc, Ring, Switch};
    // The target: within 1% of the cut's bandwidth term plus the
    // trees' depth in latency, at sizes where latency matters (1 MiB) and
    // where it does not (64 MiB). Depth in latency: the deepest tree's
    // arcs times the slowest route (an arc through a switch is two links
    // of 500 ns).
    let mib = 1024.0 * 1024.0;
    for dims in [
        vec![(Ring, 4, 50.0), (Ring, 4, 50.0)],
        vec![(Ring, 8, 50.0), (Ring, 4, 200.0)],
        vec![(Switch, 8, 450.0), (Switch, 4, 50.0)],
        vec![(Fc, 8, 300.0 / 7.0), (Ring, 3, 40.0)],
        vec![(Ring, 4, 125.0), (Fc, 4, 1000.0 / 7.0), (Switch, 8, 24.4)],
    ] {
        let t = product_of(&dims, 500.0);
        let f = forest::forest(&t, false).unwrap();
        let route = f.arcs.iter().map(|a| a.route.len()).max().unwrap() as f64;
        let latency = f.depth() as f64 * route * 500.0;
        for size in [mib, 64.0 * mib] {
            let cut = exact_cut(&t, AllGather).unwrap().ns_per_byte * size;
            let (time, _) = replay(&t, AllGather, 0, size);
            assert!(
                time <= 1.01 * cut + latency,
                "{dims:?} {size}: {time} ns vs 1.01 x {cut} + {latency}"
            );
        }
    }
}

#[test]
fn forty_thousand_npus_in_rounds_within_two_percent() {
    // torus 200x200, 50 GB/s and 0.5 us links, 1 GiB all-gather: the cut
    // is the ingress bound, (39,999 / 40,000) 2^30 / 200 ns; the trees are
    // 100 + 100 hops deep, so no schedule beats 200 x 0.5 us of latency
    // either. The round-timed forest is within 2% of the cut and within
    // 0.1% of cut + depth x latency.
    let t = Topology::torus(&[200, 200], true, &[50.0, 50.0], &[500.0, 500.0]);
    let r = product::round_time(&t, AllGather, GIB, 0).unwrap().unwrap();
    let cut = 39_999.0 / 40_000.0 * GIB / 200.0;
    assert!((r.bandwidth_ns - cut).abs() < 1e-6 * cut, "{}", r.bandwidth_ns);
    assert_eq!(r.depth, 200);
    assert!(r.time_ns >= cut);
    assert!(r.time_ns <= cut * 1.02, "{:.4}", r.time_ns / cut);
    assert!(
        r.time_ns <= (cut + 200.0 * 500.0) * 1.001,
        "{:.4}",
        r.time_ns / (cut + 1e5)
    );
    let b = bounds::lower_bounds(&t, AllGather, GIB);
    assert!((b.cut_ns - cut).abs() < 1e-6 * cut);
}

fn small_product() -> impl Strategy<Value = Vec<(DimKind, u32, f64)>> {
    proptest::collection::vec(
        (
            prop_oneof![
                Just(DimKind::Ring),
                Just(DimKind::FullyConnected),
                Just(DimKind::Switch)
            ],
            2u32..5,
            1.0..100.0f64,
        ),
        1..4,
    )
}

/// The most a line beside another dimension replays over its cut (6.0%
/// at worst in a fine scan, with a margin; see
/// `meshes_replay_near_their_cut`).
const MESH_PRODUCT: f64 = 1.07;

/// The case that showed it, kept: a line of 5 beside a switch of 3.
#[test]
fn a_line_beside_a_switch_replays_within_its_limit() {
    let dims = [
        (DimKind::Line, 5, 42.752342737254295),
        (DimKind::Switch, 3, 97.16878150169717),
    ];
    let t = product_of(&dims, 0.0);
    for kind in [AllGather, ReduceScatter] {
        let (time, bound) = replay(&t, kind, 0, GIB);
        assert!(
            time >= bound * (1.0 - 1e-9) && time <= bound * MESH_PRODUCT,
            "{kind:?}: {}",
            time / bound
        );
    }
}

fn small_mesh() -> impl Strategy<Value = Vec<(DimKind, u32, f64)>> {
    let line = (Just(DimKind::Line), 3u32..6, 1.0..100.0f64);
    let other = (
        prop_oneof![Just(DimKind::Ring), Just(DimKind::Switch), Just(DimKind::Line)],
        2u32..4,
        1.0..100.0f64,
    );
    (line, proptest::collection::vec(other, 0..2)).prop_map(|(l, mut rest)| {
        rest.insert(0, l);
        rest
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// On random meshes (a line of 3 to 5 NPUs and up to one more ring,
    /// switch or line dimension, every dimension at its own bandwidth) the
    /// mixture meets the cut and its trees, replayed at 1 GiB without
    /// latency, are valid, never below the bound, and within 3% of it on a
    /// line alone, within `MESH_PRODUCT` beside another dimension.
    #[test]
    fn meshes_replay_near_their_cut(dims in small_mesh()) {
        let t = product_of(&dims, 0.0);
        let p = product::dims(&t).unwrap();
        let (cut, _) = product::gather_cut(&p);
        let got = product::mixture_ns_per_byte(&p, &product::mixture(&p).unwrap());
        prop_assert!(got >= cut * (1.0 - 1e-9) && got <= cut * (1.0 + 1e-6), "{got} vs {cut}");
        for kind in [AllGather, ReduceScatter] {
            let (time, bound) = replay(&t, kind, 0, GIB);
            prop_assert!(time >= bound * (1.0 - 1e-9));
            // Within 3% on a line alone (at most 0.2% in 1,500 random
            // meshes); a line beside another dimension reduce-scatters up to
            // 5.8% over the cut in 3,000 random cases and 6.0% at worst in a
            // fine scan of line 5 x switch 3's bandwidth ratio: the paced
            // rounds over trees that differ from root to root (a line's)
            // leave links at the cut idle now and then.
            let most = if dims.len() > 1 { MESH_PRODUCT } else { 1.03 };
            if std::env::var_os("DIMSUM_PRINT_RATIOS").is_some() {
                eprintln!("ratio {:.5} {dims:?} {kind:?}", time / bound);
            }
            prop_assert!(time <= bound * most, "{dims:?} {kind:?}: {:.4}", time / bound);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The mixture of dimension orders the linear program picks sends
    /// every shard exactly at the cut (the polymatroid argument of the
    /// module doc), on random products.
    #[test]
    fn the_mixture_meets_the_cut(dims in small_product()) {
        let t = product_of(&dims, 0.0);
        let p = product::dims(&t).unwrap();
        let (cut, _) = product::gather_cut(&p);
        let orders = product::mixture(&p).unwrap();
        let sum: f64 = orders.iter().map(|o| o.weight).sum();
        prop_assert!((sum - 1.0).abs() < 1e-9);
        let got = product::mixture_ns_per_byte(&p, &orders);
        prop_assert!(got >= cut * (1.0 - 1e-9) && got <= cut * (1.0 + 1e-6), "{got} vs {cut}");
    }

    /// On random products with latency, the replayed forest (alpha-beta
    /// links) is valid, never below the bound, and within 2% of the
    /// round-timed execution of the same pieces (what `round_time` reports
    /// at sizes too large to replay; usually the replay is faster, its
    /// rounds overlapping, but not always: 0.13% slower on a 2 x 4
    /// fully-connected product at one piece), which never beats the cut.
    #[test]
    fn replays_stay_within_two_percent_of_their_rounds(
        dims in small_product(), k in prop_oneof![Just(1u32), Just(4), Just(16)],
        size in prop_oneof![Just(1e6), Just(1e8), Just(1e9)],
    ) {
        let t = product_of(&dims, 300.0);
        let r = product::round_time(&t, AllGather, size, k).unwrap().unwrap();
        prop_assert!(r.time_ns >= r.bandwidth_ns * (1.0 - 1e-9));
        let (time, bound) = replay(&t, AllGather, k, size);
        prop_assert!(time >= bound * (1.0 - 1e-9));
        prop_assert!(time <= r.time_ns * 1.02, "replay {time} > rounds {}", r.time_ns);
    }
}

#[test]
fn too_large_schedules_go_to_rounds_counting_both_passes() {
    // torus 32x32: 2 orders x 2 mirror images = 4 trees per root, so one
    // pass has 1024 x 1023 x 4 = 4,190,208 arcs, under 4 x 2^20 =
    // 4,194,304: an all-gather is built and replayed, but an all-reduce
    // (two passes, 8,380,416) is timed in rounds, at twice the all-gather.
    let t = Topology::torus(&[32, 32], true, &[50.0, 50.0], &[500.0, 500.0]);
    assert!(!product::needs_rounds(&t, AllGather));
    assert!(product::needs_rounds(&t, AllReduce));
    let ag = product::round_time(&t, AllGather, GIB, 4).unwrap().unwrap();
    let ar = product::round_time(&t, AllReduce, GIB, 4).unwrap().unwrap();
    assert_eq!(ar.rounds, 2 * ag.rounds);
    assert!((ar.time_ns - 2.0 * ag.time_ns).abs() < 1e-9 * ar.time_ns);
    // More pieces than the rounds take is refused, naming the limit.
    let e = product::round_time(&t, AllGather, GIB, 3_000_000_000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 65536"), "{e}");
    // Building the all-reduce is refused before the forests are made.
    let e = forest::build(&t, AllReduce, 0, GIB).unwrap_err().to_string();
    assert!(e.contains("rounds"), "{e}");
}

/// The edge list of a DGX-like fabric: `nodes` nodes of `gpus` GPUs, each
/// node on its NVSwitch at `nv` GB/s per GPU, GPU i of every node on rail
/// switch i at `rail` GB/s (as scripts/networks.sh writes it); 0.5 us links.
fn dgx_text(nodes: u32, gpus: u32, nv: f64, rail: f64) -> String {
    let mut text = String::new();
    for node in 0..nodes {
        for g in 0..gpus {
            text += &format!("{} <-> s{node} {nv} 0.5us\n", node * gpus + g);
            text += &format!("{} <-> s{} {rail} 0.5us\n", node * gpus + g, nodes + g);
        }
    }
    text
}

fn edges(text: &str) -> Topology {
    Topology::parse_edges(text, std::path::Path::new("test.edges")).unwrap()
}

#[test]
fn a_dgx_like_edge_list_is_the_product_of_its_switches() {
    // 4 nodes x 8 GPUs: an NVSwitch class of 8 at 450 GB/s and a rail class
    // of 4 at 50 GB/s.
    let t = edges(&dgx_text(4, 8, 450.0, 50.0));
    let r = product::switch_product(&t).expect("a product of switches");
    let p = product::dims(&r.product).unwrap();
    let got: Vec<(u32, f64)> = p.iter().map(|d| (d.size, d.link_gbps)).collect();
    assert_eq!(got, vec![(8, 450.0), (4, 50.0)]);
    // The cut by hand: D = {NVSwitch}: 7 / 450 = 0.0156 ns per shard byte;
    // D = {rail}: 3 / 50 = 0.06; both: 31 / (450 + 50) = 0.062, the
    // largest. A 1 GiB all-gather's shard is GiB / 32: 31/32 GiB / 500 GB/s.
    let cut = 31.0 / 32.0 * GIB / 500.0;
    let c = exact_cut(&t, AllGather).unwrap();
    assert!((c.ns_per_byte * GIB - cut).abs() < 1e-9 * cut);
    // Both classes in D: the set is one NPU (and no switch).
    assert_eq!(c.set.len(), 1);
    // Forest on the edge list: the product's dimension-ordered trees,
    // within 1% of the cut plus the trees' depth (NVSwitch binomial 3
    // arcs, rails 2) in latency (an arc is two 0.5 us links).
    let f = forest::forest(&t, false).unwrap();
    assert!(!f.paced);
    assert_eq!(f.depth(), 5);
    let (time, bound) = replay(&t, AllGather, 0, GIB);
    assert!((bound - cut).abs() < 1e-6 * cut);
    let allowance = 1.01 * (cut + 5.0 * 1000.0);
    assert!(time <= allowance, "{time} > {allowance}");
    // Reduce-scatter and all-reduce replay valid on the relabelled trees.
    replay(&t, ReduceScatter, 0, 64.0 * 1024.0 * 1024.0);
    replay(&t, AllReduce, 0, 64.0 * 1024.0 * 1024.0);
}

#[test]
fn networks_that_are_not_products_of_switches_are_not_taken_for_one() {
    // The Wagner graph (an 8-cycle and its 4 long chords) with a switch of
    // two on every edge: every NPU on 3 switches of 2, 2 x 2 x 2 = 8 NPUs,
    // but it is not the cube.
    let mut text = String::new();
    let mut pairs: Vec<(u32, u32)> = (0..8).map(|i| (i, (i + 1) % 8)).collect();
    pairs.extend((0..4).map(|i| (i, i + 4)));
    for (e, (a, b)) in pairs.iter().enumerate() {
        text += &format!("{a} <-> s{e} 50 0.5us\n{b} <-> s{e} 50 0.5us\n");
    }
    let wagner = edges(&text);
    assert!(product::switch_product(&wagner).is_none());
    // Its cut still comes exact (max-flow): one NPU's 3 x 50 GB/s bring
    // the other 7/8 of the buffer (two adjacent NPUs: 6/8 over 4 links,
    // 0.00375 ns per byte; four in a row: 4/8 over 6, 0.00167).
    let c = exact_cut(&wagner, AllGather).unwrap();
    assert!((c.ns_per_byte - 7.0 / 8.0 / 150.0).abs() < 1e-9, "{}", c.ns_per_byte);
    // A product with one slower link: no longer alike within a class.
    let good = dgx_text(2, 2, 100.0, 50.0);
    assert!(product::switch_product(&edges(&good)).is_some());
    let slow = good.replacen("0 <-> s2 50", "0 <-> s2 40", 1);
    assert_ne!(slow, good);
    assert!(product::switch_product(&edges(&slow)).is_none());
    // A ring of six switches of two: each NPU on two switches of two, but
    // six NPUs are not 2 x 2.
    let ring: String = (0..6)
        .map(|i| format!("{i} <-> s{i} 50 0\n{} <-> s{i} 50 0\n", (i + 1) % 6))
        .collect();
    assert!(product::switch_product(&edges(&ring)).is_none());
}

/// A product of switch dimensions written as an edge list with its NPUs and
/// switches numbered by `perm_npus` / `perm_switches` (shuffled), lines in
/// `perm_lines` order.
fn shuffled_switch_product(sizes: &[u32], gbps: &[f64], seed: u64) -> (Topology, String) {
    let spec: Vec<(DimKind, u32, f64)> = sizes.iter().zip(gbps).map(|(&s, &g)| (DimKind::Switch, s, g)).collect();
    let t = product_of(&spec, 500.0);
    let mut rng = seed;
    let mut next = move |m: usize| {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 33) as usize % m
    };
    let mut shuffle = |v: &mut Vec<u32>| {
        for i in (1..v.len()).rev() {
            v.swap(i, next(i + 1));
        }
    };
    let mut npus: Vec<u32> = (0..t.npus).collect();
    let mut sws: Vec<u32> = (0..t.switches).collect();
    shuffle(&mut npus);
    shuffle(&mut sws);
    let name = |v: u32| {
        if v < t.npus {
            npus[v as usize].to_string()
        } else {
            format!("s{}", sws[(v - t.npus) as usize])
        }
    };
    let mut lines: Vec<String> = t
        .links
        .iter()
        .map(|l| format!("{} -> {} {} {}", name(l.src), name(l.dst), l.gbps, l.latency_ns))
        .collect();
    let mut order: Vec<u32> = (0..lines.len() as u32).collect();
    shuffle(&mut order);
    let text: String = order
        .iter()
        .map(|&i| std::mem::take(&mut lines[i as usize]) + "\n")
        .collect();
    (edges(&text), text)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A product of switches under any numbering is recognised as one: its
    /// cut equals brute force over every node set (where that is small
    /// enough) and the product's own closed form, and its forest replays
    /// valid, within 2% of the product's trees timed in rounds.
    #[test]
    fn shuffled_products_of_switches_are_recognised(
        sizes in proptest::collection::vec(2u32..5, 1..4),
        gbps in proptest::collection::vec(1.0..100.0f64, 3),
        seed in any::<u64>(),
    ) {
        let gbps = &gbps[..sizes.len()];
        let (t, text) = shuffled_switch_product(&sizes, gbps, seed);
        let r = product::switch_product(&t);
        prop_assert!(r.is_some(), "not recognised:\n{text}");
        let r = r.unwrap();
        let mut got: Vec<u32> = product::dims(&r.product).unwrap().iter().map(|d| d.size).collect();
        let mut want = sizes.clone();
        got.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(got, want);
        let c = exact_cut(&t, AllGather).unwrap().ns_per_byte;
        if t.nodes() <= 16 {
            let b = brute_force(&t);
            prop_assert!((c - b).abs() <= 1e-9 * b, "{c} vs brute force {b}");
        }
        let spec: Vec<(DimKind, u32, f64)> = sizes.iter().zip(gbps).map(|(&s, &g)| (DimKind::Switch, s, g)).collect();
        let plain = product_of(&spec, 500.0);
        let p = exact_cut(&plain, AllGather).unwrap().ns_per_byte;
        prop_assert!((c - p).abs() <= 1e-9 * p);
        // The replay on the edge list (its own link and NPU order) within 2%
        // of the product's execution in rounds, as products' replays are.
        let (time, bound) = replay(&t, AllGather, 4, 1e8);
        let rounds = product::round_time(&r.product, AllGather, 1e8, 4).unwrap().unwrap();
        prop_assert!(time >= bound * (1.0 - 1e-9));
        prop_assert!(time <= rounds.time_ns * 1.02, "{time} vs rounds {}", rounds.time_ns);
    }
}

#[test]
fn a_product_too_large_to_search_is_refused_not_searched() {
    // Two classes: 8,192 switches of 2 and 2 switches of 8,192 (16,384
    // NPUs): a product, but the search for parallel switches would read
    // 16,384 x 2^4 x 8,192 = 2^31 members, over the 2^28 allowed, so it is
    // not recognised (and exact_cut, above max-flow's NPUs, has no answer).
    let mut text = String::new();
    for v in 0..16384u32 {
        text += &format!("{v} <-> s{} 50 0\n{v} <-> s{} 50 0\n", v / 2, 8192 + v % 2);
    }
    let t = edges(&text);
    assert!(product::switch_product(&t).is_none());
    // The same structure at 8 x 2 is recognised.
    let mut small = String::new();
    for v in 0..16u32 {
        small += &format!("{v} <-> s{} 50 0\n{v} <-> s{} 50 0\n", v / 2, 8 + v % 2);
    }
    assert!(product::switch_product(&edges(&small)).is_some());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// What `best` reports for a product group instead of a replay: the
    /// forest timed in rounds, checked against the full replay of the same
    /// trees at the same pieces on random small products, for every
    /// collective it times, with and without reductions at the receivers'
    /// memory: never below the certified bound, its critical path's
    /// latency, serialization and reductions adding up to its time, and
    /// between 0.75 and 2.5 times the replay (an execution of the same trees
    /// in another order: a link's messages of one level merged over the
    /// trees, each waiting for the latest of its data; faster than the
    /// paced reduce-scatter the builder emits, slower where merged trees
    /// wait for a slow dimension; 300 cases: 0.81 to 2.00 at one piece,
    /// 0.85 to 1.26 at four, 0.99 to 1.62 at sixteen).
    #[test]
    fn rounds_match_the_full_replay_of_their_trees(
        dims in small_product(), k in prop_oneof![Just(1u32), Just(4), Just(16)],
        size in prop_oneof![Just(1e6), Just(1e8)],
        kind in prop_oneof![Just(AllGather), Just(CollectiveKind::ReduceScatter), Just(AllReduce)],
        memory in prop_oneof![Just(None), Just(Some(400.0))],
    ) {
        let t = product_of(&dims, 300.0);
        let r = product::round_time_with(&t, kind, size, k, memory).unwrap().unwrap();
        let s = forest::build(&t, kind, k, size).unwrap();
        let sim = simulate(&s, &t, &SimOptions {
            size_bytes: size,
            model: LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: memory,
        }).unwrap();
        prop_assert!(sim.valid);
        let bound = bounds::lower_bounds(&t, kind, size).bound_ns;
        prop_assert!(r.time_ns >= bound * (1.0 - 1e-9), "rounds {} < bound {bound}", r.time_ns);
        let ratio = r.time_ns / sim.time_ns;
        prop_assert!((0.75..=2.5).contains(&ratio), "rounds / replay = {ratio:.4}");
        let parts: f64 = r.alpha_ns_per_dim.iter().sum::<f64>() + r.beta_ns_per_dim.iter().sum::<f64>() + r.reduce_ns;
        prop_assert!((parts - r.time_ns).abs() <= 1e-9 * r.time_ns, "{parts} vs {}", r.time_ns);
    }
}

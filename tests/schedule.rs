//! Schedules replayed in the simulator against hand-worked alpha-beta
//! times, the lower bounds, LIBRA's bytes per dimension, and broken
//! schedules that must be caught.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use approx::assert_relative_eq;
use assert_cmd::Command;
use dimsum::model::collective;
use dimsum::model::fabric::{Block, Dim, Fabric};
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::{CollectiveKind, Group};
use dimsum::schedule::bounds;
use dimsum::schedule::builtin::{self, Algo};
use dimsum::schedule::simulate::{self, LinkModel, SimOptions, SimResult};
use dimsum::schedule::{Op, Run, Schedule, Transfer, smallvec};
use proptest::prelude::*;
use std::path::Path;

fn topo(spec: &str, gbps: f64, lat_ns: f64) -> Topology {
    topology::from_spec(spec, &[gbps], &[lat_ns]).unwrap()
}

fn run(s: &Schedule, t: &Topology, size: f64, model: LinkModel) -> SimResult {
    simulate::simulate(
        s,
        t,
        &SimOptions {
            size_bytes: size,
            model,
            record: false,
            reduce_gbps: None,
        },
    )
    .unwrap()
}

fn flat(t: &Topology, kind: CollectiveKind, algo: Algo, k: u32) -> Schedule {
    builtin::build(t, kind, algo, None, k).unwrap()
}

use CollectiveKind::{AllGather, AllReduce, AllToAll, ReduceScatter};

/// Ring all-reduce on an 8-ring, 8 MB, 50 GB/s and 500 ns per link.
/// One direction: 14 steps of one 1 MB chunk: 1e6 / 50 = 20_000 ns + 500 ns
/// = 20_500 ns each, 287_000 ns in all. Bidirectional: each chunk is split
/// in two (a block is one chunk), 0.5 MB each way: 10_000 + 500 = 10_500 ns
/// per step, 147_000 ns. No link carries two transfers at once, so TACOS's
/// link model (busy for latency + size / bandwidth) gives the same.
#[test]
fn ring_all_reduce_by_hand() {
    let t = topo("ring:8", 50.0, 500.0);
    let one = flat(&t, AllReduce, Algo::Ring, 1);
    let r = run(&one, &t, 8e6, LinkModel::AlphaBeta);
    assert!(r.valid, "{:?}", r.errors);
    assert_relative_eq!(r.time_ns, 14.0 * 20_500.0, max_relative = 1e-12);
    assert_relative_eq!(
        run(&one, &t, 8e6, LinkModel::Tacos).time_ns,
        287_000.0,
        max_relative = 1e-12
    );
    let two = flat(&t, AllReduce, Algo::BidirectionalRing, 1);
    assert_eq!(two.chunks_per_npu, 2);
    let r2 = run(&two, &t, 8e6, LinkModel::AlphaBeta);
    assert!(r2.valid);
    assert_relative_eq!(r2.time_ns, 14.0 * 10_500.0, max_relative = 1e-12);
    // Lower bound: 2 * 7/8 * 8e6 = 14e6 bytes out of 2 x 50 GB/s = 140_000 ns.
    let b = bounds::lower_bounds(&t, AllReduce, 8e6);
    assert_relative_eq!(b.bound_ns, 140_000.0, max_relative = 1e-12);
    assert!(r2.time_ns >= b.bound_ns);
    // Latency diameter: 4 hops of 500 ns.
    assert_relative_eq!(b.latency_ns, 2000.0);
}

/// Reductions at the receivers' memory: the same one-way ring all-reduce
/// on an 8-ring, 8 MB, with 2 GB/s of memory for reductions. Each of the 7
/// reduce-scatter steps lands a 1 MB chunk that the receiver reads twice
/// and writes once, 3e6 / 2 = 1_500_000 ns, before it is forwarded; the
/// all-gather copies. 287_000 + 7 x 1_500_000 = 10_787_000 ns.
#[test]
fn a_reduction_costs_three_passes_over_memory() {
    let t = topo("ring:8", 50.0, 500.0);
    let one = flat(&t, AllReduce, Algo::Ring, 1);
    let opt = |m: Option<f64>| SimOptions {
        size_bytes: 8e6,
        model: LinkModel::AlphaBeta,
        record: false,
        reduce_gbps: m,
    };
    let r = simulate::simulate(&one, &t, &opt(Some(2.0))).unwrap();
    assert!(r.valid, "{:?}", r.errors);
    assert_relative_eq!(r.time_ns, 287_000.0 + 7.0 * 1_500_000.0, max_relative = 1e-12);
    // The critical path holds the seven reductions apart from the
    // network's latency and serialization, and the pieces tile the time.
    assert_relative_eq!(r.reduce_ns_on_path, 7.0 * 1_500_000.0, max_relative = 1e-12);
    let pieces: f64 = r.alpha_ns_per_dim.iter().sum::<f64>()
        + r.beta_ns_per_dim.iter().sum::<f64>()
        + r.local_ns_on_path
        + r.reduce_ns_on_path;
    assert_relative_eq!(pieces, r.time_ns, max_relative = 1e-12);
    // An all-gather reduces nothing.
    let ag = flat(&t, AllGather, Algo::Ring, 1);
    let a = simulate::simulate(&ag, &t, &opt(Some(2.0))).unwrap();
    let b = simulate::simulate(&ag, &t, &opt(None)).unwrap();
    assert_eq!(a.time_ns, b.time_ns);
}

/// Direct and halving-doubling all-reduce on a fully-connected 8, 8 MB,
/// 10 GB/s and 500 ns per link: every transfer has a link to itself.
/// Direct: reduce-scatter sends 1 MB to each peer at once, 1e6 / 10 =
/// 100_000 + 500 ns; the all-gather the same: 201_000 ns.
/// Halving-doubling: 4, 2, 1 MB steps, then 1, 2, 4 MB: 2 * (700_000 + 3 * 500)
/// = 1_403_000 ns.
#[test]
fn fully_connected_direct_and_halving_doubling_by_hand() {
    let t = topo("fc:8", 10.0, 500.0);
    let d = run(&flat(&t, AllReduce, Algo::Direct, 1), &t, 8e6, LinkModel::AlphaBeta);
    assert!(d.valid);
    assert_relative_eq!(d.time_ns, 201_000.0, max_relative = 1e-12);
    let hd = run(
        &flat(&t, AllReduce, Algo::HalvingDoubling, 1),
        &t,
        8e6,
        LinkModel::AlphaBeta,
    );
    assert!(hd.valid);
    assert_relative_eq!(hd.time_ns, 1_403_000.0, max_relative = 1e-12);
    // The all-gather alone: 1 MB to each peer, 100_500 ns.
    let ag = run(&flat(&t, AllGather, Algo::Direct, 1), &t, 8e6, LinkModel::AlphaBeta);
    assert_relative_eq!(ag.time_ns, 100_500.0, max_relative = 1e-12);
    // The analytic model's bytes: 2 * 7/8 * 8e6 = 14e6 per NPU on the one dimension.
    assert_relative_eq!(d.bytes_per_dim[0], 14e6, max_relative = 1e-12);
}

/// Direct all-reduce through one switch of 8 (10 GB/s up and down per NPU,
/// 500 ns per link), 8 MB, chunk s = 1 MB: each NPU's 7 reduce-scatter
/// transfers queue on its up-link (one every 100_000 ns) and, stored and
/// forwarded, the o-th reaches its destination at o*s/B + s/B + 2*500 ns;
/// the down-links are never contended (senders to one NPU are staggered).
/// The 7th lands at 8 * 100_000 + 1000 = 801_000 ns; the all-gather repeats
/// the pattern: 1_602_000 ns. The TACOS link model adds the latency to every
/// transfer's link time, so it is slower.
#[test]
fn switch_direct_store_and_forward_by_hand() {
    let t = topo("switch:8", 10.0, 500.0);
    let s = flat(&t, AllReduce, Algo::Direct, 1);
    let r = run(&s, &t, 8e6, LinkModel::AlphaBeta);
    assert!(r.valid);
    assert_relative_eq!(r.time_ns, 1_602_000.0, max_relative = 1e-9);
    assert!(run(&s, &t, 8e6, LinkModel::Tacos).time_ns > r.time_ns);
    // Latency on the critical path: 2 direct steps x 2 hops x 500 ns, the
    // analytic alpha; the transfers queued behind a busy up-link add none.
    assert_relative_eq!(
        r.alpha_ns_per_dim[0],
        collective::Algorithm::Direct.steps(AllReduce, 8) * 2.0 * 500.0
    );
    // Critical path ends at the last arrival and starts at time 0.
    let cp = &r.critical_path;
    assert_relative_eq!(cp.last().unwrap().arrive_ns, r.time_ns);
    assert_eq!(cp[0].issue_ns, 0.0);
}

/// Where links are shared the simulated time exceeds the contention-free
/// alpha-beta time: halving-doubling and direct on an 8-ring route over
/// several hops through the same links.
#[test]
fn shared_links_cost_more_than_the_formula() {
    let (g, lat, m) = (50.0, 500.0, 8e6);
    let t = topo("ring:8", g, lat);
    // Contention-free halving-doubling: 2 * (3 * 500 + 7/8 * 8e6 / 50) = 283_000 ns.
    let hd_formula = 2.0 * (3.0 * lat + 7.0 / 8.0 * m / g);
    let hd = run(
        &flat(&t, AllReduce, Algo::HalvingDoubling, 1),
        &t,
        m,
        LinkModel::AlphaBeta,
    );
    assert!(hd.valid);
    assert!(hd.time_ns > 1.5 * hd_formula, "{} vs {}", hd.time_ns, hd_formula);
    // Contention-free direct: 2 * (500 + 1e6 / 50) = 41_000 ns.
    let direct = run(&flat(&t, AllReduce, Algo::Direct, 1), &t, m, LinkModel::AlphaBeta);
    assert!(direct.time_ns > 2.0 * (lat + m / 8.0 / g));
}

/// The hierarchical schedule on a fabric moves LIBRA's bytes per dimension
/// (`collective::bytes_per_dim`), so a schedule yields the analytic model's
/// `bytes_d`, and a single ring dimension with no latency takes exactly
/// bytes / B.
#[test]
fn hierarchical_bytes_match_the_analytic_model() {
    let dim = |name: &str, block: Block, npus: u32| Dim {
        name: name.into(),
        block,
        npus,
        latency_ns: 100.0,
        min_gbps: None,
        max_gbps: None,
        tier: "t".into(),
        options_gbps: None,
        fat_tree: None,
    };
    let f = Fabric {
        dims: vec![
            dim("a", Block::Ring, 4),
            dim("b", Block::FullyConnected, 4),
            dim("c", Block::Switch, 3),
        ],
    };
    let t = Topology::from_fabric(&f, &[200.0, 90.0, 50.0]);
    let algos: Vec<Algo> = t.dims.iter().map(|d| Algo::default_for(d.kind)).collect();
    let group = Group::from_libra(&[4, 4, 3]).unwrap();
    for kind in [AllReduce, ReduceScatter, AllGather, AllToAll] {
        for k in [1, 2] {
            let s = builtin::build(&t, kind, Algo::Ring, Some(&algos), k).unwrap();
            let r = run(&s, &t, 48e6, LinkModel::AlphaBeta);
            assert!(r.valid, "{kind} {:?}", r.errors);
            // LIBRA's all-gather size is the input shard: 48e6 / 48 NPUs.
            let size = if kind == AllGather { 48e6 / 48.0 } else { 48e6 };
            let want = collective::bytes_per_dim(kind, size, &group);
            for (d, want_d) in want.iter().enumerate() {
                if kind == AllToAll && d == 0 {
                    // LIBRA's all-to-all bytes assume a peer one hop away; on
                    // a ring the bidirectional exchange forwards: peers at
                    // distance 1 get a block each way, the one at distance 2
                    // a block over two hops, 4 block-hops of 48e6 / 4 = 48e6.
                    assert_relative_eq!(r.bytes_per_dim[d], 48e6, max_relative = 1e-9);
                    continue;
                }
                assert_relative_eq!(r.bytes_per_dim[d], *want_d, max_relative = 1e-9);
                assert_relative_eq!(r.mean_bytes_per_dim[d], *want_d, max_relative = 1e-9);
            }
            assert!(r.time_ns >= bounds::lower_bounds(&t, kind, 48e6).bound_ns * (1.0 - 1e-12));
        }
    }
    // One ring dimension of 4, 100 GB/s per NPU (50 per direction), no latency:
    // 2 * 3/4 * 4e6 = 6e6 bytes / 100 GB/s = 60_000 ns, as the analytic model says.
    let ring = Fabric {
        dims: vec![Dim {
            latency_ns: 0.0,
            ..dim("a", Block::Ring, 4)
        }],
    };
    let t = Topology::from_fabric(&ring, &[100.0]);
    let s = builtin::build(&t, AllReduce, Algo::Ring, Some(&[Algo::BidirectionalRing]), 1).unwrap();
    assert_relative_eq!(
        run(&s, &t, 4e6, LinkModel::AlphaBeta).time_ns,
        60_000.0,
        max_relative = 1e-12
    );
}

fn ring4(kind: CollectiveKind) -> (Topology, Schedule) {
    let t = topo("ring:4", 10.0, 0.0);
    let s = flat(&t, kind, Algo::Ring, 1);
    (t, s)
}

#[test]
fn a_missing_transfer_is_named() {
    // The ring all-gather's last transfer: step 2, NPU 3 forwards block
    // 3 - 2 = 1 to NPU 0.
    let (t, mut s) = ring4(AllGather);
    let last = s.transfers.pop().unwrap();
    assert_eq!((last.src, last.dst, last.chunks[0].start), (3, 0, 1));
    let r = run(&s, &t, 4e6, LinkModel::AlphaBeta);
    assert!(!r.valid);
    assert_eq!(r.error_count, 1);
    assert_eq!(r.errors[0], "NPU 0 never receives chunk 1 (NPU 1's)");
}

#[test]
fn a_duplicated_reduction_is_named() {
    // Reduce-scatter on a 4-ring: NPU 1 never receives block 0, so its
    // chunk 0 holds only its own contribution; reducing it into NPU 0
    // (chunk 0's owner) once more, after everything, doubles NPU 1's share.
    let (t, mut s) = ring4(ReduceScatter);
    let last = (s.transfers.len() - 1) as u32;
    s.transfers.push(Transfer {
        src: 1,
        dst: 0,
        op: Op::Reduce,
        chunks: smallvec![Run::range(0, 1)],
        deps: smallvec![last],
        route: smallvec![],
        after: smallvec![],
        bytes: None,
        duration_ns: 0.0,
    });
    let r = run(&s, &t, 4e6, LinkModel::AlphaBeta);
    assert!(!r.valid);
    assert_eq!(
        r.errors[0],
        "NPU 0 ends with chunk 0 not reduced over all 4 NPUs: it has NPU 1's contribution twice"
    );
}

#[test]
fn a_missing_dependency_is_caught() {
    // Ring all-gather step 1: NPU 1 forwards block 0, which arrives from
    // NPU 0 at step 0. Without the dependency it starts at time 0 and the
    // chunk lands while it is on the wire.
    let (t, mut s) = ring4(AllGather);
    let i = s
        .transfers
        .iter()
        .position(|x| x.src == 1 && x.chunks[0].start == 0)
        .unwrap();
    s.transfers[i].deps.clear();
    let r = run(&s, &t, 4e6, LinkModel::AlphaBeta);
    assert!(!r.valid);
    assert!(
        r.errors[0].starts_with(&format!("NPU 1 sends chunk 0 (transfer {i}) before it is final there")),
        "{}",
        r.errors[0]
    );
    // A cycle never runs.
    let (t, mut s) = ring4(AllGather);
    s.transfers[0].deps = vec![1].into();
    s.transfers[1].deps = vec![0].into();
    let r = run(&s, &t, 4e6, LinkModel::AlphaBeta);
    assert!(!r.valid);
    assert!(r.errors.iter().any(|e| e.contains("dependencies form a cycle")));
    // So does a receive buffer waiting for a transfer that waits for it.
    let (t, mut s) = ring4(AllGather);
    s.transfers[0].after = vec![1].into();
    s.transfers[1].deps = vec![0].into();
    let r = run(&s, &t, 4e6, LinkModel::AlphaBeta);
    assert!(!r.valid);
    assert!(r.errors.iter().any(|e| e.contains("dependencies form a cycle")));
    // An `after` naming a transfer that does not exist is refused.
    let (_, mut s) = ring4(AllGather);
    s.transfers[0].after = vec![99].into();
    assert!(s.check().unwrap_err().to_string().contains("applied after transfer 99"));
}

#[test]
fn schedules_round_trip_through_json() {
    let t = topo("torus:3x4", 25.0, 300.0);
    let s = builtin::build(
        &t,
        AllReduce,
        Algo::Ring,
        Some(&[Algo::HalvingDoubling, Algo::BidirectionalRing]),
        2,
    )
    .unwrap();
    let back: Schedule = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(back, s);
    let a = run(&s, &t, 1e6, LinkModel::AlphaBeta);
    let b = run(&back, &t, 1e6, LinkModel::AlphaBeta);
    assert!(a.valid);
    assert_eq!(a.time_ns, b.time_ns);
}

/// ASTRA-sim's Ring_8npus.yml: 50 GB/s per link with GB = 2^30 B, 500 ns.
/// Bidirectional ring all-reduce of 1 MiB: 16 chunks of 65_536 B, 14 steps
/// of 65_536 / (50 * 2^30 / 1e9) = 1220.703125 ns + 500 ns.
#[test]
fn astra_sim_ring_network() {
    let t = Topology::load_astra(Path::new("tests/data/astra-sim/Ring_8npus.yml")).unwrap();
    let s = builtin::build(&t, AllReduce, Algo::Ring, Some(&[Algo::BidirectionalRing]), 1).unwrap();
    let r = run(&s, &t, 1_048_576.0, LinkModel::AlphaBeta);
    assert!(r.valid);
    assert_relative_eq!(r.time_ns, 14.0 * (1220.703125 + 500.0), max_relative = 1e-12);
    let h = Topology::load_astra(Path::new("tests/data/astra-sim/HGX-H100-validated.yml")).unwrap();
    assert_eq!((h.npus, h.switches), (8, 1));
}

fn arb_case() -> impl Strategy<Value = (String, usize, usize, Vec<usize>, u32, u64)> {
    let topos = prop_oneof![
        (2u32..9).prop_map(|n| format!("ring:{n}")),
        (2u32..7).prop_map(|n| format!("fc:{n}")),
        (2u32..7).prop_map(|n| format!("switch:{n}")),
        (2u32..5, 2u32..4).prop_map(|(a, b)| format!("torus:{a}x{b}")),
        (2u32..4, 2u32..4).prop_map(|(a, b)| format!("mesh:{a}x{b}")),
    ];
    (
        topos,
        0usize..4,
        0usize..5,
        prop::collection::vec(0usize..4, 2),
        1u32..4,
        any::<u64>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Built-in schedules, with random extra dependencies (on earlier
    /// transfers, so no cycle) and with their routes dropped (the topology
    /// routes them), stay valid and never beat the lower bound, on random
    /// link bandwidths.
    #[test]
    fn valid_schedules_stay_valid_and_never_beat_the_bound(
        (spec, kind, algo, dim_algos, k, seed) in arb_case(),
        gbps in 1.0f64..100.0,
        lat in 0.0f64..1000.0,
        size in 1e3f64..1e8,
    ) {
        let t = topo(&spec, gbps, lat);
        let kind = [AllGather, ReduceScatter, AllReduce, AllToAll][kind];
        let all = [Algo::Ring, Algo::BidirectionalRing, Algo::Direct, Algo::HalvingDoubling];
        let built = if algo == 4 {
            let algos: Vec<Algo> = (0..t.dims.len()).map(|d| all[dim_algos[d.min(1)]]).collect();
            builtin::build(&t, kind, Algo::Ring, Some(&algos), k)
        } else {
            builtin::build(&t, kind, all[algo], None, k)
        };
        let Ok(mut s) = built else {
            // Only halving-doubling all-to-all on a group that is not a power of two is refused.
            prop_assert!(kind == AllToAll);
            return Ok(());
        };
        let mut x = seed | 1;
        for i in 1..s.transfers.len() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if x % 3 == 0 {
                let d = (x >> 8) as usize % i;
                s.transfers[i].deps.push(d as u32);
            }
            if x % 5 == 0 {
                s.transfers[i].route.clear();
            }
        }
        let r = run(&s, &t, size, LinkModel::AlphaBeta);
        prop_assert!(r.valid, "{spec} {kind} {}: {:?}", s.algorithm, r.errors);
        let b = bounds::lower_bounds(&t, kind, size);
        prop_assert!(r.time_ns >= b.bound_ns * (1.0 - 1e-9), "{spec} {kind} {}: {} < {}", s.algorithm, r.time_ns, b.bound_ns);
        // TACOS's link model holds links longer; FIFO order may then differ,
        // so it is not always slower, but it never beats the bound either.
        let tacos = run(&s, &t, size, LinkModel::Tacos);
        prop_assert!(tacos.valid && tacos.time_ns >= b.bound_ns * (1.0 - 1e-9));
    }
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

#[test]
fn cli_json_and_schedule_files() {
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("s.json");
    let out = dimsum()
        .args([
            "collective",
            "--topology",
            "ring:8",
            "--algorithm",
            "ring",
            "--size",
            "8MB",
        ])
        .args([
            "--link-gbps",
            "50GB/s",
            "--link-latency-us",
            "500ns",
            "--json",
            "--schedule-out",
        ])
        .arg(&sched)
        .args(["--charts"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 14 steps of 20.5 us (ring_all_reduce_by_hand).
    assert_relative_eq!(v["time_us"].as_f64().unwrap(), 287.0, max_relative = 1e-12);
    assert_relative_eq!(v["lower_bound_us"].as_f64().unwrap(), 140.0, max_relative = 1e-12);
    assert_eq!(v["valid"], true);
    assert_relative_eq!(v["bytes_per_dim"][0].as_f64().unwrap(), 14e6, max_relative = 1e-12);
    assert!(dir.path().join("utilization.svg").exists() && dir.path().join("timeline.svg").exists());
    // The written schedule replays to the same time at the same size.
    let again = dimsum()
        .args([
            "collective",
            "--topology",
            "ring:8",
            "--size",
            "8MB",
            "--link-latency-us",
            "0.5",
            "--json",
            "--schedule-in",
        ])
        .arg(&sched)
        .output()
        .unwrap();
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(w["time_us"], v["time_us"]);
    // The table.
    let table = dimsum()
        .args([
            "collective",
            "--topology",
            "torus:4x4",
            "--size",
            "1MiB",
            "--chunks-per-npu",
            "2",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("hierarchical(bidirectional-ring,bidirectional-ring)") && text.contains("valid         yes"),
        "{text}"
    );
}

#[test]
fn cli_bad_input_exits_2_with_one_line() {
    for args in [
        vec!["--topology", "cube:4", "--size", "1MB"],
        vec!["--topology", "ring:8", "--size", "lots"],
        vec!["--topology", "ring:8", "--size", "1MB", "--algorithm", "magic"],
        vec!["--topology", "torus:4x4", "--size", "1MB", "--link-gbps", "1,2,3"],
        vec![
            "--topology",
            "ring:6",
            "--size",
            "1MB",
            "--collective",
            "all-to-all",
            "--algorithm",
            "halving-doubling",
        ],
        vec!["--topology", "edges:/nonexistent/file", "--size", "1MB"],
        vec!["--topology", "ring:8", "--size", "1MB", "--link-model", "fluid"],
        vec![
            "--topology",
            "astra:tests/data/astra-sim/Ring_8npus.yml",
            "--size",
            "1MB",
            "--link-gbps",
            "5",
        ],
        vec!["--topology", "ring:8", "--size", "1MB", "--bw", "5"],
        vec!["--topology", "torus:200x200", "--size", "1MB", "--algorithm", "tacos"],
    ] {
        let out = dimsum().arg("collective").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
    }
    // A schedule for another topology size is refused, and nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let sched = dir.path().join("s.json");
    dimsum()
        .args(["collective", "--topology", "ring:4", "--size", "1MB", "--schedule-out"])
        .arg(&sched)
        .assert()
        .success();
    let out = dimsum()
        .args(["collective", "--topology", "ring:8", "--size", "1MB", "--schedule-out"])
        .arg(dir.path().join("other.json"))
        .arg("--schedule-in")
        .arg(&sched)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("other.json").exists());
}

#[test]
fn cli_fabric_topology_from_a_study() {
    let out = dimsum()
        .args([
            "collective",
            "--topology",
            "fabric:studies/dgx-h100-pod.toml",
            "--size",
            "64MiB",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert!(v["time_us"].as_f64().unwrap() >= v["lower_bound_us"].as_f64().unwrap());
}

#[test]
fn schedules_too_large_to_hold_are_refused_before_they_are_built() {
    // A direct all-reduce over a switch of n: n (n - 1) transfers per phase,
    // each waiting for the n - 1 receives of the step before, so about
    // 2 n (n - 1) n dependency entries: 2 x 1024 x 1023 x 1024 = 2.1e9 is
    // over the 2^30 limit; 2 x 512 x 511 x 512 = 2.7e8 is under it.
    let big = topo("switch:1024", 100.0, 500.0);
    let err = builtin::build(&big, CollectiveKind::AllReduce, Algo::Direct, None, 1).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("1073741824") && msg.contains("1024 NPUs"), "{msg}");
    // Halving-doubling over the same switch is 2 x 1024 x (10 + 2) transfers
    // at most: built.
    assert!(builtin::build(&big, CollectiveKind::AllReduce, Algo::HalvingDoubling, None, 1).is_ok());
    // A ring over 4,096 NPUs: 2 x 4096 x 4095 = 3.4e7 transfers, over 2^24.
    let ring = topo("ring:4096", 100.0, 500.0);
    let msg = builtin::build(&ring, CollectiveKind::AllReduce, Algo::Ring, None, 1)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("16777216") && msg.contains("transfers"), "{msg}");
}

#[test]
fn forest_on_a_product_is_timed_in_rounds_unless_the_schedule_is_asked_for() {
    // torus 4x4 at 50 GB/s and 0.5 us links, 1 GiB all-gather: the exact
    // cut is the injection, (15/16) 2^30 / 200 GB/s = 5,033,164.8 ns. By
    // default forest is timed in rounds (no schedule built), within 1% of
    // it; `--replay` builds and replays the schedule, valid and within 1%
    // too.
    let json = |extra: &[&str]| -> serde_json::Value {
        let out = dimsum()
            .args([
                "collective",
                "--topology",
                "torus:4x4",
                "--collective",
                "all-gather",
                "--algorithm",
                "forest",
                "--size",
                "1GiB",
                "--json",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let cut_us = 15.0 / 16.0 * 1_073_741_824.0 / 200.0 / 1e3;
    let rounds = json(&[]);
    assert_eq!(rounds["timing"], "rounds", "{rounds}");
    let t = rounds["time_us"].as_f64().unwrap();
    assert!(t >= cut_us * (1.0 - 1e-9) && t <= 1.01 * cut_us, "{t} vs {cut_us}");
    let replayed = json(&["--replay"]);
    assert!(replayed.get("timing").is_none_or(|v| v != "rounds"), "{replayed}");
    assert_eq!(replayed["valid"], true, "{replayed}");
    let r = replayed["time_us"].as_f64().unwrap();
    assert!(r >= cut_us * (1.0 - 1e-9) && r <= 1.01 * cut_us, "{r} vs {cut_us}");
}

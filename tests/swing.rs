//! Swing on tori: the peer function, schedules valid in the simulator on
//! 1D, 2D and 3D tori of every size, times worked by hand, and the
//! analytic per-dimension model against the simulator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use approx::assert_relative_eq;
use assert_cmd::Command;
use dimsum::model::collective::{self, Algorithm, CollectiveModel, TimeModel};
use dimsum::model::fabric::{Block, Dim, Fabric};
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::{CollectiveKind, Comm, Group};
use dimsum::schedule::Schedule;
use dimsum::schedule::bounds;
use dimsum::schedule::simulate::{self, LinkModel, SimOptions, SimResult};
use dimsum::schedule::swing::{self, Peers, SwingOptions, Variant, peer, rho};

use CollectiveKind::{AllGather, AllReduce, ReduceScatter};

fn topo(spec: &str, gbps: f64, lat_ns: f64) -> Topology {
    topology::from_spec(spec, &[gbps], &[lat_ns]).unwrap()
}

fn run(s: &Schedule, t: &Topology, size: f64) -> SimResult {
    simulate::simulate(
        s,
        t,
        &SimOptions {
            size_bytes: size,
            model: LinkModel::AlphaBeta,
            record: false,
            reduce_gbps: None,
        },
    )
    .unwrap()
}

fn opts(peers: Peers, variant: Variant, multiport: bool, k: u32) -> SwingOptions {
    SwingOptions {
        peers,
        variant,
        multiport,
        chunks_per_npu: k,
    }
}

fn swing(t: &Topology, kind: CollectiveKind, multiport: bool) -> Schedule {
    swing::build(t, kind, &opts(Peers::Swing, Variant::Bandwidth, multiport, 1)).unwrap()
}

/// rho(s) = 1, -1, 3, -5, 11, ...; rank 0's peers on 16 are 1, 15, 3, 11
/// (the paper's example); on any even p the relation is symmetric, pairs an
/// even rank with an odd one and never a rank with itself.
#[test]
fn peers_are_symmetric() {
    assert_eq!((0..6).map(rho).collect::<Vec<_>>(), vec![1, -1, 3, -5, 11, -21]);
    assert_eq!((0..4).map(|s| peer(0, s, 16)).collect::<Vec<_>>(), vec![1, 15, 3, 11]);
    assert_eq!((0..3).map(|s| peer(0, s, 8)).collect::<Vec<_>>(), vec![1, 7, 3]);
    // Rank 1 on 8: 1 - 1 = 0, 1 + 1 = 2, 1 - 3 = -2 = 6.
    assert_eq!((0..3).map(|s| peer(1, s, 8)).collect::<Vec<_>>(), vec![0, 2, 6]);
    for p in [8u32, 16, 64, 12, 24] {
        let steps = 32 - (p - 1).leading_zeros();
        for s in 0..steps {
            for r in 0..p {
                let q = peer(r, s, p);
                assert_ne!(q, r, "p {p} step {s}");
                assert_ne!(q % 2, r % 2, "p {p} step {s}");
                assert_eq!(peer(q, s, p), r, "p {p} step {s} rank {r}");
            }
        }
    }
}

/// On a power of two, every rank reaches every other in exactly one way
/// through the log2 p steps (a butterfly): brute force over the 2^L choices.
#[test]
fn peers_form_a_butterfly() {
    for p in [8u32, 16, 64] {
        let steps = p.trailing_zeros();
        for r in 0..p {
            let mut seen = vec![0u32; p as usize];
            for mask in 0..(1u32 << steps) {
                let mut x = r;
                for s in 0..steps {
                    if mask >> s & 1 == 1 {
                        x = peer(x, s, p);
                    }
                }
                seen[x as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1), "p {p} rank {r}: {seen:?}");
        }
    }
}

/// Every variant on 1D, 2D and 3D tori and meshes, powers of two and not,
/// is valid in the simulator (every NPU ends with the right sums, no
/// missing dependency) and never beats the lower bound.
#[test]
fn schedules_are_valid_on_tori_of_any_size() {
    let specs = [
        "ring:8",
        "ring:6",
        "ring:12",
        "ring:7",
        "torus:4x4",
        "torus:6x4",
        "torus:3x5",
        "mesh:4x4",
        "torus:4x4x4",
        "torus:3x5x2",
        "torus:2x4x8",
    ];
    for spec in specs {
        let t = topo(spec, 50.0, 300.0);
        for (peers, variant, kinds) in [
            (
                Peers::Swing,
                Variant::Bandwidth,
                &[AllReduce, ReduceScatter, AllGather][..],
            ),
            (Peers::Swing, Variant::Latency, &[AllReduce][..]),
            (
                Peers::Doubling,
                Variant::Bandwidth,
                &[AllReduce, ReduceScatter, AllGather][..],
            ),
            (Peers::Doubling, Variant::Latency, &[AllReduce][..]),
        ] {
            for &kind in kinds {
                for (multiport, k) in [(true, 1), (false, 1), (true, 2)] {
                    let s = swing::build(&t, kind, &opts(peers, variant, multiport, k)).unwrap();
                    let r = run(&s, &t, 3e6);
                    let what = format!("{spec} {} {kind} k={k}", s.algorithm);
                    assert!(r.valid, "{what}: {:?}", r.errors);
                    let b = bounds::lower_bounds(&t, kind, 3e6).bound_ns;
                    assert!(r.time_ns >= b * (1.0 - 1e-12), "{what}: {} < {b}", r.time_ns);
                }
            }
        }
        for kind in [AllReduce, ReduceScatter, AllGather] {
            for multiport in [true, false] {
                let s = swing::bucket(&t, kind, multiport, 1).unwrap();
                let r = run(&s, &t, 3e6);
                assert!(r.valid, "{spec} {} {kind}: {:?}", s.algorithm, r.errors);
                assert!(r.time_ns >= bounds::lower_bounds(&t, kind, 3e6).bound_ns * (1.0 - 1e-12));
            }
        }
    }
}

/// The multiport bucket algorithm on a ring of 4 is the bidirectional ring:
/// two collectives of 32 MB, 6 steps of 8 MB blocks each way, 8e6 / 50 =
/// 160_000 + 500 ns per step: 963_000 ns. On a 4x4 torus the four
/// collectives (32 MB / 2 = 16 MB each) each do 3 + 3 reduce-scatter steps
/// (4 MB blocks, then 1 MB) and the mirrored all-gathers, with every
/// directed link carrying one collective per step: 2 * 3 * (80_000 + 500 +
/// 20_000 + 500) = 606_000 ns.
#[test]
fn bucket_by_hand() {
    let t = topo("ring:4", 50.0, 500.0);
    let r = run(&swing::bucket(&t, AllReduce, true, 1).unwrap(), &t, 64e6);
    assert_relative_eq!(r.time_ns, 963_000.0, max_relative = 1e-12);
    let t = topo("torus:4x4", 50.0, 500.0);
    let r = run(&swing::bucket(&t, AllReduce, true, 1).unwrap(), &t, 64e6);
    assert!(r.valid);
    assert_relative_eq!(r.time_ns, 606_000.0, max_relative = 1e-12);
}

/// Ring of 4, 50 GB/s and 500 ns per link, a 64 MB all-reduce.
/// Multiport: two collectives of 32 MB (one mirrored), so every directed
/// link carries one message per step. Reduce-scatter step 0 sends the
/// peer's half of the collective's vector, 16 MB: 16e6 / 50 = 320_000 ns +
/// 500; step 1 a quarter, 8 MB: 160_000 + 500; the all-gather mirrors it:
/// 2 * 481_000 = 962_000 ns: the bidirectional ring's bandwidth (6 steps of
/// 8 MB each way, 6 * 160_500 = 963_000 ns) with 4 latencies instead of 6.
/// Single port: one collective of 64 MB on half the links, twice the time
/// per step: 2 * (640_500 + 320_500) = 1_922_000 ns.
#[test]
fn ring4_all_reduce_by_hand() {
    let t = topo("ring:4", 50.0, 500.0);
    let r = run(&swing(&t, AllReduce, true), &t, 64e6);
    assert!(r.valid);
    assert_relative_eq!(r.time_ns, 962_000.0, max_relative = 1e-12);
    let r = run(&swing(&t, AllReduce, false), &t, 64e6);
    assert_relative_eq!(r.time_ns, 1_922_000.0, max_relative = 1e-12);
    // Latency-optimal: two exchanges of each collective's whole 32 MB:
    // 2 * (32e6 / 50 + 500) = 1_281_000 ns.
    let lat = swing::build(&t, AllReduce, &opts(Peers::Swing, Variant::Latency, true, 1)).unwrap();
    let r = run(&lat, &t, 64e6);
    assert!(r.valid, "{:?}", r.errors);
    assert_relative_eq!(r.time_ns, 1_281_000.0, max_relative = 1e-12);
}

/// Ring of 8, 64 MB, 50 GB/s and 500 ns per link, multiport. Chunks are
/// 64e6 / 16 = 4 MB. Steps 0 and 1 (distance 1) send 4 and 2 chunks per
/// collective over one link each: 320_000 + 500 and 160_000 + 500 ns.
/// Step 2 (distance 3) sends 1 chunk per collective three hops; every
/// directed link carries three such messages one after another, each
/// forwarded as it arrives: 3 * (80_000 + 500) = 241_500 ns. Reduce-scatter
/// 722_500 ns, all-reduce 1_445_000 ns; the analytic model says the same:
/// factor 1/2 + 1/4 + 3/8 = 9/8 per half at B = 100 GB/s per NPU, hops
/// 2 * (1 + 1 + 3) = 10.
#[test]
fn ring8_three_hop_step_by_hand_and_the_analytic_model() {
    let t = topo("ring:8", 50.0, 500.0);
    let r = run(&swing(&t, AllReduce, true), &t, 64e6);
    assert_relative_eq!(r.time_ns, 1_445_000.0, max_relative = 1e-12);
    let m = swing::dim_model(AllReduce, 8, true).unwrap();
    assert_relative_eq!(m.factor, 2.0 * 9.0 / 8.0, max_relative = 1e-12);
    assert_eq!(m.hops, 10.0);
    assert_relative_eq!(
        10.0 * 500.0 + m.factor * 64e6 / 100.0,
        1_445_000.0,
        max_relative = 1e-12
    );
}

fn ring_fabric(p: u32, block: Block, latency_ns: f64) -> Fabric {
    Fabric {
        dims: vec![Dim {
            name: "x".into(),
            block,
            npus: p,
            latency_ns,
            min_gbps: None,
            max_gbps: None,
            tier: "t".into(),
            options_gbps: None,
            fat_tree: None,
        }],
    }
}

/// The study model with `swing` on one ring dimension against the simulated
/// multiport schedule on the same ring (B = 100 GB/s per NPU: 50 per
/// direction). Powers of two: equal (every directed link carries |rho(s)|
/// messages per step, forwarded as they arrive), and the factor is the
/// closed form sum_s |rho(s)| / 2^(s+1) per half. Even sizes that are not
/// powers of two (native, blocks dropped): equal as well. Odd sizes (one
/// coordinate folded): the model runs the fold as a step of its own before
/// the others, while in the simulator each collective starts its steps as
/// soon as its own half is folded, so the model is an upper estimate (the
/// simulator takes 0.64 to 0.79 of it for p = 5 and 7).
#[test]
fn analytic_swing_coefficients_match_the_simulator() {
    let closed = |p: u32| -> f64 {
        (0..p.trailing_zeros())
            .map(|s| rho(s).unsigned_abs() as f64 / f64::from(1u32 << (s + 1)))
            .sum()
    };
    // p = 16: 1/2 + 1/4 + 3/8 + 5/16 = 23/16.
    assert_relative_eq!(closed(16), 23.0 / 16.0);
    for (p, lat) in [
        (4u32, 0.0),
        (8, 0.0),
        (16, 0.0),
        (32, 250.0),
        (64, 0.0),
        (6, 0.0),
        (10, 0.0),
        (12, 0.0),
        (24, 100.0),
        (5, 0.0),
        (7, 300.0),
    ] {
        let f = ring_fabric(p, Block::Ring, lat);
        let model = CollectiveModel {
            time_model: TimeModel::Pipelined,
            algorithms: vec![Algorithm::Swing],
            group_bandwidth: Default::default(),
            reduction_gbps: None,
        };
        let t = Topology::from_fabric(&f, &[100.0]);
        for kind in [AllReduce, ReduceScatter, AllGather] {
            let size = 48e6;
            // LIBRA's all-gather size is the input shard.
            let comm_bytes = if kind == AllGather { size / f64::from(p) } else { size };
            let comm = Comm {
                kind,
                bytes: comm_bytes,
                group: Group::from_libra(&[i64::from(p)]).unwrap(),
            };
            let c = collective::coefficients(&comm, &f, &model);
            let analytic = c.time_ns(&[100.0]);
            let sim = run(&swing(&t, kind, true), &t, size);
            assert!(sim.valid);
            if p.is_power_of_two() {
                let halves = if kind == AllReduce { 2.0 } else { 1.0 };
                assert_relative_eq!(c.dims[0].bytes, halves * closed(p) * size, max_relative = 1e-12);
            }
            if p % 2 == 0 {
                assert_relative_eq!(sim.time_ns, analytic, max_relative = 1e-9);
            } else {
                let ratio = sim.time_ns / analytic;
                assert!(
                    (0.6..1.0 + 1e-9).contains(&ratio),
                    "p {p} {kind}: sim {} analytic {analytic}",
                    sim.time_ns
                );
            }
        }
    }
}

/// Through a switch a step costs its message (two hops): Swing moves what
/// halving-doubling moves, (p-1)/p of the vector per half.
#[test]
fn swing_through_a_switch_is_bandwidth_optimal() {
    let m = swing::dim_model(ReduceScatter, 8, false).unwrap();
    assert_relative_eq!(m.factor, 7.0 / 8.0, max_relative = 1e-12);
    assert_eq!(m.hops, 6.0);
    let f = ring_fabric(8, Block::Switch, 0.0);
    let t = Topology::from_fabric(&f, &[100.0]);
    // Single port, 8 MB reduce-scatter: messages of 4, 2 and 1 MB, each up
    // to the switch and down again (store-and-forward), at 100 GB/s:
    // 2 * (40_000 + 20_000 + 10_000) = 140_000 ns.
    let sim = run(&swing(&t, ReduceScatter, false), &t, 8e6);
    assert_relative_eq!(sim.time_ns, 140_000.0, max_relative = 1e-9);
    // Two ports: the collectives' messages are halves (2, 1, 0.5 MB: 20, 10,
    // 5 us) and share each NPU's up- and down-link; by symmetry every NPU
    // sees the same timeline (us): A0 up 0-20, down 20-40; B0 up 20-40,
    // down 40-60; A1 up 40-50, down 60-70; B1 up 60-70, down 70-80; A2 up
    // 70-75, down 80-85; B2 up 80-85, down 85-90: 90_000 ns (the model's
    // 7/8 * 8e6 / 100 = 70_000 assumes cut-through).
    let sim = run(&swing(&t, ReduceScatter, true), &t, 8e6);
    assert_relative_eq!(sim.time_ns, 90_000.0, max_relative = 1e-9);
}

/// Swing's peers are closer than recursive doubling's (distances 1, 1, 3, 5
/// against 1, 2, 4, 8 on 16), so for a large vector on a ring or torus it
/// is faster with the same steps; and on a 4x4x4 torus it beats the
/// hierarchical bidirectional ring (the bucket algorithm).
#[test]
fn swing_beats_recursive_doubling_on_tori() {
    for spec in ["ring:16", "torus:8x8", "torus:4x4x4"] {
        let t = topo(spec, 50.0, 500.0);
        let s = run(&swing(&t, AllReduce, true), &t, 64e6);
        let rd = swing::build(&t, AllReduce, &opts(Peers::Doubling, Variant::Bandwidth, true, 1)).unwrap();
        let rd = run(&rd, &t, 64e6);
        assert!(s.time_ns < rd.time_ns, "{spec}: {} vs {}", s.time_ns, rd.time_ns);
    }
    let t = topo("torus:4x4x4", 50.0, 500.0);
    let algos: Vec<_> = t
        .dims
        .iter()
        .map(|d| dimsum::schedule::builtin::Algo::default_for(d.kind))
        .collect();
    let bucket =
        dimsum::schedule::builtin::build(&t, AllReduce, dimsum::schedule::builtin::Algo::Ring, Some(&algos), 1)
            .unwrap();
    assert!(run(&swing(&t, AllReduce, true), &t, 64e6).time_ns < run(&bucket, &t, 64e6).time_ns);
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

#[test]
fn cli_swing() {
    let out = dimsum()
        .args([
            "collective",
            "--topology",
            "torus:4x4",
            "--algorithm",
            "swing",
            "--size",
            "1MiB",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["algorithm"], "swing");
    for (args, needle) in [
        (
            &["--algorithm", "swing-latency", "--collective", "reduce-scatter"][..],
            "swing-latency is an all-reduce",
        ),
        (&["--algorithm", "ring", "--single-port"][..], "--single-port"),
        (
            &["--algorithm", "swing", "--collective", "all-to-all"][..],
            "not all-to-all",
        ),
    ] {
        let out = dimsum()
            .args(["collective", "--topology", "ring:8", "--size", "1MiB"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

/// `dimsum compare`: every (topology, algorithm, size) replayed and valid,
/// the CSV, the table and the chart written; bad input exits 2 and writes
/// nothing.
#[test]
fn cli_compare() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let run = dimsum()
        .args([
            "compare",
            "--topologies",
            "ring:8,torus:4x4",
            "--sizes",
            "1KiB,1MiB",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    // 2 topologies x (2 Swing variants + 6 baselines) x 2 sizes, plus the header.
    assert_eq!(csv.lines().count(), 1 + 2 * 8 * 2);
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",true")), "{csv}");
    for f in ["compare.md", "speedup.svg", "speedup.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let bad = dir.path().join("bad");
    for args in [
        &["--topologies", "torus:4y4"][..],
        &["--topologies", "ring:8", "--sizes", "1KiB..1B"][..],
        &["--topologies", "ring:8", "--algorithms", "wing"][..],
    ] {
        let run = dimsum()
            .arg("compare")
            .args(args)
            .arg("--out")
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!bad.exists());
    }
}

const STUDY: &str = r#"
name = "swing-dims"
time_model = "pipelined"
bw = [100, 50]

[[fabric.dims]]
name = "a"
block = "ring"
npus = 8
latency_ns = 100
tier = "t"
algorithm = "swing"

[[fabric.dims]]
name = "b"
block = "switch"
npus = 4
latency_ns = 500
tier = "t"

[cost.tiers.t]
link_usd_per_gbps = 2.0
link_pj_per_bit = 1.0

[workload]
communicator = { weight_grad = [8, 4] }

[[workload.layers]]
name = "l0"
forward = { compute_ns = 1000 }
input_grad = { compute_ns = 2000 }
weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
"#;

/// `swing` as a study's per-dimension algorithm: on the ring of 8 the
/// all-reduce's dimension-0 time is Swing's, 2 * 9/8 * 64e6 bytes at 100
/// GB/s plus 10 hops of 100 ns = 1_441_000 ns (against the ring's
/// 2 * 7/8 * 64e6 / 100 + 14 * 100 = 1_121_400 ns); on a fully-connected
/// dimension it is refused with the algorithms that are allowed there.
#[test]
fn swing_in_a_study() {
    use dimsum::study::Study;
    let path = std::path::Path::new("swing-dims.toml");
    let study = Study::parse(STUDY, path).unwrap();
    let comm = study.workload.layers[0].weight_grad.comm.as_ref().unwrap();
    let c = collective::coefficients(comm, &study.fabric, &study.collective);
    assert_relative_eq!(c.dims[0].time_ns(100.0), 1_441_000.0, max_relative = 1e-12);
    let ring = Study::parse(&STUDY.replace("algorithm = \"swing\"\n", ""), path).unwrap();
    let c = collective::coefficients(comm, &ring.fabric, &ring.collective);
    assert_relative_eq!(c.dims[0].time_ns(100.0), 1_121_400.0, max_relative = 1e-12);
    let err = Study::parse(&STUDY.replace("block = \"ring\"", "block = \"fully-connected\""), path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not run on a fully-connected dimension"), "{err}");
    assert!(err.contains("direct") && err.contains("halving-doubling"), "{err}");
}

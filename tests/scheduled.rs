//! Schedule-backed evaluation and optimization (`scheduled`): agreement
//! with the analytic model where its assumptions hold, hand-worked times
//! where they do not, the fixed point, and the command line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::optimize::scheduled::{self, Spec};
use dimsum::optimize::{self, Objective, Problem};
use dimsum::study::Study;
use std::path::{Path, PathBuf};

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn study(text: &str) -> Study {
    Study::parse(text, Path::new("inline.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// One dimension of `block` with `npus` NPUs, latency `lat`, one collective.
fn one_dim(block: &str, npus: u32, lat: f64, kind: &str, bytes: f64, algorithm: &str) -> String {
    format!(
        r#"
time_model = "pipelined"
[[fabric.dims]]
name = "x"
block = "{block}"
npus = {npus}
latency_ns = {lat}
tier = "t"
algorithm = "{algorithm}"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
forward = {{ compute_ns = 1000 }}
weight_grad = {{ compute_ns = 0, collective = "{kind}", bytes = {bytes}, group = [{npus}] }}
"#
    )
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

/// Where the analytic model's assumptions hold exactly (one dimension, a
/// bandwidth-optimal algorithm, no latency) the evaluators agree to 1e-6.
#[test]
fn one_dimension_bandwidth_optimal_no_latency_agrees() {
    let cases = [
        // Ring of 8, all-reduce of 64 MB at 100 GB/s: 2 * 64e6 * 7/8 / 100
        // = 1_120_000 ns (bidirectional ring: 14 steps of 4e6 B each way at
        // 50 GB/s = 80_000 ns).
        ("ring", 8, "all-reduce", 64e6, "ring", 1_120_000.0),
        // Reduce-scatter: 64e6 * 7/8 / 100 = 560_000 ns.
        ("ring", 8, "reduce-scatter", 64e6, "ring", 560_000.0),
        // All-gather of 8e6 B per NPU: 8e6 * 7 / 100 = 560_000 ns.
        ("ring", 8, "all-gather", 8e6, "ring", 560_000.0),
        // Fully-connected 8, direct all-reduce: 7 pieces of 8e6 B, each on
        // its own link of 100/7 GB/s: 560_000 ns per half, 1_120_000 ns.
        ("fully-connected", 8, "all-reduce", 64e6, "direct", 1_120_000.0),
        // Ring of 16, all-reduce 32 MB: 2 * 32e6 * 15/16 / 100 = 600_000 ns.
        ("ring", 16, "all-reduce", 32e6, "ring", 600_000.0),
    ];
    for (block, n, kind, bytes, algo, hand_ns) in cases {
        let s = study(&one_dim(block, n, 0.0, kind, bytes, algo));
        let backed = s.backed(&Spec::default());
        let m = backed.measure(&[100.0]).unwrap();
        let analytic = s.iteration_model().iteration_ns(&[100.0]);
        // 1000 ns of compute plus the collective.
        assert!(
            rel(analytic, 1000.0 + hand_ns) < 1e-12,
            "{block} {kind}: analytic {analytic}"
        );
        assert!(
            rel(m.iteration_ns, analytic) < 1e-6,
            "{block} {kind}: simulated {} vs analytic {analytic}",
            m.iteration_ns
        );
        assert!((m.collectives[0].ratio - 1.0).abs() < 1e-6);
        // The measured coefficients reproduce the replay at the allocation.
        assert!(rel(m.model.iteration_ns(&[100.0]), m.iteration_ns) < 1e-9);
    }
}

/// The forest evaluator on a ring of 8 at 100 GB/s, no latency: its
/// all-reduce is a reduce-scatter then an all-gather at the cut rate, each
/// 64e6 x 7/8 / 100 = 560_000 ns, 1_120_000 ns in all (within the 1% of the
/// pipeline's fill), the ring's own optimum.
#[test]
fn forest_evaluator_meets_the_ring_optimum() {
    let s = study(&one_dim("ring", 8, 0.0, "all-reduce", 64e6, "ring"));
    let spec = Spec {
        algorithm: dimsum::schedule::algorithm::Algorithm::Forest,
        ..Spec::default()
    };
    let m = s.backed(&spec).measure(&[100.0]).unwrap();
    let c = &m.collectives[0];
    assert!(c.algorithm.starts_with("forest"), "{}", c.algorithm);
    let hand_ns = 1_120_000.0;
    assert!(c.simulated_ms * 1e6 >= hand_ns * (1.0 - 1e-9) && c.simulated_ms * 1e6 <= hand_ns * 1.01);
}

/// Latency breaks the agreement the way the formulas say: a ring all-reduce
/// of 8 takes 14 steps, each paying the link latency once more than the
/// analytic pipelined model's alpha (which it also counts: 14 x 500 ns), so
/// both are 1_120_000 + 7_000 ns.
#[test]
fn ring_latency_counted_per_step() {
    let s = study(&one_dim("ring", 8, 500.0, "all-reduce", 64e6, "ring"));
    let m = s.backed(&Spec::default()).measure(&[100.0]).unwrap();
    assert!(rel(m.iteration_ns, 1000.0 + 1_127_000.0) < 1e-9, "{}", m.iteration_ns);
    assert!(rel(m.analytic_iteration_ns, 1000.0 + 1_127_000.0) < 1e-9);
    // Measured alpha: 14 latencies on the critical path.
    let c = &m.model.collectives[0].coeffs;
    assert!(rel(c.dims[0].alpha_ns, 7_000.0) < 1e-9, "{}", c.dims[0].alpha_ns);
    assert!(rel(c.dims[0].bytes / 100.0, 1_120_000.0) < 1e-9);
}

/// A group of 4 in a fully-connected 8 has only the 3 links among its
/// members, each B/7: LIBRA's formula (`group_bandwidth =
/// "whole-dimension"`) assumes all of B, the default (`links`) does not.
/// Direct all-reduce of S = 64e6 B at B = 250 GB/s: each half sends 3
/// pieces of S/4 = 16e6 B, one per link at 250/7 GB/s: 16e6 * 7 / 250 =
/// 448_000 ns; the all-reduce 896_000 ns. LIBRA's: 2 S 3/4 / 250 =
/// 384_000 ns, ratio 7/3; the links model: 2 S 3/4 x 7/3 / 250 = 896_000.
#[test]
fn partial_fully_connected_group_is_slower_than_libra_says() {
    let text = one_dim("fully-connected", 8, 0.0, "all-reduce", 64e6, "direct").replace("group = [8]", "group = [4]");
    for (key, analytic_ms) in [("", 0.896), ("group_bandwidth = \"whole-dimension\"\n", 0.384)] {
        let s = study(&format!("{key}{text}"));
        let m = s.backed(&Spec::default()).measure(&[250.0]).unwrap();
        let c = &m.collectives[0];
        assert!(rel(c.simulated_ms, 0.896) < 1e-9, "{}", c.simulated_ms);
        assert!(rel(c.analytic_ms, analytic_ms) < 1e-9, "{key}: {}", c.analytic_ms);
        assert!(rel(c.ratio, 0.896 / analytic_ms) < 1e-9);
        // Never below the bound: 2 S 3/4 through 250 GB/s.
        assert!(c.lower_bound_ms <= c.simulated_ms);
    }
}

/// The hierarchical schedule runs dimension after dimension, where LIBRA's
/// model pipelines them perfectly. Ring(4) x Ring(4), all-reduce of S =
/// 64e6 B over both at B = (100, 100) (50 GB/s per link direction), no
/// latency, one chunk per NPU (split in two halves, one per direction):
/// - reduce-scatter on x: S 3/4 = 48e6 B per NPU, 24e6 B per link direction
///   as 6 transfers of 4e6 B (80_000 ns each); the data of the transfer
///   that goes last is not needed by the other half, which is complete
///   after 5 of them (400_000 ns) and goes on to y;
/// - y: reduce-scatter and all-gather of S/4: 2 (S/4) 3/4 = 24e6 B per NPU,
///   12e6 B per link direction: 240_000 ns;
/// - all-gather on x: 24e6 B per link direction: 480_000 ns.
///
/// 400_000 + 240_000 + 480_000 = 1_120_000 ns. Analytic (libra, max):
/// 2 S 3/4 / 100 = 960_000 ns.
#[test]
fn hierarchical_dimensions_run_one_after_another() {
    let text = r#"
[[fabric.dims]]
name = "x"
block = "ring"
npus = 4
tier = "t"
[[fabric.dims]]
name = "y"
block = "ring"
npus = 4
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 64e6, group = [4, 4] }
"#;
    let s = study(text);
    let m = s.backed(&Spec::default()).measure(&[100.0, 100.0]).unwrap();
    assert!(rel(m.iteration_ns, 1_120_000.0) < 1e-9, "{}", m.iteration_ns);
    assert!(rel(m.analytic_iteration_ns, 960_000.0) < 1e-9);
    // Measured coefficients: the critical path's serialization per
    // dimension, 880_000 ns on x and 240_000 ns on y, as bytes at 100 GB/s.
    let c = &m.model.collectives[0].coeffs;
    assert!(c.sequential);
    assert!(rel(c.dims[0].bytes, 88e6) < 1e-9, "{}", c.dims[0].bytes);
    assert!(rel(c.dims[1].bytes, 24e6) < 1e-9, "{}", c.dims[1].bytes);
    // Busiest links: 48e6 B per link direction on x, 24e6 on y, at 50 GB/s.
    let floors: Vec<f64> = c.rows.iter().map(|r| r.iter().map(|k| k.bytes).sum()).collect();
    assert_eq!(floors.len(), 2);
    assert!(
        rel(floors[0], 0.96e6 * 100.0) < 1e-9 && rel(floors[1], 0.24e6 * 100.0) < 1e-9,
        "{floors:?}"
    );
    // Tangent: at B_x = 200 the model says 440_000 + 240_000 = 680_000 ns,
    // and the replay there agrees (the critical path does not change).
    let m2 = s.backed(&Spec::default()).measure(&[200.0, 100.0]).unwrap();
    assert!(rel(m.model.iteration_ns(&[200.0, 100.0]), 680_000.0) < 1e-9);
    assert!(rel(m2.iteration_ns, 680_000.0) < 1e-9, "{}", m2.iteration_ns);
}

/// The busiest-link rows bound every replay of the same schedule from
/// below, at any allocation.
#[test]
fn busiest_link_rows_bound_other_allocations() {
    let s = Study::load(&root("studies/gpt3-4d.toml")).unwrap();
    let backed = s.backed(&Spec::default());
    let at = [500.0, 300.0, 150.0, 50.0];
    let m = backed.measure(&at).unwrap();
    for other in [
        [250.0, 250.0, 250.0, 250.0],
        [500.0, 300.0, 20.0, 180.0],
        [100.0, 100.0, 400.0, 400.0],
    ] {
        let o = backed.measure(&other).unwrap();
        for (term, oterm) in m.model.collectives.iter().zip(&o.model.collectives) {
            for row in &term.coeffs.rows {
                let floor: f64 = row.iter().zip(&other).map(|(c, b)| c.time_ns(*b)).sum();
                let sim = oterm.coeffs.time_ns(&other);
                assert!(floor <= sim * (1.0 + 1e-9), "floor {floor} above replay {sim}");
            }
        }
    }
}

fn problem(s: &Study) -> Problem {
    Problem::new(
        &s.fabric,
        s.iteration_model(),
        s.linear_cost(),
        s.constraints(&[]).unwrap(),
    )
}

/// The fixed point is a fixed point: one more iteration from the returned
/// allocation moves it less than the tolerance, and a fresh evaluation at
/// it reproduces the reported time exactly.
#[test]
fn fixed_point_is_fixed_and_reproducible() {
    for path in ["studies/gpt3-4d.toml", "studies/gpt3-3d.toml"] {
        let s = Study::load(&root(path)).unwrap();
        let spec = Spec::default();
        let backed = s.backed(&spec);
        let p = problem(&s);
        let fp = scheduled::optimize(&backed, &p, Objective::Perf, &dimsum::progress::Quiet).unwrap();
        assert!(fp.converged, "{path}: {:?}", fp.history);
        let bw = fp.measured.bw_gbps.clone();
        // One more iteration.
        let again = s.backed(&spec).measure(&bw).unwrap();
        let mut q = p.clone();
        q.iteration = again.model.clone();
        let next = optimize::solve(&q, Objective::Perf).unwrap();
        assert!(
            scheduled::moved(&next.bw_gbps, &bw) <= spec.tolerance,
            "{path}: {:?} -> {:?}",
            bw,
            next.bw_gbps
        );
        // Reproduced by a fresh evaluator.
        assert_eq!(again.iteration_ns, fp.measured.iteration_ns);
        // The schedule-backed optimum is no slower, simulated, than the
        // analytic optimum simulated (both are feasible; the fixed point
        // started there).
        assert!(fp.measured.iteration_ns <= fp.analytic_measured.iteration_ns * (1.0 + 1e-9));
        // Feasible for the study's constraints.
        for c in &p.constraints {
            let lhs = c.lhs(&bw);
            let ok = match c.sense {
                dimsum::optimize::expr::Sense::Le => lhs <= c.rhs + 1e-6,
                dimsum::optimize::expr::Sense::Ge => lhs >= c.rhs - 1e-6,
                dimsum::optimize::expr::Sense::Eq => (lhs - c.rhs).abs() <= 1e-6,
            };
            assert!(ok, "{path}: {} at {bw:?}", c.text);
        }
        // Every time keeps its lower bound beside it.
        assert!(fp.measured.lower_bound_ns <= fp.measured.iteration_ns);
    }
}

/// On one dimension with the analytic model exact, both optima are the
/// same allocation (two dimensions that do not share a collective: each
/// collective's time is exactly LIBRA's, so the fixed point is the
/// analytic optimum).
#[test]
fn exact_model_fixed_point_is_the_analytic_optimum() {
    let text = r#"
[[fabric.dims]]
name = "x"
block = "ring"
npus = 8
tier = "t"
[[fabric.dims]]
name = "y"
block = "ring"
npus = 4
tier = "t"
[cost.tiers.t]
link_usd_per_gbps = 1.0
[workload]
[[workload.layers]]
name = "l"
input_grad = { compute_ns = 0, collective = "all-reduce", bytes = 64e6, group = [8, -1] }
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 16e6, group = [-1, 4] }
[optimize]
constraints = ["x + y == 100"]
"#;
    let s = study(text);
    let p = problem(&s);
    let fp = scheduled::optimize(
        &s.backed(&Spec::default()),
        &p,
        Objective::Perf,
        &dimsum::progress::Quiet,
    )
    .unwrap();
    assert!(fp.converged);
    // No overlap: T = 2 * 64e6 * 7/8 / x + 2 * 16e6 * 3/4 / y = 112e6/x + 24e6/y
    // under x + y = 100: x / y = sqrt(112/24), x = 100 sqrt(112) /
    // (sqrt(112) + sqrt(24)).
    let x = 100.0 * 112f64.sqrt() / (112f64.sqrt() + 24f64.sqrt());
    assert!(
        (fp.measured.bw_gbps[0] - x).abs() < 1e-3 * x,
        "{:?} vs {x}",
        fp.measured.bw_gbps
    );
    assert!(rel(fp.measured.iteration_ns, fp.measured.analytic_iteration_ns) < 1e-6);
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

/// `eval --evaluator schedule` at the allocation `optimize --evaluator
/// schedule` returns reproduces the reported time.
#[test]
fn cli_eval_reproduces_optimize() {
    let study = root("studies/gpt3-4d.toml");
    let out = dimsum()
        .args(["optimize", study.to_str().unwrap(), "--evaluator", "schedule", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "iteration_time_ms",
        "analytic_iteration_time_ms",
        "bw_gbps",
        "iterations",
        "converged",
        "collectives",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["converged"], true);
    let bw: Vec<String> = v["bw_gbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap().to_string())
        .collect();
    let e = dimsum()
        .args([
            "eval",
            study.to_str().unwrap(),
            "--evaluator",
            "schedule",
            "--json",
            "--bw",
            &bw.join(","),
        ])
        .output()
        .unwrap();
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));
    let ev: serde_json::Value = serde_json::from_slice(&e.stdout).unwrap();
    let a = v["iteration_time_ms"].as_f64().unwrap();
    let b = ev["iteration_time_ms"].as_f64().unwrap();
    assert_eq!(a, b);
    assert_eq!(ev["evaluator"], "schedule");
    for c in ev["collectives"].as_array().unwrap() {
        assert!(c["simulated_ms"].as_f64().unwrap() >= c["lower_bound_ms"].as_f64().unwrap());
    }
    // The table names where the analytic model is optimistic.
    let t = dimsum()
        .args(["eval", study.to_str().unwrap(), "--evaluator", "schedule"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&t.stdout).contains("analytic optimistic by"));
}

#[test]
fn cli_bad_evaluator_input_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let base = one_dim("ring", 8, 0.0, "all-reduce", 64e6, "ring");
    let bad_algo = dir.path().join("a.toml");
    std::fs::write(
        &bad_algo,
        format!("{base}\n[evaluator]\nkind = \"schedule\"\nalgorithm = \"fastest\"\n"),
    )
    .unwrap();
    let bad_kind = dir.path().join("b.toml");
    std::fs::write(&bad_kind, format!("{base}\n[evaluator]\nkind = \"simulated\"\n")).unwrap();
    let swing_dim = dir.path().join("c.toml");
    std::fs::write(
        &swing_dim,
        format!(
            "{}\n[evaluator]\nkind = \"schedule\"\n",
            base.replace("algorithm = \"ring\"", "algorithm = \"swing\"")
        ),
    )
    .unwrap();
    // The same study with a fixed design to replay (its optimum is
    // unbounded: the optimizer fails before any schedule is built).
    let swing_fixed = dir.path().join("d.toml");
    std::fs::write(
        &swing_fixed,
        format!("bw = [100]\n{}", std::fs::read_to_string(&swing_dim).unwrap()),
    )
    .unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        // `run` stops on a schedule it cannot build, with the section's line,
        // before writing any result.
        (
            vec![
                "run".into(),
                swing_fixed.display().to_string(),
                "--out".into(),
                dir.path().join("out").display().to_string(),
            ],
            "evaluator.algorithm",
        ),
        (
            vec![
                "eval".into(),
                bad_algo.display().to_string(),
                "--bw".into(),
                "100".into(),
            ],
            "evaluator.algorithm",
        ),
        (
            vec![
                "eval".into(),
                bad_kind.display().to_string(),
                "--bw".into(),
                "100".into(),
            ],
            "evaluator.kind",
        ),
        (
            vec![
                "eval".into(),
                swing_dim.display().to_string(),
                "--bw".into(),
                "100".into(),
            ],
            "swing",
        ),
        (
            vec![
                "optimize".into(),
                root("studies/gpt3-4d.toml").display().to_string(),
                "--evaluator".into(),
                "simulated".into(),
            ],
            "--evaluator",
        ),
        (
            vec![
                "optimize".into(),
                root("studies/gpt3-4d.toml").display().to_string(),
                "--evaluator".into(),
                "schedule".into(),
                "--schedule-algorithm".into(),
                "magic".into(),
            ],
            "--schedule-algorithm",
        ),
    ];
    for (args, needle) in cases {
        let out = dimsum().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// The critical path tiles the completion time: its latency and
/// serialization per dimension add up to the simulated time, for flat and
/// hierarchical built-in schedules, Swing and TACOS, on rings, switches,
/// fully-connected groups and tori, with and without latency.
#[test]
fn critical_path_tiles_the_time() {
    use dimsum::model::topology::from_spec;
    use dimsum::model::workload::CollectiveKind;
    use dimsum::schedule::builtin::{self, Algo};
    use dimsum::schedule::simulate::{LinkModel, SimOptions, simulate};
    use dimsum::schedule::swing::{self, Peers, SwingOptions, Variant};
    use dimsum::schedule::synth::{self, SynthOptions};
    for spec in ["ring:8", "switch:8", "fc:6", "torus:4x4", "mesh:3x4"] {
        for lat in [0.0, 500.0] {
            let topo = from_spec(spec, &[50.0], &[lat]).unwrap();
            let hier: Vec<Algo> = topo.dims.iter().map(|d| Algo::default_for(d.kind)).collect();
            let mut schedules = vec![
                builtin::build(&topo, CollectiveKind::AllReduce, Algo::Ring, None, 1).unwrap(),
                builtin::build(&topo, CollectiveKind::AllReduce, Algo::Direct, None, 1).unwrap(),
                builtin::build(&topo, CollectiveKind::ReduceScatter, Algo::HalvingDoubling, None, 2).unwrap(),
                builtin::build(&topo, CollectiveKind::AllGather, Algo::Ring, Some(&hier), 2).unwrap(),
                synth::synthesize(
                    &topo,
                    CollectiveKind::AllReduce,
                    &SynthOptions {
                        seed: 1,
                        size_bytes: 64e6,
                        chunks_per_npu: 1,
                        timing: dimsum::schedule::simulate::LinkModel::Tacos,
                        reduce_timing: None,
                    },
                )
                .unwrap()
                .schedule,
            ];
            if spec != "fc:6" {
                let opt = SwingOptions {
                    peers: Peers::Swing,
                    variant: Variant::Bandwidth,
                    multiport: true,
                    chunks_per_npu: 1,
                };
                schedules.push(swing::build(&topo, CollectiveKind::AllReduce, &opt).unwrap());
            }
            for sch in &schedules {
                for model in [LinkModel::AlphaBeta, LinkModel::Tacos] {
                    let opt = SimOptions {
                        size_bytes: 64e6,
                        model,
                        record: false,
                        reduce_gbps: None,
                    };
                    let r = simulate(sch, &topo, &opt).unwrap();
                    assert!(r.valid, "{spec} {}: {:?}", sch.algorithm, r.errors);
                    let sum: f64 = r.alpha_ns_per_dim.iter().sum::<f64>() + r.beta_ns_per_dim.iter().sum::<f64>();
                    assert!(
                        rel(sum, r.time_ns) < 1e-9,
                        "{spec} lat {lat} {} {model:?}: path {sum} vs time {}",
                        sch.algorithm,
                        r.time_ns
                    );
                }
            }
        }
    }
}

#[test]
fn flow_is_an_all_to_all_algorithm_only() {
    let base = one_dim("ring", 8, 0.0, "all-reduce", 64e6, "ring");
    let whole = format!("{base}\n[evaluator]\nkind = \"schedule\"\nalgorithm = \"flow\"\n");
    let e = Study::parse(&whole, Path::new("f.toml")).unwrap_err().to_string();
    assert!(e.contains("evaluator.algorithm") && e.contains("all-to-all"), "{e}");
    let reduce = format!("{base}\n[evaluator]\nkind = \"schedule\"\nalgorithms = {{ all-reduce = \"flow\" }}\n");
    let e = Study::parse(&reduce, Path::new("f.toml")).unwrap_err().to_string();
    assert!(e.contains("evaluator.algorithms.all-reduce"), "{e}");
    let a2a = format!("{base}\n[evaluator]\nkind = \"schedule\"\nalgorithms = {{ all-to-all = \"flow\" }}\n");
    assert!(Study::parse(&a2a, Path::new("f.toml")).is_ok());
}

/// A group on part of a dimension: the analytic model's `links` bytes
/// against the exact cut of the group's own links (the topology the
/// schedule evaluator replays it on), and LIBRA's `whole-dimension` bytes.
#[test]
fn a_group_on_part_of_a_dimension_gets_its_own_links() {
    use dimsum::model::collective::{self, CollectiveModel, GroupBandwidth, TimeModel};
    use dimsum::model::fabric::{Block, Dim, Fabric};
    use dimsum::model::workload::{CollectiveKind, Comm, Group};
    use dimsum::schedule::bounds;
    let fabric = |block: Block, n: u32| Fabric {
        dims: vec![Dim {
            name: "a".into(),
            block,
            npus: n,
            latency_ns: 0.0,
            min_gbps: None,
            max_gbps: None,
            tier: "t".into(),
            options_gbps: None,
            fat_tree: None,
        }],
    };
    let s = 64e6;
    let b = 350.0;
    for (block, n, p, links) in [
        // All-reduce of S over 4 of a fully-connected 8: LIBRA's 2 S 3/4 =
        // 1.5 S bytes, at 3 of 7 links: x 7/3 = 3.5 S.
        (Block::FullyConnected, 8, 4, 3.5 * s),
        // 2 of a fully-connected 8: 2 S 1/2 = S, one link of seven: 7 S.
        (Block::FullyConnected, 8, 2, 7.0 * s),
        // 4 contiguous of a ring of 8, a line: an end NPU receives all of
        // S over B/2, 2 S (p/(p-1) = 4/3 times LIBRA's 1.5 S).
        (Block::Ring, 8, 4, 2.0 * s),
        // A switch port carries all of B: LIBRA's 1.5 S.
        (Block::Switch, 8, 4, 1.5 * s),
    ] {
        let f = fabric(block, n);
        let comm = Comm {
            kind: CollectiveKind::AllReduce,
            bytes: s,
            group: Group(vec![Some(p)]),
        };
        let mut model = CollectiveModel::defaults(&f, TimeModel::Pipelined);
        assert_eq!(model.group_bandwidth, GroupBandwidth::Links);
        let c = collective::coefficients(&comm, &f, &model);
        assert!(
            (c.dims[0].bytes - links).abs() <= 1e-9 * links,
            "{block:?} {p} of {n}: {}",
            c.dims[0].bytes
        );
        model.group_bandwidth = GroupBandwidth::WholeDimension;
        let whole = collective::coefficients(&comm, &f, &model);
        // LIBRA's 2 S (p-1)/p.
        let libra = 2.0 * s * f64::from(p - 1) / f64::from(p);
        assert!(
            (whole.dims[0].bytes - libra).abs() <= 1e-9 * s,
            "{block:?} {p}: {}",
            whole.dims[0].bytes
        );
        // The group's own links: no schedule beats their cut, and the
        // links model is that cut (fully-connected groups and switches;
        // the line's all-reduce cut is its reduce-scatter's plus its
        // all-gather's, the same 2 S here).
        let (topo, _) = scheduled::group_topology(&f, &comm.group, &[b]);
        let cut = bounds::lower_bounds(&topo, CollectiveKind::AllReduce, s).bound_ns;
        let t = c.time_ns(&[b]);
        assert!(t >= cut * (1.0 - 1e-9), "{block:?}: {t} below the cut {cut}");
        assert!(t <= cut * (1.0 + 1e-9), "{block:?}: {t} above the cut {cut}");
    }
    // A line of p on a ring of 8 (B/2 per link each way), per collective,
    // against the same cut (`size` is the whole buffer; LIBRA's all-gather
    // bytes are one NPU's shard):
    // - all-gather of 4 shards s: LIBRA's s (p-1) = 3s; an end NPU receives
    //   3s over B/2: 6s, twice;
    // - reduce-scatter of S over 4: LIBRA's 3S/4; an end NPU sends 3S/4
    //   over B/2: 1.5 S, twice;
    // - all-reduce of S over 3: LIBRA's 2 S 2/3 = 4S/3; an end NPU receives
    //   all of S over B/2: 2S, 3/2 times.
    let f = fabric(Block::Ring, 8);
    let model = CollectiveModel::defaults(&f, TimeModel::Pipelined);
    for (kind, p, bytes, size, links) in [
        (CollectiveKind::AllGather, 4, s / 4.0, s, 6.0 * s / 4.0),
        (CollectiveKind::ReduceScatter, 4, s, s, 1.5 * s),
        (CollectiveKind::AllReduce, 3, s, s, 2.0 * s),
    ] {
        let comm = Comm {
            kind,
            bytes,
            group: Group(vec![Some(p)]),
        };
        let c = collective::coefficients(&comm, &f, &model);
        assert!(
            (c.dims[0].bytes - links).abs() <= 1e-9 * links,
            "{kind:?}: {}",
            c.dims[0].bytes
        );
        let (topo, _) = scheduled::group_topology(&f, &comm.group, &[b]);
        let cut = bounds::lower_bounds(&topo, kind, size).bound_ns;
        let t = c.time_ns(&[b]);
        assert!((t - cut).abs() <= 1e-9 * cut, "{kind:?}: {t} against the cut {cut}");
    }
}

//! Frontiers, the study runner, sweeps, shards and charts, end to end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::optimize::frontier::{Axis, frontier};
use dimsum::optimize::{self, Objective, Problem};
use dimsum::pipeline::sweep::{self, Shard};
use dimsum::study::Study;
use std::path::{Path, PathBuf};

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

fn procurement() -> Study {
    Study::load(&root("studies/gpt3-4d-procurement.toml")).unwrap()
}

fn problem(s: &Study, extra: &[String]) -> Problem {
    Problem::new(
        &s.fabric,
        s.iteration_model(),
        s.linear_cost(),
        s.constraints(extra).unwrap(),
    )
}

/// More budget is never slower, and every point is what `optimize` finds
/// with that budget as a constraint.
#[test]
fn frontier_is_monotone_and_each_point_is_an_optimize_run() {
    let s = procurement();
    for axis in [Axis::Cost, Axis::Power, Axis::TotalBw] {
        let p = problem(&s, &[]);
        let f = frontier(&p, axis, 12).unwrap();
        assert_eq!(f.points.len(), 12);
        for w in f.points.windows(2) {
            assert!(w[1].budget > w[0].budget);
            assert!(
                w[1].iteration_time_ms <= w[0].iteration_time_ms * (1.0 + 1e-7),
                "{axis:?}"
            );
        }
        for pt in f.points.iter().step_by(4) {
            let budget = match axis {
                Axis::Cost => format!("cost <= {}", pt.budget * 1e6),
                Axis::Power => format!("power <= {}", pt.budget * 1e3),
                Axis::TotalBw => format!("chiplet + package + node + pod <= {}", pt.budget),
            };
            let direct = optimize::solve(&problem(&s, &[budget]), Objective::Perf).unwrap();
            let rel = (direct.iteration_time_ms - pt.iteration_time_ms).abs() / direct.iteration_time_ms;
            assert!(
                rel <= 2e-7,
                "{axis:?} at {}: {} vs {}",
                pt.budget,
                pt.iteration_time_ms,
                direct.iteration_time_ms
            );
            assert!(pt.gap <= 1e-7);
        }
        // The high end is the fastest design the caps allow.
        let fastest = optimize::solve(&p, Objective::Perf).unwrap();
        let last = f.points.last().unwrap();
        assert!((last.iteration_time_ms - fastest.iteration_time_ms).abs() <= 1e-6 * fastest.iteration_time_ms);
        // The low end is where the design is twice as slow as the fastest.
        let first = &f.points[0];
        assert!(
            (first.iteration_time_ms / fastest.iteration_time_ms - 2.0).abs() < 1e-3,
            "{}",
            first.iteration_time_ms
        );
        assert!(f.knee > 0 && f.knee < f.points.len() - 1);
    }
}

/// A 2-dimension study for sweeps: 64 NPUs split two ways (2x32, 4x16,
/// 8x8, 16x4, 32x2), three blocks each, two budgets: 5 * 9 * 2 = 90 items.
const SMALL: &str = r#"
name = "small"
time_model = "pipelined"
[[fabric.dims]]
name = "inner"
block = "ring"
npus = 8
latency_ns = 200
[[fabric.dims]]
name = "outer"
block = "switch"
npus = 8
latency_ns = 1000
[cost.tiers.inner]
link_usd_per_gbps = 2.0
[cost.tiers.outer]
link_usd_per_gbps = 8.0
switch_usd_per_gbps = 10.0
nic_usd_per_gbps = 20.0
[workload]
communicator = { forward = [8, -1], input_grad = [8, -1], weight_grad = [-1, 8] }
[[workload.layers]]
forward = { compute_ns = 1e6, collective = "all-reduce", bytes = 5e7 }
input_grad = { compute_ns = 1e6, collective = "all-gather", bytes = 1e6 }
weight_grad = { compute_ns = 2e6, collective = "all-reduce", bytes = 4e8 }
[optimize]
constraints = ["inner + outer <= 400"]
[[frontier]]
axis = "total-bw"
points = 8
[[sweep]]
name = "shapes"
npus = 64
axis = "total-bw"
budgets = [100, 400]
"#;

fn small(dir: &Path) -> PathBuf {
    let p = dir.join("small.toml");
    std::fs::write(&p, SMALL).unwrap();
    p
}

#[test]
fn sweep_items_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let s = Study::load(&small(dir.path())).unwrap();
    let items = sweep::items(&s.sweeps[0], 2);
    assert_eq!(items.len(), 5 * 9 * 2);
    assert_eq!(items[0].npus, vec![2, 32]);
    // The TP group of 8 fits inside 2 x 32 as [2, 4]; the DP group skips those 8.
    let (_, w) = sweep::reshape(&sweep::SweepOn::of(&s), &s.sweeps[0], &items[0]).unwrap();
    let c = w.layers[0].forward.comm.as_ref().unwrap();
    assert_eq!(c.group.to_libra(), vec![2, 4]);
    let c = w.layers[0].weight_grad.comm.as_ref().unwrap();
    assert_eq!(c.group.to_libra(), vec![-1, 8]);
}

#[test]
fn shards_merge_into_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let study = small(dir.path());
    let whole = dir.path().join("whole");
    let parts = dir.path().join("parts");
    dimsum()
        .args(["sweep", "--out"])
        .arg(&whole)
        .arg(&study)
        .assert()
        .success();
    let mut shards = Vec::new();
    for i in 0..3 {
        dimsum()
            .args(["sweep", "--shard", &format!("{i}/3"), "--out"])
            .arg(&parts)
            .arg(&study)
            .assert()
            .success();
        shards.push(parts.join(format!("sweep-shapes.shard-{i}-of-3.csv")));
    }
    let merged = dir.path().join("merged.csv");
    dimsum().arg("merge").arg(&merged).args(&shards).assert().success();
    let a = std::fs::read(whole.join("sweep-shapes.csv")).unwrap();
    let b = std::fs::read(&merged).unwrap();
    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    assert_eq!(a.iter().filter(|c| **c == b'\n').count(), 91);
    // A missing shard, and a duplicated one, are refused.
    let out = dimsum()
        .arg("merge")
        .arg(dir.path().join("m2.csv"))
        .args(&shards[..2])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
    let out = dimsum()
        .arg("merge")
        .arg(dir.path().join("m3.csv"))
        .args(&shards)
        .arg(&shards[1])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("twice"));
    assert!(!dir.path().join("m2.csv").exists() && !dir.path().join("m3.csv").exists());
}

#[test]
fn interrupted_sweep_resumes_to_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let s = Study::load(&small(dir.path())).unwrap();
    let spec = &s.sweeps[0];
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let full = sweep_all(&s, spec, &a, None);
    // Interrupted after 40 items: no final CSV yet, only the partial file.
    let first = sweep_all(&s, spec, &b, Some(40));
    assert!(first.csv.is_none());
    assert_eq!(first.solved_now, 40);
    assert!(!b.join("sweep-shapes.csv").exists());
    let second = sweep_all(&s, spec, &b, None);
    assert_eq!(second.solved_now, 50);
    assert_eq!(second.resumed, 40);
    assert_eq!(
        std::fs::read(full.csv.unwrap()).unwrap(),
        std::fs::read(second.csv.unwrap()).unwrap()
    );
    // The partial file is gone once the sweep is complete.
    let left: Vec<_> = std::fs::read_dir(&b).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // A re-run of the finished shard takes every row from its CSV and
    // solves nothing; the CSV stays byte for byte.
    let again = sweep_all(&s, spec, &b, None);
    assert_eq!((again.solved_now, again.resumed), (0, 90));
    assert_eq!(
        std::fs::read(b.join("sweep-shapes.csv")).unwrap(),
        std::fs::read(a.join("sweep-shapes.csv")).unwrap()
    );
}

#[test]
fn run_writes_results_charts_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let study = small(dir.path());
    let out = dir.path().join("results");
    let o = dimsum().args(["run", "--out"]).arg(&out).arg(&study).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("summary.md"));
    let d = out.join("small");
    for f in [
        "summary.md",
        "optimize.json",
        "frontier-total-bw.csv",
        "frontier-total-bw.svg",
        "frontier-total-bw.png",
        "allocation-total-bw.svg",
        "allocation-total-bw.png",
        "sweep-shapes.csv",
    ] {
        let len = std::fs::metadata(d.join(f))
            .unwrap_or_else(|_| panic!("{f} missing"))
            .len();
        assert!(len > 500, "{f}: {len} bytes");
    }
    let png = std::fs::read(d.join("frontier-total-bw.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let svg = std::fs::read_to_string(d.join("frontier-total-bw.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("iteration time (ms)"));
    // Every file records the version and the study's hash.
    let hash = dimsum::io::fnv1a64(SMALL.as_bytes());
    for f in [
        "summary.md",
        "optimize.json",
        "frontier-total-bw.csv",
        "sweep-shapes.csv",
        "frontier-total-bw.svg",
    ] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(text.contains(&hash) && text.contains(env!("CARGO_PKG_VERSION")), "{f}");
    }
    // No temporary file is left behind.
    assert!(
        std::fs::read_dir(&d)
            .unwrap()
            .all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('.'))
    );
}

/// A sweep over workloads takes them from other studies: every shape,
/// block and budget once per workload, named in the CSV.
#[test]
fn sweep_over_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let other = SMALL
        .replace("name = \"small\"", "name = \"other\"")
        .replace("bytes = 4e8", "bytes = 8e8")
        .replace(
            "[[sweep]]\nname = \"shapes\"\nnpus = 64\naxis = \"total-bw\"\nbudgets = [100, 400]\n",
            "",
        );
    std::fs::write(dir.path().join("other.toml"), &other).unwrap();
    let text = SMALL.replace(
        "budgets = [100, 400]",
        "budgets = [100, 400]\nworkloads = [\"other.toml\"]",
    );
    let p = dir.path().join("small.toml");
    std::fs::write(&p, text).unwrap();
    let s = Study::load(&p).unwrap();
    let spec = &s.sweeps[0];
    assert_eq!(spec.workloads.len(), 1);
    assert_eq!(sweep::items(spec, 2).len(), 180);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let o = sweep_all(&s, spec, &out, None);
    let mut rd = csv::Reader::from_path(o.csv.unwrap()).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 180);
    // Items alternate between the study's workload and the other one; the
    // other's weight-grad all-reduce is twice as large, so on the same shape
    // and budget it is never faster.
    for pair in rows.chunks(2) {
        assert_eq!((&pair[0][8], &pair[1][8]), ("small", "other"));
        assert_eq!(&pair[0][4], &pair[1][4]);
        if let (Ok(a), Ok(b)) = (pair[0][10].parse::<f64>(), pair[1][10].parse::<f64>()) {
            assert!(b >= a * (1.0 - 1e-9), "{a} {b}");
        }
    }
}

/// Two studies whose sweeps name each other load (no endless recursion).
#[test]
fn studies_naming_each_other_load() {
    let dir = tempfile::tempdir().unwrap();
    let a = SMALL.replace("budgets = [100, 400]", "budgets = [100, 400]\nworkloads = [\"b.toml\"]");
    let b = SMALL
        .replace("name = \"small\"", "name = \"b\"")
        .replace("budgets = [100, 400]", "budgets = [100, 400]\nworkloads = [\"a.toml\"]");
    std::fs::write(dir.path().join("a.toml"), a).unwrap();
    std::fs::write(dir.path().join("b.toml"), b).unwrap();
    let s = Study::load(&dir.path().join("a.toml")).unwrap();
    assert_eq!(s.sweeps[0].workloads[0].name, "b");
}

#[test]
fn bad_shard_and_axis_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let study = small(dir.path());
    let o = dimsum().args(["sweep", "--shard", "3/3"]).arg(&study).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("0 <= i < N"));
    let o = dimsum()
        .args(["frontier", "--axis", "money"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("total-bw"));
}

/// Every solved sweep row carries its allocation bought from the catalog
/// (the study names no `[procurement]`: the built-in catalog and each
/// dimension's defaults on the item's own shape), or why it cannot be.
#[test]
fn sweep_rows_are_bought_from_the_catalog() {
    use dimsum::model::bom::{self, Procurement};
    let dir = tempfile::tempdir().unwrap();
    let s = Study::load(&small(dir.path())).unwrap();
    let spec = &s.sweeps[0];
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let o = sweep_all(&s, spec, &out, None);
    let mut rd = csv::Reader::from_path(o.csv.unwrap()).unwrap();
    let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        &head[head.len() - 4..],
        ["bought_capex_usd", "bought_power_w", "bought_note", "priced_by"]
    );
    let items = sweep::items(spec, 2);
    let mut bought = 0;
    for rec in rd.records().map(|r| r.unwrap()) {
        // No [procurement]: the continuous optimum on the linear price.
        assert_eq!(&rec[19], "linear");
        if &rec[9] != "ok" {
            continue;
        }
        let item = &items[rec[2].parse::<usize>().unwrap()];
        let (fabric, _) = sweep::reshape(&sweep::SweepOn::of(&s), spec, item).unwrap();
        let bw: Vec<f64> = (14..16).map(|i| rec[i].parse().unwrap()).collect();
        match bom::bom(&fabric, &Procurement::defaults(&fabric), &bw) {
            Ok(b) => {
                bought += 1;
                assert_eq!(rec[16].parse::<f64>().unwrap(), b.capex_usd);
                assert_eq!(rec[17].parse::<f64>().unwrap(), b.power_w);
                assert!(b.capex_usd > 0.0);
            }
            Err(e) => {
                assert_eq!(&rec[16], "");
                assert_eq!(&rec[18], e.to_string());
            }
        }
    }
    assert!(bought > 0);
}

/// All of sweep `spec` of `s` run (or resumed) into `dir`, stopping after
/// `limit` newly solved items.
fn sweep_all(s: &Study, spec: &dimsum::study::SweepSpec, dir: &Path, limit: Option<usize>) -> sweep::Outcome {
    sweep::run(
        &sweep::SweepOn::of(s),
        spec,
        Shard::ALL,
        dir,
        limit,
        &dimsum::progress::Quiet,
    )
    .unwrap()
}

//! `[[alternative]]`: fabric shapes a person names, bought within the
//! study's budgets and compared (`pipeline::shapes`), the shape chosen
//! against brute force over the shapes' catalog optima, a case worked by
//! hand from the catalog's prices, the report's files, and the errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::model::cost::Linear;
use dimsum::model::training::IterationModel;
use dimsum::optimize::Problem;
use dimsum::optimize::catalog::{self, Goal};
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::procure;
use dimsum::pipeline::run;
use dimsum::pipeline::shapes::{CompareShapes, Shapes, Why};
use dimsum::progress::Quiet;
use dimsum::study::Study;
use proptest::prelude::*;
use std::path::Path;

fn study(text: &str) -> Study {
    Study::parse(text, Path::new("alt.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn shapes(s: &Study) -> Shapes {
    Executor::new(&Quiet).run(CompareShapes { study: s }).unwrap()
}

/// 24 NPUs. The study's fabric: `x` = Switch(8) x `y` = Switch(3); one
/// all-reduce of 1 GB over `x`'s groups of 8, nothing over `y`, but `y`
/// must have 50 GB/s (`min_gbps`). Alternative `b`: `x` x `z` = Switch(3)
/// with no floor, so nothing need be bought for `z`. Alternative `c`:
/// Switch(6) x Switch(4), where a group of 8 in rank order does not tile
/// the first dimension (8 is no multiple of 6). Every switch dimension
/// buys one `ib-ndr-400` port per NPU (`max_ports = 1`: 400 Gb/s = 50
/// GB/s) over 3 m of copper.
const HAND: &str = r#"
name = "alt"
time_model = "libra"
[[fabric.dims]]
name = "x"
block = "switch"
npus = 8
[[fabric.dims]]
name = "y"
block = "switch"
npus = 3
min_gbps = 50
[[alternative]]
name = "b"
[[alternative.dims]]
name = "x"
block = "switch"
npus = 8
[[alternative.dims]]
name = "z"
block = "switch"
npus = 3
[[alternative]]
name = "c"
[[alternative.dims]]
name = "x6"
block = "switch"
npus = 6
[[alternative.dims]]
name = "w"
block = "switch"
npus = 4
[workload]
[[workload.layers]]
name = "l"
forward = { compute_ns = 1e6 }
weight_grad = { compute_ns = 0, collective = "all-reduce", bytes = 1e9, group = [8, -1] }
[procurement]
[procurement.dims.x]
ports = ["ib-ndr-400"]
reach_m = 3
max_ports = 1
[procurement.dims.y]
ports = ["ib-ndr-400"]
reach_m = 3
max_ports = 1
[procurement.dims.z]
ports = ["ib-ndr-400"]
reach_m = 3
max_ports = 1
"#;

/// One switch dimension of 24 NPUs at one 400G port each, by hand
/// (catalog/default.toml): 24 ConnectX-7 NDR400 ports at $2,188 =
/// $52,512; the groups (of 8 or of 3) pack into one 64-port Quantum-2
/// QM9700 at $36,000 (24 ports <= 64); 24 DAC cables of 3 m at $200 =
/// $4,800. Total $93,312.
const ONE_DIM_USD: f64 = 24.0 * 2188.0 + 36_000.0 + 24.0 * 200.0;

#[test]
fn the_hand_worked_case() {
    assert_eq!(ONE_DIM_USD, 93_312.0);
    let s = study(HAND);
    let r = shapes(&s);
    let names: Vec<&str> = r.shapes.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["fabric", "b", "c"]);
    let fabric = r.shapes[0].outcome.as_ref().unwrap();
    let b = r.shapes[1].outcome.as_ref().unwrap();
    // The fabric buys x and y: 2 x $93,312 = $186,624; b buys x alone.
    assert_eq!(fabric.capex_usd(), 2.0 * ONE_DIM_USD);
    assert_eq!(b.capex_usd(), ONE_DIM_USD);
    assert_eq!(b.bom.bought_gbps, vec![50.0, 0.0]);
    // The same time: 1 ms of compute, then the all-reduce over 8 NPUs at
    // 50 GB/s, 2 x 7/8 x 1e9 B / 50e9 B/s = 35 ms (LIBRA's time model, no
    // latency): 36 ms on both shapes.
    assert!((fabric.time_ms() - 36.0).abs() < 1e-9, "{}", fabric.time_ms());
    assert!((b.time_ms() - 36.0).abs() < 1e-9, "{}", b.time_ms());
    // c: the workload cannot be placed; reported, not refused.
    let e = r.shapes[2].outcome.as_ref().unwrap_err().to_string();
    assert!(
        e.contains("cannot be placed") && e.contains("Switch(6) x Switch(4)"),
        "{e}"
    );
    // b: same time at half the capex.
    assert_eq!(r.chosen, Some((1, Why::SameTime { runner_up: 0 })));
    let why = dimsum::report::shapes::why(&r);
    assert_eq!(why, "b: same 36.0 ms as fabric at 50% less capex ($0.0933M vs $0.187M)");
    // The replay: one all-reduce among 8 NPUs on a switch, never below
    // its bound.
    let (replayed, bound) = b.replayed_ms().unwrap();
    assert!(
        replayed >= bound * (1.0 - 1e-9) && bound >= 36.0 * (1.0 - 1e-9),
        "{replayed} {bound}"
    );
}

/// Each shape's catalog optimum computed directly: its problem from the
/// study's public fields, the catalog MILP over its options within the
/// budgets; the fastest (ties: least capex, then first) by brute force.
fn brute_force(s: &Study) -> Option<(usize, f64, f64)> {
    let spec = s.procurement();
    let budget = match (spec.budget_usd, spec.budget_w) {
        (None, None) => Some(1e18),
        (b, _) => b,
    };
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    let own = s.problem().unwrap();
    let (cp, _) = catalog::CatalogProblem::new(&own, procure::dim_options(&s.fabric, &spec), budget, spec.budget_w);
    if let Ok(c) = catalog::solve(&cp, Goal::Perf) {
        found.push((0, c.iteration_time_ms, c.capex_usd));
    }
    for (i, a) in s.alternatives.iter().enumerate() {
        let Ok(w) = &a.workload else { continue };
        let it = IterationModel::new(w, &a.fabric, &a.collective, s.training_loop);
        let p = Problem::new(&a.fabric, it, Linear::new(&a.fabric, &a.cost), vec![]);
        let (cp, _) = catalog::CatalogProblem::new(
            &p,
            procure::dim_options(&a.fabric, &a.procurement),
            budget,
            a.procurement.budget_w,
        );
        if let Ok(c) = catalog::solve(&cp, Goal::Perf) {
            found.push((i + 1, c.iteration_time_ms, c.capex_usd));
        }
    }
    let fastest = found.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    found
        .into_iter()
        .filter(|x| x.1 <= fastest * (1.0 + 1e-6))
        .min_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)))
}

/// Four shapes of 32 NPUs (a ring, switches, a fully-connected group),
/// three collectives, ports of several speeds: the budget decides.
const FOUR: &str = r#"
name = "four"
time_model = "pipelined"
[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
[[fabric.dims]]
name = "s"
block = "switch"
npus = 8
[[alternative]]
name = "flat"
[[alternative.dims]]
name = "s32"
block = "switch"
npus = 32
[[alternative]]
name = "fc-switch"
[[alternative.dims]]
name = "f"
block = "fully-connected"
npus = 4
[[alternative.dims]]
name = "s"
block = "switch"
npus = 8
[[alternative]]
name = "sw-sw"
[[alternative.dims]]
name = "in"
block = "switch"
npus = 8
[[alternative.dims]]
name = "out"
block = "switch"
npus = 4
[workload]
[[workload.layers]]
name = "l0"
forward = { compute_ns = 1e6, collective = "all-reduce", bytes = 64e6, group = [4, -1] }
weight_grad = { compute_ns = 1e6, collective = "all-reduce", bytes = 256e6, group = [4, 8] }
[procurement]
budget_usd = BUDGET
[procurement.dims.a]
ports = ["nvlink4"]
reach_m = 1
max_ports = 4
[procurement.dims.f]
ports = ["nvlink4"]
reach_m = 1
max_ports = 6
[procurement.dims.s]
ports = ["eth-200", "ib-ndr-400", "eth-800"]
reach_m = 3
max_ports = 2
[procurement.dims.s32]
ports = ["eth-200", "ib-ndr-400", "eth-800"]
reach_m = 3
max_ports = 2
[procurement.dims.in]
ports = ["eth-200", "ib-ndr-400"]
reach_m = 3
max_ports = 4
[procurement.dims.out]
ports = ["eth-200", "ib-ndr-400", "eth-800"]
reach_m = 3
max_ports = 2
"#;

fn check_against_brute_force(budget: f64) {
    let s = study(&FOUR.replace("BUDGET", &format!("{budget:e}")));
    let r = shapes(&s);
    assert_eq!(r.shapes.len(), 4);
    let want = brute_force(&s);
    match (r.chosen, want) {
        (None, None) => {}
        (Some((i, _)), Some((j, t, capex))) => {
            let got = r.shapes[i].outcome.as_ref().unwrap();
            assert!(
                (got.time_ms() - t).abs() <= 1e-6 * t,
                "budget {budget}: {} ({}) vs {t} ({})",
                got.time_ms(),
                r.shapes[i].name,
                r.shapes[j].name
            );
            assert!((got.capex_usd() - capex).abs() <= 1e-6 * capex, "budget {budget}");
            assert_eq!(i, j, "budget {budget}");
            assert!(got.capex_usd() <= budget * (1.0 + 1e-9));
        }
        (got, want) => panic!("budget {budget}: {got:?} vs {want:?}"),
    }
}

#[test]
fn the_chosen_shape_is_brute_force_over_the_shapes() {
    for budget in [1e4, 6e4, 1.5e5, 4e5, 2e6] {
        check_against_brute_force(budget);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    /// Any budget: the chosen shape is the brute force's.
    #[test]
    fn any_budget_chooses_as_brute_force(log_budget in 4.0f64..6.5) {
        check_against_brute_force(10f64.powf(log_budget));
    }
}

#[test]
fn the_study_fabric_takes_its_name_from_the_fabric_table() {
    // `[fabric] name` names the study's own shape; the decision is the
    // same as the hand-worked case's (b: the same time for less capex).
    let text = HAND.replace(
        "[[fabric.dims]]\nname = \"x\"",
        "[fabric]\nname = \"both\"\n[[fabric.dims]]\nname = \"x\"",
    );
    let s = study(&text);
    assert_eq!(s.fabric_name, "both");
    let got = shapes(&s);
    let names: Vec<&str> = got.shapes.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["both", "b", "c"]);
    assert_eq!(got.chosen, Some((1, Why::SameTime { runner_up: 0 })));
    assert_eq!(study(HAND).fabric_name, "fabric");
}

#[test]
fn the_report_lists_every_shape() {
    // A budget under the fabric's $186,624 and over b's $93,312: the
    // fabric has no design within it, b is the only one.
    let s = study(&HAND.replace("[procurement]\n", "[procurement]\nbudget_usd = 150000\n"));
    let dir = tempfile::tempdir().unwrap();
    let r = run::run_study(&s, dir.path(), &Quiet).unwrap();
    let sh = r.shapes.as_ref().unwrap();
    assert_eq!(sh.chosen, Some((1, Why::Only)));
    assert!(sh.shapes[0].outcome.is_err());
    let files = dimsum::report::study::write(&s, &r, dir.path()).unwrap();
    for f in [
        "shapes.csv",
        "shapes.json",
        "shapes-frontier.svg",
        "shapes-frontier.png",
    ] {
        assert!(files.contains(&dir.path().join(f)), "{f} not written");
    }
    let csv = std::fs::read_to_string(dir.path().join("shapes.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let head = rd.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    let names: Vec<&str> = rows.iter().map(|x| &x[col("shape")]).collect();
    assert_eq!(names, ["fabric", "b", "c"]);
    let feasible: Vec<&str> = rows.iter().map(|x| &x[col("feasible")]).collect();
    assert_eq!(feasible, ["false", "true", "false"]);
    assert_eq!(&rows[1][col("chosen")], "true");
    assert_eq!(rows[1][col("capex_usd")].parse::<f64>().unwrap(), ONE_DIM_USD);
    assert_eq!(&rows[1][col("npus")], "24");
    assert_eq!(&rows[1][col("bw_gbps")], "x=50;z=0");
    assert!(rows[2][col("reason")].contains("cannot be placed"));
    assert!(rows.iter().all(|x| &x[col("study_hash")] == s.hash.as_str()));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("shapes.json")).unwrap()).unwrap();
    assert_eq!(json["format"], "dimsum-shapes/1");
    assert_eq!(json["chosen"], "b");
    assert_eq!(json["shapes"].as_array().unwrap().len(), 3);
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        summary.contains("## Shapes") && summary.contains("**Decision**: b: the only shape"),
        "{summary}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("Shapes") && html.contains("<svg"));
}

/// A study without `[[alternative]]` writes what it always did: its
/// committed results byte for byte (the files `scripts/reproduce.sh
/// --check` compares), and no shapes section.
#[test]
fn a_study_without_alternatives_is_unchanged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Loaded by the path `run` is given in scripts/reproduce.sh (the
    // summary names it); tests run in the package's directory.
    let s = Study::load(Path::new("studies/dgx-superpod-4su.toml")).unwrap();
    assert!(s.alternatives.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let r = run::run_study(&s, dir.path(), &Quiet).unwrap();
    assert!(r.shapes.is_none());
    let files = dimsum::report::study::write(&s, &r, dir.path()).unwrap();
    for f in &files {
        let name = f.file_name().unwrap();
        let committed = std::fs::read(root.join("results/dgx-superpod-4su").join(name)).unwrap();
        assert!(
            std::fs::read(f).unwrap() == committed,
            "{} differs",
            name.to_string_lossy()
        );
        assert!(!name.to_string_lossy().starts_with("shapes"));
    }
}

fn dimsum_run(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    let out = Command::cargo_bin("dimsum")
        .unwrap()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    (out.status.code(), err)
}

#[test]
fn bad_alternatives_are_one_line_errors() {
    let cases = [
        // 8 x 4 = 32 NPUs against the study's 24.
        (
            HAND.replace(
                "name = \"w\"\nblock = \"switch\"\nnpus = 4",
                "name = \"w\"\nblock = \"switch\"\nnpus = 5",
            ),
            "alternative[1].dims",
            "30 NPUs but the study's fabric",
        ),
        (
            HAND.replace("name = \"c\"", "name = \"b\""),
            "alternative[1].name",
            "names two alternatives",
        ),
        (
            HAND.replace("name = \"b\"", "name = \"fabric\""),
            "alternative[0].name",
            "own fabric",
        ),
        (
            HAND.replace(
                "name = \"z\"\nblock = \"switch\"\nnpus = 3",
                "name = \"z\"\nblock = \"switch\"\nnpus = 1",
            ),
            "alternative[0].dims[1].npus",
            "1 NPUs is not allowed",
        ),
        (
            HAND.replace("name = \"z\"\nblock = \"switch\"", "name = \"z\"\nblock = \"cube\""),
            "",
            "cube",
        ),
        // The study's own fabric named by [fabric] name: an alternative
        // may not take it, and it must be usable in a CSV cell.
        (
            HAND.replace(
                "[[fabric.dims]]\nname = \"x\"",
                "[fabric]\nname = \"b\"\n[[fabric.dims]]\nname = \"x\"",
            ),
            "alternative[0].name",
            "own fabric",
        ),
        (
            HAND.replace(
                "[[fabric.dims]]\nname = \"x\"",
                "[fabric]\nname = \"a b\"\n[[fabric.dims]]\nname = \"x\"",
            ),
            "fabric.name",
            "not a usable name",
        ),
        (
            HAND.replace("[procurement.dims.z]", "[procurement.dims.q]"),
            "procurement.dims.q",
            "`q` is not a dimension",
        ),
    ];
    for (i, (text, field, msg)) in cases.iter().enumerate() {
        let (code, err) = dimsum_run(text);
        assert_eq!(code, Some(2), "case {i}: {err}");
        assert_eq!(err.lines().count(), 1, "case {i}: {err}");
        assert!(err.contains("bad.toml:"), "case {i}: {err}");
        assert!(err.contains(field) && err.contains(msg), "case {i}: {err}");
    }
    // Without [procurement]: shapes are compared as bought.
    let text = HAND.split("[procurement]").next().unwrap();
    let (code, err) = dimsum_run(text);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("alternative[0]") && err.contains("add [procurement]"),
        "{err}"
    );
}

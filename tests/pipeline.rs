//! The study pipeline as a library: `pipeline::run::run_study` returns typed
//! results that agree with the library's own solvers called directly, and
//! `report::study::write` renders them (Markdown and HTML from one
//! document, every chart inlined from the SVG drawn).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::bom;
use dimsum::optimize::{self, Objective};
use dimsum::pipeline::run;
use dimsum::study::Study;
use std::path::Path;

fn procurement_study() -> Study {
    Study::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/gpt3-4d-procurement.toml")).unwrap()
}

#[test]
fn run_study_agrees_with_direct_calls() {
    let study = procurement_study();
    let dir = tempfile::tempdir().unwrap();
    let r = run::run_study(&study, dir.path(), &dimsum::progress::Quiet).unwrap();

    // One recommendation per objective the study runs, in order.
    let names: Vec<&str> = r.recommended.iter().map(|x| x.objective.as_str()).collect();
    assert_eq!(names, ["perf", "min-cost", "min-power"]);

    // The perf recommendation is the optimizer's answer on the study's problem.
    let direct = optimize::solve(&study.problem().unwrap(), Objective::Perf).unwrap();
    let perf = r.recommended[0].outcome.as_ref().unwrap();
    assert_eq!(perf.bw_gbps, direct.bw_gbps);
    assert!((perf.iteration_time_ms - direct.iteration_time_ms).abs() <= 1e-12 * direct.iteration_time_ms);

    // Each bought design is the bill of materials of its allocation, and a
    // bill's capex is the sum of its items.
    let p = r.procurement.as_ref().expect("the study has [procurement]");
    assert_eq!(p.bought.len(), 3);
    for b in &p.bought {
        let got = b.bom.as_ref().unwrap();
        let want = bom::bom(&study.fabric, &study.procurement(), &b.asked).unwrap();
        assert_eq!(got.capex_usd, want.capex_usd);
        let items: f64 = got.items.iter().map(|i| i.capex_usd()).sum();
        assert!(
            (items - got.capex_usd).abs() <= 1e-6 * got.capex_usd,
            "{items} vs {}",
            got.capex_usd
        );
    }
    // The catalog optimum fits the study's budget; the frontier is ordered
    // by budget and never slower with more budget.
    let (c, _) = p.optimum.as_ref().unwrap().outcome.as_ref().unwrap();
    assert!(c.catalog.capex_usd <= p.optimum.as_ref().unwrap().budget_usd * (1.0 + 1e-9));
    for w in p.frontier.windows(2) {
        assert!(w[0].0 < w[1].0);
        assert!(w[1].1.catalog.iteration_time_ms <= w[0].1.catalog.iteration_time_ms * (1.0 + 1e-9));
    }

    // Two frontiers (cost and power), each with the study's designs as markers.
    assert_eq!(r.frontiers.len(), 2);
    for f in &r.frontiers {
        assert_eq!(f.markers.len(), 1 + study.cases.len());
        assert!(f.schedule_backed.is_none());
    }
    assert_eq!(r.fixed.len(), 1 + study.cases.len());
    assert!(r.scheduled.is_none() && r.coopt.is_none() && r.sweeps.is_empty());
}

#[test]
fn the_report_renders_the_typed_results() {
    let study = procurement_study();
    let dir = tempfile::tempdir().unwrap();
    let r = run::run_study(&study, dir.path(), &dimsum::progress::Quiet).unwrap();
    let files = dimsum::report::study::write(&study, &r, dir.path()).unwrap();
    assert_eq!(files[0], dir.path().join("summary.md"));
    for f in &files {
        assert!(f.exists(), "{}", f.display());
    }
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    // The perf row shows the optimizer's time at four decimals.
    let perf = r.recommended[0].outcome.as_ref().unwrap();
    assert!(md.contains("| perf | "));
    assert!(md.contains(&format!("{:.4}", perf.iteration_time_ms)));
    // Every chart the Markdown names is inlined in the page, none missing.
    let charts = md.lines().filter(|l| l.starts_with("![")).count();
    assert!(charts >= 5, "{charts}");
    assert_eq!(html.matches("<figure>").count(), charts);
    assert!(!html.contains("not found"));
    // Every heading of the Markdown is a heading of the page.
    for l in md.lines().filter(|l| l.starts_with("## ")) {
        let text = l.trim_start_matches("## ").replace('`', "");
        let plain = html.replace("<code>", "").replace("</code>", "");
        assert!(
            plain.contains(&format!("<h2>{}</h2>", text.replace('&', "&amp;"))),
            "{l}"
        );
    }
    // No temporary file is left.
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "{name}");
    }
}

#[test]
fn a_bad_study_stops_the_run_before_any_file_is_written() {
    // `run GOOD BAD` checks both studies before it runs either.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"bad\"\n[fabric]\n").unwrap();
    let out = assert_cmd::Command::cargo_bin("dimsum")
        .unwrap()
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/gpt3-4d.toml"))
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("out").exists());
}

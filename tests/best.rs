//! `--algorithm best`: builders in the order of their own bounds, each
//! built and replayed unless the search is done (within the tolerance of
//! the certified bound) or it cannot win; the fastest valid one kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::from_spec;
use dimsum::model::workload::CollectiveKind::{AllGather, AllReduce};
use dimsum::schedule::algorithm::{self, Algorithm, Options, Outcome, Won};
use dimsum::schedule::bounds;
use dimsum::schedule::simulate::{LinkModel, SimOptions, simulate};

const CASES: [(&str, f64, f64, dimsum::model::workload::CollectiveKind, f64); 4] = [
    ("torus:4x4", 50.0, 50.0, AllReduce, 65536.0),
    ("torus:4x4", 50.0, 50.0, AllReduce, 1.0737e9),
    ("mesh:4x4", 100.0, 25.0, AllGather, 1e8),
    ("ring:6", 50.0, 50.0, AllGather, 1e6),
];

#[test]
fn exhaustive_best_is_the_fastest_it_tried_and_says_so() {
    // Tolerance 0: every builder that might be faster is built, so the
    // winner is the fastest replay of all that ran, and a builder is only
    // skipped when its own bound is not below the best so far.
    for (spec, g0, g1, kind, size) in CASES {
        let t = from_spec(
            spec,
            &[g0, g1][..if spec.starts_with("ring") { 1 } else { 2 }],
            &[500.0],
        )
        .unwrap();
        for model in [LinkModel::AlphaBeta, LinkModel::Tacos] {
            let opt = Options {
                size_bytes: size,
                link_model: model,
                tolerance: 0.0,
                ..Options::default()
            };
            let b = algorithm::best(&t, kind, &opt).unwrap();
            let ran: Vec<f64> = b
                .tried
                .iter()
                .filter_map(|t| match &t.outcome {
                    Outcome::Ran(_, x) => Some(*x),
                    _ => None,
                })
                .collect();
            assert!(!ran.is_empty(), "{spec}: {:?}", b.tried);
            let fastest = ran.iter().copied().fold(f64::INFINITY, f64::min);
            assert_eq!(b.time_ns, fastest, "{spec} {size}");
            for tr in &b.tried {
                if let Outcome::Skipped(why) = &tr.outcome {
                    // Skipped only when it could not have won.
                    assert!(tr.own_bound_ns >= fastest || why.contains("NPUs"), "{spec}: {tr:?}");
                }
                // No builder's own bound is below the certified bound.
                assert!(tr.own_bound_ns >= b.bounds.bound_ns);
            }
            // The winner replays (in the same link model) at its time.
            let sim = SimOptions {
                size_bytes: size,
                model,
                record: false,
                reduce_gbps: None,
            };
            let s = b.schedule().unwrap();
            let r = simulate(s, &t, &sim).unwrap();
            assert!(r.valid);
            assert_eq!(r.time_ns, fastest, "{spec} {size}");
            assert!(s.algorithm.starts_with("best: "), "{}", s.algorithm);
            // Through the dispatcher, the same schedule.
            let d = algorithm::build(&t, kind, Algorithm::Best, &opt).unwrap();
            assert_eq!(d.algorithm, s.algorithm);
        }
    }
}

#[test]
fn best_stops_within_its_tolerance_and_never_below_the_bound() {
    // torus 4x4 at 50 GB/s, 1 GiB all-reduce, 0.5 us links: bandwidth
    // bound. The certified bound: each NPU's 4 links x 50 GB/s carry at
    // least its reduce-scatter's and all-gather's 15/16 GiB in and out:
    // 2 x (15/16) 2^30 / 200 = 10,066,329.6 ns (the exact cut of a torus
    // is its injection here). With rounds the forest is timed at once and
    // is within 1% of it, so nothing else is built; without rounds the
    // first schedule within 1% ends the search.
    let t = from_spec("torus:4x4", &[50.0], &[500.0]).unwrap();
    let size = 1_073_741_824.0;
    let cert = bounds::lower_bounds(&t, AllReduce, size).bound_ns;
    assert!((cert - 2.0 * 15.0 / 16.0 * size / 200.0).abs() < 1e-6 * cert, "{cert}");
    let opt = Options {
        size_bytes: size,
        ..Options::default()
    };
    let rounds = algorithm::best_with(&t, AllReduce, &opt, true).unwrap();
    assert!(matches!(rounds.won, Won::Rounds(_)), "{}", rounds.label);
    assert!(
        rounds.time_ns >= cert && rounds.time_ns <= 1.01 * cert,
        "{}",
        rounds.time_ns / cert
    );
    let ran = rounds
        .tried
        .iter()
        .filter(|t| matches!(t.outcome, Outcome::Ran(..)))
        .count();
    assert_eq!(ran, 1, "{}", rounds.label);
    assert!(rounds.label.contains("within 1% of the bound"), "{}", rounds.label);
    let built = algorithm::best(&t, AllReduce, &opt).unwrap();
    assert!(built.time_ns >= cert, "{}", built.label);
    let stopped = built
        .tried
        .iter()
        .position(|t| matches!(&t.outcome, Outcome::Ran(_, x) if *x <= 1.01 * cert))
        .unwrap_or_else(|| panic!("no schedule within 1% of the bound: {}", built.label));
    // Everything after the first schedule within 1% was skipped.
    assert!(
        built.tried[stopped + 1..]
            .iter()
            .all(|t| matches!(t.outcome, Outcome::Skipped(_))),
        "{}",
        built.label
    );
}

#[test]
fn best_is_refused_with_options_it_cannot_pass_on() {
    let t = from_spec("torus:4x4", &[50.0], &[0.0]).unwrap();
    let single = Options {
        multiport: false,
        ..Options::default()
    };
    assert!(algorithm::build(&t, AllReduce, Algorithm::Best, &single).is_err());
    let loose = Options {
        tolerance: 1.5,
        ..Options::default()
    };
    assert_eq!(
        algorithm::build(&t, AllReduce, Algorithm::Best, &loose),
        Err(algorithm::SpecError::Tolerance)
    );
    assert_eq!(algorithm::parse_tolerance("1%"), Ok(0.01));
    assert_eq!(algorithm::parse_tolerance("0.5"), Ok(0.5));
    assert!(
        algorithm::parse_tolerance("-1%")
            .unwrap_err()
            .to_string()
            .contains("0.01 or 1%")
    );
}

#[test]
fn a_study_sets_bests_tolerance_and_a_bad_one_is_refused_with_its_line() {
    // `[evaluator] best_tolerance`: a percentage or a fraction, carried to
    // the replays of the decision and the joint optimum (`best_spec`).
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/studies/gpt3-4d.toml")).unwrap();
    assert!(!base.contains("[evaluator]"));
    let ok = dir.path().join("ok.toml");
    std::fs::write(&ok, format!("{base}\n[evaluator]\nbest_tolerance = \"2%\"\n")).unwrap();
    let s = dimsum::study::Study::load(&ok).unwrap();
    assert_eq!(s.evaluator.best_tolerance, 0.02);
    assert_eq!(dimsum::pipeline::procure::best_spec(&s).best_tolerance, 0.02);
    let line = base.lines().count() + 3;
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, format!("{base}\n[evaluator]\nbest_tolerance = 1.5\n")).unwrap();
    let e = dimsum::study::Study::load(&bad).unwrap_err().to_string();
    assert!(e.contains("evaluator.best_tolerance"), "{e}");
    assert!(e.contains(&format!(":{line}")), "{e} (line {line})");
    assert!(e.contains("0.01 or 1%"), "{e}");
}

//! `--algorithm best`: every other algorithm built and replayed, the
//! fastest valid one kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::topology::from_spec;
use dimsum::model::workload::CollectiveKind::{AllGather, AllReduce};
use dimsum::schedule::algorithm::{self, Algorithm, Options};
use dimsum::schedule::simulate::{LinkModel, SimOptions, simulate};

#[test]
fn best_is_the_fastest_it_tried_and_says_so() {
    for (spec, gbps, kind, size) in [
        ("torus:4x4", vec![50.0], AllReduce, 65536.0),
        ("torus:4x4", vec![50.0], AllReduce, 1.0737e9),
        ("mesh:4x4", vec![100.0, 25.0], AllGather, 1e8),
        ("ring:6", vec![50.0], AllGather, 1e6),
    ] {
        let t = from_spec(spec, &gbps, &[500.0]).unwrap();
        for model in [LinkModel::AlphaBeta, LinkModel::Tacos] {
            let opt = Options {
                size_bytes: size,
                link_model: model,
                ..Options::default()
            };
            let b = algorithm::best(&t, kind, &opt).unwrap();
            let times: Vec<f64> = b
                .tried
                .iter()
                .filter_map(|t| t.outcome.as_ref().ok().map(|x| x.1))
                .collect();
            assert!(times.len() >= 5, "{spec}: {:?}", b.tried);
            let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
            // The winner replays (in the same link model) at the fastest
            // time any candidate replayed at.
            let sim = SimOptions {
                size_bytes: size,
                model,
                record: false,
                reduce_gbps: None,
            };
            let r = simulate(&b.schedule, &t, &sim).unwrap();
            assert!(r.valid);
            assert_eq!(r.time_ns, fastest, "{spec} {size}");
            let won = b
                .tried
                .iter()
                .find(|t| t.outcome.as_ref().is_ok_and(|x| x.1 == fastest))
                .and_then(|t| t.outcome.as_ref().ok())
                .unwrap();
            assert_eq!(b.schedule.algorithm, format!("best of {}: {}", times.len(), won.0));
            // Through the dispatcher, the same schedule.
            let s = algorithm::build(&t, kind, Algorithm::Best, &opt).unwrap();
            assert_eq!(s.algorithm, b.schedule.algorithm);
        }
    }
}

#[test]
fn best_is_refused_with_options_it_cannot_pass_on() {
    let t = from_spec("torus:4x4", &[50.0], &[0.0]).unwrap();
    let single = Options {
        multiport: false,
        ..Options::default()
    };
    assert!(algorithm::build(&t, AllReduce, Algorithm::Best, &single).is_err());
}

//! `dimsum failures`: a failed part's iteration time against hand-worked
//! values (a ring opened into a line, a fully-connected pair rerouted, a
//! switch NIC rerouted over the dimension below or its group re-formed),
//! failures per day from the catalog's MTBFs, goodput after
//! checkpoint-restart, the JSON's fields, one-line errors; a proptest: no
//! failure makes the iteration faster, and every replay sits at or above
//! its certified bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::model::failure::{Part, Reliability, Remedy, failures_per_day};
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::failures::{FailureCase, FailureResults, Failures};
use dimsum::study::Study;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// A study of `dims` (block, NPUs; latency 0, LIBRA's time model), one
/// `kind` collective of `bytes` over `group` with no compute, at `bw`.
fn study_text(dims: &[(&str, u32)], bw: &[f64], kind: &str, bytes: f64, group: &[i64], extra: &str) -> String {
    let mut s = format!("name = \"f\"\nbw = {bw:?}\n{extra}\n");
    for (d, (block, n)) in dims.iter().enumerate() {
        s += &format!(
            "[[fabric.dims]]\nname = \"d{d}\"\nblock = \"{block}\"\nnpus = {n}\nlatency_ns = 0.0\ntier = \"t{d}\"\n"
        );
    }
    for d in 0..dims.len() {
        s += &format!("[cost.tiers.t{d}]\nlink_usd_per_gbps = 1.0\n");
    }
    s += &format!(
        "[workload]\n[[workload.layers]]\nname = \"l0\"\nforward = {{ compute_ns = 0.0 }}\ninput_grad = {{ compute_ns = 0.0 }}\nweight_grad = {{ compute_ns = 0.0, collective = \"{kind}\", bytes = {bytes:e}, group = {group:?} }}\n"
    );
    s
}

fn failures(text: &str) -> FailureResults {
    let study = Study::parse(text, Path::new("f.toml")).unwrap();
    let bw = study.bw.clone().unwrap();
    Executor::quiet()
        .run(Failures {
            study: &study,
            bw: &bw,
            bom: None,
        })
        .unwrap()
}

fn case<'a>(r: &'a FailureResults, dim: &str, part: Part) -> &'a FailureCase {
    r.failures
        .iter()
        .find(|c| c.dimension == dim && c.part == part)
        .unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

/// A ring of 4 at B = 100 GB/s per NPU (50 GB/s per link each way), one
/// link failed: a line of 4.
///
/// All-gather of S = 1 GB (250 MB from each NPU). Healthy: (n-1)/n S / B =
/// 0.75e9 / 100 = 7.5e6 ns. On the line an end NPU receives the other
/// three shards, (n-1)/n S = 0.75e9 B, over its one link at B/2 = 50:
/// 2 (n-1)/n S / B = 1.5e7 ns, twice the ring; the bidirectional ring
/// folded on the line meets it, so the iteration takes 15 ms.
///
/// All-reduce of S = 1 GB. Healthy: 2 (n-1)/n S / B = 1.5e7 ns. On the
/// line the bound is 2 S / B = 2e7 ns: 2 (n-1) S = 6e9 B sent over 6
/// directed links of 50 GB/s, and each half must receive the other half's
/// sum, S over the middle link at 50 GB/s.
#[test]
fn ring_of_four_with_a_failed_link_is_a_line() {
    let r = failures(&study_text(&[("ring", 4)], &[100.0], "all-gather", 2.5e8, &[4], ""));
    assert!(close(r.healthy_ms, 7.5, 1e-12), "{}", r.healthy_ms);
    let c = case(&r, "d0", Part::NpuLink);
    assert_eq!(c.remedy, Remedy::Line);
    let t = &c.collectives[0];
    assert!(!t.estimate, "{t:?}");
    assert!(close(t.phase_bytes, 1e9, 1e-12), "{t:?}");
    assert!(close(t.bound_ns.unwrap(), 1.5e7, 1e-9), "{t:?}");
    assert!(close(t.replay_ns.unwrap(), 1.5e7, 1e-9), "{t:?}");
    assert!(close(t.healthy_replay_ns.unwrap(), 7.5e6, 1e-9), "{t:?}");
    assert!(close(c.iteration_time_ms.unwrap(), 15.0, 1e-9), "{c:?}");
    assert!(close(c.slowdown.unwrap(), 2.0, 1e-9), "{c:?}");

    let r = failures(&study_text(&[("ring", 4)], &[100.0], "all-reduce", 1e9, &[4], ""));
    assert!(close(r.healthy_ms, 15.0, 1e-12), "{}", r.healthy_ms);
    let c = case(&r, "d0", Part::NpuLink);
    let t = &c.collectives[0];
    assert!(close(t.bound_ns.unwrap(), 2e7, 1e-9), "{t:?}");
    assert!(t.replay_ns.unwrap() >= t.bound_ns.unwrap() * (1.0 - 1e-9));
    assert!(c.slowdown.unwrap() >= 2e7 / 1.5e7 * (1.0 - 1e-9), "{c:?}");
    // The iteration is the healthy one scaled by the replays' ratio.
    let ratio = t.replay_ns.unwrap() / t.healthy_replay_ns.unwrap();
    assert!(close(c.iteration_time_ms.unwrap(), 15.0 * ratio, 1e-9), "{c:?}");
}

/// A fully-connected group of 4 at B = 90 GB/s per NPU: 30 GB/s per link.
/// The pair (0, 1) loses its link (both ways): 10 directed links of 30
/// GB/s carry the all-reduce's 2 (n-1) S = 6e9 B: at least 6e9 / 300 =
/// 2e7 ns, against the healthy 2 (n-1)/n S / B = 1.5e9 / 90 = 1.667e7 ns
/// (direct meets it): at least 1.2 times.
#[test]
fn fully_connected_pair_rerouted_through_a_peer() {
    let r = failures(&study_text(
        &[("fully-connected", 4)],
        &[90.0],
        "all-reduce",
        1e9,
        &[4],
        "",
    ));
    let c = case(&r, "d0", Part::NpuLink);
    assert_eq!(c.remedy, Remedy::Rerouted);
    let t = &c.collectives[0];
    assert!(t.bound_ns.unwrap() >= 2e7 * (1.0 - 1e-9), "{t:?}");
    assert!(t.replay_ns.unwrap() >= t.bound_ns.unwrap() * (1.0 - 1e-9));
    assert!(close(t.healthy_replay_ns.unwrap(), 1.5e9 / 90.0, 1e-9), "{t:?}");
    assert!(c.slowdown.unwrap() >= 1.2 * (1.0 - 1e-9), "{c:?}");
}

/// A switch of 4 (B = 100 GB/s) above a ring of 2 (B = 200: 100 GB/s per
/// link). NPU 0's NIC fails: it reaches the switch through its ring
/// neighbour's NIC, shared with the neighbour's own group: 50 GB/s. The
/// bound: all of S = 1 GB must leave NPU 0 and its relay (every other NPU
/// needs NPU 0's share of every element) through that 50 GB/s link:
/// 1e9 / 50 = 2e7 ns, against the healthy 2 (n-1)/n S / B = 1.5e7 ns. The
/// same schedule replayed healthy and failed moves every byte of NPU 0 at
/// half the rate: twice the time, so the iteration takes 2 x 15 = 30 ms.
#[test]
fn switch_nic_rerouted_over_the_dimension_below() {
    let r = failures(&study_text(
        &[("ring", 2), ("switch", 4)],
        &[200.0, 100.0],
        "all-reduce",
        1e9,
        &[-1, 4],
        "",
    ));
    assert!(close(r.healthy_ms, 15.0, 1e-12));
    for part in [Part::Nic, Part::Cable] {
        let c = case(&r, "d1", part);
        assert_eq!(c.remedy, Remedy::Rerouted);
        let t = &c.collectives[0];
        assert!(close(t.bound_ns.unwrap(), 2e7, 1e-9), "{t:?}");
        assert!(t.healthy_replay_ns.unwrap() >= 1.5e7 * (1.0 - 1e-9), "{t:?}");
        assert!(
            close(t.replay_ns.unwrap(), 2.0 * t.healthy_replay_ns.unwrap(), 1e-9),
            "{t:?}"
        );
        assert!(close(c.iteration_time_ms.unwrap(), 30.0, 1e-9), "{c:?}");
    }
    // The whole switch: every member through its neighbour's, at 50 GB/s:
    // at least as slow as one member so.
    let c = case(&r, "d1", Part::Switch);
    assert_eq!(c.remedy, Remedy::Rerouted);
    let t = &c.collectives[0];
    assert!(t.replay_ns.unwrap() >= t.bound_ns.unwrap() * (1.0 - 1e-9));
    assert!(c.iteration_time_ms.unwrap() >= 30.0 * (1.0 - 1e-9), "{c:?}");
    // The ring below was not touched by any of them.
    assert!(case(&r, "d0", Part::NpuLink).collectives.is_empty());
}

/// A switch of 4 with nothing below: a failed NIC re-forms the group on
/// 3, whose bound is 2 (3-1)/3 S / B = 4/3 x 1e9 / 100 = 1.333e7 ns, below
/// the healthy 1.5e7 ns (the lost member's work is not the survivors'), so
/// the iteration keeps its healthy time; a failed switch stops the job.
#[test]
fn switch_nic_with_nothing_below_re_forms_the_group() {
    let r = failures(&study_text(&[("switch", 4)], &[100.0], "all-reduce", 1e9, &[4], ""));
    let c = case(&r, "d0", Part::Nic);
    assert_eq!(c.remedy, Remedy::ReFormed);
    let t = &c.collectives[0];
    assert!(close(t.bound_ns.unwrap(), 4.0 / 3.0 * 1e7, 1e-9), "{t:?}");
    assert!(t.replay_ns.unwrap() >= t.bound_ns.unwrap() * (1.0 - 1e-9), "{t:?}");
    assert!(close(c.iteration_time_ms.unwrap(), 15.0, 1e-12));
    let s = case(&r, "d0", Part::Switch);
    assert_eq!((s.remedy, s.iteration_time_ms), (Remedy::Restart, None));
}

/// Llama 3's Table 5 (arXiv 2407.21783): 16,384 GPUs x 54 days x 24 h =
/// 21,233,664 hours; 7 NIC failures: 3,033,381 h each; 35 switch/cable
/// failures: 606,676 h per link. A switch of 8 NPUs at 50 GB/s on 400G
/// InfiniBand ports: 8 ports (one each), 8 NPU cables.
#[test]
fn failures_per_day_from_the_catalog() {
    assert_eq!(16_384u64 * 54 * 24, 21_233_664);
    let text = study_text(&[("switch", 8)], &[50.0], "all-reduce", 1e9, &[8], "")
        + "[procurement]\n[procurement.dims.d0]\nports = [\"ib-ndr-400\"]\nreach_m = 30.0\n";
    let study = Study::parse(&text, Path::new("f.toml")).unwrap();
    let bw = [50.0];
    let bom = dimsum::model::bom::bom(&study.fabric, &study.procurement(), &bw).unwrap();
    let r = Executor::quiet()
        .run(Failures {
            study: &study,
            bw: &bw,
            bom: Some(&bom),
        })
        .unwrap();
    let port = r.parts.iter().find(|p| p.kind == "port").unwrap();
    assert_eq!((port.component.as_str(), port.quantity), ("ib-ndr-400", 8));
    // 8 x 24 / 3,033,381 = 6.3296e-5 a day.
    assert!(close(port.failures_per_day.unwrap(), 8.0 * 24.0 / 3_033_381.0, 1e-12));
    let cable = r.parts.iter().find(|p| p.kind == "cable").unwrap();
    assert_eq!(cable.quantity, 8);
    // 8 x 24 / 606,676 = 3.1648e-4 a day.
    assert!(close(cable.failures_per_day.unwrap(), 8.0 * 24.0 / 606_676.0, 1e-12));
    // The switch has no MTBF: unknown, and not counted.
    assert!(
        r.parts
            .iter()
            .any(|p| p.kind == "switch" && p.failures_per_day.is_none())
    );
    let total = 8.0 * 24.0 / 3_033_381.0 + 8.0 * 24.0 / 606_676.0;
    assert!(close(r.failures_per_day.unwrap(), total, 1e-12));
    assert!(close(
        case(&r, "d0", Part::Nic).failures_per_day.unwrap(),
        8.0 * 24.0 / 3_033_381.0,
        1e-12
    ));
    assert_eq!(case(&r, "d0", Part::Switch).failures_per_day, None);
    assert!(close(
        failures_per_day(4096, 3_033_381.0),
        4096.0 * 24.0 / 3_033_381.0,
        1e-15
    ));
}

/// 4.8 failures a day = 0.2 an hour; a checkpoint every 30 min (0.5 h),
/// 15 min (0.25 h) to restart, none to write: 0.2 x (0.25 + 0.25) = 0.1
/// lost, goodput 0.9. With 18 s (0.005 h) to write: + 0.005 / 0.5 = 0.01,
/// and Young's interval sqrt(2 x 0.005 / 0.2) h = sqrt(0.05) h = 13.4 min.
#[test]
fn goodput_by_hand() {
    let r = Reliability {
        checkpoint_interval_min: 30.0,
        restart_min: 15.0,
        checkpoint_write_s: 0.0,
    };
    let g = r.goodput(4.8);
    assert!(close(g.lost_fraction, 0.1, 1e-12) && close(g.goodput, 0.9, 1e-12));
    assert_eq!(g.young_interval_min, None);
    let g = Reliability {
        checkpoint_write_s: 18.0,
        ..r
    }
    .goodput(4.8);
    assert!(close(g.lost_fraction, 0.11, 1e-12));
    assert!(close(g.young_interval_min.unwrap(), 0.05f64.sqrt() * 60.0, 1e-12));
    // More failures than the checkpoints can absorb: no goodput, not negative.
    assert_eq!(r.goodput(1e4).goodput, 0.0);
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const RELIABILITY: &str = "[reliability]\ncheckpoint_interval_min = 30.0\nrestart_min = 15.0\n";

#[test]
fn json_has_the_issues_fields() {
    let dir = tempfile::tempdir().unwrap();
    let text = study_text(
        &[("ring", 2), ("switch", 4)],
        &[200.0, 100.0],
        "all-reduce",
        1e9,
        &[-1, 4],
        RELIABILITY,
    );
    let p = write(&dir, "f.toml", &text);
    let out = dimsum().arg("failures").arg(&p).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "dimsum-failures/1");
    assert!(v["stamp"]["study_hash"].is_string());
    assert!(close(v["healthy_ms"].as_f64().unwrap(), 15.0, 1e-12));
    let f = v["failures"].as_array().unwrap();
    // ring: npu-link; switch: nic, cable, switch.
    assert_eq!(f.len(), 4);
    for c in f {
        for key in [
            "dimension",
            "part",
            "remedy",
            "iteration_time_ms",
            "slowdown",
            "collectives",
        ] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
    }
    assert_eq!(f[1]["dimension"], "d1");
    assert_eq!(f[1]["part"], "nic");
    assert_eq!(f[1]["remedy"], "rerouted");
    let t = &f[1]["collectives"][0];
    assert!(t["time_ns"].as_f64().unwrap() >= t["healthy_ns"].as_f64().unwrap());
    assert!(t["replay_ns"].as_f64().unwrap() >= t["bound_ns"].as_f64().unwrap() * (1.0 - 1e-9));
    // The built-in catalog's default parts for a switch: an MTBF for the
    // NIC and the cable, and so a goodput with [reliability].
    assert!(v["failures_per_day"].as_f64().unwrap() > 0.0);
    assert!(v["goodput"]["goodput"].as_f64().unwrap() < 1.0);
    // The terminal's table names the same cases.
    let out = dimsum().arg("failures").arg(&p).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("| d1 | nic | rerouted |"), "{table}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let base = study_text(&[("ring", 4)], &[100.0], "all-reduce", 1e9, &[4], "");
    let cases = [
        (
            base.clone() + RELIABILITY + "checkpoint_every = 3\n",
            "checkpoint_every",
        ),
        (
            base.clone() + "[reliability]\ncheckpoint_interval_min = 0.0\nrestart_min = 1.0\n",
            "reliability.checkpoint_interval_min",
        ),
        (
            base.clone() + RELIABILITY + "checkpoint_write_s = 1800.0\n",
            "reliability.checkpoint_write_s",
        ),
    ];
    for (text, field) in cases {
        let p = write(&dir, "bad.toml", &text);
        let out = dimsum().arg("failures").arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{field}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(field) && err.contains("bad.toml"), "{err}");
    }
    let p = write(&dir, "ok.toml", &base);
    for (args, what) in [(vec!["--bw", "1,2"], "--bw"), (vec!["--bw", "fast"], "--bw")] {
        let out = dimsum().arg("failures").arg(&p).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(what), "{err}");
    }
    let out = dimsum()
        .arg("failures")
        .arg(dir.path().join("missing.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8(out.stderr).unwrap().trim_end().lines().count(), 1);
}

/// A random fabric (block, NPUs per dimension), its allocation, a collective
/// kind's index and a group.
type Drawn = (Vec<(&'static str, u32)>, Vec<f64>, usize, Vec<i64>);

fn fabric_strategy() -> impl Strategy<Value = Drawn> {
    let block = prop_oneof![Just("ring"), Just("fully-connected"), Just("switch")];
    (
        proptest::collection::vec((block, 2u32..=5, 10.0f64..200.0), 1..=2),
        0usize..3,
        any::<u64>(),
    )
        .prop_map(|(dims, kind, seed)| {
            let fabric: Vec<(&'static str, u32)> = dims.iter().map(|d| (d.0, d.1)).collect();
            let bw: Vec<f64> = dims.iter().map(|d| d.2.round()).collect();
            // Each dimension in the group whole, or not at all (at least one).
            let mut group: Vec<i64> = fabric
                .iter()
                .enumerate()
                .map(|(d, (_, n))| if seed >> d & 1 == 1 { i64::from(*n) } else { -1 })
                .collect();
            if group.iter().all(|g| *g < 0) {
                group[0] = i64::from(fabric[0].1);
            }
            (fabric, bw, kind, group)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn failures_never_speed_up_and_replays_sit_above_their_bounds(
        (fabric, bw, kind, group) in fabric_strategy()
    ) {
        let kind = ["all-reduce", "all-gather", "reduce-scatter"][kind];
        let r = failures(&study_text(&fabric, &bw, kind, 1e8, &group, ""));
        prop_assert!(r.healthy_bound_ms <= r.healthy_ms * (1.0 + 1e-9));
        for c in &r.failures {
            if let Some(t) = c.iteration_time_ms {
                prop_assert!(t >= r.healthy_ms * (1.0 - 1e-12), "{c:?}");
                prop_assert!(t >= r.healthy_bound_ms * (1.0 - 1e-12));
            }
            for x in &c.collectives {
                prop_assert!(x.time_ns >= x.healthy_ns * (1.0 - 1e-12), "{x:?}");
                if let (Some(t), Some(b)) = (x.replay_ns, x.bound_ns) {
                    prop_assert!(t >= b * (1.0 - 1e-9), "{x:?}");
                }
            }
        }
    }
}

/// `dimsum run` of the default study ([reliability]) writes failures.json,
/// stamped, and the report's "When parts fail" section, for the decision.
#[test]
fn run_reports_when_parts_fail() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dimsum()
        .arg("run")
        .arg(root.join("studies/gpt3-4d-procurement.toml"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.path().join("gpt3-4d-procurement");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("failures.json")).unwrap()).unwrap();
    assert_eq!(v["format"], "dimsum-failures/1");
    assert_eq!(v["stamp"]["dimsum_version"], env!("CARGO_PKG_VERSION"));
    // Four dimensions: three with one part, the pod's switch with three.
    assert_eq!(v["failures"].as_array().unwrap().len(), 6);
    // The decision's bill: its pod NICs have an MTBF, so the cluster's rate
    // and the goodput are known.
    assert!(v["failures_per_day"].as_f64().unwrap() > 0.0);
    let g = v["goodput"]["goodput"].as_f64().unwrap();
    assert!(g > 0.0 && g < 1.0, "{g}");
    let summary = std::fs::read_to_string(d.join("summary.md")).unwrap();
    assert!(summary.contains("## When parts fail"), "{summary}");
}

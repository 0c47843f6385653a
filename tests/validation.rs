//! The compute model and the validation against published training runs:
//! Megatron-LM's SC'21 weak-scaling table predicted within 10%, the study's
//! `[npu]` and `[parallelism]` keys, and roofline properties.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use dimsum::model::compute::{Device, accelerator};
use dimsum::model::fabric::Block;
use dimsum::model::transformer::Recompute;
use dimsum::pipeline::validate::{self, Published};
use dimsum::study::Study;
use proptest::prelude::*;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

/// coopt on each SC'21 row's cluster (every TP x PP x DP and placement
/// with the row's recipe, the fabric as built) keeps tensor parallelism
/// within the node, as the paper does, and is never slower than the
/// paper's configuration; the paper's own is timed exactly as predicted.
#[test]
fn megatron_sc21_strategies_searched_again() {
    let (p, _) = Published::load(&root().join("validation/megatron-sc21.toml")).unwrap();
    let v = validate::validate(&p).unwrap();
    assert_eq!(v.rechosen.len(), p.runs.len());
    let mut same = 0;
    for (x, rc) in v.predictions.iter().zip(&v.rechosen) {
        let published = rc.published_ms.unwrap();
        assert!(
            (published - x.iteration_ms).abs() <= 1e-9 * x.iteration_ms,
            "{}: {published} vs {}",
            rc.run,
            x.iteration_ms
        );
        let best = rc.best.as_ref().unwrap();
        assert!(best.tp <= u64::from(p.cluster.node_gpus), "{}: tp {}", rc.run, best.tp);
        assert!(best.time_ms().unwrap() <= published * (1.0 + 1e-9), "{}", rc.run);
        if (best.tp, best.pp, best.dp) == (x.run.tp, x.run.pp, x.dp) {
            same += 1;
        }
    }
    // Most rows: the paper's own split is the best found.
    assert!(same >= 7, "{same} of 10");
}

/// Every row of Narayanan et al. (SC'21), Table 1, within 8% of the
/// published TFLOP/s per GPU and within 3% on average (issue 45's target),
/// with the A100's one calibration.
#[test]
fn megatron_sc21_within_ten_percent() {
    let (p, _) = Published::load(&root().join("validation/megatron-sc21.toml")).unwrap();
    assert_eq!(p.runs.len(), 10);
    // The published figures, as the paper prints them (Table 1).
    let published = [137.0, 138.0, 142.0, 135.0, 138.0, 140.0, 148.0, 155.0, 163.0, 163.0];
    let v = validate::validate(&p).unwrap();
    for (x, want) in v.predictions.iter().zip(published) {
        assert_eq!(x.run.measured_tflops, want, "{}", x.run.name);
        assert!(x.error.abs() <= 0.08, "{}: {:.1}%", x.run.name, 100.0 * x.error);
        // Predicted throughput is the paper's FLOPs over the predicted time.
        assert!(x.predicted_tflops > 0.0 && x.memory_gib < 80.0, "{}", x.run.name);
    }
    // The A100's calibration is the 1.7B row's (compute::A100_GEMM): that
    // row is reproduced, the nine others are predictions.
    let calibration = &v.predictions[0];
    assert_eq!(calibration.run.name, "1.7B");
    assert!(calibration.error.abs() < 0.01, "{:+.2}%", 100.0 * calibration.error);
    assert_eq!(v.gemm_efficiency, dimsum::model::compute::A100_GEMM);
    let mean = v.predictions.iter().map(|x| x.error.abs()).sum::<f64>() / 10.0;
    assert!(mean <= 0.03, "mean {:.2}%", 100.0 * mean);
    // The best fit is a fraction of the peak and no worse than the table's.
    let worst = v.predictions.iter().map(|x| x.error.abs()).fold(0.0, f64::max);
    assert!(v.best_fit.0 > 0.4 && v.best_fit.0 <= 1.0);
    assert!(v.best_fit.1 <= worst + 1e-12);
}

/// A different generation, framework and recipe (MosaicML's MPT on H100,
/// FSDP, model FLOPs): its 7B row calibrates the H100's BF16 products
/// (compute::H100_GEMM, within 1%), the 13B and 30B rows are predictions,
/// within 15% (the README's claim; results/validation/mpt-h100.md).
#[test]
fn mpt_h100_calibrates_on_its_7b_row() {
    let (p, _) = Published::load(&root().join("validation/mpt-h100.toml")).unwrap();
    let v = validate::validate(&p).unwrap();
    // The published model TFLOP/s per GPU (MFU x 989.4).
    let published = [459.5, 394.4, 434.6];
    for (x, want) in v.predictions.iter().zip(published) {
        assert_eq!(x.run.measured_tflops, want);
        assert!(x.error.abs() < 0.15, "{}: {:+.1}%", x.run.name, 100.0 * x.error);
    }
    assert_eq!(v.gemm_efficiency, dimsum::model::compute::H100_GEMM);
    assert!(
        v.predictions[0].error.abs() < 0.01,
        "{:+.2}%",
        100.0 * v.predictions[0].error
    );
}

#[test]
fn cluster_fabric_by_hand() {
    let (p, _) = Published::load(&root().join("validation/megatron-sc21.toml")).unwrap();
    // 32 GPUs: a node of 8 on NVSwitch, 4 nodes on the network.
    let f = validate::fabric(&p.cluster, 32);
    assert_eq!(f.dims.len(), 2);
    assert_eq!((f.dims[0].npus, f.dims[1].npus), (8, 4));
    assert!(f.dims.iter().all(|d| d.block == Block::Switch));
    // The 1.7B row: DP 32 = 512 / 16 sequences per micro-batch / 1 step.
    let (m, s) = validate::model_of(&p.runs[0]).unwrap();
    assert_eq!((s.tp, s.pp, s.dp), (1, 1, 32));
    assert_eq!(m.ffn, 4 * 2304);
    assert_eq!(s.recompute, Recompute::Full);
}

#[test]
fn cli_validate_writes_and_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    dimsum()
        .args(["validate"])
        .arg(root().join("validation/megatron-sc21.toml"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    for f in [
        "megatron-sc21.md",
        "megatron-sc21.json",
        "megatron-sc21-throughput.svg",
        "megatron-sc21-throughput.png",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("megatron-sc21.json")).unwrap()).unwrap();
    assert_eq!(json["format"], "dimsum-validation/1");
    assert_eq!(json["validation"]["predictions"].as_array().unwrap().len(), 10);
    // A bad file: exit 2, one line naming the file and what is allowed.
    let text = std::fs::read_to_string(root().join("validation/megatron-sc21.toml")).unwrap();
    for (from, to, says) in [
        ("npu = \"a100-80gb\"", "npu = \"a100-96gb\"", "allowed"),
        ("recompute = \"full\"", "recompute = \"some\"", "allowed"),
        ("gpus = 32", "gpus = 33", "node"),
        ("gpus = 32", "gpus = 0", "gpus"),
        ("name = \"megatron-sc21\"", "name = \"../x\"", "letters, digits"),
    ] {
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, text.replacen(from, to, 1)).unwrap();
        let o = dimsum()
            .arg("validate")
            .arg(&bad)
            .arg("--out")
            .arg(dir.path().join("b"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{to}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("bad.toml") && err.contains(says), "{err}");
        assert!(!dir.path().join("b").exists());
    }
    // Two files of one name would write the same result files: refused
    // before anything is written.
    let copy = dir.path().join("copy.toml");
    std::fs::write(&copy, &text).unwrap();
    let o = dimsum()
        .arg("validate")
        .arg(root().join("validation/megatron-sc21.toml"))
        .arg(&copy)
        .arg("--out")
        .arg(dir.path().join("c"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("copy.toml") && err.contains("also the name"), "{err}");
    assert!(!dir.path().join("c").exists());
}

const STUDY: &str = r#"
name = "npu-keys"
[[fabric.dims]]
name = "node"
block = "switch"
npus = 8
[[fabric.dims]]
name = "pod"
block = "switch"
npus = 4
[cost.tiers.node]
link_usd_per_gbps = 1.0
[cost.tiers.pod]
link_usd_per_gbps = 5.0
[model]
preset = "llama2-70b"
[npu]
type = "h100-sxm"
[parallelism]
tp = 8
pp = 4
dp = 1
recompute = "selective"
virtual_stages = 2
"#;

#[test]
fn study_npu_and_parallelism_keys() {
    let s = Study::parse(STUDY, Path::new("s.toml")).unwrap();
    let npu = s.npu.as_ref().unwrap();
    let h100 = accelerator("h100-sxm").unwrap();
    assert_eq!(npu.device.peak_tflops, h100.bf16_tflops);
    assert_eq!(npu.device.hbm_gbps, h100.hbm_gbps);
    assert_eq!(npu.device.flat, None);
    let st = s.parallelism.as_ref().unwrap();
    assert_eq!((st.recompute, st.virtual_stages), (Recompute::Selective, 2));
    // `true` / `false` keep meaning full / none; efficiency is the override.
    let old = STUDY.replace("recompute = \"selective\"", "recompute = true").replace(
        "type = \"h100-sxm\"",
        "peak_tflops = 989.0\nefficiency = 0.5\nhbm_gib = 80.0",
    );
    let s = Study::parse(&old, Path::new("s.toml")).unwrap();
    assert_eq!(s.parallelism.as_ref().unwrap().recompute, Recompute::Full);
    assert_eq!(s.npu.as_ref().unwrap().device.flat, Some(0.5));
    // Errors name the section's line and what is allowed.
    for (from, to, says) in [
        ("type = \"h100-sxm\"", "type = \"h100\"", "h100-sxm"),
        ("recompute = \"selective\"", "recompute = \"most\"", "selective"),
        ("virtual_stages = 2", "virtual_stages = 0", ">= 1"),
        ("type = \"h100-sxm\"", "peak_tflops = 900.0", "give `hbm_gib`"),
    ] {
        let e = Study::parse(&STUDY.replace(from, to), Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:") && e.contains(says), "{e}");
    }
}

fn device() -> impl Strategy<Value = Device> {
    (100.0..3000.0f64, 500.0..9000.0f64, 0.3..1.0f64, 0.3..1.0f64, 1u32..400).prop_map(|(peak, hbm, g, m, sms)| {
        Device {
            peak_tflops: peak,
            hbm_gbps: hbm,
            sms,
            gemm_efficiency: g,
            memory_efficiency: m,
            flat: None,
            onchip: None,
            fp8: None,
        }
    })
}

proptest! {
    /// A matrix product never beats its roofline (FLOPs at the peak, bytes
    /// at the HBM bandwidth), and never gets slower with a faster NPU.
    #[test]
    fn gemm_never_beats_the_roofline_and_is_monotone(
        d in device(),
        m in 1.0..20000.0f64, n in 1.0..20000.0f64, k in 1.0..20000.0f64, batch in 1.0..64.0f64,
        faster in 1.0..4.0f64,
    ) {
        let (m, n, k, batch) = (m.round(), n.round(), k.round(), batch.round());
        let t = d.gemm_ns(m, n, k, batch, 2.0);
        let flops = 2.0 * batch * m * n * k;
        let bytes = batch * (m * k + k * n + m * n) * 2.0;
        prop_assert!(t >= flops / (d.peak_tflops * 1e3) * (1.0 - 1e-12));
        prop_assert!(t >= bytes / d.hbm_gbps * (1.0 - 1e-12));
        for quicker in [
            Device { peak_tflops: d.peak_tflops * faster, ..d },
            Device { hbm_gbps: d.hbm_gbps * faster, ..d },
            Device { gemm_efficiency: (d.gemm_efficiency * faster).min(1.0), ..d },
        ] {
            prop_assert!(quicker.gemm_ns(m, n, k, batch, 2.0) <= t * (1.0 + 1e-12));
        }
    }
}

/// NVIDIA NeMo's DGX-H100 table (validation/nemo-h100.toml): every
/// row predicts (presets, expert parallelism, FP8); the FP8 calibration
/// row, GPT-3 5B on 64 GPUs at 765 model TFLOP/s per GPU, within 1%
/// (`H100_FP8_GEMM` was fitted on it); the same row in BF16 slower than in
/// FP8 but not twice as fast in FP8 (the attention core, the logits and
/// the casts stay BF16 or memory-bound).
#[test]
fn nemo_h100_rows_predict_and_the_fp8_calibration_row_holds() {
    let (p, _) = Published::load(&root().join("validation/nemo-h100.toml")).unwrap();
    assert!(p.runs.len() >= 11);
    let npu = validate::npu_of(&p.cluster, None).unwrap();
    for r in &p.runs {
        let x = validate::predict(&p.cluster, &npu, r).unwrap();
        assert!(x.predicted_tflops.is_finite() && x.predicted_tflops > 0.0, "{}", r.name);
    }
    let five = &p.runs[0];
    assert_eq!(five.name, "GPT-3 5B, 64 GPUs, FP8");
    let fp8 = validate::predict(&p.cluster, &npu, five).unwrap();
    assert!(fp8.error.abs() <= 0.01, "{}", fp8.error);
    let bf16 = validate::Run {
        precision: dimsum::model::transformer::Precision::Bf16,
        ..five.clone()
    };
    let bf16 = validate::predict(&p.cluster, &npu, &bf16).unwrap();
    assert!(
        bf16.iteration_ms > fp8.iteration_ms * 1.2,
        "{} vs {}",
        bf16.iteration_ms,
        fp8.iteration_ms
    );
    assert!(
        bf16.iteration_ms < fp8.iteration_ms * 2.0,
        "{} vs {}",
        bf16.iteration_ms,
        fp8.iteration_ms
    );
    // FP8 on an A100, which has none, is refused with the NPU named.
    let a100 = validate::Cluster {
        npu: "a100-80gb".into(),
        ..p.cluster.clone()
    };
    let npu = validate::npu_of(&a100, None).unwrap();
    let e = validate::predict(&a100, &npu, five).unwrap_err();
    assert!(
        e.reason.contains("precision fp8 needs FP8 matrix products"),
        "{}",
        e.reason
    );
}

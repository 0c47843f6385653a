//! The real binary on real files: output contracts, exit codes and the
//! one-line errors for bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn dimsum() -> Command {
    Command::cargo_bin("dimsum").unwrap()
}

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// Ring(4) x Switch(8), one all-reduce of 64 MB per weight-grad.
const BASE: &str = r#"
name = "tiny"
time_model = "pipelined"
bw = [100, 50]

[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
latency_ns = 100
tier = "near"

[[fabric.dims]]
name = "b"
block = "switch"
npus = 8
latency_ns = 500
tier = "far"

[cost.tiers.near]
link_usd_per_gbps = 2.0
link_pj_per_bit = 1.0

[cost.tiers.far]
link_usd_per_gbps = 8.0
switch_usd_per_gbps = 10.0
nic_usd_per_gbps = 20.0
link_pj_per_bit = 5.0
switch_pj_per_bit = 10.0
nic_pj_per_bit = 15.0

[workload]
communicator = { weight_grad = [4, 8] }

[[workload.layers]]
name = "l0"
forward = { compute_ns = 1000 }
input_grad = { compute_ns = 2000 }
weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
"#;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `eval` on `text` and returns (exit code, stderr).
fn eval_err(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", text);
    let out = dimsum().arg("eval").arg(&p).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn assert_one_line(stderr: &str) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "not one line: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
}

#[test]
fn eval_json_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", BASE);
    let out = dimsum().args(["eval", "--json"]).arg(&p).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // All-reduce of 64e6 B on Ring(4) x Switch(8) at (100, 50) GB/s, pipelined:
    // max(6 steps * 100 ns + 96e6/100, 2 steps * 2 hops * 500 ns + 28e6/50)
    // = max(960_600, 562_000) ns; compute 6000 ns; iteration 966_600 ns.
    let ms = v["iteration_time_ms"].as_f64().unwrap();
    assert!((ms - 0.9666).abs() < 1e-12, "{ms}");
    assert!((v["compute_time_ms"].as_f64().unwrap() - 0.006).abs() < 1e-12);
    assert!((v["comm_time_ms"].as_f64().unwrap() - 0.9606).abs() < 1e-12);
    // Cost: 32 NPUs * (2 * 100 + (8 + 10 + 20) * 50) = 32 * 2100 = 67_200 $.
    assert!((v["network_cost_usd"].as_f64().unwrap() - 67_200.0).abs() < 1e-6);
    // Power: 32 * (100 GB/s * 8e9 * 1 pJ + 50 * 8e9 * 30 pJ) * 1e-12
    //      = 32 * (0.8 + 12) W = 409.6 W.
    assert!((v["network_power_w"].as_f64().unwrap() - 409.6).abs() < 1e-9);
    assert_eq!(v["bw_gbps"], serde_json::json!([100.0, 50.0]));
    assert_eq!(v["dims"].as_array().unwrap().len(), 2);
    assert_eq!(v["dims"][0]["bottleneck_of"], 1);
    // Every collective listed with its coefficients: the one all-reduce,
    // on the ring 2 (4-1)/4 x 64e6 = 96e6 B after 6 steps x 100 ns; on the
    // switch LIBRA's second level, 2 (8-1)/8 x 64e6/4 = 28e6 B after 2
    // steps x 2 hops x 500 ns; combined by max (pipelined).
    let c = &v["per_collective"];
    assert_eq!(c.as_array().unwrap().len(), 1);
    assert_eq!(c[0]["type"], "all-reduce");
    assert_eq!(c[0]["phase"], "weight-grad");
    assert_eq!(c[0]["layer"], 0);
    assert_eq!(c[0]["bytes"], 64e6);
    assert_eq!(c[0]["group"], serde_json::json!([4, 8]));
    assert_eq!(c[0]["combine"], "max");
    assert_eq!(c[0]["coefficients"][0]["bytes"], 96e6);
    assert_eq!(c[0]["coefficients"][0]["alpha_ns"], 600.0);
    assert_eq!(c[0]["coefficients"][1]["bytes"], 28e6);
    assert_eq!(c[0]["coefficients"][1]["alpha_ns"], 2000.0);
    assert!((c[0]["time_ms"].as_f64().unwrap() - 0.9606).abs() < 1e-12);
    // The bound: 2 (32-1)/32 x 64e6 B through 100 + 50 GB/s.
    let lb = 2.0 * 31.0 / 32.0 * 64e6 / 150.0 / 1e6;
    assert!(
        (c[0]["lower_bound_ms"].as_f64().unwrap() - lb).abs() < 1e-9,
        "{}",
        c[0]["lower_bound_ms"]
    );
}

/// `reduction_memory`: a reduction reads two operands and writes one at
/// the NPU's memory bandwidth. The same all-reduce with 1600 GB/s of
/// memory: the ring level reduces half of its 96e6 B, 3 x 48e6 / 1600 =
/// 90_000 ns more (960_600 -> 1_050_600 ns); the switch level half of its
/// 28e6 B, 3 x 14e6 / 1600 = 26_250 ns more (562_000 -> 588_250 ns); the
/// slower stays the ring: iteration 1_050_600 + 6000 ns compute.
#[test]
fn reduction_memory_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let text = BASE.replace("bw = [100, 50]", "bw = [100, 50]\nreduction_memory = 1600");
    let p = write(&dir, "s.toml", &text);
    let out = dimsum().args(["eval", "--json"]).arg(&p).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ms = v["iteration_time_ms"].as_f64().unwrap();
    assert!((ms - 1.0566).abs() < 1e-12, "{ms}");
    let c = &v["per_collective"][0]["coefficients"];
    assert!((c[0]["alpha_ns"].as_f64().unwrap() - 90_600.0).abs() < 1e-6);
    assert!((c[1]["alpha_ns"].as_f64().unwrap() - 28_250.0).abs() < 1e-6);
    // false, or no [npu] to take the bandwidth from: free, as LIBRA has it.
    let off = write(
        &dir,
        "off.toml",
        &BASE.replace("bw = [100, 50]", "bw = [100, 50]\nreduction_memory = false"),
    );
    let out = dimsum().args(["eval", "--json"]).arg(&off).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["iteration_time_ms"].as_f64().unwrap() - 0.9666).abs() < 1e-12);
    // A bandwidth that is no bandwidth is refused with its line.
    let (code, err) = eval_err(&BASE.replace("bw = [100, 50]", "bw = [100, 50]\nreduction_memory = -3"));
    assert_eq!(code, 2);
    assert_one_line(&err);
    // (line 5: the text opens with an empty line, then name, time_model, bw.)
    assert!(
        err.contains(":5: reduction_memory:") && err.contains("true, false or a memory bandwidth"),
        "{err}"
    );
}

#[test]
fn eval_table_and_bw_override() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", BASE);
    let out = dimsum().args(["eval", "--bw", "200,50"]).arg(&p).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // At 200 GB/s the ring dimension takes 600 + 480_000 ns, the switch
    // 2000 + 560_000 ns: the switch is now the slower one; + 6000 ns compute.
    assert!(text.contains("0.568 ms"), "{text}");
    assert!(text.contains("Ring(4) x Switch(8) = 32 NPUs"), "{text}");
}

#[test]
fn unknown_block_lists_the_allowed_ones() {
    let (code, err) = eval_err(&BASE.replace("block = \"switch\"", "block = \"swtich\""));
    assert_eq!(code, 2);
    assert_one_line(&err);
    // The second dimension's block is on line 15 of BASE (line 1 is the empty one after r#").
    assert!(err.contains("s.toml:15"), "{err}");
    assert!(
        err.contains("swtich") && err.contains("ring") && err.contains("fully-connected"),
        "{err}"
    );
}

#[test]
fn communicator_length_must_match_the_fabric() {
    let (code, err) = eval_err(&BASE.replace("weight_grad = [4, 8]", "weight_grad = [4, 8, 2]"));
    assert_eq!(code, 2);
    assert_one_line(&err);
    assert!(
        err.contains(":33:") && err.contains("workload.communicator.weight_grad"),
        "{err}"
    );
    assert!(err.contains("3 entries") && err.contains("2 dimensions"), "{err}");
}

#[test]
fn group_cannot_exceed_its_dimension() {
    let (code, err) = eval_err(&BASE.replace("weight_grad = [4, 8]", "weight_grad = [8, 8]"));
    assert_eq!(code, 2);
    assert_one_line(&err);
    assert!(
        err.contains("group size 8 exceeds dimension `a`, which has 4 NPUs"),
        "{err}"
    );
}

#[test]
fn negative_size_is_rejected() {
    let (code, err) = eval_err(&BASE.replace("bytes = 64e6", "bytes = -64e6"));
    assert_eq!(code, 2);
    assert_one_line(&err);
    assert!(
        err.contains(":39:") && err.contains("weight_grad.bytes") && err.contains(">= 0 bytes"),
        "{err}"
    );
}

#[test]
fn zero_npus_is_rejected() {
    let (code, err) = eval_err(&BASE.replace("npus = 8", "npus = 0"));
    assert_eq!(code, 2);
    assert_one_line(&err);
    assert!(
        err.contains(":16:") && err.contains("fabric.dims[1].npus") && err.contains("from 2 to 4294967295"),
        "{err}"
    );
}

#[test]
fn other_bad_inputs_exit_2_with_one_line() {
    for (from, to, needle) in [
        ("time_model = \"pipelined\"", "time_model = \"fast\"", "libra"),
        ("tier = \"far\"", "tier = \"nowhere\"", "cost tier `nowhere`"),
        (
            "npus = 4\n",
            "npus = 4\nalgorithm = \"direct\"\n",
            "does not run on a ring",
        ),
        (
            "collective = \"all-reduce\"",
            "collective = \"allreduce\"",
            "all-reduce",
        ),
        ("name = \"l0\"", "name = \"l0\"\ncolour = 3", "unknown field `colour`"),
        ("bw = [100, 50]", "bw = [100]", "1 values given"),
        ("latency_ns = 100", "latency_ns = -1", "latency >= 0"),
        ("npus = 4\n", "npus = 4\noptions_gbps = [100, 0]\n", "each > 0 GB/s"),
        (
            "npus = 4\n",
            "npus = 4\nmin_gbps = 50\nmax_gbps = 10\n",
            "below min_gbps",
        ),
    ] {
        let text = BASE.replacen(from, to, 1);
        assert_ne!(text, BASE, "{from}");
        let (code, err) = eval_err(&text);
        assert_eq!(code, 2, "{from}: {err}");
        assert_one_line(&err);
        assert!(err.contains(needle), "{from}: {err}");
    }
}

#[test]
fn bad_bw_argument_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", BASE);
    for (bw, needle) in [
        ("100", "1 values given"),
        ("100,x", "`x` is not a bandwidth"),
        // With a unit: 400 Gb/s = 50 GB/s is taken (eval runs), a unit
        // that is none is refused.
        ("100,50furlongs", "`50furlongs` is not a bandwidth"),
        ("100,-5", "-5 GB/s"),
        ("0,50", "0 GB/s"),
    ] {
        let out = dimsum().args(["eval", "--bw", bw]).arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bw}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_one_line(&err);
        assert!(err.contains(needle), "{bw}: {err}");
    }
}

#[test]
fn missing_study_file_exits_2() {
    let out = dimsum().args(["eval", "no/such/study.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("no/such/study.toml"));
}

fn libra_args(dir: &Path, net: &str, work: &str, comm: &str, cost: &str) -> Vec<String> {
    let d = |s: &str| dir.join(s).display().to_string();
    vec![
        "import".into(),
        "libra".into(),
        "--network".into(),
        d(net),
        "--workload".into(),
        d(work),
        "--communicator".into(),
        d(comm),
        "--cost".into(),
        d(cost),
    ]
}

#[test]
fn import_libra_prints_an_equivalent_study() {
    let data = root("tests/data/libra");
    let out = dimsum()
        .args(libra_args(
            &data,
            "network/4d_network.yml",
            "workload/GPT_3.txt",
            "communicator/GPT_3_4d.yml",
            "cost_model/4d_cost_model.yml",
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "gpt3.toml", std::str::from_utf8(&out.stdout).unwrap());
    let out = dimsum()
        .args(["eval", "--json", "--bw", "500,300,100,100"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Worked out in tests/libra.rs: 709.588900176 ms.
    assert!((v["iteration_time_ms"].as_f64().unwrap() - 709.588_900_176).abs() < 1e-6);
}

#[test]
fn bad_libra_files_exit_2_naming_file_line_field() {
    let src = root("tests/data/libra");
    let dir = tempfile::tempdir().unwrap();
    for sub in ["network", "workload", "communicator", "cost_model"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let copy = |p: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(src.join(p)).unwrap();
        let edited = text.replacen(from, to, 1);
        assert!(from.is_empty() || edited != text, "{p}: `{from}` not found");
        std::fs::write(dir.path().join(p), edited).unwrap();
    };
    // (file, text to replace, replacement, expected in the error)
    let cases = [
        (
            "workload/GPT_3.txt",
            "ALLGATHER",
            "ALLGATHR",
            "GPT_3.txt:6: input-grad comm type",
        ),
        (
            "workload/GPT_3.txt",
            " 10\n",
            "\n",
            "GPT_3.txt:1: layer: 11 fields found",
        ),
        ("workload/GPT_3.txt", "805306368", "-805306368", "input-grad comm size"),
        (
            "network/4d_network.yml",
            "FullyConnected,",
            "Mesh,",
            "4d_network.yml:4: Topology[1]",
        ),
        (
            "network/4d_network.yml",
            "[ 4, 8, 4, 32 ]",
            "[ 4, 0, 4, 32 ]",
            "4d_network.yml:5: NpusCount[1]",
        ),
        (
            "communicator/GPT_3_4d.yml",
            "[ -1, 2, 4, 32 ]",
            "[ 2, 4, 32 ]",
            "GPT_3_4d.yml:8: WeightGrad",
        ),
        (
            "communicator/GPT_3_4d.yml",
            "[ -1, 2, 4, 32 ]",
            "[ -1, 16, 4, 32 ]",
            "exceeds dimension `package`",
        ),
        (
            "cost_model/4d_cost_model.yml",
            "  Nic: 31.60004\n",
            "",
            "needs a Nic price",
        ),
        (
            "cost_model/4d_cost_model.yml",
            "Nic:",
            "Nick:",
            "`Nick` is not a cost element",
        ),
    ];
    for (file, from, to, needle) in cases {
        // Fresh copies of all four, then break one.
        for f in [
            "network/4d_network.yml",
            "workload/GPT_3.txt",
            "communicator/GPT_3_4d.yml",
            "cost_model/4d_cost_model.yml",
        ] {
            copy(f, "", "");
        }
        copy(file, from, to);
        let out = dimsum()
            .args(libra_args(
                dir.path(),
                "network/4d_network.yml",
                "workload/GPT_3.txt",
                "communicator/GPT_3_4d.yml",
                "cost_model/4d_cost_model.yml",
            ))
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert_one_line(&err);
        assert!(err.contains(needle), "{file}: expected `{needle}` in {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn every_study_evaluates() {
    let mut n = 0;
    for entry in std::fs::read_dir(root("studies")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        n += 1;
        let out = dimsum().args(["eval", "--json"]).arg(&p).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = v["iteration_time_ms"].as_f64().unwrap();
        let lb = v["iteration_lower_bound_ms"].as_f64().unwrap();
        let compute = v["compute_time_ms"].as_f64().unwrap();
        assert!(
            compute <= lb && lb <= t && t.is_finite(),
            "{}: {compute} {lb} {t}",
            p.display()
        );
    }
    assert!(n >= 9, "expected LIBRA's 8 cases and one of our own, found {n}");
}

#[test]
fn optimize_json_on_libra_defaults() {
    let out = dimsum()
        .args(["optimize", "--json"])
        .arg(root("studies/gpt3-4d.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "bw_gbps",
        "iteration_time_ms",
        "network_cost_usd",
        "network_power_w",
        "gap",
        "binding_constraints",
        "speedup_vs_equal_split",
        "lower_bound",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    // B3 = 200 * 109_707_264 / 449_445_888 (tests/optimize.rs).
    let b3 = v["bw_gbps"][3].as_f64().unwrap();
    assert!((b3 - 200.0 * 109_707_264.0 / 449_445_888.0).abs() < 1e-3, "{b3}");
    assert!(v["gap"].as_f64().unwrap() <= 1e-7);
    let binding: Vec<&str> = v["binding_constraints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["constraint"].as_str().unwrap())
        .collect();
    assert!(
        binding.contains(&"B0 == 500") && binding.contains(&"B2 + B3 == 200"),
        "{binding:?}"
    );
}

#[test]
fn optimize_errors() {
    let study = root("studies/gpt3-4d.toml");
    // A malformed expression: exit 2, the token and its column.
    let out = dimsum()
        .args(["optimize", "--constraint", "B0 + B7 <= 5"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_one_line(&err);
    assert!(
        err.contains("--constraint") && err.contains("column 6") && err.contains("unknown name `B7`"),
        "{err}"
    );
    // Infeasible: exit 1, naming the conflicting constraints.
    let out = dimsum()
        .args(["optimize", "--constraint", "B0 + B1 <= 700"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_one_line(&err);
    // The only irreducible conflict: B0 + B1 = 1000 - (B2 + B3) = 800 > 700.
    assert!(
        err.contains("infeasible")
            && err.contains("`B0 + B1 <= 700`")
            && err.contains("`B2 + B3 == 200`")
            && err.contains("`B0 + B1 + B2 + B3 == 1000`")
            && !err.contains("`B0 == 500`"),
        "{err}"
    );
    // min-cost needs a target; unknown objectives list the allowed ones.
    let out = dimsum()
        .args(["optimize", "--objective", "min-cost"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("--target-ms"));
    let out = dimsum()
        .args(["optimize", "--objective", "fastest"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("perf-per-cost"));
    // A target below the fastest design: exit 1.
    let out = dimsum()
        .args(["optimize", "--objective", "min-cost", "--target-ms", "1"])
        .arg(&study)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("fastest design"));
}

#[test]
fn bad_optimize_section_in_study() {
    let (code, err) = eval_err(&format!(
        "{BASE}\n[optimize]\nconstraints = [\"a + b <= 100\", \"a + * b <= 3\"]\n"
    ));
    assert_eq!(code, 2);
    assert_one_line(&err);
    assert!(
        err.contains("optimize.constraints[1]") && err.contains("column 5"),
        "{err}"
    );
    let (code, err) = eval_err(&format!("{BASE}\n[optimize]\nobjective = \"cheap\"\n"));
    assert_eq!(code, 2);
    assert!(err.contains("min-cost"), "{err}");
}

#[test]
fn run_without_a_target_names_the_study_key_not_a_flag() {
    // `run` takes no --target-ms: a study objective that needs a target
    // points at the study file's [optimize] target_ms; `optimize`, which
    // takes the flag, still offers it.
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", &format!("{BASE}\n[run]\nobjectives = [\"min-cost\"]\n"));
    let out = dimsum()
        .args(["run", p.to_str().unwrap(), "--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_one_line(&err);
    assert!(err.contains("s.toml") && err.contains("optimize.target_ms"), "{err}");
    assert!(!err.contains("--target-ms"), "{err}");
    let out = dimsum()
        .args(["optimize", p.to_str().unwrap(), "--objective", "min-cost"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--target-ms"), "{err}");
}

#[test]
fn catalog_lists_every_part_with_its_source() {
    let builtin = dimsum::model::catalog::Catalog::builtin();
    let out = dimsum().args(["catalog"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for name in builtin
        .ports
        .iter()
        .map(|p| &p.name)
        .chain(builtin.switches.iter().map(|s| &s.name))
        .chain(builtin.cables.iter().map(|c| &c.name))
    {
        assert!(text.lines().any(|l| l.starts_with(name.as_str())), "{name} missing");
    }
    // nvlink4: 200 Gb/s = 25 GB/s for $100 and 0.52 W: 4 $ per GB/s and
    // 0.52 W / 25 GB/s = 0.0208 J/GB = 2.6 pJ/bit.
    let line = text.lines().find(|l| l.starts_with("nvlink4")).unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert!(cols.contains(&"4.00") && cols.contains(&"2.60"), "{line}");
    let out = dimsum().args(["catalog", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ports"].as_array().unwrap().len(), builtin.ports.len());
    let out = dimsum().args(["catalog", "no-such-catalog.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_one_line(&String::from_utf8(out.stderr).unwrap());
}

#[test]
fn eval_takes_several_allocations_and_checks_the_studys_constraints() {
    // The default study caps the pod at 100 GB/s per NPU and budgets $40M:
    // the equal split of 1,000 GB/s puts 250 on the pod (over its cap).
    let study = root("studies/gpt3-4d-procurement.toml");
    let out = dimsum()
        .args([
            "eval",
            study.to_str().unwrap(),
            "--bw",
            "250,250,250,250",
            "--bw",
            "500,300,150,50",
        ])
        .args(["--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 2);
    let pod = |i: usize| {
        all[i]["constraints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["constraint"].as_str().unwrap().starts_with("pod <= 100"))
            .unwrap()
            .clone()
    };
    assert_eq!(pod(0)["holds"], false);
    assert_eq!(pod(0)["value"], 250.0);
    assert_eq!(pod(1)["holds"], true);
    // Bought, the equal split's pod is flagged over its cap too.
    assert!(
        all[0]["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["flag"] == "over-cap" && f["dimension"] == "pod")
    );
    // The table: one row per allocation; a bad --bw fails before any work.
    let out = dimsum()
        .args([
            "eval",
            study.to_str().unwrap(),
            "--bw",
            "250,250,250,250",
            "--bw",
            "1,2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn compare_takes_fabric_and_edge_list_topologies() {
    let dir = tempfile::tempdir().unwrap();
    let study = write(&dir, "s.toml", BASE);
    let edges = write(
        &dir,
        "r4.edges",
        "0 <-> 1 50 0.5us\n1 <-> 2 50 0.5us\n2 <-> 3 50 0.5us\n3 <-> 0 50 0.5us\n",
    );
    let topologies = format!("ring:4,edges:{},fabric:{}", edges.display(), study.display());
    let out_dir = dir.path().join("cmp");
    let out = dimsum()
        .args(["compare", "--topologies", &topologies, "--bw", "200,100"])
        .args([
            "--algorithms",
            "ring",
            "--baselines",
            "direct",
            "--sizes",
            "1MiB",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(out_dir.join("compare.md")).unwrap();
    assert!(md.contains("## edges:") && md.contains("## fabric:"), "{md}");
    // --bw with no fabric to take it: refused before any replay.
    let out = dimsum()
        .args(["compare", "--topologies", "ring:4", "--bw", "1,1", "--out"])
        .arg(dir.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_one_line(&String::from_utf8(out.stderr).unwrap());
    assert!(!dir.path().join("none").exists());
}

/// `--bw` takes units as the study does: 400 Gb/s = 400 / 8 = 50 GB/s,
/// 2 TB/s = 2,000 GB/s.
#[test]
fn bw_argument_takes_units() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "s.toml", BASE);
    let out = dimsum()
        .args(["eval", "--json", "--bw", "2TB/s,400Gb/s"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bw_gbps"], serde_json::json!([2000.0, 50.0]));
}

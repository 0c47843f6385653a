//! Results do not depend on the machine: a study run with 1 and with 3
//! rayon threads writes the same files, byte for byte. The frontier is
//! solved in a fixed number of warm-started runs and the co-optimization
//! visits its candidates in waves of a fixed width, so neither the points
//! nor the solve counts, nor which strategies are solved and which pruned,
//! follow the thread count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use std::path::Path;

/// A 16-NPU study with a frontier on each axis and a co-optimization
/// whose candidates (every TP x PP x DP and placement) outnumber a wave.
const STUDY: &str = r#"
name = "threads"
time_model = "pipelined"
bw = [100, 100]
[[fabric.dims]]
name = "a"
block = "ring"
npus = 4
latency_ns = 100
[[fabric.dims]]
name = "b"
block = "switch"
npus = 4
latency_ns = 500
[cost.tiers.a]
link_usd_per_gbps = 1.0
[cost.tiers.b]
link_usd_per_gbps = 5.0
nic_usd_per_gbps = 2.0
[model]
layers = 4
hidden = 1024
heads = 16
ffn = 4096
ffn_matrices = 2
seq = 512
vocab = 1000
global_batch = 32
micro_batch = 1
bytes_weight = 2
bytes_grad = 2
bytes_optimizer = 12
[npu]
peak_tflops = 100
efficiency = 0.5
hbm_gib = 80
[parallelism]
tp = 4
pp = 1
dp = 4
[coopt]
micro_batch = [1, 2]
[optimize]
constraints = ["a + b <= 400"]
[[frontier]]
axis = "cost"
points = 24
[[frontier]]
axis = "total-bw"
points = 9
"#;

fn run(dir: &Path, threads: &str) -> Vec<(String, Vec<u8>)> {
    let study = dir.join("threads.toml");
    std::fs::write(&study, STUDY).unwrap();
    let out = dir.join(format!("out-{threads}"));
    let st = assert_cmd::Command::cargo_bin("dimsum")
        .unwrap()
        .env("RAYON_NUM_THREADS", threads)
        .args(["run", study.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(out.join("threads"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn one_and_three_threads_write_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let one = run(dir.path(), "1");
    let three = run(dir.path(), "3");
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&one), names(&three));
    // The run wrote its frontiers and its co-optimization.
    for want in ["frontier-cost.csv", "frontier-total-bw.csv", "coopt.json"] {
        assert!(
            names(&one).iter().any(|n| n == want),
            "{want} missing: {:?}",
            names(&one)
        );
    }
    for ((name, a), (_, b)) in one.iter().zip(&three) {
        assert!(a == b, "{name} differs between 1 and 3 threads");
    }
}

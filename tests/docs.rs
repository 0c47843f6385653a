//! The README's example study is a real study: it parses and evaluates.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::study::Study;
use std::path::Path;

#[test]
fn readme_study_example_parses() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("README has a toml block") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let s = Study::parse(&readme[start..end], Path::new("README.md")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.fabric.shape(), "Ring(4) x Switch(8)");
    assert_eq!(s.workload.layers.len(), 1);
    let e = s.evaluate(&[100.0, 50.0]);
    // Input-grad: all-reduce 64e6 B over [4, -1] on the ring: 2 * 64e6 * 3/4 =
    // 96e6 B / 100 GB/s = 960_000 ns + 6 steps * 100 ns = 960_600 ns.
    // Weight-grad: over [-1, 8] on the switch: 2 * 64e6 * 7/8 = 112e6 B / 50 =
    // 2_240_000 ns; the switch dimension sets no latency_ns (default 0).
    // Overlap loop, one layer: the weight-grad all-reduce is issued last, so
    // nothing hides it: 6000 + 960_600 + 2_240_000 = 3_206_600 ns.
    assert!((e.iteration_time_ms - 3.2066).abs() < 1e-9, "{}", e.iteration_time_ms);
}

//! Chakra export speed: a 1024-NPU synthesized all-reduce (TACOS-style, on
//! a 32x32 torus) turned into one trace per rank and encoded (target: under
//! a second), then read back. Timed once each (best of three):
//! `cargo bench --bench interop`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::interop::chakra;
use dimsum::model::topology::Topology;
use dimsum::model::workload::CollectiveKind;
use dimsum::schedule::synth::{self, SynthOptions};
use std::path::Path;
use std::time::Instant;

fn best<T>(f: impl Fn() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.expect("ran"))
}

fn main() {
    let topo = Topology::torus(&[32, 32], true, &[50.0; 2], &[500.0; 2]);
    let opt = SynthOptions {
        seed: 0,
        size_bytes: 64e6,
        chunks_per_npu: 1,
        timing: dimsum::schedule::simulate::LinkModel::Tacos,
        reduce_timing: None,
    };
    let t = Instant::now();
    let s = synth::synthesize(&topo, CollectiveKind::AllReduce, &opt)
        .expect("synthesis")
        .schedule;
    let synth_secs = t.elapsed().as_secs_f64();
    let (secs, bytes) = best(|| chakra::encode_schedule(&s, s.chunk_bytes(64e6)).expect("traces"));
    let total: usize = bytes.iter().map(|b| b.len()).sum();
    println!(
        "interop/chakra export of a 1024-NPU synthesized all-reduce ({} transfers; synthesized in {:.2} s): {:.3} s for {} traces, {:.1} MB",
        s.transfers.len(),
        synth_secs,
        secs,
        bytes.len(),
        total as f64 / 1e6
    );
    let (read_secs, back) = best(|| {
        let traces: Vec<chakra::Trace> = bytes
            .iter()
            .map(|b| chakra::Trace::decode(b, Path::new("bench")).expect("decode"))
            .collect();
        chakra::to_schedule(&traces, Path::new("bench")).expect("schedule")
    });
    assert_eq!(back, s);
    println!("interop/chakra import of the same: {read_secs:.3} s");
}

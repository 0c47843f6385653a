//! How fast one allocation is evaluated: the inner loop of every sweep and of
//! the optimizer's checks. Run with `cargo bench --bench eval`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::study::Study;
use std::hint::black_box;
use std::path::Path;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["gpt3-4d", "resnet50-4d", "dgx-h100-pod"] {
        let study = Study::load(&root.join(format!("studies/{name}.toml"))).expect("study loads");
        let it = study.iteration_model();
        let bw = study.bw.clone().expect("study has bw");
        c.bench_function(&format!("iteration_ns/{name}"), |b| {
            b.iter(|| it.iteration_ns(black_box(&bw)))
        });
        c.bench_function(&format!("evaluate/{name}"), |b| {
            b.iter(|| study.evaluate(black_box(&bw)))
        });
        let path = root.join(format!("studies/{name}.toml"));
        c.bench_function(&format!("load/{name}"), |b| b.iter(|| Study::load(black_box(&path))));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

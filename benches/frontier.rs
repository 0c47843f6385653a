//! A 1000-point cost frontier of LIBRA's 4D GPT-3 case (the procurement
//! study: LIBRA's shape, workload and prices with per-dimension caps).
//! Target: <= 2 s. `cargo bench --bench frontier`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::optimize::Problem;
use dimsum::optimize::frontier::{Axis, frontier};
use dimsum::study::Study;
use std::hint::black_box;
use std::path::Path;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Study::load(&root.join("studies/gpt3-4d-procurement.toml")).expect("study");
    let p = Problem::new(
        &s.fabric,
        s.iteration_model(),
        s.linear_cost(),
        s.constraints(&[]).expect("constraints"),
    );
    let f = frontier(&p, Axis::Cost, 1000).expect("frontier");
    eprintln!(
        "1000-point frontier: {} LP solves, worst gap {:.1e}",
        f.lp_solves,
        f.points.iter().map(|p| p.gap).fold(0.0, f64::max)
    );
    c.bench_function("frontier/gpt3-4d-cost-1000", |b| {
        b.iter(|| frontier(black_box(&p), Axis::Cost, 1000))
    });
    c.bench_function("frontier/gpt3-4d-cost-60", |b| {
        b.iter(|| frontier(black_box(&p), Axis::Cost, 60))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);

//! Flow (`schedule::flow`): the all-to-all multi-commodity flow program and
//! its schedule. The target: a 256-NPU 2D torus in 30 s (program, paths
//! and schedule); the program alone on larger tori and on a mesh (not a
//! product: a commodity per NPU). `cargo bench --bench flow`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::topology;
use dimsum::model::workload::CollectiveKind::AllToAll;
use dimsum::schedule::flow;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("flow");
    g.sample_size(10);
    for spec in ["torus:16x16", "torus:64x64", "mesh:8x8"] {
        let t = topology::from_spec(spec, &[50.0], &[500.0]).unwrap();
        g.bench_function(format!("program/{spec}"), |b| {
            b.iter(|| flow::bound_ns_per_byte(&t).unwrap())
        });
    }
    for spec in ["torus:16x16", "mesh:8x8"] {
        let t = topology::from_spec(spec, &[50.0], &[500.0]).unwrap();
        g.bench_function(format!("schedule/{spec}"), |b| {
            b.iter(|| flow::build(&t, AllToAll, 0).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

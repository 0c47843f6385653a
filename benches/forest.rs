//! Forest (`schedule::forest`): the tree packing alone and the whole
//! all-gather schedule at 1 GiB, on a 4x4 torus, the 5x5 50/75 GiB/s mesh
//! and an 8x8 torus. `cargo bench --bench forest`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::topology;
use dimsum::model::workload::CollectiveKind::AllGather;
use dimsum::schedule::forest;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("forest");
    g.sample_size(10);
    for (spec, gbps) in [
        ("torus:4x4", vec![50.0]),
        ("mesh:5x5", vec![53.687_091_2, 80.530_636_8]),
        ("torus:8x8", vec![50.0]),
    ] {
        let t = topology::from_spec(spec, &gbps, &[500.0]).unwrap();
        g.bench_function(format!("pack/{spec}"), |b| {
            b.iter(|| forest::forest(&t, false).unwrap())
        });
        g.bench_function(format!("schedule-1GiB/{spec}"), |b| {
            b.iter(|| forest::build(&t, AllGather, 0, 1073741824.0).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The exact cut bound (`schedule::cut`: max-flows with Newton steps) on
//! tori and a heterogeneous mesh. `cargo bench --bench cut`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::topology;
use dimsum::model::workload::CollectiveKind::{AllGather, AllReduce};
use dimsum::schedule::cut::exact_cut;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("cut");
    g.sample_size(10);
    for (spec, gbps) in [
        ("torus:8x8x8", vec![50.0]),
        ("mesh:16x16", vec![50.0, 75.0]),
        ("torus:32x32", vec![50.0]),
    ] {
        let t = topology::from_spec(spec, &gbps, &[500.0]).unwrap();
        g.bench_function(format!("all-gather/{spec}"), |b| b.iter(|| exact_cut(&t, AllGather)));
        g.bench_function(format!("all-reduce/{spec}"), |b| b.iter(|| exact_cut(&t, AllReduce)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

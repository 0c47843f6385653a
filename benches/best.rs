//! The time truth at the speed of the model (issue 44): `best` on the
//! groups the default study's decision replays (with rounds, as the
//! schedule evaluator asks), the 8x8x8 all-gathers at their defaults (tacos
//! built and replayed; forest timed in rounds), and the default study's
//! whole decision replay. Targets: each group and each 8x8x8 all-gather
//! under 0.1 s; the decision replay under 2 s. `cargo bench --bench best`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::CollectiveKind::{AllGather, AllReduce};
use dimsum::model::workload::Group;
use dimsum::optimize::scheduled::group_topology;
use dimsum::pipeline::procure;
use dimsum::schedule::algorithm::{self, Algorithm, Options};
use dimsum::schedule::product;
use dimsum::study::Study;
use std::path::Path;

const GIB: f64 = 1073741824.0;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("best");
    g.sample_size(10);
    let study = Study::load(Path::new("studies/gpt3-4d-procurement.toml")).unwrap();
    let bw = [896.0, 525.0, 100.0, 25.0];
    // The decision's distinct collectives: TP all-reduce and all-gather on
    // [4, 4, -1, -1], the DP all-reduce on [-1, 2, 4, 32].
    for (name, group, size) in [
        ("tp-all-reduce-805MB", vec![Some(4), Some(4), None, None], 805_306_368.0),
        (
            "dp-all-reduce-453MB",
            vec![None, Some(2), Some(4), Some(32)],
            452_984_832.0,
        ),
    ] {
        let (t, _) = group_topology(&study.fabric, &Group(group), &bw);
        let opt = Options {
            size_bytes: size,
            ..Options::default()
        };
        g.bench_function(format!("rounds/{name}"), |b| {
            b.iter(|| algorithm::best_with(&t, AllReduce, &opt, true).unwrap().time_ns)
        });
    }
    let torus = topology::from_spec("torus:8x8x8", &[50.0], &[500.0]).unwrap();
    let opt = Options {
        size_bytes: GIB,
        ..Options::default()
    };
    g.bench_function("tacos-all-gather-1GiB/torus:8x8x8", |b| {
        b.iter(|| {
            algorithm::build(&torus, AllGather, Algorithm::Tacos, &opt)
                .unwrap()
                .transfers
                .len()
        })
    });
    g.bench_function("forest-rounds-all-gather-1GiB/torus:8x8x8", |b| {
        b.iter(|| product::round_time(&torus, AllGather, GIB, 0).unwrap().unwrap().time_ns)
    });
    let big = Topology::torus(&[200, 200], true, &[50.0, 50.0], &[500.0, 500.0]);
    g.bench_function("forest-rounds-all-gather-1GiB/torus:200x200", |b| {
        b.iter(|| product::round_time(&big, AllGather, GIB, 0).unwrap().unwrap().time_ns)
    });
    g.bench_function("decision-replay/gpt3-4d-procurement", |b| {
        b.iter(|| {
            // A fresh evaluator each time; `best`'s process-wide cache is
            // warm after the first iteration, so this measures the cached
            // path (the first, cold, run is in the closing note).
            let backed = study.backed(&procure::best_spec(&study));
            backed.measure(&bw).unwrap().iteration_ns
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

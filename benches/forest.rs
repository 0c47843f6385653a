//! Forest (`schedule::forest`, `schedule::product`): the general tree
//! packing on a random 48-NPU network, the product forest and its whole
//! all-gather schedule at 1 GiB on meshes (the 7x10 mesh: target 1 s with
//! its replay) and tori, and, at scale, the exact bound
//! and the round-timed schedule together (8x8x8, 64x64 and 200x200 tori:
//! the targets are 0.05 s, 2 s and 10 minutes). `cargo bench --bench forest`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::topology::{self, Topology};
use dimsum::model::workload::CollectiveKind::AllGather;
use dimsum::schedule::{bounds, forest, product};

const GIB: f64 = 1073741824.0;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("forest");
    g.sample_size(10);
    // A network that is no product: a two-way ring of 48 NPUs at 25-100
    // GB/s and 48 one-way chords, from a fixed linear congruential stream.
    let mut text = String::new();
    let mut x = 12345u64;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for v in 0..48u64 {
        text += &format!("{v} <-> {} {} 0.5us\n", (v + 1) % 48, 25 + next(76));
        text += &format!("{v} -> {} {} 0.5us\n", (v + 2 + next(44)) % 48, 25 + next(76));
    }
    let random = Topology::parse_edges(&text, std::path::Path::new("random-48.edges")).unwrap();
    g.bench_function("pack/random-48", |b| b.iter(|| forest::forest(&random, false).unwrap()));
    for (spec, gbps) in [
        ("mesh:7x10", vec![50.0]),
        ("mesh:4x4", vec![50.0]),
        ("mesh:5x5", vec![53.687_091_2, 80.530_636_8]),
        ("torus:4x4", vec![50.0]),
        ("torus:8x8", vec![50.0]),
        ("torus:16x16", vec![50.0]),
    ] {
        let t = topology::from_spec(spec, &gbps, &[500.0]).unwrap();
        g.bench_function(format!("pack/{spec}"), |b| {
            b.iter(|| forest::forest(&t, false).unwrap())
        });
        g.bench_function(format!("schedule-1GiB/{spec}"), |b| {
            b.iter(|| forest::build(&t, AllGather, 0, GIB).unwrap())
        });
    }
    for sizes in [vec![8u32, 8, 8], vec![64, 64], vec![200, 200]] {
        let name: Vec<String> = sizes.iter().map(u32::to_string).collect();
        let name = format!("torus:{}", name.join("x"));
        g.bench_function(format!("bound+rounds-1GiB/{name}"), |b| {
            b.iter(|| {
                let t = Topology::torus(&sizes, true, &vec![50.0; sizes.len()], &vec![500.0; sizes.len()]);
                let bound = bounds::lower_bounds(&t, AllGather, GIB);
                let r = product::round_time(&t, AllGather, GIB, 0).unwrap().unwrap();
                (bound.bound_ns, r.time_ns)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

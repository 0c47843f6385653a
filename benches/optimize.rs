//! One certified perf solve: LIBRA's 4D GPT-3 case under its default
//! constraints (target <= 5 ms), and a 6-dimension problem with 200 distinct
//! collective terms (target <= 50 ms). `cargo bench --bench optimize`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::collective::{CollectiveModel, TimeModel};
use dimsum::model::cost::{CostModel, Linear, Tier};
use dimsum::model::fabric::{Block, Dim, Fabric};
use dimsum::model::training::{IterationModel, Loop};
use dimsum::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, Workload};
use dimsum::optimize::expr::parse;
use dimsum::optimize::{self, Objective, Problem};
use dimsum::study::Study;
use std::hint::black_box;
use std::path::Path;

fn libra_gpt3() -> Problem {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Study::load(&root.join("studies/gpt3-4d.toml")).expect("study");
    let cons = s.constraints(&[]).expect("constraints");
    Problem::new(&s.fabric, s.iteration_model(), s.linear_cost(), cons)
}

/// 6 dimensions, 200 collectives of distinct sizes, kinds and groups.
pub fn six_dims() -> Problem {
    let shape = [
        (Block::Ring, 4),
        (Block::FullyConnected, 8),
        (Block::Ring, 4),
        (Block::Switch, 8),
        (Block::Ring, 2),
        (Block::Switch, 16),
    ];
    let f = Fabric {
        dims: shape
            .iter()
            .enumerate()
            .map(|(i, (block, npus))| Dim {
                name: format!("d{i}"),
                block: *block,
                npus: *npus,
                latency_ns: 100.0 * (i + 1) as f64,
                min_gbps: None,
                max_gbps: None,
                tier: format!("d{i}"),
                options_gbps: None,
                fat_tree: None,
            })
            .collect(),
    };
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let kinds = [
        CollectiveKind::AllReduce,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather,
        CollectiveKind::AllToAll,
    ];
    let layers = (0..200)
        .map(|i| {
            let group = Group(
                f.dims
                    .iter()
                    .map(|d| if rnd() % 3 == 0 { None } else { Some(d.npus) })
                    .collect(),
            );
            Layer {
                name: format!("l{i}"),
                forward: Phase {
                    compute_ns: (rnd() % 1_000_000) as f64,
                    comm: Some(Comm {
                        kind: kinds[(rnd() % 4) as usize],
                        bytes: 1e6 + (rnd() % 1_000_000_000) as f64,
                        group,
                    }),
                    ..Default::default()
                },
                input_grad: Phase::default(),
                weight_grad: Phase::default(),
            }
        })
        .collect();
    let w = Workload { layers };
    let mut m = CostModel::default();
    for (i, d) in f.dims.iter().enumerate() {
        m.tiers.insert(
            d.tier.clone(),
            Tier {
                link_usd_per_gbps: 1.0 + i as f64 * 3.0,
                ..Tier::default()
            },
        );
    }
    let lin = Linear::new(&f, &m);
    let it = IterationModel::new(
        &w,
        &f,
        &CollectiveModel::defaults(&f, TimeModel::Pipelined),
        Loop::NoOverlap,
    );
    let cons = ["d0 + d1 + d2 + d3 + d4 + d5 <= 2000", "cost <= 2e7", "d0 >= d1"]
        .iter()
        .map(|c| parse(c, &f, &lin).expect("constraint"))
        .collect();
    Problem::new(&f, it, lin, cons)
}

fn bench(c: &mut Criterion) {
    let p = libra_gpt3();
    let s = optimize::solve(&p, Objective::Perf).expect("solves");
    eprintln!(
        "libra gpt3-4d: {} LP solves, gap {:.1e}, bw {:?}",
        s.lp_solves, s.gap, s.bw_gbps
    );
    c.bench_function("perf/libra-gpt3-4d", |b| {
        b.iter(|| optimize::solve(black_box(&p), Objective::Perf))
    });
    let q = six_dims();
    let s = optimize::solve(&q, Objective::Perf).expect("solves");
    eprintln!("six dims x 200 terms: {} LP solves, gap {:.1e}", s.lp_solves, s.gap);
    c.bench_function("perf/6-dims-200-terms", |b| {
        b.iter(|| optimize::solve(black_box(&q), Objective::Perf))
    });
    c.bench_function("perf-per-cost/libra-gpt3-4d", |b| {
        b.iter(|| optimize::solve(black_box(&p), Objective::PerfPerCost))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);

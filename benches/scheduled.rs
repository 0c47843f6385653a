//! Schedule-backed optimization (`scheduled`): LIBRA's 4D and 3D GPT-3
//! cases optimized against replayed schedules, from a cold cache each time
//! (every schedule built, synthesized and replayed anew). Target: the 4D
//! perf optimization with hierarchical schedules in <= 30 s; TACOS
//! reported; and the 4D case with its data-parallel all-reduce widened to
//! all 4,096 NPUs (one 4,096-NPU hierarchical replay per allocation).
//! `cargo bench --bench scheduled`; the fixed-point iterations and replays
//! of each case are printed first.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::workload::Group;
use dimsum::optimize::scheduled::{self, Spec};
use dimsum::optimize::{Objective, Problem};
use dimsum::study::Study;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

fn load(name: &str) -> (Study, Problem) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (file, whole) = match name.strip_suffix("-whole") {
        Some(base) => (base, true),
        None => (name, false),
    };
    let mut s = Study::load(&root.join(format!("studies/{file}.toml"))).expect("study");
    if whole {
        // Q1's weight-gradient all-reduce over every NPU of the fabric.
        if let Some(c) = s.workload.layers[0].weight_grad.comm.as_mut() {
            c.group = Group(s.fabric.dims.iter().map(|d| Some(d.npus)).collect());
        }
    }
    let p = Problem::new(
        &s.fabric,
        s.iteration_model(),
        s.linear_cost(),
        s.constraints(&[]).expect("constraints"),
    );
    (s, p)
}

fn spec(algorithm: &str, chunks: u32) -> Spec {
    Spec {
        algorithm: algorithm.parse().expect("a schedule algorithm"),
        chunks_per_npu: chunks,
        ..Spec::default()
    }
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("gpt3-4d", "hierarchical", 1, Objective::Perf),
        ("gpt3-4d", "hierarchical", 4, Objective::Perf),
        ("gpt3-4d", "hierarchical", 1, Objective::PerfPerCost),
        ("gpt3-4d", "tacos", 1, Objective::Perf),
        ("gpt3-3d", "hierarchical", 1, Objective::Perf),
        ("gpt3-3d", "tacos", 1, Objective::Perf),
        ("gpt3-4d-whole", "hierarchical", 1, Objective::Perf),
    ];
    let mut g = c.benchmark_group("scheduled");
    g.sample_size(10);
    for (study, algo, k, objective) in cases {
        let (s, p) = load(study);
        let sp = spec(algo, k);
        let started = Instant::now();
        let backed = s.backed(&sp);
        let fp = scheduled::optimize(&backed, &p, objective, &dimsum::progress::Quiet).expect("fixed point");
        eprintln!(
            "{study} {algo} K={k} {}: {:.3} s cold, {} iterations (converged {}, cycle {}), {} schedules built, {} replays; simulated {:.3} ms vs analytic optimum simulated {:.3} ms",
            objective.name(),
            started.elapsed().as_secs_f64(),
            fp.iterations(),
            fp.converged,
            fp.cycle,
            backed.built.load(Ordering::Relaxed),
            backed.replayed.load(Ordering::Relaxed),
            fp.measured.iteration_ns / 1e6,
            fp.analytic_measured.iteration_ns / 1e6
        );
        g.bench_function(format!("{study}/{algo}-k{k}/{}", objective.name()), |b| {
            b.iter(|| {
                let backed = s.backed(&sp);
                black_box(scheduled::optimize(&backed, &p, objective, &dimsum::progress::Quiet).expect("fixed point"))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

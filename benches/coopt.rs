//! Full co-optimization of GPT-3 175B on LIBRA's 4096-NPU 4D fabric (every
//! TP x PP x DP and placement order, each with its optimal allocation).
//! Target: <= 1 s (issue 20: GPT-3 175B and the 1T model on the kernel-by-kernel compute model);
//! the whole recipe for GPT-3 175B <= 2 s, the DeepSeek-V3-like MoE on
//! 2,048 NPUs (TP x PP x DP x EP, its 27 recipes) <= 5 s, four accelerator
//! types with the purchasable fabric <= 10 s (issue 26); PHAZE's
//! architecture space with GPT-3 on 1,024 accelerators (no target).
//! `cargo bench --bench coopt`.
#![allow(missing_docs)] // criterion_main! writes an undocumented `main`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use criterion::{Criterion, criterion_group, criterion_main};
use dimsum::model::transformer::RecipeSpace;
use dimsum::pipeline::coopt;
use dimsum::study::Study;
use std::path::Path;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in [
        "gpt3-175b-coopt",
        "gpt-1t-coopt",
        "deepseek-v3-coopt",
        "mixtral-8x7b-coopt",
    ] {
        let s = Study::load(&root.join(format!("studies/{name}.toml"))).expect("study");
        let r = coopt::coopt(&s, &dimsum::progress::Quiet).expect("coopt");
        eprintln!(
            "{name}: {} strategies, {} solved, {} pruned, {} invalid",
            r.searched, r.solved, r.pruned, r.rejected
        );
        c.bench_function(&format!("coopt/{name}"), |b| {
            b.iter(|| coopt::coopt(&s, &dimsum::progress::Quiet))
        });
    }
    // The whole training recipe (issue 26: GPT-3 175B on 4,096 NPUs in
    // <= 2 s): micro-batch 1-16, recomputation, ZeRO 0-3, sequence
    // parallelism, 1, 2 or 4 virtual stages, with every placement.
    let s = Study::load(&root.join("studies/gpt3-175b-coopt.toml")).expect("study");
    let space = RecipeSpace::whole(s.model.as_ref().expect("model"));
    let r = coopt::coopt_in(&s, &space, &dimsum::progress::Quiet).expect("coopt");
    eprintln!(
        "gpt3-175b-coopt, whole recipe ({} recipes): {} candidates, {} solved, {} pruned, {} invalid",
        space.len(),
        r.searched,
        r.solved,
        r.pruned,
        r.rejected
    );
    c.bench_function("coopt/gpt3-175b-coopt/whole-recipe", |b| {
        b.iter(|| coopt::coopt_in(&s, &space, &dimsum::progress::Quiet))
    });
}

fn accelerators(c: &mut Criterion) {
    // Four accelerator types x every strategy and recipe x the catalog
    // fabric (issue 26: <= 10 s).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Study::load(&root.join("studies/llama70b-2048-accelerators.toml")).expect("study");
    c.bench_function("coopt/llama70b-2048-accelerators", |b| {
        b.iter(|| coopt::coopt_accelerators(&s, &dimsum::progress::Quiet))
    });
}

fn archs(c: &mut Criterion) {
    // PHAZE's setting: 3,616 architectures within TPU v4's area x every
    // strategy and recipe of GPT-3 on 1,024 accelerators, one search.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Study::load(&root.join("studies/phaze-gpt3-arch.toml")).expect("study");
    let a = coopt::coopt_archs(&s, None, &dimsum::progress::Quiet).expect("archs");
    eprintln!(
        "phaze-gpt3-arch: {} architectures, {} candidates, {} solved, {} pruned, {} invalid",
        a.archs.len(),
        a.coopt.searched,
        a.coopt.solved,
        a.coopt.pruned,
        a.coopt.rejected
    );
    c.bench_function("coopt/phaze-gpt3-arch", |b| {
        b.iter(|| coopt::coopt_archs(&s, None, &dimsum::progress::Quiet))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench, accelerators, archs
}
criterion_main!(benches);

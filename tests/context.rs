//! Context parallelism (ring attention), tensor-parallel collectives
//! pipelined with their products, and ZeRO-3 gathers prefetched under
//! compute: the bytes by hand, the kernels they split, the collectives that
//! hide, and the listed and counted iterations agreeing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::collective::{CollectiveModel, TimeModel};
use dimsum::model::fabric::Fabric;
use dimsum::model::hf;
use dimsum::model::training::{Counted, IterationModel, Loop};
use dimsum::model::transformer::{self, ModelSpec, Npu, Strategy, StrategyError};
use dimsum::model::workload::{CollectiveKind, Layer};
use dimsum::pipeline::validate::{self, Published};
use std::path::Path;

/// Llama 3 8B (32 heads, 8 key-value heads of 128) at 8,192 tokens, 128
/// sequences of 1.
fn llama3_8b() -> ModelSpec {
    ModelSpec {
        seq: 8192,
        global_batch: 128,
        micro_batch: 1,
        ..hf::read(Path::new("models/llama3-8b.json")).unwrap()
    }
}

/// DGX H100 nodes (validation/nemo-h100.toml's cluster) of `gpus`.
fn dgx(gpus: u64) -> (Fabric, Npu) {
    let (p, _) = Published::load(Path::new("validation/nemo-h100.toml")).unwrap();
    (
        validate::fabric(&p.cluster, gpus),
        validate::npu_of(&p.cluster, None).unwrap(),
    )
}

fn record<'a>(layers: &'a [Layer], name: &str) -> &'a Layer {
    layers
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no record {name}"))
}

#[test]
fn ring_attention_exchanges_the_keys_and_values_by_hand() {
    let m = llama3_8b();
    let (f, npu) = dgx(8);
    let s = Strategy {
        cp: 2,
        ..Strategy::new(1, 1, 4)
    };
    // One rank's 8192 / 2 = 4096 tokens of keys and values: 8 heads x (128
    // + 128) wide, 2 bytes: 4096 x 8 x 256 x 2 = 16,777,216 bytes.
    assert_eq!(transformer::kv_chunk_bytes(&m, &s), 16_777_216.0);
    let g = transformer::generate(&m, &npu, &s, &f).unwrap();
    let kv = record(&g.workload.layers, "mb0.l0.kv");
    // Forward: each rank's chunk gathered by the other (an all-gather's
    // bytes are one NPU's share); backward: gathered again and the
    // gradients reduced back, an all-reduce of the whole 2 x 16 MiB.
    let fwd = kv.forward.comm.as_ref().unwrap();
    assert_eq!((fwd.kind, fwd.bytes), (CollectiveKind::AllGather, 16_777_216.0));
    assert_eq!(
        fwd.group.to_libra(),
        vec![2],
        "the innermost 2 of the data-parallel slot, in the node"
    );
    let bwd = kv.input_grad.comm.as_ref().unwrap();
    assert_eq!((bwd.kind, bwd.bytes), (CollectiveKind::AllReduce, 33_554_432.0));
    // Each hides under its attention core, which the attention block
    // counts: the record itself computes nothing.
    assert!(kv.forward.hidden_ns > 0.0 && kv.input_grad.hidden_ns > kv.forward.hidden_ns);
    assert_eq!(kv.forward.compute_ns, 0.0);
    let attn = record(&g.workload.layers, "mb0.l0.attn");
    assert!(kv.forward.hidden_ns < attn.forward.compute_ns);
    // 128 sequences over dp 4 of 1: 32 micro-batches.
    assert_eq!(g.micro_batches, 32);
    // Without CP the 8,192 tokens' activations do not fit in 80 GB (as
    // NeMo runs this model with CP 2); at 2,048 tokens there is no
    // exchange and dp 8 takes 16 micro-batches.
    let e = transformer::generate(&m, &npu, &Strategy::new(1, 1, 8), &f).unwrap_err();
    assert!(matches!(e, StrategyError::Memory { .. }), "{e}");
    let short = ModelSpec { seq: 2048, ..m };
    let g1 = transformer::generate(&short, &npu, &Strategy::new(1, 1, 8), &f).unwrap();
    assert!(g1.workload.layers.iter().all(|l| !l.name.ends_with(".kv")));
    assert_eq!(g1.micro_batches, 16);
}

/// On a flat NPU (time = FLOPs at a fixed rate, no memory traffic) CP 2
/// halves every kernel of a layer: the linear layers see s / 2 tokens,
/// the attention core s / 2 queries against all s keys, 4 b (s / 2) s h.
#[test]
fn context_parallelism_halves_each_layer_on_a_flat_npu() {
    let m = llama3_8b();
    let d = Npu::flat(989.0, 0.5, 80.0).device;
    let one = transformer::layer_times(&m, &Strategy::new(1, 1, 8), &d);
    let two = transformer::layer_times(
        &m,
        &Strategy {
            cp: 2,
            ..Strategy::new(1, 1, 4)
        },
        &d,
    );
    for (a, b) in [
        (one.attention.forward_ns, two.attention.forward_ns),
        (one.attention.input_grad_ns, two.attention.input_grad_ns),
        (one.ffn.forward_ns, two.ffn.forward_ns),
        (one.logits.forward_ns, two.logits.forward_ns),
    ] {
        assert!((b / a - 0.5).abs() < 1e-12, "{b} vs {a}");
    }
    // The attention core by hand: the causal half of 4 b s^2 h over cp 2,
    // 2 x 1 x 8192 x 8192 x 4096 / 2 FLOPs at 989 x 0.5 FLOP/ns.
    let core = 2.0 * 8192.0 * 8192.0 * 4096.0 / 2.0 / (989e3 * 0.5);
    assert!((two.attention.core_ns[0] / core - 1.0).abs() < 1e-12);
}

#[test]
fn context_parallelism_is_refused_where_it_cannot_run() {
    let m = llama3_8b();
    let (f, npu) = dgx(8);
    let cp2 = Strategy {
        cp: 2,
        ..Strategy::new(1, 1, 4)
    };
    let e = transformer::generate(
        &m,
        &npu,
        &Strategy {
            flash_attention: false,
            ..cp2.clone()
        },
        &f,
    )
    .unwrap_err();
    assert!(matches!(e, StrategyError::Context { .. }));
    assert_eq!(
        e.to_string(),
        "cp 2: ring attention needs fused attention (flash_attention = true)"
    );
    let odd = ModelSpec { seq: 8190, ..m.clone() };
    let e = transformer::generate(&odd, &npu, &cp2, &f).unwrap_err();
    assert!(
        e.to_string()
            .contains("the sequence 8190 must split into 2 cp = 4 equal chunks"),
        "{e}"
    );
    let e = transformer::generate(&m, &npu, &Strategy { dp: 8, ..cp2 }, &f).unwrap_err();
    assert_eq!(e.to_string(), "tp x pp x dp x cp = 16 is not the fabric's 8 NPUs");
}

/// Tensor-parallel collectives pipelined with their products and ZeRO-3
/// gathers prefetched under the layers never slow an iteration, hide
/// entirely at enough bandwidth, and the counted iteration (coopt's) agrees
/// with the listed one: equal under LIBRA's loop, a lower bound under
/// overlap.
#[test]
fn hidden_collectives_agree_listed_and_counted() {
    let m = ModelSpec {
        seq: 8192,
        global_batch: 64,
        micro_batch: 1,
        ..hf::read(Path::new("models/llama3-70b.json")).unwrap()
    };
    let (f, npu) = dgx(64);
    let cm = CollectiveModel::defaults(&f, TimeModel::Nccl);
    let base = Strategy {
        cp: 2,
        zero: 3,
        virtual_stages: 2,
        ..Strategy::new(8, 4, 1)
    };
    let hiding = Strategy {
        tp_overlap: true,
        prefetch: true,
        ..base.clone()
    };
    let time = |s: &Strategy, lp: Loop, bw: &[f64]| {
        let g = transformer::generate(&m, &npu, s, &f).unwrap();
        IterationModel::new(&g.workload, &f, &cm, lp).iteration_ns(bw)
    };
    for bw in [[450.0, 50.0], [45.0, 5.0], [4500.0, 500.0]] {
        let (plain, hidden) = (time(&base, Loop::Overlap, &bw), time(&hiding, Loop::Overlap, &bw));
        assert!(hidden <= plain * (1.0 + 1e-12), "{hidden} > {plain} at {bw:?}");
        // LIBRA's loop overlaps nothing: the flags change nothing there.
        let (a, b) = (time(&base, Loop::NoOverlap, &bw), time(&hiding, Loop::NoOverlap, &bw));
        assert!((a / b - 1.0).abs() < 1e-12);
        for lp in [Loop::NoOverlap, Loop::Overlap] {
            let c = transformer::census(&m, &npu, &hiding, &f).unwrap();
            let counted = Counted::new(c.compute_ns, &c.comms, &f, &cm).iteration_ns(&bw, lp);
            let listed = time(&hiding, lp, &bw);
            match lp {
                Loop::NoOverlap => assert!((counted / listed - 1.0).abs() < 1e-9, "{counted} vs {listed}"),
                Loop::Overlap => assert!(counted <= listed * (1.0 + 1e-9), "{counted} > {listed}"),
            }
        }
    }
    // At 100x the bandwidth everything hidden hides: the iteration is
    // within 1% of the compute plus the blocking collectives left (the
    // pipeline's sends and the gradient's tail).
    let g = transformer::generate(&m, &npu, &hiding, &f).unwrap();
    let it = IterationModel::new(&g.workload, &f, &cm, Loop::Overlap);
    let fast = it.iteration_ns(&[45_000.0, 5_000.0]);
    assert!(fast < it.compute_ns * 1.01, "{fast} vs compute {}", it.compute_ns);
}

/// `[parallelism] cp`, `tp_overlap` and `prefetch` are read; `[coopt] cp`
/// lists the context-parallel degrees coopt tries, each splitting the
/// data-parallel slot, and a degree the sequence cannot take is refused.
#[test]
fn studies_read_and_search_context_parallelism() {
    let study = |parallelism: &str, coopt: &str| {
        let text = format!(
            r#"
name = "cp"
time_model = "nccl"
training_loop = "overlap"
[[fabric.dims]]
name = "node"
block = "switch"
npus = 8
latency_ns = 1000
[cost.tiers.node]
link_usd_per_gbps = 1.0
[model]
preset = "llama3-8b"
seq = 8192
global_batch = 64
[npu]
type = "h100-sxm"
[parallelism]
tp = 1
pp = 1
{parallelism}
[optimize]
constraints = ["node == 450"]
{coopt}
"#
        );
        dimsum::study::Study::parse(&text, Path::new("inline.toml")).map_err(|e| e.to_string())
    };
    let s = study("dp = 4\ncp = 2\ntp_overlap = true\nprefetch = true", "").unwrap();
    let p = s.parallelism.clone().unwrap();
    assert_eq!((p.dp, p.cp, p.tp_overlap, p.prefetch), (4, 2, true, true));
    let e = study("dp = 8\ncp = 0", "").unwrap_err();
    assert!(e.contains("tp, pp, dp, ep and cp must be >= 1"), "{e}");
    let e = study("dp = 8", "[coopt]\ncp = [1, 3]").unwrap_err();
    assert!(
        e.contains("3 is not allowed: >= 1, with the sequence 8192 split into 2 cp equal chunks"),
        "{e}"
    );
    let s = study("dp = 8", "[coopt]\ncp = [1, 2, 4]").unwrap();
    let r = dimsum::pipeline::coopt::coopt(&s, &dimsum::progress::Quiet).unwrap();
    let cps: std::collections::BTreeSet<u64> = r.strategies.iter().map(|row| row.cp).collect();
    assert_eq!(cps.into_iter().collect::<Vec<_>>(), vec![1, 2, 4]);
    // Each row's degrees multiply to the 8 NPUs.
    for row in &r.strategies {
        assert_eq!(row.tp * row.pp * row.dp * row.cp, 8, "{}", row.degrees());
    }
    assert!(r.strategies.iter().any(|row| row.degrees().ends_with(" cp 4")));
}

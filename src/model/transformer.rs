//! Transformer workloads from a model and a parallelization: the layers,
//! phases and collectives LIBRA takes as input, generated instead of written,
//! with compute timed kernel by kernel (`model::compute`).
//!
//! Per transformer layer (hidden h, FFN f with k matrices, heads a, sequence
//! s, micro-batch b, M = b s tokens, vocabulary V, tensor parallelism t,
//! element bytes e), as Megatron-LM runs it (Narayanan et al., "Efficient
//! large-scale language model training on GPU clusters using Megatron-LM",
//! SC'21; Korthikanti et al., "Reducing activation recomputation in large
//! transformer models", 2022):
//! - parameters `4 h^2 + k h f`; the embedding `V h` on the first stage and
//!   the (tied) output layer on the last;
//! - forward kernels per TP rank: the QKV product (M x 3h/t x h), attention
//!   (scores and context, b a / t products of s x s x h/a and s x h/a x s,
//!   with softmax and dropout over the b a s^2 / t scores; or one fused
//!   FlashAttention-style kernel that never writes the scores and skips
//!   the blocks the causal mask hides, half those FLOPs), the output projection (M x h x h/t), the FFN (M x (k-1) f/t x
//!   h, then M x h x f/t), two layer norms, two bias + dropout + residual
//!   adds and the activation, each element-wise kernel replicated over the
//!   TP group (divided by t with sequence parallelism); the backward runs
//!   each product twice (input and weight gradients) and the element-wise
//!   kernels with twice their bytes; the last stage adds the logits (M x V/t
//!   x h) and the fp32 cross-entropy; each micro-batch's weight gradients are
//!   added into fp32 gradient buffers (the bytes of a read of the gradient
//!   and a read and a write of the buffer), and the optimizer step (Adam:
//!   `e_grad + 24 + e_weight` bytes per parameter) runs once per iteration;
//!   at the paper's FLOP count, a layer's forward is `2 M (4 h^2 + k h f) +
//!   4 b s^2 h` (`layer_forward_flops`) and the logits `2 M h V`;
//! - recomputation: `full` runs each layer's forward again in the backward,
//!   with its two tensor-parallel all-reduces (6 per layer per micro-batch,
//!   not 4); `selective` runs only the attention core again (nothing more
//!   with fused attention) and issues no extra collective;
//! - tensor parallelism over t: per layer per micro-batch two all-reduces of
//!   `b s h e` in the forward and two in the backward; sequence parallelism
//!   turns each into an all-gather plus a reduce-scatter of the same bytes,
//!   so the volume is the same and only activations shrink;
//! - pipeline parallelism over p with v virtual stages per device
//!   (interleaved 1F1B): the stage's m micro-batches plus a bubble of
//!   `(p - 1) / v` micro-batch slots, timed on the slowest stage (see
//!   "Pipeline stages" below); each micro-batch crosses each device v times each
//!   way: a send-recv of `b s h e`, or with the scatter/gather optimization
//!   (t > 1) of `b s h e / t` followed by an all-gather over the TP group
//!   (each rank's share `b s h e / t`, the whole activation gathered);
//! - data parallelism over d: the stage's gradients, `e_grad` bytes per
//!   parameter, all-reduced in buckets of one block each (ZeRO-1 and -2: a
//!   reduce-scatter plus an all-gather, the same bytes; ZeRO-3 gathers the
//!   parameters before each micro-batch and reduce-scatters the gradients,
//!   Rajbhandari et al., "ZeRO", SC'20), each bucket issued by the weight
//!   gradient of its block in the last micro-batch's backward, so that with
//!   the `overlap` loop no bucket starts before its gradient exists;
//! - memory per NPU on a stage: weights, gradients (fp32 buffers
//!   when `bytes_grad` is 4) and optimizer states of its parameters (divided
//!   by d from ZeRO-3, -2, -1 on), the activations of the micro-batches in
//!   flight (`min(p - k, m)` on stage k, the first stage's `min(p, m)`
//!   times `1 + (p - 1) / (p v)` when interleaved), per
//!   layer `s b h (10 + 24/t + 5 a s / (h t))` bytes with tensor
//!   parallelism, `s b h (34 + 5 a s / h) / t` with sequence parallelism,
//!   without the `5 a s / h` term under selective recomputation or fused
//!   attention, `2 s b h` (divided by t with sequence parallelism) under
//!   full recomputation (Korthikanti et al.); the fp32 logits and their
//!   gradient on the last stage; and the NPU's headroom (the
//!   CUDA context, the allocator's fragmentation).
//!
//! Grouped-query attention (`kv_heads` of the `a` heads): K and V are
//! `h kv / a` wide, so the attention has `2 h^2 (1 + kv / a)` parameters,
//! the QKV product is `(1 + 2 kv / a) h / t` wide, and K and V keep `4 (1 -
//! kv / a) s b h` bytes fewer activations; TP must divide the key-value
//! heads (as Megatron-LM requires).
//!
//! Mixture of experts (`Moe`): in a MoE layer a router (`h E`, replicated
//! on every TP rank) sends each token to `top_k` of `E` routed experts and
//! to every shared expert, each an FFN of `expert_ffn` with the model's
//! matrices. Expert parallelism `ep` splits the routed experts over the
//! innermost `ep` ranks of each data-parallel group (as Megatron-LM and
//! DeepSeek place it); they are replicated over the rest (the
//! expert-data-parallel group of `dp / ep`), which all-reduces their
//! gradients, and split by TP like a dense FFN. Per MoE layer per
//! micro-batch each TP rank dispatches its tokens' `top_k` copies to the
//! EP group by all-to-all and combines them back the same way: `b s h e
//! top_k load` bytes per NPU each way (divided by t with sequence
//! parallelism, where each TP rank holds `s / t` of the tokens), forward
//! and backward (again under full recomputation), where `load` is the
//! busiest expert's tokens over the mean (the capacity factor with padded
//! buffers, else the dropless imbalance); the busiest rank's experts
//! process `b s top_k load` token copies; activations add the copies (`4
//! top_k load s b h`, divided by t with sequence parallelism) and scale
//! the FFN's intermediates with the width a token sees. With `ep_overlap`
//! the all-to-alls hide under the MoE layers' compute (DualPipe).
//!
//! Pipeline stages (`stages::cut`): without interleaving, the layers
//! are cut into `p` contiguous stages by a dynamic program (as PHAZE's
//! are), the slowest stage's compute per micro-batch slot as low as it can
//! be with every stage within the NPU's HBM and holding a layer. The first
//! stage keeps the embedding's weights and `min(p, m)` micro-batches'
//! activations, stage `k` `min(p - k, m)`, the last the (tied) output
//! layer's weights, the logits and their fp32 buffer; the iteration is
//! timed on the slowest stage (the last of them on a tie; when the layers
//! split evenly and the logits with the embedding's accumulation cost less
//! than a layer, the last stage) as `m + p - 1` slots of its time, an
//! upper bound on 1F1B's `sum of the stages + (m - 1) slowest` that is
//! tight when the stages are even, and memory is the stage that needs the
//! most (a strategy no cut fits is refused with what the cut that needs
//! the least memory needs). The timed stage's workload has its own
//! gradient buckets and optimizer step: when a stage between the ends is
//! the slowest, the embedding's bucket and optimizer share, on the first
//! and last stages, are not in it (for GPT-3 at t 8, a 155 MB all-reduce
//! over the data-parallel group), an underestimate of the iteration's
//! tail. Interleaved (v > 1): every
//! chunk is timed and sized as the fullest, `ceil(L / (p v))` layers, on
//! the device with the most MoE layers (the timed device also holds the
//! logits, and its memory is charged the embedding and the first stage's
//! activations in flight), an upper bound on the best split.
//!
//! Context parallelism over c (`cp`; Megatron-LM's ring attention, Liu et
//! al., "Ring attention with blockwise transformers", 2023): each sequence
//! is split over the innermost c ranks of the data-parallel slot of the
//! placement (which then holds `dp c` ranks: they keep the same weights, so
//! gradients are reduced and ZeRO shards over all of them). Each rank runs
//! the linear layers, the logits and the element-wise kernels on its `s /
//! c` tokens, and the fused attention on its `s / c` queries against all s
//! keys (1 / c of the FLOPs, the causal chunks load-balanced); its
//! activations are `s / c` tokens'. Per attention block per micro-batch
//! the keys and values of its tokens, `b (s / c) kv (d_qk + d_v) e / t`
//! bytes, are all-gathered over the CP group in the forward and again,
//! with their gradients reduce-scattered (an all-reduce's volume), in the
//! backward, each hidden under its attention core (`Phase::hidden_ns`).
//!
//! Hidden collectives (`Phase::hidden_ns`; the `overlap` loop): with
//! `tp_overlap` each block's tensor-parallel collective is pipelined with
//! its linear products (Transformer Engine's userbuffers overlap); with
//! `prefetch` ZeRO-3's parameter gathers run under the micro-batch's
//! layers (FSDP's prefetch).
//!
//! A strategy is placed on the fabric in rank order: the groups of the three
//! parallelisms, in the order given (innermost first), each take the next
//! consecutive NPUs (`workload::place`), so a group may span several dimensions
//! or part of one.

use crate::model::compute::Device;
use crate::model::fabric::Fabric;
pub use crate::model::spec::{Mla, ModelSpec, Moe, Recompute};
use crate::model::stages::{self, CutProblem, Linear};
use crate::model::training::Issue;
use crate::model::workload::place;
use crate::model::workload::{CollectiveKind, Comm, Group, Hiding, Layer, Phase, Workload};
use serde::{Deserialize, Serialize};

impl ModelSpec {
    /// Preset names.
    pub(crate) const PRESETS: [&'static str; 13] = [
        "gpt3-175b",
        "llama2-70b",
        "llama3-8b",
        "llama3-70b",
        "llama3-405b",
        "gpt-1t",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "deepseek-v3",
        "deepseek-v3-like",
        "gpt-oss-120b",
    ];

    /// The presets read from published Hugging Face configs (`models/`,
    /// each pinned in `models/SOURCES.md`), with the training run their
    /// configs do not give: the sequence and global batch.
    /// - Llama 3.1 8B and 70B: s 8192, batch 128 (NVIDIA NeMo's H100
    ///   pre-training recipes; Meta does not publish them); 405B: s 8192,
    ///   batch 2048 (16M tokens, "The Llama 3 herd of models", 2024).
    /// - Qwen3 30B-A3B and 235B-A22B: s 4096, batch 512 and 2048 (NeMo's
    ///   recipes; Qwen does not publish them).
    /// - DeepSeek-V3: s 4096, batch 15360 (its technical report, 2024).
    /// - Mixtral 8x22B: s 4096, batch 1024 (not published).
    /// - GPT-OSS 120B: s 4096, batch 512 (NeMo's recipe).
    const FROM_CONFIG: [(&'static str, &'static str, u64, u64); 8] = [
        ("llama3-8b", include_str!("../../models/llama3-8b.json"), 8192, 128),
        ("llama3-70b", include_str!("../../models/llama3-70b.json"), 8192, 128),
        ("llama3-405b", include_str!("../../models/llama3-405b.json"), 8192, 2048),
        (
            "qwen3-30b-a3b",
            include_str!("../../models/qwen3-30b-a3b.json"),
            4096,
            512,
        ),
        (
            "qwen3-235b-a22b",
            include_str!("../../models/qwen3-235b-a22b.json"),
            4096,
            2048,
        ),
        (
            "deepseek-v3",
            include_str!("../../models/deepseek-v3.json"),
            4096,
            15360,
        ),
        (
            "mixtral-8x22b",
            include_str!("../../models/mixtral-8x22b.json"),
            4096,
            1024,
        ),
        (
            "gpt-oss-120b",
            include_str!("../../models/gpt-oss-120b.json"),
            4096,
            512,
        ),
    ];

    /// A preset with its published shape: those of [`Self::FROM_CONFIG`]
    /// from their configs, the others written here:
    /// - GPT-3 175B: 96 layers, h 12288, 96 heads, s 2048 (Brown et al., 2020);
    ///   global batch 1536 as in Narayanan et al., SC'21.
    /// - Llama-2 70B: 80 layers, h 8192, 64 heads (8 key-value heads), SwiGLU
    ///   FFN 28672, s 4096, vocabulary 32000, 4M-token batches (Touvron et
    ///   al., 2023).
    /// - 1T: 128 layers, h 25600, 160 heads, s 2048, batch 3072 (the
    ///   1-trillion-parameter row of Narayanan et al., SC'21, Table 1).
    /// - Mixtral 8x7B: 32 layers, h 4096, 32 heads (8 key-value heads),
    ///   8 SwiGLU experts of 14336, top-2, every layer, vocabulary 32000
    ///   (Jiang et al., "Mixtral of experts", 2024: 46.7B parameters, 12.9B
    ///   active); s 4096 and 4M-token batches (not published).
    /// - DeepSeek-V3-like: 61 layers, h 7168, 128 heads, the first 3 layers
    ///   dense (SwiGLU 18432), then 256 routed experts of 2048, top-8, and
    ///   one shared expert, dropless; vocabulary 129280, s 4096, batch 15360
    ///   (DeepSeek-AI, "DeepSeek-V3 technical report", 2024: 671B
    ///   parameters, 37B active). "Like": multi-head attention stands in for
    ///   multi-head latent attention (4 h^2 parameters a layer, 205M, where
    ///   MLA has 187M), BF16 for FP8, tied embeddings, no multi-token
    ///   prediction module.
    ///
    /// All in Megatron-LM's mixed precision: BF16 weights and activations,
    /// gradients accumulated and all-reduced in fp32 buffers (4 bytes), fp32
    /// master weights and Adam's two moments (12 bytes): 18 bytes per
    /// parameter.
    pub(crate) fn preset(name: &str) -> Option<ModelSpec> {
        if let Some(&(_, text, seq, batch)) = Self::FROM_CONFIG.iter().find(|p| p.0 == name) {
            let path = format!("models/{name}.json");
            return super::hf::parse(text, std::path::Path::new(&path))
                .ok()
                .map(|m| ModelSpec {
                    name: name.into(),
                    seq,
                    global_batch: batch,
                    ..m
                });
        }
        let m = |name: &str, layers, hidden, heads, ffn, k, seq, vocab, batch| ModelSpec {
            name: name.into(),
            layers,
            hidden,
            heads,
            kv_heads: heads,
            ffn,
            ffn_matrices: k,
            seq,
            vocab,
            global_batch: batch,
            micro_batch: 1,
            bytes_weight: 2.0,
            bytes_grad: 4.0,
            bytes_optimizer: 12.0,
            moe: None,
            head_dim: None,
            mla: None,
            tied_embeddings: true,
            mtp_layers: 0,
        };
        let moe = |experts, top_k, expert_ffn, shared_experts, first_dense| Moe {
            experts,
            top_k,
            expert_ffn,
            shared_experts,
            moe_every: 1,
            first_dense,
            capacity_factor: None,
            imbalance: 1.0,
        };
        Some(match name {
            "gpt3-175b" => m("gpt3-175b", 96, 12288, 96, 4 * 12288, 2, 2048, 50257, 1536),
            "llama2-70b" => ModelSpec {
                kv_heads: 8,
                ..m("llama2-70b", 80, 8192, 64, 28672, 3, 4096, 32000, 1024)
            },
            "gpt-1t" => m("gpt-1t", 128, 25600, 160, 4 * 25600, 2, 2048, 51200, 3072),
            "mixtral-8x7b" => ModelSpec {
                kv_heads: 8,
                moe: Some(moe(8, 2, 14336, 0, 0)),
                ..m("mixtral-8x7b", 32, 4096, 32, 14336, 3, 4096, 32000, 1024)
            },
            "deepseek-v3-like" => ModelSpec {
                moe: Some(moe(256, 8, 2048, 1, 3)),
                ..m("deepseek-v3-like", 61, 7168, 128, 18432, 3, 4096, 129280, 15360)
            },
            _ => return None,
        })
    }
}

/// The NPU the model runs on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Npu {
    /// The accelerator type (`[npu] type`), or `custom`.
    pub name: String,
    /// What its kernels run on.
    #[serde(skip)]
    pub device: Device,
    /// HBM, GiB.
    pub hbm_gib: f64,
    /// HBM kept free (CUDA context, allocator fragmentation), GiB.
    pub headroom_gib: f64,
    /// Board power, W (a built-in type's, or `[npu] tdp_w`).
    pub tdp_w: Option<f64>,
    /// Price, $ (`[npu] price_usd`; no list price is published for the
    /// built-in types).
    pub price_usd: Option<f64>,
}

impl Npu {
    /// An NPU of `peak_tflops` whose every kernel runs at `efficiency` of
    /// it (the one-constant model), with `hbm_gib` of HBM and no headroom.
    pub fn flat(peak_tflops: f64, efficiency: f64, hbm_gib: f64) -> Npu {
        Npu {
            name: "custom".into(),
            device: Device {
                peak_tflops,
                hbm_gbps: 0.0,
                sms: 1,
                gemm_efficiency: efficiency,
                memory_efficiency: 1.0,
                flat: Some(efficiency),
                onchip: None,
                fp8: None,
            },
            hbm_gib,
            headroom_gib: 0.0,
            tdp_w: None,
            price_usd: None,
        }
    }
}

/// A parallelization and the training recipe that goes with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Strategy {
    /// Tensor-parallel degree t.
    pub tp: u64,
    /// Pipeline-parallel degree p.
    pub pp: u64,
    /// Data-parallel degree d.
    pub dp: u64,
    /// Expert-parallel degree (MoE models): the experts are split over the
    /// innermost `ep` ranks of each data-parallel group, and replicated
    /// over the rest (the expert-data-parallel group of `dp / ep`).
    pub ep: u64,
    /// ZeRO stage 0-3.
    pub zero: u8,
    /// Sequence parallelism with TP.
    pub sequence_parallel: bool,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Virtual pipeline stages per device v (interleaved 1F1B; 1: plain 1F1B).
    pub virtual_stages: u64,
    /// Pipeline sends of 1/t of the activation, all-gathered over the TP
    /// group on arrival (Megatron's scatter/gather optimization).
    pub scatter_gather: bool,
    /// Fused (FlashAttention-style) attention: the scores are never written.
    pub flash_attention: bool,
    /// Placement order, innermost first, e.g. `tp,pp,dp`.
    pub order: [Par; 3],
    /// The matrix products' precision (`[parallelism] precision`).
    #[serde(default, skip_serializing_if = "Precision::is_bf16")]
    pub precision: Precision,
    /// Context-parallel degree c: each sequence split over the innermost
    /// `c` ranks of the data-parallel slot of the placement (which holds `dp
    /// c` ranks), ring attention exchanging the keys and values (see the
    /// module doc). 1: none.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cp: u64,
    /// Tensor-parallel collectives pipelined with the matrix products around
    /// them (Transformer Engine's `tp_comm_overlap`): each hides under its
    /// block's linear products instead of blocking.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tp_overlap: bool,
    /// ZeRO-3's parameter all-gathers prefetched under the micro-batch's
    /// layers (PyTorch FSDP's and Megatron-FSDP's prefetch) instead of
    /// blocking before them.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefetch: bool,
    /// A MoE layer's dispatch and combine all-to-alls hidden under its
    /// compute (another micro-batch's, as DualPipe and Megatron-LM's
    /// `overlap_moe_expert_parallel_comm` schedule them) instead of
    /// blocking.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ep_overlap: bool,
}

fn one() -> u64 {
    1
}

/// ` x cp` where context parallelism counts in the product of degrees.
fn times_cp(cp: &u64) -> &'static str {
    if *cp > 1 { " x cp" } else { "" }
}

fn is_one(x: &u64) -> bool {
    *x == 1
}

fn is_false(x: &bool) -> bool {
    !*x
}

/// The precision the linear layers' matrix products run in.
///
/// FP8 as NVIDIA's Transformer Engine runs it: the QKV, attention-output,
/// FFN and expert products take FP8 operands (E4M3 forward, E5M2 gradients)
/// at the accelerator's FP8 peak and FP8 calibration, 1 byte an element;
/// the attention core, the router and the logits stay BF16. Each FP8
/// product adds its casts, streamed through HBM: forward, the input (`m
/// k`, read 2 bytes and write 1); backward, the output gradient (`m n`,
/// read 2, write 1 and its transpose 1) and the input's transpose for the
/// weight gradient (`m k`, 1 byte); once per iteration, after the
/// optimizer step, the weights (`k n`, read 2, write 1 and the transpose
/// 1), which Transformer Engine keeps across the micro-batches. Every amax
/// reduction is fused into its cast. Weights, gradients, optimizer states
/// and every collective keep their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// BF16 products (mixed precision).
    #[default]
    Bf16,
    /// FP8 products (Transformer Engine).
    Fp8,
}

impl Precision {
    /// Whether it is BF16 (the default, left out of written strategies).
    pub fn is_bf16(&self) -> bool {
        *self == Precision::Bf16
    }
}

impl crate::error::Named for Precision {
    const WHAT: &'static str = "a precision";
    const ALL: &'static [Precision] = &[Precision::Bf16, Precision::Fp8];
    fn as_name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }
}
crate::named!(Precision);

impl Strategy {
    /// A strategy with Megatron-LM's defaults: ZeRO-1, sequence
    /// parallelism, no recomputation, plain 1F1B, scatter/gather sends,
    /// fused attention, `tp,pp,dp`.
    pub fn new(tp: u64, pp: u64, dp: u64) -> Strategy {
        Strategy {
            tp,
            pp,
            dp,
            ep: 1,
            zero: 1,
            sequence_parallel: true,
            recompute: Recompute::None,
            virtual_stages: 1,
            scatter_gather: true,
            flash_attention: true,
            order: [Par::Tp, Par::Pp, Par::Dp],
            precision: Precision::Bf16,
            cp: 1,
            tp_overlap: false,
            prefetch: false,
            ep_overlap: false,
        }
    }

    /// The ranks of the data-parallel slot of the placement: the
    /// data-parallel and context-parallel degrees together, `dp c` (they
    /// hold the same weights, so gradients and ZeRO's shards span them).
    pub fn data_ranks(&self) -> u64 {
        self.dp.saturating_mul(self.cp.max(1))
    }
}

/// The training recipes a co-optimization searches beside TP x PP x DP and
/// the order: every combination of these values (`[coopt]` in a study,
/// `coopt --recipe whole`). [`RecipeSpace::only`] is one recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeSpace {
    /// Micro-batch sizes (sequences).
    pub micro_batch: Vec<u64>,
    /// Recomputation.
    pub recompute: Vec<Recompute>,
    /// ZeRO stages.
    pub zero: Vec<u8>,
    /// Sequence parallelism off and / or on (it changes nothing without TP,
    /// so it is tried only where TP > 1).
    pub sequence_parallel: Vec<bool>,
    /// Virtual pipeline stages per device (tried only where PP > 1).
    pub virtual_stages: Vec<u64>,
    /// Matrix-product precisions.
    #[serde(skip_serializing_if = "only_bf16")]
    pub precision: Vec<Precision>,
    /// Context-parallel degrees: each splits the placement's data-parallel
    /// slot into `dp x cp` (tried where it divides the slot).
    #[serde(skip_serializing_if = "only_one")]
    pub cp: Vec<u64>,
}

fn only_bf16(p: &[Precision]) -> bool {
    p == [Precision::Bf16]
}

fn only_one(c: &[u64]) -> bool {
    c == [1]
}

impl RecipeSpace {
    /// Most recipes a space may hold (times the placements, the
    /// candidates a search sizes up).
    pub const MAX_RECIPES: usize = 4096;

    /// The one recipe of `model` and `s`.
    pub fn only(model: &ModelSpec, s: &Strategy) -> RecipeSpace {
        RecipeSpace {
            micro_batch: vec![model.micro_batch],
            recompute: vec![s.recompute],
            zero: vec![s.zero],
            sequence_parallel: vec![s.sequence_parallel],
            virtual_stages: vec![s.virtual_stages.max(1)],
            precision: vec![s.precision],
            cp: vec![s.cp.max(1)],
        }
    }

    /// The whole recipe: micro-batches of 1, 2, 4, 8 and 16 sequences (and
    /// the model's own), no, selective or full recomputation, ZeRO 0 to 3,
    /// sequence parallelism off and on, 1, 2 or 4 virtual stages.
    pub fn whole(model: &ModelSpec) -> RecipeSpace {
        let mut micro_batch = vec![1, 2, 4, 8, 16, model.micro_batch];
        micro_batch.sort_unstable();
        micro_batch.dedup();
        RecipeSpace {
            micro_batch,
            recompute: <Recompute as crate::error::Named>::ALL.to_vec(),
            zero: vec![0, 1, 2, 3],
            sequence_parallel: vec![false, true],
            virtual_stages: vec![1, 2, 4],
            precision: vec![Precision::Bf16],
            cp: vec![1],
        }
    }

    /// How many recipes (combinations) the space holds.
    pub fn len(&self) -> usize {
        self.micro_batch.len()
            * self.recompute.len()
            * self.zero.len()
            * self.sequence_parallel.len()
            * self.virtual_stages.len()
            * self.precision.len()
            * self.cp.len()
    }

    /// Whether the space is empty (a list with no value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every recipe of the space on the placement `s`: (micro-batch, the
    /// strategy). Sequence parallelism is kept as `s` has it where TP is 1,
    /// virtual stages at 1 where PP is 1 (both change nothing there); each
    /// context-parallel degree that divides the data-parallel slot splits
    /// it.
    pub fn each(&self, s: &Strategy) -> Vec<(u64, Strategy)> {
        let slot = s.data_ranks();
        let mut out = Vec::new();
        for &cp in self.cp.iter().filter(|&&c| c >= 1 && slot.is_multiple_of(c)) {
            let placed = Strategy {
                dp: slot / cp,
                cp,
                ..s.clone()
            };
            out.extend(self.each_recipe(&placed));
        }
        out
    }

    /// [`RecipeSpace::each`] at `s`'s own degrees.
    fn each_recipe(&self, s: &Strategy) -> Vec<(u64, Strategy)> {
        let sp: &[bool] = if s.tp > 1 {
            &self.sequence_parallel
        } else {
            std::slice::from_ref(&s.sequence_parallel)
        };
        let vs: &[u64] = if s.pp > 1 { &self.virtual_stages } else { &[1] };
        let mut out = Vec::new();
        for &mb in &self.micro_batch {
            for &recompute in &self.recompute {
                for &zero in &self.zero {
                    for &sequence_parallel in sp {
                        for &virtual_stages in vs {
                            for &precision in &self.precision {
                                out.push((
                                    mb,
                                    Strategy {
                                        recompute,
                                        zero,
                                        sequence_parallel,
                                        virtual_stages,
                                        precision,
                                        ..s.clone()
                                    },
                                ));
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// The representative of the strategies whose iterations equal `s`'s (the
/// records `generate` builds, not the memory): ZeRO 2 as 1 (they differ in
/// memory alone: `records` tests `zero >= 1` and `zero >= 3`), selective
/// recomputation as none under fused attention (which recomputes nothing
/// more: `selective_ns` is 0 and the scores are never stored).
pub fn same_iteration(s: &Strategy) -> Strategy {
    let mut c = s.clone();
    if c.zero == 2 {
        c.zero = 1;
    }
    if c.flash_attention && c.recompute == Recompute::Selective {
        c.recompute = Recompute::None;
    }
    c
}

/// One of the three parallelisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Par {
    /// Tensor.
    Tp,
    /// Pipeline.
    Pp,
    /// Data.
    Dp,
}

impl Strategy {
    /// The degree of `par`.
    fn degree(&self, par: Par) -> u64 {
        match par {
            Par::Tp => self.tp,
            Par::Pp => self.pp,
            Par::Dp => self.data_ranks(),
        }
    }

    /// `tp,pp,dp`-style order.
    pub(crate) fn order_name(&self) -> String {
        self.order
            .iter()
            .map(|p| match p {
                Par::Tp => "tp",
                Par::Pp => "pp",
                Par::Dp => "dp",
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The group of each parallelism on `fabric`, placed in rank order.
    pub fn groups(&self, fabric: &Fabric) -> Option<[Group; 3]> {
        let npus: Vec<u32> = fabric.dims.iter().map(|d| d.npus).collect();
        let mut skip = 1;
        let mut out: [Option<Group>; 3] = [None, None, None];
        for par in self.order {
            let size = self.degree(par);
            let g = place(skip, size, &npus)?;
            skip *= size;
            out[par as usize] = Some(g);
        }
        let [a, b, c] = out;
        Some([a?, b?, c?])
    }

    /// The ranks placed before the data-parallel slot.
    fn data_skip(&self) -> u64 {
        self.order
            .iter()
            .take_while(|p| **p != Par::Dp)
            .map(|p| self.degree(*p))
            .product()
    }

    /// The expert-parallel group (the innermost `ep` ranks of the
    /// data-parallel slot, `dp c` ranks with context parallelism) and the
    /// expert-data-parallel group (the rest of it, `dp c / ep`) on `fabric`.
    pub fn expert_groups(&self, fabric: &Fabric) -> Option<[Group; 2]> {
        let npus: Vec<u32> = fabric.dims.iter().map(|d| d.npus).collect();
        let skip = self.data_skip();
        let (ep, ranks) = (self.ep, self.data_ranks());
        if ep == 0 || !ranks.is_multiple_of(ep) {
            return None;
        }
        Some([
            place(skip, ep, &npus)?,
            place(skip.checked_mul(ep)?, ranks / ep, &npus)?,
        ])
    }

    /// The context-parallel group (the innermost `c` ranks of the
    /// data-parallel slot) on `fabric`.
    pub fn context_group(&self, fabric: &Fabric) -> Option<Group> {
        let npus: Vec<u32> = fabric.dims.iter().map(|d| d.npus).collect();
        place(self.data_skip(), self.cp.max(1), &npus)
    }
}

/// Memory per NPU, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Memory {
    /// Weights.
    pub weights: f64,
    /// Gradients.
    pub gradients: f64,
    /// Optimizer states.
    pub optimizer: f64,
    /// Activations in flight.
    pub activations: f64,
    /// Transient buffers (the fp32 logits and their gradient).
    pub workspace: f64,
    /// Kept free (the NPU's headroom).
    pub headroom: f64,
}

impl Memory {
    /// Total, bytes.
    pub fn total(&self) -> f64 {
        self.weights + self.gradients + self.optimizer + self.activations + self.workspace + self.headroom
    }

    /// Total, GiB.
    pub(crate) fn gib(&self) -> f64 {
        self.total() / crate::model::units::BYTES_PER_GIB
    }
}

/// A generated iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The workload (the timed pipeline device's view, 1F1B slots in
    /// sequence).
    pub workload: Workload,
    /// Memory per NPU on the pipeline device that needs the most.
    pub memory: Memory,
    /// Micro-batches per iteration.
    pub micro_batches: u64,
}

/// Why a strategy is not valid for a model on a fabric (`generate`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StrategyError {
    /// The degrees do not multiply to the fabric's NPUs.
    #[error("tp x pp x dp{} = {product} is not the fabric's {npus} NPUs", times_cp(.cp))]
    Npus {
        /// tp x pp x dp (x cp).
        product: u64,
        /// The fabric's NPUs.
        npus: u64,
        /// CP degree.
        cp: u64,
    },
    /// Context parallelism the model or recipe cannot take.
    #[error("cp {cp}: {reason}")]
    Context {
        /// CP degree.
        cp: u64,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// TP does not divide the attention heads.
    #[error("tp {tp} does not divide the {heads} heads")]
    Heads {
        /// TP degree.
        tp: u64,
        /// Heads.
        heads: u32,
    },
    /// PP x virtual stages is more than the layers.
    #[error("pp {pp} x virtual_stages {v} is more than the {layers} layers")]
    Layers {
        /// PP degree.
        pp: u64,
        /// Virtual stages per device.
        v: u64,
        /// Layers.
        layers: u32,
    },
    /// TP does not divide the key-value heads.
    #[error("tp {tp} does not divide the {kv_heads} key-value heads")]
    KvHeads {
        /// TP degree.
        tp: u64,
        /// Key-value heads.
        kv_heads: u32,
    },
    /// EP does not divide DP (times CP) or the experts (or the model has
    /// none).
    #[error("ep {ep} must divide dp {dp} and the {experts} experts")]
    Experts {
        /// EP degree.
        ep: u64,
        /// DP degree.
        dp: u64,
        /// Routed experts (0: a dense model, where EP is 1).
        experts: u32,
    },
    /// DP x micro-batch does not divide the global batch.
    #[error("dp {dp} x micro-batch {micro_batch} does not divide the global batch {global_batch}")]
    Batch {
        /// DP degree.
        dp: u64,
        /// Micro-batch.
        micro_batch: u64,
        /// Global batch.
        global_batch: u64,
    },
    /// The interleaved schedule needs whole rounds of p micro-batches.
    #[error("virtual_stages {v} > 1 needs the {m} micro-batches to be a multiple of pp {pp}")]
    Interleave {
        /// Virtual stages.
        v: u64,
        /// Micro-batches.
        m: u64,
        /// PP degree.
        pp: u64,
    },
    /// The placement order does not fit the fabric's dimensions.
    #[error("order {order} cannot be placed on {shape}")]
    Placement {
        /// The order, e.g. `tp,pp,dp`.
        order: String,
        /// The fabric's shape.
        shape: String,
    },
    /// The model itself cannot be trained as given.
    #[error("model `{name}`: {reason}")]
    Model {
        /// The model.
        name: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// FP8 on an NPU without FP8 matrix products.
    #[error("precision fp8 needs FP8 matrix products, which NPU `{npu}` has not (allowed: bf16)")]
    Precision {
        /// The NPU.
        npu: String,
    },
    /// Out of HBM.
    #[error("needs {gib:.1} GiB per NPU, more than its {hbm_gib} GiB of HBM")]
    Memory {
        /// Memory per NPU, GiB.
        gib: f64,
        /// HBM per NPU, GiB.
        hbm_gib: f64,
    },
}

/// Compute of one block (attention or FFN) for one micro-batch on one TP
/// rank, ns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BlockTime {
    /// Forward.
    pub forward_ns: f64,
    /// Input gradients (and the element-wise backward).
    pub input_grad_ns: f64,
    /// Weight gradients.
    pub weight_grad_ns: f64,
    /// What selective recomputation runs again.
    pub selective_ns: f64,
    /// The block's linear products, forward and input gradients: what its
    /// tensor-parallel collectives hide under with `tp_overlap`.
    pub linear_ns: [f64; 2],
    /// The attention core, forward and backward (0 in other blocks): what
    /// ring attention's key-value exchange hides under.
    pub core_ns: [f64; 2],
}

/// The attention and FFN blocks of one layer and the logits, timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerTimes {
    /// Attention block.
    pub attention: BlockTime,
    /// FFN block.
    pub ffn: BlockTime,
    /// A MoE layer's FFN (router, shared and routed experts, token
    /// permutation), if the model has one.
    pub moe: Option<BlockTime>,
    /// Logits and cross-entropy (the last stage).
    pub logits: BlockTime,
}

/// Every kernel of one layer for one micro-batch on one TP rank, timed on
/// `d` (see the module doc).
pub fn layer_times(model: &ModelSpec, s: &Strategy, d: &Device) -> LayerTimes {
    let e = model.bytes_weight;
    let t = s.tp as f64;
    let (b, sq, h) = (model.micro_batch as f64, model.seq as f64, model.hidden as f64);
    let (f, v) = (model.ffn as f64, model.vocab as f64);
    let up = f64::from(model.ffn_matrices - 1) * f;
    // Context parallelism: this rank's sq / c tokens of each sequence.
    let cp = s.cp.max(1) as f64;
    let m = b * sq / cp;
    // Element-wise kernels over the hidden state: replicated over the TP
    // group unless sequence parallel.
    let rep = if s.sequence_parallel { t } else { 1.0 };
    // A layer norm reads and writes M h; a bias + dropout + residual add
    // reads two, writes one and a 1-byte mask.
    let block_stream = (2.0 * e + (3.0 * e + 1.0)) * m * h / rep;
    // Forward product, then its two backward products (input and weight
    // gradients): (m, n, k) -> (m, k, n) and (k, n, m).
    let gemm = |mm: f64, n: f64, k: f64, batch: f64| {
        (
            d.gemm_ns(mm, n, k, batch, e),
            d.gemm_ns(mm, k, n, batch, e),
            d.gemm_ns(k, n, mm, batch, e),
        )
    };
    let add = |x: (f64, f64, f64), y: (f64, f64, f64)| (x.0 + y.0, x.1 + y.1, x.2 + y.2);
    // A linear layer's product: in FP8 with its casts where the strategy
    // runs FP8 (see [`Precision`]), else as `gemm`.
    let fp8 = if s.precision == Precision::Fp8 {
        d.fp8_device()
    } else {
        None
    };
    let linear_gemm = |mm: f64, n: f64, k: f64, batch: f64| match &fp8 {
        None => gemm(mm, n, k, batch),
        Some(d8) => (
            d8.gemm_ns(mm, n, k, batch, 1.0) + d.stream_ns(3.0 * batch * mm * k),
            d8.gemm_ns(mm, k, n, batch, 1.0) + d.stream_ns(4.0 * batch * mm * n),
            d8.gemm_ns(k, n, mm, batch, 1.0) + d.stream_ns(batch * mm * k),
        ),
    };
    let linear = attention_projections(model, m, t, &linear_gemm);
    let (core_fwd, core_bwd) = attention_core(model, s, d, &gemm);
    let attention = BlockTime {
        forward_ns: linear.0 + core_fwd + d.stream_ns(block_stream),
        input_grad_ns: linear.1 + core_bwd + d.stream_ns(2.0 * block_stream),
        weight_grad_ns: linear.2,
        selective_ns: if s.flash_attention { 0.0 } else { core_fwd },
        linear_ns: [linear.0, linear.1],
        core_ns: [core_fwd, core_bwd],
    };
    let ffn_gemms = add(linear_gemm(m, up / t, h, 1.0), linear_gemm(m, h, f / t, 1.0));
    // The activation reads its inputs and writes f: GeLU 2, SwiGLU 3 tensors.
    let act = f64::from(model.ffn_matrices) * m * f / t * e;
    let ffn = BlockTime {
        forward_ns: ffn_gemms.0 + d.stream_ns(block_stream + act),
        input_grad_ns: ffn_gemms.1 + d.stream_ns(2.0 * (block_stream + act)),
        weight_grad_ns: ffn_gemms.2,
        selective_ns: 0.0,
        linear_ns: [ffn_gemms.0, ffn_gemms.1],
        core_ns: [0.0; 2],
    };
    // Logits in e bytes, the cross-entropy in fp32: write e, read e, write
    // and read 4 per element, forward and backward alike.
    let lg = gemm(m, v / t, h, 1.0);
    let ce = d.stream_ns(m * v / t * (2.0 * e + 8.0));
    let logits = BlockTime {
        forward_ns: lg.0 + ce,
        input_grad_ns: lg.1 + ce,
        weight_grad_ns: lg.2,
        ..BlockTime::default()
    };
    let moe = moe_block(model, s, d, m, block_stream, &gemm, &linear_gemm);
    // Multi-token prediction on the last stage, after the logits.
    let logits = if model.mtp_layers > 0 {
        let block = match (&moe, model.is_moe(model.layers.saturating_sub(1))) {
            (Some(x), true) => *x,
            _ => ffn,
        };
        let proj = linear_gemm(m, h / t, 2.0 * h, 1.0);
        with_mtp(logits, f64::from(model.mtp_layers), proj, &attention, &block)
    } else {
        logits
    };
    LayerTimes {
        attention,
        ffn,
        moe,
        logits,
    }
}

/// The attention core of one layer for one micro-batch on one TP rank,
/// forward and backward (both input gradients, the softmax and dropout
/// included): one fused kernel with `flash_attention`, else the score and
/// context products per head (`gemm`: forward, input and weight gradient
/// products) and their element-wise kernels.
fn attention_core(
    model: &ModelSpec,
    s: &Strategy,
    d: &Device,
    gemm: &dyn Fn(f64, f64, f64, f64) -> (f64, f64, f64),
) -> (f64, f64) {
    let e = model.bytes_weight;
    let t = s.tp as f64;
    let (b, sq, a) = (model.micro_batch as f64, model.seq as f64, f64::from(model.heads));
    let cp = s.cp.max(1) as f64;
    let m = b * sq / cp;
    let heads = b * a / t;
    let (dqk, dv) = model.head_dims();
    let qkvo = attention_io_bytes(model, m, t);
    if s.flash_attention {
        // One fused kernel: of the 4 b s^2 h / t FLOPs of the scores and
        // the context (h: the core's width), the causal half a decoder's
        // mask leaves (FlashAttention skips the masked blocks), forward;
        // 2.5 times that backward (the scores recomputed); reading Q, K,
        // V and writing O; its softmax over the scores, on a parametric
        // accelerator's vector units, once forward and twice backward
        // (recomputed, then its gradient). Under context parallelism c,
        // this rank's s / c queries against the s keys (ring attention's
        // load-balanced causal chunks): 1 / c of the FLOPs and scores,
        // reading the other ranks' keys and values too.
        let flops = 2.0 * b * sq * sq * model.core_width() / t / cp;
        let io = qkvo + (cp - 1.0) * kv_chunk_bytes(model, s);
        let scores = heads * sq * sq / 2.0 / cp;
        (
            d.fused_ns(flops, io, scores),
            d.fused_ns(2.5 * flops, 2.0 * io, 2.0 * scores),
        )
    } else {
        // Per head: scores of width d_qk, the context of d_v (both h / a
        // for the default heads).
        let scores = gemm(sq, sq, dqk, heads);
        let context = gemm(sq, dv, sq, heads);
        // Softmax reads and writes the scores; dropout reads, writes and
        // keeps a 1-byte mask.
        let softmax = d.stream_ns(heads * sq * sq * (4.0 * e + 1.0));
        (
            scores.0 + context.0 + softmax,
            scores.1 + scores.2 + context.1 + context.2 + 2.0 * softmax,
        )
    }
}

/// A MoE layer's FFN block for one micro-batch of `m` tokens on one TP
/// rank (`None` for a dense model): the routed experts on this NPU over
/// the busiest expert's token copies, the shared experts, the router
/// (`linear_gemm` and `gemm`: forward, input and weight gradient products),
/// the activation and the token permutation, with the layer's
/// `block_stream` bytes of norms and residual adds.
fn moe_block(
    model: &ModelSpec,
    s: &Strategy,
    d: &Device,
    m: f64,
    block_stream: f64,
    gemm: &dyn Fn(f64, f64, f64, f64) -> (f64, f64, f64),
    linear_gemm: &dyn Fn(f64, f64, f64, f64) -> (f64, f64, f64),
) -> Option<BlockTime> {
    let (e, t, h) = (model.bytes_weight, s.tp as f64, model.hidden as f64);
    let add = |x: (f64, f64, f64), y: (f64, f64, f64)| (x.0 + y.0, x.1 + y.1, x.2 + y.2);
    model.moe.as_ref().map(|x| {
        let k_mat = f64::from(model.ffn_matrices);
        let fe = x.expert_ffn as f64;
        // This NPU's experts and the token copies they process: the EP
        // group's M k copies spread over its ranks, the busiest expert's
        // share `load` times the mean.
        let local = f64::from(x.experts) / s.ep.max(1) as f64;
        let copies = m * f64::from(x.top_k) * x.load();
        let rows = copies / local;
        let routed = add(
            linear_gemm(rows, (k_mat - 1.0) * fe / t, h, local),
            linear_gemm(rows, h, fe / t, local),
        );
        let shared_f = f64::from(x.shared_experts) * fe;
        let shared = if shared_f > 0.0 {
            add(
                linear_gemm(m, (k_mat - 1.0) * shared_f / t, h, 1.0),
                linear_gemm(m, h, shared_f / t, 1.0),
            )
        } else {
            (0.0, 0.0, 0.0)
        };
        // The router's logits, on every TP rank.
        let router = gemm(m, f64::from(x.experts), h, 1.0);
        let all = add(add(routed, shared), router);
        // The activation over every copy's intermediate; the permutation
        // reads and writes each copy going in and coming out.
        let act = k_mat * (copies + m * f64::from(x.shared_experts)) * fe / t * e;
        let permute = 4.0 * copies * h * e;
        let stream = block_stream + act + permute;
        BlockTime {
            forward_ns: all.0 + d.stream_ns(stream),
            input_grad_ns: all.1 + d.stream_ns(2.0 * stream),
            weight_grad_ns: all.2,
            selective_ns: 0.0,
            linear_ns: [all.0, all.1],
            core_ns: [0.0; 2],
        }
    })
}

/// The logits followed by `k` multi-token prediction modules, each its
/// projection of 2h to h (`proj`: forward, input and weight gradients), one
/// layer (`attention` and `block`, the model's last kind) and the logits
/// again.
fn with_mtp(logits: BlockTime, k: f64, proj: (f64, f64, f64), attention: &BlockTime, block: &BlockTime) -> BlockTime {
    let one = logits;
    BlockTime {
        forward_ns: one.forward_ns + k * (proj.0 + attention.forward_ns + block.forward_ns + one.forward_ns),
        input_grad_ns: one.input_grad_ns
            + k * (proj.1 + attention.input_grad_ns + block.input_grad_ns + one.input_grad_ns),
        weight_grad_ns: one.weight_grad_ns
            + k * (proj.2 + attention.weight_grad_ns + block.weight_grad_ns + one.weight_grad_ns),
        selective_ns: one.selective_ns,
        ..BlockTime::default()
    }
}

/// The keys and values of one rank's `s / c` tokens of a micro-batch on
/// one TP rank, bytes: what ring attention passes on at each of its `c -
/// 1` steps, `b (s / c) w e / t` with `w` the key and value widths (`kv
/// (d_qk + d_v)`: `2 h kv / a` for the default heads; every head's under
/// multi-head latent attention, whose keys and values are per head).
pub fn kv_chunk_bytes(model: &ModelSpec, s: &Strategy) -> f64 {
    let (dqk, dv) = model.head_dims();
    let kv = if model.mla.is_some() {
        f64::from(model.heads)
    } else {
        f64::from(model.kv_heads)
    };
    let tokens = model.micro_batch as f64 * model.seq as f64 / s.cp.max(1) as f64;
    tokens * kv * (dqk + dv) * model.bytes_weight / s.tp as f64
}

/// Forward, input-gradient and weight-gradient time of one layer's
/// attention projections for `m` tokens on one of `t` TP ranks, each
/// product timed by `gemm`: Q, K and V (K and V of kv / a the width), then
/// the output projection; with its own head width, `a` query and `kv` key
/// and value heads of it; MLA's down projections (to the query rank, and to
/// the key-value latent with the shared rotary key) on every TP rank, its
/// up projections and the output split over them.
fn attention_projections(
    model: &ModelSpec,
    m: f64,
    t: f64,
    gemm: &dyn Fn(f64, f64, f64, f64) -> (f64, f64, f64),
) -> (f64, f64, f64) {
    let add = |x: (f64, f64, f64), y: (f64, f64, f64)| (x.0 + y.0, x.1 + y.1, x.2 + y.2);
    let (h, a) = (model.hidden as f64, f64::from(model.heads));
    let (dqk, dv) = model.head_dims();
    match (&model.mla, model.head_dim) {
        (None, None) => {
            let kv = f64::from(model.kv_heads) / a;
            add(gemm(m, (1.0 + 2.0 * kv) * h / t, h, 1.0), gemm(m, h, h / t, 1.0))
        }
        (None, Some(_)) => add(
            gemm(m, (a + 2.0 * f64::from(model.kv_heads)) * dqk / t, h, 1.0),
            gemm(m, h, a * dv / t, 1.0),
        ),
        (Some(x), _) => {
            let (rq, rkv, dr) = (x.q_lora_rank as f64, x.kv_lora_rank as f64, x.qk_rope_head_dim as f64);
            let q = if rq > 0.0 {
                add(gemm(m, rq, h, 1.0), gemm(m, a * dqk / t, rq, 1.0))
            } else {
                gemm(m, a * dqk / t, h, 1.0)
            };
            let kv_proj = add(
                gemm(m, rkv + dr, h, 1.0),
                gemm(m, a * (x.qk_nope_head_dim as f64 + dv) / t, rkv, 1.0),
            );
            add(add(q, kv_proj), gemm(m, h, a * dv / t, 1.0))
        }
    }
}

/// The attention core's Q, K, V and O bytes for `m` tokens per TP rank (K
/// and V kv / a as wide as Q; MLA's keys and values per head, as wide as
/// their queries and outputs).
fn attention_io_bytes(model: &ModelSpec, m: f64, t: f64) -> f64 {
    let (h, a, e) = (model.hidden as f64, f64::from(model.heads), model.bytes_weight);
    let (dqk, dv) = model.head_dims();
    match (&model.mla, model.head_dim) {
        (None, None) => (2.0 + 2.0 * f64::from(model.kv_heads) / a) * m * h / t * e,
        (None, Some(_)) => (a + f64::from(model.kv_heads)) * (dqk + dv) * m / t * e,
        (Some(_), _) => 2.0 * a * (dqk + dv) * m / t * e,
    }
}

/// A strategy checked without its records: everything `generate` knows
/// before it builds the iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// Micro-batches per iteration.
    pub micro_batches: u64,
    /// Memory per NPU on the pipeline device that needs the most.
    pub memory: Memory,
    /// The tp, pp and dp groups on the fabric.
    pub groups: [Group; 3],
    /// The expert-parallel and expert-data-parallel groups (MoE models).
    pub expert_groups: Option<[Group; 2]>,
    /// The context-parallel group (a single NPU without CP).
    pub context_group: Group,
    /// The layers each pipeline device holds, and the device timed.
    pub cut: StageCut,
    /// Every kernel of a layer and the logits, timed on the NPU.
    pub times: LayerTimes,
    /// The iteration's compute on the timed device, ns, in closed form: what the generated
    /// workload's records sum to.
    pub compute_ns: f64,
}

/// What one pipeline device holds: its layers (all of its chunks), whether
/// it runs the logits and keeps the (tied) embedding, and its activations
/// in flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stage {
    /// Dense layers.
    pub dense: u64,
    /// MoE layers.
    pub moe: u64,
    /// It runs the logits and the cross-entropy (the last device).
    pub logits: bool,
    /// It keeps the embedding's weights (the first device, and the last
    /// for the tied output layer).
    pub embedding: bool,
    /// It keeps the fp32 logits and their gradient (the last device).
    pub logits_buffer: bool,
    /// Micro-batches whose activations it keeps (each all of its layers').
    pub in_flight: f64,
}

impl Stage {
    /// Its layers, dense and MoE.
    pub fn layers(&self) -> u64 {
        self.dense + self.moe
    }
}

/// The layers of every pipeline device and the device timed (the slowest
/// per micro-batch slot; see the module doc). With interleaving (v > 1)
/// one stage stands for every device: v chunks of `ceil(L / (p v))`
/// layers, the logits, the embedding and the first device's activations
/// in flight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageCut {
    /// The devices in pipeline order; interleaved, a single stage that
    /// stands for every device.
    pub stages: Vec<Stage>,
    /// The device timed.
    pub timed: usize,
    /// The device that needs the most memory.
    pub fullest: usize,
    /// Virtual stages (chunks) per device; above 1, the single stage
    /// stands for every device.
    pub chunks: u64,
}

impl StageCut {
    /// The device timed.
    pub fn timed(&self) -> &Stage {
        &self.stages[self.timed]
    }

    /// Layers per device in pipeline order, runs of equal ones as
    /// `<layers> (x<devices>)`, and the device timed (`"layers per device,
    /// first to last: 1, 2 (x30), 1;
    /// timed: device 31 of 32, 2 layers"`); interleaved, the layers every
    /// device is timed with.
    pub fn describe(&self) -> String {
        let timed = self.timed();
        if self.chunks > 1 {
            return format!(
                "every device timed with {} layers ({} chunks of {}, the fullest)",
                timed.layers(),
                self.chunks,
                timed.layers() / self.chunks
            );
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for st in &self.stages {
            match runs.last_mut() {
                Some((n, c)) if *n == st.layers() => *c += 1,
                _ => runs.push((st.layers(), 1)),
            }
        }
        let runs: Vec<String> = runs
            .iter()
            .map(|(n, c)| if *c == 1 { n.to_string() } else { format!("{n} (x{c})") })
            .collect();
        let n = timed.layers();
        format!(
            "layers per device, first to last: {}; timed: device {} of {}, {n} layer{}{}",
            runs.join(", "),
            self.timed + 1,
            self.stages.len(),
            if n == 1 { "" } else { "s" },
            if timed.logits { " and the logits" } else { "" }
        )
    }
}

/// Checks `s` for `model` on `npu` and `fabric` (divisibility, placement,
/// memory) and times its compute, without building the iteration; the
/// same errors as [`generate`].
pub fn plan(model: &ModelSpec, npu: &Npu, s: &Strategy, fabric: &Fabric) -> Result<Planned, StrategyError> {
    let m = check(model, s, fabric)?;
    if s.precision == Precision::Fp8 && npu.device.fp8.is_none() {
        return Err(StrategyError::Precision { npu: npu.name.clone() });
    }
    let placement = || StrategyError::Placement {
        order: s.order_name(),
        shape: fabric.shape(),
    };
    let groups = s.groups(fabric).ok_or_else(placement)?;
    let expert_groups = match model.moe {
        Some(_) => Some(s.expert_groups(fabric).ok_or_else(|| StrategyError::Placement {
            order: format!("{} with ep {} inside dp", s.order_name(), s.ep),
            shape: fabric.shape(),
        })?),
        None => None,
    };
    let context_group = s.context_group(fabric).ok_or_else(|| StrategyError::Placement {
        order: format!("{} with cp {} inside dp", s.order_name(), s.cp),
        shape: fabric.shape(),
    })?;
    let times = layer_times(model, s, &npu.device);
    let capacity = npu.hbm_gib * crate::model::units::BYTES_PER_GIB;
    let worst = |cut: &StageCut| cut.stages.get(cut.fullest).map(|st| memory(model, npu, s, st));
    let out_of_memory = |memory: Option<Memory>| StrategyError::Memory {
        gib: memory.map_or(f64::INFINITY, |x| x.gib()),
        hbm_gib: npu.hbm_gib,
    };
    // No cut fits: the least any cut needs says by how much.
    let cut =
        stage_cut(model, npu, s, m, &times, capacity).map_err(|least| out_of_memory(least.as_ref().and_then(worst)))?;
    let memory = worst(&cut).ok_or_else(|| out_of_memory(None))?;
    // The cut fitted by the same memory in linear form: equal up to rounding.
    if memory.total() > capacity * (1.0 + 1e-9) {
        return Err(out_of_memory(Some(memory)));
    }
    let compute_ns = compute_ns(model, npu, s, m, cut.timed(), &times);
    Ok(Planned {
        micro_batches: m,
        memory,
        groups,
        expert_groups,
        context_group,
        cut,
        times,
        compute_ns,
    })
}

/// The layers of each pipeline device and the one timed (see
/// [`StageCut`] and the module doc), or, when no cut fits in `capacity`
/// bytes, the cut that needs the least memory. Without interleaving, the
/// cut is chosen by `stages::cut`: the slowest device's compute per
/// micro-batch slot (its layers; the embedding's gradient accumulation on
/// the first and last devices; the logits on the last) as low as it can be
/// with every device within `capacity`.
fn stage_cut(
    model: &ModelSpec,
    npu: &Npu,
    s: &Strategy,
    m: u64,
    times: &LayerTimes,
    capacity: f64,
) -> Result<StageCut, Option<StageCut>> {
    let (p, v) = (s.pp.max(1), s.virtual_stages.max(1));
    if v > 1 {
        let (dense, moe) = fullest_chunks(model, s);
        let interleave = 1.0 + (p as f64 - 1.0) / (p as f64 * v as f64);
        let cut = StageCut {
            stages: vec![Stage {
                dense,
                moe,
                logits: true,
                embedding: true,
                logits_buffer: p == 1,
                in_flight: (p as f64).min(m as f64) * interleave,
            }],
            timed: 0,
            fullest: 0,
            chunks: v,
        };
        return if memory(model, npu, s, cut.timed()).total() <= capacity {
            Ok(cut)
        } else {
            Err(Some(cut))
        };
    }
    let stage = |k: u64, dense: u64, moe: u64| Stage {
        dense,
        moe,
        logits: k == p - 1,
        embedding: k == 0 || k == p - 1,
        logits_buffer: k == p - 1,
        in_flight: ((p - k) as f64).min(m as f64),
    };
    let d = &npu.device;
    let has_moe = model.moe.is_some();
    let dense_ns = layer_ns(model, s, d, times, false);
    let moe_ns = if has_moe {
        layer_ns(model, s, d, times, true)
    } else {
        0.0
    };
    // Memory is linear in a device's layers: weights, gradients and
    // optimizer states per layer, and activations per layer per
    // micro-batch in flight; the ends (the embedding, the logits' buffer)
    // and the headroom are fixed. Measured once on bare stages.
    let bare = |dense, moe, in_flight, end: Option<u64>| {
        let st = match end {
            Some(k) => stage(k, dense, moe),
            None => Stage {
                dense,
                moe,
                logits: false,
                embedding: false,
                logits_buffer: false,
                in_flight,
            },
        };
        memory(model, npu, s, &Stage { in_flight, ..st }).total()
    };
    let headroom = bare(0, 0, 0.0, None);
    let per = |dense, moe| {
        let kept = bare(dense, moe, 0.0, None);
        (kept - headroom, bare(dense, moe, 1.0, None) - kept)
    };
    let (dense_w, dense_a) = per(1, 0);
    let (moe_w, moe_a) = if has_moe { per(0, 1) } else { (0.0, 0.0) };
    let ends = [0, p - 1].map(|k| (bare(0, 0, 0.0, Some(k)), ends_ns(model, s, d, times, &stage(k, 0, 0))));
    let mut compute = Vec::with_capacity(p as usize);
    let mut mem = Vec::with_capacity(p as usize);
    for k in 0..p {
        let (fixed_b, fixed_ns) = if k == p - 1 {
            ends[1]
        } else if k == 0 {
            ends[0]
        } else {
            // A device between the ends holds only layers.
            (headroom, 0.0)
        };
        let in_flight = stage(k, 0, 0).in_flight;
        mem.push(Linear {
            fixed: fixed_b,
            dense: dense_w + in_flight * dense_a,
            moe: moe_w + in_flight * moe_a,
        });
        compute.push(Linear {
            fixed: fixed_ns,
            dense: dense_ns,
            moe: moe_ns,
        });
    }
    let kinds: Vec<bool> = (0..model.layers).map(|l| model.is_moe(l)).collect();
    let staged = |cut: &stages::Cut, timed: usize| {
        // The device that needs the most, by the same linear memory.
        let fullest = (0..cut.layers.len())
            .max_by(|&a, &b| {
                let at = |k: usize| mem[k].at(cut.layers[k].0, cut.layers[k].1);
                at(a).total_cmp(&at(b))
            })
            .unwrap_or(0);
        StageCut {
            stages: (0..p)
                .zip(&cut.layers)
                .map(|(k, &(dense, moe))| stage(k, dense, moe))
                .collect(),
            timed,
            fullest,
            chunks: 1,
        }
    };
    match stages::cut(&CutProblem {
        moe: &kinds,
        compute: &compute,
        memory: &mem,
        capacity,
    }) {
        Some(cut) => Ok(staged(&cut, cut.slowest)),
        // None fits: the cut whose fullest device needs the least (memory
        // in place of compute, no capacity).
        None => Err(stages::cut(&CutProblem {
            moe: &kinds,
            compute: &mem,
            memory: &mem,
            capacity: f64::INFINITY,
        })
        .map(|cut| staged(&cut, cut.slowest))),
    }
}

/// Interleaved stages' timed device, (dense, MoE): each of its v chunks
/// holds `ceil(L / (p v))` layers (every chunk as many as the largest when
/// p v does not divide L: timed on the fullest), and as many of them are
/// MoE layers as on the device that holds the most (chunk `j` of the `p
/// v` holds layers `j L / (p v)` to `(j + 1) L / (p v)`; device `k` holds
/// chunks `k, k + p, ...`).
fn fullest_chunks(model: &ModelSpec, s: &Strategy) -> (u64, u64) {
    let (p, v) = (s.pp.max(1), s.virtual_stages.max(1));
    let layers = u64::from(model.layers);
    let chunks = p.saturating_mul(v).max(1);
    let n = layers.div_ceil(chunks).saturating_mul(v);
    if model.moe.is_none() {
        return (n, 0);
    }
    let mut most = 0;
    for k in 0..p.min(layers) {
        let mut count = 0;
        for j in 0..v {
            let chunk = j * p + k;
            let (lo, hi) = (chunk * layers / chunks, (chunk + 1) * layers / chunks);
            count += (lo..hi).filter(|&l| model.is_moe(l as u32)).count() as u64;
        }
        most = most.max(count);
    }
    let most = most.min(n);
    (n - most, most)
}

/// One block of a layer as the timed device runs it.
struct Block {
    name: &'static str,
    time: BlockTime,
    /// The parameters whose gradients it accumulates and buckets, per NPU.
    params: f64,
    /// Its bucket goes to the expert-data-parallel group (routed experts),
    /// else to the data-parallel group.
    expert: bool,
}

/// The two blocks of a dense (`moe` false) or MoE layer: attention (with
/// a MoE layer's router and shared experts' parameters) and the FFN or
/// the routed experts.
fn blocks(model: &ModelSpec, s: &Strategy, times: &LayerTimes, moe: bool) -> [Block; 2] {
    let t = s.tp as f64;
    match (&model.moe, times.moe) {
        (Some(x), Some(experts)) if moe => [
            Block {
                name: "attn",
                time: times.attention,
                params: moe_rank_params(model, t),
                expert: false,
            },
            Block {
                name: "experts",
                time: experts,
                params: f64::from(x.experts) / s.ep.max(1) as f64 * model.expert_params() / t,
                expert: true,
            },
        ],
        _ => [
            Block {
                name: "attn",
                time: times.attention,
                params: model.attention_params() / t,
                expert: false,
            },
            Block {
                name: "ffn",
                time: times.ffn,
                params: model.dense_ffn_params() / t,
                expert: false,
            },
        ],
    }
}

/// The parameters on one NPU of a pipeline device, after the TP split:
/// (those replicated over the data-parallel group, the routed experts
/// replicated over the expert-data-parallel group).
fn rank_params(model: &ModelSpec, s: &Strategy, stage: &Stage) -> (f64, f64) {
    let t = s.tp as f64;
    let embedding = if stage.embedding { model.embedding_params() } else { 0.0 };
    let shared = stage.dense as f64 * model.layer_params(false, false) + embedding;
    match &model.moe {
        Some(x) if stage.moe > 0 => {
            let moe = stage.moe as f64;
            let experts = moe * f64::from(x.experts) / s.ep.max(1) as f64 * model.expert_params() / t;
            (shared / t + moe * moe_rank_params(model, t), experts)
        }
        _ => (shared / t, 0.0),
    }
}

/// A MoE layer's parameters on one NPU outside its routed experts: the
/// attention and the shared experts split by TP, the router whole on
/// every TP rank (its product runs on each).
fn moe_rank_params(model: &ModelSpec, t: f64) -> f64 {
    let router = model
        .moe
        .as_ref()
        .map_or(0.0, |x| model.hidden as f64 * f64::from(x.experts));
    (model.attention_params() + model.moe_dense_params() - router) / t + router
}

/// `(dp c, dp c / ep)`: the ranks that hold the same weights (data and
/// context parallel) and the expert-data-parallel degree.
fn dp_degrees(s: &Strategy) -> (f64, f64) {
    let ranks = s.data_ranks();
    (ranks as f64, (ranks / s.ep.max(1)) as f64)
}

/// One layer's compute per micro-batch slot, ns: its two blocks (forward;
/// input gradients plus what selective recomputation runs again; weight
/// gradients plus the fp32 gradient buffer's accumulation; the forward
/// again under full recomputation).
fn layer_ns(model: &ModelSpec, s: &Strategy, d: &Device, times: &LayerTimes, is_moe: bool) -> f64 {
    let accumulate = model.bytes_weight + 2.0 * model.bytes_grad;
    let mut out = 0.0;
    for b in blocks(model, s, times, is_moe) {
        let bt = b.time;
        let selective = if s.recompute == Recompute::Selective {
            bt.selective_ns
        } else {
            0.0
        };
        let again = if s.recompute == Recompute::Full {
            bt.forward_ns
        } else {
            0.0
        };
        out += bt.forward_ns
            + bt.input_grad_ns
            + selective
            + bt.weight_grad_ns
            + d.stream_ns(b.params * accumulate)
            + again;
    }
    out
}

/// A device's compute per micro-batch slot outside its layers, ns: the
/// logits on the last device, the embedding's gradient accumulation where
/// its weights are.
fn ends_ns(model: &ModelSpec, s: &Strategy, d: &Device, times: &LayerTimes, stage: &Stage) -> f64 {
    let accumulate = model.bytes_weight + 2.0 * model.bytes_grad;
    let embedding = if stage.embedding {
        d.stream_ns(model.embedding_params() / s.tp as f64 * accumulate)
    } else {
        0.0
    };
    if stage.logits {
        times.logits.forward_ns + times.logits.input_grad_ns + times.logits.weight_grad_ns + embedding
    } else {
        embedding
    }
}

/// The compute of the iteration [`generate`] builds for `s` with `m`
/// micro-batches on the pipeline device `stage`, ns, in closed form (no
/// records): per micro-batch slot, its layers ([`layer_ns`]) and what it
/// holds of the ends (the logits, the embedding), over the m + (p - 1) / v
/// slots of the 1F1B schedule, then the optimizer step over the NPU's
/// share of the device's parameters. A lower bound on the iteration at any
/// bandwidth (communication only adds), one of the two coopt prunes
/// strategies by.
fn compute_ns(model: &ModelSpec, npu: &Npu, s: &Strategy, m: u64, stage: &Stage, times: &LayerTimes) -> f64 {
    let d = &npu.device;
    let mut body = stage.dense as f64 * layer_ns(model, s, d, times, false);
    if stage.moe > 0 {
        body += stage.moe as f64 * layer_ns(model, s, d, times, true);
    }
    let ends = ends_ns(model, s, d, times, stage);
    let slots = m as f64 + (s.pp as f64 - 1.0) / s.virtual_stages.max(1) as f64;
    (body + ends) * slots + optimizer_ns(model, npu, s, stage)
}

/// Generates the iteration of `model` on `npu` under `s` on `fabric`, or
/// says why the strategy is not valid.
pub fn generate(model: &ModelSpec, npu: &Npu, s: &Strategy, fabric: &Fabric) -> Result<Generated, StrategyError> {
    let planned = plan(model, npu, s, fabric)?;
    let [tp_g, pp_g, dp_g] = &planned.groups;
    let single = [Group(vec![None; fabric.ndims()]), dp_g.clone()];
    let [ep_g, edp_g] = planned.expert_groups.as_ref().unwrap_or(&single);
    let g = Groups {
        tp: tp_g,
        pp: pp_g,
        dp: dp_g,
        ep: ep_g,
        edp: edp_g,
        cp: &planned.context_group,
    };
    Ok(Generated {
        workload: Workload {
            layers: records(model, npu, s, &planned, &g),
        },
        memory: planned.memory,
        micro_batches: planned.micro_batches,
    })
}

/// The strategy's divisibility checks; the number of micro-batches.
fn check(model: &ModelSpec, s: &Strategy, fabric: &Fabric) -> Result<u64, StrategyError> {
    let bad_model = |reason: &str| StrategyError::Model {
        name: model.name.clone(),
        reason: reason.into(),
    };
    if !(2..=3).contains(&model.ffn_matrices) {
        return Err(bad_model("ffn_matrices must be 2 (GELU) or 3 (SwiGLU)"));
    }
    if model.micro_batch == 0 || model.global_batch == 0 {
        return Err(bad_model("micro_batch and global_batch must be >= 1"));
    }
    if model.kv_heads == 0 || !model.heads.is_multiple_of(model.kv_heads) {
        return Err(bad_model("kv_heads must divide heads"));
    }
    if s.cp == 0 {
        return Err(StrategyError::Context {
            cp: 0,
            reason: "must be >= 1".into(),
        });
    }
    let n = fabric.npus();
    let product =
        s.tp.checked_mul(s.pp)
            .and_then(|x| x.checked_mul(s.dp))
            .and_then(|x| x.checked_mul(s.cp));
    if product != Some(n) {
        return Err(StrategyError::Npus {
            product: product.unwrap_or(u64::MAX),
            npus: n,
            cp: s.cp,
        });
    }
    if s.cp > 1 {
        let context = |reason: String| StrategyError::Context { cp: s.cp, reason };
        if !s.flash_attention {
            return Err(context(
                "ring attention needs fused attention (flash_attention = true)".into(),
            ));
        }
        if !model.seq.is_multiple_of(2 * s.cp) {
            return Err(context(format!(
                "the sequence {} must split into 2 cp = {} equal chunks (causal load balancing)",
                model.seq,
                2 * s.cp
            )));
        }
    }
    if u64::from(model.heads) % s.tp != 0 {
        return Err(StrategyError::Heads {
            tp: s.tp,
            heads: model.heads,
        });
    }
    if u64::from(model.kv_heads) % s.tp != 0 {
        return Err(StrategyError::KvHeads {
            tp: s.tp,
            kv_heads: model.kv_heads,
        });
    }
    let experts = model.moe.as_ref().map_or(0, |x| x.experts);
    let ep_fits = match &model.moe {
        Some(x) => s.ep >= 1 && s.data_ranks().is_multiple_of(s.ep) && u64::from(x.experts).is_multiple_of(s.ep),
        None => s.ep == 1,
    };
    if !ep_fits {
        return Err(StrategyError::Experts {
            ep: s.ep,
            dp: s.data_ranks(),
            experts,
        });
    }
    let v = s.virtual_stages.max(1);
    if s.pp.checked_mul(v).is_none_or(|pv| pv > u64::from(model.layers)) {
        return Err(StrategyError::Layers {
            pp: s.pp,
            v,
            layers: model.layers,
        });
    }
    let per_step = s.dp.checked_mul(model.micro_batch).unwrap_or(0);
    if per_step == 0 || !model.global_batch.is_multiple_of(per_step) {
        return Err(StrategyError::Batch {
            dp: s.dp,
            micro_batch: model.micro_batch,
            global_batch: model.global_batch,
        });
    }
    let m = model.global_batch / per_step;
    if v > 1 && !m.is_multiple_of(s.pp) {
        return Err(StrategyError::Interleave { v, m, pp: s.pp });
    }
    Ok(m)
}

/// Memory per NPU on the pipeline device `stage` (see the module doc).
pub fn memory(model: &ModelSpec, npu: &Npu, s: &Strategy, stage: &Stage) -> Memory {
    let t = s.tp as f64;
    // Context parallelism keeps this rank's s / c tokens of each sequence
    // (fused attention: no term grows with s^2).
    let sq = model.seq as f64 / s.cp.max(1) as f64;
    let (b, h) = (model.micro_batch as f64, model.hidden as f64);
    let (dense, moe) = (stage.dense, stage.moe);
    let (shared, experts) = rank_params(model, s, stage);
    let (dp, edp) = dp_degrees(s);
    let sharded = |bytes: f64, on: bool| {
        if on {
            shared * bytes / dp + experts * bytes / edp
        } else {
            (shared + experts) * bytes
        }
    };
    let sp = if s.sequence_parallel { t } else { 1.0 };
    let core = if s.flash_attention || s.recompute == Recompute::Selective {
        0.0
    } else {
        5.0 * f64::from(model.heads) * sq / h
    };
    // K and V (2 s b h each in Korthikanti's count) are kv / a as wide.
    let kv_saved = 4.0 * (1.0 - f64::from(model.kv_heads) / f64::from(model.heads));
    // A MoE layer: the FFN's intermediates (16 s b h for f = 4 h) scale
    // with the width a token sees, (k load + shared) f_e instead of f; the
    // dispatched and combined token copies (2 k load s b h each) are held
    // whole on every TP rank, or with sequence parallelism a 1 / t share
    // on each (each rank dispatches its own tokens, as the records have
    // it).
    let (copies, wider) = match &model.moe {
        Some(x) => {
            let per_token = f64::from(x.top_k) * x.load();
            let width = (per_token + f64::from(x.shared_experts)) * x.expert_ffn as f64;
            (4.0 * per_token, 16.0 * (width - model.ffn as f64) / (4.0 * h))
        }
        None => (0.0, 0.0),
    };
    let per_layer_act = |is_moe: bool| {
        let (rep, split) = if is_moe { (copies, wider) } else { (0.0, 0.0) };
        match (s.recompute, s.sequence_parallel) {
            (Recompute::Full, _) => 2.0 * sq * b * h / sp,
            (_, true) => sq * b * h * (34.0 + core - kv_saved + split + rep) / t,
            (_, false) => sq * b * h * (10.0 + rep + (24.0 - kv_saved + split) / t + core / t),
        }
    };
    let mut layers_act = dense as f64 * per_layer_act(false);
    if moe > 0 {
        layers_act += moe as f64 * per_layer_act(true);
    }
    // The fp32 logits and their gradient.
    let logits = if stage.logits_buffer {
        2.0 * 4.0 * b * sq * model.vocab as f64 / t
    } else {
        0.0
    };
    Memory {
        weights: sharded(model.bytes_weight, s.zero >= 3),
        gradients: sharded(model.bytes_grad, s.zero >= 2),
        optimizer: sharded(model.bytes_optimizer, s.zero >= 1),
        activations: stage.in_flight * layers_act,
        workspace: logits,
        headroom: npu.headroom_gib * crate::model::units::BYTES_PER_GIB,
    }
}

/// The groups of a placed strategy.
struct Groups<'a> {
    tp: &'a Group,
    pp: &'a Group,
    dp: &'a Group,
    /// Expert parallel (a single NPU in a dense model).
    ep: &'a Group,
    /// Expert data parallel (the data-parallel group in a dense model).
    edp: &'a Group,
    /// Context parallel (a single NPU without CP).
    cp: &'a Group,
}

/// A collective of a record template: kind, bytes, group.
type TComm<'a> = Option<(CollectiveKind, f64, &'a Group)>;

/// One phase of a record template.
#[derive(Clone, Copy)]
struct TPhase<'a> {
    compute_ns: f64,
    comm: TComm<'a>,
    /// The compute the collective hides under (`Phase::hidden_ns`).
    hidden_ns: f64,
    /// What that compute is (`Phase::hidden_by`).
    by: Hiding,
}

impl<'a> TPhase<'a> {
    const NONE: TPhase<'static> = TPhase {
        compute_ns: 0.0,
        comm: None,
        hidden_ns: 0.0,
        by: Hiding::None,
    };

    fn new(compute_ns: f64, comm: TComm<'a>) -> TPhase<'a> {
        TPhase {
            compute_ns,
            comm,
            hidden_ns: 0.0,
            by: Hiding::None,
        }
    }

    /// The phase with its collective hidden under `hidden_ns` of compute
    /// of kind `by` (none when it moves nothing or hides under nothing).
    fn hiding(self, hidden_ns: f64, by: Hiding) -> TPhase<'a> {
        if self.comm.is_some() && hidden_ns > 0.0 {
            TPhase { hidden_ns, by, ..self }
        } else {
            self
        }
    }

    /// How the phase (the `k`-th of a record) issues its collective, as a
    /// slot that runs `frac` of it.
    fn issue(&self, k: usize, frac: f64) -> Issue {
        match k {
            2 => Issue::WeightGrad,
            _ if self.hidden_ns > 0.0 => Issue::Hidden(
                if frac < 1.0 {
                    self.hidden_ns * frac
                } else {
                    self.hidden_ns
                },
                self.by,
            ),
            _ => Issue::Blocking,
        }
    }

    /// The phase of a slot that runs `frac` of a whole one (1, or the
    /// bubble's partial slot).
    fn phase(&self, frac: f64) -> Phase {
        let scale = |x: f64| if frac < 1.0 { x * frac } else { x };
        Phase {
            compute_ns: scale(self.compute_ns),
            comm: self.comm.map(|(kind, bytes, group)| Comm {
                kind,
                bytes: scale(bytes),
                group: group.clone(),
            }),
            hidden_ns: scale(self.hidden_ns),
            hidden_by: self.by,
        }
    }
}

/// A record's name after `mb{slot}.`, kept unformatted until a record is
/// built (a census needs none).
#[derive(Clone, Copy)]
enum Tag {
    /// `l{l}.{block}`.
    Block(u64, &'static str),
    /// `l{l}.{block}.recompute`.
    Recompute(u64, &'static str),
    /// `l{l}.{what}` (`dispatch`, `combine`, `recompute.dispatch`, ...).
    Exchange(u64, &'static str),
    /// `logits`.
    Logits,
    /// `embedding`.
    Embedding,
    /// `stage-boundary{k}`.
    Boundary(u64),
    /// `stage-boundary{k}.gather`.
    Gather(u64),
    /// `zero3-gather` or `zero3-gather-experts`.
    Zero3(&'static str),
}

impl Tag {
    fn name(self, slot: u64) -> String {
        match self {
            Tag::Block(l, b) => format!("mb{slot}.l{l}.{b}"),
            Tag::Recompute(l, b) => format!("mb{slot}.l{l}.{b}.recompute"),
            Tag::Exchange(l, w) => format!("mb{slot}.l{l}.{w}"),
            Tag::Logits => format!("mb{slot}.logits"),
            Tag::Embedding => format!("mb{slot}.embedding"),
            Tag::Boundary(k) => format!("mb{slot}.stage-boundary{k}"),
            Tag::Gather(k) => format!("mb{slot}.stage-boundary{k}.gather"),
            Tag::Zero3(w) => format!("mb{slot}.{w}"),
        }
    }
}

/// A record of one micro-batch slot: its tag and its forward,
/// input-gradient and weight-gradient phases.
type Template<'a> = (Tag, [TPhase<'a>; 3]);

/// A template's collective, if it moves anything.
fn tcomm(kind: CollectiveKind, bytes: f64, group: &Group) -> TComm<'_> {
    (group.size() > 1 && bytes > 0.0).then_some((kind, bytes, group))
}

/// The records of one micro-batch slot of the timed device, in order:
/// every layer's blocks (and a MoE layer's dispatch and combine), the
/// logits or the embedding where it holds them, the stage boundaries, the ZeRO-3 gathers. `first`: the slot
/// whose backward runs last and issues the gradient buckets (slot 0);
/// `gather`: a slot with a micro-batch (not the bubble), which ZeRO-3
/// gathers parameters for.
fn slot_template<'a>(
    model: &ModelSpec,
    npu: &Npu,
    s: &Strategy,
    g: &Groups<'a>,
    planned: &Planned,
    first: bool,
    gather: bool,
) -> Vec<Template<'a>> {
    let (times, stage) = (&planned.times, planned.cut.timed());
    let d = &npu.device;
    let t = s.tp as f64;
    // One micro-batch's activation on this rank (its s / c tokens).
    let act =
        model.micro_batch as f64 * model.seq as f64 / s.cp.max(1) as f64 * model.hidden as f64 * model.bytes_weight;
    // A MoE layer's dispatch (and combine): every token's k copies, the
    // busiest rank's `load` times the mean, to the EP group; with sequence
    // parallelism each TP rank dispatches its own s / t tokens.
    let sp = if s.sequence_parallel { t } else { 1.0 };
    let dispatch = model
        .moe
        .as_ref()
        .map_or(0.0, |x| act * f64::from(x.top_k) * x.load() / sp);
    // Bytes per parameter per micro-batch of the fp32 gradient buffer: read
    // the gradient, read and write the buffer.
    let accumulate = model.bytes_weight + 2.0 * model.bytes_grad;
    let (dense, moe) = (stage.dense, stage.moe);
    let grad_kind = grad_kind(s);
    let tp_all_reduce = tcomm(CollectiveKind::AllReduce, act, g.tp);
    // Tensor-parallel collectives pipelined with the block's products.
    let tp_hides = |ns: f64| if s.tp_overlap { ns } else { 0.0 };
    // Ring attention: forward, each rank's keys and values gathered by the
    // others; backward, gathered again with their gradients reduced back
    // (an all-reduce's volume), each under the attention core.
    let kv = kv_chunk_bytes(model, s);
    let kv_gather = tcomm(CollectiveKind::AllGather, kv, g.cp);
    let kv_both = tcomm(CollectiveKind::AllReduce, kv * s.cp as f64, g.cp);
    let a2a = tcomm(CollectiveKind::AllToAll, dispatch, g.ep);
    // With `ep_overlap` the dispatch and the combine each hide under half
    // of the MoE layer's compute of the same pass (0 forward, 1 backward).
    let moe_layer = |k: usize| {
        let pass = |b: BlockTime| [b.forward_ns, b.input_grad_ns + b.weight_grad_ns][k];
        let ns = pass(times.attention) + pass(times.moe.unwrap_or_default());
        if s.ep_overlap { ns / 2.0 } else { 0.0 }
    };
    let exchange = |l: u64, what: &'static str, forward: bool| -> Template<'a> {
        (
            Tag::Exchange(l, what),
            [
                if forward {
                    TPhase::new(0.0, a2a).hiding(moe_layer(0), Hiding::Experts)
                } else {
                    TPhase::NONE
                },
                TPhase::new(0.0, a2a).hiding(moe_layer(if forward { 1 } else { 0 }), Hiding::Experts),
                TPhase::NONE,
            ],
        )
    };
    let mut out = Vec::new();
    // The slot's layers' forward and backward compute, which prefetched
    // ZeRO-3 gathers hide under.
    let mut layers_ns = [0.0, 0.0];
    // Dense layers first (a MoE model's first dense layers), then MoE.
    for l in 0..dense + moe {
        for b in blocks(model, s, times, l >= dense) {
            let bt = b.time;
            layers_ns[0] += bt.forward_ns;
            layers_ns[1] += bt.input_grad_ns + bt.weight_grad_ns;
            let selective = if s.recompute == Recompute::Selective {
                bt.selective_ns
            } else {
                0.0
            };
            // The last micro-batch's backward (slot 0 runs last in the
            // backward pass) issues the block's gradient bucket.
            let bucket = if first {
                tcomm(
                    grad_kind,
                    b.params * model.bytes_grad,
                    if b.expert { g.edp } else { g.dp },
                )
            } else {
                None
            };
            if b.expert {
                out.push(exchange(l, "dispatch", true));
            }
            out.push((
                Tag::Block(l, b.name),
                [
                    TPhase::new(bt.forward_ns, tp_all_reduce).hiding(tp_hides(bt.linear_ns[0]), Hiding::Products),
                    TPhase::new(bt.input_grad_ns + selective, tp_all_reduce)
                        .hiding(tp_hides(bt.linear_ns[1]), Hiding::Products),
                    TPhase::new(bt.weight_grad_ns + d.stream_ns(b.params * accumulate), bucket),
                ],
            ));
            let ring = s.cp > 1 && bt.core_ns[0] > 0.0;
            if ring {
                out.push((
                    Tag::Exchange(l, "kv"),
                    [
                        TPhase::new(0.0, kv_gather).hiding(bt.core_ns[0], Hiding::AttentionCore),
                        TPhase::new(0.0, kv_both).hiding(bt.core_ns[1], Hiding::AttentionCore),
                        TPhase::NONE,
                    ],
                ));
            }
            if b.expert {
                out.push(exchange(l, "combine", true));
            }
            if s.recompute == Recompute::Full {
                // The forward again, in the backward, with its all-reduce
                // (and a MoE block's dispatch and combine, an attention
                // block's key-value exchange).
                out.push((
                    Tag::Recompute(l, b.name),
                    [
                        TPhase::NONE,
                        TPhase::new(bt.forward_ns, tp_all_reduce).hiding(tp_hides(bt.linear_ns[0]), Hiding::Products),
                        TPhase::NONE,
                    ],
                ));
                if ring {
                    out.push((
                        Tag::Exchange(l, "recompute.kv"),
                        [
                            TPhase::NONE,
                            TPhase::new(0.0, kv_gather).hiding(bt.core_ns[0], Hiding::AttentionCore),
                            TPhase::NONE,
                        ],
                    ));
                }
                if b.expert {
                    out.push(exchange(l, "recompute.dispatch", false));
                    out.push(exchange(l, "recompute.combine", false));
                }
            }
        }
    }
    out.extend(ends_template(model, npu, s, g, planned, first));
    out.extend(sends_and_gathers(model, s, g, stage, act, layers_ns, gather));
    out
}

/// The logits (the last device) with the tied embedding's gradient
/// accumulation and bucket (issued by slot 0, `first`); the first device's
/// embedding alone; nothing on a device between.
fn ends_template<'a>(
    model: &ModelSpec,
    npu: &Npu,
    s: &Strategy,
    g: &Groups<'a>,
    planned: &Planned,
    first: bool,
) -> Option<Template<'a>> {
    let (times, stage) = (&planned.times, planned.cut.timed());
    let (d, t) = (&npu.device, s.tp as f64);
    let accumulate = model.bytes_weight + 2.0 * model.bytes_grad;
    if !(stage.logits || stage.embedding) {
        return None;
    }
    let logits = if stage.logits {
        times.logits
    } else {
        BlockTime::default()
    };
    let (grad_ns, bucket) = if stage.embedding {
        let embedding = model.embedding_params();
        (
            d.stream_ns(embedding / t * accumulate),
            if first {
                tcomm(grad_kind(s), embedding / t * model.bytes_grad, g.dp)
            } else {
                None
            },
        )
    } else {
        (0.0, None)
    };
    Some((
        if stage.logits { Tag::Logits } else { Tag::Embedding },
        [
            TPhase::new(logits.forward_ns, None),
            TPhase::new(logits.input_grad_ns, None),
            TPhase::new(logits.weight_grad_ns + grad_ns, bucket),
        ],
    ))
}

/// The pipeline's sends (with their scatter/gather all-gathers) and, in a
/// slot with a micro-batch (`gather`), ZeRO-3's parameter gathers, blocking
/// or prefetched under the slot's layers (`layers_ns`: forward, backward).
fn sends_and_gathers<'a>(
    model: &ModelSpec,
    s: &Strategy,
    g: &Groups<'a>,
    stage: &Stage,
    act: f64,
    layers_ns: [f64; 2],
    gather: bool,
) -> Vec<Template<'a>> {
    let t = s.tp as f64;
    let mut out = Vec::new();
    let both = |c: TComm<'a>| [TPhase::new(0.0, c), TPhase::new(0.0, c), TPhase::NONE];
    if s.pp > 1 {
        let scatter = s.scatter_gather && s.tp > 1;
        let send = if scatter { act / t } else { act };
        for k in 0..s.virtual_stages.max(1) {
            out.push((Tag::Boundary(k), both(tcomm(CollectiveKind::SendRecv, send, g.pp))));
            if scatter {
                // An all-gather's bytes are one NPU's share.
                out.push((Tag::Gather(k), both(tcomm(CollectiveKind::AllGather, send, g.tp))));
            }
        }
    }
    if s.zero >= 3 && gather {
        // Gather the stage's parameters before the forward and the
        // backward (the routed experts over their own group), or
        // prefetched under the layers, which the two gathers then share by
        // their parameters (they may share a communicator's stream).
        let (shared, experts) = rank_params(model, s, stage);
        let (dp, edp) = dp_degrees(s);
        let gathered = |c: TComm<'a>, share: f64| {
            let [f, i, w] = both(c);
            if s.prefetch {
                [
                    f.hiding(share * layers_ns[0], Hiding::Layers),
                    i.hiding(share * layers_ns[1], Hiding::Layers),
                    w,
                ]
            } else {
                [f, i, w]
            }
        };
        let all = (shared + experts).max(f64::MIN_POSITIVE);
        out.push((
            Tag::Zero3("zero3-gather"),
            gathered(
                tcomm(CollectiveKind::AllGather, shared * model.bytes_weight / dp, g.dp),
                shared / all,
            ),
        ));
        if experts > 0.0 {
            out.push((
                Tag::Zero3("zero3-gather-experts"),
                gathered(
                    tcomm(CollectiveKind::AllGather, experts * model.bytes_weight / edp, g.edp),
                    experts / all,
                ),
            ));
        }
    }
    out
}

/// The gradients' collective: reduce-scatter under ZeRO-3, else all-reduce.
fn grad_kind(s: &Strategy) -> CollectiveKind {
    if s.zero >= 3 {
        CollectiveKind::ReduceScatter
    } else {
        CollectiveKind::AllReduce
    }
}

/// The 1F1B schedule's slots in four classes, each (first slot, how many
/// slots, the share of a slot each runs): slot 0 (it issues the buckets),
/// the other micro-batches, the bubble's whole slots and its partial slot
/// ((p - 1) / v bubble slots in all).
fn slot_classes(s: &Strategy, m: u64) -> [(u64, u64, f64); 4] {
    let bubble = (s.pp as f64 - 1.0) / s.virtual_stages.max(1) as f64;
    let whole = m + bubble.floor() as u64;
    let part = bubble - bubble.floor();
    [
        (0, 1, 1.0),
        (1, m - 1, 1.0),
        (m, whole - m, 1.0),
        (whole, u64::from(part > 0.0), part),
    ]
}

/// The optimizer step's time over the NPU's share of the device's
/// parameters (Adam: `e_grad + 24 + e_weight` bytes per parameter), ns.
fn optimizer_ns(model: &ModelSpec, npu: &Npu, s: &Strategy, stage: &Stage) -> f64 {
    let (shared, experts) = rank_params(model, s, stage);
    let (dp, edp) = dp_degrees(s);
    let share = if s.zero >= 1 {
        shared / dp + experts / edp
    } else {
        shared + experts
    };
    let adam = model.bytes_grad + 24.0 + model.bytes_weight;
    // FP8: the updated weights cast once per iteration, and transposed
    // for the input gradients (read 2 bytes, write 1 and 1), kept across
    // the micro-batches (Transformer Engine's cached FP8 weights).
    let casts = if s.precision == Precision::Fp8 {
        let embedding = if stage.embedding { model.embedding_params() } else { 0.0 };
        4.0 * (shared + experts - embedding / s.tp as f64)
    } else {
        0.0
    };
    npu.device.stream_ns(share * adam + casts)
}

/// The optimizer step over the NPU's share of the device's parameters.
fn optimizer_record(model: &ModelSpec, npu: &Npu, s: &Strategy, stage: &Stage) -> Layer {
    Layer {
        name: "optimizer-step".into(),
        forward: Phase {
            compute_ns: optimizer_ns(model, npu, s, stage),
            comm: None,
            ..Default::default()
        },
        input_grad: Phase::default(),
        weight_grad: Phase::default(),
    }
}

/// The templates of slot 0, of the other micro-batches and of the
/// bubble (`slot_classes` 0, 1 and 2-3).
fn templates<'a>(model: &ModelSpec, npu: &Npu, s: &Strategy, g: &Groups<'a>, p: &Planned) -> [Vec<Template<'a>>; 3] {
    [
        slot_template(model, npu, s, g, p, true, true),
        slot_template(model, npu, s, g, p, false, true),
        slot_template(model, npu, s, g, p, false, false),
    ]
}

/// The records of the timed device's iteration: the slots of the 1F1B
/// schedule (m micro-batches and the bubble), then the optimizer step.
fn records(model: &ModelSpec, npu: &Npu, s: &Strategy, p: &Planned, g: &Groups<'_>) -> Vec<Layer> {
    let m = p.micro_batches;
    let tmpl = templates(model, npu, s, g, p);
    let mut out = Vec::new();
    for (class, (start, count, frac)) in slot_classes(s, m).into_iter().enumerate() {
        for slot in start..start + count {
            for (tag, [f, i, w]) in &tmpl[class.min(2)] {
                out.push(Layer {
                    name: tag.name(slot),
                    forward: f.phase(frac),
                    input_grad: i.phase(frac),
                    weight_grad: w.phase(frac),
                });
            }
        }
    }
    out.push(optimizer_record(model, npu, s, p.cut.timed()));
    out
}

/// The iteration [`generate`] builds, counted instead of listed: its
/// compute and each distinct collective with how many times it is issued.
#[derive(Debug, Clone, PartialEq)]
pub struct Census {
    /// Compute, ns ([`Planned::compute_ns`], what the records sum to).
    pub compute_ns: f64,
    /// Each distinct collective, how it is issued, and how many times.
    pub comms: Vec<(Comm, Issue, u64)>,
}

/// The census of `s`'s iteration (see [`Census`]): the records of
/// [`generate`], each slot class visited once and counted; the same
/// errors.
pub fn census(model: &ModelSpec, npu: &Npu, s: &Strategy, fabric: &Fabric) -> Result<Census, StrategyError> {
    let planned = plan(model, npu, s, fabric)?;
    Ok(census_of(model, npu, s, fabric, &planned))
}

/// The census of a planned strategy.
pub fn census_of(model: &ModelSpec, npu: &Npu, s: &Strategy, fabric: &Fabric, planned: &Planned) -> Census {
    let [tp_g, pp_g, dp_g] = &planned.groups;
    let single = Group(vec![None; fabric.ndims()]);
    let (ep_g, edp_g) = match &planned.expert_groups {
        Some([ep, edp]) => (ep, edp),
        None => (&single, dp_g),
    };
    let g = Groups {
        tp: tp_g,
        pp: pp_g,
        dp: dp_g,
        ep: ep_g,
        edp: edp_g,
        cp: &planned.context_group,
    };
    let tmpl = templates(model, npu, s, &g, planned);
    // Distinct by kind, bytes, group and how it is issued; a handful per
    // strategy.
    let mut comms: Vec<(Comm, Issue, u64)> = Vec::new();
    for (class, (_, count, frac)) in slot_classes(s, planned.micro_batches).into_iter().enumerate() {
        if count == 0 {
            continue;
        }
        for (_, phases) in &tmpl[class.min(2)] {
            for (k, p) in phases.iter().enumerate() {
                let Some((kind, bytes, group)) = p.comm else {
                    continue;
                };
                let scale = |x: f64| if frac < 1.0 { x * frac } else { x };
                let bytes = scale(bytes);
                let wg = p.issue(k, frac);
                match comms.iter_mut().find(|(c, w, _)| {
                    *w == wg && c.kind == kind && c.bytes.to_bits() == bytes.to_bits() && c.group == *group
                }) {
                    Some((_, _, n)) => *n += count,
                    None => comms.push((
                        Comm {
                            kind,
                            bytes,
                            group: group.clone(),
                        },
                        wg,
                        count,
                    )),
                }
            }
        }
    }
    Census {
        compute_ns: planned.compute_ns,
        comms,
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::libra_4d;

    /// A small model worked by hand: L 4, h 1024, a 16, f 4096, s 512, V 1000,
    /// batch 8, b 1, 2-byte weights and gradients, 12-byte optimizer states.
    fn small() -> ModelSpec {
        ModelSpec {
            name: "small".into(),
            layers: 4,
            hidden: 1024,
            heads: 16,
            kv_heads: 16,
            ffn: 4096,
            ffn_matrices: 2,
            seq: 512,
            vocab: 1000,
            global_batch: 8,
            micro_batch: 1,
            bytes_weight: 2.0,
            bytes_grad: 2.0,
            bytes_optimizer: 12.0,
            moe: None,
            head_dim: None,
            mla: None,
            tied_embeddings: true,
            mtp_layers: 0,
        }
    }

    #[test]
    fn sizes_by_hand() {
        let m = small();
        // 4 h^2 + 2 h f = 4 * 1048576 + 2 * 1024 * 4096 = 4194304 + 8388608 = 12582912.
        assert_eq!(m.layer_params(false, false), 12_582_912.0);
        // 4 layers + V h = 50331648 + 1024000 = 51355648.
        assert_eq!(m.params(), 51_355_648.0);
        // 2 b s P + 4 b s^2 h = 2 * 512 * 12582912 + 4 * 262144 * 1024
        //                     = 12884901888 + 1073741824 = 13958643712.
        assert_eq!(m.layer_forward_flops(false), 13_958_643_712.0);
        // GPT-3's preset has about 175e9 parameters: 96 * 12 h^2 + V h.
        let g = ModelSpec::preset("gpt3-175b").unwrap();
        assert!((g.params() / 1e9 - 174.6).abs() < 0.1, "{}", g.params());
    }

    /// Memory on the first pipeline device of the cut `plan` would make.
    fn first_memory(m: &ModelSpec, s: &Strategy, micro_batches: u64) -> Memory {
        let npu = flat_npu();
        let times = layer_times(m, s, &npu.device);
        let cut = stage_cut(m, &npu, s, micro_batches, &times, f64::INFINITY).unwrap();
        memory(m, &npu, s, &cut.stages[0])
    }

    fn flat_npu() -> Npu {
        // 100 TFLOP/s at 0.5: 5e4 FLOP per ns.
        Npu::flat(100.0, 0.5, 80.0)
    }

    fn strategy(tp: u64, pp: u64, dp: u64) -> Strategy {
        Strategy {
            zero: 1,
            sequence_parallel: false,
            recompute: Recompute::None,
            flash_attention: false,
            ..Strategy::new(tp, pp, dp)
        }
    }

    #[test]
    fn volumes_by_hand() {
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let npu = flat_npu();
        // 4096 NPUs on LIBRA's 4D shape: tp 16, pp 2, dp 128, ZeRO-1.
        let s = strategy(16, 2, 128);
        let f = libra_4d();
        let g = generate(&m, &npu, &s, &f).unwrap();
        // TP 16 fills chiplet (4) and 4 of package (8); PP 2 the rest of
        // package; DP 128 = node (4) x pod (32).
        let [tp, pp, dp] = s.groups(&f).unwrap();
        assert_eq!(tp.to_libra(), vec![4, 4, -1, -1]);
        assert_eq!(pp.to_libra(), vec![-1, 2, -1, -1]);
        assert_eq!(dp.to_libra(), vec![-1, -1, 4, 32]);
        // m = 256 / (128 * 1) = 2 micro-batches.
        assert_eq!(g.micro_batches, 2);
        let first = &g.workload.layers[0];
        // b s h e = 512 * 1024 * 2 = 1048576 bytes per TP all-reduce.
        assert_eq!(first.forward.comm.as_ref().unwrap().bytes, 1_048_576.0);
        // The attention block's forward over t = 16 at 5e4 FLOP/ns:
        // QKV 2*512*192*1024 = 201326592, projection 2*512*1024*64 =
        // 67108864, scores and context 2*512*512*64 = 33554432 each (one
        // head per rank): 335544320 FLOP = 6710.8864 ns.
        assert!((first.forward.compute_ns - 335_544_320.0 / 5e4).abs() < 1e-6);
        // Input and weight gradients: the same FLOPs again each (the
        // attention products' two backward products both count as input
        // gradients: 2 * 33554432 * 2 in input_grad, none in weight_grad).
        assert!((first.input_grad.compute_ns - (268_435_456.0 + 4.0 * 33_554_432.0) / 5e4).abs() < 1e-6);
        assert!((first.weight_grad.compute_ns - 268_435_456.0 / 5e4).abs() < 1e-6);
        // DP buckets of the first stage's gradients sum to
        // (2 layers * 12582912 + 1024000) / 16 * 2 bytes = 3273728 bytes;
        // the attention block's is 4 h^2 / t * 2 = 524288.
        let buckets: Vec<f64> = g
            .workload
            .layers
            .iter()
            .filter_map(|l| l.weight_grad.comm.as_ref().map(|c| c.bytes))
            .collect();
        assert_eq!(buckets[0], 524_288.0);
        assert_eq!(
            buckets.iter().sum::<f64>(),
            (2.0 * 12_582_912.0 + 1_024_000.0) / 16.0 * 2.0
        );
        // 1F1B: m + p - 1 = 3 slots of 2 layers x 2 blocks, the logits, a
        // boundary send of b s h e / t = 65536 bytes and its all-gather;
        // then the optimizer step.
        assert_eq!(g.workload.layers.len(), 3 * 7 + 1);
        let send = g
            .workload
            .layers
            .iter()
            .find(|l| l.name == "mb0.stage-boundary0")
            .unwrap();
        assert_eq!(send.forward.comm.as_ref().unwrap().bytes, 65_536.0);
        // The all-gather's bytes are each rank's share, the same 65536
        // (16 ranks x 65536 = the whole activation, 1048576 bytes).
        let gather = g
            .workload
            .layers
            .iter()
            .find(|l| l.name == "mb0.stage-boundary0.gather")
            .unwrap();
        let c = gather.forward.comm.as_ref().unwrap();
        assert_eq!((c.kind, c.bytes), (CollectiveKind::AllGather, 65_536.0));
        assert_eq!(c.bytes * 16.0, 1_048_576.0);
    }

    /// `small` with grouped-query attention (4 key-value heads of 16) and
    /// a MoE layer after a dense one: 4 experts of FFN 1024, top-2,
    /// dropless with the busiest expert at 1.5 x the mean.
    fn small_moe() -> ModelSpec {
        ModelSpec {
            layers: 2,
            moe: Some(Moe {
                experts: 4,
                top_k: 2,
                expert_ffn: 1024,
                shared_experts: 0,
                moe_every: 1,
                first_dense: 1,
                capacity_factor: None,
                imbalance: 1.5,
            }),
            ..small()
        }
    }

    #[test]
    fn grouped_query_attention_by_hand() {
        let m = ModelSpec { kv_heads: 4, ..small() };
        // Q and O h^2 each, K and V h^2 * 4 / 16 each:
        // 2 * 1048576 * (1 + 0.25) = 2621440; with the FFN's 8388608: 11010048.
        assert_eq!(m.attention_params(), 2_621_440.0);
        assert_eq!(m.layer_params(false, false), 11_010_048.0);
        // The QKV product is (1 + 2 * 4 / 16) h = 1.5 h wide, not 3 h:
        // 2 * 512 * 1536 * 1024 + the projection's 2 * 512 * 1024 * 1024 =
        // 1610612736 + 1073741824 = 2684354560 FLOP, and the attention core
        // 2 * (2 * 512 * 512 * 64) * 16 = 1073741824 (one TP rank, no
        // flash): 3758096384 FLOP at 5e4 per ns.
        let s = strategy(1, 1, 16);
        let t = layer_times(&m, &s, &flat_npu().device);
        assert!((t.attention.forward_ns - 3_758_096_384.0 / 5e4).abs() < 1e-6);
        // K and V are a quarter as wide: Korthikanti's 34 s b h less
        // 4 * (1 - 1/4) = 3, with s b h = 512 * 1024 = 524288 (no TP, one
        // micro-batch in flight, scores kept: 5 a s / h = 40 more).
        let mem = first_memory(&m, &s, 1);
        assert_eq!(mem.activations, 4.0 * 524_288.0 * (34.0 - 3.0 + 40.0));
        // TP must divide the key-value heads too.
        let e = check(&m, &strategy(8, 1, 2), &libra_small(16)).unwrap_err();
        assert_eq!(e.to_string(), "tp 8 does not divide the 4 key-value heads");
    }

    /// Four NPUs as 2 x 2, or 16 as 4 x 4.
    fn libra_small(n: u32) -> Fabric {
        use crate::model::fabric::{Block, tests::dim};
        let side = if n == 16 { 4 } else { 2 };
        Fabric {
            dims: vec![dim("a", Block::Ring, side, 100.0), dim("b", Block::Switch, side, 500.0)],
        }
    }

    #[test]
    fn moe_layer_by_hand() {
        let m = small_moe();
        // Dense layer 12582912; MoE layer: attention 4 h^2 = 4194304, the
        // router h E = 4096 and 4 experts of 2 h f_e = 2097152 each:
        // 4194304 + 4096 + 8388608 = 12587008; + V h = 1024000.
        assert_eq!(m.params(), 12_582_912.0 + 12_587_008.0 + 1_024_000.0);
        // A token goes through 2 experts: 4194304 + 4096 + 4194304 = 8392704.
        assert_eq!(m.active_params(), 12_582_912.0 + 8_392_704.0 + 1_024_000.0);
        // 4 NPUs, DP 4 with EP 2: the experts split over 2 ranks, each
        // replicated over 2; m = 8 / 4 = 2 micro-batches.
        let s = Strategy {
            ep: 2,
            ..strategy(1, 1, 4)
        };
        let f = libra_small(4);
        let g = generate(&m, &flat_npu(), &s, &f).unwrap();
        let [ep, edp] = s.expert_groups(&f).unwrap();
        assert_eq!((ep.to_libra(), edp.to_libra()), (vec![2, -1], vec![-1, 2]));
        // Dispatch = tokens x top_k x hidden x bytes x load
        //          = 512 x 2 x 1024 x 2 x 1.5 = 3145728 bytes per rank.
        let a2a: Vec<&Comm> = g
            .workload
            .layers
            .iter()
            .flat_map(|l| [&l.forward.comm, &l.input_grad.comm, &l.weight_grad.comm])
            .flatten()
            .filter(|c| c.kind == CollectiveKind::AllToAll)
            .collect();
        // Dispatch and combine, forward and backward, 2 micro-batches x 1
        // MoE layer: 8, all on the EP group.
        assert_eq!(a2a.len(), 8);
        assert!(a2a.iter().all(|c| c.bytes == 3_145_728.0 && c.group == ep));
        // Gradient buckets: the experts' 2 x 2097152 parameters x 2 bytes =
        // 8388608 over the expert-data-parallel group; the MoE layer's
        // attention and router (4194304 + 4096) x 2 = 8396800 over DP.
        let buckets: Vec<(f64, Vec<i64>)> = g
            .workload
            .layers
            .iter()
            .filter_map(|l| l.weight_grad.comm.as_ref().map(|c| (c.bytes, c.group.to_libra())))
            .collect();
        assert!(buckets.contains(&(8_388_608.0, vec![-1, 2])));
        assert!(buckets.contains(&(8_396_800.0, vec![2, 2])));
        // The routed experts' forward: 1536 token copies (512 x 2 x 1.5)
        // through 2 products of 1024 x 1024 (2 * 1536 * 1024 * 1024 =
        // 3221225472 FLOP each), and the router's 2 * 512 * 4 * 1024 =
        // 4194304: 6446645248 FLOP at 5e4 per ns.
        let experts = g.workload.layers.iter().find(|l| l.name == "mb0.l1.experts").unwrap();
        assert!((experts.forward.compute_ns - 6_446_645_248.0 / 5e4).abs() < 1e-6);
        // Memory (ZeRO-1): the replicated 12582912 + 4194304 + 4096 +
        // 1024000 = 17805312 parameters and the 4194304 of this rank's two
        // experts; the optimizer's 12 bytes split over DP 4 and EDP 2.
        let mem = g.memory;
        assert_eq!(mem.weights, (17_805_312.0 + 4_194_304.0) * 2.0);
        assert_eq!(mem.optimizer, 17_805_312.0 * 12.0 / 4.0 + 4_194_304.0 * 12.0 / 2.0);
        // Activations, s b h = 524288 (no TP, no flash: the scores' 5 a s /
        // h = 40 in both): the dense layer 34 + 40; the MoE layer adds the
        // token copies 4 k load = 12 and scales the FFN's 16 by the width a
        // token sees, 2 x 1.5 x 1024 against f = 4096: 16 (3072 - 4096) /
        // 4096 = -4. One micro-batch in flight.
        assert_eq!(
            mem.activations,
            524_288.0 * ((34.0 + 40.0) + (34.0 + 40.0 + 12.0 - 4.0))
        );
        // Closed-form compute is what the records sum to.
        let planned = plan(&m, &flat_npu(), &s, &f).unwrap();
        let summed = g.workload.compute_ns();
        assert!((planned.compute_ns - summed).abs() <= 1e-12 * summed);
        // EP must divide DP and the experts; a dense model has none.
        for (ep, model) in [(3, m.clone()), (8, m.clone()), (2, small())] {
            let e = check(&model, &Strategy { ep, ..s.clone() }, &f).unwrap_err();
            assert!(matches!(e, StrategyError::Experts { .. }), "{e}");
        }
    }

    #[test]
    fn published_sizes_of_the_moe_presets() {
        // Mixtral 8x7B: 46.7B parameters, 12.9B active (Jiang et al.); the
        // preset ties the embedding (0.13B less).
        let x = ModelSpec::preset("mixtral-8x7b").unwrap();
        assert!((x.params() / 1e9 - 46.7).abs() < 0.2, "{}", x.params());
        assert!((x.active_params() / 1e9 - 12.9).abs() < 0.3, "{}", x.active_params());
        // DeepSeek-V3: 671B, 37B active (multi-head attention's 18M more
        // per layer than MLA, the embedding tied).
        let d = ModelSpec::preset("deepseek-v3-like").unwrap();
        assert!((d.params() / 1e9 / 671.0 - 1.0).abs() < 0.01, "{}", d.params());
        assert!(
            (d.active_params() / 1e9 / 37.0 - 1.0).abs() < 0.03,
            "{}",
            d.active_params()
        );
        assert_eq!(d.layer_counts(), (3, 58));
        // Llama 2 70B with its 8 key-value heads: 69B (Touvron et al.:
        // "70B"; 68.98B with an untied 0.26B embedding).
        let l = ModelSpec::preset("llama2-70b").unwrap();
        assert!((l.params() / 1e9 - 68.7).abs() < 0.1, "{}", l.params());
    }

    #[test]
    fn impossible_models_and_overflowing_degrees_are_refused() {
        let npu = flat_npu();
        let f = libra_4d();
        let s = strategy(16, 2, 128);
        for m in [
            ModelSpec {
                ffn_matrices: 4,
                ..small()
            },
            ModelSpec {
                micro_batch: 0,
                ..small()
            },
            ModelSpec {
                global_batch: 0,
                ..small()
            },
        ] {
            assert!(matches!(generate(&m, &npu, &s, &f), Err(StrategyError::Model { .. })));
        }
        // Degrees whose product overflows u64 are not the fabric's NPUs.
        let huge = strategy(1 << 32, 1 << 32, 16);
        assert!(matches!(
            generate(&small(), &npu, &huge, &f),
            Err(StrategyError::Npus { .. })
        ));
    }

    #[test]
    fn paper_flop_formula() {
        // The 1.7B row of Narayanan et al. (SC'21), Table 1: h 2304, l 24,
        // s 2048, V 51200, batch 512. Eq. 3 with full recomputation:
        // 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).
        let m = ModelSpec {
            name: "1.7b".into(),
            layers: 24,
            hidden: 2304,
            heads: 24,
            kv_heads: 24,
            ffn: 4 * 2304,
            ffn_matrices: 2,
            seq: 2048,
            vocab: 51200,
            global_batch: 512,
            micro_batch: 16,
            bytes_weight: 2.0,
            bytes_grad: 4.0,
            bytes_optimizer: 12.0,
            moe: None,
            head_dim: None,
            mla: None,
            tied_embeddings: true,
            mtp_layers: 0,
        };
        let (b, s, l, h, v) = (512.0, 2048.0, 24.0, 2304.0, 51200.0);
        let paper = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
        assert!((m.iteration_flops(Recompute::Full) / paper - 1.0).abs() < 1e-12);
        // Without recomputation the layers run three times: 72 in place of 96.
        let no = 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h)) + 6.0 * b * s * h * v;
        assert!((m.iteration_flops(Recompute::None) / no - 1.0).abs() < 1e-12);
        // Selective recomputation adds the attention core's 4 B s^2 h per
        // layer: 4 * 512 * 2048^2 * 2304 * 24 over the B sequences.
        let selective = no + 4.0 * b * s * s * h * l;
        assert!((m.iteration_flops(Recompute::Selective) / selective - 1.0).abs() < 1e-12);
    }

    #[test]
    fn full_recomputation_issues_six_all_reduces_per_layer() {
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let s = Strategy {
            recompute: Recompute::Full,
            ..strategy(16, 1, 256)
        };
        let g = generate(&m, &flat_npu(), &s, &libra_4d()).unwrap();
        let layer0: Vec<&Layer> = g
            .workload
            .layers
            .iter()
            .filter(|l| l.name.starts_with("mb0.l0."))
            .collect();
        let all_reduces = layer0
            .iter()
            .flat_map(|l| [&l.forward, &l.input_grad, &l.weight_grad])
            .filter(|p| {
                p.comm
                    .as_ref()
                    .is_some_and(|c| c.kind == CollectiveKind::AllReduce && c.group.size() == 16)
            })
            .count();
        assert_eq!(all_reduces, 6);
        // And the recomputed forward costs what the forward does.
        let attn = layer0[0];
        let again = layer0.iter().find(|l| l.name == "mb0.l0.attn.recompute").unwrap();
        assert_eq!(again.input_grad.compute_ns, attn.forward.compute_ns);
    }

    #[test]
    fn interleaved_bubble_by_hand() {
        // L 4 on p 2 with v 2 virtual stages: one layer per chunk; m = 2
        // micro-batches (a multiple of p). The bubble is (p - 1) / v = 0.5
        // slot, so the stage computes 2.5 slots' worth plus the optimizer
        // step (free under the flat model); without interleaving, 3 slots.
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let f = libra_4d();
        let plain = generate(&m, &flat_npu(), &strategy(16, 2, 128), &f).unwrap();
        let inter = Strategy {
            virtual_stages: 2,
            ..strategy(16, 2, 128)
        };
        let g = generate(&m, &flat_npu(), &inter, &f).unwrap();
        let slot = plain.workload.compute_ns() / 3.0;
        assert!((g.workload.compute_ns() / slot - 2.5).abs() < 1e-9);
        // Each micro-batch crosses the device twice each way: two sends per slot.
        let sends = |w: &Workload| {
            w.layers
                .iter()
                .filter(|l| l.name.starts_with("mb0.stage-boundary") && !l.name.ends_with("gather"))
                .count()
        };
        assert_eq!((sends(&plain.workload), sends(&g.workload)), (1, 2));
        // 4 layers on p 2 cannot be cut into 4 virtual stages each.
        let odd = Strategy {
            virtual_stages: 4,
            ..strategy(16, 2, 128)
        };
        assert!(
            generate(&m, &flat_npu(), &odd, &f)
                .unwrap_err()
                .to_string()
                .contains("virtual_stages")
        );
    }

    #[test]
    fn gradient_buckets_wait_for_their_last_backward() {
        // In the backward pass records run in reverse order, so a block's
        // bucket (issued by its weight gradient in micro-batch 0) must sit
        // before every other micro-batch's record of the same block.
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let g = generate(&m, &flat_npu(), &strategy(16, 2, 128), &libra_4d()).unwrap();
        let layers = &g.workload.layers;
        let mut checked = 0;
        for (i, l) in layers.iter().enumerate() {
            if l.weight_grad.comm.is_none() {
                continue;
            }
            let block = l.name.strip_prefix("mb0.").unwrap();
            for (j, other) in layers.iter().enumerate() {
                if other.name != l.name && other.name.ends_with(block) && other.name.starts_with("mb") {
                    assert!(j > i, "{} is issued before {}'s backward", l.name, other.name);
                }
            }
            checked += 1;
        }
        // 2 layers x 2 blocks + the embedding.
        assert_eq!(checked, 5);
    }

    #[test]
    fn overlapped_gradients_wait_for_the_backward() {
        // One micro-batch on p = 1 with the overlap loop: the first layer's
        // attention bucket is issued by the backward's very last weight
        // gradient, so at least its all-reduce is exposed after all compute
        // (before, a single gradient all-reduce issued first in the backward
        // hid entirely).
        use crate::model::collective::{self, CollectiveModel, TimeModel};
        use crate::model::training::{IterationModel, Loop};
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let f = libra_4d();
        let g = generate(&m, &flat_npu(), &strategy(16, 1, 256), &f).unwrap();
        assert_eq!(g.micro_batches, 1);
        let cm = CollectiveModel::defaults(&f, TimeModel::Pipelined);
        let it = IterationModel::new(&g.workload, &f, &cm, Loop::Overlap);
        let bw = [100.0, 100.0, 50.0, 25.0];
        let last = g.workload.layers[0].weight_grad.comm.as_ref().unwrap();
        let exposed = collective::coefficients(last, &f, &cm).time_ns(&bw);
        assert!(exposed > 0.0);
        assert!(it.iteration_ns(&bw) >= it.compute_ns + exposed * (1.0 - 1e-12));
    }

    #[test]
    fn uneven_stages_by_hand() {
        // small() with 6 layers on p = 4 (t 16, d 64, m = 256 / 64 = 4).
        // Per layer per micro-batch on a TP rank: forward 2 M (12 h^2) +
        // 4 b s^2 h = 12,884,901,888 + 1,073,741,824 = 13,958,643,712
        // FLOP over t = 872,415,232; three times with the backward (no
        // recomputation, unfused attention): 2,617,245,696 FLOP, at 5e4
        // FLOP/ns 52,344.91392 ns. The logits: 3 x 2 M h V / t = 3 x
        // 65,536,000 FLOP = 3,932.16 ns, less than a layer. Some device
        // holds 2 of the 6 layers, so the best slowest is 2 layers; the
        // last holds 1 with the logits (56,277.07 ns), the first gives its
        // second layer back: 1, 2, 2, 1, timed on the third device with no
        // logits, over m + p - 1 = 7 slots (the optimizer is free here).
        // The old even cut timed ceil(6 / 4) = 2 layers and the logits.
        let m = ModelSpec {
            layers: 6,
            global_batch: 256,
            ..small()
        };
        let s = strategy(16, 4, 64);
        let p = plan(&m, &flat_npu(), &s, &libra_4d()).unwrap();
        let layers: Vec<u64> = p.cut.stages.iter().map(Stage::layers).collect();
        assert_eq!((layers, p.cut.timed), (vec![1, 2, 2, 1], 2));
        assert_eq!(
            p.cut.describe(),
            "layers per device, first to last: 1, 2 (x2), 1; timed: device 3 of 4, 2 layers"
        );
        let layer = 2_617_245_696.0 / 5e4;
        assert!((p.compute_ns / (2.0 * layer * 7.0) - 1.0).abs() < 1e-12);
        let g = generate(&m, &flat_npu(), &s, &libra_4d()).unwrap();
        assert!((g.workload.compute_ns() / p.compute_ns - 1.0).abs() < 1e-12);
        let names: Vec<&str> = g.workload.layers.iter().map(|l| l.name.as_str()).collect();
        assert!(!names.iter().any(|n| n.ends_with("logits") || n.ends_with("embedding")));
        assert!(names.contains(&"mb0.l1.ffn") && !names.contains(&"mb0.l2.attn"));
        // Memory is the device that needs the most: the second (2 layers, 3
        // micro-batches in flight) over the first (1 layer and the
        // embedding, 4 in flight).
        let worst = p
            .cut
            .stages
            .iter()
            .map(|st| memory(&m, &flat_npu(), &s, st).total())
            .fold(0.0, f64::max);
        assert_eq!(p.memory.total(), worst);
        assert_eq!(p.memory.total(), memory(&m, &flat_npu(), &s, &p.cut.stages[1]).total());
    }

    #[test]
    fn activation_memory_is_korthikanti() {
        // Korthikanti et al. (2022), eq. 2 (TP, no SP): s b h (10 + 24/t +
        // 5 a s / (h t)) bytes per layer; small(): s 512, b 1, h 1024, a 16,
        // t 16: 524288 * (10 + 1.5 + 5 * 16 * 512 / 16384) = 524288 * 14
        // = 7340032. On the first of p = 2 stages: 2 layers x min(p, m) = 2
        // micro-batches in flight.
        let m = small();
        let s = strategy(16, 2, 128);
        let mem = first_memory(&m, &s, 2);
        assert_eq!(mem.activations, 2.0 * 2.0 * 7_340_032.0);
        // Selective recomputation drops the 5 a s / h term: 524288 * 11.5.
        let sel = Strategy {
            recompute: Recompute::Selective,
            ..s.clone()
        };
        assert_eq!(first_memory(&m, &sel, 2).activations, 4.0 * 524_288.0 * 11.5);
        // Full: 2 s b h per layer.
        let full = Strategy {
            recompute: Recompute::Full,
            ..s.clone()
        };
        assert_eq!(first_memory(&m, &full, 2).activations, 4.0 * 2.0 * 524_288.0);
        // Interleaving keeps 1 + (p - 1) / (p v) = 1.25 times as much (v 2).
        let inter = Strategy { virtual_stages: 2, ..s };
        assert_eq!(first_memory(&m, &inter, 2).activations, 1.25 * 4.0 * 7_340_032.0);
    }

    #[test]
    fn invalid_strategies_say_why() {
        let m = small();
        let npu = flat_npu();
        let f = libra_4d();
        let st = |tp, pp, dp| Strategy {
            zero: 0,
            ..strategy(tp, pp, dp)
        };
        assert!(
            generate(&m, &npu, &st(32, 1, 128), &f)
                .unwrap_err()
                .to_string()
                .contains("heads")
        );
        assert!(
            generate(&m, &npu, &st(16, 8, 32), &f)
                .unwrap_err()
                .to_string()
                .contains("layers")
        );
        assert!(
            generate(&m, &npu, &st(1, 1, 4096), &f)
                .unwrap_err()
                .to_string()
                .contains("global batch")
        );
        // A tiny HBM: rejected with the memory it needs.
        let tiny = Npu { hbm_gib: 0.01, ..npu };
        assert!(generate(&m, &tiny, &st(16, 2, 128), &f).is_err());
    }
}

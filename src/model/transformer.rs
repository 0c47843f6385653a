//! Transformer workloads from a model and a parallelization: the layers,
//! phases and collectives LIBRA takes as input, generated instead of written.
//!
//! Sizes (per transformer layer, hidden h, FFN f, heads a, sequence s,
//! micro-batch b, vocabulary V, bytes per element e):
//! - parameters `4 h^2 + k h f` (attention Q, K, V, O; k = 2 FFN matrices,
//!   3 for a SwiGLU FFN), embedding `V h` on the first stage;
//! - forward FLOPs `2 b s (4 h^2 + k h f) + 4 b s^2 h` (matrix products and
//!   attention scores); input-grad and weight-grad each about the forward's;
//!   with activation recomputation the backward runs the forward once more
//!   (Narayanan et al., "Efficient large-scale language model training on GPU
//!   clusters using Megatron-LM", SC'21);
//! - tensor parallelism over t: per layer per micro-batch two all-reduces of
//!   `b s h e` in the forward and two in the backward (SC'21); sequence
//!   parallelism turns each into an all-gather plus a reduce-scatter of the
//!   same bytes, so the volume is the same and only activations shrink;
//! - pipeline parallelism over p (1F1B): a send-recv of `b s h e` per stage
//!   boundary per micro-batch each way, and `m + p - 1` micro-batch slots per
//!   iteration for m micro-batches, i.e. a bubble of `(p-1)/m`;
//! - data parallelism over d: one all-reduce of the stage's gradients,
//!   `P e / (t p)` per NPU, per iteration (ZeRO-1 and -2: a reduce-scatter
//!   plus an all-gather, the same bytes); ZeRO-3 gathers the parameters
//!   before the forward and the backward of every micro-batch and
//!   reduce-scatters the gradients (Rajbhandari et al., "ZeRO", SC'20);
//! - memory per NPU on the first stage: weights, gradients and optimizer
//!   states of its parameters (divided by d from ZeRO-3, -2, -1 on), plus the
//!   activations of the `min(p, m)` micro-batches 1F1B keeps in flight:
//!   `s b h (10 + 24/t + 5 a s / (h t))` bytes per layer with tensor
//!   parallelism, `s b h (34 + 5 a s / h) / t` with sequence parallelism, `2 s b h`
//!   (the layer input, divided by t with sequence parallelism) with full
//!   recomputation (Korthikanti et al., "Reducing activation recomputation in
//!   large transformer models", 2022).
//!
//! A strategy is placed on the fabric in rank order: the groups of the three
//! parallelisms, in the order given (innermost first), each take the next
//! consecutive NPUs (`workload::place`), so a group may span several dimensions
//! or part of one.

use crate::model::fabric::Fabric;
use crate::model::workload::place;
use crate::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, Workload};
use serde::{Deserialize, Serialize};

/// A transformer model and its training batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Name.
    pub name: String,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size h.
    pub hidden: u64,
    /// Attention heads a.
    pub heads: u32,
    /// FFN size f.
    pub ffn: u64,
    /// FFN matrices: 2 (GELU MLP) or 3 (SwiGLU).
    pub ffn_matrices: u32,
    /// Sequence length s.
    pub seq: u64,
    /// Vocabulary V.
    pub vocab: u64,
    /// Global batch (sequences per iteration).
    pub global_batch: u64,
    /// Micro-batch b.
    pub micro_batch: u64,
    /// Bytes per weight and activation element.
    pub bytes_weight: f64,
    /// Bytes per gradient element.
    pub bytes_grad: f64,
    /// Bytes of optimizer state per parameter (Adam, fp32 master, m, v: 12).
    pub bytes_optimizer: f64,
}

impl ModelSpec {
    /// Preset names.
    pub(crate) const PRESETS: [&'static str; 4] = ["gpt3-175b", "llama2-70b", "llama3-405b", "gpt-1t"];

    /// A preset with its published shape.
    /// - GPT-3 175B: 96 layers, h 12288, 96 heads, s 2048 (Brown et al., 2020);
    ///   global batch 1536 as in Narayanan et al., SC'21.
    /// - Llama-2 70B: 80 layers, h 8192, 64 heads, SwiGLU FFN 28672, s 4096,
    ///   vocabulary 32000, 4M-token batches (Touvron et al., 2023).
    /// - Llama-3 405B: 126 layers, h 16384, 128 heads, FFN 53248, s 8192,
    ///   vocabulary 128256, 16M-token batches (Llama 3 herd of models, 2024).
    /// - 1T: 128 layers, h 25600, 160 heads, s 2048, batch 3072 (the
    ///   1-trillion-parameter row of Narayanan et al., SC'21, Table 1).
    pub(crate) fn preset(name: &str) -> Option<ModelSpec> {
        let m = |name: &str, layers, hidden, heads, ffn, k, seq, vocab, batch| ModelSpec {
            name: name.into(),
            layers,
            hidden,
            heads,
            ffn,
            ffn_matrices: k,
            seq,
            vocab,
            global_batch: batch,
            micro_batch: 1,
            bytes_weight: 2.0,
            bytes_grad: 2.0,
            bytes_optimizer: 12.0,
        };
        Some(match name {
            "gpt3-175b" => m("gpt3-175b", 96, 12288, 96, 4 * 12288, 2, 2048, 50257, 1536),
            "llama2-70b" => m("llama2-70b", 80, 8192, 64, 28672, 3, 4096, 32000, 1024),
            "llama3-405b" => m("llama3-405b", 126, 16384, 128, 53248, 3, 8192, 128256, 2048),
            "gpt-1t" => m("gpt-1t", 128, 25600, 160, 4 * 25600, 2, 2048, 51200, 3072),
            _ => return None,
        })
    }

    /// Parameters of one layer.
    fn layer_params(&self) -> f64 {
        let h = self.hidden as f64;
        4.0 * h * h + f64::from(self.ffn_matrices) * h * self.ffn as f64
    }

    /// All parameters.
    pub fn params(&self) -> f64 {
        f64::from(self.layers) * self.layer_params() + (self.vocab * self.hidden) as f64
    }

    /// Forward FLOPs of one layer for one micro-batch.
    fn layer_forward_flops(&self) -> f64 {
        let (b, s, h) = (self.micro_batch as f64, self.seq as f64, self.hidden as f64);
        2.0 * b * s * self.layer_params() + 4.0 * b * s * s * h
    }
}

/// The NPU the model runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Npu {
    /// Peak dense FLOP/s, in TFLOP/s.
    pub peak_tflops: f64,
    /// Fraction of the peak the kernels reach.
    pub efficiency: f64,
    /// HBM, GiB.
    pub hbm_gib: f64,
}

/// A parallelization.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Strategy {
    /// Tensor-parallel degree t.
    pub tp: u64,
    /// Pipeline-parallel degree p.
    pub pp: u64,
    /// Data-parallel degree d.
    pub dp: u64,
    /// ZeRO stage 0-3.
    pub zero: u8,
    /// Sequence parallelism with TP.
    pub sequence_parallel: bool,
    /// Full activation recomputation.
    pub recompute: bool,
    /// Placement order, innermost first, e.g. `tp,pp,dp`.
    pub order: [Par; 3],
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
            Par::Dp => self.dp,
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
}

impl Memory {
    /// Total, GiB.
    pub(crate) fn gib(&self) -> f64 {
        (self.weights + self.gradients + self.optimizer + self.activations) / crate::model::units::BYTES_PER_GIB
    }
}

/// A generated iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The workload (one pipeline stage's view, 1F1B slots in sequence).
    pub workload: Workload,
    /// Memory per NPU on the first stage.
    pub memory: Memory,
    /// Micro-batches per iteration.
    pub micro_batches: u64,
}

/// Why a strategy is not valid for a model on a fabric (`generate`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StrategyError {
    /// The degrees do not multiply to the fabric's NPUs.
    #[error("tp x pp x dp = {product} is not the fabric's {npus} NPUs")]
    Npus {
        /// tp x pp x dp.
        product: u64,
        /// The fabric's NPUs.
        npus: u64,
    },
    /// TP does not divide the attention heads.
    #[error("tp {tp} does not divide the {heads} heads")]
    Heads {
        /// TP degree.
        tp: u64,
        /// Heads.
        heads: u32,
    },
    /// PP does not divide the layers.
    #[error("pp {pp} does not divide the {layers} layers")]
    Layers {
        /// PP degree.
        pp: u64,
        /// Layers.
        layers: u32,
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
    /// The placement order does not fit the fabric's dimensions.
    #[error("order {order} cannot be placed on {shape}")]
    Placement {
        /// The order, e.g. `tp,pp,dp`.
        order: String,
        /// The fabric's shape.
        shape: String,
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

/// Generates the iteration of `model` on `npu` under `s` on `fabric`, or
/// says why the strategy is not valid.
pub fn generate(model: &ModelSpec, npu: &Npu, s: &Strategy, fabric: &Fabric) -> Result<Generated, StrategyError> {
    let n = fabric.npus();
    if s.tp * s.pp * s.dp != n {
        return Err(StrategyError::Npus {
            product: s.tp * s.pp * s.dp,
            npus: n,
        });
    }
    if u64::from(model.heads) % s.tp != 0 {
        return Err(StrategyError::Heads {
            tp: s.tp,
            heads: model.heads,
        });
    }
    if u64::from(model.layers) % s.pp != 0 {
        return Err(StrategyError::Layers {
            pp: s.pp,
            layers: model.layers,
        });
    }
    let per_step = s.dp * model.micro_batch;
    if !model.global_batch.is_multiple_of(per_step) {
        return Err(StrategyError::Batch {
            dp: s.dp,
            micro_batch: model.micro_batch,
            global_batch: model.global_batch,
        });
    }
    let m = model.global_batch / per_step;
    let [tp_g, pp_g, dp_g] = s.groups(fabric).ok_or_else(|| StrategyError::Placement {
        order: s.order_name(),
        shape: fabric.shape(),
    })?;
    let (t, p, d) = (s.tp as f64, s.pp as f64, s.dp as f64);
    let (b, sq, h) = (model.micro_batch as f64, model.seq as f64, model.hidden as f64);
    let e = model.bytes_weight;
    let layers_per_stage = model.layers as f64 / p;
    // Memory on the first stage (it also holds the embedding).
    let stage_params = layers_per_stage * model.layer_params() + (model.vocab * model.hidden) as f64;
    let shard = |on: bool| if on { d } else { 1.0 };
    let per_layer_act = if s.recompute {
        2.0 * sq * b * h / if s.sequence_parallel { t } else { 1.0 }
    } else if s.sequence_parallel {
        sq * b * h * (34.0 + 5.0 * f64::from(model.heads) * sq / h) / t
    } else {
        sq * b * h * (10.0 + 24.0 / t + 5.0 * f64::from(model.heads) * sq / (h * t))
    };
    let memory = Memory {
        weights: stage_params / t * model.bytes_weight / shard(s.zero >= 3),
        gradients: stage_params / t * model.bytes_grad / shard(s.zero >= 2),
        optimizer: stage_params / t * model.bytes_optimizer / shard(s.zero >= 1),
        activations: layers_per_stage * (p.min(m as f64)) * per_layer_act,
    };
    let hbm = npu.hbm_gib * crate::model::units::BYTES_PER_GIB;
    let total = memory.weights + memory.gradients + memory.optimizer + memory.activations;
    if total > hbm {
        return Err(StrategyError::Memory {
            gib: memory.gib(),
            hbm_gib: npu.hbm_gib,
        });
    }
    // Compute per layer per micro-batch, ns.
    let flops_per_ns = crate::model::units::flops_per_ns(npu.peak_tflops, npu.efficiency);
    let fwd_ns = model.layer_forward_flops() / t / flops_per_ns;
    let extra = if s.recompute { fwd_ns } else { 0.0 };
    let comm = |kind, bytes: f64, group: &Group| {
        (group.size() > 1 && bytes > 0.0).then(|| Comm {
            kind,
            bytes,
            group: group.clone(),
        })
    };
    let act = b * sq * h * e;
    let layer = |name: String, half: f64| Layer {
        name,
        forward: Phase {
            compute_ns: half * fwd_ns,
            comm: comm(CollectiveKind::AllReduce, act, &tp_g),
        },
        input_grad: Phase {
            compute_ns: half * (fwd_ns + extra),
            comm: comm(CollectiveKind::AllReduce, act, &tp_g),
        },
        weight_grad: Phase {
            compute_ns: half * fwd_ns,
            comm: None,
        },
    };
    let mut layers = Vec::new();
    let slots = m + s.pp - 1;
    let n_layers = model.layers as u64 / s.pp;
    let stage_bytes = |per_elem: f64| stage_params / t * per_elem;
    for slot in 0..slots {
        for l in 0..n_layers {
            // Two blocks per layer, each with its two TP all-reduces' worth:
            // attention then FFN, the compute split evenly between them.
            layers.push(layer(format!("mb{slot}.l{l}.attn"), 0.5));
            layers.push(layer(format!("mb{slot}.l{l}.ffn"), 0.5));
        }
        if s.pp > 1 {
            layers.push(comm_layer(
                format!("mb{slot}.stage-boundary"),
                comm(CollectiveKind::SendRecv, act, &pp_g),
            ));
        }
        if s.zero >= 3 && slot < m {
            // Gather the stage's parameters before the forward and the backward.
            let contribution = stage_bytes(model.bytes_weight) / d;
            layers.push(comm_layer(
                format!("mb{slot}.zero3-gather"),
                comm(CollectiveKind::AllGather, contribution, &dp_g),
            ));
        }
    }
    let (kind, bytes) = if s.zero >= 3 {
        (CollectiveKind::ReduceScatter, stage_bytes(model.bytes_grad))
    } else {
        (CollectiveKind::AllReduce, stage_bytes(model.bytes_grad))
    };
    layers.push(Layer {
        name: "gradient-sync".into(),
        forward: Phase::default(),
        input_grad: Phase::default(),
        weight_grad: Phase {
            compute_ns: 0.0,
            comm: comm(kind, bytes, &dp_g),
        },
    });
    Ok(Generated {
        workload: Workload { layers },
        memory,
        micro_batches: m,
    })
}

/// A record with no compute whose forward and backward each issue `comm`.
fn comm_layer(name: String, comm: Option<Comm>) -> Layer {
    let phase = Phase { compute_ns: 0.0, comm };
    Layer {
        name,
        forward: phase.clone(),
        input_grad: phase,
        weight_grad: Phase::default(),
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
            ffn: 4096,
            ffn_matrices: 2,
            seq: 512,
            vocab: 1000,
            global_batch: 8,
            micro_batch: 1,
            bytes_weight: 2.0,
            bytes_grad: 2.0,
            bytes_optimizer: 12.0,
        }
    }

    #[test]
    fn sizes_by_hand() {
        let m = small();
        // 4 h^2 + 2 h f = 4 * 1048576 + 2 * 1024 * 4096 = 4194304 + 8388608 = 12582912.
        assert_eq!(m.layer_params(), 12_582_912.0);
        // 4 layers + V h = 50331648 + 1024000 = 51355648.
        assert_eq!(m.params(), 51_355_648.0);
        // 2 b s P + 4 b s^2 h = 2 * 512 * 12582912 + 4 * 262144 * 1024
        //                     = 12884901888 + 1073741824 = 13958643712.
        assert_eq!(m.layer_forward_flops(), 13_958_643_712.0);
        // GPT-3's preset has about 175e9 parameters: 96 * 12 h^2 + V h.
        let g = ModelSpec::preset("gpt3-175b").unwrap();
        assert!((g.params() / 1e9 - 174.6).abs() < 0.1, "{}", g.params());
    }

    #[test]
    fn volumes_by_hand() {
        let m = ModelSpec {
            global_batch: 256,
            ..small()
        };
        let npu = Npu {
            peak_tflops: 100.0,
            efficiency: 0.5,
            hbm_gib: 80.0,
        };
        // 4096 NPUs on LIBRA's 4D shape: tp 16, pp 2, dp 128, ZeRO-1.
        let s = Strategy {
            tp: 16,
            pp: 2,
            dp: 128,
            zero: 1,
            sequence_parallel: false,
            recompute: false,
            order: [Par::Tp, Par::Pp, Par::Dp],
        };
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
        // Forward compute of half a layer over t = 16 at 50 TFLOP/s:
        // 13958643712 / 16 / 5e4 FLOP/ns / 2 = 8724.152 ns.
        assert!((first.forward.compute_ns - 13_958_643_712.0 / 16.0 / 5e4 / 2.0).abs() < 1e-6);
        // DP all-reduce of the first stage's gradients:
        // (2 layers * 12582912 + 1024000) / 16 * 2 bytes = 3273728 bytes.
        let sync = g.workload.layers.last().unwrap().weight_grad.comm.as_ref().unwrap();
        assert_eq!(sync.bytes, (2.0 * 12_582_912.0 + 1_024_000.0) / 16.0 * 2.0);
        // 1F1B slots: m + p - 1 micro-batches of 2 layers x 2 blocks + a boundary.
        assert_eq!(g.workload.layers.len() as u64, (g.micro_batches + 1) * 5 + 1);
    }

    #[test]
    fn invalid_strategies_say_why() {
        let m = small();
        let npu = Npu {
            peak_tflops: 100.0,
            efficiency: 0.5,
            hbm_gib: 80.0,
        };
        let f = libra_4d();
        let st = |tp, pp, dp| Strategy {
            tp,
            pp,
            dp,
            zero: 0,
            sequence_parallel: false,
            recompute: false,
            order: [Par::Tp, Par::Pp, Par::Dp],
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

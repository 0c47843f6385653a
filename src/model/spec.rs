//! What a transformer model is: its shape ([`ModelSpec`], with multi-head
//! latent attention ([`Mla`]) and mixture of experts ([`Moe`])), its
//! parameter and FLOP counts, and how its activations are recomputed
//! ([`Recompute`]). The presets and what a model costs on a fabric are in
//! `model::transformer` (which re-exports these types); `model::hf` reads
//! them from Hugging Face configs.

use serde::{Deserialize, Serialize};

/// A transformer model and its training batch.
///
/// ```
/// use dimsum::model::transformer::{ModelSpec, Recompute};
/// // GPT-3 175B (Brown et al., 2020): 96 layers of h = 12288, a GELU FFN
/// // of 4h, vocabulary 50257, tied embeddings.
/// let h = 12288;
/// let gpt3 = ModelSpec {
///     name: "gpt3-175b".into(),
///     layers: 96,
///     hidden: h,
///     heads: 96,
///     kv_heads: 96,
///     ffn: 4 * h,
///     ffn_matrices: 2,
///     seq: 2048,
///     vocab: 50257,
///     global_batch: 1536,
///     micro_batch: 1,
///     bytes_weight: 2.0,
///     bytes_grad: 4.0,
///     bytes_optimizer: 12.0,
///     moe: None,
///     head_dim: None,
///     mla: None,
///     tied_embeddings: true,
///     mtp_layers: 0,
/// };
/// // 12 h^2 per layer and V h: 96 x 1.812e9 + 0.618e9 = 174.6e9.
/// assert!((gpt3.params() / 175e9 - 1.0).abs() < 0.01);
/// assert!((gpt3.active_params() - gpt3.params()).abs() < 1.0); // dense
/// // Megatron-LM's count with full recomputation (SC'21, eq. 3):
/// // 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).
/// let (b, s, l, v) = (1536.0, 2048.0, 96.0, 50257.0);
/// let hf = h as f64;
/// let eq3 = 96.0 * b * s * l * hf * hf * (1.0 + s / (6.0 * hf) + v / (16.0 * l * hf));
/// assert!((gpt3.iteration_flops(Recompute::Full) / eq3 - 1.0).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    /// Name.
    pub name: String,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size h.
    pub hidden: u64,
    /// Attention heads a.
    pub heads: u32,
    /// Key-value heads (grouped-query attention; `heads` for multi-head
    /// attention): K and V are `h kv / a` wide.
    pub kv_heads: u32,
    /// FFN size f (of the dense layers).
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
    /// Mixture of experts, if the model has it.
    pub moe: Option<Moe>,
    /// Width of one attention head (Q, K and V), when it is not `hidden /
    /// heads` (Qwen3: 64 heads of 128 on hidden 4096; GPT-OSS: 64 of 64 on
    /// 2880); `None`: `hidden / heads`.
    pub head_dim: Option<u64>,
    /// Multi-head latent attention (DeepSeek-V2 and -V3) in place of
    /// (grouped-query) multi-head attention.
    pub mla: Option<Mla>,
    /// The output layer shares the embedding's weights (GPT-3, and every
    /// preset written by hand); untied (Llama 3, Qwen3, DeepSeek-V3,
    /// Mixtral, GPT-OSS) it is a second `V h` matrix of its own.
    pub tied_embeddings: bool,
    /// Multi-token prediction modules (DeepSeek-V3: 1): each a projection
    /// of `2h` to `h`, one more layer of the model's last kind and the
    /// shared output layer, run on the last pipeline stage.
    pub mtp_layers: u32,
}

/// Multi-head latent attention (DeepSeek-AI, "DeepSeek-V2", 2024, sec.
/// 2.1): queries through a low-rank `q_lora_rank` (0: projected directly),
/// keys and values through one `kv_lora_rank` latent (what inference
/// caches, with the `qk_rope_head_dim` decoupled key), each head a
/// `qk_nope_head_dim + qk_rope_head_dim` query and key and a `v_head_dim`
/// value. Per layer (h hidden, a heads, r_q, r_kv the ranks, d_n, d_r, d_v
/// the head widths): `h r_q + r_q a (d_n + d_r)` query parameters (`h a
/// (d_n + d_r)` without a query rank), `h (r_kv + d_r) + r_kv a (d_n +
/// d_v)` key-value parameters, `a d_v h` output parameters (norms left
/// out: under 0.01%).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mla {
    /// Query low-rank dimension r_q (0: no query compression).
    pub q_lora_rank: u64,
    /// Key-value latent dimension r_kv.
    pub kv_lora_rank: u64,
    /// Per-head query and key width without rotary embedding d_n.
    pub qk_nope_head_dim: u64,
    /// Per-head rotary query and key width d_r (the key's shared by the heads).
    pub qk_rope_head_dim: u64,
    /// Per-head value width d_v.
    pub v_head_dim: u64,
}

/// The mixture-of-experts FFN of a model (`[model] experts`, ...): in each
/// MoE layer a router sends every token to `top_k` of `experts` routed
/// experts (and to every shared expert), each an FFN of `expert_ffn` with
/// the model's `ffn_matrices`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moe {
    /// Routed experts E.
    pub experts: u32,
    /// Routed experts per token k.
    pub top_k: u32,
    /// FFN size of one expert.
    pub expert_ffn: u64,
    /// Shared experts every token goes through (DeepSeek), each of
    /// `expert_ffn`.
    pub shared_experts: u32,
    /// Every `moe_every`-th layer from `first_dense` on is MoE (1: all),
    /// the others dense.
    pub moe_every: u32,
    /// The first layers, dense.
    pub first_dense: u32,
    /// Capacity factor c: each expert's buffer holds c times its mean
    /// tokens, padded, and tokens over it are dropped (GShard, Switch);
    /// `None`: dropless.
    pub capacity_factor: Option<f64>,
    /// Dropless routing: the busiest expert's tokens over the mean (>= 1).
    pub imbalance: f64,
}

impl Moe {
    /// The busiest expert's tokens over the mean: the capacity factor
    /// (buffers are padded to it), else the imbalance.
    pub fn load(&self) -> f64 {
        self.capacity_factor.unwrap_or(self.imbalance)
    }

    /// Whether layer `l` (from 0) is a MoE layer.
    pub fn is_moe(&self, l: u32) -> bool {
        l >= self.first_dense && (l - self.first_dense).is_multiple_of(self.moe_every.max(1))
    }
}

impl ModelSpec {
    /// Parameters of one layer's attention: Q and the output projection
    /// `h^2` each, K and V `h^2 kv / a` each; with a head width `d_h` of its
    /// own, Q and the output `h a d_h` each and K and V `h kv d_h`; with
    /// multi-head latent attention, [`Mla`]'s.
    pub fn attention_params(&self) -> f64 {
        let h = self.hidden as f64;
        let a = f64::from(self.heads);
        match (&self.mla, self.head_dim) {
            (Some(x), _) => {
                let (rq, rkv) = (x.q_lora_rank as f64, x.kv_lora_rank as f64);
                let (dn, dr, dv) = (
                    x.qk_nope_head_dim as f64,
                    x.qk_rope_head_dim as f64,
                    x.v_head_dim as f64,
                );
                let q = if rq > 0.0 {
                    h * rq + rq * a * (dn + dr)
                } else {
                    h * a * (dn + dr)
                };
                q + h * (rkv + dr) + rkv * a * (dn + dv) + a * dv * h
            }
            (None, Some(d)) => {
                let d = d as f64;
                2.0 * h * d * (a + f64::from(self.kv_heads))
            }
            (None, None) => 2.0 * h * h * (1.0 + f64::from(self.kv_heads) / a),
        }
    }

    /// One head's query and key width, and its value width: `h / a` both,
    /// `head_dim` both, or MLA's `d_n + d_r` and `d_v`.
    pub fn head_dims(&self) -> (f64, f64) {
        match (&self.mla, self.head_dim) {
            (Some(x), _) => ((x.qk_nope_head_dim + x.qk_rope_head_dim) as f64, x.v_head_dim as f64),
            (None, Some(d)) => (d as f64, d as f64),
            (None, None) => {
                let d = self.hidden as f64 / f64::from(self.heads);
                (d, d)
            }
        }
    }

    /// The attention core's width: its forward is `4 b s^2` times it
    /// (`Q K^T` and the scores times `V`, two FLOPs a multiply-add): `h`,
    /// or `a (d_qk + d_v) / 2` where the heads are not `h / a` wide.
    pub fn core_width(&self) -> f64 {
        if self.mla.is_none() && self.head_dim.is_none() {
            return self.hidden as f64;
        }
        let (qk, v) = self.head_dims();
        f64::from(self.heads) * (qk + v) / 2.0
    }

    /// Parameters of a dense layer's FFN.
    pub fn dense_ffn_params(&self) -> f64 {
        f64::from(self.ffn_matrices) * self.hidden as f64 * self.ffn as f64
    }

    /// Parameters of one expert.
    pub fn expert_params(&self) -> f64 {
        self.moe.as_ref().map_or(0.0, |x| {
            f64::from(self.ffn_matrices) * self.hidden as f64 * x.expert_ffn as f64
        })
    }

    /// Parameters of a MoE layer outside its routed experts: the router
    /// (`h E`) and the shared experts.
    pub fn moe_dense_params(&self) -> f64 {
        self.moe.as_ref().map_or(0.0, |x| {
            self.hidden as f64 * f64::from(x.experts) + f64::from(x.shared_experts) * self.expert_params()
        })
    }

    /// Whether layer `l` (from 0) is a MoE layer.
    pub fn is_moe(&self, l: u32) -> bool {
        self.moe.as_ref().is_some_and(|x| x.is_moe(l))
    }

    /// The model's dense and MoE layers.
    pub fn layer_counts(&self) -> (u32, u32) {
        let moe = (0..self.layers).filter(|&l| self.is_moe(l)).count() as u32;
        (self.layers - moe, moe)
    }

    /// Parameters of a dense layer (`moe` false) or a MoE layer: all of
    /// them, or (`active`) those one token goes through (its `top_k`
    /// routed experts).
    pub(super) fn layer_params(&self, moe: bool, active: bool) -> f64 {
        match &self.moe {
            Some(x) if moe => {
                let routed = if active { x.top_k } else { x.experts };
                self.attention_params() + self.moe_dense_params() + f64::from(routed) * self.expert_params()
            }
            _ => self.attention_params() + self.dense_ffn_params(),
        }
    }

    fn sum_layers(&self, per_layer: impl Fn(bool) -> f64) -> f64 {
        let (dense, moe) = self.layer_counts();
        let mut out = f64::from(dense) * per_layer(false);
        if moe > 0 {
            out += f64::from(moe) * per_layer(true);
        }
        out
    }

    /// All parameters: the layers, the embedding, an untied output layer
    /// and the multi-token prediction modules.
    pub fn params(&self) -> f64 {
        self.sum_layers(|moe| self.layer_params(moe, false)) + self.embedding_params() + self.extra_params(false)
    }

    /// The parameters one token goes through (all of them in a dense model).
    pub fn active_params(&self) -> f64 {
        self.sum_layers(|moe| self.layer_params(moe, true)) + self.embedding_params() + self.extra_params(true)
    }

    /// An untied output layer's `V h` and each multi-token prediction
    /// module's projection (`2 h^2`) and layer (of the model's last kind).
    fn extra_params(&self, active: bool) -> f64 {
        let h = self.hidden as f64;
        let output = if self.tied_embeddings {
            0.0
        } else {
            self.embedding_params()
        };
        let last_moe = self.layers > 0 && self.is_moe(self.layers - 1);
        output + f64::from(self.mtp_layers) * (2.0 * h * h + self.layer_params(last_moe, active))
    }

    /// The (tied) embedding's parameters, `V h`.
    pub fn embedding_params(&self) -> f64 {
        self.vocab as f64 * self.hidden as f64
    }

    /// Forward FLOPs of a dense (`moe` false) or MoE layer for one
    /// micro-batch: two per active parameter per token, and the attention
    /// core's `4 b s^2 h`.
    pub fn layer_forward_flops(&self, moe: bool) -> f64 {
        let (b, s) = (self.micro_batch as f64, self.seq as f64);
        2.0 * b * s * self.layer_params(moe, true) + 4.0 * b * s * s * self.core_width()
    }

    /// FLOPs of one iteration as Megatron-LM counts them (Narayanan et al.,
    /// SC'21, eq. 3: `96 B s l h^2 (1 + s / (6 h) + V / (16 l h))` for a GPT
    /// FFN with full recomputation): each layer's forward three times
    /// (forward, input and weight gradients), four with full
    /// recomputation, and the logits three times. Selective recomputation
    /// (Korthikanti et al.) runs the attention core's two matrix products
    /// (`Q K^T` and the scores times `V`, `4 b s^2 h`) a second time. A MoE
    /// layer counts the experts a token goes through.
    pub fn iteration_flops(&self, recompute: Recompute) -> f64 {
        let passes = if recompute == Recompute::Full { 4.0 } else { 3.0 };
        let (b, s, h) = (self.micro_batch as f64, self.seq as f64, self.hidden as f64);
        let again = if recompute == Recompute::Selective {
            4.0 * b * s * s * self.core_width()
        } else {
            0.0
        };
        let micro_batches = self.global_batch as f64 / b;
        let logits = 2.0 * b * s * h * self.vocab as f64;
        // Each multi-token prediction module: its projection of 2h to h,
        // one layer of the model's last kind and the logits again.
        let mtp = if self.mtp_layers > 0 {
            let last_moe = self.is_moe(self.layers.saturating_sub(1));
            f64::from(self.mtp_layers)
                * (passes * (self.layer_forward_flops(last_moe) + 4.0 * b * s * h * h) + again + 3.0 * logits)
        } else {
            0.0
        };
        micro_batches * (self.sum_layers(|moe| passes * self.layer_forward_flops(moe) + again) + 3.0 * logits + mtp)
    }
}

/// How activations are recomputed in the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Every activation kept.
    None,
    /// The attention core recomputed (Korthikanti et al.).
    Selective,
    /// Each layer's forward run again from its input.
    Full,
}

impl crate::error::Named for Recompute {
    const WHAT: &'static str = "a recomputation";
    const ALL: &'static [Recompute] = &[Recompute::None, Recompute::Selective, Recompute::Full];
    fn as_name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}
crate::named!(Recompute);

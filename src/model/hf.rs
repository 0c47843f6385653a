//! Models from Hugging Face transformers `config.json` files: the
//! architecture's shape (layers, hidden size, heads, key-value heads, head
//! width, FFN and expert sizes, routing, multi-head latent attention,
//! multi-token prediction, vocabulary, tied embeddings) as a [`ModelSpec`].
//!
//! What a config does not say is the training run: the sequence length and
//! the global batch come from the study (`[model] seq`, `global_batch`;
//! `max_position_embeddings` is the longest context the model was trained
//! to, not its pre-training sequence); the micro-batch defaults to 1 and the
//! precision to Megatron-LM's mixed precision, as for every preset.
//!
//! Fields read, per architecture (transformers' names):
//! - every one: `num_hidden_layers`, `hidden_size`, `num_attention_heads`,
//!   `num_key_value_heads` (default: the heads), `head_dim` (default:
//!   `hidden_size / num_attention_heads`), `intermediate_size`,
//!   `vocab_size`, `tie_word_embeddings` (default false: the default of
//!   every supported architecture's config class); SwiGLU FFNs (3
//!   matrices);
//! - `MixtralForCausalLM`, `GptOssForCausalLM`: `num_local_experts`,
//!   `num_experts_per_tok`, every layer MoE, each expert of
//!   `intermediate_size`;
//! - `Qwen3MoeForCausalLM`: `num_experts`, `num_experts_per_tok`,
//!   `moe_intermediate_size`, `decoder_sparse_step` (every n-th layer MoE),
//!   `mlp_only_layers` (only an empty list, or the first layers, is
//!   expressible);
//! - `DeepseekV3ForCausalLM`: `n_routed_experts`, `num_experts_per_tok`,
//!   `moe_intermediate_size`, `n_shared_experts`, `first_k_dense_replace`,
//!   `moe_layer_freq`, the MLA ranks and head widths (`q_lora_rank` (null:
//!   none), `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`,
//!   `v_head_dim`) and `num_nextn_predict_layers` (multi-token prediction).
//!
//! Not modelled, and said here: GPT-OSS's alternating 128-token sliding
//! window (its attention is timed as full), attention sinks and biases, and
//! the routers' bias terms (under 0.01% of the parameters).

use super::spec::{Mla, ModelSpec, Moe};
use crate::error::{InputError, line_of_offset, one_of};
use serde_json::{Map, Value};
use std::path::Path;

/// The `architectures` a config may name.
pub const ARCHITECTURES: [&str; 8] = [
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
];

/// Most bytes a config.json may have (published ones are under 10 KB).
pub const MAX_BYTES: u64 = 1 << 20;

/// Reads the config at `path` (bounded by [`MAX_BYTES`]).
pub fn read(path: &Path) -> Result<ModelSpec, InputError> {
    let text = crate::io::read_text(path, MAX_BYTES)
        .map_err(|e| InputError::at(path, None, "config", format!("cannot read a config.json: {e}")))?;
    parse(&text, path)
}

/// The model a config.json's text describes, named after its
/// `_name_or_path`, else the file's parent folder, else its stem.
pub fn parse(text: &str, path: &Path) -> Result<ModelSpec, InputError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| InputError::at(path, Some(e.line()), "config", format!("not a config.json: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(InputError::at(
            path,
            Some(1),
            "config",
            "not a config.json: a JSON object is expected",
        ));
    };
    let c = Config { obj: &obj, text, path };
    let arch = c.architecture()?;
    let layers = c
        .int("num_hidden_layers")?
        .ok_or_else(|| c.missing("num_hidden_layers"))?;
    let hidden = c.int("hidden_size")?.ok_or_else(|| c.missing("hidden_size"))?;
    let heads = c
        .int("num_attention_heads")?
        .ok_or_else(|| c.missing("num_attention_heads"))?;
    let kv_heads = c.int("num_key_value_heads")?.unwrap_or(heads);
    let ffn = c
        .int("intermediate_size")?
        .ok_or_else(|| c.missing("intermediate_size"))?;
    let vocab = c.int("vocab_size")?.ok_or_else(|| c.missing("vocab_size"))?;
    for (key, v) in [
        ("num_hidden_layers", layers),
        ("hidden_size", hidden),
        ("num_attention_heads", heads),
        ("num_key_value_heads", kv_heads),
        ("intermediate_size", ffn),
        ("vocab_size", vocab),
    ] {
        if v == 0 {
            return Err(c.at(key, format!("{key} = 0 is not allowed: 1 or more")));
        }
    }
    let small = |key: &str, v: u64| -> Result<u32, InputError> {
        u32::try_from(v).map_err(|_| c.at(key, format!("{key} = {v} is not allowed: at most {}", u32::MAX)))
    };
    let (layers, heads, kv_heads) = (
        small("num_hidden_layers", layers)?,
        small("num_attention_heads", heads)?,
        small("num_key_value_heads", kv_heads)?,
    );
    if arch != "DeepseekV3ForCausalLM" && !heads.is_multiple_of(kv_heads) {
        return Err(c.at(
            "num_key_value_heads",
            format!("num_key_value_heads = {kv_heads} is not allowed: a divisor of the {heads} num_attention_heads"),
        ));
    }
    let mla = if arch == "DeepseekV3ForCausalLM" {
        Some(c.mla()?)
    } else {
        None
    };
    let head_dim = match c.int("head_dim")? {
        _ if mla.is_some() => None,
        Some(0) => return Err(c.at("head_dim", "head_dim = 0 is not allowed: 1 or more")),
        Some(d) => Some(d),
        None if !hidden.is_multiple_of(u64::from(heads)) => {
            return Err(c.at(
                "num_attention_heads",
                format!(
                    "head_dim is absent and hidden_size {hidden} is not a multiple of the {heads} num_attention_heads: \
                     give head_dim"
                ),
            ));
        }
        None => None,
    };
    // A head width equal to hidden / heads is the default's: stored as
    // absent, so a Llama config and the hand-written model time alike.
    let head_dim = head_dim.filter(|&d| d.checked_mul(u64::from(heads)) != Some(hidden));
    let moe = c.moe(arch, layers, ffn)?;
    let mtp_layers = match c.int("num_nextn_predict_layers")? {
        Some(n) => small("num_nextn_predict_layers", n)?,
        None => 0,
    };
    let name = match obj.get("_name_or_path").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.rsplit('/').next().unwrap_or(n).to_string(),
        _ => path
            .parent()
            .and_then(|p| p.file_name())
            .or_else(|| path.file_stem())
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned()),
    };
    Ok(ModelSpec {
        name,
        layers,
        hidden,
        heads,
        kv_heads: if mla.is_some() { heads } else { kv_heads },
        ffn,
        ffn_matrices: 3,
        seq: 0,
        vocab,
        global_batch: 0,
        micro_batch: 1,
        bytes_weight: 2.0,
        bytes_grad: 4.0,
        bytes_optimizer: 12.0,
        moe,
        head_dim,
        mla,
        tied_embeddings: c.boolean("tie_word_embeddings")?.unwrap_or(false),
        mtp_layers,
    })
}

/// A config's fields, with the text to locate them in.
struct Config<'a> {
    obj: &'a Map<String, Value>,
    text: &'a str,
    path: &'a Path,
}

impl Config<'_> {
    /// An error at the line of `"key"` (or the file's first line).
    fn at(&self, key: &str, message: impl Into<String>) -> InputError {
        let line = self
            .text
            .find(&format!("\"{key}\""))
            .map_or(1, |o| line_of_offset(self.text, o));
        InputError::at(self.path, Some(line), key, message)
    }

    fn missing(&self, key: &str) -> InputError {
        InputError::at(
            self.path,
            Some(1),
            key,
            format!("`{key}` is missing: a transformers config.json gives it"),
        )
    }

    /// A non-negative integer field (absent or null: `None`).
    fn int(&self, key: &str) -> Result<Option<u64>, InputError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.at(key, format!("{key} = {v} is not allowed: a whole number >= 0"))),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, InputError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.at(key, format!("{key} = {v} is not allowed: true or false"))),
        }
    }

    /// The first of `architectures` (else `model_type`), one of
    /// [`ARCHITECTURES`].
    fn architecture(&self) -> Result<&'static str, InputError> {
        let named = match self.obj.get("architectures") {
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        let by_type = |t: &str| match t {
            "llama" => Some("LlamaForCausalLM"),
            "mistral" => Some("MistralForCausalLM"),
            "mixtral" => Some("MixtralForCausalLM"),
            "qwen2" => Some("Qwen2ForCausalLM"),
            "qwen3" => Some("Qwen3ForCausalLM"),
            "qwen3_moe" => Some("Qwen3MoeForCausalLM"),
            "deepseek_v3" => Some("DeepseekV3ForCausalLM"),
            "gpt_oss" => Some("GptOssForCausalLM"),
            _ => None,
        };
        match named {
            Some(n) => ARCHITECTURES.iter().copied().find(|a| *a == n).ok_or_else(|| {
                self.at(
                    "architectures",
                    format!(
                        "`{n}` is not a supported architecture; allowed: {}",
                        one_of(&ARCHITECTURES)
                    ),
                )
            }),
            None => {
                let t = self.obj.get("model_type").and_then(Value::as_str).unwrap_or("");
                by_type(t).ok_or_else(|| {
                    self.at(
                        "model_type",
                        format!(
                            "no `architectures` and model_type `{t}` is not a supported one; allowed architectures: {}",
                            one_of(&ARCHITECTURES)
                        ),
                    )
                })
            }
        }
    }

    fn required(&self, key: &str) -> Result<u64, InputError> {
        match self.int(key)? {
            Some(0) => Err(self.at(key, format!("{key} = 0 is not allowed: 1 or more"))),
            Some(v) => Ok(v),
            None => Err(self.missing(key)),
        }
    }

    fn mla(&self) -> Result<Mla, InputError> {
        Ok(Mla {
            q_lora_rank: self.int("q_lora_rank")?.unwrap_or(0),
            kv_lora_rank: self.required("kv_lora_rank")?,
            qk_nope_head_dim: self.required("qk_nope_head_dim")?,
            qk_rope_head_dim: self.required("qk_rope_head_dim")?,
            v_head_dim: self.required("v_head_dim")?,
        })
    }

    /// The experts: routed count, per-token count and width by the
    /// architecture's names; which layers; shared experts.
    fn moe(&self, arch: &str, layers: u32, ffn: u64) -> Result<Option<Moe>, InputError> {
        let (experts_key, width) = match arch {
            "MixtralForCausalLM" | "GptOssForCausalLM" => ("num_local_experts", ffn),
            "Qwen3MoeForCausalLM" => ("num_experts", self.required("moe_intermediate_size")?),
            "DeepseekV3ForCausalLM" => ("n_routed_experts", self.required("moe_intermediate_size")?),
            _ => return Ok(None),
        };
        let experts = self.required(experts_key)?;
        let top_k = self.required("num_experts_per_tok")?;
        if experts < 2 || top_k > experts {
            return Err(self.at(
                "num_experts_per_tok",
                format!("num_experts_per_tok = {top_k} with {experts} experts is not allowed: 1 to the experts, of 2 or more"),
            ));
        }
        let (moe_every, first_dense, shared) = match arch {
            "Qwen3MoeForCausalLM" => {
                // transformers: layer l is MoE when it is not in
                // mlp_only_layers and (l + 1) % decoder_sparse_step == 0.
                let step = self.int("decoder_sparse_step")?.unwrap_or(1).max(1);
                // mlp_only_layers: dense layers by index; only the first
                // ones (0, 1, ..) are expressible, and only with step 1.
                let dense: Vec<u64> = match self.obj.get("mlp_only_layers") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) if a.iter().all(Value::is_u64) => {
                        a.iter().filter_map(Value::as_u64).collect()
                    }
                    Some(v) => {
                        return Err(self.at(
                            "mlp_only_layers",
                            format!("mlp_only_layers = {v} is not allowed: a list of layer indices"),
                        ));
                    }
                };
                if dense.iter().enumerate().any(|(i, &l)| l != i as u64) || (!dense.is_empty() && step > 1) {
                    return Err(self.at(
                        "mlp_only_layers",
                        "mlp_only_layers is allowed only as the first layers (0, 1, ...) and with decoder_sparse_step 1: dimsum's MoE layers are every n-th after the dense ones",
                    ));
                }
                if dense.is_empty() {
                    (step, step - 1, 0)
                } else {
                    (1, dense.len() as u64, 0)
                }
            }
            "DeepseekV3ForCausalLM" => {
                // DeepSeek's code: layer l is MoE when l >= k and l % freq
                // == 0, so the first is k rounded up to a multiple of freq.
                let freq = self.int("moe_layer_freq")?.unwrap_or(1).max(1);
                let k = self.int("first_k_dense_replace")?.unwrap_or(0);
                (
                    freq,
                    k.div_ceil(freq).saturating_mul(freq),
                    self.int("n_shared_experts")?.unwrap_or(0),
                )
            }
            _ => (1, 0, 0),
        };
        if first_dense >= u64::from(layers) {
            let key = if arch == "Qwen3MoeForCausalLM" {
                "decoder_sparse_step"
            } else {
                "first_k_dense_replace"
            };
            return Err(self.at(
                key,
                format!("{first_dense} dense layers before the first MoE layer is not allowed: fewer than the {layers} layers"),
            ));
        }
        let to32 = |key: &str, v: u64| {
            u32::try_from(v).map_err(|_| self.at(key, format!("{key} = {v} is not allowed: at most {}", u32::MAX)))
        };
        Ok(Some(Moe {
            experts: to32(experts_key, experts)?,
            top_k: to32("num_experts_per_tok", top_k)?,
            expert_ffn: width,
            shared_experts: to32("n_shared_experts", shared)?,
            moe_every: to32("decoder_sparse_step", moe_every)?,
            first_dense: to32("first_k_dense_replace", first_dense)?,
            capacity_factor: None,
            imbalance: 1.0,
        }))
    }
}

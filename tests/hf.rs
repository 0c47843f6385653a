//! Models from Hugging Face config.json files: parameter counts against the
//! published totals, the shapes read, and bad configs refused with a
//! located message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::float_cmp)]

use dimsum::model::hf;
use dimsum::model::transformer::ModelSpec;
use std::path::Path;

fn model(name: &str) -> ModelSpec {
    let path = format!("models/{name}.json");
    hf::read(Path::new(&path)).unwrap()
}

/// Within `pct` percent of the published figure (billions).
fn near(x: f64, published_b: f64, pct: f64, what: &str) {
    let b = x / 1e9;
    assert!(
        (b / published_b - 1.0).abs() <= pct / 100.0,
        "{what}: {b:.3}B vs {published_b}B published"
    );
}

#[test]
fn llama3_8b_counts_8_03b_parameters_by_hand() {
    let m = model("llama3-8b");
    assert_eq!(
        (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn),
        (32, 4096, 32, 8, 14336)
    );
    assert_eq!(m.head_dim, None, "128 = 4096 / 32 is the default width");
    assert!(!m.tied_embeddings);
    // Per layer: Q and O 4096^2 each, K and V 4096 x 1024 each: 41,943,040;
    // SwiGLU 3 x 4096 x 14336 = 176,160,768. Embedding and the untied
    // output 128256 x 4096 each. 32 x 218,103,808 + 2 x 525,336,576 =
    // 8,029,995,008; with the norms dimsum leaves out (65 x 4096 =
    // 266,240) the checkpoint's 8,030,261,248, the model card's 8.03B.
    assert_eq!(m.params(), 8_029_995_008.0);
    assert_eq!(m.active_params(), m.params());
}

#[test]
fn published_totals_and_active_parameters() {
    // Model cards: Llama 3.1 70B 70.6B; 405B 405.9B (the card's "405B";
    // Meta's paper gives 405B); Mixtral 8x22B 141B total, 39B active
    // (Mistral AI); Qwen3-30B-A3B 30.5B, 3.3B active; Qwen3-235B-A22B
    // 235B, 22B active (Qwen3 technical report, Table 2... the cards);
    // GPT-OSS-120B 116.8B total, 5.1B active (OpenAI's model card).
    near(model("llama3-70b").params(), 70.6, 0.5, "llama 70B");
    near(model("llama3-405b").params(), 405.9, 0.5, "llama 405B");
    let x = model("mixtral-8x22b");
    near(x.params(), 140.6, 1.0, "mixtral total");
    near(x.active_params(), 39.1, 1.5, "mixtral active");
    let q = model("qwen3-30b-a3b");
    assert_eq!(q.head_dim, Some(128), "32 heads of 128 on hidden 2048");
    near(q.params(), 30.5, 1.0, "qwen3 30B total");
    near(q.active_params(), 3.3, 3.0, "qwen3 30B active");
    let q = model("qwen3-235b-a22b");
    near(q.params(), 235.0, 1.0, "qwen3 235B total");
    near(q.active_params(), 22.0, 3.0, "qwen3 235B active");
    let g = model("gpt-oss-120b");
    assert_eq!(g.head_dim, Some(64), "64 heads of 64 on hidden 2880");
    near(g.params(), 116.8, 1.0, "gpt-oss total");
    // OpenAI's 5.13B active leave out the embedding (201088 x 2880).
    near(g.active_params() - 201_088.0 * 2880.0, 5.13, 2.0, "gpt-oss active");
}

#[test]
fn deepseek_v3_mla_by_hand_and_its_671b() {
    let d = model("deepseek-v3");
    let x = d.mla.clone().unwrap();
    assert_eq!(
        (
            x.q_lora_rank,
            x.kv_lora_rank,
            x.qk_nope_head_dim,
            x.qk_rope_head_dim,
            x.v_head_dim
        ),
        (1536, 512, 128, 64, 128)
    );
    assert_eq!(d.mtp_layers, 1);
    // MLA per layer, h 7168, 128 heads: Q 7168 x 1536 + 1536 x 128 x 192 =
    // 11,010,048 + 37,748,736; KV 7168 x (512 + 64) + 512 x 128 x 256 =
    // 4,128,768 + 16,777,216; O 128 x 128 x 7168 = 117,440,512; in all
    // 187,105,280 (the 187M the -like preset's note gives).
    assert_eq!(d.attention_params(), 187_105_280.0);
    // DeepSeek-V3's 671B main model and 37B active (its report) leave out
    // the multi-token prediction module (14B with its shared embedding
    // and output head counted again; 11.8B of its own here: a projection
    // and a MoE layer).
    let mtp = 2.0 * 7168.0 * 7168.0 + 187_105_280.0 + 7168.0 * 256.0 + 257.0 * 3.0 * 7168.0 * 2048.0;
    near(d.params() - mtp, 671.0, 0.5, "deepseek main model");
    let mtp_active = 2.0 * 7168.0 * 7168.0 + 187_105_280.0 + 7168.0 * 256.0 + 9.0 * 3.0 * 7168.0 * 2048.0;
    near(d.active_params() - mtp_active, 37.5, 2.0, "deepseek active");
}

#[test]
fn attention_flops_follow_the_head_width() {
    // Qwen3-30B-A3B: 32 heads of 128 on hidden 2048, so the attention core
    // is 4 b s^2 a d_h = 4 b s^2 x 4096, twice the 4 b s^2 h a
    // hidden-wide core would be.
    let mut q = model("qwen3-30b-a3b");
    q.seq = 4096;
    q.micro_batch = 1;
    q.global_batch = 1;
    assert_eq!(q.core_width(), 4096.0);
    let core = 4.0 * 4096.0 * 4096.0 * 4096.0;
    let moe_layer = 2.0 * 4096.0 * (q.attention_params() + 2048.0 * 128.0 + 8.0 * 3.0 * 2048.0 * 768.0) + core;
    assert!((q.layer_forward_flops(true) / moe_layer - 1.0).abs() < 1e-12);
    // DeepSeek-V3's core: (192 + 128) / 2 x 128 heads = 20,480 wide.
    assert_eq!(model("deepseek-v3").core_width(), 20480.0);
}

fn refused(text: &str) -> String {
    hf::parse(text, Path::new("bad/config.json")).unwrap_err().to_string()
}

#[test]
fn bad_configs_are_refused_where_they_are_wrong() {
    let e = refused("{ \"architectures\": [\"Gemma3ForCausalLM\"] }");
    assert!(e.starts_with("bad/config.json:1: "), "{e}");
    assert!(
        e.contains("`Gemma3ForCausalLM` is not a supported architecture; allowed: `LlamaForCausalLM`"),
        "{e}"
    );
    let e = refused("{ \"architectures\": [\"LlamaForCausalLM\"],\n \"hidden_size\": 4096,\n");
    assert!(e.contains("not a config.json"), "{e}");
    let base = |extra: &str| {
        format!(
            "{{\n\"architectures\": [\"LlamaForCausalLM\"],\n\"num_hidden_layers\": 2,\n\"hidden_size\": 2000,\n\
             \"num_attention_heads\": 64,\n\"intermediate_size\": 100,\n\"vocab_size\": 10{extra}\n}}"
        )
    };
    // 2000 / 64 heads is not whole: head_dim is needed.
    let e = refused(&base(""));
    assert!(e.starts_with("bad/config.json:5: "), "{e}");
    assert!(e.contains("give head_dim"), "{e}");
    assert!(hf::parse(&base(",\n\"head_dim\": 64"), Path::new("c.json")).is_ok());
    // 64 heads over 6 key-value heads.
    let e = refused(&base(",\n\"head_dim\": 64,\n\"num_key_value_heads\": 6"));
    assert!(e.starts_with("bad/config.json:9: "), "{e}");
    assert!(
        e.contains("num_key_value_heads = 6 is not allowed: a divisor of the 64"),
        "{e}"
    );
    let e = refused(&base(",\n\"head_dim\": \"64\""));
    assert!(e.contains("head_dim = \"64\" is not allowed: a whole number"), "{e}");
    // A MoE architecture without its experts.
    let e = refused(
        "{\"architectures\": [\"MixtralForCausalLM\"], \"num_hidden_layers\": 2, \"hidden_size\": 64, \
         \"num_attention_heads\": 4, \"intermediate_size\": 100, \"vocab_size\": 10}",
    );
    assert!(e.contains("`num_local_experts` is missing"), "{e}");
}

const STUDY: &str = r#"
name = "hf"
time_model = "pipelined"
[[fabric.dims]]
name = "a"
block = "switch"
npus = 8
latency_ns = 500
[cost.tiers.a]
link_usd_per_gbps = 1.0
[model]
MODEL
[npu]
type = "h100-sxm"
[parallelism]
tp = 1
pp = 1
dp = 8
ep = 8
[optimize]
constraints = ["a == 400"]
"#;

fn study(model: &str) -> Result<dimsum::study::Study, String> {
    dimsum::study::Study::parse(&STUDY.replace("MODEL", model), Path::new("inline.toml")).map_err(|e| e.to_string())
}

#[test]
fn a_study_reads_a_config_and_its_fields_override_it() {
    let s = study("config = \"models/qwen3-30b-a3b.json\"\nseq = 4096\nglobal_batch = 64\nlayers = 24\n").unwrap();
    let m = s.model.unwrap();
    assert_eq!((m.layers, m.seq, m.global_batch, m.micro_batch), (24, 4096, 64, 1));
    assert_eq!((m.hidden, m.heads, m.kv_heads, m.head_dim), (2048, 32, 4, Some(128)));
    assert_eq!(
        m.moe.as_ref().map(|x| (x.experts, x.top_k, x.expert_ffn)),
        Some((128, 8, 768))
    );
    // The training run is not in a config.
    let e = study("config = \"models/qwen3-30b-a3b.json\"\n").unwrap_err();
    assert!(
        e.contains("`seq`, `global_batch` missing: a config.json gives the model's shape"),
        "{e}"
    );
    let e = study("config = \"models/qwen3-30b-a3b.json\"\npreset = \"llama3-8b\"\nseq = 8\nglobal_batch = 8\n")
        .unwrap_err();
    assert!(e.contains("give preset or config, not both"), "{e}");
    // A config that is not there is named.
    let e = study("config = \"models/none.json\"\nseq = 8\nglobal_batch = 8\n").unwrap_err();
    assert!(e.starts_with("models/none.json: "), "{e}");
    // The presets are the configs.
    let p = study("preset = \"deepseek-v3\"\n").unwrap().model.unwrap();
    assert_eq!((p.seq, p.global_batch, p.mtp_layers), (4096, 15360, 1));
    assert!(p.mla.is_some());
}

#[test]
fn parallelism_precision_is_read_and_checked() {
    let model = "preset = \"qwen3-30b-a3b\"\n";
    let text = |p: &str| {
        STUDY
            .replace("MODEL", model)
            .replace("ep = 8\n", &format!("ep = 8\n{p}\n"))
    };
    let s = dimsum::study::Study::parse(&text("precision = \"fp8\""), Path::new("inline.toml")).unwrap();
    let strategy = s.parallelism.clone().unwrap();
    assert_eq!(strategy.precision, dimsum::model::transformer::Precision::Fp8);
    let e = dimsum::study::Study::parse(&text("precision = \"fp9\""), Path::new("inline.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`fp9` is not a precision; allowed: `bf16` or `fp8`"), "{e}");
}

/// A bad config.json fails the command with one located line and exit 2.
#[test]
fn the_cli_refuses_a_bad_config_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        "{\n  \"architectures\": [\"MambaForCausalLM\"]\n}\n",
    )
    .unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        STUDY.replace("MODEL", "config = \"config.json\"\nseq = 8\nglobal_batch = 8\n"),
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("dimsum")
        .unwrap()
        .args(["eval", study.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.json:2: "), "{err}");
    assert!(
        err.contains("`MambaForCausalLM` is not a supported architecture"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Which layers are MoE, as transformers and DeepSeek's code decide it:
/// Qwen3-MoE's layer l when (l + 1) % decoder_sparse_step == 0, DeepSeek's
/// when l >= first_k_dense_replace and l % moe_layer_freq == 0.
#[test]
fn moe_layers_follow_the_reference_code() {
    let qwen = "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"num_hidden_layers\": 5, \"hidden_size\": 64, \
                \"num_attention_heads\": 4, \"intermediate_size\": 100, \"vocab_size\": 10, \"num_experts\": 4, \
                \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \"decoder_sparse_step\": 2}";
    let m = hf::parse(qwen, Path::new("q.json")).unwrap();
    // Layers 1 and 3 of 0..5.
    let moe: Vec<u32> = (0..5).filter(|&l| m.is_moe(l)).collect();
    assert_eq!(moe, vec![1, 3]);
    let ds = "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"num_hidden_layers\": 8, \"hidden_size\": 64, \
              \"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"intermediate_size\": 100, \"vocab_size\": 10, \
              \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \
              \"first_k_dense_replace\": 3, \"moe_layer_freq\": 2, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8, \
              \"qk_rope_head_dim\": 8, \"v_head_dim\": 8}";
    let m = hf::parse(ds, Path::new("d.json")).unwrap();
    // l >= 3 and even: 4 and 6 (num_key_value_heads is ignored under MLA).
    let moe: Vec<u32> = (0..8).filter(|&l| m.is_moe(l)).collect();
    assert_eq!(moe, vec![4, 6]);
    assert_eq!(m.kv_heads, 4);
}

//! Validation against published training runs: each run's model, recipe
//! and cluster (`validation/*.toml`), its iteration time predicted by the
//! compute model (`model::compute`), the generated workload
//! (`model::transformer`) and the analytic collective model on the
//! cluster's two-level fabric (GPUs of a node on one switch, nodes on a
//! network), and the throughput per GPU compared with the published one.
//!
//! Throughput is counted as the publication counts it (`ModelSpec::
//! iteration_flops`: Megatron-LM's `96 B s l h^2 (1 + s / (6 h) + V / (16 l
//! h))` with full recomputation, or model FLOPs for an MFU), so the error is
//! the error in time. The
//! accelerator's calibration comes from the built-in table; `fit` finds the
//! large-GEMM efficiency that would minimise the largest error, to show how
//! much a refit could gain.

use crate::error::InputError;
use crate::io::Stamp;
use crate::model::collective::{CollectiveModel, TimeModel};
use crate::model::compute;
use crate::model::fabric::{Block, Dim, Fabric};
use crate::model::training::{IterationModel, Loop};
use crate::model::transformer::{self, ModelSpec, Moe, Npu, Precision, RecipeSpace, Recompute, Strategy};
use crate::model::units::{BYTES_PER_GIB, ns_to_ms};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The cluster the runs of a validation file ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// A built-in accelerator (`model::compute::ACCELERATORS`).
    pub npu: String,
    /// GPUs per node, on one switch.
    pub node_gpus: u32,
    /// Node switch bandwidth per GPU per direction, GB/s.
    pub node_gbps: f64,
    /// Node link latency, us.
    pub node_latency_us: f64,
    /// Network bandwidth per GPU per direction, GB/s.
    pub network_gbps: f64,
    /// Network link latency, us.
    pub network_latency_us: f64,
    /// How a collective's dimensions combine (`nccl`: one flat ring, as the
    /// runs' collective library does; or `pipelined`, `sequential`).
    pub time_model: TimeModel,
    /// The training loop: `no-overlap` (Megatron's gradient all-reduce after
    /// the pipeline flush) or `overlap` (gradient collectives under the
    /// backward pass, as FSDP and DDP run them). Default no-overlap.
    #[serde(default = "no_overlap")]
    pub training_loop: Loop,
    /// What the cluster figures come from.
    pub source: String,
}

/// One published run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// A name, e.g. the parameter count.
    pub name: String,
    /// A model preset (`[model] preset` of a study): its shape in place of
    /// layers, hidden, heads, kv_heads, ffn, ffn_matrices and vocab, which
    /// are filled from it when the file is read; seq, batch and
    /// micro_batch stay the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Transformer layers.
    #[serde(default)]
    pub layers: u32,
    /// Hidden size.
    #[serde(default)]
    pub hidden: u64,
    /// Attention heads.
    #[serde(default)]
    pub heads: u32,
    /// Key-value heads (grouped-query attention; default: the heads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u32>,
    /// Expert-parallel degree (MoE presets).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ep: u64,
    /// Context-parallel degree (ring attention; `gpus` = tp x pp x dp x
    /// cp).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cp: u64,
    /// Tensor-parallel collectives pipelined with the products
    /// (Transformer Engine's `tp_comm_overlap`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub tp_overlap: bool,
    /// ZeRO-3 / FSDP parameter all-gathers prefetched under compute.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefetch: bool,
    /// Placement order, innermost first (default `tp,pp,dp`; Megatron-LM
    /// places `tp,dp,pp`, the pipeline outermost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// MoE all-to-alls hidden under compute (DualPipe-style).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ep_overlap: bool,
    /// The MoE routing's capacity factor (token dropping, padded buffers)
    /// in place of the preset's dropless routing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_factor: Option<f64>,
    /// Bytes per gradient element (default 4: Megatron-LM's fp32
    /// gradient buffers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_grad: Option<f64>,
    /// The matrix products' precision (`bf16` or `fp8`).
    #[serde(default, skip_serializing_if = "Precision::is_bf16")]
    pub precision: Precision,
    /// FFN size (default 4 x hidden).
    pub ffn: Option<u64>,
    /// FFN matrices: 2 (GELU) or 3 (SwiGLU). Default 2.
    #[serde(default = "two")]
    pub ffn_matrices: u32,
    /// Sequence length.
    pub seq: u64,
    /// Vocabulary.
    #[serde(default)]
    pub vocab: u64,
    /// Global batch, sequences.
    pub batch: u64,
    /// Micro-batch.
    pub micro_batch: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// GPUs in all.
    pub gpus: u64,
    /// Virtual stages per device (interleaved 1F1B).
    #[serde(default = "one")]
    pub virtual_stages: u64,
    /// Recomputation: `full`, `selective` or `none`.
    pub recompute: String,
    /// Sequence parallelism.
    #[serde(default)]
    pub sequence_parallel: bool,
    /// Fused attention.
    #[serde(default)]
    pub flash_attention: bool,
    /// ZeRO stage (0: Megatron's plain data parallelism).
    #[serde(default)]
    pub zero: u8,
    /// How the publication counts FLOPs: `hardware` (the recomputed
    /// forward included, as Megatron-LM's eq. 3) or `model` (forward and
    /// backward only: MFU). Default hardware.
    #[serde(default = "hardware")]
    pub flops: FlopCount,
    /// The run's training loop when it is not the cluster's (e.g.
    /// PyTorch DDP, which overlaps the gradient all-reduce with the
    /// backward pass, where Megatron's own DDP does not).
    #[serde(default)]
    pub training_loop: Option<Loop>,
    /// Published throughput, TFLOP/s per GPU.
    pub measured_tflops: f64,
    /// Published throughput, tokens per second per GPU (required by
    /// `flops = "published"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_tokens: Option<f64>,
}

/// How a publication counts an iteration's FLOPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlopCount {
    /// Every FLOP run, recomputation included.
    Hardware,
    /// The model's forward and backward only (model FLOPs utilization).
    Model,
    /// As the publication counts them, whatever its formula: its FLOPs
    /// per token (`measured_tflops / measured_tokens`) times the tokens
    /// dimsum predicts, so the error is the error in tokens per second.
    Published,
}

fn one() -> u64 {
    1
}

fn two() -> u32 {
    2
}

fn is_one(x: &u64) -> bool {
    *x == 1
}

fn is_false(x: &bool) -> bool {
    !*x
}

fn hardware() -> FlopCount {
    FlopCount::Hardware
}

fn no_overlap() -> Loop {
    Loop::NoOverlap
}

/// A validation file: a cluster and its published runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// Name of the result files.
    pub name: String,
    /// What the runs are.
    pub description: String,
    /// Where the figures come from.
    pub source: String,
    /// The cluster.
    pub cluster: Cluster,
    /// The runs.
    #[serde(rename = "run")]
    pub runs: Vec<Run>,
    /// The largest run (GPUs) [`rechoose`] searches again: a search of a
    /// large cluster's strategies takes minutes (default: every run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rechoose_max_gpus: Option<u64>,
}

impl Published {
    /// Reads and checks a validation file; errors name the file, line and field.
    ///
    /// A run of the `gpt3-175b` preset (its shape filled in from it), then
    /// one whose degrees do not divide its GPUs:
    ///
    /// ```
    /// use dimsum::pipeline::validate::Published;
    ///
    /// let text = r#"name = "tiny"
    /// description = "one run"
    /// source = "made up"
    /// [cluster]
    /// npu = "a100-80gb"
    /// node_gpus = 8
    /// node_gbps = 300.0
    /// node_latency_us = 1.0
    /// network_gbps = 25.0
    /// network_latency_us = 3.0
    /// time_model = "nccl"
    /// source = "made up"
    /// [[run]]
    /// name = "175B"
    /// preset = "gpt3-175b"
    /// seq = 2048
    /// batch = 1536
    /// micro_batch = 1
    /// tp = 8
    /// pp = 16
    /// gpus = 1024
    /// recompute = "full"
    /// measured_tflops = 140
    /// "#;
    /// let dir = std::env::temp_dir().join(format!("dimsum-doc-load-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("tiny.toml");
    /// std::fs::write(&path, text)?;
    /// let (p, _stamp) = Published::load(&path)?;
    /// assert_eq!((p.runs[0].layers, p.runs[0].hidden), (96, 12288));
    ///
    /// std::fs::write(&path, text.replace("pp = 16", "pp = 3"))?;
    /// let e = Published::load(&path).map(|_| ()).map_err(|e| e.to_string());
    /// assert!(e.is_err_and(|m| m.ends_with("tiny.toml: run `175B`: tp 8 x pp 3 must divide gpus 1024")));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: &Path) -> Result<(Published, Stamp), InputError> {
        let text = crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read: {e}")))?;
        let mut p: Published = toml::from_str(&text).map_err(|e| crate::error::toml_error(&text, path, &e))?;
        fill_presets(&mut p.runs, path)?;
        check_file(&p, path)?;
        for r in &p.runs {
            check_run(r, p.cluster.node_gpus, path)?;
        }
        Ok((p, Stamp::of(text.as_bytes())))
    }
}

/// Checks the file's own fields: a built-in accelerator, the cluster's
/// figures, at least one run, and a name a result file can take.
fn check_file(p: &Published, path: &Path) -> Result<(), InputError> {
    if compute::accelerator(&p.cluster.npu).is_none() {
        return Err(InputError::at(
            path,
            None,
            "cluster.npu",
            format!(
                "`{}` is not a built-in accelerator; allowed: {}",
                p.cluster.npu,
                crate::error::one_of(&compute::accelerator_names())
            ),
        ));
    }
    let c = &p.cluster;
    let positive = [
        c.node_gbps,
        c.network_gbps,
        c.node_latency_us + 1.0,
        c.network_latency_us + 1.0,
    ];
    if c.node_gpus < 1
        || positive.iter().any(|x| !(x.is_finite() && *x > 0.0))
        || c.node_latency_us < 0.0
        || c.network_latency_us < 0.0
    {
        return Err(InputError::at(
            path,
            None,
            "cluster",
            "node_gpus must be >= 1, bandwidths > 0 and latencies >= 0",
        ));
    }
    if p.runs.is_empty() {
        return Err(InputError::at(path, None, "run", "list at least one [[run]]"));
    }
    if !is_file_stem(&p.name) {
        return Err(InputError::at(
            path,
            None,
            "name",
            format!(
                "`{}` is not allowed: the result files are named after it, so letters, digits, `.`, `_` and `-` only (not `.` or `..`)",
                p.name
            ),
        ));
    }
    Ok(())
}

/// Fills the shape of each run that names a preset from it (refused when
/// the run gives a shape too, or the preset is unknown).
fn fill_presets(runs: &mut [Run], path: &Path) -> Result<(), InputError> {
    for r in runs {
        let Some(name) = &r.preset else { continue };
        if r.layers != 0 || r.hidden != 0 || r.heads != 0 || r.vocab != 0 || r.kv_heads.is_some() || r.ffn.is_some() {
            return Err(InputError::at(
                path,
                None,
                format!("run `{}`", r.name),
                "give preset or the shape (layers, hidden, heads, kv_heads, ffn, vocab), not both",
            ));
        }
        let m = ModelSpec::preset(name).ok_or_else(|| {
            InputError::at(
                path,
                None,
                format!("run `{}`", r.name),
                format!(
                    "`{name}` is not a preset; allowed: {}",
                    crate::error::one_of(&ModelSpec::PRESETS)
                ),
            )
        })?;
        r.layers = m.layers;
        r.hidden = m.hidden;
        r.heads = m.heads;
        r.kv_heads = Some(m.kv_heads);
        r.ffn = Some(m.ffn);
        r.ffn_matrices = m.ffn_matrices;
        r.vocab = m.vocab;
    }
    Ok(())
}

/// Checks one run: its recipe, sizes, FLOP count, order and figures,
/// and its degrees and GPUs against each other and the cluster's
/// `node_gpus`.
fn check_run(r: &Run, node_gpus: u32, path: &Path) -> Result<(), InputError> {
    let bad = |m: String| InputError::at(path, None, format!("run `{}`", r.name), m);
    r.recompute.parse::<Recompute>().map_err(|e| bad(e.to_string()))?;
    let sizes = [
        r.hidden,
        r.seq,
        r.vocab,
        r.batch,
        r.gpus,
        u64::from(r.layers),
        u64::from(r.heads),
    ];
    if sizes.contains(&0) || r.ffn == Some(0) || !(r.measured_tflops.is_finite() && r.measured_tflops > 0.0) {
        return Err(bad(
            "layers, hidden, heads, ffn, seq, vocab, batch, gpus and measured_tflops must be > 0".into(),
        ));
    }
    if r.virtual_stages == 0 || r.zero > 3 {
        return Err(bad("virtual_stages must be >= 1 and zero 0 to 3".into()));
    }
    if !(2..=3).contains(&r.ffn_matrices) {
        return Err(bad(format!(
            "ffn_matrices = {} is not allowed: 2 (GELU) or 3 (SwiGLU)",
            r.ffn_matrices
        )));
    }
    match (r.flops, r.measured_tokens) {
        (_, Some(t)) if !(t.is_finite() && t > 0.0) => {
            return Err(bad("measured_tokens must be > 0".into()));
        }
        (FlopCount::Published, None) => {
            return Err(bad(
                "flops = \"published\" needs measured_tokens (tokens per second per GPU)".into(),
            ));
        }
        _ => {}
    }
    if let Some(o) = &r.order {
        crate::study::parse_order(o).map_err(|e| bad(format!("order: {e}")))?;
    }
    if r.capacity_factor.is_some_and(|c| !(c.is_finite() && c >= 1.0)) {
        return Err(bad("capacity_factor must be >= 1".into()));
    }
    if r.bytes_grad.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
        return Err(bad("bytes_grad must be > 0".into()));
    }
    if r.micro_batch == 0 {
        return Err(bad("micro_batch must be >= 1".into()));
    }
    if r.cp == 0 {
        return Err(bad("cp must be >= 1".into()));
    }
    let tp_pp = r.tp.checked_mul(r.pp).and_then(|x| x.checked_mul(r.cp)).unwrap_or(0);
    if tp_pp == 0 || !r.gpus.is_multiple_of(tp_pp) {
        let cp = if r.cp == 1 {
            String::new()
        } else {
            format!(" x cp {}", r.cp)
        };
        return Err(bad(format!(
            "tp {} x pp {}{cp} must divide gpus {}",
            r.tp, r.pp, r.gpus
        )));
    }
    if r.gpus > u64::from(u32::MAX) {
        return Err(bad(format!("gpus {} is more than {} (u32)", r.gpus, u32::MAX)));
    }
    let node = u64::from(node_gpus.max(1));
    if r.gpus > node && !r.gpus.is_multiple_of(node) {
        return Err(bad(format!(
            "gpus {} is not a whole number of {node}-GPU nodes",
            r.gpus
        )));
    }
    Ok(())
}

/// Whether `name` can name a result file: `[A-Za-z0-9._-]+`, not `.` or `..`.
fn is_file_stem(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// One run, predicted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// The run.
    pub run: Run,
    /// The model's parameters, billions (its own count).
    pub params_b: f64,
    /// Data-parallel degree.
    pub dp: u64,
    /// Micro-batches per iteration.
    pub micro_batches: u64,
    /// Predicted iteration time, ms.
    pub iteration_ms: f64,
    /// Of which compute (the timed pipeline device's, bubble included), ms.
    pub compute_ms: f64,
    /// Predicted throughput per GPU, TFLOP/s (the publication's count).
    pub predicted_tflops: f64,
    /// Predicted / published - 1.
    pub error: f64,
    /// Memory per GPU, GiB.
    pub memory_gib: f64,
    /// The GPU's HBM, GiB (above it, dimsum's memory model overestimates
    /// the run).
    #[serde(skip)]
    pub hbm_gib: f64,
    /// A mixture-of-experts model.
    #[serde(skip_serializing_if = "is_false")]
    pub moe: bool,
}

/// Why a run could not be predicted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("run `{run}`: {reason}")]
pub struct RunRefused {
    /// The run.
    pub run: String,
    /// Why.
    pub reason: String,
}

/// The two-level fabric of `gpus` GPUs on `c`.
pub fn fabric(c: &Cluster, gpus: u64) -> Fabric {
    let node = u64::from(c.node_gpus).min(gpus).max(1) as u32;
    let mut dims = vec![Dim {
        name: "node".into(),
        block: Block::Switch,
        npus: node,
        latency_ns: c.node_latency_us * 1e3,
        min_gbps: None,
        max_gbps: None,
        tier: "node".into(),
        options_gbps: None,
        fat_tree: None,
    }];
    let nodes = gpus / u64::from(node);
    if nodes > 1 {
        dims.push(Dim {
            name: "network".into(),
            block: Block::Switch,
            npus: u32::try_from(nodes).unwrap_or(u32::MAX),
            latency_ns: c.network_latency_us * 1e3,
            min_gbps: None,
            max_gbps: None,
            tier: "network".into(),
            options_gbps: None,
            fat_tree: None,
        });
    }
    Fabric { dims }
}

/// The run's model and recipe, or why the run names a recomputation that
/// does not exist.
pub fn model_of(r: &Run) -> Result<(ModelSpec, Strategy), RunRefused> {
    let recompute = r.recompute.parse::<Recompute>().map_err(|e| RunRefused {
        run: r.name.clone(),
        reason: e.to_string(),
    })?;
    let preset = r.preset.as_deref().and_then(ModelSpec::preset);
    let model = match preset {
        Some(m) => ModelSpec {
            name: r.name.clone(),
            bytes_grad: r.bytes_grad.unwrap_or(m.bytes_grad),
            seq: r.seq,
            global_batch: r.batch,
            micro_batch: r.micro_batch,
            moe: m.moe.clone().map(|x| Moe {
                capacity_factor: r.capacity_factor.or(x.capacity_factor),
                ..x
            }),
            ..m
        },
        None => ModelSpec {
            name: r.name.clone(),
            layers: r.layers,
            hidden: r.hidden,
            heads: r.heads,
            kv_heads: r.kv_heads.unwrap_or(r.heads),
            ffn: r.ffn.unwrap_or(r.hidden.saturating_mul(4)),
            ffn_matrices: r.ffn_matrices,
            seq: r.seq,
            vocab: r.vocab,
            global_batch: r.batch,
            micro_batch: r.micro_batch,
            bytes_weight: 2.0,
            // Megatron accumulates and all-reduces gradients in fp32 buffers.
            bytes_grad: r.bytes_grad.unwrap_or(4.0),
            bytes_optimizer: 12.0,
            moe: None,
            head_dim: None,
            mla: None,
            tied_embeddings: true,
            mtp_layers: 0,
        },
    };
    let order = match &r.order {
        Some(o) => crate::study::parse_order(o).map_err(|e| RunRefused {
            run: r.name.clone(),
            reason: e.to_string(),
        })?,
        None => Strategy::new(1, 1, 1).order,
    };
    let strategy = Strategy {
        ep: r.ep,
        precision: r.precision,
        zero: r.zero,
        sequence_parallel: r.sequence_parallel,
        recompute,
        virtual_stages: r.virtual_stages,
        scatter_gather: true,
        flash_attention: r.flash_attention,
        cp: r.cp,
        tp_overlap: r.tp_overlap,
        prefetch: r.prefetch,
        ep_overlap: r.ep_overlap,
        order,
        ..Strategy::new(
            r.tp,
            r.pp,
            r.gpus / r.tp.saturating_mul(r.pp).saturating_mul(r.cp).max(1),
        )
    };
    Ok((model, strategy))
}

/// Predicts one run on `npu`.
pub fn predict(c: &Cluster, npu: &Npu, r: &Run) -> Result<Prediction, RunRefused> {
    let refused = |reason: String| RunRefused {
        run: r.name.clone(),
        reason,
    };
    let (model, strategy) = model_of(r)?;
    let fabric = fabric(c, r.gpus);
    // A published run fitted its GPUs: where dimsum's memory model says it
    // would not, the run is timed as if the HBM were larger and the report
    // flags the memory (a model error, not a reason to refuse the run).
    let g = match transformer::generate(&model, npu, &strategy, &fabric) {
        Err(transformer::StrategyError::Memory { .. }) => {
            let roomy = Npu {
                hbm_gib: npu.hbm_gib * 4.0,
                ..npu.clone()
            };
            transformer::generate(&model, &roomy, &strategy, &fabric)
        }
        other => other,
    }
    .map_err(|e| refused(e.to_string()))?;
    let cm = CollectiveModel::defaults(&fabric, c.time_model);
    let it = IterationModel::new(&g.workload, &fabric, &cm, r.training_loop.unwrap_or(c.training_loop));
    let bw: Vec<f64> = fabric
        .dims
        .iter()
        .map(|d| if d.name == "node" { c.node_gbps } else { c.network_gbps })
        .collect();
    let ns = it.iteration_ns(&bw);
    let flops = match (r.flops, r.measured_tokens) {
        (FlopCount::Hardware, _) => model.iteration_flops(strategy.recompute),
        (FlopCount::Model, _) => model.iteration_flops(Recompute::None),
        (FlopCount::Published, Some(tokens)) => {
            // TFLOP/s over tokens/s: TFLOP per token, 1e12 FLOPs each.
            r.measured_tflops / tokens * 1e12 * (r.batch * r.seq) as f64
        }
        (FlopCount::Published, None) => {
            return Err(refused("flops = \"published\" needs measured_tokens".into()));
        }
    };
    // FLOP per ns per GPU = TFLOP/s / 1e3.
    let predicted_tflops = flops / ns / r.gpus as f64 / 1e3;
    Ok(Prediction {
        run: r.clone(),
        params_b: model.params() / 1e9,
        dp: strategy.dp,
        micro_batches: g.micro_batches,
        iteration_ms: ns_to_ms(ns),
        compute_ms: ns_to_ms(it.compute_ns),
        predicted_tflops,
        error: predicted_tflops / r.measured_tflops - 1.0,
        memory_gib: g.memory.total() / BYTES_PER_GIB,
        hbm_gib: npu.hbm_gib,
        moe: model.moe.is_some(),
    })
}

/// The cluster's NPU at large-GEMM efficiency `gemm` (default: the
/// table's), or why the cluster names no built-in accelerator.
pub fn npu_of(c: &Cluster, gemm: Option<f64>) -> Result<Npu, RunRefused> {
    let a = compute::accelerator(&c.npu).ok_or_else(|| RunRefused {
        run: "(every run)".into(),
        reason: format!(
            "cluster npu `{}` is not a built-in accelerator; allowed: {}",
            c.npu,
            crate::error::one_of(&compute::accelerator_names())
        ),
    })?;
    Ok(Npu {
        name: a.name.into(),
        device: compute::Device {
            peak_tflops: a.bf16_tflops,
            hbm_gbps: a.hbm_gbps,
            sms: a.sms,
            gemm_efficiency: gemm.unwrap_or(a.gemm_efficiency),
            memory_efficiency: a.memory_efficiency,
            flat: None,
            onchip: None,
            fp8: a.fp8(),
        },
        hbm_gib: a.hbm_gib,
        headroom_gib: compute::DEFAULT_HEADROOM_GIB,
        tdp_w: Some(a.tdp_w),
        price_usd: a.price_usd,
    })
}

/// A validation file's runs, predicted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The file.
    pub published: Published,
    /// Each run.
    pub predictions: Vec<Prediction>,
    /// The calibration used: the table's large-GEMM efficiency in the suite's
    /// precision.
    pub gemm_efficiency: f64,
    /// The streaming-kernel efficiency used.
    pub memory_efficiency: f64,
    /// The large-GEMM efficiency that minimises the largest error on these
    /// runs (0.40 to 1.00 in steps of 0.005), and that error.
    pub best_fit: (f64, f64),
    /// The precision `gemm_efficiency` and `best_fit` concern
    /// ([`suite_precision`]).
    #[serde(skip_serializing_if = "Precision::is_bf16")]
    pub precision: Precision,
    /// Each run's strategy searched again by coopt on its cluster.
    pub rechosen: Vec<Rechosen>,
}

impl Validation {
    /// The largest absolute error over the runs.
    pub fn largest_error(&self) -> f64 {
        self.predictions.iter().map(|p| p.error.abs()).fold(0.0, f64::max)
    }

    /// The runs' errors, all of them (`None`) or the mixture-of-experts
    /// runs' (`Some(true)`) or the dense runs' (`Some(false)`): how many,
    /// the mean absolute error and the largest.
    pub fn errors(&self, moe: Option<bool>) -> ErrorSummary {
        let e: Vec<f64> = self
            .predictions
            .iter()
            .filter(|p| moe.is_none_or(|m| p.moe == m))
            .map(|p| p.error.abs())
            .collect();
        ErrorSummary {
            runs: e.len(),
            mean: e.iter().sum::<f64>() / e.len().max(1) as f64,
            largest: e.iter().copied().fold(0.0, f64::max),
        }
    }

    /// The errors line of a suite, e.g. `15 runs, mean error 21.4%, largest
    /// 185.5% (12 dense: 8.7%, 23.1%; 3 mixture-of-experts: 72.2%,
    /// 185.5%)`, the split where the suite has both kinds.
    pub fn errors_line(&self) -> String {
        let all = self.errors(None);
        let mut line = format!(
            "{} runs, mean error {:.1}%, largest {:.1}%",
            all.runs,
            100.0 * all.mean,
            100.0 * all.largest
        );
        let (dense, moe) = (self.errors(Some(false)), self.errors(Some(true)));
        if dense.runs > 0 && moe.runs > 0 {
            line.push_str(&format!(
                " ({} dense: {:.1}%, {:.1}%; {} mixture-of-experts: {:.1}%, {:.1}%)",
                dense.runs,
                100.0 * dense.mean,
                100.0 * dense.largest,
                moe.runs,
                100.0 * moe.mean,
                100.0 * moe.largest
            ));
        }
        line
    }
}

/// How many runs, their mean absolute error and the largest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorSummary {
    /// Runs.
    pub runs: usize,
    /// Mean absolute error (a fraction).
    pub mean: f64,
    /// Largest absolute error (a fraction).
    pub largest: f64,
}

/// A validation file, read and predicted.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The file, as given.
    pub input: String,
    /// Its runs, predicted.
    pub validation: Validation,
    /// Its stamp (dimsum's version, the file's hash).
    pub stamp: Stamp,
}

/// Reads every file and predicts its runs, all before anything is written;
/// bad input (or a run that cannot be built) names its file. `progress`
/// hears (files done, files) before each file.
pub fn validate_files(
    paths: &[std::path::PathBuf],
    progress: crate::progress::Progress,
) -> Result<Vec<Checked>, InputError> {
    let mut names = std::collections::BTreeMap::new();
    paths
        .iter()
        .enumerate()
        .map(|(i, f)| {
            progress.progress("validate", i, paths.len());
            let (published, stamp) = Published::load(f)?;
            if let Some(first) = names.insert(published.name.clone(), f.display().to_string()) {
                return Err(InputError::at(
                    f,
                    None,
                    "name",
                    format!(
                        "`{}` is also the name of {first}: the result files would overwrite each other",
                        published.name
                    ),
                ));
            }
            let validation = validate(&published).map_err(|e| InputError::at(f, None, "run", e.to_string()))?;
            Ok(Checked {
                input: f.display().to_string(),
                validation,
                stamp,
            })
        })
        .collect()
}

/// Predicts every run of `p`.
pub fn validate(p: &Published) -> Result<Validation, RunRefused> {
    let npu = npu_of(&p.cluster, None)?;
    let predictions = p
        .runs
        .par_iter()
        .map(|r| predict(&p.cluster, &npu, r))
        .collect::<Result<Vec<_>, _>>()?;
    let precision = suite_precision(p);
    let gemm_efficiency = match (precision, &npu.device.fp8) {
        (Precision::Fp8, Some(f)) => f.gemm_efficiency,
        _ => npu.device.gemm_efficiency,
    };
    Ok(Validation {
        published: p.clone(),
        predictions,
        gemm_efficiency,
        memory_efficiency: npu.device.memory_efficiency,
        best_fit: fit(p)?,
        precision,
        rechosen: rechoose(p, &npu)?,
    })
}

/// A published run's strategy searched again by coopt on its own cluster:
/// every TP x PP x DP and placement order with the run's recipe
/// (micro-batch, recomputation, ZeRO, virtual stages), the fabric fixed as
/// built, each candidate timed as the run is predicted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rechosen {
    /// The run.
    pub run: String,
    /// The published strategy's predicted iteration on the cluster, ms.
    pub published_ms: Option<f64>,
    /// The best strategy coopt finds (degrees, order, time, memory).
    pub best: Option<super::coopt::Row>,
    /// Candidates searched, solved, pruned and invalid.
    pub counts: [usize; 4],
    /// Not searched: the run is larger than the file's
    /// `rechoose_max_gpus`.
    #[serde(skip_serializing_if = "is_false")]
    pub skipped: bool,
}

/// The sequence from which [`rechoose`] searches context parallelism.
pub const LONG_SEQUENCE: u64 = 8192;

/// Every run of `p` searched again (see [`Rechosen`]) on `npu`: its
/// placements (TP x PP x DP, the order, EP for MoE models) with its recipe,
/// and context parallelism on long sequences.
pub fn rechoose(p: &Published, npu: &Npu) -> Result<Vec<Rechosen>, RunRefused> {
    let c = &p.cluster;
    let mut out = Vec::new();
    for r in &p.runs {
        let refused = |reason: String| RunRefused {
            run: r.name.clone(),
            reason,
        };
        if p.rechoose_max_gpus.is_some_and(|n| r.gpus > n) {
            out.push(Rechosen {
                run: r.name.clone(),
                published_ms: None,
                best: None,
                counts: [0; 4],
                skipped: true,
            });
            continue;
        }
        let (model, strategy) = model_of(r)?;
        let mut fabric = fabric(c, r.gpus);
        let mut bw = Vec::new();
        let mut tiers = std::collections::BTreeMap::new();
        for d in &mut fabric.dims {
            let b = if d.name == "node" { c.node_gbps } else { c.network_gbps };
            // The cluster as built: each dimension at its bandwidth.
            d.min_gbps = Some(b);
            d.max_gbps = Some(b);
            bw.push(b);
            tiers.insert(
                d.tier.clone(),
                crate::model::cost::Tier {
                    link_usd_per_gbps: 0.0,
                    switch_usd_per_gbps: 0.0,
                    nic_usd_per_gbps: 0.0,
                    link_pj_per_bit: 0.0,
                    switch_pj_per_bit: 0.0,
                    nic_pj_per_bit: 0.0,
                },
            );
        }
        let study = crate::study::Study {
            name: format!("{}-{}", p.name, r.name),
            description: format!("{} on {} GPUs, searched again", r.name, r.gpus),
            path: Path::new(&p.name).to_path_buf(),
            collective: CollectiveModel::defaults(&fabric, c.time_model),
            fabric,
            cost: crate::model::cost::CostModel { tiers },
            workload: crate::model::workload::Workload { layers: Vec::new() },
            training_loop: r.training_loop.unwrap_or(c.training_loop),
            bw: Some(bw),
            optimize: Default::default(),
            frontiers: Vec::new(),
            cases: Vec::new(),
            objectives: vec!["perf".into()],
            sweeps: Vec::new(),
            hash: String::new(),
            recipe_space: Some(RecipeSpace {
                // Context parallelism searched on long sequences (8,192
                // tokens and more, where runs use it: their activations),
                // at degrees the sequence takes.
                cp: {
                    let mut cp = vec![1, strategy.cp];
                    if strategy.flash_attention && model.seq >= LONG_SEQUENCE {
                        cp.extend([2, 4, 8].into_iter().filter(|c| model.seq.is_multiple_of(2 * c)));
                    }
                    cp.sort_unstable();
                    cp.dedup();
                    cp
                },
                ..RecipeSpace::only(&model, &strategy)
            }),
            model: Some(model),
            npu: Some(npu.clone()),
            parallelism: Some(strategy),
            replay_optimum: false,
            npu_choices: Vec::new(),
            economics: Default::default(),
            arch_space: None,
            evaluator: Default::default(),
            evaluator_line: None,
            procurement: None,
            derived_tiers: Vec::new(),
            warnings: Vec::new(),
            workload_missing: None,
            alternatives: Vec::new(),
            fabric_name: crate::study::FABRIC_SHAPE.into(),
            reliability: None,
        };
        let found = super::coopt::coopt(&study, &crate::progress::Quiet).map_err(|e| refused(e.to_string()))?;
        out.push(Rechosen {
            run: r.name.clone(),
            published_ms: found.default_optimized_ms,
            best: found.strategies.first().filter(|x| x.time_ms().is_some()).cloned(),
            counts: [found.searched, found.solved, found.pruned, found.rejected],
            skipped: false,
        });
    }
    Ok(out)
}

/// The precision a suite's calibration and fit concern: FP8 where every
/// run is FP8, else BF16.
pub fn suite_precision(p: &Published) -> Precision {
    if !p.runs.is_empty() && p.runs.iter().all(|r| r.precision == Precision::Fp8) {
        Precision::Fp8
    } else {
        Precision::Bf16
    }
}

/// The cluster's NPU with its large-product efficiency in `precision` set
/// to `e`.
fn npu_at(c: &Cluster, precision: Precision, e: f64) -> Result<Npu, RunRefused> {
    match precision {
        Precision::Bf16 => npu_of(c, Some(e)),
        Precision::Fp8 => {
            let mut npu = npu_of(c, None)?;
            if let Some(f) = npu.device.fp8.as_mut() {
                f.gemm_efficiency = e;
            }
            Ok(npu)
        }
    }
}

/// The large-product efficiency in the suite's precision
/// ([`suite_precision`]; 0.40 to 1.00 in steps of 0.005) whose largest
/// absolute error over the runs is least, and that error; the first run
/// that no efficiency can predict is refused. Every run's error grows with
/// the efficiency, so the largest absolute error falls then rises: a
/// ternary search over the 121 steps finds its least in about 14
/// evaluations (ties to the lower efficiency), each predicting the runs in
/// parallel.
pub fn fit(p: &Published) -> Result<(f64, f64), RunRefused> {
    let precision = suite_precision(p);
    let eff = |k: usize| 0.40 + 0.005 * k as f64;
    let mut seen: std::collections::BTreeMap<usize, f64> = std::collections::BTreeMap::new();
    let mut worst = |k: usize| -> Result<f64, RunRefused> {
        if let Some(w) = seen.get(&k) {
            return Ok(*w);
        }
        let npu = npu_at(&p.cluster, precision, eff(k))?;
        let errors = p
            .runs
            .par_iter()
            .map(|r| predict(&p.cluster, &npu, r).map(|x| x.error.abs()))
            .collect::<Result<Vec<_>, _>>()?;
        let w = errors.into_iter().fold(0.0, f64::max);
        seen.insert(k, w);
        Ok(w)
    };
    let (mut lo, mut hi) = (0_usize, 120_usize);
    while hi - lo > 2 {
        let (m1, m2) = (lo + (hi - lo) / 3, hi - (hi - lo) / 3);
        if worst(m1)? <= worst(m2)? {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    let mut best = (0.0, f64::INFINITY);
    for k in lo..=hi {
        let w = worst(k)?;
        if w < best.1 {
            best = (eff(k), w);
        }
    }
    Ok(best)
}

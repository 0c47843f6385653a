//! The workload, written or generated. Written: `[workload]` with its
//! `[[workload.layers]]` (each phase's compute time, collective, bytes and
//! group) and default communicators (`[workload.communicator]`), or LIBRA's
//! files named by `libra_workload` and `libra_communicator`. Generated: from
//! `[model]` (a preset or every field), `[npu]` and `[parallelism]` (tp, pp,
//! dp, ZeRO, sequence parallelism, recomputation, placement `order`).

use super::zero;
use super::{Refusal, StudyFile};
use crate::error::{InputError, one_of};
use crate::interop::libra;
use crate::model::arch::{self, Arch, ArchSpace};
use crate::model::compute::{self, Device};
use crate::model::fabric::Fabric;
use crate::model::transformer::{Mla, ModelSpec, Moe, Npu, Par, Precision, RecipeSpace, Recompute, Strategy};
use crate::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, PhaseKind, Workload};
use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    communicator: Option<RawCommunicator>,
    libra_workload: Option<Spanned<String>>,
    libra_communicator: Option<Spanned<String>>,
    layers: Option<Vec<RawLayer>>,
}

impl RawWorkload {
    /// The LIBRA files named, as written: the workload's, then the
    /// communicator's.
    pub(super) fn libra_files(&self) -> impl Iterator<Item = &String> {
        [&self.libra_workload, &self.libra_communicator]
            .into_iter()
            .flatten()
            .map(Spanned::get_ref)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommunicator {
    forward: Option<Spanned<Vec<i64>>>,
    input_grad: Option<Spanned<Vec<i64>>>,
    weight_grad: Option<Spanned<Vec<i64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayer {
    name: Option<String>,
    forward: Option<RawPhase>,
    input_grad: Option<RawPhase>,
    weight_grad: Option<RawPhase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    #[serde(default = "zero")]
    compute_ns: Spanned<f64>,
    collective: Option<Spanned<RawCollective>>,
    #[serde(default = "zero")]
    bytes: Spanned<f64>,
    group: Option<Spanned<Vec<i64>>>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum RawCollective {
    None,
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    SendRecv,
}

impl RawCollective {
    fn kind(self) -> Option<CollectiveKind> {
        match self {
            RawCollective::None => None,
            RawCollective::AllReduce => Some(CollectiveKind::AllReduce),
            RawCollective::ReduceScatter => Some(CollectiveKind::ReduceScatter),
            RawCollective::AllGather => Some(CollectiveKind::AllGather),
            RawCollective::AllToAll => Some(CollectiveKind::AllToAll),
            RawCollective::SendRecv => Some(CollectiveKind::SendRecv),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    preset: Option<String>,
    /// A transformers config.json, relative to the study.
    pub(super) config: Option<String>,
    head_dim: Option<u64>,
    tied_embeddings: Option<bool>,
    mtp_layers: Option<u32>,
    q_lora_rank: Option<u64>,
    kv_lora_rank: Option<u64>,
    qk_nope_head_dim: Option<u64>,
    qk_rope_head_dim: Option<u64>,
    v_head_dim: Option<u64>,
    name: Option<String>,
    layers: Option<u32>,
    hidden: Option<u64>,
    heads: Option<u32>,
    kv_heads: Option<u32>,
    ffn: Option<u64>,
    ffn_matrices: Option<u32>,
    seq: Option<u64>,
    vocab: Option<u64>,
    global_batch: Option<u64>,
    micro_batch: Option<u64>,
    bytes_weight: Option<f64>,
    bytes_grad: Option<f64>,
    bytes_optimizer: Option<f64>,
    experts: Option<u32>,
    top_k: Option<u32>,
    expert_ffn: Option<u64>,
    shared_experts: Option<u32>,
    moe_every: Option<u32>,
    first_dense: Option<u32>,
    capacity_factor: Option<f64>,
    expert_imbalance: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParallelism {
    tp: u64,
    pp: u64,
    dp: u64,
    #[serde(default = "one_u64")]
    ep: u64,
    #[serde(default = "one")]
    zero: u8,
    #[serde(default = "yes")]
    sequence_parallel: bool,
    #[serde(default)]
    recompute: RawRecompute,
    #[serde(default = "one_u64")]
    virtual_stages: u64,
    #[serde(default = "yes")]
    scatter_gather: bool,
    #[serde(default = "yes")]
    flash_attention: bool,
    order: Option<String>,
    precision: Option<String>,
    #[serde(default = "one_u64")]
    cp: u64,
    #[serde(default)]
    tp_overlap: bool,
    #[serde(default)]
    prefetch: bool,
    #[serde(default)]
    ep_overlap: bool,
}

/// `[coopt]`: the recipes `coopt` searches. `recipe = "whole"` starts from
/// [`RecipeSpace::whole`], else from the study's own recipe; each list given
/// replaces its part.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCoopt {
    recipe: Option<String>,
    life_years: Option<f64>,
    usd_per_kwh: Option<f64>,
    budget_usd: Option<f64>,
    budget_w: Option<f64>,
    micro_batch: Option<Vec<u64>>,
    recompute: Option<Vec<RawRecompute>>,
    zero: Option<Vec<u8>>,
    sequence_parallel: Option<Vec<bool>>,
    virtual_stages: Option<Vec<u64>>,
    precision: Option<Vec<String>>,
    cp: Option<Vec<u64>>,
    replay: Option<bool>,
}

/// `[coopt] replay`: whether `run` replays the joint optimum (default
/// true).
pub(super) fn replay_optimum(raw: Option<&RawCoopt>) -> bool {
    raw.and_then(|c| c.replay).unwrap_or(true)
}

/// How coopt compares accelerators (`[npu] type = [...]`): what a token
/// costs over the cluster's life, and the whole cluster's budgets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Economics {
    /// Years the capex is written off over (`[coopt] life_years`, default
    /// 4: an assumption, the common depreciation period of servers).
    pub life_years: f64,
    /// Electricity, $ per kWh (`[coopt] usd_per_kwh`, default 0.10: an
    /// assumption).
    pub usd_per_kwh: f64,
    /// The whole cluster's capex budget, accelerators and fabric, $.
    pub budget_usd: Option<f64>,
    /// The whole cluster's power budget, accelerators and fabric, W.
    pub budget_w: Option<f64>,
}

impl Default for Economics {
    fn default() -> Economics {
        Economics {
            life_years: 4.0,
            usd_per_kwh: 0.10,
            budget_usd: None,
            budget_w: None,
        }
    }
}

/// `[coopt]`'s economics, each figure checked.
pub(super) fn economics(raw: &RawCoopt, listed: bool, src: StudyFile<'_>) -> Result<Economics, InputError> {
    let d = Economics::default();
    let given = [
        ("life_years", raw.life_years),
        ("usd_per_kwh", raw.usd_per_kwh),
        ("budget_usd", raw.budget_usd),
        ("budget_w", raw.budget_w),
    ];
    if let (false, Some((key, _))) = (listed, given.iter().find(|(_, v)| v.is_some())) {
        return Err(src.at_line(
            "[coopt]",
            format!("coopt.{key}"),
            "compares accelerators: give it with [npu] type = [...]",
        ));
    }
    let check = |v: Option<f64>, key: &str| -> Result<Option<f64>, InputError> {
        match v {
            Some(x) if !(x.is_finite() && x > 0.0) => Err(src.at_line(
                "[coopt]",
                format!("coopt.{key}"),
                format!("{x} is not allowed: it must be > 0"),
            )),
            other => Ok(other),
        }
    };
    Ok(Economics {
        life_years: check(raw.life_years, "life_years")?.unwrap_or(d.life_years),
        usd_per_kwh: check(raw.usd_per_kwh, "usd_per_kwh")?.unwrap_or(d.usd_per_kwh),
        budget_usd: check(raw.budget_usd, "budget_usd")?,
        budget_w: check(raw.budget_w, "budget_w")?,
    })
}

/// The recipe space of `[coopt]` for `model` whose own recipe is `own`.
pub(super) fn recipe_space(
    raw: &RawCoopt,
    model: Option<&ModelSpec>,
    own: Option<&Strategy>,
    src: StudyFile<'_>,
) -> Result<RecipeSpace, InputError> {
    let err = |field: &str, msg: String| src.at_line("[coopt]", format!("coopt.{field}"), msg);
    let Some(model) = model else {
        return Err(err("recipe", "[coopt] needs [model] and [npu]".into()));
    };
    let base;
    let own = match own {
        Some(o) => o,
        None => {
            base = default_strategy();
            &base
        }
    };
    let mut space = match raw.recipe.as_deref() {
        None | Some("study") => RecipeSpace::only(model, own),
        Some("whole") => RecipeSpace::whole(model),
        Some(other) => {
            return Err(err(
                "recipe",
                format!("`{other}` is not a recipe space: use \"whole\" or \"study\""),
            ));
        }
    };
    fn listed<T: Clone + PartialEq>(
        v: &[T],
        field: &str,
        err: &dyn Fn(&str, String) -> InputError,
    ) -> Result<Vec<T>, InputError> {
        if v.is_empty() || v.len() > 64 {
            return Err(err(field, format!("give 1 to 64 values, not {}", v.len())));
        }
        let mut out: Vec<T> = Vec::new();
        for x in v {
            if !out.contains(x) {
                out.push(x.clone());
            }
        }
        Ok(out)
    }
    if let Some(v) = &raw.micro_batch {
        space.micro_batch = listed(v, "micro_batch", &err)?;
        if let Some(bad) = space.micro_batch.iter().find(|&&b| b == 0 || b > model.global_batch) {
            return Err(err(
                "micro_batch",
                format!("{bad} is not allowed: 1 to the global batch, {}", model.global_batch),
            ));
        }
    }
    if let Some(v) = &raw.recompute {
        let r = v
            .iter()
            .map(|r| r.resolve("coopt.recompute"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|r| err("recompute", r.to_string()))?;
        space.recompute = listed(&r, "recompute", &err)?;
    }
    if let Some(v) = &raw.zero {
        space.zero = listed(v, "zero", &err)?;
        if let Some(bad) = space.zero.iter().find(|&&z| z > 3) {
            return Err(err("zero", format!("{bad} is not a ZeRO stage: 0 to 3")));
        }
    }
    if let Some(v) = &raw.sequence_parallel {
        space.sequence_parallel = listed(v, "sequence_parallel", &err)?;
    }
    if let Some(v) = &raw.virtual_stages {
        space.virtual_stages = listed(v, "virtual_stages", &err)?;
        if let Some(bad) = space
            .virtual_stages
            .iter()
            .find(|&&x| x == 0 || x > u64::from(model.layers))
        {
            return Err(err(
                "virtual_stages",
                format!("{bad} is not allowed: 1 to the model's {} layers", model.layers),
            ));
        }
    }
    if let Some(v) = &raw.precision {
        let p = v
            .iter()
            .map(|x| x.parse::<Precision>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| err("precision", e.to_string()))?;
        space.precision = listed(&p, "precision", &err)?;
    }
    if let Some(v) = &raw.cp {
        space.cp = listed(v, "cp", &err)?;
        if let Some(bad) = space.cp.iter().find(|&&x| x == 0 || !model.seq.is_multiple_of(2 * x)) {
            return Err(err(
                "cp",
                format!(
                    "{bad} is not allowed: >= 1, with the sequence {} split into 2 cp equal chunks",
                    model.seq
                ),
            ));
        }
    }
    if space.len() > RecipeSpace::MAX_RECIPES {
        return Err(err(
            "recipe",
            format!(
                "{} recipes, more than a search may hold ({}): give fewer values",
                space.len(),
                RecipeSpace::MAX_RECIPES
            ),
        ));
    }
    Ok(space)
}

/// `recompute = "full" | "selective" | "none"`, or `true` / `false` (full / none).
#[derive(Deserialize, Default)]
#[serde(untagged)]
pub(super) enum RawRecompute {
    #[default]
    Off,
    Flag(bool),
    Named(String),
}

impl RawRecompute {
    /// The recomputation, refused as `key` (where the study wrote it).
    fn resolve(&self, key: &str) -> Result<Recompute, Refusal> {
        match self {
            RawRecompute::Off | RawRecompute::Flag(false) => Ok(Recompute::None),
            RawRecompute::Flag(true) => Ok(Recompute::Full),
            RawRecompute::Named(n) => n
                .parse::<Recompute>()
                .map_err(|e| Refusal::of(key, format!("recompute: {e}"))),
        }
    }
}

/// `[npu]`: a built-in `type` (its figures overridable one by one) or every
/// figure given; `efficiency` (the one-constant model) overrides the
/// kernel-by-kernel compute model.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNpu {
    #[serde(rename = "type")]
    kind: Option<OneOrMany<String>>,
    price_usd: Option<OneOrMany<f64>>,
    tdp_w: Option<f64>,
    peak_tflops: Option<f64>,
    hbm_gib: Option<f64>,
    hbm_gbps: Option<f64>,
    sms: Option<u32>,
    gemm_efficiency: Option<f64>,
    memory_efficiency: Option<f64>,
    efficiency: Option<f64>,
    headroom_gib: Option<f64>,
    arch: Option<RawArch>,
}

impl RawNpu {
    /// Whether any per-type figure (peak_tflops, hbm_gib, ..., tdp_w) is
    /// given.
    fn has_figures(&self) -> bool {
        [
            self.peak_tflops,
            self.hbm_gib,
            self.hbm_gbps,
            self.gemm_efficiency,
            self.memory_efficiency,
            self.efficiency,
            self.tdp_w,
        ]
        .iter()
        .any(Option::is_some)
            || self.sms.is_some()
    }
}

/// `[npu.arch]`: a parametric accelerator, each structural figure one value
/// or a list of them (coopt searches every combination).
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawArch {
    tensor_units: OneOrMany<u32>,
    array_width: OneOrMany<u32>,
    array_depth: OneOrMany<u32>,
    vector_units: OneOrMany<u32>,
    vector_width: OneOrMany<u32>,
    sram_mib: OneOrMany<f64>,
    hbm_stacks: OneOrMany<u32>,
    stack_gbps: f64,
    stack_gib: f64,
    clock_ghz: f64,
    gemm_efficiency: Option<f64>,
    memory_efficiency: Option<f64>,
    area_mm2: Option<RawBudget>,
    power_w: Option<RawBudget>,
}

/// A per-chip budget: a figure, or `"own"`: the study's own architecture's
/// (the first combination's), as PHAZE bounds its space by a reference
/// chip's area.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum RawBudget {
    Value(f64),
    Named(String),
}

/// Most values one list of `[npu.arch]` may give.
pub const MAX_ARCH_VALUES: usize = 64;

/// Most architectures `[npu.arch]` may span (the product of its lists,
/// before the budgets).
pub const MAX_ARCHS: usize = 1 << 16;

/// `[npu.arch]`, checked: the space, and the first combination within the
/// budgets as the study's own NPU.
fn arch_space(n: &RawNpu, a: &RawArch) -> Result<(ArchSpace, Npu), Refusal> {
    if n.kind.is_some() || n.has_figures() || n.price_usd.is_some() {
        return Err(Refusal::new(
            "with [npu.arch], give no type or figure in [npu] but headroom_gib: the architecture sets them",
        ));
    }
    let refuse = |key: &str, message: String| Refusal::of(format!("npu.arch.{key}"), message);
    let listed = |n: usize, distinct: bool, key: &str| -> Result<(), Refusal> {
        if !(1..=MAX_ARCH_VALUES).contains(&n) {
            return Err(refuse(
                key,
                format!("arch.{key}: give 1 to {MAX_ARCH_VALUES} values, not {n}"),
            ));
        }
        if !distinct {
            return Err(refuse(key, format!("arch.{key}: a value is listed twice")));
        }
        Ok(())
    };
    let counts = |v: &OneOrMany<u32>, key: &str| -> Result<Vec<u32>, Refusal> {
        let l = v.list();
        let distinct = l.iter().collect::<std::collections::HashSet<_>>().len() == l.len();
        listed(l.len(), distinct, key)?;
        if let Some(bad) = l.iter().find(|x| **x == 0 || **x > 1 << 20) {
            return Err(refuse(
                key,
                format!("arch.{key} = {bad} is not allowed: use 1 to {}", 1 << 20),
            ));
        }
        Ok(l)
    };
    let within = |v: f64, most: f64, key: &str| -> Result<f64, Refusal> {
        if v.is_finite() && v > 0.0 && v <= most {
            Ok(v)
        } else {
            Err(refuse(
                key,
                format!("arch.{key} = {v} is not allowed: use more than 0 to {most}"),
            ))
        }
    };
    let sram = a.sram_mib.list();
    let distinct = sram
        .iter()
        .map(|x| x.to_bits())
        .collect::<std::collections::HashSet<_>>()
        .len()
        == sram.len();
    listed(sram.len(), distinct, "sram_mib")?;
    for v in &sram {
        within(*v, 1e6, "sram_mib")?;
    }
    let fraction = |v: Option<f64>, key: &str| -> Result<f64, Refusal> {
        match v {
            None => Ok(1.0),
            Some(x) if x.is_finite() && x > 0.0 && x <= 1.0 => Ok(x),
            Some(x) => Err(refuse(
                key,
                format!("arch.{key} = {x} is not allowed: it must be in (0, 1]"),
            )),
        }
    };
    let space = ArchSpace {
        tensor_units: counts(&a.tensor_units, "tensor_units")?,
        array_width: counts(&a.array_width, "array_width")?,
        array_depth: counts(&a.array_depth, "array_depth")?,
        vector_units: counts(&a.vector_units, "vector_units")?,
        vector_width: counts(&a.vector_width, "vector_width")?,
        sram_mib: sram,
        hbm_stacks: counts(&a.hbm_stacks, "hbm_stacks")?,
        stack_gbps: within(a.stack_gbps, 1e5, "stack_gbps")?,
        stack_gib: within(a.stack_gib, 1e4, "stack_gib")?,
        clock_ghz: within(a.clock_ghz, 10.0, "clock_ghz")?,
        gemm_efficiency: fraction(a.gemm_efficiency, "gemm_efficiency")?,
        memory_efficiency: fraction(a.memory_efficiency, "memory_efficiency")?,
        area_mm2: None,
        power_w: None,
    };
    if space.size() > MAX_ARCHS {
        return Err(Refusal::new(format!(
            "[npu.arch] spans {} architectures, more than {MAX_ARCHS}: give its lists fewer values",
            space.size()
        )));
    }
    let tech = &arch::N7;
    let own = space.first();
    let budget = |b: &Option<RawBudget>, key: &str, of_own: f64| -> Result<Option<f64>, Refusal> {
        match b {
            None => Ok(None),
            Some(RawBudget::Value(v)) => positive(*v, &format!("arch.{key}")).map(Some),
            Some(RawBudget::Named(n)) if n == "own" => Ok(Some(of_own)),
            Some(RawBudget::Named(n)) => Err(refuse(
                key,
                format!("arch.{key} = \"{n}\" is not allowed: give a number or \"own\" (the first combination's)"),
            )),
        }
    };
    let space = ArchSpace {
        area_mm2: budget(&a.area_mm2, "area_mm2", own.area(tech).total_mm2)?,
        power_w: budget(&a.power_w, "power_w", own.power(tech).total_w)?,
        ..space
    };
    let first = space
        .all()
        .into_iter()
        .find(|x| space.within(x, tech))
        .ok_or_else(|| Refusal::new("no architecture of [npu.arch] is within its area_mm2 and power_w budgets"))?;
    let headroom_gib = n.headroom_gib.unwrap_or(0.0);
    let least = f64::from(space.hbm_stacks.iter().copied().min().unwrap_or(1)) * space.stack_gib;
    if !(headroom_gib.is_finite() && (0.0..least).contains(&headroom_gib)) {
        return Err(Refusal::of(
            "npu.headroom_gib",
            format!(
                "headroom_gib = {headroom_gib} is not allowed: use 0 to less than the least HBM of [npu.arch] ({least} GiB)"
            ),
        ));
    }
    let npu = arch_npu(&space, &first, headroom_gib);
    Ok((space, npu))
}

/// The NPU of architecture `a` of `space`.
pub fn arch_npu(space: &ArchSpace, a: &Arch, headroom_gib: f64) -> Npu {
    Npu {
        name: a.name(),
        device: a.device(space.gemm_efficiency, space.memory_efficiency),
        hbm_gib: a.hbm_gib(),
        headroom_gib,
        tdp_w: Some(a.power(&arch::N7).total_w),
        price_usd: None,
    }
}

/// One value, or a list of them (`[npu] type = [...]`).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    fn list(&self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Most accelerator types a study may list.
const MAX_TYPES: usize = 16;

/// `[npu]`: one NPU, or with `type = [...]` the accelerators coopt chooses
/// among (built-in types only, each priced by `price_usd = [...]`); the
/// first is the study's own.
fn npus(n: &RawNpu) -> Result<Vec<Npu>, Refusal> {
    let prices = n.price_usd.as_ref().map(OneOrMany::list);
    let Some(OneOrMany::Many(types)) = &n.kind else {
        let kind = match &n.kind {
            Some(OneOrMany::One(k)) => Some(k.clone()),
            _ => None,
        };
        if prices.is_some() {
            return Err(Refusal::of(
                "npu.price_usd",
                "price_usd prices the accelerators coopt chooses among: give it with a list, type = [...]",
            ));
        }
        return Ok(vec![npu(n, kind)?]);
    };
    if types.is_empty() || types.len() > MAX_TYPES {
        return Err(Refusal::of(
            "npu.type",
            format!("type: give 1 to {MAX_TYPES} accelerator types, not {}", types.len()),
        ));
    }
    if n.has_figures() {
        return Err(Refusal::new(
            "with a list of types, give no per-type figure (peak_tflops, hbm_gib, ...): each type keeps its built-in ones",
        ));
    }
    let prices = prices.ok_or_else(|| {
        Refusal::of(
            "npu.price_usd",
            format!(
                "price_usd = [...] is missing: one price per type ({} types), as no list price is published for them",
                types.len()
            ),
        )
    })?;
    if prices.len() != types.len() {
        return Err(Refusal::of(
            "npu.price_usd",
            format!(
                "price_usd: {} prices for {} types: give one per type",
                prices.len(),
                types.len()
            ),
        ));
    }
    let mut out: Vec<Npu> = Vec::new();
    for (t, p) in types.iter().zip(&prices) {
        if out.iter().any(|x| x.name == *t) {
            return Err(Refusal::of("npu.type", format!("type `{t}` is listed twice")));
        }
        let mut one = npu(n, Some(t.clone()))?;
        one.price_usd = Some(positive(*p, "price_usd")?);
        out.push(one);
    }
    Ok(out)
}

/// `v` if it is a positive figure; else refused as `npu.{key}`.
fn positive(v: f64, key: &str) -> Result<f64, Refusal> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Refusal::of(
            format!("npu.{key}"),
            format!("{key} = {v} is not allowed: it must be > 0"),
        ))
    }
}

fn npu(n: &RawNpu, kind: Option<String>) -> Result<Npu, Refusal> {
    let base = match &kind {
        Some(k) => Some(compute::accelerator(k).ok_or_else(|| {
            Refusal::of(
                "npu.type",
                format!(
                    "type `{k}` is not a built-in accelerator; allowed: {}",
                    one_of(&compute::accelerator_names())
                ),
            )
        })?),
        None => None,
    };
    let pick = |given: Option<f64>, from: Option<f64>, key: &str| -> Result<f64, Refusal> {
        let v = given.or(from).ok_or_else(|| {
            Refusal::of(
                format!("npu.{key}"),
                format!(
                    "give `{key}` or a built-in `type` ({})",
                    one_of(&compute::accelerator_names())
                ),
            )
        })?;
        positive(v, key)
    };
    let fraction = |v: f64, key: &str| {
        if v <= 1.0 {
            Ok(v)
        } else {
            Err(Refusal::of(
                format!("npu.{key}"),
                format!("{key} = {v} is not allowed: it must be in (0, 1]"),
            ))
        }
    };
    let peak_tflops = pick(n.peak_tflops, base.map(|a| a.bf16_tflops), "peak_tflops")?;
    let hbm_gib = pick(n.hbm_gib, base.map(|a| a.hbm_gib), "hbm_gib")?;
    let headroom_gib = n.headroom_gib.unwrap_or(if base.is_some() {
        compute::DEFAULT_HEADROOM_GIB
    } else {
        0.0
    });
    if !(headroom_gib.is_finite() && (0.0..hbm_gib).contains(&headroom_gib)) {
        return Err(Refusal::of(
            "npu.headroom_gib",
            format!("headroom_gib = {headroom_gib} is not allowed: use 0 to less than hbm_gib"),
        ));
    }
    let name = kind.clone().unwrap_or_else(|| "custom".into());
    let tdp_w = match n.tdp_w {
        Some(w) => Some(positive(w, "tdp_w")?),
        None => base.map(|a| a.tdp_w),
    };
    if let Some(eff) = n.efficiency {
        let eff = fraction(pick(Some(eff), None, "efficiency")?, "efficiency")?;
        let mut out = Npu::flat(peak_tflops, eff, hbm_gib);
        out.name = name;
        out.headroom_gib = headroom_gib;
        out.tdp_w = tdp_w;
        return Ok(out);
    }
    let device = Device {
        peak_tflops,
        hbm_gbps: pick(n.hbm_gbps, base.map(|a| a.hbm_gbps), "hbm_gbps")?,
        sms: n.sms.or(base.map(|a| a.sms)).unwrap_or(1).max(1),
        gemm_efficiency: fraction(
            pick(n.gemm_efficiency, base.map(|a| a.gemm_efficiency), "gemm_efficiency")?,
            "gemm_efficiency",
        )?,
        memory_efficiency: fraction(
            pick(
                n.memory_efficiency,
                base.map(|a| a.memory_efficiency),
                "memory_efficiency",
            )?,
            "memory_efficiency",
        )?,
        flat: None,
        onchip: None,
        fp8: base.and_then(|a| a.fp8()),
    };
    Ok(Npu {
        name,
        device,
        hbm_gib,
        headroom_gib,
        tdp_w,
        price_usd: None,
    })
}

fn one_u64() -> u64 {
    1
}

fn one() -> u8 {
    1
}

fn yes() -> bool {
    true
}

/// The generator sections, checked: what a workload is generated from.
pub(super) struct Generator {
    /// `[model]`.
    pub(super) model: Option<ModelSpec>,
    /// `[npu]` (the first of its types).
    pub(super) npu: Option<Npu>,
    /// `[npu] type = [...]`: every type listed (empty for one NPU).
    pub(super) npu_choices: Vec<Npu>,
    /// `[npu.arch]`: the architectures coopt searches.
    pub(super) arch_space: Option<ArchSpace>,
    /// `[parallelism]`.
    pub(super) parallelism: Option<Strategy>,
}

/// `[model]`, `[npu]` and `[parallelism]`, each checked if present (errors
/// on the section's header line).
pub(super) fn generator(
    model: Option<&RawModel>,
    npu: Option<&RawNpu>,
    parallelism: Option<&RawParallelism>,
    src: StudyFile<'_>,
) -> Result<Generator, InputError> {
    let model = match model {
        None => None,
        Some(m) => {
            let config = match &m.config {
                Some(c) => Some(crate::model::hf::read(&src.dir().join(c))?),
                None => None,
            };
            Some(model_spec(m, config).map_err(|r| src.at_line("[model]", "model", r.to_string()))?)
        }
    };
    let mut arch_space = None;
    let listed = match npu {
        None => Vec::new(),
        Some(n @ RawNpu { arch: Some(a), .. }) => {
            let (space, own) =
                self::arch_space(n, a).map_err(|r| src.at_line("[npu.arch]", "npu.arch", r.to_string()))?;
            arch_space = Some(space);
            vec![own]
        }
        Some(n) => npus(n).map_err(|r| src.at_line("[npu]", "npu", r.to_string()))?,
    };
    let is_list = matches!(
        npu,
        Some(RawNpu {
            kind: Some(OneOrMany::Many(_)),
            ..
        })
    );
    let npu = listed.first().cloned();
    let npu_choices = if is_list { listed } else { Vec::new() };

    let parallelism = match parallelism {
        None => None,
        Some(p) => Some(strategy(p).map_err(|r| src.at_line("[parallelism]", "parallelism", r.to_string()))?),
    };
    Ok(Generator {
        model,
        npu,
        npu_choices,
        arch_space,
        parallelism,
    })
}

/// The workload: `[workload]` as written, or generated from `[model]`,
/// `[npu]` and `[parallelism]`; exactly one of the two. A model whose own
/// strategy cannot run (no `[parallelism]`, or one out of HBM) still loads,
/// for `coopt` to search: its workload is empty and the second value says
/// why, which every other command reports (`Study::workload_missing`).
pub(super) fn workload(
    raw: Option<&RawWorkload>,
    generator: &Generator,
    fabric: &Fabric,
    src: StudyFile<'_>,
) -> Result<(Workload, Option<InputError>), InputError> {
    let none = || Workload { layers: Vec::new() };
    match (raw, &generator.model, &generator.npu, &generator.parallelism) {
        (Some(w), None, _, _) => Ok((read_workload(w, fabric, src)?, None)),
        (None, Some(m), Some(n), Some(st)) => match crate::model::transformer::generate(m, n, st, fabric) {
            Ok(g) => Ok((g.workload, None)),
            Err(e @ crate::model::transformer::StrategyError::Memory { .. }) => Ok((
                none(),
                Some(src.at_line(
                    "[parallelism]",
                    "parallelism",
                    format!(
                        "the study's own strategy (tp {}, pp {}, dp {}) does not fit: {e}; `dimsum coopt` searches the strategies that do",
                        st.tp, st.pp, st.dp
                    ),
                )),
            )),
            Err(e) => Err(src.at_line("[parallelism]", "parallelism", e.to_string())),
        },
        (None, Some(_), Some(_), None) => Ok((
            none(),
            Some(src.at_line(
                "[model]",
                "parallelism",
                "the study has a [model] but no [parallelism] (tp, pp, dp): `dimsum coopt` searches every split; give one for this command",
            )),
        )),
        (Some(_), Some(_), _, _) => Err(src.at_line("[model]", "model", "give either [workload] or [model], not both")),
        (None, Some(_), _, _) => Err(src.at_line(
            "[model]",
            "model",
            "a [model] needs [npu] (a built-in type, or peak_tflops, hbm_gib and efficiency) and [parallelism] (tp, pp, dp)",
        )),
        (None, None, _, _) => Err(InputError::at(
            src.path,
            None,
            "workload",
            "no workload: add [workload] (layers or LIBRA files) or [model]",
        )),
    }
}

/// A written `[workload]`: its default communicators, then its layers.
fn read_workload(raw: &RawWorkload, fabric: &Fabric, src: StudyFile<'_>) -> Result<Workload, InputError> {
    let defaults = communicators(raw, fabric, src)?;
    let layers = match (&raw.layers, &raw.libra_workload) {
        (Some(_), Some(f)) => {
            return Err(src.at(
                f.span(),
                "workload.libra_workload",
                "give either [[workload.layers]] or libra_workload, not both",
            ));
        }
        (None, None) => {
            return Err(src.at_line(
                "[workload]",
                "workload",
                "no layers: add [[workload.layers]] or name a LIBRA workload with libra_workload",
            ));
        }
        (None, Some(f)) => {
            let file = src.dir().join(f.get_ref());
            let layers = libra::read_workload(&file)?;
            libra::attach_communicators(&layers, &defaults, &file)?
        }
        (Some(raw_layers), None) => {
            let mut layers = Vec::new();
            for (i, l) in raw_layers.iter().enumerate() {
                let phase = |kind, p: &Option<RawPhase>| phase(i, kind, p.as_ref(), &defaults, fabric, src);
                layers.push(Layer {
                    name: l.name.clone().unwrap_or_else(|| format!("layer{i}")),
                    forward: phase(PhaseKind::Forward, &l.forward)?,
                    input_grad: phase(PhaseKind::InputGrad, &l.input_grad)?,
                    weight_grad: phase(PhaseKind::WeightGrad, &l.weight_grad)?,
                });
            }
            layers
        }
    };
    Ok(Workload { layers })
}

/// The default communicator of each phase: inline, from a LIBRA file, or none.
fn communicators(raw: &RawWorkload, fabric: &Fabric, src: StudyFile<'_>) -> Result<[Option<Group>; 3], InputError> {
    let mut defaults: [Option<Group>; 3] = [None, None, None];
    match (&raw.communicator, &raw.libra_communicator) {
        (Some(_), Some(f)) => {
            return Err(src.at(
                f.span(),
                "workload.libra_communicator",
                "give either [workload.communicator] or libra_communicator, not both",
            ));
        }
        (Some(c), None) => {
            for (i, (name, g)) in [
                ("forward", &c.forward),
                ("input_grad", &c.input_grad),
                ("weight_grad", &c.weight_grad),
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(g) = g {
                    let group = Group::from_libra(g.get_ref())
                        .and_then(|grp| grp.check(fabric).map(|_| grp))
                        .map_err(|m| src.at(g.span(), format!("workload.communicator.{name}"), m.to_string()))?;
                    defaults[i] = Some(group);
                }
            }
        }
        (None, Some(f)) => {
            let file = src.dir().join(f.get_ref());
            let comm = libra::read_communicator(&file)?;
            comm.check(fabric, &file)?;
            defaults = comm.groups.map(Some);
        }
        (None, None) => {}
    }
    Ok(defaults)
}

/// One phase of layer `i` (absent: no compute, no collective); a collective
/// without its own group takes the phase's default communicator.
fn phase(
    i: usize,
    kind: PhaseKind,
    p: Option<&RawPhase>,
    defaults: &[Option<Group>; 3],
    fabric: &Fabric,
    src: StudyFile<'_>,
) -> Result<Phase, InputError> {
    let field = |f: &str| format!("workload.layers[{i}].{}.{f}", kind.name());
    let Some(p) = p else {
        return Ok(Phase::default());
    };
    let compute = *p.compute_ns.get_ref();
    if !(compute.is_finite() && compute >= 0.0) {
        return Err(src.at(
            p.compute_ns.span(),
            field("compute_ns"),
            format!("{compute} is not allowed: use a compute time >= 0 ns"),
        ));
    }
    let bytes = *p.bytes.get_ref();
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(src.at(
            p.bytes.span(),
            field("bytes"),
            format!("{bytes} is not allowed: a size is >= 0 bytes"),
        ));
    }
    let kind_c = p.collective.as_ref().and_then(|c| c.get_ref().kind());
    let comm = match kind_c {
        None => {
            if bytes > 0.0 {
                return Err(src.at(
                    p.bytes.span(),
                    field("bytes"),
                    format!(
                        "{bytes} bytes given but no collective: set collective = {}",
                        one_of(&<CollectiveKind as crate::error::Named>::names())
                    ),
                ));
            }
            None
        }
        Some(_) if bytes == 0.0 => None,
        Some(k) => {
            let group = match &p.group {
                Some(g) => Group::from_libra(g.get_ref())
                    .and_then(|grp| grp.check(fabric).map(|_| grp))
                    .map_err(|m| src.at(g.span(), field("group"), m.to_string()))?,
                None => defaults[kind as usize].clone().ok_or_else(|| {
                    let span = p.collective.as_ref().map_or(p.bytes.span(), |c| c.span());
                    src.at(
                        span,
                        field("group"),
                        format!(
                            "no communicator for this {k}: set group = [...] here or {} in [workload.communicator]",
                            kind.name()
                        ),
                    )
                })?,
            };
            Some(Comm { kind: k, bytes, group })
        }
    };
    Ok(Phase {
        compute_ns: compute,
        comm,
        ..Default::default()
    })
}

/// A model from a preset or a config.json (`config`, read), with
/// overrides, or from every field.
fn model_spec(m: &RawModel, config: Option<ModelSpec>) -> Result<ModelSpec, Refusal> {
    let base = base_model(m, config)?;
    let mut spec = model_fields(m, base.as_ref())?;
    spec.mla = mla_spec(m, base.as_ref().and_then(|b| b.mla.clone()))?;
    check_attention(m, &mut spec)?;
    spec.moe = moe_spec(m, base.as_ref().and_then(|b| b.moe.clone()), &spec)?;
    check_sizes(&spec)?;
    Ok(spec)
}

/// The model `[model]` starts from: its preset, the config.json read
/// (`config`), or none (every field given).
fn base_model(m: &RawModel, config: Option<ModelSpec>) -> Result<Option<ModelSpec>, Refusal> {
    match (&m.preset, config) {
        (Some(_), Some(_)) => Err(Refusal::new(
            "give preset or config, not both (fields given beside either override it)",
        )),
        (Some(p), None) => Ok(Some(ModelSpec::preset(p).ok_or_else(|| {
            Refusal::of(
                "model.preset",
                format!("`{p}` is not a preset; allowed: {}", one_of(&ModelSpec::PRESETS)),
            )
        })?)),
        (None, c) => Ok(c),
    }
}

/// The model's fields: each given one, else the `base` model's (a
/// config.json's but `seq` and `global_batch`, which are the training
/// run's), bytes per element defaulting to mixed precision; every missing
/// field named in one message. Attention and experts come later.
fn model_fields(m: &RawModel, base: Option<&ModelSpec>) -> Result<ModelSpec, Refusal> {
    // A config.json gives the shape, not the training run.
    let from_config = m.config.is_some();
    // Every missing field is collected, so one message names them all.
    let mut missing: Vec<&str> = Vec::new();
    macro_rules! field {
        ($f:ident) => {
            match (m.$f.clone(), base) {
                (Some(v), _) => v,
                (None, Some(b)) if !(from_config && matches!(stringify!($f), "seq" | "global_batch")) => b.$f.clone(),
                (None, _) => {
                    missing.push(stringify!($f));
                    Default::default()
                }
            }
        };
    }
    // Bytes per parameter default to mixed precision with fp32 master
    // weights and Adam, as Megatron-LM keeps them (module doc of
    // `model::transformer`): bf16 weights (2), fp32 gradients (4), fp32
    // master weights, momentum and variance (12).
    macro_rules! bytes {
        ($f:ident, $default:expr) => {
            match (m.$f, base) {
                (Some(v), _) => v,
                (None, Some(b)) => b.$f,
                (None, None) => $default,
            }
        };
    }
    let heads = field!(heads);
    let layers = field!(layers);
    let spec = ModelSpec {
        name: m
            .name
            .clone()
            .or_else(|| m.preset.clone())
            .unwrap_or_else(|| "model".into()),
        layers,
        hidden: field!(hidden),
        heads,
        kv_heads: match (m.kv_heads, base) {
            (Some(kv), _) => kv,
            (None, Some(b)) if m.heads.is_some() && b.kv_heads != b.heads => {
                return Err(Refusal::of(
                    "model.kv_heads",
                    format!(
                        "heads is overridden on a preset with {} key-value heads: give kv_heads too",
                        b.kv_heads
                    ),
                ));
            }
            (None, Some(b)) => b.kv_heads,
            (None, None) => heads,
        },
        ffn: field!(ffn),
        ffn_matrices: field!(ffn_matrices),
        seq: field!(seq),
        vocab: field!(vocab),
        global_batch: field!(global_batch),
        micro_batch: field!(micro_batch),
        bytes_weight: bytes!(bytes_weight, 2.0),
        bytes_grad: bytes!(bytes_grad, 4.0),
        bytes_optimizer: bytes!(bytes_optimizer, 12.0),
        moe: None,
        head_dim: m.head_dim.or(base.and_then(|b| b.head_dim)),
        mla: None,
        tied_embeddings: m.tied_embeddings.unwrap_or(base.is_none_or(|b| b.tied_embeddings)),
        mtp_layers: m.mtp_layers.or(base.map(|b| b.mtp_layers)).unwrap_or(0),
    };
    if missing.is_empty() {
        return Ok(spec);
    }
    let names = missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let them = if missing.len() == 1 { "it" } else { "them" };
    let message = if from_config {
        format!("{names} missing: a config.json gives the model's shape, not its training run: give {them}")
    } else {
        format!(
            "{names} missing: give {them} or a preset ({})",
            one_of(&ModelSpec::PRESETS)
        )
    };
    Err(Refusal {
        key: match missing[..] {
            [one] => Some(format!("model.{one}")),
            _ => None,
        },
        message,
    })
}

/// Multi-head latent attention (`spec.mla`, already read) and the heads'
/// widths: MLA gives every head its own key and value, a `head_dim` equal
/// to hidden / heads is the default's, and the widths must agree.
fn check_attention(m: &RawModel, spec: &mut ModelSpec) -> Result<(), Refusal> {
    // Multi-head latent attention gives every head its own key and value.
    if spec.mla.is_some() && m.kv_heads.is_none() {
        spec.kv_heads = spec.heads;
    }
    // A head width equal to hidden / heads is the default's.
    if spec.head_dim.and_then(|d| d.checked_mul(u64::from(spec.heads))) == Some(spec.hidden) {
        spec.head_dim = None;
    }
    if spec.head_dim == Some(0) {
        return Err(Refusal::of("model.head_dim", "head_dim = 0 is not allowed: 1 or more"));
    }
    if spec.mla.is_some() && spec.head_dim.is_some() {
        return Err(Refusal::of(
            "model.head_dim",
            "head_dim is not allowed with multi-head latent attention: its widths are qk_nope_head_dim, qk_rope_head_dim and v_head_dim",
        ));
    }
    if spec.mla.is_some() && spec.kv_heads != spec.heads {
        return Err(Refusal::of(
            "model.kv_heads",
            "kv_heads is not allowed with multi-head latent attention: every head has its own key and value",
        ));
    }
    if spec.head_dim.is_none()
        && spec.mla.is_none()
        && spec.heads > 0
        && !spec.hidden.is_multiple_of(u64::from(spec.heads))
    {
        return Err(Refusal::new(format!(
            "hidden {} is not a multiple of the {} heads: give head_dim",
            spec.hidden, spec.heads
        )));
    }
    Ok(())
}

/// The key-value heads, sizes, FFN matrices and bytes per element of a
/// model read whole.
fn check_sizes(spec: &ModelSpec) -> Result<(), Refusal> {
    if spec.kv_heads == 0 || !spec.heads.is_multiple_of(spec.kv_heads) {
        return Err(Refusal::of(
            "model.kv_heads",
            format!(
                "kv_heads {} is not allowed: a divisor of the {} heads (equal to them for multi-head attention)",
                spec.kv_heads, spec.heads
            ),
        ));
    }
    if spec.layers == 0
        || spec.hidden == 0
        || spec.heads == 0
        || spec.ffn == 0
        || spec.seq == 0
        || spec.global_batch == 0
        || spec.micro_batch == 0
    {
        return Err(Refusal::new(
            "layers, hidden, heads, ffn, seq, global_batch and micro_batch must be > 0",
        ));
    }
    if !(2..=3).contains(&spec.ffn_matrices) {
        return Err(Refusal::of(
            "model.ffn_matrices",
            format!(
                "ffn_matrices {} is not allowed: 2 (GELU MLP) or 3 (SwiGLU)",
                spec.ffn_matrices
            ),
        ));
    }
    if [spec.bytes_weight, spec.bytes_grad, spec.bytes_optimizer]
        .iter()
        .any(|b| !(b.is_finite() && *b >= 0.0))
    {
        return Err(Refusal::new("bytes per element must be >= 0"));
    }
    Ok(())
}

/// The model's multi-head latent attention: the config's, with the ranks
/// and widths given over it, or one from all four of `kv_lora_rank`,
/// `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim` (`q_lora_rank`
/// 0 or absent: queries projected directly).
fn mla_spec(m: &RawModel, base: Option<Mla>) -> Result<Option<Mla>, Refusal> {
    let given = [
        ("q_lora_rank", m.q_lora_rank),
        ("kv_lora_rank", m.kv_lora_rank),
        ("qk_nope_head_dim", m.qk_nope_head_dim),
        ("qk_rope_head_dim", m.qk_rope_head_dim),
        ("v_head_dim", m.v_head_dim),
    ];
    let mut x = match base {
        Some(b) => b,
        None if given.iter().all(|(_, v)| v.is_none()) => return Ok(None),
        None => {
            let missing: Vec<String> = given[1..]
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| format!("`{k}`"))
                .collect();
            if !missing.is_empty() {
                return Err(Refusal::new(format!(
                    "{} missing: multi-head latent attention needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim",
                    missing.join(", ")
                )));
            }
            Mla {
                q_lora_rank: 0,
                kv_lora_rank: 0,
                qk_nope_head_dim: 0,
                qk_rope_head_dim: 0,
                v_head_dim: 0,
            }
        }
    };
    x.q_lora_rank = m.q_lora_rank.unwrap_or(x.q_lora_rank);
    x.kv_lora_rank = m.kv_lora_rank.unwrap_or(x.kv_lora_rank);
    x.qk_nope_head_dim = m.qk_nope_head_dim.unwrap_or(x.qk_nope_head_dim);
    x.qk_rope_head_dim = m.qk_rope_head_dim.unwrap_or(x.qk_rope_head_dim);
    x.v_head_dim = m.v_head_dim.unwrap_or(x.v_head_dim);
    if x.kv_lora_rank == 0 || x.qk_nope_head_dim + x.qk_rope_head_dim == 0 || x.v_head_dim == 0 {
        return Err(Refusal::new(
            "kv_lora_rank, v_head_dim and qk_nope_head_dim + qk_rope_head_dim must be >= 1",
        ));
    }
    Ok(Some(x))
}

/// The model's mixture of experts: the preset's, with the fields given
/// over it, or one from `experts` on; every MoE field checked.
fn moe_spec(m: &RawModel, base: Option<Moe>, spec: &ModelSpec) -> Result<Option<Moe>, Refusal> {
    let given = [
        ("top_k", m.top_k.is_some()),
        ("expert_ffn", m.expert_ffn.is_some()),
        ("shared_experts", m.shared_experts.is_some()),
        ("moe_every", m.moe_every.is_some()),
        ("first_dense", m.first_dense.is_some()),
        ("capacity_factor", m.capacity_factor.is_some()),
        ("expert_imbalance", m.expert_imbalance.is_some()),
    ];
    let mut x = match (base, m.experts) {
        (Some(b), _) => b,
        (None, Some(_)) => Moe {
            experts: 0,
            top_k: m.top_k.ok_or_else(|| {
                Refusal::of(
                    "model.top_k",
                    "`top_k` is missing: a MoE model (experts = ...) needs the experts per token",
                )
            })?,
            expert_ffn: spec.ffn,
            shared_experts: 0,
            moe_every: 1,
            first_dense: 0,
            capacity_factor: None,
            imbalance: 1.0,
        },
        (None, None) => {
            return match given.iter().find(|(_, g)| *g) {
                Some((name, _)) => Err(Refusal::of(
                    format!("model.{name}"),
                    format!("`{name}` needs `experts` (a dense model has no experts)"),
                )),
                None => Ok(None),
            };
        }
    };
    if let Some(e) = m.experts {
        x.experts = e;
    }
    x.top_k = m.top_k.unwrap_or(x.top_k);
    x.expert_ffn = m.expert_ffn.unwrap_or(x.expert_ffn);
    x.shared_experts = m.shared_experts.unwrap_or(x.shared_experts);
    x.moe_every = m.moe_every.unwrap_or(x.moe_every);
    x.first_dense = m.first_dense.unwrap_or(x.first_dense);
    if m.capacity_factor.is_some() {
        x.capacity_factor = m.capacity_factor;
    }
    x.imbalance = m.expert_imbalance.unwrap_or(x.imbalance);
    if x.experts < 2 {
        return Err(Refusal::of(
            "model.experts",
            format!("experts = {} is not allowed: a MoE layer has 2 or more", x.experts),
        ));
    }
    if x.top_k == 0 || x.top_k > x.experts {
        return Err(Refusal::of(
            "model.top_k",
            format!("top_k = {} is not allowed: 1 to the {} experts", x.top_k, x.experts),
        ));
    }
    if x.expert_ffn == 0 || x.moe_every == 0 {
        return Err(Refusal::new("expert_ffn and moe_every must be >= 1"));
    }
    if x.first_dense >= spec.layers {
        return Err(Refusal::of(
            "model.first_dense",
            format!(
                "first_dense = {} is not allowed: fewer than the {} layers",
                x.first_dense, spec.layers
            ),
        ));
    }
    if let Some(c) = x.capacity_factor {
        if m.expert_imbalance.is_some() {
            return Err(Refusal::new(
                "give capacity_factor (padded buffers, tokens over them dropped) or expert_imbalance (dropless), not both",
            ));
        }
        if !(c.is_finite() && c > 0.0 && c <= f64::from(x.experts)) {
            return Err(Refusal::of(
                "model.capacity_factor",
                format!(
                    "capacity_factor = {c} is not allowed: above 0 and at most the {} experts",
                    x.experts
                ),
            ));
        }
    }
    if !(x.imbalance.is_finite() && x.imbalance >= 1.0 && x.imbalance <= f64::from(x.experts)) {
        return Err(Refusal::of(
            "model.expert_imbalance",
            format!(
                "expert_imbalance = {} is not allowed: 1 (balanced) to the {} experts",
                x.imbalance, x.experts
            ),
        ));
    }
    Ok(Some(x))
}

/// Why a placement order is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// A part that is not `tp`, `pp` or `dp`.
    #[error("`{0}` is not a parallelism; use tp, pp and dp, e.g. \"tp,pp,dp\"")]
    NotAParallelism(String),
    /// Not each of `tp`, `pp` and `dp` exactly once (the whole order).
    #[error("`{0}` must name tp, pp and dp once each, innermost first")]
    NotEachOnce(String),
}

/// Parses `tp,pp,dp`-style placement orders.
///
/// ```
/// use dimsum::model::transformer::Par;
/// use dimsum::study::{OrderError, parse_order};
///
/// assert_eq!(parse_order("tp, dp, pp"), Ok([Par::Tp, Par::Dp, Par::Pp]));
/// assert_eq!(parse_order("tp,pp"), Err(OrderError::NotEachOnce("tp,pp".into())));
/// assert_eq!(
///     parse_order("tp,ep,dp").map_err(|e| e.to_string()),
///     Err("`ep` is not a parallelism; use tp, pp and dp, e.g. \"tp,pp,dp\"".to_string())
/// );
/// ```
pub fn parse_order(s: &str) -> Result<[Par; 3], OrderError> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    for p in &parts {
        out.push(match *p {
            "tp" => Par::Tp,
            "pp" => Par::Pp,
            "dp" => Par::Dp,
            other => return Err(OrderError::NotAParallelism(other.to_string())),
        });
    }
    match out[..] {
        [a, b, c] if a != b && b != c && a != c => Ok([a, b, c]),
        _ => Err(OrderError::NotEachOnce(s.to_string())),
    }
}

/// A `[parallelism]`: degrees >= 1, a ZeRO stage, a placement order.
/// The recipe a search starts from where the study names no strategy:
/// `[parallelism]`'s defaults (ZeRO-1, sequence parallelism, no
/// recomputation, ...) at tp = pp = dp = 1 (the search sets the degrees).
pub(crate) fn default_strategy() -> Strategy {
    let raw = RawParallelism {
        tp: 1,
        pp: 1,
        dp: 1,
        ep: one_u64(),
        zero: one(),
        sequence_parallel: yes(),
        recompute: RawRecompute::default(),
        virtual_stages: one_u64(),
        scatter_gather: yes(),
        flash_attention: yes(),
        order: None,
        precision: None,
        cp: one_u64(),
        tp_overlap: false,
        prefetch: false,
        ep_overlap: false,
    };
    // Every value above is one `strategy` accepts.
    #[allow(clippy::expect_used)]
    strategy(&raw).expect("the default strategy is valid")
}

fn strategy(p: &RawParallelism) -> Result<Strategy, Refusal> {
    if p.tp == 0 || p.pp == 0 || p.dp == 0 || p.ep == 0 || p.cp == 0 {
        return Err(Refusal::new("tp, pp, dp, ep and cp must be >= 1"));
    }
    if p.virtual_stages == 0 {
        return Err(Refusal::of("parallelism.virtual_stages", "virtual_stages must be >= 1"));
    }
    if p.zero > 3 {
        return Err(Refusal::of(
            "parallelism.zero",
            format!("zero {} is not allowed: ZeRO stages are 0 to 3", p.zero),
        ));
    }
    Ok(Strategy {
        tp: p.tp,
        pp: p.pp,
        dp: p.dp,
        ep: p.ep,
        zero: p.zero,
        sequence_parallel: p.sequence_parallel,
        recompute: p.recompute.resolve("parallelism.recompute")?,
        virtual_stages: p.virtual_stages,
        scatter_gather: p.scatter_gather,
        flash_attention: p.flash_attention,
        order: parse_order(p.order.as_deref().unwrap_or("tp,pp,dp"))
            .map_err(|e| Refusal::of("parallelism.order", e.to_string()))?,
        precision: match &p.precision {
            Some(x) => x
                .parse::<Precision>()
                .map_err(|e| Refusal::of("parallelism.precision", format!("precision: {e}")))?,
            None => Precision::Bf16,
        },
        cp: p.cp,
        tp_overlap: p.tp_overlap,
        prefetch: p.prefetch,
        ep_overlap: p.ep_overlap,
    })
}

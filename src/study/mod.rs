//! The study file (TOML): a fabric, its cost tiers, a workload, the time model
//! and the training loop, read and validated with line-numbered errors.
//!
//! Validation that serde can do (unknown names, wrong types, unknown keys)
//! comes back from the TOML parser with its span; the checks serde cannot do
//! (an NPU count below 2, a communicator that does not fit the fabric, a
//! negative size, a missing cost tier) keep the span of the value they check
//! (`toml::Spanned`) so every error names its line. LIBRA's input files can be
//! named instead of an inline workload (`libra_workload`,
//! `libra_communicator`), by paths relative to the study file.
//!
//! The format is documented in README.md; `to_toml` writes it back, which is
//! how `dimsum import libra` produces a study.

use crate::error::{InputError, line_of_offset, one_of};
use crate::interop::libra;
pub mod objective;

use crate::model::bom::{DimSpec, Procurement};
use crate::model::catalog::Catalog;
use crate::model::collective::{Algorithm, CollectiveModel, TimeModel};
use crate::model::cost::{CostModel, Linear, Tier};
use crate::model::eval::{Evaluation, evaluate};
use crate::model::fabric::{Block, Dim, Fabric};
use crate::model::training::{IterationModel, Loop};
use crate::model::transformer::{ModelSpec, Npu, Par, Strategy};
use crate::model::workload::{CollectiveKind, Comm, Group, Layer, Phase, PhaseKind, Workload};
use crate::optimize::expr::{self, Constraint};
use crate::optimize::frontier::Axis;
use crate::optimize::scheduled::{self, Evaluator};
use crate::schedule::simulate::LinkModel;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A validated study.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    /// Name (defaults to the file stem).
    pub name: String,
    /// What the study asks, in a sentence or two.
    pub description: String,
    /// The file it was read from.
    pub path: PathBuf,
    /// The fabric.
    pub fabric: Fabric,
    /// Cost tiers.
    pub cost: CostModel,
    /// The workload.
    pub workload: Workload,
    /// Time model and per-dimension algorithms.
    pub collective: CollectiveModel,
    /// Training loop.
    pub training_loop: Loop,
    /// The allocation `eval` uses without `--bw`, GB/s per NPU.
    pub bw: Option<Vec<f64>>,
    /// What `optimize` does without command-line options.
    pub optimize: OptimizeSpec,
    /// Frontiers `run` draws.
    pub frontiers: Vec<FrontierSpec>,
    /// Fixed allocations `run` evaluates and shows beside the frontier.
    pub cases: Vec<Case>,
    /// Objectives `run` solves (default: the `[optimize]` objective, else perf).
    pub objectives: Vec<String>,
    /// Sweeps `run` performs.
    pub sweeps: Vec<SweepSpec>,
    /// FNV-1a hash of the study file and the files it names.
    pub hash: String,
    /// The model the workload was generated from, if any.
    pub model: Option<ModelSpec>,
    /// The NPU the model runs on.
    pub npu: Option<Npu>,
    /// The study's default parallelization.
    pub parallelism: Option<Strategy>,
    /// How collectives are timed (`[evaluator]`).
    pub evaluator: scheduled::Spec,
    /// What the fabric is bought from (`[procurement]`), if the study says.
    pub procurement: Option<Procurement>,
}

/// A `[[frontier]]` to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSpec {
    /// Budget axis.
    pub axis: Axis,
    /// Number of points.
    pub points: usize,
}

/// A `[[case]]`: a named fixed allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name.
    pub name: String,
    /// GB/s per NPU per dimension.
    pub bw: Vec<f64>,
}

/// A `[[sweep]]` over fabric shapes and budgets.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    /// Name (the CSV is `sweep-<name>.csv`).
    pub name: String,
    /// Total NPUs to split into the study's number of dimensions.
    pub npus: u64,
    /// Building blocks each dimension may take.
    pub blocks: Vec<Block>,
    /// Budget axis.
    pub axis: Axis,
    /// Budgets on that axis.
    pub budgets: Vec<f64>,
    /// Workloads to sweep besides the study's own (from the study files the
    /// sweep names), each with the fabric its communicators were written for.
    pub workloads: Vec<SweepWorkload>,
}

/// A workload a sweep takes from another study.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepWorkload {
    /// The other study's name.
    pub name: String,
    /// Its workload.
    pub workload: Workload,
    /// Its fabric (where its communicators sit).
    pub fabric: Fabric,
}

/// The study's `[optimize]` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptimizeSpec {
    /// Objective name (checked when the study is read).
    pub objective: Option<String>,
    /// Iteration-time target for min-cost and min-power, ms.
    pub target_ms: Option<f64>,
    /// Constraint expressions, parsed against the fabric.
    pub constraints: Vec<Constraint>,
}

impl Study {
    /// LIBRA's four input files as a study (`dimsum import libra`): the
    /// files' network, cost model and workload with its communicators,
    /// LIBRA's time model and no overlap, one `perf` objective.
    pub fn from_libra_files(
        network: &Path,
        workload: &Path,
        communicator: &Path,
        cost: &Path,
    ) -> Result<Study, InputError> {
        let inputs = libra::read_inputs(network, workload, communicator, cost)?;
        let collective = CollectiveModel::defaults(&inputs.fabric, TimeModel::Libra);
        Ok(Study {
            name: inputs.name,
            description: String::new(),
            path: workload.to_path_buf(),
            fabric: inputs.fabric,
            cost: inputs.cost,
            workload: inputs.workload,
            collective,
            training_loop: Loop::NoOverlap,
            bw: None,
            optimize: Default::default(),
            frontiers: Vec::new(),
            cases: Vec::new(),
            objectives: vec!["perf".into()],
            sweeps: Vec::new(),
            hash: inputs.hash,
            model: None,
            npu: None,
            parallelism: None,
            evaluator: Default::default(),
            procurement: None,
        })
    }

    /// What `interop::astra` writes an ASTRA-sim input set from.
    pub fn astra_design(&self) -> crate::interop::astra::Design<'_> {
        crate::interop::astra::Design {
            name: &self.name,
            fabric: &self.fabric,
            workload: &self.workload,
            algorithms: &self.collective.algorithms,
            training_loop: self.training_loop,
        }
    }

    /// Reads and validates a study file.
    pub fn load(path: &Path) -> Result<Study, InputError> {
        Study::load_with(path, true)
    }

    /// Reads a study; `sweeps: false` skips its `[[sweep]]` tables, which is
    /// how a sweep reads the studies it takes workloads from (so two studies
    /// that name each other cannot recurse).
    fn load_with(path: &Path, sweeps: bool) -> Result<Study, InputError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the study file: {e}")))?;
        Study::parse_with(&text, path, sweeps)
    }

    /// Validates study text; `path` names it in errors and anchors the LIBRA
    /// file paths it names.
    pub fn parse(text: &str, path: &Path) -> Result<Study, InputError> {
        Study::parse_with(text, path, true)
    }

    fn parse_with(text: &str, path: &Path, with_sweeps: bool) -> Result<Study, InputError> {
        let raw: RawStudy = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            InputError::at(path, line, "", e.message().replace('\n', " "))
        })?;
        let at = |span: std::ops::Range<usize>, field: String, msg: String| {
            InputError::at(path, Some(line_of_offset(text, span.start)), field, msg)
        };

        // Fabric.
        let raw_dims = raw.fabric.dims;
        if raw_dims.get_ref().is_empty() {
            return Err(at(
                raw_dims.span(),
                "fabric.dims".into(),
                "the fabric needs at least one dimension".into(),
            ));
        }
        let mut dims = Vec::new();
        let mut algorithms = Vec::new();
        for (i, sd) in raw_dims.get_ref().iter().enumerate() {
            let d = sd.get_ref();
            let field = |f: &str| format!("fabric.dims[{i}].{f}");
            let npus = *d.npus.get_ref();
            if npus < 2 || npus > i64::from(u32::MAX) {
                return Err(at(
                    d.npus.span(),
                    field("npus"),
                    format!("{npus} NPUs is not allowed: a dimension has at least 2 NPUs"),
                ));
            }
            if dims.iter().any(|x: &Dim| x.name == d.name) {
                return Err(at(
                    sd.span(),
                    field("name"),
                    format!("`{}` names two dimensions: names must be unique", d.name),
                ));
            }
            if d.name.parse::<f64>().is_ok() || d.name.is_empty() || d.name.contains(char::is_whitespace) {
                return Err(at(
                    sd.span(),
                    field("name"),
                    format!("`{}` is not a usable name: use letters, digits, - or _", d.name),
                ));
            }
            let latency = *d.latency_ns.get_ref();
            if !(latency.is_finite() && latency >= 0.0) {
                return Err(at(
                    d.latency_ns.span(),
                    field("latency_ns"),
                    format!("{latency} is not allowed: use a latency >= 0"),
                ));
            }
            for (name, b) in [("min_gbps", &d.min_gbps), ("max_gbps", &d.max_gbps)] {
                if let Some(b) = b {
                    let v = *b.get_ref();
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(at(
                            b.span(),
                            field(name),
                            format!("{v} is not allowed: use a bandwidth >= 0 GB/s"),
                        ));
                    }
                }
            }
            if let (Some(lo), Some(hi)) = (&d.min_gbps, &d.max_gbps)
                && lo.get_ref() > hi.get_ref()
            {
                return Err(at(
                    hi.span(),
                    field("max_gbps"),
                    format!("{} is below min_gbps {}", hi.get_ref(), lo.get_ref()),
                ));
            }
            let tier = d.tier.as_ref().map_or(d.name.clone(), |t| t.get_ref().clone());
            if !raw.cost.tiers.contains_key(&tier) {
                let span = d.tier.as_ref().map_or(sd.span(), |t| t.span());
                let known: Vec<&str> = raw.cost.tiers.keys().map(String::as_str).collect();
                return Err(at(
                    span,
                    field("tier"),
                    format!(
                        "cost tier `{tier}` is not defined in [cost.tiers]; defined: {}",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            one_of(&known)
                        }
                    ),
                ));
            }
            let options = match &d.options_gbps {
                Some(o) => {
                    let mut v = o.get_ref().clone();
                    if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
                        return Err(at(
                            o.span(),
                            field("options_gbps"),
                            "list at least one bandwidth, each > 0 GB/s".into(),
                        ));
                    }
                    v.sort_by(f64::total_cmp);
                    v.dedup();
                    Some(v)
                }
                None => None,
            };
            let algorithm = match &d.algorithm {
                Some(a) => {
                    if !a.get_ref().fits(d.block) {
                        return Err(at(
                            a.span(),
                            field("algorithm"),
                            format!(
                                "`{}` does not run on a {} dimension: use {}",
                                a.get_ref(),
                                d.block,
                                one_of(Algorithm::allowed(d.block))
                            ),
                        ));
                    }
                    *a.get_ref()
                }
                None => Algorithm::default_for(d.block),
            };
            algorithms.push(algorithm);
            dims.push(Dim {
                name: d.name.clone(),
                block: d.block,
                npus: npus as u32,
                latency_ns: latency,
                min_gbps: d.min_gbps.as_ref().map(|b| *b.get_ref()),
                max_gbps: d.max_gbps.as_ref().map(|b| *b.get_ref()),
                tier,
                options_gbps: options,
            });
        }
        let fabric = Fabric { dims };
        fabric_npus_fit(&fabric).map_err(|m| at(raw_dims.span(), "fabric.dims".into(), m))?;

        for (name, tier) in &raw.cost.tiers {
            for (f, v) in [
                ("link_usd_per_gbps", tier.link_usd_per_gbps),
                ("switch_usd_per_gbps", tier.switch_usd_per_gbps),
                ("nic_usd_per_gbps", tier.nic_usd_per_gbps),
                ("link_pj_per_bit", tier.link_pj_per_bit),
                ("switch_pj_per_bit", tier.switch_pj_per_bit),
                ("nic_pj_per_bit", tier.nic_pj_per_bit),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    let line = find_line(text, &format!("[cost.tiers.{name}]")).or_else(|| find_line(text, "[cost"));
                    return Err(InputError::at(
                        path,
                        line,
                        format!("cost.tiers.{name}.{f}"),
                        format!("{v} is not allowed: use a value >= 0"),
                    ));
                }
            }
        }

        // The model to generate a workload from, if any.
        let model = match &raw.model {
            None => None,
            Some(m) => {
                Some(model_spec(m).map_err(|msg| InputError::at(path, find_line(text, "[model]"), "model", msg))?)
            }
        };
        let npu = match &raw.npu {
            None => None,
            Some(n) => {
                let ok = |v: f64| v.is_finite() && v > 0.0;
                if !(ok(n.peak_tflops) && ok(n.hbm_gib) && ok(n.efficiency) && n.efficiency <= 1.0) {
                    return Err(InputError::at(
                        path,
                        find_line(text, "[npu]"),
                        "npu",
                        "peak_tflops and hbm_gib must be > 0 and efficiency in (0, 1]",
                    ));
                }
                Some(n.clone())
            }
        };
        let parallelism = match &raw.parallelism {
            None => None,
            Some(p) => Some(
                strategy(p)
                    .map_err(|msg| InputError::at(path, find_line(text, "[parallelism]"), "parallelism", msg))?,
            ),
        };
        // Workload: written, or generated from the model and parallelism.
        let workload = match (&raw.workload, &model, &npu, &parallelism) {
            (Some(w), None, _, _) => read_workload(w, &fabric, text, path)?,
            (None, Some(m), Some(n), Some(st)) => {
                crate::model::transformer::generate(m, n, st, &fabric)
                    .map_err(|msg| InputError::at(path, find_line(text, "[parallelism]"), "parallelism", msg))?
                    .workload
            }
            (Some(_), Some(_), _, _) => {
                return Err(InputError::at(
                    path,
                    find_line(text, "[model]"),
                    "model",
                    "give either [workload] or [model], not both",
                ));
            }
            (None, Some(_), _, _) => {
                return Err(InputError::at(
                    path,
                    find_line(text, "[model]"),
                    "model",
                    "a [model] needs [npu] (peak_tflops, efficiency, hbm_gib) and [parallelism] (tp, pp, dp)",
                ));
            }
            (None, None, _, _) => {
                return Err(InputError::at(
                    path,
                    None,
                    "workload",
                    "no workload: add [workload] (layers or LIBRA files) or [model]",
                ));
            }
        };
        // What the results' hash covers: this file and the files it names.
        let mut hashed = text.as_bytes().to_vec();
        if let Some(w) = &raw.workload {
            for f in [&w.libra_workload, &w.libra_communicator].into_iter().flatten() {
                let file = path.parent().unwrap_or(Path::new(".")).join(f.get_ref());
                hashed.extend(std::fs::read(file).unwrap_or_default());
            }
        }

        // Default allocation.
        let bw = match &raw.bw {
            Some(b) => Some(check_bw(b.get_ref(), &fabric).map_err(|m| at(b.span(), "bw".into(), m))?),
            None => None,
        };

        // Optimization defaults.
        let cost_lin = Linear::new(
            &fabric,
            &CostModel {
                tiers: raw.cost.tiers.clone(),
            },
        );
        let mut optimize = OptimizeSpec::default();
        if let Some(o) = &raw.optimize.objective {
            if !crate::optimize::Objective::NAMES.contains(&o.get_ref().as_str()) {
                return Err(at(
                    o.span(),
                    "optimize.objective".into(),
                    format!(
                        "`{}` is not an objective; allowed: {}",
                        o.get_ref(),
                        one_of(&crate::optimize::Objective::NAMES)
                    ),
                ));
            }
            optimize.objective = Some(o.get_ref().clone());
        }
        if let Some(t) = &raw.optimize.target_ms {
            let v = *t.get_ref();
            if !(v.is_finite() && v > 0.0) {
                return Err(at(
                    t.span(),
                    "optimize.target_ms".into(),
                    format!("{v} is not allowed: use a time > 0 ms"),
                ));
            }
            optimize.target_ms = Some(v);
        }
        for (i, c) in raw.optimize.constraints.iter().enumerate() {
            let parsed = expr::parse(c.get_ref(), &fabric, &cost_lin).map_err(|e| {
                at(
                    c.span(),
                    format!("optimize.constraints[{i}]"),
                    format!("`{}` column {}: {}", c.get_ref(), e.column, e.message),
                )
            })?;
            optimize.constraints.push(parsed);
        }

        // What `run` does.
        let axis_of = |a: &Option<Spanned<String>>, field: String| -> Result<Axis, InputError> {
            match a {
                None => Ok(Axis::Cost),
                Some(a) => Axis::from_name(a.get_ref()).ok_or_else(|| {
                    at(
                        a.span(),
                        field,
                        format!("`{}` is not an axis; allowed: {}", a.get_ref(), one_of(&Axis::NAMES)),
                    )
                }),
            }
        };
        let mut frontiers = Vec::new();
        for (i, f) in raw.frontier.iter().enumerate() {
            let r = f.get_ref();
            let points = match &r.points {
                None => 40,
                Some(p) if (2..=100_000).contains(p.get_ref()) => *p.get_ref() as usize,
                Some(p) => {
                    return Err(at(
                        p.span(),
                        format!("frontier[{i}].points"),
                        format!("{} is not allowed: use 2 to 100000 points", p.get_ref()),
                    ));
                }
            };
            frontiers.push(FrontierSpec {
                axis: axis_of(&r.axis, format!("frontier[{i}].axis"))?,
                points,
            });
        }
        let mut cases = Vec::new();
        for (i, c) in raw.case.iter().enumerate() {
            let r = c.get_ref();
            let bw = check_bw(r.bw.get_ref(), &fabric).map_err(|m| at(r.bw.span(), format!("case[{i}].bw"), m))?;
            cases.push(Case {
                name: r.name.clone(),
                bw,
            });
        }
        let mut sweeps = Vec::new();
        for (i, sw) in raw.sweep.iter().enumerate().filter(|_| with_sweeps) {
            let r = sw.get_ref();
            let npus = *r.npus.get_ref();
            if !(4..=1 << 30).contains(&npus) {
                return Err(at(
                    r.npus.span(),
                    format!("sweep[{i}].npus"),
                    format!("{npus} is not allowed: use 4 to 2^30 NPUs"),
                ));
            }
            let budgets = r.budgets.get_ref().clone();
            if budgets.is_empty() || budgets.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
                return Err(at(
                    r.budgets.span(),
                    format!("sweep[{i}].budgets"),
                    "list at least one budget, each > 0".into(),
                ));
            }
            if r.name.is_empty()
                || !r
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(at(
                    sw.span(),
                    format!("sweep[{i}].name"),
                    format!("`{}` is not usable in a file name: use letters, digits, - or _", r.name),
                ));
            }
            let mut workloads = Vec::new();
            for (j, w) in r.workloads.iter().enumerate() {
                let file = path.parent().unwrap_or(Path::new(".")).join(w.get_ref());
                let field = format!("sweep[{i}].workloads[{j}]");
                if file == path {
                    return Err(at(w.span(), field, "a sweep cannot name its own study".into()));
                }
                let other = Study::load_with(&file, false)
                    .map_err(|e| at(w.span(), field.clone(), format!("cannot use `{}`: {e}", w.get_ref())))?;
                if other.fabric.ndims() != fabric.ndims() {
                    return Err(at(
                        w.span(),
                        field,
                        format!(
                            "`{}` has {} dimensions, this study {}: a sweep keeps the number of dimensions",
                            w.get_ref(),
                            other.fabric.ndims(),
                            fabric.ndims()
                        ),
                    ));
                }
                hashed.extend(std::fs::read(&file).unwrap_or_default());
                workloads.push(SweepWorkload {
                    name: other.name,
                    workload: other.workload,
                    fabric: other.fabric,
                });
            }
            sweeps.push(SweepSpec {
                workloads,
                name: r.name.clone(),
                npus: npus as u64,
                blocks: r
                    .blocks
                    .clone()
                    .unwrap_or_else(|| vec![Block::Ring, Block::FullyConnected, Block::Switch]),
                axis: axis_of(&r.axis, format!("sweep[{i}].axis"))?,
                budgets,
            });
        }
        let mut objectives = Vec::new();
        for (i, o) in raw.run.objectives.iter().enumerate() {
            if !crate::optimize::Objective::NAMES.contains(&o.get_ref().as_str()) {
                return Err(at(
                    o.span(),
                    format!("run.objectives[{i}]"),
                    format!(
                        "`{}` is not an objective; allowed: {}",
                        o.get_ref(),
                        one_of(&crate::optimize::Objective::NAMES)
                    ),
                ));
            }
            objectives.push(o.get_ref().clone());
        }
        if objectives.is_empty() {
            objectives.push(optimize.objective.clone().unwrap_or_else(|| "perf".into()));
        }

        let evaluator = evaluator_spec(&raw.evaluator, text, path)?;
        let procurement = match &raw.procurement {
            None => None,
            Some(p) => {
                let (proc, file) = procurement_spec(p, &fabric, text, path)?;
                if let Some(f) = file {
                    hashed.extend(std::fs::read(f).unwrap_or_default());
                }
                Some(proc)
            }
        };

        let name = raw.name.unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "study".to_string(), |s| s.to_string_lossy().into_owned())
        });
        Ok(Study {
            name,
            description: raw.description.unwrap_or_default(),
            path: path.to_path_buf(),
            fabric,
            cost: CostModel { tiers: raw.cost.tiers },
            workload,
            collective: CollectiveModel {
                time_model: raw.time_model.unwrap_or(TimeModel::Libra),
                algorithms,
            },
            training_loop: raw.training_loop.unwrap_or(Loop::NoOverlap),
            bw,
            optimize,
            frontiers,
            cases,
            objectives,
            sweeps,
            hash: crate::io::fnv1a64(&hashed),
            model,
            npu,
            parallelism,
            evaluator,
            procurement,
        })
    }

    /// The iteration-time model of this study.
    pub fn iteration_model(&self) -> IterationModel {
        IterationModel::new(&self.workload, &self.fabric, &self.collective, self.training_loop)
    }

    /// Linear cost and power coefficients.
    pub fn linear_cost(&self) -> Linear {
        Linear::new(&self.fabric, &self.cost)
    }

    /// The study's `[procurement]`, else the built-in catalog with every
    /// dimension's defaults.
    pub fn procurement(&self) -> Procurement {
        self.procurement
            .clone()
            .unwrap_or_else(|| Procurement::defaults(&self.fabric))
    }

    /// The schedule-backed evaluator of this study with `spec`.
    pub fn backed(&self, spec: &scheduled::Spec) -> scheduled::Backed {
        scheduled::Backed::new(&self.fabric, &self.workload, &self.collective, self.training_loop, spec)
    }

    /// Evaluates one allocation.
    pub fn evaluate(&self, bw: &[f64]) -> Evaluation {
        evaluate(&self.fabric, &self.iteration_model(), &self.linear_cost(), bw)
    }

    /// The study's constraints plus command-line ones (`--constraint`).
    pub fn constraints(&self, cli: &[String]) -> Result<Vec<Constraint>, InputError> {
        let lin = self.linear_cost();
        let mut out = self.optimize.constraints.clone();
        for c in cli {
            out.push(
                expr::parse(c, &self.fabric, &lin).map_err(|e| {
                    InputError::arg("--constraint", format!("`{c}` column {}: {}", e.column, e.message))
                })?,
            );
        }
        Ok(out)
    }

    /// Parses `--bw 250,250,250,250` for this study's fabric.
    pub fn parse_bw(&self, s: &str) -> Result<Vec<f64>, InputError> {
        let values = s
            .split(',')
            .map(|v| {
                v.trim().parse::<f64>().map_err(|_| {
                    InputError::arg(
                        "--bw",
                        format!(
                            "`{}` is not a number: give GB/s per NPU per dimension, e.g. 250,250",
                            v.trim()
                        ),
                    )
                })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        check_bw(&values, &self.fabric).map_err(|m| InputError::arg("--bw", m))
    }

    /// The study as TOML, in the format `parse` reads, with every layer
    /// inline. `header` lines are written first as comments.
    pub fn to_toml(&self, header: &[String]) -> String {
        let mut s = String::new();
        for h in header {
            let _ = writeln!(s, "# {h}");
        }
        let _ = writeln!(s, "name = {}", quote(&self.name));
        if !self.description.is_empty() {
            let _ = writeln!(s, "description = {}", quote(&self.description));
        }
        let _ = writeln!(s, "time_model = {}", quote(self.collective.time_model.name()));
        let _ = writeln!(s, "training_loop = {}", quote(self.training_loop.name()));
        if let Some(bw) = &self.bw {
            let _ = writeln!(s, "bw = [{}]", join(bw.iter().map(|b| fmt_f64(*b))));
        }
        for (d, alg) in self.fabric.dims.iter().zip(&self.collective.algorithms) {
            let _ = writeln!(s, "\n[[fabric.dims]]");
            let _ = writeln!(s, "name = {}", quote(&d.name));
            let _ = writeln!(s, "block = {}", quote(d.block.name()));
            let _ = writeln!(s, "npus = {}", d.npus);
            let _ = writeln!(s, "latency_ns = {}", fmt_f64(d.latency_ns));
            let _ = writeln!(s, "tier = {}", quote(&d.tier));
            let _ = writeln!(s, "algorithm = {}", quote(alg.name()));
            if let Some(m) = d.min_gbps {
                let _ = writeln!(s, "min_gbps = {}", fmt_f64(m));
            }
            if let Some(m) = d.max_gbps {
                let _ = writeln!(s, "max_gbps = {}", fmt_f64(m));
            }
            if let Some(o) = &d.options_gbps {
                let _ = writeln!(s, "options_gbps = [{}]", join(o.iter().map(|v| fmt_f64(*v))));
            }
        }
        let o = &self.optimize;
        if o.objective.is_some() || o.target_ms.is_some() || !o.constraints.is_empty() {
            let _ = writeln!(s, "\n[optimize]");
            if let Some(obj) = &o.objective {
                let _ = writeln!(s, "objective = {}", quote(obj));
            }
            if let Some(t) = o.target_ms {
                let _ = writeln!(s, "target_ms = {}", fmt_f64(t));
            }
            let _ = writeln!(
                s,
                "constraints = [{}]",
                join(o.constraints.iter().map(|c| quote(&c.text)))
            );
        }
        for (name, t) in &self.cost.tiers {
            let key = if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                name.clone()
            } else {
                quote(name)
            };
            let _ = writeln!(s, "\n[cost.tiers.{key}]");
            let _ = writeln!(s, "link_usd_per_gbps = {}", fmt_f64(t.link_usd_per_gbps));
            let _ = writeln!(s, "switch_usd_per_gbps = {}", fmt_f64(t.switch_usd_per_gbps));
            let _ = writeln!(s, "nic_usd_per_gbps = {}", fmt_f64(t.nic_usd_per_gbps));
            let _ = writeln!(s, "link_pj_per_bit = {}", fmt_f64(t.link_pj_per_bit));
            let _ = writeln!(s, "switch_pj_per_bit = {}", fmt_f64(t.switch_pj_per_bit));
            let _ = writeln!(s, "nic_pj_per_bit = {}", fmt_f64(t.nic_pj_per_bit));
        }
        let _ = writeln!(s, "\n[workload]");
        for l in &self.workload.layers {
            let _ = writeln!(s, "\n[[workload.layers]]");
            let _ = writeln!(s, "name = {}", quote(&l.name));
            for kind in PhaseKind::ALL {
                let p = l.phase(kind);
                let mut fields = vec![format!("compute_ns = {}", fmt_f64(p.compute_ns))];
                if let Some(c) = &p.comm {
                    fields.push(format!("collective = {}", quote(c.kind.name())));
                    fields.push(format!("bytes = {}", fmt_f64(c.bytes)));
                    fields.push(format!(
                        "group = [{}]",
                        join(c.group.to_libra().iter().map(|g| g.to_string()))
                    ));
                }
                let _ = writeln!(s, "{} = {{ {} }}", kind.name(), fields.join(", "));
            }
        }
        s
    }
}

/// Checks an allocation against a fabric: one finite value >= 0 per dimension.
fn check_bw(values: &[f64], fabric: &Fabric) -> Result<Vec<f64>, String> {
    if values.len() != fabric.ndims() {
        return Err(format!(
            "{} values given but the fabric has {} dimensions ({}): give one GB/s per NPU value per dimension",
            values.len(),
            fabric.ndims(),
            fabric
                .dims
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some((d, v)) = values.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
        return Err(format!(
            "{v} GB/s on dimension `{}` is not allowed: use a bandwidth >= 0",
            fabric.dims[d].name
        ));
    }
    Ok(values.to_vec())
}

/// Rejects fabrics whose NPU count overflows.
fn fabric_npus_fit(fabric: &Fabric) -> Result<u64, String> {
    fabric
        .dims
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(u64::from(d.npus)))
        .filter(|n| *n <= 1 << 40)
        .ok_or_else(|| "the fabric has more than 2^40 NPUs".to_string())
}

fn read_workload(raw: &RawWorkload, fabric: &Fabric, text: &str, path: &Path) -> Result<Workload, InputError> {
    let at = |span: std::ops::Range<usize>, field: String, msg: String| {
        InputError::at(path, Some(line_of_offset(text, span.start)), field, msg)
    };
    let base = path.parent().unwrap_or(Path::new("."));
    // Default communicators per phase: inline or from a LIBRA file.
    let mut defaults: [Option<Group>; 3] = [None, None, None];
    match (&raw.communicator, &raw.libra_communicator) {
        (Some(_), Some(f)) => {
            return Err(at(
                f.span(),
                "workload.libra_communicator".into(),
                "give either [workload.communicator] or libra_communicator, not both".into(),
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
                        .map_err(|m| at(g.span(), format!("workload.communicator.{name}"), m))?;
                    defaults[i] = Some(group);
                }
            }
        }
        (None, Some(f)) => {
            let file = base.join(f.get_ref());
            let comm = libra::read_communicator(&file)?;
            comm.check(fabric, &file)?;
            defaults = comm.groups.map(Some);
        }
        (None, None) => {}
    }

    let layers = match (&raw.layers, &raw.libra_workload) {
        (Some(_), Some(f)) => {
            return Err(at(
                f.span(),
                "workload.libra_workload".into(),
                "give either [[workload.layers]] or libra_workload, not both".into(),
            ));
        }
        (None, None) => {
            let line = find_line(text, "[workload]");
            return Err(InputError::at(
                path,
                line,
                "workload",
                "no layers: add [[workload.layers]] or name a LIBRA workload with libra_workload",
            ));
        }
        (None, Some(f)) => {
            let file = base.join(f.get_ref());
            let layers = libra::read_workload(&file)?;
            libra::attach_communicators(&layers, &defaults, &file)?
        }
        (Some(raw_layers), None) => {
            let mut layers = Vec::new();
            for (i, l) in raw_layers.iter().enumerate() {
                let phase = |kind: PhaseKind, p: &Option<RawPhase>| -> Result<Phase, InputError> {
                    let field = |f: &str| format!("workload.layers[{i}].{}.{f}", kind.name());
                    let Some(p) = p else {
                        return Ok(Phase::default());
                    };
                    let compute = *p.compute_ns.get_ref();
                    if !(compute.is_finite() && compute >= 0.0) {
                        return Err(at(
                            p.compute_ns.span(),
                            field("compute_ns"),
                            format!("{compute} is not allowed: use a compute time >= 0 ns"),
                        ));
                    }
                    let bytes = *p.bytes.get_ref();
                    if !(bytes.is_finite() && bytes >= 0.0) {
                        return Err(at(
                            p.bytes.span(),
                            field("bytes"),
                            format!("{bytes} is not allowed: a size is >= 0 bytes"),
                        ));
                    }
                    let kind_c = p.collective.as_ref().and_then(|c| c.get_ref().kind());
                    let comm = match kind_c {
                        None => {
                            if bytes > 0.0 {
                                return Err(at(
                                    p.bytes.span(),
                                    field("bytes"),
                                    format!(
                                        "{bytes} bytes given but no collective: set collective = {}",
                                        one_of(&CollectiveKind::NAMES)
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
                                    .map_err(|m| at(g.span(), field("group"), m))?,
                                None => defaults[kind as usize].clone().ok_or_else(|| {
                                    let span = p.collective.as_ref().map_or(p.bytes.span(), |c| c.span());
                                    at(span, field("group"), format!("no communicator for this {k}: set group = [...] here or {} in [workload.communicator]", kind.name()))
                                })?,
                            };
                            Some(Comm { kind: k, bytes, group })
                        }
                    };
                    Ok(Phase {
                        compute_ns: compute,
                        comm,
                    })
                };
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

/// 1-based line of the first line that starts with `needle` (after spaces).
pub fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.trim_start().starts_with(needle))
        .map(|i| i + 1)
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn join(it: impl Iterator<Item = String>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

/// Shortest text that reads back as the same f64 (Rust's `{}` does this).
fn fmt_f64(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStudy {
    name: Option<String>,
    description: Option<String>,
    time_model: Option<TimeModel>,
    training_loop: Option<Loop>,
    bw: Option<Spanned<Vec<f64>>>,
    fabric: RawFabric,
    #[serde(default)]
    cost: RawCost,
    workload: Option<RawWorkload>,
    model: Option<RawModel>,
    npu: Option<crate::model::transformer::Npu>,
    parallelism: Option<RawParallelism>,
    #[serde(default)]
    optimize: RawOptimize,
    #[serde(default)]
    frontier: Vec<Spanned<RawFrontier>>,
    #[serde(default)]
    case: Vec<Spanned<RawCase>>,
    #[serde(default)]
    sweep: Vec<Spanned<RawSweep>>,
    #[serde(default)]
    run: RawRun,
    #[serde(default)]
    evaluator: RawEvaluator,
    procurement: Option<RawProcurement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProcurement {
    catalog: Option<Spanned<String>>,
    budget_usd: Option<Spanned<f64>>,
    budget_w: Option<Spanned<f64>>,
    #[serde(default)]
    dims: BTreeMap<String, Spanned<RawProcDim>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProcDim {
    ports: Option<Spanned<Vec<String>>>,
    reach_m: Option<Spanned<f64>>,
    spine_reach_m: Option<Spanned<f64>>,
    max_ports: Option<Spanned<i64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawEvaluator {
    kind: Option<Spanned<String>>,
    algorithm: Option<Spanned<String>>,
    #[serde(default)]
    algorithms: BTreeMap<String, Spanned<String>>,
    chunks_per_npu: Option<Spanned<i64>>,
    link_model: Option<Spanned<String>>,
    tolerance: Option<Spanned<f64>>,
    max_iterations: Option<Spanned<i64>>,
    seed: Option<u64>,
    restarts: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    preset: Option<String>,
    name: Option<String>,
    layers: Option<u32>,
    hidden: Option<u64>,
    heads: Option<u32>,
    ffn: Option<u64>,
    ffn_matrices: Option<u32>,
    seq: Option<u64>,
    vocab: Option<u64>,
    global_batch: Option<u64>,
    micro_batch: Option<u64>,
    bytes_weight: Option<f64>,
    bytes_grad: Option<f64>,
    bytes_optimizer: Option<f64>,
}

/// A model from a preset (with overrides) or from every field.
fn model_spec(m: &RawModel) -> Result<ModelSpec, String> {
    let base = match &m.preset {
        Some(p) => Some(
            ModelSpec::preset(p)
                .ok_or_else(|| format!("`{p}` is not a preset; allowed: {}", one_of(&ModelSpec::PRESETS)))?,
        ),
        None => None,
    };
    let need = |name: &str| {
        format!(
            "`{name}` is missing: give every field or a preset ({})",
            one_of(&ModelSpec::PRESETS)
        )
    };
    macro_rules! field {
        ($f:ident) => {
            match (m.$f.clone(), &base) {
                (Some(v), _) => v,
                (None, Some(b)) => b.$f.clone(),
                (None, None) => return Err(need(stringify!($f))),
            }
        };
    }
    let spec = ModelSpec {
        name: m
            .name
            .clone()
            .or_else(|| m.preset.clone())
            .unwrap_or_else(|| "model".into()),
        layers: field!(layers),
        hidden: field!(hidden),
        heads: field!(heads),
        ffn: field!(ffn),
        ffn_matrices: field!(ffn_matrices),
        seq: field!(seq),
        vocab: field!(vocab),
        global_batch: field!(global_batch),
        micro_batch: field!(micro_batch),
        bytes_weight: field!(bytes_weight),
        bytes_grad: field!(bytes_grad),
        bytes_optimizer: field!(bytes_optimizer),
    };
    if spec.layers == 0
        || spec.hidden == 0
        || spec.heads == 0
        || spec.ffn == 0
        || spec.seq == 0
        || spec.global_batch == 0
        || spec.micro_batch == 0
    {
        return Err("layers, hidden, heads, ffn, seq, global_batch and micro_batch must be > 0".into());
    }
    if !(2..=3).contains(&spec.ffn_matrices) {
        return Err(format!(
            "ffn_matrices {} is not allowed: 2 (GELU MLP) or 3 (SwiGLU)",
            spec.ffn_matrices
        ));
    }
    if [spec.bytes_weight, spec.bytes_grad, spec.bytes_optimizer]
        .iter()
        .any(|b| !(b.is_finite() && *b >= 0.0))
    {
        return Err("bytes per element must be >= 0".into());
    }
    Ok(spec)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParallelism {
    tp: u64,
    pp: u64,
    dp: u64,
    #[serde(default = "one")]
    zero: u8,
    #[serde(default = "yes")]
    sequence_parallel: bool,
    #[serde(default)]
    recompute: bool,
    order: Option<String>,
}

fn one() -> u8 {
    1
}

fn yes() -> bool {
    true
}

/// Parses `tp,pp,dp`-style placement orders.
pub fn parse_order(s: &str) -> Result<[Par; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    for p in &parts {
        out.push(match *p {
            "tp" => Par::Tp,
            "pp" => Par::Pp,
            "dp" => Par::Dp,
            other => {
                return Err(format!(
                    "`{other}` is not a parallelism; use tp, pp and dp, e.g. \"tp,pp,dp\""
                ));
            }
        });
    }
    match out[..] {
        [a, b, c] if a != b && b != c && a != c => Ok([a, b, c]),
        _ => Err(format!("`{s}` must name tp, pp and dp once each, innermost first")),
    }
}

fn strategy(p: &RawParallelism) -> Result<Strategy, String> {
    if p.tp == 0 || p.pp == 0 || p.dp == 0 {
        return Err("tp, pp and dp must be >= 1".into());
    }
    if p.zero > 3 {
        return Err(format!("zero {} is not allowed: ZeRO stages are 0 to 3", p.zero));
    }
    Ok(Strategy {
        tp: p.tp,
        pp: p.pp,
        dp: p.dp,
        zero: p.zero,
        sequence_parallel: p.sequence_parallel,
        recompute: p.recompute,
        order: parse_order(p.order.as_deref().unwrap_or("tp,pp,dp"))?,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFrontier {
    axis: Option<Spanned<String>>,
    points: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    bw: Spanned<Vec<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    name: String,
    npus: Spanned<i64>,
    blocks: Option<Vec<Block>>,
    axis: Option<Spanned<String>>,
    budgets: Spanned<Vec<f64>>,
    #[serde(default)]
    workloads: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRun {
    #[serde(default)]
    objectives: Vec<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOptimize {
    objective: Option<Spanned<String>>,
    target_ms: Option<Spanned<f64>>,
    #[serde(default)]
    constraints: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFabric {
    dims: Spanned<Vec<Spanned<RawDim>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDim {
    name: String,
    block: Block,
    npus: Spanned<i64>,
    #[serde(default = "zero")]
    latency_ns: Spanned<f64>,
    min_gbps: Option<Spanned<f64>>,
    max_gbps: Option<Spanned<f64>>,
    tier: Option<Spanned<String>>,
    algorithm: Option<Spanned<Algorithm>>,
    options_gbps: Option<Spanned<Vec<f64>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCost {
    #[serde(default)]
    tiers: BTreeMap<String, Tier>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    communicator: Option<RawCommunicator>,
    libra_workload: Option<Spanned<String>>,
    libra_communicator: Option<Spanned<String>>,
    layers: Option<Vec<RawLayer>>,
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

fn zero() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
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

/// The `[evaluator]` section, checked.
fn evaluator_spec(raw: &RawEvaluator, text: &str, path: &Path) -> Result<scheduled::Spec, InputError> {
    let at = |span: std::ops::Range<usize>, field: &str, msg: String| {
        InputError::at(
            path,
            Some(line_of_offset(text, span.start)),
            format!("evaluator.{field}"),
            msg,
        )
    };
    let mut spec = scheduled::Spec::default();
    if let Some(k) = &raw.kind {
        spec.evaluator = Evaluator::parse(k.get_ref()).ok_or_else(|| {
            at(
                k.span(),
                "kind",
                format!(
                    "`{}` is not an evaluator; allowed: {}",
                    k.get_ref(),
                    one_of(&Evaluator::NAMES)
                ),
            )
        })?;
    }
    let algorithm = |a: &Spanned<String>, field: &str| -> Result<String, InputError> {
        if scheduled::ALGORITHMS.contains(&a.get_ref().as_str()) {
            Ok(a.get_ref().clone())
        } else {
            Err(at(
                a.span(),
                field,
                format!(
                    "`{}` is not a schedule algorithm; allowed: {}",
                    a.get_ref(),
                    one_of(&scheduled::ALGORITHMS)
                ),
            ))
        }
    };
    if let Some(a) = &raw.algorithm {
        spec.algorithm = algorithm(a, "algorithm")?;
    }
    for (kind, a) in &raw.algorithms {
        let k = CollectiveKind::NAMES
            .iter()
            .position(|n| n == kind)
            .map(|i| {
                [
                    CollectiveKind::AllReduce,
                    CollectiveKind::ReduceScatter,
                    CollectiveKind::AllGather,
                    CollectiveKind::AllToAll,
                    CollectiveKind::SendRecv,
                ][i]
            })
            .ok_or_else(|| {
                at(
                    a.span(),
                    &format!("algorithms.{kind}"),
                    format!(
                        "`{kind}` is not a collective; allowed: {}",
                        one_of(&CollectiveKind::NAMES)
                    ),
                )
            })?;
        spec.per_collective
            .push((k, algorithm(a, &format!("algorithms.{kind}"))?));
    }
    if let Some(c) = &raw.chunks_per_npu {
        let v = *c.get_ref();
        if !(1..=64).contains(&v) {
            return Err(at(
                c.span(),
                "chunks_per_npu",
                format!("{v} is not allowed: use 1 to 64"),
            ));
        }
        spec.chunks_per_npu = v as u32;
    }
    if let Some(l) = &raw.link_model {
        spec.link_model = LinkModel::parse(l.get_ref()).ok_or_else(|| {
            at(
                l.span(),
                "link_model",
                format!(
                    "`{}` is not a link model; allowed: {}",
                    l.get_ref(),
                    one_of(&LinkModel::NAMES)
                ),
            )
        })?;
    }
    if let Some(t) = &raw.tolerance {
        let v = *t.get_ref();
        if !(v.is_finite() && v > 0.0 && v < 1.0) {
            return Err(at(
                t.span(),
                "tolerance",
                format!("{v} is not allowed: use a value in (0, 1)"),
            ));
        }
        spec.tolerance = v;
    }
    if let Some(m) = &raw.max_iterations {
        let v = *m.get_ref();
        if !(1..=1000).contains(&v) {
            return Err(at(
                m.span(),
                "max_iterations",
                format!("{v} is not allowed: use 1 to 1000"),
            ));
        }
        spec.max_iterations = v as usize;
    }
    if let Some(s) = raw.seed {
        spec.seed = s;
    }
    if let Some(r) = &raw.restarts {
        let v = *r.get_ref();
        if !(1..=1000).contains(&v) {
            return Err(at(r.span(), "restarts", format!("{v} is not allowed: use 1 to 1000")));
        }
        spec.restarts = v as u32;
    }
    Ok(spec)
}

/// The `[procurement]` section, checked; and the catalog file it names.
fn procurement_spec(
    raw: &RawProcurement,
    fabric: &Fabric,
    text: &str,
    path: &Path,
) -> Result<(Procurement, Option<PathBuf>), InputError> {
    let at = |span: std::ops::Range<usize>, field: String, msg: String| {
        InputError::at(
            path,
            Some(line_of_offset(text, span.start)),
            format!("procurement.{field}"),
            msg,
        )
    };
    let mut file = None;
    let catalog = match &raw.catalog {
        None => Catalog::builtin(),
        Some(c) => {
            let f = path.parent().unwrap_or(Path::new(".")).join(c.get_ref());
            let cat = Catalog::load(&f)
                .map_err(|e| at(c.span(), "catalog".into(), format!("cannot use `{}`: {e}", c.get_ref())))?;
            file = Some(f);
            cat
        }
    };
    let budget = |b: &Option<Spanned<f64>>, field: &str| -> Result<Option<f64>, InputError> {
        match b {
            None => Ok(None),
            Some(v) => {
                let x = *v.get_ref();
                if x.is_finite() && x > 0.0 {
                    Ok(Some(x))
                } else {
                    Err(at(
                        v.span(),
                        field.into(),
                        format!("{x} is not allowed: use a budget > 0"),
                    ))
                }
            }
        }
    };
    let mut dims: Vec<DimSpec> = fabric.dims.iter().map(|d| DimSpec::default_for(d.block)).collect();
    for (name, sd) in &raw.dims {
        let field = |f: &str| format!("dims.{name}.{f}");
        let Some(d) = fabric.dims.iter().position(|x| &x.name == name) else {
            let names: Vec<&str> = fabric.dims.iter().map(|x| x.name.as_str()).collect();
            return Err(at(
                sd.span(),
                format!("dims.{name}"),
                format!("`{name}` is not a dimension; the fabric has {}", one_of(&names)),
            ));
        };
        let r = sd.get_ref();
        if let Some(ports) = &r.ports {
            for p in ports.get_ref() {
                match catalog.port(p) {
                    None => {
                        let known: Vec<&str> = catalog.ports.iter().map(|x| x.name.as_str()).collect();
                        return Err(at(
                            ports.span(),
                            field("ports"),
                            format!("`{p}` is not a port in the catalog; it has {}", one_of(&known)),
                        ));
                    }
                    Some(port) if !port.blocks.contains(&fabric.dims[d].block) => {
                        return Err(at(
                            ports.span(),
                            field("ports"),
                            format!(
                                "`{p}` does not build a {} dimension (it builds {})",
                                fabric.dims[d].block.name(),
                                port.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
            dims[d].ports = ports.get_ref().clone();
        }
        for (f, v, slot) in [("reach_m", &r.reach_m, 0), ("spine_reach_m", &r.spine_reach_m, 1)] {
            if let Some(v) = v {
                let x = *v.get_ref();
                if !(x.is_finite() && x > 0.0) {
                    return Err(at(
                        v.span(),
                        field(f),
                        format!("{x} is not allowed: use a length > 0 m"),
                    ));
                }
                if slot == 0 {
                    dims[d].reach_m = x;
                } else {
                    dims[d].spine_reach_m = x;
                }
            }
        }
        if let Some(m) = &r.max_ports {
            let x = *m.get_ref();
            if !(1..=4096).contains(&x) {
                return Err(at(
                    m.span(),
                    field("max_ports"),
                    format!("{x} is not allowed: use 1 to 4096"),
                ));
            }
            dims[d].max_ports = x as u32;
        }
    }
    Ok((
        Procurement {
            catalog,
            dims,
            budget_usd: budget(&raw.budget_usd, "budget_usd")?,
            budget_w: budget(&raw.budget_w, "budget_w")?,
        },
        file,
    ))
}

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
//! This module owns the top level of the file (`name`, `description`,
//! `time_model`, `group_bandwidth`, `training_loop`, `bw`), the order in which the sections are
//! checked, and the study's hash. Each section is read by its own module, with
//! the raw serde structs it is parsed into: `fabric` (`[fabric]`, `[cost]`),
//! `workload` (`[workload]`, or `[model]`, `[npu]` and `[parallelism]`),
//! `optimize` (`[optimize]`, `[run]`), `frontier` (`[[frontier]]`,
//! `[[case]]`), `sweep` (`[[sweep]]`), `evaluator` (`[evaluator]`) and
//! `procurement` (`[procurement]`); `write` writes a study back, and
//! `objective` turns a read study into the optimizer's problem and objectives.
//! A check whose value carries no span of its own returns a [`Refusal`]
//! (the key it concerns and the message), which the loader locates as an
//! [`InputError`] at the section's line and field.
//!
//! The format is documented in README.md; `to_toml` writes it back, which is
//! how `dimsum import libra` produces a study.
//!
//! ```
//! use dimsum::study::Study;
//! // Errors name the file, the line and the field, and say what is allowed.
//! let e = Study::parse("name = \"x\"\n[[fabric.dims]]\nname = \"a\"\nblock = \"cube\"\nnpus = 4\n", "x.toml".as_ref())
//!     .unwrap_err();
//! assert_eq!(e.line, Some(4));
//! assert!(e.to_string().contains("ring"), "{e}");
//! ```

mod alternative;
mod evaluator;
mod fabric;
mod frontier;
pub mod objective;
mod optimize;
mod procurement;
mod refusal;
mod reliability;
mod sweep;
pub mod topology;
mod workload;
mod write;

pub use alternative::{Alternative, FABRIC_SHAPE, Unplaced};
pub use frontier::{Case, FrontierSpec};
pub use optimize::OptimizeSpec;
pub use refusal::Refusal;
pub use sweep::{SweepSpec, SweepWorkload};
pub use workload::Economics;
pub use workload::{MAX_ARCHS, arch_npu};
pub use workload::{OrderError, parse_order};

use crate::error::{InputError, line_of_offset};
use crate::interop::libra;
use crate::model::arch::ArchSpace;
use crate::model::bom::Procurement;
use crate::model::collective::{CollectiveModel, GroupBandwidth, TimeModel};
use crate::model::cost::{CostModel, Linear};
use crate::model::eval::{Evaluation, evaluate};
use crate::model::fabric::Fabric;
use crate::model::training::{IterationModel, Loop};
use crate::model::transformer::{ModelSpec, Npu, RecipeSpace, Strategy};
use crate::model::workload::Workload;
use crate::optimize::expr::{self, Constraint};
use crate::optimize::scheduled;
use serde::Deserialize;
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
    /// The NPU the model runs on (the first of `[npu] type = [...]`).
    pub npu: Option<Npu>,
    /// The accelerators coopt chooses among (`[npu] type = [...]`; empty
    /// for one NPU).
    pub npu_choices: Vec<Npu>,
    /// How accelerators are compared (`[coopt]` life, energy price and
    /// the cluster's budgets).
    pub economics: Economics,
    /// The parametric accelerators coopt searches (`[npu.arch]`; `npu` is
    /// its first combination within the budgets).
    pub arch_space: Option<ArchSpace>,
    /// The study's default parallelization.
    pub parallelism: Option<Strategy>,
    /// The recipes `coopt` searches (`[coopt]`; none: the study's own).
    pub recipe_space: Option<RecipeSpace>,
    /// Whether `run` replays the co-optimization's joint optimum on the
    /// best schedules (`[coopt] replay`, default true).
    pub replay_optimum: bool,
    /// How collectives are timed (`[evaluator]`).
    pub evaluator: scheduled::Spec,
    /// The line of the `[evaluator]` section, for errors about it.
    pub evaluator_line: Option<usize>,
    /// What the fabric is bought from (`[procurement]`), if the study says.
    pub procurement: Option<Procurement>,
    /// Dimensions that name no cost tier, whose linear prices in `cost`
    /// are the catalog's cheapest $ and W per GB/s of their parts
    /// (`bom::cheapest_tier`).
    pub derived_tiers: Vec<String>,
    /// What the study says that is allowed but likely a mistake (a
    /// bandwidth in Gb/s written as GB/s, more than the catalog sells),
    /// each with its file and line; the CLI prints them, the report lists
    /// them.
    pub warnings: Vec<String>,
    /// Why the study's own workload could not be generated (a `[model]`
    /// with no `[parallelism]`, or one out of HBM), located at parse time:
    /// `coopt` searches anyway; every other command refuses it
    /// (`require_workload`).
    pub workload_missing: Option<InputError>,
    /// Other fabric shapes `run` buys and compares with this one
    /// (`[[alternative]]`).
    pub alternatives: Vec<Alternative>,
    /// The study's own fabric's name among those shapes (`[fabric] name`,
    /// default [`FABRIC_SHAPE`]).
    pub fabric_name: String,
    /// Checkpoint-restart settings (`[reliability]`): `run` reports what
    /// failed parts cost.
    pub reliability: Option<crate::model::failure::Reliability>,
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
        // LIBRA's model throughout: its time model and its assumption that
        // every group gets all of a dimension's bandwidth.
        let collective = CollectiveModel {
            group_bandwidth: GroupBandwidth::WholeDimension,
            ..CollectiveModel::defaults(&inputs.fabric, TimeModel::Libra)
        };
        Ok(Study {
            name: inputs.name,
            description: format!("LIBRA inputs: {} on {}", workload.display(), inputs.fabric.shape()),
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
            recipe_space: None,
            replay_optimum: true,
            npu_choices: Vec::new(),
            economics: Economics::default(),
            arch_space: None,
            evaluator: Default::default(),
            evaluator_line: None,
            procurement: None,
            derived_tiers: Vec::new(),
            warnings: Vec::new(),
            workload_missing: None,
            alternatives: Vec::new(),
            fabric_name: FABRIC_SHAPE.into(),
            reliability: None,
        })
    }

    /// The study read by [`Study::from_libra_files`] as a study file
    /// (`dimsum import libra`), headed by the files it came from and their
    /// licence.
    pub fn libra_toml(&self, network: &Path, workload: &Path, communicator: &Path, cost: &Path) -> String {
        let header = vec![
            format!("dimsum study imported from LIBRA's inputs by dimsum {}", env!("CARGO_PKG_VERSION")),
            format!("network: {}", network.display()),
            format!("workload: {}", workload.display()),
            format!("communicator: {}", communicator.display()),
            format!("cost model: {}", cost.display()),
            "LIBRA (astra-sim/libra) inputs are MIT-licensed: Copyright (c) 2024 Georgia Institute of Technology, Intel Corporation.".into(),
            "Compute times are ns and sizes bytes, as LIBRA reads them; no latency (LIBRA's time model).".into(),
        ];
        self.to_toml(&header)
    }

    /// What `interop::astra` writes an ASTRA-sim input set from.
    pub(crate) fn astra_design(&self) -> crate::interop::astra::Design<'_> {
        crate::interop::astra::Design {
            name: &self.name,
            fabric: &self.fabric,
            workload: &self.workload,
            algorithms: &self.collective.algorithms,
            training_loop: self.training_loop,
            time_model: self.collective.time_model,
            reduction_gbps: self.collective.reduction_gbps,
            group_bandwidth: self.collective.group_bandwidth,
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
        let text = crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the study file: {e}")))?;
        Study::parse_with(&text, path, sweeps)
    }

    /// Validates study text; `path` names it in errors and anchors the LIBRA
    /// file paths it names.
    ///
    /// A ring of 4 NPUs inside a switch of 8 (32 NPUs), one layer, and an
    /// allocation `bw`; then the same study with a negative bandwidth,
    /// refused at its line and key:
    ///
    /// ```
    /// use dimsum::study::Study;
    ///
    /// let text = r#"name = "tiny"
    /// bw = [100.0, 50.0]
    /// [[fabric.dims]]
    /// name = "package"
    /// block = "ring"
    /// npus = 4
    /// [[fabric.dims]]
    /// name = "pod"
    /// block = "switch"
    /// npus = 8
    /// [cost.tiers.package]
    /// link_usd_per_gbps = 2.0
    /// [cost.tiers.pod]
    /// link_usd_per_gbps = 8.0
    /// switch_usd_per_gbps = 10.0
    /// nic_usd_per_gbps = 20.0
    /// [workload]
    /// communicator = { forward = [4, -1], input_grad = [4, -1], weight_grad = [-1, 8] }
    /// [[workload.layers]]
    /// forward = { compute_ns = 1000 }
    /// weight_grad = { compute_ns = 3000, collective = "all-reduce", bytes = 64e6 }
    /// "#;
    /// let study = Study::parse(text, "tiny.toml".as_ref())?;
    /// assert_eq!(study.name, "tiny");
    /// assert_eq!(study.fabric.npus(), 32);
    /// assert_eq!(study.workload.layers.len(), 1);
    /// assert_eq!(study.bw, Some(vec![100.0, 50.0]));
    ///
    /// let bad = text.replace("50.0]", "-1.0]");
    /// let e = Study::parse(&bad, "tiny.toml".as_ref()).map_err(|e| e.to_string());
    /// assert_eq!(
    ///     e.err().as_deref(),
    ///     Some("tiny.toml:2: bw: -1 GB/s on dimension `pod` is not allowed: use a bandwidth >= 0")
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(text: &str, path: &Path) -> Result<Study, InputError> {
        Study::parse_with(text, path, true)
    }

    /// Parses the TOML, then checks the sections in a fixed order (so a file
    /// with several mistakes always reports the same one first): the fabric
    /// and cost tiers, `[procurement]` (a dimension without a tier is
    /// priced from its parts), the generator sections, the workload, `bw`,
    /// `[optimize]`, `[[frontier]]`, `[[case]]`, `[[sweep]]`, `[run]`,
    /// `[evaluator]`.
    fn parse_with(text: &str, path: &Path, with_sweeps: bool) -> Result<Study, InputError> {
        let raw: RawStudy = toml::from_str(text).map_err(|e| crate::error::toml_error(text, path, &e))?;
        let src = StudyFile { text, path };

        let (mut fabric, algorithms) = fabric::fabric(&raw.fabric, &raw.cost, src)?;
        let procurement = match &raw.procurement {
            None => None,
            Some(p) => Some(procurement::procurement_spec_among(
                p,
                &fabric,
                &alternative::dim_names(&raw.alternative),
                src,
            )?),
        };
        let mut cost = CostModel {
            tiers: raw.cost.tiers.clone(),
        };
        if let (Some(r), Some(p)) = (&raw.procurement, &procurement) {
            procurement::apply_servers(r, p, &mut fabric, &mut cost, src)?;
        }
        let parts = procurement.clone().unwrap_or_else(|| Procurement::defaults(&fabric));
        fabric::fat_trees(&raw.fabric, &mut fabric, &parts, src)?;
        let derived_tiers = fabric::derive_tiers(&raw.fabric, &fabric, &mut cost, &parts, src)?;
        let raw_bw = match &raw.bw {
            Some(b) if b.get_ref().len() == fabric.ndims() => Some((b.get_ref().clone(), b.span())),
            _ => None,
        };
        let warnings = fabric::bandwidth_checks(
            &raw.fabric,
            &fabric,
            &parts,
            procurement.is_some(),
            raw_bw.as_ref().map(|(v, s)| (v.as_slice(), s.clone())),
            src,
        )?;
        let generator = workload::generator(raw.model.as_ref(), raw.npu.as_ref(), raw.parallelism.as_ref(), src)?;
        let (workload, workload_missing) = workload::workload(raw.workload.as_ref(), &generator, &fabric, src)?;
        let economics = match &raw.coopt {
            None => Economics::default(),
            Some(c) => workload::economics(c, !generator.npu_choices.is_empty(), src)?,
        };
        let recipe_space = match &raw.coopt {
            None => None,
            Some(c) => Some(workload::recipe_space(
                c,
                generator.model.as_ref(),
                generator.parallelism.as_ref(),
                src,
            )?),
        };
        let bw = match &raw.bw {
            Some(b) => Some(
                fabric::check_bw(&gbps_values(b.get_ref()), &fabric)
                    .map_err(|r| src.at(b.span(), "bw", r.to_string()))?,
            ),
            None => None,
        };
        if let (Some(p), Some(b), Some(sb)) = (&procurement, &bw, &raw.bw) {
            procurement::check_server_bw(p, &fabric, b).map_err(|r| src.at(sb.span(), "bw", r.to_string()))?;
        }
        let mut optimize = optimize::optimize_spec(&raw.optimize, &fabric, &cost, src)?;
        if let Some(p) = &procurement {
            optimize
                .constraints
                .extend(procurement_budgets(p, &fabric, &cost, &optimize.constraints));
        }
        let frontiers = frontier::frontiers(&raw.frontier, src)?;
        let cases = frontier::cases(&raw.case, &fabric, procurement.as_ref(), src)?;
        let sweeps = if with_sweeps {
            sweep::sweeps(&raw.sweep, &fabric, src)?
        } else {
            Vec::new()
        };
        let objectives = optimize::run_objectives(&raw.run, &optimize, src)?;
        let evaluator = evaluator::evaluator_spec(&raw.evaluator, src)?;
        let reduction_gbps = reduction_gbps(raw.reduction_memory.as_ref(), generator.npu.as_ref(), src)?;
        let collective = CollectiveModel {
            time_model: raw.time_model.unwrap_or(TimeModel::Libra),
            algorithms,
            group_bandwidth: raw.group_bandwidth.unwrap_or_default(),
            reduction_gbps,
        };
        let fabric_name = alternative::fabric_name(raw.fabric.name.as_ref(), src)?;
        let alternatives = alternative::alternatives(
            &raw.alternative,
            &alternative::Against {
                own: &fabric_name,
                fabric: &fabric,
                cost: &raw.cost,
                procurement: raw.procurement.as_ref(),
                generator: &generator,
                workload: &workload,
                collective: &collective,
            },
            src,
        )?;
        let reliability = match &raw.reliability {
            None => None,
            Some(r) => Some(reliability::reliability(r, src)?),
        };
        let hash = inputs_hash(text, &named_files(&raw, src, with_sweeps));

        let name = raw.name.unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "study".to_string(), |s| s.to_string_lossy().into_owned())
        });
        Ok(Study {
            name,
            description: raw.description.unwrap_or_default(),
            path: path.to_path_buf(),
            fabric,
            cost,
            workload,
            collective,
            training_loop: raw.training_loop.unwrap_or(Loop::NoOverlap),
            bw,
            optimize,
            frontiers,
            cases,
            objectives,
            sweeps,
            hash,
            model: generator.model,
            npu: generator.npu,
            parallelism: generator.parallelism,
            recipe_space,
            replay_optimum: workload::replay_optimum(raw.coopt.as_ref()),
            npu_choices: generator.npu_choices,
            economics,
            arch_space: generator.arch_space,
            evaluator,
            evaluator_line: find_line(text, "[evaluator]"),
            procurement,
            derived_tiers,
            warnings,
            workload_missing,
            alternatives,
            fabric_name,
            reliability,
        })
    }

    /// The strategy `coopt` starts its search from: the study's own
    /// (`[parallelism]`), else the defaults of one
    /// ([`workload::default_strategy`]); `None` without a `[model]`.
    pub fn search_base(&self) -> Option<Strategy> {
        self.model.as_ref()?;
        Some(self.parallelism.clone().unwrap_or_else(workload::default_strategy))
    }

    /// Refuses a study whose workload could not be generated (its own
    /// strategy missing or out of HBM) for the commands that need it (all
    /// but `coopt`), saying why at its `[parallelism]` (or `[model]`) line.
    pub fn require_workload(&self) -> Result<(), InputError> {
        self.workload_missing.clone().map_or(Ok(()), Err)
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

    /// Evaluates an allocation given on the command line (`--bw`): refused
    /// if a dimension that carries traffic gets no bandwidth.
    pub fn evaluate_given(&self, bw: &[f64]) -> Result<Evaluation, InputError> {
        let e = self.evaluate(bw);
        match e.dims.iter().find(|d| d.busy_ms.is_infinite()) {
            Some(d) => Err(InputError::arg(
                "--bw",
                format!(
                    "dimension `{}` carries traffic but gets 0 GB/s: give it a positive bandwidth",
                    d.name
                ),
            )),
            None => Ok(e),
        }
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
    pub(crate) fn parse_bw(&self, s: &str) -> Result<Vec<f64>, InputError> {
        let values = s
            .split(',')
            .map(|v| {
                // A plain number is GB/s (0 included); one with a unit is
                // converted, as --link-gbps does.
                v.trim().parse::<f64>().or_else(|_| {
                    crate::model::units::parse_gbps(v.trim()).map_err(|e| {
                        InputError::arg(
                            "--bw",
                            match e {
                                crate::model::units::UnitError::Bandwidth(_) => format!(
                                    "`{}` is not a bandwidth: give GB/s per NPU per dimension, e.g. 250,250, or with units, 400Gb/s,50GB/s",
                                    v.trim()
                                ),
                                other => other.to_string(),
                            },
                        )
                    })
                })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        self.check_allocation(&values)
    }

    /// An allocation given as numbers (GB/s per NPU per dimension), checked
    /// as `--bw`'s text is once parsed: one finite value >= 0 per dimension,
    /// and a dimension that comes with its servers at their bandwidth.
    /// Errors name `--bw`.
    pub fn check_allocation(&self, values: &[f64]) -> Result<Vec<f64>, InputError> {
        let values = fabric::check_bw(values, &self.fabric).map_err(|r| InputError::arg("--bw", r.to_string()))?;
        if let Some(p) = &self.procurement {
            procurement::check_server_bw(p, &self.fabric, &values)
                .map_err(|r| InputError::arg("--bw", r.to_string()))?;
        }
        Ok(values)
    }
}

/// The files a study's hash covers besides its own text, in the order they
/// are hashed: LIBRA's workload and communicator files, the studies its
/// sweeps take workloads from (only when the sweeps are read), and the
/// procurement catalog.
fn named_files(raw: &RawStudy, src: StudyFile<'_>, with_sweeps: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(w) = &raw.workload {
        files.extend(w.libra_files().map(|f| src.dir().join(f)));
    }
    if with_sweeps {
        files.extend(sweep::study_files(&raw.sweep, src));
    }
    if let Some(c) = raw.procurement.as_ref().and_then(|p| p.catalog.as_ref()) {
        files.push(src.dir().join(c.get_ref()));
    }
    if let Some(c) = raw.model.as_ref().and_then(|m| m.config.as_ref()) {
        files.push(src.dir().join(c));
    }
    files
}

/// The study's hash: FNV-1a over its text followed by each named file's
/// bytes (a file that cannot be read adds nothing).
fn inputs_hash(text: &str, files: &[PathBuf]) -> String {
    let mut hashed = text.as_bytes().to_vec();
    for f in files {
        hashed.extend(crate::io::read_limited(f, crate::io::MAX_TEXT_BYTES).unwrap_or_default());
    }
    crate::io::fnv1a64(&hashed)
}

/// 1-based line of the first line that starts with `needle` (after spaces).
pub(crate) fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.trim_start().starts_with(needle))
        .map(|i| i + 1)
}

/// The study text and the file it came from: where every error is located,
/// and where the files it names are looked up.
#[derive(Clone, Copy)]
struct StudyFile<'a> {
    text: &'a str,
    path: &'a Path,
}

impl StudyFile<'_> {
    /// An error at the line where `span` starts.
    fn at(&self, span: std::ops::Range<usize>, field: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError::at(self.path, Some(line_of_offset(self.text, span.start)), field, message)
    }

    /// An error at the first line starting with `needle` (no line if none does).
    fn at_line(&self, needle: &str, field: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError::at(self.path, find_line(self.text, needle), field, message)
    }

    /// The directory the study's relative paths start from.
    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// The `[procurement]` budgets as linear constraints on the continuous
/// problem, where it needs them: some dimension has no cap (no `max_gbps`,
/// no `options_gbps`) and no constraint of the study bounds cost or power,
/// so without them the continuous optimum would be unbounded. One cost
/// truth: every command answers within the budgets the study buys under
/// (the linear prices under-price every purchasable design, so the
/// continuous optimum stays a bound on the catalog's).
fn procurement_budgets(p: &Procurement, fabric: &Fabric, cost: &CostModel, have: &[Constraint]) -> Vec<Constraint> {
    use crate::optimize::expr::Unit;
    let uncapped = fabric
        .dims
        .iter()
        .any(|d| d.max_gbps.is_none() && d.options_gbps.is_none());
    let bounded = have.iter().any(|c| matches!(c.unit, Unit::Usd | Unit::Watts));
    if !uncapped || bounded {
        return Vec::new();
    }
    let lin = Linear::new(fabric, cost);
    [("cost", "budget_usd", p.budget_usd), ("power", "budget_w", p.budget_w)]
        .into_iter()
        .filter_map(|(what, key, b)| {
            let b = b?;
            let mut c = expr::parse(&format!("{what} <= {b}"), fabric, &lin).ok()?;
            c.text = format!("{what} <= {b:e} ([procurement] {key})");
            Some(c)
        })
        .collect()
}

/// A bandwidth as a study writes it: a number, GB/s per NPU (1 GB = 1e9
/// B), or a string with its unit (`"400Gb/s"`, `"50GB/s"`, `"50GiB/s"`,
/// `"3.2Tb/s"`: `units::parse_gbps`), so a link's marketing figure in bits
/// is never read as bytes.
/// The flag says whether it was written with a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Gbps(pub(crate) f64, pub(crate) bool);

impl<'de> Deserialize<'de> for Gbps {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Gbps, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Gbps;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bandwidth: a number of GB/s per NPU, or a string with its unit (\"400Gb/s\", \"50GB/s\", \"50GiB/s\")")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Gbps, E> {
                Ok(Gbps(v, false))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Gbps, E> {
                Ok(Gbps(v as f64, false))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Gbps, E> {
                Ok(Gbps(v as f64, false))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Gbps, E> {
                crate::model::units::parse_gbps(v)
                    .map(|g| Gbps(g, true))
                    .map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The GB/s of a list of study bandwidths.
pub(crate) fn gbps_values(v: &[Gbps]) -> Vec<f64> {
    v.iter().map(|g| g.0).collect()
}

/// A default of 0 for a spanned number the file may leave out.
fn zero() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}

/// The whole file as serde reads it; each section's struct lives with the
/// module that checks it.
/// The memory bandwidth reductions run at (`CollectiveModel::reduction_gbps`):
/// `reduction_memory` is `true` (the default: the `[npu]`'s HBM bandwidth,
/// if the study has one), `false`, or the memory bandwidth in GB/s.
fn reduction_gbps(
    raw: Option<&Spanned<toml::Value>>,
    npu: Option<&crate::model::transformer::Npu>,
    src: StudyFile<'_>,
) -> Result<Option<f64>, InputError> {
    let from_npu = npu.map(|n| n.device.hbm_gbps).filter(|m| *m > 0.0);
    let Some(raw) = raw else { return Ok(from_npu) };
    let gbps = match raw.get_ref() {
        toml::Value::Boolean(true) => return Ok(from_npu),
        toml::Value::Boolean(false) => return Ok(None),
        toml::Value::Integer(m) => Some(*m as f64),
        toml::Value::Float(m) => Some(*m),
        _ => None,
    };
    match gbps {
        Some(m) if m.is_finite() && m > 0.0 => Ok(Some(m)),
        _ => Err(src.at(
            raw.span(),
            "reduction_memory",
            format!(
                "{} is not allowed: use true, false or a memory bandwidth in GB/s > 0",
                raw.get_ref()
            ),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStudy {
    name: Option<String>,
    description: Option<String>,
    time_model: Option<TimeModel>,
    group_bandwidth: Option<GroupBandwidth>,
    reduction_memory: Option<Spanned<toml::Value>>,
    training_loop: Option<Loop>,
    bw: Option<Spanned<Vec<Gbps>>>,
    fabric: fabric::RawFabric,
    #[serde(default)]
    cost: fabric::RawCost,
    workload: Option<workload::RawWorkload>,
    model: Option<workload::RawModel>,
    npu: Option<workload::RawNpu>,
    parallelism: Option<workload::RawParallelism>,
    coopt: Option<workload::RawCoopt>,
    #[serde(default)]
    optimize: optimize::RawOptimize,
    #[serde(default)]
    frontier: Vec<Spanned<frontier::RawFrontier>>,
    #[serde(default)]
    case: Vec<Spanned<frontier::RawCase>>,
    #[serde(default)]
    sweep: Vec<Spanned<sweep::RawSweep>>,
    #[serde(default)]
    run: optimize::RawRun,
    #[serde(default)]
    evaluator: evaluator::RawEvaluator,
    procurement: Option<procurement::RawProcurement>,
    #[serde(default)]
    alternative: Vec<Spanned<alternative::RawAlternative>>,
    reliability: Option<reliability::RawReliability>,
}

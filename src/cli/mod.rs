//! The command line: clap commands, human-readable tables, JSON on stdout.
//!
//! Contract (DESIGN.md): `--json` prints one JSON object on stdout and nothing
//! else there; logs go to stderr. Exit 0 on success, 1 for a failed run, 2 for
//! bad input ([`dimsum::error::InputError`], or a clap usage error).

pub mod collective;
pub mod compare;
pub mod procure;
pub mod scheduled;

use clap::{Parser, Subcommand};
use dimsum::error::InputError;
use dimsum::model::units;
use dimsum::optimize::frontier::Axis;
use dimsum::optimize::scheduled::Evaluator;
use dimsum::optimize::{self, Problem};
use dimsum::pipeline::convert;
use dimsum::pipeline::coopt;
use dimsum::pipeline::run::{self, RunError};
use dimsum::pipeline::sweep::{self, Shard};
use dimsum::report;
use dimsum::schedule::Schedule;
use dimsum::study::Study;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::Path;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// dimsum: design the network fabrics of ML training clusters.
#[derive(Debug, Parser)]
#[command(name = "dimsum", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Iteration time, network cost and power of one bandwidth allocation.
    Eval(EvalArgs),
    /// The optimal bandwidth per dimension, certified (lower bound and gap).
    Optimize(OptimizeArgs),
    /// The fastest design at each budget, from the cheapest feasible one to
    /// the fastest the study's constraints allow (or within 0.1% of unlimited
    /// bandwidth): CSV, SVG and PNG.
    Frontier(FrontierArgs),
    /// The bill of materials of an allocation: ports, switches and cables
    /// from the study's catalog (or the built-in one), capex and power.
    Bom(BomArgs),
    /// The parts a fabric is bought from (the built-in catalog, or a
    /// catalog file): ports, switches and cables with unit prices, power,
    /// $ and pJ/bit per GB/s, and sources.
    Catalog(CatalogArgs),
    /// Everything a study declares (cases, objectives, frontiers, sweeps) into results/<study>/.
    Run(RunArgs),
    /// One sweep of a study (all of them without --name), optionally one shard of it.
    Sweep(SweepArgs),
    /// Join sweep shards into one CSV, checking none is missing or duplicated.
    Merge(MergeArgs),
    /// Co-optimize the parallelization (TP, PP, DP and their placement) with the bandwidth allocation.
    Coopt(CooptArgs),
    /// Build a collective schedule (or read one), replay it on an explicit
    /// topology with link contention, and compare it with the lower bounds.
    Collective(collective::CollectiveArgs),
    /// Collective algorithms against each other over topologies and sizes
    /// (CSV, markdown table and speedup chart).
    Compare(compare::CompareArgs),
    /// Predict published training runs (a validation file) and compare:
    /// NAME.md, NAME.json and a throughput chart.
    Validate(ValidateArgs),
    /// Convert another tool's inputs into a study file (printed on stdout).
    Import {
        /// Source format.
        #[command(subcommand)]
        from: ImportFrom,
    },
    /// Write a schedule in another tool's format.
    Export {
        /// Target format.
        #[command(subcommand)]
        to: ExportTo,
    },
}

/// Formats `export` writes.
#[derive(Debug, Subcommand)]
pub enum ExportTo {
    /// An ASTRA-sim input set for the study's fabric: network.yml, system.json,
    /// memory.json, workload.<rank>.et, README.md.
    AstraSim(ExportAstraSimArgs),
    /// MSCCL-IR XML (all-reduce, all-gather, reduce-scatter).
    Msccl(ExportMscclArgs),
    /// Chakra execution traces, one per rank: PREFIX.0.et, PREFIX.1.et, ...
    Chakra(ExportChakraArgs),
}

/// Formats `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportFrom {
    /// LIBRA's four input files.
    Libra(ImportLibraArgs),
    /// An MSCCL-IR algorithm (XML, as MSCCLang writes it), into a schedule.
    Msccl(ImportMscclArgs),
    /// Chakra execution traces written by `dimsum export chakra`, into a schedule.
    Chakra(ImportChakraArgs),
}

/// Iteration time, network cost and power of one bandwidth allocation.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// GB/s per NPU per dimension, comma-separated (default: the study's
    /// `bw`); repeat for a side-by-side table.
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Vec<String>,
    /// How collectives are timed.
    #[command(flatten)]
    pub ev: scheduled::EvaluatorArgs,
    /// Print one JSON object (several --bw: an array of them) instead of a
    /// table.
    #[arg(long)]
    pub json: bool,
}

/// The optimal bandwidth per dimension, certified (lower bound and gap).
#[derive(Debug, clap::Args)]
pub struct OptimizeArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// perf, perf-per-cost, min-cost or min-power (default: the study's, else perf).
    #[arg(long)]
    pub objective: Option<String>,
    /// A linear constraint, e.g. "B0 + B1 == 1000", "cost <= 2e7"; repeatable.
    #[arg(long = "constraint", allow_hyphen_values = true)]
    pub constraints: Vec<String>,
    /// Iteration-time target for min-cost and min-power, ms.
    #[arg(long, allow_negative_numbers = true)]
    pub target_ms: Option<f64>,
    /// Ignore the study's `[optimize]` constraints (keep the fabric's bounds).
    #[arg(long)]
    pub no_study_constraints: bool,
    /// Buy only what the study's catalog (or the built-in one) sells:
    /// the best purchasable fabric (a MILP), beside the continuous optimum.
    #[arg(long)]
    pub catalog: bool,
    /// Capex budget for --catalog, $ (default: the study's [procurement] budget_usd).
    #[arg(long, allow_negative_numbers = true)]
    pub budget_usd: Option<f64>,
    /// Power budget for --catalog, W (default: the study's [procurement] budget_w).
    #[arg(long, allow_negative_numbers = true)]
    pub budget_w: Option<f64>,
    /// How collectives are timed.
    #[command(flatten)]
    pub ev: scheduled::EvaluatorArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The fastest design at each budget, from the cheapest feasible one to the
/// fastest the study's constraints allow (or within 0.1% of unlimited
/// bandwidth): CSV, SVG and PNG.
#[derive(Debug, clap::Args)]
pub struct FrontierArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// Number of budgets (default: the study's first frontier's, else 40).
    #[arg(long, allow_negative_numbers = true)]
    pub points: Option<usize>,
    /// cost, power or total-bw (default: the study's first frontier's, else cost).
    #[arg(long)]
    pub axis: Option<String>,
    /// Directory for the files (default: results/<study>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How collectives are timed.
    #[command(flatten)]
    pub ev: scheduled::EvaluatorArgs,
}

/// The bill of materials of an allocation: ports, switches and cables
/// from the study's catalog (or the built-in one), capex and power.
#[derive(Debug, clap::Args)]
pub struct BomArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// GB/s per NPU per dimension, comma-separated (default: the study's `bw`).
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The parts a fabric is bought from.
#[derive(Debug, clap::Args)]
pub struct CatalogArgs {
    /// A catalog file (TOML, the format of catalog/default.toml); default:
    /// the built-in catalog.
    pub catalog: Option<PathBuf>,
    /// Print the catalog as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Everything a study declares (cases, objectives, frontiers, sweeps) into results/<study>/.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Study files (TOML).
    #[arg(required = true)]
    pub studies: Vec<PathBuf>,
    /// Parent directory of the per-study result directories.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// How collectives are timed.
    #[command(flatten)]
    pub ev: scheduled::EvaluatorArgs,
}

/// One sweep of a study (all of them without --name), optionally one shard of it.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// The sweep's name (default: every sweep of the study).
    #[arg(long)]
    pub name: Option<String>,
    /// Run only items i, i+N, i+2N, ... (for a job array); merge the shards with `dimsum merge`.
    #[arg(long, default_value = "0/1")]
    pub shard: String,
    /// Directory for the CSV (default: results/<study>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Join sweep shards into one CSV, checking none is missing or duplicated.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The merged CSV to write.
    pub out: PathBuf,
    /// The shards' CSVs.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
}

/// Co-optimize the parallelization (TP, PP, DP and their placement) with the bandwidth allocation.
#[derive(Debug, clap::Args)]
pub struct CooptArgs {
    /// Study file with [model], [npu] and [parallelism].
    pub study: PathBuf,
    /// How many strategies to list, in the table and in the JSON.
    #[arg(long, allow_negative_numbers = true, default_value_t = 10)]
    pub top: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The training recipes searched: `study` (the study's [coopt], else its
    /// own recipe) or `whole` (micro-batch 1-16, recomputation, ZeRO 0-3,
    /// sequence parallelism, 1, 2 or 4 virtual stages).
    #[arg(long, default_value = "study")]
    pub recipe: String,
    /// Replay the joint optimum at its allocation: every distinct
    /// collective of its iteration on the best schedule dimsum builds (the
    /// pipeline's sends at their analytic time), with the certified bound
    /// (seconds to minutes on groups of hundreds of
    /// NPUs; `dimsum run` replays it unless the study sets `[coopt] replay
    /// = false`).
    #[arg(long)]
    pub replay: bool,
}

/// An ASTRA-sim input set for the study's fabric: network.yml, system.json,
/// memory.json, workload.<rank>.et, README.md.
#[derive(Debug, clap::Args)]
pub struct ExportAstraSimArgs {
    /// Study file (TOML).
    pub study: PathBuf,
    /// GB/s per NPU per dimension (default: the study's `bw`).
    #[arg(long, allow_hyphen_values = true)]
    pub bw: Option<String>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// MSCCL-IR XML (all-reduce, all-gather, reduce-scatter).
#[derive(Debug, clap::Args)]
pub struct ExportMscclArgs {
    /// A schedule (JSON, as `collective --schedule-out` writes it).
    pub schedule: PathBuf,
    /// The XML file to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// Chakra execution traces, one per rank: PREFIX.0.et, PREFIX.1.et, ...
#[derive(Debug, clap::Args)]
pub struct ExportChakraArgs {
    /// A schedule (JSON, as `collective --schedule-out` writes it).
    pub schedule: PathBuf,
    /// Output prefix, e.g. out/ring (writes out/ring.0.et, ...).
    #[arg(long)]
    pub prefix: PathBuf,
    /// The collective's buffer, for comm_size (e.g. 64MiB; default: the
    /// one the schedule file records, which a given value must match).
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
}

/// LIBRA's four input files.
#[derive(Debug, clap::Args)]
pub struct ImportLibraArgs {
    /// Network YAML (Topology, NpusCount, CostDimension).
    #[arg(long)]
    pub network: PathBuf,
    /// ASTRA-sim 1.0 workload text.
    #[arg(long)]
    pub workload: PathBuf,
    /// Communicator YAML (Forward, InputGrad, WeightGrad).
    #[arg(long)]
    pub communicator: PathBuf,
    /// Cost-model YAML ($ per GB/s per tier).
    #[arg(long)]
    pub cost: PathBuf,
    /// Study name (default: the workload's file stem).
    #[arg(long)]
    pub name: Option<String>,
}

/// An MSCCL-IR algorithm (XML, as MSCCLang writes it), into a schedule.
#[derive(Debug, clap::Args)]
pub struct ImportMscclArgs {
    /// The XML file.
    pub file: PathBuf,
    /// The schedule to write (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

/// Chakra execution traces written by `dimsum export chakra`, into a schedule.
#[derive(Debug, clap::Args)]
pub struct ImportChakraArgs {
    /// The traces' prefix (reads PREFIX.0.et, PREFIX.1.et, ...).
    pub prefix: PathBuf,
    /// The schedule to write (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs one command; what it prints goes to stdout.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Eval(a) => eval(a),
        Command::Optimize(a) => optimize(a),
        Command::Frontier(a) => frontier(a),
        Command::Bom(a) => bom(a),
        Command::Catalog(a) => catalog(a),
        Command::Run(a) => run_studies(a),
        Command::Sweep(a) => sweep(a),
        Command::Merge(a) => merge(a),
        Command::Coopt(a) => coopt(a),
        Command::Collective(args) => collective::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Export {
            to: ExportTo::AstraSim(a),
        } => export_astra_sim(a),
        Command::Export { to: ExportTo::Msccl(a) } => export_msccl(a),
        Command::Export {
            to: ExportTo::Chakra(a),
        } => export_chakra(a),
        Command::Validate(a) => validate(a),
        Command::Import {
            from: ImportFrom::Msccl(a),
        } => import_msccl(a),
        Command::Import {
            from: ImportFrom::Chakra(a),
        } => import_chakra(a),
        Command::Import {
            from: ImportFrom::Libra(a),
        } => import_libra(a),
    }
}

/// Arguments of `dimsum validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Validation files (validation/*.toml).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "results/validation")]
    out: PathBuf,
}

fn validate(a: ValidateArgs) -> anyhow::Result<()> {
    let bars = Bars::stages();
    let checked = dimsum::pipeline::validate::validate_files(&a.files, &|d, n| bars.update("validate", d, n))?;
    // Every validation's files land together, after the last is written.
    let staged = dimsum::io::Staged::new(&a.out)?;
    let mut lines = Vec::new();
    let n = checked.len();
    for (i, c) in checked.into_iter().enumerate() {
        bars.update("report", i, n);
        let files = report::validation::write(&c.validation, &c.stamp, &c.input, staged.dir())?;
        let v = &c.validation;
        lines.push(format!(
            "{}: {}; wrote {}",
            v.published.name,
            v.errors_line(),
            staged.final_path(&files[0]).display()
        ));
    }
    bars.finish();
    staged.commit()?;
    for l in lines {
        println!("{l}");
    }
    Ok(())
}

fn eval(a: EvalArgs) -> anyhow::Result<()> {
    let EvalArgs { study, bw, ev, json } = a;
    let mut study = load_study(&study)?;
    // Every allocation is checked before any is evaluated.
    let bws: Vec<Vec<f64>> = if bw.is_empty() {
        vec![study.allocation(None)?]
    } else {
        bw.iter().map(|b| study.allocation(Some(b))).collect::<Result<_, _>>()?
    };
    let evaluator = ev.apply(&mut study)?;
    if evaluator == Evaluator::Schedule {
        for bw in &bws {
            eprint!("{}", report::text::bounds_warnings(&study.evaluate_given(bw)?));
            scheduled::eval(&study, bw, json)?;
        }
        return Ok(());
    }
    let mut designs = Vec::new();
    for bw in &bws {
        let e = study.evaluate_given(bw)?;
        eprint!("{}", report::text::bounds_warnings(&e));
        let checks = study.checks(bw)?;
        // With [procurement], what buying it would run into.
        let flags = study.procurement.is_some().then(|| {
            let spec = study.procurement();
            dimsum::pipeline::procure::flags(&study, &dimsum::model::bom::bom(&study.fabric, &spec, bw))
        });
        designs.push((e, checks, flags));
    }
    let views: Vec<report::text::Evaluated> = bws
        .iter()
        .zip(&designs)
        .map(|(bw, (e, c, f))| report::text::Evaluated {
            bw,
            evaluation: e,
            checks: c,
            flags: f.as_deref(),
        })
        .collect();
    if json {
        let all: Vec<serde_json::Value> = views.iter().map(|v| report::json::evaluated(&study, v)).collect();
        match all.as_slice() {
            [one] => println!("{one}"),
            _ => println!("{}", serde_json::Value::Array(all)),
        }
    } else if let [one] = views.as_slice() {
        print!("{}", report::text::evaluation(&study, one.evaluation));
        print!("{}", report::text::checks(one));
    } else {
        print!("{}", report::text::side_by_side(&study, &views));
    }
    Ok(())
}

fn optimize(a: OptimizeArgs) -> anyhow::Result<()> {
    let OptimizeArgs {
        study,
        objective,
        constraints,
        target_ms,
        no_study_constraints,
        catalog,
        budget_usd,
        budget_w,
        ev,
        json,
    } = a;
    let mut study = load_study(&study)?;
    if no_study_constraints {
        study.optimize.constraints.clear();
    }
    let objective = study.objective(objective.as_deref(), target_ms)?;
    let constraints = study.constraints(&constraints)?;
    let problem = Problem::new(&study.fabric, study.iteration_model(), study.linear_cost(), constraints);
    for (flag, v) in [("--budget-usd", budget_usd), ("--budget-w", budget_w)] {
        if v.is_some() && !catalog {
            return Err(InputError::arg(flag, "a capex or power budget applies with --catalog").into());
        }
    }
    let evaluator = ev.apply(&mut study)?;
    if catalog {
        if evaluator == Evaluator::Schedule {
            return Err(InputError::arg(
                    "--catalog",
                    "the catalog optimum uses the analytic model: drop --evaluator schedule (or the study's [evaluator] kind) for it",
                )
                .into());
        }
        return procure::run_catalog(&study, &problem, objective, budget_usd, budget_w, json);
    }
    if evaluator == Evaluator::Schedule {
        return scheduled::optimize(&study, &problem, objective, json);
    }
    let started = std::time::Instant::now();
    let sol = optimize::solve(&problem, objective)?;
    let solve_ms = started.elapsed().as_secs_f64() * 1e3;
    if json {
        let e = study.evaluate(&sol.bw_gbps);
        println!("{}", report::json::optimum(&study, &sol, solve_ms, &e));
    } else {
        print!("{}", report::text::optimum(&study, &sol, solve_ms));
    }
    Ok(())
}

fn frontier(a: FrontierArgs) -> anyhow::Result<()> {
    let FrontierArgs {
        study,
        points,
        axis,
        out,
        ev,
    } = a;
    let mut study = load_study(&study)?;
    let evaluator = ev.apply(&mut study)?;
    let spec = study.frontiers.first();
    let axis = match axis.as_deref() {
        Some(a) => a
            .parse::<Axis>()
            .map_err(|e| InputError::arg("--axis", e.to_string()))?,
        None => spec.map_or(Axis::Cost, |f| f.axis),
    };
    let points = points.or_else(|| spec.map(|f| f.points)).unwrap_or(40);
    if !(2..=100_000).contains(&points) {
        return Err(InputError::arg("--points", format!("{points} is not allowed: use 2 to 100000")).into());
    }
    let dir = out.unwrap_or_else(|| PathBuf::from("results").join(&study.name));
    let bars = Bars::new();
    let progress = |t: &str, d: usize, n: usize| bars.update(t, d, n);
    let mut r = run::frontier(&study, axis, points, &progress).map_err(lift)?;
    if evaluator == Evaluator::Schedule {
        r.schedule_backed = Some(run::schedule_backed_frontier(&study, &r, &progress).map_err(lift)?);
    }
    bars.finish();
    let staged = dimsum::io::Staged::new(&dir)?;
    report::study::frontier_files(&study, &study.stamp(), &r, staged.dir())?;
    for f in staged.commit()? {
        println!("wrote {}", f.display());
    }
    Ok(())
}

fn catalog(a: CatalogArgs) -> anyhow::Result<()> {
    let c = match &a.catalog {
        Some(p) => dimsum::model::catalog::Catalog::load(p)?,
        None => dimsum::model::catalog::Catalog::builtin(),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!("{}", dimsum::report::text::parts(&c));
    }
    Ok(())
}

fn bom(a: BomArgs) -> anyhow::Result<()> {
    let BomArgs { study, bw, json } = a;
    let study = load_study(&study)?;
    let bw = study.allocation(bw.as_deref())?;
    procure::run_bom(&study, &bw, json)
}

fn run_studies(a: RunArgs) -> anyhow::Result<()> {
    let RunArgs { studies, out, ev } = a;
    // Every study is read and checked before any work starts.
    let mut loaded = Vec::new();
    for path in studies {
        let mut study = load_study(&path)?;
        ev.apply(&mut study)?;
        loaded.push(study);
    }
    for study in loaded {
        let dir = out.join(&study.name);
        dimsum::io::create_dir(&dir)?;
        let bars = Bars::new();
        // Sweeps keep their CSV (and checkpoint) in `dir` as they finish,
        // so a re-run resumes; the report's files land together.
        let results = run::run_study(&study, &dir, &|t, d, n| bars.update(t, d, n)).map_err(lift)?;
        bars.finish();
        let staged = dimsum::io::Staged::new(&dir)?;
        let files = report::study::write(&study, &results, staged.dir())?;
        let summary = files
            .first()
            .map_or_else(|| dir.join("summary.md"), |f| staged.final_path(f));
        staged.commit()?;
        println!(
            "{}: results in {}/ (summary: {})",
            study.name,
            dir.display(),
            summary.display()
        );
    }
    Ok(())
}

fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let SweepArgs {
        study,
        name,
        shard,
        out,
    } = a;
    let study = load_study(&study)?;
    let shard = Shard::parse(&shard).map_err(|m| InputError::arg("--shard", m.to_string()))?;
    let sweeps = study.sweeps_named(name.as_deref())?;
    let dir = out.unwrap_or_else(|| PathBuf::from("results").join(&study.name));
    dimsum::io::create_dir(&dir)?;
    for spec in sweeps {
        let bars = Bars::new();
        let o = run::sweep(&study, spec, shard, &dir, &|t, d, n| bars.update(t, d, n))?;
        bars.finish();
        match o.csv {
            Some(p) => println!(
                "wrote {} ({} items: {} solved now, {} resumed from an earlier run)",
                p.display(),
                o.items,
                o.solved_now,
                o.resumed
            ),
            None => println!("sweep `{}` shard {}/{} unfinished", spec.name, shard.index, shard.count),
        }
    }
    Ok(())
}

fn merge(a: MergeArgs) -> anyhow::Result<()> {
    let MergeArgs { out, shards } = a;
    let n = sweep::merge(&shards, &out).map_err(|e| match e {
        sweep::MergeError::Write(w) => anyhow::Error::from(w),
        other => InputError::arg("merge", other.to_string()).into(),
    })?;
    println!("wrote {} ({n} items from {} shards)", out.display(), shards.len());
    Ok(())
}

fn coopt(a: CooptArgs) -> anyhow::Result<()> {
    let CooptArgs {
        study,
        top,
        json,
        recipe,
        replay,
    } = a;
    let mut study = load_study_for_coopt(&study)?;
    let Some(model) = &study.model else {
        return Err(InputError::arg("coopt", format!("study `{}` has no [model] to parallelize", study.name)).into());
    };
    match recipe.as_str() {
        "study" => {}
        "whole" => study.recipe_space = Some(dimsum::model::transformer::RecipeSpace::whole(model)),
        other => {
            return Err(InputError::arg(
                "--recipe",
                format!("`{other}` is not a recipe space: use study or whole"),
            )
            .into());
        }
    }
    let started = Instant::now();
    let progress = Progress::new(1, "strategies");
    let r = coopt::coopt(&study, &|done, total| {
        progress.bar.set_length(total as u64);
        progress.set(done);
    })
    .map_err(|e| match e {
        coopt::CooptError::TooMany { .. } => anyhow::Error::from(InputError::arg("[coopt]", e.to_string())),
        other => anyhow::anyhow!(other),
    })?;
    progress.finish();
    // `[npu] type = [...]`: every accelerator searched and priced.
    let acc = if study.npu_choices.is_empty() {
        None
    } else {
        let bar = Progress::new(1, "accelerator strategies");
        let a = coopt::coopt_accelerators(&study, &|done, total| {
            bar.bar.set_length(total as u64);
            bar.set(done);
        })?;
        bar.finish();
        Some(a)
    };
    // `[npu.arch]`: the architecture searched with the strategy and fabric.
    let archs = if study.arch_space.is_some() {
        let bar = Progress::new(1, "architecture strategies");
        let a = coopt::coopt_archs(&study, Some(&r), &|done, total| {
            bar.bar.set_length(total as u64);
            bar.set(done);
        })
        .map_err(|e| match e {
            coopt::CooptError::TooMany { .. } => anyhow::Error::from(InputError::arg("[npu.arch]", e.to_string())),
            other => anyhow::anyhow!(other),
        })?;
        bar.finish();
        Some(a)
    } else {
        None
    };
    let secs = started.elapsed().as_secs_f64();
    // `--replay`: the joint optimum on the best schedules; a replay that
    // fails is an error of the run (exit 1), not of the input.
    let replayed: Option<Result<_, String>> = match (replay, r.optimum.as_ref()) {
        (true, Some(o)) => {
            let bars = Bars::new();
            let m = coopt::replay(&study, o, &|t, d, n| bars.update(t, d, n));
            bars.finish();
            Some(Ok(m.map_err(|e| anyhow::anyhow!("replaying the joint optimum: {e}"))?))
        }
        _ => None,
    };
    if json {
        println!(
            "{}",
            report::json::coopt(&study, &r, acc.as_ref(), archs.as_ref(), replayed.as_ref(), secs, top)
        );
        return Ok(());
    }
    // With several accelerator types the choice is the answer: first.
    if let Some(a) = &acc {
        print!("{}", report::text::accelerators(a));
        println!();
    }
    print!("{}", report::text::coopt(&study, &r, secs, top));
    match (&replayed, replay) {
        (Some(Ok(m)), _) => {
            println!();
            print!("{}", report::text::replayed_optimum(&study, m));
        }
        (None, true) => println!("\nno solved strategy to replay"),
        _ => {}
    }
    if let Some(a) = &archs {
        println!();
        print!("{}", report::text::archs(a, top));
    }
    Ok(())
}

fn export_astra_sim(a: ExportAstraSimArgs) -> anyhow::Result<()> {
    let ExportAstraSimArgs { study, bw, out } = a;
    let study = load_study(&study)?;
    let bw = study.allocation(bw.as_deref())?;
    let files = convert::export_astra_sim(&study, &bw, &out).map_err(lift)?;
    println!("{} files written to {}", files.len(), out.display());
    Ok(())
}

fn export_msccl(a: ExportMscclArgs) -> anyhow::Result<()> {
    let s = convert::export_msccl(&a.schedule, &a.out).map_err(lift)?;
    println!("{} transfers written to {}", s.transfers.len(), a.out.display());
    Ok(())
}

fn export_chakra(a: ExportChakraArgs) -> anyhow::Result<()> {
    let size = match &a.size {
        Some(s) => Some(units::parse_bytes(s).map_err(|m| InputError::arg("--size", m.to_string()))?),
        None => None,
    };
    let t = convert::export_chakra(&a.schedule, &a.prefix, size).map_err(lift)?;
    println!(
        "{} traces ({:.1} MB) written to {}.*.et",
        t.count,
        t.bytes as f64 / 1e6,
        a.prefix.display()
    );
    Ok(())
}

fn imported(s: &Schedule, out: &Path) {
    println!(
        "{} transfers on {} NPUs written to {}",
        s.transfers.len(),
        s.npus,
        out.display()
    );
}

fn import_msccl(a: ImportMscclArgs) -> anyhow::Result<()> {
    imported(&convert::import_msccl(&a.file, &a.out).map_err(lift)?, &a.out);
    Ok(())
}

fn import_chakra(a: ImportChakraArgs) -> anyhow::Result<()> {
    imported(&convert::import_chakra(&a.prefix, &a.out).map_err(lift)?, &a.out);
    Ok(())
}

fn import_libra(a: ImportLibraArgs) -> anyhow::Result<()> {
    let ImportLibraArgs {
        network,
        workload,
        communicator,
        cost,
        name,
    } = a;
    let mut study = Study::from_libra_files(&network, &workload, &communicator, &cost)?;
    if let Some(n) = name {
        study.name = n;
    }
    print!("{}", study.libra_toml(&network, &workload, &communicator, &cost));
    Ok(())
}

/// A progress bar on stderr that appears only once the work has lasted a
/// second (quick runs print nothing). Where stderr is no terminal (a Slurm
/// log, CI), a step that lasts over 5 s logs one line instead, at most
/// every 10 s: the step, done/total and the time elapsed.
pub(crate) struct Progress {
    bar: ProgressBar,
    start: Instant,
    what: String,
    /// Seconds since `start` of the last logged line (no terminal only).
    logged: std::sync::Mutex<Option<f64>>,
    terminal: bool,
}

/// With no terminal: the first line after this long, s.
const LOG_AFTER_S: f64 = 5.0;
/// With no terminal: at most one line per this long, s.
const LOG_EVERY_S: f64 = 10.0;

impl Progress {
    pub(crate) fn new(len: usize, what: &str) -> Progress {
        Progress::styled(len, what, true)
    }

    /// A bar with an ETA at the mean rate (`eta`), or without one (stages
    /// of unlike lengths, where a rate says nothing).
    fn styled(len: usize, what: &str, eta: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::hidden());
        let tail = if eta { ", eta {mean_eta}" } else { "" };
        if let Ok(style) =
            ProgressStyle::with_template(&format!("{what} {{bar:40}} {{pos}}/{{len}} [{{elapsed}}{tail}]"))
        {
            // The ETA at the mean rate since the start (indicatif's own
            // follows the latest steps, and said "6m" for a 5 s coopt whose
            // first strategies were slow): nothing until a step is done.
            bar.set_style(style.with_key(
                "mean_eta",
                |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let (pos, len) = (st.pos(), st.len().unwrap_or(0));
                    let _ = if pos == 0 || len <= pos {
                        write!(w, "-")
                    } else {
                        let secs = st.elapsed().as_secs_f64() * (len - pos) as f64 / pos as f64;
                        write!(w, "{}", indicatif::HumanDuration(Duration::from_secs_f64(secs)))
                    };
                },
            ));
        }
        Progress {
            bar,
            start: Instant::now(),
            what: what.to_string(),
            logged: std::sync::Mutex::new(None),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    pub(crate) fn set(&self, done: usize) {
        if !self.terminal {
            self.bar.set_position(done as u64);
            let t = self.start.elapsed().as_secs_f64();
            if let Ok(mut last) = self.logged.lock()
                && t > LOG_AFTER_S
                && last.is_none_or(|l| t - l >= LOG_EVERY_S)
            {
                *last = Some(t);
                let total = self.bar.length().unwrap_or(0);
                eprintln!("{}: {done}/{total}, {t:.0} s elapsed", self.what);
            }
            return;
        }
        if self.bar.is_hidden() && self.start.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        self.bar.set_position(done as u64);
    }

    pub(crate) fn finish(&self) {
        if !self.bar.is_hidden() {
            self.bar.finish_and_clear();
        }
    }
}

/// Progress bars for the pipeline's tasks: a new bar whenever the task
/// changes.
pub(crate) struct Bars {
    current: std::sync::Mutex<Option<(String, Progress)>>,
    eta: bool,
}

impl Bars {
    pub(crate) fn new() -> Bars {
        Bars {
            current: std::sync::Mutex::new(None),
            eta: true,
        }
    }

    /// Bars counting stages of unlike lengths: elapsed time, no ETA.
    pub(crate) fn stages() -> Bars {
        Bars {
            eta: false,
            ..Bars::new()
        }
    }

    pub(crate) fn update(&self, task: &str, done: usize, total: usize) {
        let Ok(mut cur) = self.current.lock() else {
            return;
        };
        // A new bar when the task changes or starts over (two frontiers on
        // one axis run the same task twice).
        if cur
            .as_ref()
            .is_none_or(|(t, p)| t != task || (done as u64) < p.bar.position())
        {
            if let Some((_, p)) = cur.take() {
                p.finish();
            }
            *cur = Some((task.to_string(), Progress::styled(total, task, self.eta)));
        }
        if let Some((_, p)) = cur.as_ref() {
            p.set(done);
        }
    }

    pub(crate) fn finish(&self) {
        if let Ok(mut cur) = self.current.lock()
            && let Some((_, p)) = cur.take()
        {
            p.finish();
        }
    }
}

/// The pipeline's error at the binary's edge: bad input stays an
/// [`InputError`] (exit 2).
pub(crate) fn lift(e: RunError) -> anyhow::Error {
    match e {
        RunError::Input(i) => i.into(),
        RunError::Coopt(c @ coopt::CooptError::TooMany { .. }) => InputError::arg("[coopt]", c.to_string()).into(),
        other => other.into(),
    }
}

/// Loads a study for a command that needs its own workload, and prints
/// its warnings (each located) on stderr.
fn load_study(path: &Path) -> Result<Study, InputError> {
    let study = load_study_for_coopt(path)?;
    study.require_workload()?;
    Ok(study)
}

/// Loads a study for `coopt`, which searches the strategies itself (the
/// study's own may be missing or not fit), and prints its warnings.
fn load_study_for_coopt(path: &Path) -> Result<Study, InputError> {
    let study = Study::load(path)?;
    for w in &study.warnings {
        eprintln!("warning: {w}");
    }
    Ok(study)
}

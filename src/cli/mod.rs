//! The command line: clap commands, human-readable tables, JSON on stdout.
//!
//! Contract (DESIGN.md): `--json` prints one JSON object on stdout and nothing
//! else there; logs go to stderr. Exit 0 on success, 1 for a failed run, 2 for
//! bad input ([`dimsum::error::InputError`], or a clap usage error).

pub mod collective;
pub mod compare;
pub mod failures;
pub mod scheduled;

use clap::{Parser, Subcommand};
use dimsum::error::InputError;
use dimsum::model::units;
use dimsum::optimize::scheduled::Evaluator;
use dimsum::optimize::{self, Problem};
use dimsum::pipeline::convert;
use dimsum::pipeline::coopt;
use dimsum::pipeline::exec::{Executor, RunError};
use dimsum::pipeline::jobs::{self, Recipes};
use dimsum::pipeline::run;
use dimsum::pipeline::sweep::{self, Shard};
use dimsum::report;
use dimsum::report::bars::Bars;
use dimsum::study::{FrontierSpec, Study};
use std::path::Path;
use std::path::PathBuf;
use std::time::Instant;

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
    /// The iteration time with one failed part (an NPU link, a NIC, a
    /// cable, a switch) per dimension, the parts' failures per day and the
    /// goodput after checkpoint-restart.
    Failures(failures::FailuresArgs),
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
    pub recipe: Recipes,
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
        Command::Failures(a) => failures::run(&a),
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
    let checked = Executor::new(&bars)
        .run(jobs::Validate { files: &a.files })
        .map_err(lift)?;
    let lines = report::validation::write_all(&checked, &a.out, &bars)?;
    bars.finish();
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
    let views = Executor::quiet()
        .run(jobs::Eval {
            study: &study,
            bws: &bws,
        })
        .map_err(lift)?;
    for v in &views {
        eprint!("{}", report::text::bounds_warnings(&v.evaluation));
    }
    match json {
        true => println!("{}", report::json::evaluations(&study, &views)),
        false => print!("{}", report::text::evaluations(&study, &views)),
    }
    Ok(())
}

fn optimize(a: OptimizeArgs) -> anyhow::Result<()> {
    let (catalog, json, budget_usd, budget_w) = (a.catalog, a.json, a.budget_usd, a.budget_w);
    let mut study = load_study(&a.study)?;
    if a.no_study_constraints {
        study.optimize.constraints.clear();
    }
    let objective = study.objective(a.objective.as_deref(), a.target_ms)?;
    let constraints = study.constraints(&a.constraints)?;
    let problem = Problem::new(&study.fabric, study.iteration_model(), study.linear_cost(), constraints);
    for (flag, v) in [("--budget-usd", budget_usd), ("--budget-w", budget_w)] {
        if v.is_some() && !catalog {
            return Err(InputError::arg(flag, "a capex or power budget applies with --catalog").into());
        }
    }
    let evaluator = a.ev.apply(&mut study)?;
    if catalog {
        if evaluator == Evaluator::Schedule {
            return Err(InputError::arg(
                    "--catalog",
                    "the catalog optimum uses the analytic model: drop --evaluator schedule (or the study's [evaluator] kind) for it",
                )
                .into());
        }
        let started = Instant::now();
        let job = jobs::CatalogOptimum {
            buying: &dimsum::pipeline::procure::Buying::of(&study),
            problem: &problem,
            objective,
            budget_usd,
            budget_w,
        };
        let c = Executor::quiet().run(job).map_err(lift)?;
        let solve_ms = started.elapsed().as_secs_f64() * 1e3;
        let (usd, w) = (c.budget_usd, c.budget_w);
        match json {
            true => println!(
                "{}",
                report::json::catalog(&study, objective, usd, w, &c.comparison, &c.bom, solve_ms)
            ),
            false => print!("{}", report::text::catalog(&study, &c.comparison, &c.bom, usd)),
        }
        return Ok(());
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
    let FrontierSpec { axis, points } = study.frontier_request(axis.as_deref(), points)?;
    let dir = out.unwrap_or_else(|| PathBuf::from("results").join(&study.name));
    let bars = Bars::new();
    let job = run::StudyFrontier {
        study: &study,
        axis,
        points,
        schedule_backed: evaluator == Evaluator::Schedule,
    };
    let r = Executor::new(&bars).run(job).map_err(lift)?;
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
    let b = dimsum::model::bom::bom(&study.fabric, &study.procurement(), &bw)
        .map_err(|e| InputError::arg("--bw", e.to_string()))?;
    match json {
        true => println!("{}", report::json::bom(&study, &bw, &b)),
        false => print!("{}", report::text::bom(&study, &b)),
    }
    Ok(())
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
        let results = Executor::new(&bars)
            .checkpoints(&dir)
            .run(run::RunStudy { study: &study })
            .map_err(lift)?;
        bars.finish();
        let summary = report::study::write_staged(&study, &results, &dir)?;
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
        let job = jobs::Sweep {
            on: dimsum::pipeline::sweep::SweepOn::of(&study),
            spec,
            shard,
        };
        let o = Executor::new(&bars).checkpoints(&dir).run(job).map_err(lift)?;
        bars.finish();
        println!("{}", report::text::sweep_outcome(&spec.name, shard, &o));
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
    let (top, json, replay) = (a.top, a.json, a.replay);
    let study = load_study_for_coopt(&a.study)?;
    let started = Instant::now();
    let bars = Bars::new();
    let job = jobs::Coopt {
        study: &study,
        recipes: a.recipe,
        replay,
    };
    let mut found = Executor::new(&bars).run(job).map_err(lift)?;
    bars.finish();
    let secs = started.elapsed().as_secs_f64();
    // `--replay`: a replay that fails is an error of the run (exit 1), not
    // of the input.
    if let Some(Err(e)) = found.replay.take_if(|r| r.is_err()) {
        return Err(lift(e.into()));
    }
    let (r, acc, archs) = (&found.coopt, found.accelerators.as_ref(), found.archs.as_ref());
    if json {
        let replayed = found.replay.as_ref();
        println!("{}", report::json::coopt(&study, r, acc, archs, replayed, secs, top));
    } else {
        let replayed = replay.then(|| found.replay.as_ref().and_then(|m| m.as_ref().ok()));
        print!("{}", report::text::coopt_results(&study, &found, replayed, secs, top));
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

fn import_msccl(a: ImportMscclArgs) -> anyhow::Result<()> {
    let s = convert::import_msccl(&a.file, &a.out).map_err(lift)?;
    println!("{}", report::text::imported(&s, &a.out));
    Ok(())
}

fn import_chakra(a: ImportChakraArgs) -> anyhow::Result<()> {
    let s = convert::import_chakra(&a.prefix, &a.out).map_err(lift)?;
    println!("{}", report::text::imported(&s, &a.out));
    Ok(())
}

fn import_libra(a: ImportLibraArgs) -> anyhow::Result<()> {
    let (n, w, c, k) = (&a.network, &a.workload, &a.communicator, &a.cost);
    let mut study = Study::from_libra_files(n, w, c, k)?;
    if let Some(name) = a.name {
        study.name = name;
    }
    print!("{}", study.libra_toml(n, w, c, k));
    Ok(())
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

/// Loads a study for a command that needs its own workload (`coopt`
/// searches the strategies itself: the study's own may be missing or not
/// fit), and prints its warnings (each located) on stderr.
fn load_study(path: &Path) -> Result<Study, InputError> {
    let study = load_study_for_coopt(path)?;
    study.require_workload()?;
    Ok(study)
}

fn load_study_for_coopt(path: &Path) -> Result<Study, InputError> {
    let study = Study::load(path)?;
    for w in &study.warnings {
        eprintln!("warning: {w}");
    }
    Ok(study)
}

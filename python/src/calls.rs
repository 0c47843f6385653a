//! The calls that take no loaded study: `run` (a study's whole run into a
//! directory) and `collective` (one schedule replayed).

use crate::Failure;
use crate::observe::interruptible;
use crate::study::EvaluatorArgs;
use dimsum::pipeline::collective::{Outcome, Request};
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::run::RunStudy;
use dimsum::report;
use pyo3::prelude::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Paths as strings.
fn names(files: &[PathBuf]) -> Vec<String> {
    files.iter().map(|f| f.display().to_string()).collect()
}

/// `dimsum run STUDY --out OUT`: everything the study declares, written
/// into `OUT/<study>/`. Returns the study's name and warnings, the
/// directory, the summary, every file written, the recommended optimum per objective (as
/// `optimize.json` has them) and, with `[procurement]`, the decision
/// (`report::json::decision`).
#[pyfunction]
#[pyo3(signature = (path, out=PathBuf::from("results"), evaluator=None, schedule_algorithm=None, schedule_chunks=None, progress=None))]
pub fn run(
    py: Python<'_>,
    path: PathBuf,
    out: PathBuf,
    evaluator: Option<String>,
    schedule_algorithm: Option<String>,
    schedule_chunks: Option<u32>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let ev = EvaluatorArgs {
        evaluator,
        algorithm: schedule_algorithm,
        chunks: schedule_chunks,
    };
    let v = interruptible(py, progress, |obs| {
        let study = dimsum::Study::load(&path)?;
        study.require_workload()?;
        let (study, _) = ev.apply(&study)?;
        let dir = out.join(&study.name);
        dimsum::io::create_dir(&dir)?;
        // Sweeps keep their CSV (and checkpoint) in `dir` as they finish,
        // so a re-run resumes; the report's files land together.
        let results = Executor::new(obs).checkpoints(&dir).run(RunStudy { study: &study })?;
        let staged = dimsum::io::Staged::new(&dir)?;
        let written = report::study::write(&study, &results, staged.dir())?;
        let summary = written
            .first()
            .map_or_else(|| dir.join("summary.md"), |f| staged.final_path(f));
        let mut files = staged.commit()?;
        files.extend(results.sweeps.iter().filter_map(|s| s.outcome.csv.clone()));
        let recommended: Vec<Value> = results
            .recommended
            .iter()
            .map(|r| match &r.outcome {
                Ok(s) => json!({ "objective": r.objective, "solution": s }),
                Err(e) => json!({ "objective": r.objective, "error": e.to_string() }),
            })
            .collect();
        let decision = results
            .procurement
            .as_ref()
            .map_or(Value::Null, |p| report::json::decision(&study, p));
        Ok(json!({
            "study": study.name,
            "warnings": study.warnings,
            "directory": dir.display().to_string(),
            "summary": summary.display().to_string(),
            "files": names(&files),
            "recommended": recommended,
            "decision": decision,
        }))
    })?;
    Ok(crate::to_py(py, &v)?.unbind())
}

/// `dimsum collective --json`: one collective's schedule built (or read)
/// and replayed on a topology against its lower bounds, or a forest on a
/// product network timed in rounds. Every option is the CLI flag's text
/// (`size="64MiB"`, `link_gbps="50,100"`); `schedule_out` writes the
/// schedule, `charts` the utilization and timeline charts.
#[pyfunction]
#[pyo3(signature = (topology, collective="all-reduce".to_string(), size=None, algorithm=None, dim_algorithms=None, chunks_per_npu=1, link_gbps=None, link_latency_us=None, bw=None, link_model="alpha-beta".to_string(), single_port=false, best_tolerance="1%".to_string(), seed=0, restarts=1, schedule_in=None, schedule_out=None, charts=None, replay=false, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn collective(
    py: Python<'_>,
    topology: String,
    collective: String,
    size: Option<String>,
    algorithm: Option<String>,
    dim_algorithms: Option<String>,
    chunks_per_npu: u32,
    link_gbps: Option<String>,
    link_latency_us: Option<String>,
    bw: Option<String>,
    link_model: String,
    single_port: bool,
    best_tolerance: String,
    seed: u64,
    restarts: u32,
    schedule_in: Option<PathBuf>,
    schedule_out: Option<PathBuf>,
    charts: Option<PathBuf>,
    replay: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let request = Request {
        topology,
        collective,
        algorithm,
        dim_algorithms,
        size,
        chunks_per_npu,
        link_gbps,
        link_latency_us,
        bw,
        link_model,
        single_port,
        best_tolerance,
        seed,
        restarts,
        schedule_in,
        replay,
        schedule_out: schedule_out.is_some(),
        charts: charts.is_some(),
    };
    let v = interruptible(py, progress, |obs| {
        let out = match Executor::new(obs).run(request)? {
            Outcome::Replayed(out) => out,
            Outcome::Rounds(r) => return Ok(report::collective::rounds_json(&r.topology, r.size, &r.time, &r.bounds)),
        };
        if let Some(path) = &schedule_out {
            dimsum::io::write_atomic(path, out.schedule.to_json().as_bytes())?;
        }
        if let Some(dir) = &charts {
            let staged = dimsum::io::Staged::new(dir)?;
            report::schedule::utilization_chart(staged.dir(), &out.topo, &out.sim).map_err(Failure::from)?;
            report::schedule::timeline_chart(staged.dir(), &out.topo, &out.schedule, &out.sim)
                .map_err(Failure::from)?;
            staged.commit()?;
        }
        Ok(report::collective::json(&out))
    })?;
    Ok(crate::to_py(py, &v)?.unbind())
}

//! `_dimsum.Study`: a study file loaded once, and the commands that read
//! one study (`eval`, `optimize`, `frontier`, `coopt`, `bom`), each
//! parsing its arguments as the CLI parses its flags and returning what
//! the CLI's `--json` prints.

use crate::observe::interruptible;
use crate::{Failure, to_py};
use dimsum::error::InputError as Bad;
use dimsum::optimize::Problem;
use dimsum::optimize::scheduled::Evaluator;
use dimsum::pipeline::exec::Executor;
use dimsum::pipeline::jobs::{self, Recipes};
use dimsum::pipeline::run;
use dimsum::report;
use dimsum::study::FrontierSpec;
use pyo3::prelude::*;
use serde_json::Value;
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Instant;

/// A study file, read and validated (`Study.load`).
#[pyclass(frozen, module = "dimsum._dimsum")]
pub struct Study {
    inner: dimsum::Study,
}

/// The evaluator options of eval, optimize, frontier and run
/// (`--evaluator`, `--schedule-algorithm`, `--schedule-chunks`).
#[derive(Debug, Clone, Default)]
pub struct EvaluatorArgs {
    /// analytic or schedule.
    pub evaluator: Option<String>,
    /// The schedules' algorithm.
    pub algorithm: Option<String>,
    /// Chunks per NPU of the schedules.
    pub chunks: Option<u32>,
}

impl EvaluatorArgs {
    /// `study` with the options applied (a copy only when one is given),
    /// and the evaluator in force.
    pub fn apply<'a>(&self, study: &'a dimsum::Study) -> Result<(Cow<'a, dimsum::Study>, Evaluator), Bad> {
        if self.evaluator.is_none() && self.algorithm.is_none() && self.chunks.is_none() {
            return Ok((Cow::Borrowed(study), study.evaluator.evaluator));
        }
        let mut s = study.clone();
        let e = s.override_evaluator(self.evaluator.as_deref(), self.algorithm.as_deref(), self.chunks)?;
        Ok((Cow::Owned(s), e))
    }
}

/// A JSON value, as Python.
fn py_value(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(to_py(py, v)?.unbind())
}

/// Milliseconds since `t`.
fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[pymethods]
impl Study {
    /// Reads and validates the study file at `path` (errors: `InputError`
    /// at the file's line and key).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Study> {
        let loaded = py.detach(|| dimsum::Study::load(&path));
        match loaded {
            Ok(inner) => Ok(Study { inner }),
            Err(e) => Err(crate::input_error(py, &e)),
        }
    }

    /// The study's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The study's description.
    #[getter]
    fn description(&self) -> &str {
        &self.inner.description
    }

    /// The file it was read from.
    #[getter]
    fn path(&self) -> String {
        self.inner.path.display().to_string()
    }

    /// The dimensions' names, fastest first.
    #[getter]
    fn dims(&self) -> Vec<String> {
        self.inner.fabric.dims.iter().map(|d| d.name.clone()).collect()
    }

    /// NPUs in the fabric.
    #[getter]
    fn npus(&self) -> u64 {
        self.inner.fabric.npus()
    }

    /// The fabric's shape, e.g. `Ring(4) x Switch(32)`.
    #[getter]
    fn fabric(&self) -> String {
        self.inner.fabric.shape()
    }

    /// The study's own allocation (`bw`), GB/s per NPU per dimension.
    #[getter]
    fn bw(&self) -> Option<Vec<f64>> {
        self.inner.bw.clone()
    }

    /// Whether the study has a `[model]` (what `coopt` parallelizes).
    #[getter]
    fn has_model(&self) -> bool {
        self.inner.model.is_some()
    }

    /// The study's warnings, each located (the CLI prints them on stderr).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Study({:?}: {} = {} NPUs)",
            self.inner.name,
            self.inner.fabric.shape(),
            self.inner.fabric.npus()
        )
    }

    /// `dimsum eval --json` (one allocation): returns (the JSON as a dict,
    /// the CLI's warnings on stderr).
    #[pyo3(signature = (bw=None, evaluator=None, schedule_algorithm=None, schedule_chunks=None, progress=None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        bw: Option<Vec<f64>>,
        evaluator: Option<String>,
        schedule_algorithm: Option<String>,
        schedule_chunks: Option<u32>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(Py<PyAny>, Vec<String>)> {
        let ev = EvaluatorArgs {
            evaluator,
            algorithm: schedule_algorithm,
            chunks: schedule_chunks,
        };
        let study = &self.inner;
        let (v, warnings) = interruptible(py, progress, |obs| {
            study.require_workload()?;
            let bw = match &bw {
                Some(b) => study.check_allocation(b)?,
                None => study.allocation(None)?,
            };
            let (study, evaluator) = ev.apply(study)?;
            if evaluator == Evaluator::Schedule {
                let warnings = report::text::bounds_warnings(&study.evaluate_given(&bw)?);
                let (e, m) = study.evaluate_backed(&bw).map_err(|e| match study.evaluator_error(e) {
                    Ok(input) => Failure::Input(input),
                    Err(other) => Failure::Other(other.to_string()),
                })?;
                return Ok((report::json::scheduled_evaluation(&study, &e, &m), warnings));
            }
            let bws = [bw];
            let views = Executor::new(obs).run(jobs::Eval {
                study: &study,
                bws: &bws,
            })?;
            let warnings: String = views
                .iter()
                .map(|v| report::text::bounds_warnings(&v.evaluation))
                .collect();
            Ok((report::json::evaluations(&study, &views), warnings))
        })?;
        let warnings = warnings.lines().map(str::to_string).collect();
        Ok((py_value(py, &v)?, warnings))
    }

    /// `dimsum optimize --json`: the certified optimum (with `catalog`,
    /// the best purchasable fabric; with the schedule evaluator, the fixed
    /// point against replayed schedules).
    #[pyo3(signature = (objective=None, constraints=Vec::new(), target_ms=None, no_study_constraints=false, catalog=false, budget_usd=None, budget_w=None, evaluator=None, schedule_algorithm=None, schedule_chunks=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn optimize(
        &self,
        py: Python<'_>,
        objective: Option<String>,
        constraints: Vec<String>,
        target_ms: Option<f64>,
        no_study_constraints: bool,
        catalog: bool,
        budget_usd: Option<f64>,
        budget_w: Option<f64>,
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
        let study = &self.inner;
        let v = interruptible(py, progress, |obs| {
            study.require_workload()?;
            let mut study = Cow::Borrowed(study);
            if no_study_constraints {
                study.to_mut().optimize.constraints.clear();
            }
            let objective = study.objective(objective.as_deref(), target_ms)?;
            let cons = study.constraints(&constraints)?;
            let problem = Problem::new(&study.fabric, study.iteration_model(), study.linear_cost(), cons);
            for (flag, v) in [("--budget-usd", budget_usd), ("--budget-w", budget_w)] {
                if v.is_some() && !catalog {
                    return Err(Bad::arg(flag, "a capex or power budget applies with --catalog").into());
                }
            }
            let (study, evaluator) = ev.apply(&study)?;
            let ex = Executor::new(obs);
            let started = Instant::now();
            if catalog {
                if evaluator == Evaluator::Schedule {
                    return Err(Bad::arg(
                        "--catalog",
                        "the catalog optimum uses the analytic model: drop --evaluator schedule (or the study's [evaluator] kind) for it",
                    )
                    .into());
                }
                let c = ex.run(jobs::CatalogOptimum {
                    buying: &dimsum::pipeline::procure::Buying::of(&study),
                    problem: &problem,
                    objective,
                    budget_usd,
                    budget_w,
                })?;
                let (usd, w, ms) = (c.budget_usd, c.budget_w, ms_since(started));
                return Ok(report::json::catalog(
                    &study,
                    objective,
                    usd,
                    w,
                    &c.comparison,
                    &c.bom,
                    ms,
                ));
            }
            if evaluator == Evaluator::Schedule {
                let backed = study.backed(&study.evaluator);
                let fp = ex
                    .run(jobs::FixedPoint {
                        backed: &backed,
                        problem: &problem,
                        objective,
                    })
                    .map_err(|e| e.in_study(&study))?;
                return Ok(report::json::fixed_point(
                    &study,
                    &problem,
                    &fp,
                    Some(ms_since(started)),
                ));
            }
            let sol = ex.run(jobs::Optimize {
                problem: &problem,
                objective,
            })?;
            let solve_ms = ms_since(started);
            let e = study.evaluate(&sol.bw_gbps);
            Ok(report::json::optimum(&study, &sol, solve_ms, &e))
        })?;
        py_value(py, &v)
    }

    /// `dimsum frontier`: the fastest design at `points` budgets on
    /// `axis`, as a dict (`report::json::frontier`) with `files`: the CSV
    /// and charts written into `out`, when given.
    #[pyo3(signature = (axis=None, points=None, out=None, evaluator=None, schedule_algorithm=None, schedule_chunks=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn frontier(
        &self,
        py: Python<'_>,
        axis: Option<String>,
        points: Option<usize>,
        out: Option<PathBuf>,
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
        let study = &self.inner;
        let v = interruptible(py, progress, |obs| {
            study.require_workload()?;
            let (study, evaluator) = ev.apply(study)?;
            let FrontierSpec { axis, points } = study.frontier_request(axis.as_deref(), points)?;
            let r = Executor::new(obs).run(run::StudyFrontier {
                study: &study,
                axis,
                points,
                schedule_backed: evaluator == Evaluator::Schedule,
            })?;
            let mut files = Vec::new();
            if let Some(dir) = &out {
                let staged = dimsum::io::Staged::new(dir)?;
                report::study::frontier_files(&study, &study.stamp(), &r, staged.dir())?;
                files = staged.commit()?;
            }
            let mut v = report::json::frontier(&study, &r);
            if let Value::Object(o) = &mut v {
                let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                o.insert("files".into(), files.into());
            }
            Ok(v)
        })?;
        py_value(py, &v)
    }

    /// `dimsum coopt --json`: the parallelization chosen with the fabric.
    #[pyo3(signature = (recipe="study".to_string(), replay=false, top=10, progress=None))]
    fn coopt(
        &self,
        py: Python<'_>,
        recipe: String,
        replay: bool,
        top: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let study = &self.inner;
        let v = interruptible(py, progress, |obs| {
            let recipes = recipe
                .parse::<Recipes>()
                .map_err(|e| Bad::arg("--recipe", e.to_string()))?;
            let started = Instant::now();
            let job = jobs::Coopt { study, recipes, replay };
            let mut found = Executor::new(obs).run(job)?;
            let secs = started.elapsed().as_secs_f64();
            // A replay that fails is an error of the run, not of the input.
            if let Some(Err(e)) = found.replay.take_if(|r| r.is_err()) {
                return Err(Failure::from(dimsum::RunError::from(e)));
            }
            let (r, acc, archs) = (&found.coopt, found.accelerators.as_ref(), found.archs.as_ref());
            Ok(report::json::coopt(
                study,
                r,
                acc,
                archs,
                found.replay.as_ref(),
                secs,
                top,
            ))
        })?;
        py_value(py, &v)
    }

    /// `dimsum bom --json`: the bill of materials of an allocation (default:
    /// the study's `bw`).
    #[pyo3(signature = (bw=None))]
    fn bom(&self, py: Python<'_>, bw: Option<Vec<f64>>) -> PyResult<Py<PyAny>> {
        let study = &self.inner;
        let v = interruptible(py, None, |_| {
            study.require_workload()?;
            let bw = match &bw {
                Some(b) => study.check_allocation(b)?,
                None => study.allocation(None)?,
            };
            let b = dimsum::model::bom::bom(&study.fabric, &study.procurement(), &bw)
                .map_err(|e| Bad::arg("--bw", e.to_string()))?;
            Ok(report::json::bom(study, &bw, &b))
        })?;
        py_value(py, &v)
    }
}

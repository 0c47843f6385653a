//! The executor: one way to run any of the pipeline's jobs.
//!
//! As argmin keeps the problem, the solver and the executor apart, a job
//! ([`Job`]: optimize, frontier, procure, sweep, coopt, replay, validate,
//! synthesize, a study's whole run; the values in `pipeline::jobs` and
//! `pipeline::run`) is a value holding the narrow inputs it reads and
//! returning a typed result; the [`Executor`] runs any of them with one
//! [`Observer`](crate::progress::Observer) for progress and cancellation,
//! one place for checkpoints (a sweep's partial CSV, resumed by the next
//! run) and one error type, [`RunError`].
//!
//! ```
//! use dimsum::pipeline::exec::{Executor, Job, RunError};
//! use dimsum::progress::Recorder;
//!
//! /// A job of one's own: counts to `n`, reporting each step.
//! struct Count(usize);
//! impl Job for Count {
//!     type Output = usize;
//!     fn name(&self) -> String {
//!         "count".into()
//!     }
//!     fn run(self, ex: &Executor) -> Result<usize, RunError> {
//!         for i in 1..=self.0 {
//!             ex.step(&self.name(), i, self.0)?;
//!         }
//!         Ok(self.0)
//!     }
//! }
//!
//! let seen = Recorder::default();
//! assert_eq!(Executor::new(&seen).run(Count(3))?, 3);
//! assert_eq!(seen.last("count"), Some((3, 3)));
//! // A cancelled observer stops the job at its next step.
//! seen.cancel();
//! assert!(matches!(Executor::new(&seen).run(Count(3)), Err(RunError::Cancelled)));
//! # Ok::<(), RunError>(())
//! ```

use super::coopt::{CooptError, ReplayError};
use super::procure::ProcureError;
use crate::error::InputError;
use crate::io::WriteError;
use crate::optimize::OptError;
use crate::optimize::scheduled::ScheduledError;
use crate::progress::{Observer, Progress, Quiet};
use crate::schedule::algorithm::SpecError;
use crate::schedule::simulate::SimError;
use std::path::Path;

/// Why a job stopped: the pipeline's one error type.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: the study (or an option applied to it) asks for
    /// something that cannot be built.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An optimization failed where the run cannot go on without it.
    #[error(transparent)]
    Opt(OptError),
    /// A schedule-backed replay or solve failed.
    #[error(transparent)]
    Scheduled(ScheduledError),
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The co-optimization could not run.
    #[error(transparent)]
    Coopt(CooptError),
    /// The catalog optimum could not be found or bought.
    #[error(transparent)]
    Procure(ProcureError),
    /// The joint optimum could not be replayed.
    #[error("replaying the joint optimum: {0}")]
    Replay(ReplayError),
    /// A collective's schedule could not be built as asked.
    #[error(transparent)]
    Build(#[from] SpecError),
    /// A schedule could not be replayed (it does not fit the topology).
    #[error(transparent)]
    Simulate(#[from] SimError),
    /// A comparison's schedule could not be built.
    #[error(transparent)]
    Compare(crate::schedule::compare::CompareError),
    /// The observer asked the work to stop.
    #[error("cancelled")]
    Cancelled,
}

impl From<ProcureError> for RunError {
    /// A catalog objective or budget that cannot be asked is bad input.
    fn from(e: ProcureError) -> RunError {
        match e {
            ProcureError::Objective(i) => RunError::Input(i),
            other => RunError::Procure(other),
        }
    }
}

impl From<OptError> for RunError {
    fn from(e: OptError) -> RunError {
        match e {
            OptError::Cancelled => RunError::Cancelled,
            other => RunError::Opt(other),
        }
    }
}

impl From<CooptError> for RunError {
    fn from(e: CooptError) -> RunError {
        match e {
            CooptError::Cancelled => RunError::Cancelled,
            other => RunError::Coopt(other),
        }
    }
}

impl From<ReplayError> for RunError {
    fn from(e: ReplayError) -> RunError {
        match e {
            ReplayError::Scheduled(s) if s.is_cancelled() => RunError::Cancelled,
            other => RunError::Replay(other),
        }
    }
}

impl From<crate::schedule::compare::CompareError> for RunError {
    fn from(e: crate::schedule::compare::CompareError) -> RunError {
        match e.cause {
            crate::schedule::compare::Cause::Cancelled => RunError::Cancelled,
            _ => RunError::Compare(e),
        }
    }
}

impl From<ScheduledError> for RunError {
    fn from(e: ScheduledError) -> RunError {
        match e.is_cancelled() {
            true => RunError::Cancelled,
            false => RunError::Scheduled(e),
        }
    }
}

impl RunError {
    /// This error as `study` explains it: a schedule its `[evaluator]`
    /// names but that cannot be built is bad input at that line.
    pub fn in_study(self, study: &crate::study::Study) -> RunError {
        match self {
            RunError::Scheduled(e) => RunError::scheduled(study, e),
            other => other,
        }
    }

    /// A schedule-backed error of `study`'s: a schedule its `[evaluator]`
    /// names but that cannot be built is bad input.
    pub(crate) fn scheduled(study: &crate::study::Study, e: ScheduledError) -> RunError {
        if e.is_cancelled() {
            return RunError::Cancelled;
        }
        match study.evaluator_error(e) {
            Ok(input) => RunError::Input(input),
            Err(other) => RunError::Scheduled(other),
        }
    }
}

/// A piece of the pipeline's work: its inputs are the value's fields.
pub trait Job {
    /// What it computes.
    type Output;
    /// The task it reports progress as.
    fn name(&self) -> String;
    /// Computes, reporting to `ex`'s observer.
    fn run(self, ex: &Executor) -> Result<Self::Output, RunError>;
}

/// Runs jobs with one observer and one checkpoint directory.
#[derive(Clone, Copy)]
pub struct Executor<'a> {
    observer: Progress<'a>,
    checkpoints: Option<&'a Path>,
}

impl std::fmt::Debug for Executor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("checkpoints", &self.checkpoints)
            .finish_non_exhaustive()
    }
}

impl<'a> Executor<'a> {
    /// Reports to `observer`; a sweep run without
    /// [`Executor::checkpoints`] keeps its files in the current directory.
    pub fn new(observer: &'a dyn Observer) -> Executor<'a> {
        Executor {
            observer,
            checkpoints: None,
        }
    }

    /// Reports nothing and is never cancelled.
    pub fn quiet() -> Executor<'static> {
        Executor::new(&Quiet)
    }

    /// Jobs that checkpoint (sweeps) keep their partial files in `dir` and
    /// resume from them.
    pub fn checkpoints(self, dir: &'a Path) -> Executor<'a> {
        Executor {
            checkpoints: Some(dir),
            ..self
        }
    }

    /// Where checkpoints go, if anywhere.
    pub fn checkpoint_dir(&self) -> Option<&'a Path> {
        self.checkpoints
    }

    /// The observer jobs report to.
    pub fn observer(&self) -> Progress<'a> {
        self.observer
    }

    /// Runs `job` (refused at once if the observer has cancelled).
    pub fn run<J: Job>(&self, job: J) -> Result<J::Output, RunError> {
        self.check()?;
        job.run(self)
    }

    /// Reports `done` of `total` steps of `task`, then stops the job if
    /// the observer has cancelled.
    pub fn step(&self, task: &str, done: usize, total: usize) -> Result<(), RunError> {
        self.observer.progress(task, done, total);
        self.check()
    }

    /// `Err(Cancelled)` once the observer asks to stop.
    pub fn check(&self) -> Result<(), RunError> {
        if self.observer.cancelled() {
            Err(RunError::Cancelled)
        } else {
            Ok(())
        }
    }
}

//! Long work with the GIL released: the job runs on a worker thread, its
//! progress goes to the Python callback (the GIL taken for each call), and
//! the calling thread, Python's, waits with the GIL released, checking for
//! signals every 50 ms. A KeyboardInterrupt (Ctrl-C), or an exception the
//! callback raises, cancels the job at its next step (`Observer::cancelled`)
//! and is raised once the worker has stopped.

use crate::Failure;
use dimsum::progress::Observer;
use pyo3::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the waiting thread looks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

/// The observer of one call: a Python callback, and the first error that
/// should stop the work.
pub struct PyObserver {
    callback: Option<Py<PyAny>>,
    stop: AtomicBool,
    error: Mutex<Option<PyErr>>,
}

impl PyObserver {
    fn new(callback: Option<Py<PyAny>>) -> PyObserver {
        PyObserver {
            callback,
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// Keeps the first error and asks the work to stop.
    fn fail(&self, e: PyErr) {
        if let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    fn take_error(&self) -> Option<PyErr> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }
}

impl Observer for PyObserver {
    fn progress(&self, task: &str, done: usize, total: usize) {
        let Some(cb) = &self.callback else {
            return;
        };
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        Python::attach(|py| {
            if let Err(e) = cb.call1(py, (task, done, total)) {
                self.fail(e);
            }
        });
    }

    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Marks the work done and wakes the waiting thread when dropped.
struct Done<'a>(&'a AtomicBool, std::thread::Thread);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
        self.1.unpark();
    }
}

/// Runs `work` on a worker thread with `callback` as its observer, the
/// GIL released while it runs; Ctrl-C or a raising callback cancels it
/// and is raised here (even if the work finished first: the interrupt
/// happened). Bad input becomes `InputError`, other failures `DimsumError`.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    work: impl FnOnce(&dyn Observer) -> Result<T, Failure> + Send,
) -> PyResult<T> {
    let obs = PyObserver::new(callback);
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let caller = std::thread::current();
        let (obs, done) = (&obs, &done);
        let worker = s.spawn(move || {
            // Set and the caller woken even if `work` panics.
            let _done = Done(done, caller);
            work(obs)
        });
        while !done.load(Ordering::Acquire) {
            py.detach(|| std::thread::park_timeout(POLL));
            if let Err(e) = py.check_signals() {
                obs.fail(e);
            }
        }
        worker.join()
    });
    if let Some(e) = obs.take_error() {
        return Err(e);
    }
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(f)) => Err(f.into_py(py)),
        Err(_) => Err(crate::DimsumError::new_err("dimsum's worker thread panicked")),
    }
}

//! Progress and cancellation of long work: one [`Observer`] type that every
//! job reports to (a terminal bar, log lines, a Python callback, nothing),
//! whatever layer the work runs in.
//!
//! ```
//! use dimsum::progress::{Observer, Quiet, Recorder};
//!
//! // Any `Fn(&str, usize, usize) + Sync` closure is an observer.
//! let seen = std::sync::Mutex::new(Vec::new());
//! let log = |task: &str, done: usize, total: usize| {
//!     seen.lock().unwrap().push(format!("{task} {done}/{total}"));
//! };
//! log.progress("frontier", 3, 8);
//! assert_eq!(seen.lock().unwrap().as_slice(), ["frontier 3/8"]);
//! assert!(!Quiet.cancelled());
//!
//! // A recorder keeps the last count of each task and can be cancelled.
//! let r = Recorder::default();
//! r.progress("sweep", 1, 4);
//! r.progress("sweep", 4, 4);
//! assert_eq!(r.last("sweep"), Some((4, 4)));
//! r.cancel();
//! assert!(r.cancelled());
//! ```

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Hears how long work is going, and may ask it to stop.
pub trait Observer: Sync {
    /// `done` of `total` steps of `task` are finished (`task` names the
    /// step: "frontier cost", "sweep shapes", "strategies", ...).
    fn progress(&self, task: &str, done: usize, total: usize);

    /// Whether the work should stop at its next step (Ctrl-C in Python, a
    /// deadline). Work that checks it ends early: a job with
    /// `RunError::Cancelled`, a sweep unfinished with its partial CSV kept,
    /// to resume.
    fn cancelled(&self) -> bool {
        false
    }
}

impl<F: Fn(&str, usize, usize) + Sync> Observer for F {
    fn progress(&self, task: &str, done: usize, total: usize) {
        self(task, done, total)
    }
}

/// How a call takes its observer.
pub type Progress<'a> = &'a dyn Observer;

/// Hears nothing and never cancels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn progress(&self, _: &str, _: usize, _: usize) {}
}

/// Keeps the last count of every task, in the order the tasks first
/// reported, and can be cancelled: for tests, and for callers that poll.
#[derive(Debug, Default)]
pub struct Recorder {
    seen: Mutex<Vec<(String, usize, usize)>>,
    stop: AtomicBool,
}

impl Recorder {
    /// The last `(done, total)` of `task`.
    pub fn last(&self, task: &str) -> Option<(usize, usize)> {
        let seen = self.seen.lock().ok()?;
        seen.iter().find(|(t, _, _)| t == task).map(|&(_, d, n)| (d, n))
    }

    /// Asks the work to stop at its next step.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Observer for Recorder {
    fn progress(&self, task: &str, done: usize, total: usize) {
        if let Ok(mut seen) = self.seen.lock() {
            match seen.iter_mut().find(|(t, _, _)| t == task) {
                Some(e) => (e.1, e.2) = (done, total),
                None => seen.push((task.to_string(), done, total)),
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The `index`-th of `parts` equal parts of one task's progress: each
/// `(done, total)` it hears is reported to `outer` as
/// `(index * total + done, parts * total)`.
pub struct Part<'a> {
    outer: Progress<'a>,
    index: usize,
    parts: usize,
}

impl<'a> Part<'a> {
    /// Part `index` (from 0) of `parts`.
    pub fn new(outer: Progress<'a>, index: usize, parts: usize) -> Part<'a> {
        Part { outer, index, parts }
    }
}

impl Observer for Part<'_> {
    fn progress(&self, task: &str, done: usize, total: usize) {
        self.outer.progress(task, self.index * total + done, self.parts * total);
    }

    fn cancelled(&self) -> bool {
        self.outer.cancelled()
    }
}

/// Hears no progress but passes on `outer`'s cancellation: for steps
/// inside a step that reports for them both (a schedule-backed frontier's
/// fixed points).
pub struct CancelOnly<'a>(pub Progress<'a>);

impl Observer for CancelOnly<'_> {
    fn progress(&self, _: &str, _: usize, _: usize) {}

    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// Runs `work` while another thread calls `tick` every 200 ms (progress
/// of one long step that reports nothing itself); the ticker stops when
/// `work` returns or panics.
pub fn ticking<R>(tick: &(dyn Fn() + Sync), work: impl FnOnce() -> R) -> R {
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                tick();
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        let _stop = Stop(&done);
        work()
    })
}

//! Progress on a terminal: bars on stderr that appear once a step has
//! lasted a second, or, where stderr is no terminal (a Slurm log, CI), one
//! log line at most every 10 s. [`Bars`] is an
//! [`Observer`](crate::progress::Observer): any job reports to it.

use crate::progress::Observer;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// A progress bar on stderr that appears only once the work has lasted a
/// second (quick runs print nothing). Where stderr is no terminal (a Slurm
/// log, CI), a step that lasts over 5 s logs one line instead, at most
/// every 10 s: the step, done/total and the time elapsed.
pub struct Bar {
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

impl Bar {
    /// A bar of `len` steps named `what`, with an ETA.
    pub fn new(len: usize, what: &str) -> Bar {
        Bar::styled(len, what, true)
    }

    /// A bar with an ETA at the mean rate (`eta`), or without one (stages
    /// of unlike lengths, where a rate says nothing).
    fn styled(len: usize, what: &str, eta: bool) -> Bar {
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
        Bar {
            bar,
            start: Instant::now(),
            what: what.to_string(),
            logged: std::sync::Mutex::new(None),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    /// `done` steps are finished.
    pub fn set(&self, done: usize) {
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

    /// Clears the bar.
    pub fn finish(&self) {
        if !self.bar.is_hidden() {
            self.bar.finish_and_clear();
        }
    }
}

/// Progress bars for the pipeline's tasks: a new bar whenever the task
/// changes.
pub struct Bars {
    current: std::sync::Mutex<Option<(String, Bar)>>,
    eta: bool,
}

impl Bars {
    /// Bars with an ETA.
    pub fn new() -> Bars {
        Bars {
            current: std::sync::Mutex::new(None),
            eta: true,
        }
    }

    /// Bars counting stages of unlike lengths: elapsed time, no ETA.
    pub fn stages() -> Bars {
        Bars {
            eta: false,
            ..Bars::new()
        }
    }

    /// `done` of `total` steps of `task` (a new bar when the task changes).
    pub fn update(&self, task: &str, done: usize, total: usize) {
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
            *cur = Some((task.to_string(), Bar::styled(total, task, self.eta)));
        }
        if let Some((_, p)) = cur.as_ref() {
            p.set(done);
        }
    }

    /// Clears the current bar.
    pub fn finish(&self) {
        if let Ok(mut cur) = self.current.lock()
            && let Some((_, p)) = cur.take()
        {
            p.finish();
        }
    }
}

impl Default for Bars {
    fn default() -> Bars {
        Bars::new()
    }
}

impl Observer for Bars {
    fn progress(&self, task: &str, done: usize, total: usize) {
        self.update(task, done, total);
    }
}

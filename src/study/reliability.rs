//! `[reliability]`: checkpoint-restart, for the goodput of `dimsum
//! failures` and the report's "when parts fail" section
//! (`model::failure`). `checkpoint_interval_min` (minutes between
//! checkpoints, τ) and `restart_min` (minutes from a failure to training
//! again, R) are required: they are the study's own choices, with no
//! default worth guessing; `checkpoint_write_s` (seconds the job stops to
//! write a checkpoint, δ) defaults to 0 (asynchronous checkpoints).

use super::StudyFile;
use crate::error::InputError;
use crate::model::failure::Reliability;
use serde::Deserialize;
use toml::Spanned;

/// Longest checkpoint interval or restart allowed: a year, in minutes.
const MAX_MIN: f64 = 525_600.0;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReliability {
    checkpoint_interval_min: Spanned<f64>,
    restart_min: Spanned<f64>,
    checkpoint_write_s: Option<Spanned<f64>>,
}

/// A finite value in `[lo, hi]` (`lo` itself allowed only when `lo_ok`).
fn within(v: &Spanned<f64>, key: &str, lo: f64, lo_ok: bool, hi: f64, src: StudyFile<'_>) -> Result<f64, InputError> {
    let x = *v.get_ref();
    let ok = x.is_finite() && (x > lo || (lo_ok && x >= lo)) && x <= hi;
    match ok {
        true => Ok(x),
        false => Err(src.at(
            v.span(),
            format!("reliability.{key}"),
            format!(
                "{x} is not allowed: use a number {} {lo} and at most {hi}",
                if lo_ok { ">=" } else { ">" }
            ),
        )),
    }
}

/// The `[reliability]` section, checked: a write shorter than the interval.
pub(super) fn reliability(raw: &RawReliability, src: StudyFile<'_>) -> Result<Reliability, InputError> {
    let checkpoint_interval_min = within(
        &raw.checkpoint_interval_min,
        "checkpoint_interval_min",
        0.0,
        false,
        MAX_MIN,
        src,
    )?;
    let restart_min = within(&raw.restart_min, "restart_min", 0.0, true, MAX_MIN, src)?;
    let checkpoint_write_s = match &raw.checkpoint_write_s {
        None => 0.0,
        Some(w) => {
            let s = within(w, "checkpoint_write_s", 0.0, true, MAX_MIN * 60.0, src)?;
            if s >= checkpoint_interval_min * 60.0 {
                return Err(src.at(
                    w.span(),
                    "reliability.checkpoint_write_s",
                    format!("{s} s is not allowed: a checkpoint must take less than its interval ({checkpoint_interval_min} min)"),
                ));
            }
            s
        }
    };
    Ok(Reliability {
        checkpoint_interval_min,
        restart_min,
        checkpoint_write_s,
    })
}

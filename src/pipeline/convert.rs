//! What `dimsum export` and `dimsum import` do: a study or a schedule
//! written in another tool's format (ASTRA-sim's input set, MSCCL-IR XML,
//! Chakra ET traces), or a schedule read from one. Every file is written
//! atomically; a failure names the input file, and bad input stays an
//! [`InputError`] (inside [`RunError::Input`]).

use super::exec::RunError;
use crate::error::InputError;
use crate::interop::{astra, chakra, msccl};
use crate::io::{Staged, write_atomic};
use crate::schedule::Schedule;
use crate::study::Study;
use std::path::{Path, PathBuf};

/// Writes ASTRA-sim's input set for the study at `bw` GB/s per NPU per
/// dimension into `dir` (created if missing); returns the files written.
pub fn export_astra_sim(study: &Study, bw: &[f64], dir: &Path) -> Result<Vec<PathBuf>, RunError> {
    let files = astra::input_set(&study.astra_design(), bw, &dir.display().to_string())
        .map_err(|e| InputError::at(&study.path, None, "workload", e.to_string()))?;
    // All files land together or none do (an interrupt leaves nothing).
    let staged = Staged::new(dir)?;
    for (name, bytes) in &files {
        write_atomic(&staged.dir().join(name), bytes)?;
    }
    Ok(staged.commit()?)
}

/// Writes the schedule in the file `schedule` as MSCCL-IR XML to `out`;
/// returns the schedule.
pub fn export_msccl(schedule: &Path, out: &Path) -> Result<Schedule, RunError> {
    let s = Schedule::load(schedule)?;
    let xml = msccl::write(&s).map_err(|e| InputError::at(schedule, None, "", e.to_string()))?;
    write_atomic(out, xml.as_bytes())?;
    Ok(s)
}

/// Chakra ET traces written: how many (one per rank) and their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traces {
    /// Traces written, one per rank.
    pub count: usize,
    /// Their bytes in all.
    pub bytes: usize,
}

/// Writes the schedule in the file `schedule`, moving a `size_bytes`
/// collective (default: the buffer the file records; given, it must agree),
/// as one Chakra ET trace per rank, `PREFIX.RANK.et`.
pub fn export_chakra(schedule: &Path, prefix: &Path, size_bytes: Option<f64>) -> Result<Traces, RunError> {
    let s = Schedule::load(schedule)?;
    let size_bytes = s
        .size_to_use(size_bytes)
        .map_err(|e| InputError::arg("--size", e.to_string()))?;
    let traces = chakra::encode_schedule(&s, s.chunk_bytes(size_bytes))
        .map_err(|e| InputError::at(schedule, None, "", e.to_string()))?;
    // Every rank's trace lands together, or none does.
    let dir = prefix
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // A prefix must end in a name (`out/..` or `/` would put the traces
    // beside the staging directory, not in it).
    let name = prefix.file_name().ok_or_else(|| {
        InputError::arg(
            "--prefix",
            format!("`{}` ends in no file name: give one, e.g. out/ring", prefix.display()),
        )
    })?;
    let staged = Staged::new(dir)?;
    let staged_prefix = staged.dir().join(name);
    for (rank, t) in traces.iter().enumerate() {
        write_atomic(&chakra::rank_path(&staged_prefix, rank as u32), t)?;
    }
    staged.commit()?;
    Ok(Traces {
        count: traces.len(),
        bytes: traces.iter().map(Vec::len).sum(),
    })
}

/// Reads the MSCCL-IR XML file `file` and writes it as a schedule (JSON) to
/// `out`; returns the schedule.
pub fn import_msccl(file: &Path, out: &Path) -> Result<Schedule, RunError> {
    let text = crate::io::read_text(file, msccl::MAX_XML_BYTES)
        .map_err(|e| InputError::at(file, None, "", format!("cannot read: {e}")))?;
    let s = msccl::parse(&text).map_err(|e| InputError::at(file, Some(e.line as usize), "", e.message))?;
    write_atomic(out, s.to_json().as_bytes())?;
    Ok(s)
}

/// Reads the Chakra ET traces `PREFIX.0.et`, `PREFIX.1.et`, ... and writes
/// them as one schedule (JSON) to `out`; returns the schedule.
pub fn import_chakra(prefix: &Path, out: &Path) -> Result<Schedule, RunError> {
    let located = |e: chakra::TraceError| InputError::at(Path::new(&e.path), None, "", e.message);
    let traces = chakra::read_traces(prefix).map_err(located)?;
    let s = chakra::to_schedule(&traces, prefix).map_err(located)?;
    write_atomic(out, s.to_json().as_bytes())?;
    Ok(s)
}

//! What the fuzz targets share: the input as a file (for readers that take
//! a path), and the one-input check every target makes (that dimsum's
//! reader returns, Ok or a located error, without panicking).

use std::path::{Path, PathBuf};

/// The repository's root (studies name LIBRA files relative to theirs).
pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Writes `data` to this process's scratch file with extension `ext` and
/// returns its path (one per process: libFuzzer runs one input at a time).
pub fn scratch(data: &[u8], ext: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dimsum-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("input.{ext}"));
    let _ = std::fs::write(&path, data);
    path
}

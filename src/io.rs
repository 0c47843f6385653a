//! The files dimsum writes and reads: atomic writes (a temporary file
//! beside the target, then a rename, so a failed run never leaves a
//! half-written result), reads bounded in size (an input larger than its
//! reader's limit, or endless like `/dev/urandom`, is refused with the
//! limit named, and text stops at its first byte that is not UTF-8) and
//! the stamp every result carries (dimsum's version and an FNV-1a hash of
//! the inputs it came from).
//!
//! Interrupts: every temporary file or staging directory is registered
//! while it exists. The binary calls [`on_interrupt_remove_temporaries`]
//! first thing; on SIGINT, SIGTERM or SIGHUP a watcher thread removes what
//! is registered and exits (130 for Ctrl-C). Renames into place happen under
//! the same lock, so an interrupt lands either before a rename or after it:
//! never a half-written file. A command that writes several files stages
//! them ([`Staged`]) and moves them in together, so an interrupt leaves
//! either all of them or none.
//!
//! This is the bottom layer beside `error`: the model, the study and the
//! reports all write through it and it depends on nothing in the crate.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// A file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// The cause.
    pub source: std::io::Error,
}

/// What every result file records about where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stamp {
    /// dimsum's version.
    pub dimsum_version: String,
    /// FNV-1a 64-bit hash of the study file (and the LIBRA files it names).
    pub study_hash: String,
}

impl Stamp {
    /// The stamp of a study whose inputs are `bytes`.
    pub fn of(bytes: &[u8]) -> Stamp {
        Stamp::from_hash(fnv1a64(bytes))
    }

    /// The stamp of inputs whose hash (from [`fnv1a64`]) is `study_hash`.
    pub(crate) fn from_hash(study_hash: String) -> Stamp {
        Stamp {
            dimsum_version: env!("CARGO_PKG_VERSION").to_string(),
            study_hash,
        }
    }

    /// One line for charts and markdown.
    pub fn line(&self) -> String {
        format!("dimsum {} · study {}", self.dimsum_version, self.study_hash)
    }
}

/// FNV-1a 64-bit hash, as 16 hex digits: stable across platforms and versions.
///
/// ```
/// // The published FNV-1a 64-bit test vector for "a".
/// assert_eq!(dimsum::io::fnv1a64(b"a"), "af63dc4c8601ec8c");
/// ```
pub fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so readers never see a partial file (nor does an
/// interrupt leave one).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_via_temp(path, |tmp| {
        let mut f = std::fs::File::create(tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })
}

/// Lets `write` fill a registered temporary file beside `path`, then renames
/// it to `path` (under the interrupt lock). On failure the temporary goes.
pub fn write_via_temp(path: &Path, write: impl FnOnce(&Path) -> std::io::Result<()>) -> Result<(), WriteError> {
    let io = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let tmp = Temporary::new(temp_path(path, "tmp"));
    write(&tmp.0).map_err(io)?;
    let _held = pending();
    std::fs::rename(&tmp.0, path).map_err(io)
}

/// The temporaries that exist now, removed by an interrupt.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary file or directory, registered while it lives; dropped, it is
/// removed (if still there) and unregistered.
struct Temporary(PathBuf);

impl Temporary {
    fn new(path: PathBuf) -> Temporary {
        pending().push(path.clone());
        Temporary(path)
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let mut p = pending();
        remove_path(&self.0);
        if let Some(i) = p.iter().rposition(|x| *x == self.0) {
            p.swap_remove(i);
        }
    }
}

fn remove_path(p: &Path) {
    if p.is_dir() {
        let _ = std::fs::remove_dir_all(p);
    } else {
        let _ = std::fs::remove_file(p);
    }
}

/// Removes every registered temporary and returns how many there were;
/// the lock stays held until the process ends, so no rename follows.
fn remove_temporaries() -> usize {
    let p = pending();
    for path in p.iter() {
        remove_path(path);
    }
    let n = p.len();
    std::mem::forget(p);
    n
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and so in every thread
/// started after it) and starts a thread that waits for them: it removes
/// every temporary file and staging directory, says so on stderr, and exits
/// with 128 + the signal (130 for Ctrl-C). Call it first in `main`, before
/// any thread starts.
#[cfg(unix)]
pub fn on_interrupt_remove_temporaries() {
    crate::sys::on_signal(|name, sig| {
        let n = remove_temporaries();
        if n == 0 {
            eprintln!("\ninterrupted ({name})");
        } else {
            eprintln!("\ninterrupted ({name}): {n} unfinished output(s) removed; complete files are kept");
        }
        std::process::exit(128 + sig);
    });
}

/// Without Unix signals nothing is installed.
#[cfg(not(unix))]
pub fn on_interrupt_remove_temporaries() {}

/// Files written together: they go into a staging directory (hidden, in
/// the destination) and [`Staged::commit`] moves them all into place under
/// the interrupt lock, so an interrupt, or an error while they are
/// written, leaves all of them or none (a rename that fails inside the
/// commit, say onto a directory of the same name, leaves the ones moved
/// before it). Dropped without a commit, the staging directory is removed.
pub struct Staged {
    dest: PathBuf,
    stage: Temporary,
}

impl Staged {
    /// Stages files for `dest` (created if missing).
    pub fn new(dest: &Path) -> Result<Staged, WriteError> {
        create_dir(dest)?;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stage = Temporary::new(dest.join(format!(".dimsum-staging-{}-{n}", std::process::id())));
        create_dir(&stage.0)?;
        Ok(Staged {
            dest: dest.to_path_buf(),
            stage,
        })
    }

    /// Where to write the files (paths under it land under the destination).
    pub fn dir(&self) -> &Path {
        &self.stage.0
    }

    /// `path` (under [`Staged::dir`]) as it will be once committed.
    pub fn final_path(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.stage.0) {
            Ok(rel) => self.dest.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }

    /// Moves every staged file into the destination (subdirectories kept)
    /// and returns their final paths, sorted.
    pub fn commit(self) -> Result<Vec<PathBuf>, WriteError> {
        let mut files = Vec::new();
        walk(&self.stage.0, &mut files).map_err(|source| WriteError {
            path: self.stage.0.clone(),
            source,
        })?;
        files.sort();
        if let Some(ms) = std::env::var("DIMSUM_TEST_STALL_COMMIT_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            // Tests interrupt here, with every file staged and none moved.
            std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
        }
        let _held = pending();
        let mut out = Vec::with_capacity(files.len());
        for f in files {
            let to = self.final_path(&f);
            let io = |source| WriteError {
                path: to.clone(),
                source,
            };
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::rename(&f, &to).map_err(io)?;
            out.push(to);
        }
        drop(_held);
        Ok(out)
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// Creates `dir` and its parents (nothing if it exists).
pub fn create_dir(dir: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError {
        path: dir.to_path_buf(),
        source,
    })
}

/// The most bytes a hand-written input (study, catalog, LIBRA text,
/// network.yml, edge list, validation file) may hold: 64 MiB, far above
/// any real one.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// A size limit as people write it (`64 MiB`, `4 GiB`).
pub fn limit_name(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// Reads the file at `path`, refusing it once it holds more than `limit`
/// bytes (so an endless device ends the read); the error says the limit.
pub fn read_limited(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    read_chunks(path, limit, false)
}

/// Reads the text file at `path` as [`read_limited`] does, and refuses it
/// at its first byte that is not UTF-8 (named by its offset), without
/// reading further.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let bytes = read_chunks(path, limit, true)?;
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("byte {} is not UTF-8 text", e.utf8_error().valid_up_to()),
        )
    })
}

fn read_chunks(path: &Path, limit: u64, text: bool) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut valid = 0usize;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if out.len() as u64 + n as u64 > limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than the {} this input may hold", limit_name(limit)),
            ));
        }
        out.extend_from_slice(&buf[..n]);
        if text {
            match std::str::from_utf8(&out[valid..]) {
                Ok(_) => valid = out.len(),
                Err(e) => {
                    if e.error_len().is_some() {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("byte {} is not UTF-8 text", valid + e.valid_up_to()),
                        ));
                    }
                    valid += e.valid_up_to();
                }
            }
        }
    }
    Ok(out)
}

/// `dir/.name.tag.ext` beside `path` (the extension kept, for plotters).
pub(crate) fn temp_path(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{tag}.{ext}"))
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        // FNV-1a 64 of "" is the offset basis; of "a" it is af63dc4c8601ec8c
        // (the published test vectors).
        assert_eq!(fnv1a64(b""), "cbf29ce484222325");
        assert_eq!(fnv1a64(b"a"), "af63dc4c8601ec8c");
    }

    /// An endless device is refused at the limit, text at its first
    /// non-UTF-8 byte (`ab\u{e9}x` written as Latin-1: a, b, then 0xE9 at
    /// offset 2, which 'x' cannot continue), and a file of exactly the
    /// limit is read (`h\u{e9}` is 1 + 2 bytes).
    #[test]
    fn reads_are_bounded_and_text_is_utf8() {
        let e = read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("1 MiB"), "{e}");
        let e = read_text(Path::new("/dev/urandom"), 1 << 30).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        let dir = tempfile_dir("read");
        let p = dir.join("latin1.txt");
        std::fs::write(&p, b"ab\xe9x").unwrap();
        assert_eq!(read_text(&p, 100).unwrap_err().to_string(), "byte 2 is not UTF-8 text");
        std::fs::write(&p, "h\u{e9}").unwrap();
        assert_eq!(read_text(&p, 3).unwrap(), "h\u{e9}");
        assert!(read_text(&p, 2).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dimsum-io-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Staged files appear only at the commit, all together (a
    /// subdirectory kept); a set dropped uncommitted (an error on the way)
    /// leaves nothing; and no temporary stays registered either way.
    #[test]
    fn staged_files_land_together_or_not_at_all() {
        let dir = tempfile_dir("staged");
        let names = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let s = Staged::new(&dir).unwrap();
        write_atomic(&s.dir().join("a.md"), b"a").unwrap();
        std::fs::create_dir(s.dir().join("sub")).unwrap();
        write_atomic(&s.dir().join("sub/b.csv"), b"b").unwrap();
        assert_eq!(names(&dir).len(), 1, "only the staging directory before the commit");
        assert_eq!(s.final_path(&s.dir().join("a.md")), dir.join("a.md"));
        let files = s.commit().unwrap();
        assert_eq!(files, vec![dir.join("a.md"), dir.join("sub/b.csv")]);
        assert_eq!(names(&dir), vec!["a.md".to_string(), "sub".to_string()]);
        assert_eq!(std::fs::read(dir.join("sub/b.csv")).unwrap(), b"b");
        let s = Staged::new(&dir).unwrap();
        write_atomic(&s.dir().join("c.md"), b"c").unwrap();
        drop(s);
        assert_eq!(names(&dir), vec!["a.md".to_string(), "sub".to_string()]);
        assert!(!pending().iter().any(|p| p.starts_with(&dir)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_write_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("dimsum-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.csv");
        write_atomic(&p, b"a,b\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"a,b\n");
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["x.csv".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

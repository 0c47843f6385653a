//! Reading a schedule file: the JSON that `Schedule::to_json` writes (and
//! `dimsum collective --schedule-out` saves), parsed and checked, with
//! every problem as one [`InputError`] naming the file and, for bad JSON,
//! the line.

use super::{FORMAT, Schedule};
use crate::error::InputError;
use std::path::Path;

/// The most bytes a schedule file may hold: 4 GiB, about what the largest
/// schedule dimsum builds (2^24 transfers) takes as JSON.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

impl Schedule {
    /// Reads the schedule file at `path` and checks its structure.
    pub fn load(path: &Path) -> Result<Schedule, InputError> {
        let text = crate::io::read_text(path, MAX_FILE_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the schedule: {e}")))?;
        let s: Schedule = serde_json::from_str(&text).map_err(|e| {
            InputError::at(
                path,
                Some(e.line()),
                "",
                format!("not a dimsum schedule (JSON, format `{FORMAT}`): {e}"),
            )
        })?;
        s.check().map_err(|e| InputError::at(path, None, "", e.to_string()))?;
        Ok(s)
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::topology::from_spec;
    use crate::model::workload::CollectiveKind;
    use crate::schedule::algorithm::{self, Algorithm, Options};

    #[test]
    fn a_written_schedule_loads_back_and_bad_files_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let topo = from_spec("ring:4", &[50.0], &[0.0]).unwrap();
        let s = algorithm::build(&topo, CollectiveKind::AllGather, Algorithm::Ring, &Options::default()).unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, s.to_json()).unwrap();
        assert_eq!(Schedule::load(&path).unwrap(), s);

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\n  \"format\": 3,\n").unwrap();
        let e = Schedule::load(&bad).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(bad.as_path()));
        assert!(e.line.is_some(), "{e}");
        assert!(
            e.message
                .starts_with("not a dimsum schedule (JSON, format `dimsum-schedule/1`)"),
            "{e}"
        );

        let missing = dir.path().join("missing.json");
        let e = Schedule::load(&missing).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (None, ""));
        assert!(e.message.starts_with("cannot read the schedule: "), "{e}");
    }
}

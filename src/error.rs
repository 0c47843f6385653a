//! Errors about what a user wrote: study files, LIBRA / ASTRA-sim inputs,
//! command-line values.
//!
//! Every such error names the file, the line (when there is one), the field
//! and what is allowed, in one line, so the binary can print it and exit 2.
//! Modules that read input build an [`InputError`]; nothing below `cli`
//! prints or exits.
//!
//! ```
//! use dimsum::schedule::algorithm::Algorithm;
//! // A closed set of names parses with the allowed list in its error.
//! assert_eq!("swing".parse::<Algorithm>(), Ok(Algorithm::Swing));
//! let e = "wing".parse::<Algorithm>().unwrap_err();
//! assert!(e.to_string().starts_with("`wing` is not an algorithm; allowed: `ring`, "));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// One bad value in one input, located as precisely as the format allows.
///
/// Displayed on one line: `file:line: field: message`, leaving out what is
/// not known (no line, no field).
///
/// ```
/// use dimsum::error::InputError;
/// use std::path::Path;
///
/// let e = InputError::at(Path::new("s.toml"), Some(7), "fabric.dims[0].npus", "must be at least 2");
/// assert_eq!(e.to_string(), "s.toml:7: fabric.dims[0].npus: must be at least 2");
/// let e = InputError::at(Path::new("s.toml"), None, "", "cannot read: not found");
/// assert_eq!(e.to_string(), "s.toml: cannot read: not found");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct InputError {
    /// The file, or `None` for a command-line value.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// The field, e.g. `fabric.dims[2].npus` or `--bw`.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl InputError {
    /// An error in a file at a known line.
    pub fn at(file: &Path, line: Option<usize>, field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            file: Some(file.to_path_buf()),
            line,
            field: field.into(),
            message: message.into(),
        }
    }

    /// An error in a command-line argument: no file, no line.
    ///
    /// ```
    /// use dimsum::error::InputError;
    ///
    /// let e = InputError::arg("--bw", "expected 4 values");
    /// assert_eq!((&e.file, e.line), (&None, None));
    /// assert_eq!(e.to_string(), "--bw: expected 4 values");
    /// ```
    pub fn arg(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            file: None,
            line: None,
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{}: ", file.display(), line)?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, _) => {}
        }
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// A TOML file's syntax or type error as an [`InputError`]: the line of its
/// span; the field, when the message does not name one, as the table the
/// line sits in and the key it sets (`fabric.dims.block`); and for an
/// empty message (the toml crate gives none for a control character) what
/// TOML allows.
pub(crate) fn toml_error(text: &str, path: &Path, e: &toml::de::Error) -> InputError {
    let line = e.span().map(|s| line_of_offset(text, s.start));
    let mut message = e.message().trim().replace('\n', " ");
    let at = line.and_then(|l| text.lines().nth(l - 1)).unwrap_or("");
    if message.is_empty() {
        message = match at.bytes().position(|b| b.is_ascii_control() && b != b'\t') {
            Some(i) => format!(
                "byte 0x{:02x} at column {}: TOML allows no control character but tab, even in a comment",
                at.as_bytes()[i],
                i + 1
            ),
            None => "not valid TOML here".to_string(),
        };
    }
    let key = at.split_once('=').map(|(k, _)| k.trim()).filter(|k| {
        !k.is_empty() && !k.starts_with('#') && !k.starts_with('[') && !message.contains(&format!("`{k}`"))
    });
    let field = match (key, line) {
        (Some(k), Some(l)) => {
            let table = text
                .lines()
                .take(l - 1)
                .filter_map(|x| x.trim().strip_prefix('['))
                .last()
                .map(|h| {
                    h.trim_start_matches('[')
                        .split(']')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string()
                });
            match table {
                Some(t) if !t.is_empty() => format!("{t}.{k}"),
                _ => k.to_string(),
            }
        }
        _ => String::new(),
    };
    InputError::at(path, line, field, message)
}

/// 1-based line number of byte offset `offset` in `text`.
pub(crate) fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Lists allowed names as "`a`, `b` or `c`".
///
/// ```
/// use dimsum::error::one_of;
///
/// assert_eq!(one_of(&["ring"]), "`ring`");
/// assert_eq!(one_of(&["ring", "switch"]), "`ring` or `switch`");
/// assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
/// assert_eq!(one_of(&[]), "");
/// ```
pub fn one_of(names: &[&str]) -> String {
    match names.len() {
        0 => String::new(),
        1 => format!("`{}`", names[0]),
        n => {
            let head: Vec<String> = names[..n - 1].iter().map(|s| format!("`{s}`")).collect();
            format!("{} or `{}`", head.join(", "), names[n - 1])
        }
    }
}

/// A name outside a closed set: what was given and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not {what}; allowed: {allowed}")]
pub struct UnknownName {
    /// What a value of the set is called, with its article ("an algorithm").
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The allowed names, as [`one_of`] lists them.
    pub allowed: String,
}

/// A closed set of names (an enum spelled one way in studies, on the
/// command line and in reports). [`named!`](crate::named) gives it
/// `FromStr` (with the allowed list in the error) and `Display`.
///
/// ```
/// use dimsum::error::Named;
///
/// #[derive(Debug, Clone, Copy, PartialEq)]
/// enum Shape {
///     Ring,
///     Switch,
/// }
///
/// impl Named for Shape {
///     const WHAT: &'static str = "a shape";
///     const ALL: &'static [Self] = &[Shape::Ring, Shape::Switch];
///     fn as_name(self) -> &'static str {
///         match self {
///             Shape::Ring => "ring",
///             Shape::Switch => "switch",
///         }
///     }
/// }
/// dimsum::named!(Shape);
///
/// assert_eq!(Shape::names(), ["ring", "switch"]);
/// assert_eq!("switch".parse::<Shape>(), Ok(Shape::Switch));
/// assert_eq!(Shape::Ring.to_string(), "ring");
/// assert_eq!(
///     "mesh".parse::<Shape>().map_err(|e| e.to_string()),
///     Err("`mesh` is not a shape; allowed: `ring` or `switch`".to_string())
/// );
/// ```
pub trait Named: Sized + Copy + 'static {
    /// What one value is called, with its article ("a link model").
    const WHAT: &'static str;
    /// Every value, in the order error messages list them.
    const ALL: &'static [Self];
    /// The value's name.
    fn as_name(self) -> &'static str;
    /// Every name, in order.
    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|v| v.as_name()).collect()
    }
    /// The value named `s`.
    fn from_name(s: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.as_name() == s)
            .ok_or_else(|| UnknownName {
                what: Self::WHAT,
                given: s.to_string(),
                allowed: one_of(&Self::names()),
            })
    }
}

/// `FromStr` and `Display` for a [`Named`] type.
#[macro_export]
macro_rules! named {
    ($t:ty) => {
        impl std::str::FromStr for $t {
            type Err = $crate::error::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$t as $crate::error::Named>::from_name(s)
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::error::Named::as_name(*self))
            }
        }
    };
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;

    #[test]
    fn display_has_file_line_field() {
        let e = InputError::at(
            Path::new("s.toml"),
            Some(7),
            "fabric.dims[0].npus",
            "must be at least 2",
        );
        assert_eq!(e.to_string(), "s.toml:7: fabric.dims[0].npus: must be at least 2");
        let e = InputError::arg("--bw", "expected 4 values");
        assert_eq!(e.to_string(), "--bw: expected 4 values");
    }

    #[test]
    fn lines_are_one_based() {
        let t = "a\nb\nc";
        assert_eq!(line_of_offset(t, 0), 1);
        assert_eq!(line_of_offset(t, 2), 2);
        assert_eq!(line_of_offset(t, 4), 3);
        assert_eq!(line_of_offset(t, 99), 3);
    }

    #[test]
    fn allowed_names() {
        assert_eq!(one_of(&["ring", "switch"]), "`ring` or `switch`");
        assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}

//! Why a section's reader refuses a value, before it is located.
//!
//! The readers of `[model]`, `[npu]`, `[npu.arch]`, `[parallelism]`, the
//! fabric's dimensions and an allocation (`bw`, a case's, `--bw`) check
//! values that carry no span of their own; they return a [`Refusal`], and
//! the study loader turns it into an [`InputError`](crate::error::InputError)
//! at the section's line and field (or at the command-line argument).

use std::fmt;

/// A value a study's section cannot take: the key it concerns, where one
/// is to blame, and the message. `Display` is the message alone, the
/// [`InputError`](crate::error::InputError)'s message once located.
///
/// ```
/// use dimsum::study::Refusal;
///
/// let r = Refusal::of("npu.tdp_w", "tdp_w = -1 is not allowed: it must be > 0");
/// assert_eq!(r.key.as_deref(), Some("npu.tdp_w"));
/// assert_eq!(r.to_string(), "tdp_w = -1 is not allowed: it must be > 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The key, from the top of the study (`npu.arch.sram_mib`), when the
    /// refusal concerns one; `None` when it concerns several or a whole
    /// value (an allocation, the fabric's size).
    pub key: Option<String>,
    /// What is wrong and what is allowed, naming the key itself where the
    /// study's error has always named it.
    pub message: String,
}

impl Refusal {
    /// A refusal of `key`.
    pub fn of(key: impl Into<String>, message: impl Into<String>) -> Refusal {
        Refusal {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// A refusal of no one key.
    pub fn new(message: impl Into<String>) -> Refusal {
        Refusal {
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

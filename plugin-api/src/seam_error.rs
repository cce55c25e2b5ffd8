//! [`SeamError`]: the refusal a seam method answers where its callers branch only on the usual
//! classes (a bad argument, nothing by that name, a conflict with what is there, a missing
//! service or backend, a failure doing the work). A seam whose callers need more (the agents
//! registry, the session log) declares an error of its own with the same shape: a kind to
//! branch on and a message for a person. Callers match the kind, never the message's text.
#![allow(unsafe_code, reason = "the StableAbi derive emits unsafe impls")]

use abi_stable::StableAbi;
use abi_stable::std_types::RString;

/// What a caller of a seam method can tell apart.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeamErrorKind {
    /// An argument does not read or is not allowed (a malformed name, a section or variable
    /// that does not resolve).
    Invalid,
    /// What the call names does not exist (no such job, session or layer).
    NotFound,
    /// What the call would add is there already (the same tool or section), or the state
    /// forbids it now (a turn runs, a port is taken).
    Conflict,
    /// A service or backend the call needs is missing (no sandbox backend works here).
    Unavailable,
    /// The work itself failed (a write, the operating system, a model request).
    Failed,
}

/// A seam method's refusal: its kind, and a message for a person.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct SeamError {
    pub kind: SeamErrorKind,
    pub message: RString,
}

impl SeamError {
    pub fn new(kind: SeamErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(SeamErrorKind::Invalid, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(SeamErrorKind::NotFound, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(SeamErrorKind::Conflict, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(SeamErrorKind::Unavailable, message)
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(SeamErrorKind::Failed, message)
    }
}

impl std::fmt::Display for SeamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SeamError {}

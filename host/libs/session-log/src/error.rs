//! What went wrong when an event was refused, and where.

use thiserror::Error;

use crate::lossless::LosslessError;

/// The rule an event broke. Shared by append, load and `check_log` so all three word a broken
/// rule the same way.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Violation {
    /// `seq` must equal the log length at the time the event enters.
    #[error("seq is not contiguous: expected {expected}")]
    SeqMismatch { expected: u64 },
    /// The type is neither built in nor registered, and the event is not marked ignorable.
    #[error(
        "unknown event type \"{kind}\" without `ignorable: true` (written by a newer harness or by a plugin that is not loaded)"
    )]
    UnknownType { kind: String },
    /// `ignorable` is either absent or `true`; `false` is not a valid marker.
    #[error("the envelope field `ignorable` may only be `true` when present")]
    IgnorableFalse,
    /// `time` is epoch milliseconds and must be a safe integer.
    #[error("time {time} is outside ±(2^53-1)")]
    TimeOutOfRange { time: i64 },
    /// `data` does not round-trip through JSON.
    #[error("data is not lossless JSON: {0}")]
    Lossless(LosslessError),
    /// Only the three surface types may carry `surfaceOp`.
    #[error("\"{kind}\" is not a surface type and cannot carry surfaceOp")]
    SurfaceOpNotAllowed { kind: String },
    /// Only the three surface types may carry `sourceEventSeqs`.
    #[error("\"{kind}\" is not a surface type and cannot carry sourceEventSeqs")]
    SourcesNotAllowed { kind: String },
    /// Every surface event must say how it joins the surface.
    #[error("\"{kind}\" is a surface type and requires surfaceOp")]
    SurfaceOpMissing { kind: String },
    /// A replace names a seq that is not a node of the current surface.
    #[error("surface replace: {which} seq {seq} is not on the current surface")]
    ReplaceNotOnSurface { which: &'static str, seq: u64 },
    /// A replace whose start node comes after its end node.
    #[error(
        "surface replace: start seq {start} (position {start_pos}) is after end seq {end} (position {end_pos})"
    )]
    ReplaceReversed {
        start: u64,
        end: u64,
        start_pos: usize,
        end_pos: usize,
    },
    /// `sourceEventSeqs: []` means "known empty stream", which only an assistant message has.
    #[error("sourceEventSeqs may be empty only on assistant/message")]
    EmptySources,
    /// Provenance cites earlier events only.
    #[error("sourceEventSeqs cites {source_seq}, which is not an earlier event")]
    SourceNotEarlier { source_seq: u64 },
    #[error("sourceEventSeqs cites {source_seq} twice")]
    DuplicateSource { source_seq: u64 },
    /// A replace must cite every node it shadows, so provenance survives compaction.
    #[error(
        "surface replace: sourceEventSeqs must include every shadowed node; missing {missing:?}"
    )]
    ReplaceMissingSources { missing: Vec<u64> },
    /// A tool result may only be rewritten in place: one current tool result, content only.
    #[error("tool/result replace: {reason}")]
    ToolResultRewrite { reason: &'static str },
    /// A message event's payload does not have the shape projection relies on.
    #[error("{path} {problem}")]
    MessageShape { path: String, problem: &'static str },
}

/// An append was refused; the log is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot append \"{kind}\" at seq {seq}: {violation}")]
pub struct AppendError {
    /// The seq the event would have had.
    pub seq: u64,
    pub kind: String,
    pub violation: Violation,
}

/// A load was refused at the first bad event.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot load session log: event #{position} (seq {seq}, type \"{kind}\"): {violation}")]
pub struct LoadError {
    /// Index of the event in the input.
    pub position: usize,
    /// The seq the event carried.
    pub seq: u64,
    pub kind: String,
    pub violation: Violation,
}

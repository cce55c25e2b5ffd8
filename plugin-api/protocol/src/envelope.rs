//! The envelope of one session log event, as the reference's format version 0 writes it.
//!
//! Field order matches the reference's lines (`type`, `seq`, `time`, `data`, then the optional
//! `surfaceOp`, `sourceEventSeqs`, `ignorable`), so our lines read like theirs.

use crate::events::EventData;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One committed event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEvent {
    #[serde(rename = "type")]
    pub kind: String,
    /// Position in the log: contiguous from 0.
    pub seq: u64,
    /// Epoch milliseconds.
    pub time: i64,
    pub data: serde_json::Value,
    #[serde(rename = "surfaceOp", default, skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<SurfaceOp>,
    #[serde(
        rename = "sourceEventSeqs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source_event_seqs: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
}

/// How a surface event changes the model-visible surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SurfaceOp {
    /// `"append"`.
    Append(AppendTag),
    /// `{"op":"replace","start":S,"end":E}`: replaces the inclusive surface span.
    Replace {
        op: ReplaceTag,
        start: u64,
        end: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AppendTag {
    #[serde(rename = "append")]
    Append,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReplaceTag {
    #[serde(rename = "replace")]
    Replace,
}

impl SurfaceOp {
    /// The `"append"` marker.
    pub const fn append() -> Self {
        Self::Append(AppendTag::Append)
    }

    /// A positional replacement of the inclusive surface span from the node with seq `start` to the
    /// node with seq `end` (both must be on the current surface; see the crate docs).
    pub const fn replace(start: u64, end: u64) -> Self {
        Self::Replace {
            op: ReplaceTag::Replace,
            start,
            end,
        }
    }

    /// `(start, end)` for a replacement, `None` for an append.
    pub const fn replace_span(&self) -> Option<(u64, u64)> {
        match self {
            Self::Append(_) => None,
            Self::Replace { start, end, .. } => Some((*start, *end)),
        }
    }
}

impl SessionEvent {
    /// Whether the event is logged under `T`'s type.
    pub fn is<T: EventData>(&self) -> bool {
        self.kind == T::KIND
    }

    /// The event's data read as `T`: `None` when the event has another type or its data does
    /// not read as one (a log's checks refuse such data before anything reads it). Reads the
    /// logged value in place; the log keeps the value itself, which hashing and the files use.
    pub fn read<T: EventData>(&self) -> Option<T> {
        if !self.is::<T>() {
            return None;
        }
        T::deserialize(&self.data).ok()
    }

    /// `data[key]` as an unsigned integer (turn and step numbers, mostly).
    pub fn data_u64(&self, key: &str) -> Option<u64> {
        self.data.get(key).and_then(serde_json::Value::as_u64)
    }

    /// Whether this event carries the envelope's `ignorable: true` marker.
    pub fn is_ignorable(&self) -> bool {
        self.ignorable == Some(true)
    }
}

// Lets the read-only helpers (closers, checks, summaries) take `&[SessionEvent]` and
// `&[Arc<SessionEvent>]` alike, so callers never copy events to call them.
impl AsRef<SessionEvent> for SessionEvent {
    fn as_ref(&self) -> &SessionEvent {
        self
    }
}

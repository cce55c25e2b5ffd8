//! The envelope of one session log event, as the reference's format version 0 writes it.
//!
//! Field order matches the reference's lines (`type`, `seq`, `time`, `data`, then the optional
//! `surfaceOp`, `sourceEventSeqs`, `ignorable`), so our lines read like theirs.

use serde::{Deserialize, Serialize};

/// One committed event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(rename = "sourceEventSeqs", default, skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
}

/// How a surface event changes the model-visible surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SurfaceOp {
    /// `"append"`.
    Append(AppendTag),
    /// `{"op":"replace","start":S,"end":E}`: replaces the inclusive surface span.
    Replace { op: ReplaceTag, start: u64, end: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AppendTag {
    #[serde(rename = "append")]
    Append,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplaceTag {
    #[serde(rename = "replace")]
    Replace,
}

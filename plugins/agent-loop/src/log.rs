//! Appending the loop's events: one place that knows which types are surface events and how a
//! refused append becomes the turn's error.

use abi_stable::std_types::{RSome, RString, RVec};
use dsh_session_api::{NewEventRecord, SessionBox};
use serde_json::Value;

/// A log the loop writes to; a refused append ends the turn with this message.
pub(crate) struct Log<'s> {
    pub(crate) session: &'s SessionBox,
}

impl Log<'_> {
    /// Appends one event; answers its seq.
    pub(crate) fn append(&self, kind: &str, data: &Value) -> Result<u64, String> {
        self.append_citing(kind, data, &[])
    }

    /// Appends one event citing `sources` (`sourceEventSeqs`); surface events get
    /// `surfaceOp: "append"`.
    pub(crate) fn append_citing(
        &self,
        kind: &str,
        data: &Value,
        sources: &[u64],
    ) -> Result<u64, String> {
        let mut record = NewEventRecord::new(kind, &data.to_string());
        if matches!(kind, "user/message" | "assistant/message" | "tool/result") {
            record.surface_op = RSome(RString::from("\"append\""));
        }
        if !sources.is_empty() {
            record.source_event_seqs = RSome(RVec::from(sources.to_vec()));
        }
        let committed = self
            .session
            .append(RVec::from(vec![record]))
            .into_result()
            .map_err(|error| format!("`{kind}` could not be logged: {error}"))?;
        Ok(committed.first().map_or(0, |event| event.seq))
    }

    /// The events of the log, parsed (`{"type","seq","data",..}`).
    pub(crate) fn events(&self) -> Vec<Value> {
        self.session
            .events(0, self.session.event_count())
            .iter()
            .filter_map(|record| serde_json::from_str(&record.json).ok())
            .collect()
    }
}

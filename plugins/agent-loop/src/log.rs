//! Appending the loop's events: one place that knows which types are surface events and how a
//! refused append becomes the turn's error.

use std::collections::HashMap;

use abi_stable::std_types::{RSome, RString, RVec};
use dsh_session_seam::{NewEventRecord, SessionBox};
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

    /// What a new turn needs to know of the log, read in one pass that parses only the
    /// events it looks into: how many turns there were, the last `request/header` and
    /// `request/context`, and the last text of each context snapshot `snapshot_plugin` logged.
    pub(crate) fn past(&self, snapshot_plugin: &str) -> Past {
        let mut past = Past::default();
        for record in self.session.events(0, self.session.event_count()).iter() {
            match record.kind.as_str() {
                "turn/start" => past.turns += 1,
                "request/context" => {
                    if let Ok(event) = serde_json::from_str::<Value>(&record.json) {
                        let data = &event["data"];
                        past.last_context = Some((
                            data["provider"].as_str().unwrap_or_default().to_owned(),
                            data["model"].as_str().unwrap_or_default().to_owned(),
                        ));
                    }
                }
                "request/header" => {
                    if let Ok(event) = serde_json::from_str::<Value>(&record.json) {
                        past.last_header = Some(event["data"]["header"].clone());
                    }
                }
                "user/message" => {
                    let Ok(event) = serde_json::from_str::<Value>(&record.json) else {
                        continue;
                    };
                    let source = &event["data"]["source"];
                    if source["plugin"] == snapshot_plugin
                        && let (Some(key), Some(text)) = (
                            source["key"].as_str(),
                            event["data"]["content"][0]["text"].as_str(),
                        )
                    {
                        past.snapshots.insert(key.to_owned(), text.to_owned());
                    }
                }
                _ => {}
            }
        }
        past
    }
}

/// See [`Log::past`].
#[derive(Default)]
pub(crate) struct Past {
    pub(crate) turns: u64,
    pub(crate) last_header: Option<Value>,
    /// The route of the last `request/context`.
    pub(crate) last_context: Option<(String, String)>,
    pub(crate) snapshots: HashMap<String, String>,
}

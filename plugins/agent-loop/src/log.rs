//! Appending the loop's events, and what a new turn needs to know of the log before it.

use std::collections::HashMap;

use abi_stable::std_types::RVec;
use dsh_plugin_api::Json;
use dsh_protocol::{
    EventData, Message, MessageSource, RequestContextEvent, RequestHeader, RequestHeaderEvent,
    StreamChunk, TurnStartEvent, UserMessageEvent,
};
use dsh_sessions_seam::{NewEventRecord, SessionBox, SessionExt};

use crate::error::LoopError;

/// A log the loop writes to; a refused append ends the turn with [`LoopError::LogRefused`].
pub(crate) struct Log<'s> {
    pub(crate) session: &'s SessionBox,
}

impl Log<'_> {
    /// Appends one core event; answers its seq.
    pub(crate) fn append<E: EventData>(&self, data: &E) -> Result<u64, LoopError> {
        self.record(NewEventRecord::of(data))
    }

    /// Appends one core event citing `sources` (`sourceEventSeqs`).
    pub(crate) fn append_citing<E: EventData>(
        &self,
        data: &E,
        sources: &[u64],
    ) -> Result<u64, LoopError> {
        self.record(NewEventRecord::of(data).citing(sources))
    }

    /// Appends `messages` as `user/message` events in one batch (nothing when empty).
    pub(crate) fn append_messages(&self, messages: Vec<Message>) -> Result<(), LoopError> {
        if messages.is_empty() {
            return Ok(());
        }
        let batch: RVec<NewEventRecord> = messages
            .into_iter()
            .map(|message| NewEventRecord::of(&UserMessageEvent(message)))
            .collect();
        self.session
            .append(batch)
            .into_result()
            .map(|_| ())
            .map_err(|error| LoopError::LogRefused {
                kind: UserMessageEvent::KIND.to_owned(),
                error,
            })
    }

    /// Appends an `assistant/chunk` whose chunk is the adapter's text, as it is.
    pub(crate) fn chunk(
        &self,
        turn: u64,
        step: u64,
        chunk: &Json<StreamChunk>,
    ) -> Result<u64, LoopError> {
        self.record(NewEventRecord::chunk(turn, step, chunk))
    }

    fn record(&self, record: NewEventRecord) -> Result<u64, LoopError> {
        let kind = record.kind.to_string();
        self.session
            .append_one(record)
            .map_err(|error| LoopError::LogRefused { kind, error })
    }

    /// What a new turn needs to know of the log, read in one pass that decodes only the
    /// events it looks into: how many turns there were, the last `request/header` and
    /// `request/context`, and the last text of each context snapshot `snapshot_plugin` logged.
    pub(crate) fn past(&self, snapshot_plugin: &str) -> Past {
        let mut past = Past::default();
        for record in self.session.events(0, self.session.event_count()).iter() {
            if record.kind.as_str() == TurnStartEvent::KIND {
                past.turns += 1;
            } else if let Some(Ok(context)) = record.decode::<RequestContextEvent>() {
                past.last_context = Some((context.provider, context.model));
            } else if let Some(Ok(header)) = record.decode::<RequestHeaderEvent>() {
                past.last_header = Some(header.header);
            } else if let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>()
                && let MessageSource::Plugin(source) = &message.source
                && source.plugin.as_deref() == Some(snapshot_plugin)
                && let Some(key) = &source.key
            {
                past.snapshots.insert(key.clone(), message.text());
            }
        }
        past
    }
}

/// See [`Log::past`].
#[derive(Default)]
pub(crate) struct Past {
    pub(crate) turns: u64,
    pub(crate) last_header: Option<RequestHeader>,
    /// The route of the last `request/context`.
    pub(crate) last_context: Option<(String, String)>,
    pub(crate) snapshots: HashMap<String, String>,
}

//! When titles are made, from the events of every session as they commit. The first human
//! message of an untitled session gets the fallback at once, appended while the message is
//! announced (the session publishes it right after the batch that carried the message). With
//! the model title on, a fresh top-level session's message also waits for the session's first
//! request: when its `request/header` is logged (or its turn ends without one), the title
//! request starts beside the turn's own, on the route that header names unless the row sets
//! one. Nothing here waits on the model: the turn goes on whatever the title request does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::{Context, LogLevel, lock};
use dsh_protocol::{
    ContentBlock, MessageSource, RequestHeaderEvent, SessionTitleEvent, TitleRoute, TitleSource,
    UserMessageEvent, kinds,
};
use dsh_sessions_seam::EventRecord;

use crate::config::TitleConfig;
use crate::log::{self, AppendError, Titles};
use crate::{normalize, provider};

/// A first human message waiting for its session's first request, to be titled by a model.
pub(crate) struct Pending {
    pub(crate) seq: u64,
    /// Its text blocks, joined by newlines.
    pub(crate) text: String,
    /// Its fallback title.
    pub(crate) fallback: String,
}

/// The titling state of the sessions this process has open.
pub(crate) struct Titler {
    pub(crate) config: TitleConfig,
    /// The sessions that have (or are getting) a title. Unknown sessions are looked up in
    /// their log once, so a resumed session keeps its title.
    titled: Mutex<HashSet<String>>,
    /// The sessions whose model title waits for their first request.
    pending: Mutex<HashMap<String, Pending>>,
    pub(crate) titles: Titles,
}

impl Titler {
    pub(crate) fn new(config: TitleConfig) -> Self {
        Self {
            config,
            titled: Mutex::default(),
            pending: Mutex::default(),
            titles: Titles::default(),
        }
    }

    /// One committed event of any session. Every event passes here; only four kinds are
    /// looked at, and only the first is decoded before it is known to matter.
    pub(crate) fn on_event(self: &Arc<Self>, ctx: &Context, record: &EventRecord) {
        match record.kind.as_str() {
            kinds::SESSION_TITLE => self.on_title(record),
            kinds::USER_MESSAGE => self.on_message(ctx, record),
            kinds::REQUEST_HEADER | kinds::TURN_END => self.on_request(ctx, record),
            _ => {}
        }
    }

    /// The session left this process: nothing of it is kept.
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.titled).remove(session);
        lock(&self.pending).remove(session);
        self.titles.forget(session);
    }

    fn on_title(&self, record: &EventRecord) {
        let session = record.session.as_str();
        lock(&self.titled).insert(session.to_owned());
        // A person's title pins it: no model title is asked for after a rename.
        if let Some(Ok(SessionTitleEvent {
            source: TitleSource::User,
            ..
        })) = record.decode::<SessionTitleEvent>()
        {
            lock(&self.pending).remove(session);
        }
    }

    fn on_message(self: &Arc<Self>, ctx: &Context, record: &EventRecord) {
        let session = record.session.to_string();
        if lock(&self.titled).contains(&session) {
            return;
        }
        let Some((seq, text)) = human_text(record) else {
            return;
        };
        let config = &self.config;
        let fallback =
            normalize::fallback(&text, config.fallback_max_words, config.fallback_max_bytes);
        if fallback.is_empty() {
            return;
        }
        lock(&self.titled).insert(session.clone());
        if config.llm.enabled && log::wants_model_title(ctx, &session) {
            let pending = Pending {
                seq,
                text,
                fallback: fallback.clone(),
            };
            lock(&self.pending).insert(session.clone(), pending);
        }
        // Appended from inside the message's own announcement: the session publishes it
        // right after the message's batch, before the commit that carried the message returns,
        // so it always lands next to it (as the reference's does), never after a step's events.
        match self.titles.fallback(ctx, &session, seq, &fallback) {
            Ok(_) | Err(AppendError::Closed | AppendError::Renamed) => {}
            Err(error) => ctx.log(
                LogLevel::Error,
                &format!("session-title: no fallback title in `{session}`: {error}"),
            ),
        }
    }

    /// A request header or a turn's end: the moment a waiting model title starts.
    fn on_request(self: &Arc<Self>, ctx: &Context, record: &EventRecord) {
        if !self.config.llm.enabled {
            return;
        }
        let session = record.session.to_string();
        let pending = {
            let mut waiting = lock(&self.pending);
            match waiting.get(&session) {
                Some(pending) if pending.seq < record.seq => waiting.remove(&session),
                _ => None,
            }
        };
        let Some(pending) = pending else {
            return;
        };
        let route = match &self.config.llm.route {
            Some(route) => Some(route.route()),
            None => match record.decode::<RequestHeaderEvent>() {
                Some(Ok(event)) => Some(TitleRoute {
                    provider: event.header.config.provider,
                    model: event.header.config.model,
                }),
                // The turn ended without a request after the message: the one before it.
                _ => log::last_route(ctx, &session, record.seq),
            },
        };
        let Some(route) = route else {
            ctx.log(
                LogLevel::Warn,
                &format!(
                    "session-title: no model title for session `{session}`: it made no model \
                     request to take the route from and llm.route is not set; its fallback \
                     title stays"
                ),
            );
            return;
        };
        let titler = self.clone();
        let task_ctx = ctx.clone();
        spawn(ctx, async move {
            provider::title_by_model(&task_ctx, &titler, &session, pending, route).await;
        });
    }
}

/// Runs `task` on the host runtime; a runtime that refuses it is reported.
fn spawn(ctx: &Context, task: impl Future<Output = ()> + Send + 'static) {
    if let Err(error) = ctx.spawn(task) {
        ctx.log(LogLevel::Error, &format!("session-title: {error}"));
    }
}

/// The text a human message would be titled from, if it is one.
fn human_text(record: &EventRecord) -> Option<(u64, String)> {
    let UserMessageEvent(message) = record.decode::<UserMessageEvent>()?.ok()?;
    if !matches!(message.source, MessageSource::User { .. }) {
        return None;
    }
    let text: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Some((record.seq, text.join("\n")))
}

//! Plugin `session-title`: the title of a session, in its log. When the first human message
//! (a `user/message` whose source is `user`, with visible text) of a session without a title
//! is logged, it appends `session/title` with the deterministic fallback: the message's first
//! `fallbackMaxWords` words within `fallbackMaxBytes` UTF-8 bytes, cleaned of escapes and
//! controls, `messageSeqs` naming that message and `source: {"kind":"fallback"}`. The event
//! is appended on the next turn of the runtime, after the appends that triggered it (as the
//! reference's asynchronous fallback lands).
//!
//! Not built yet: titles from a model (`session/title-llm-request`) and renames.

mod normalize;

use dsh_protocol::kinds;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RString;
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, MessageSource, SessionTitleEvent, TitleSource, UserMessageEvent};
use dsh_sessions_seam::{
    EventRecord, NewEventRecord, SESSION_DISPOSED, SESSION_EVENT, append_or_report, open_live,
};

/// Config of `session-title`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct TitleConfig {
    pub fallback_max_words: usize,
    pub fallback_max_bytes: usize,
    pub max_title_bytes: usize,
}

impl Default for TitleConfig {
    fn default() -> Self {
        Self {
            fallback_max_words: 5,
            fallback_max_bytes: 40,
            max_title_bytes: 80,
        }
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

pub struct TitlePlugin;

impl Plugin for TitlePlugin {
    const NAME: &'static str = "session-title";
    const OPTIONAL: &'static [&'static str] = &[dsh_sessions_seam::SESSIONS_SERVICE];
    type Config = TitleConfig;

    async fn apply(ctx: Context, config: TitleConfig) -> Result<(), PluginError> {
        for (field, value) in [
            ("fallbackMaxWords", config.fallback_max_words),
            ("fallbackMaxBytes", config.fallback_max_bytes),
            ("maxTitleBytes", config.max_title_bytes),
        ] {
            if value == 0 {
                return Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Config,
                    format!("invalid config: {field} must be a positive integer"),
                ));
            }
        }
        if config.fallback_max_bytes > config.max_title_bytes {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                "invalid config: fallbackMaxBytes must not exceed maxTitleBytes",
            ));
        }
        // The sessions that have (or are getting) a title. Unknown sessions are looked up
        // in their log once, so a resumed session keeps its title.
        let titled: Arc<Mutex<HashSet<String>>> = Arc::default();
        let forget = titled.clone();
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            lock(&forget).remove(id.as_str());
        })?;
        let listener_ctx = ctx.clone();
        ctx.on_emit(&SESSION_EVENT, move |record: &EventRecord| {
            // Every event of every session passes here: only two kinds are looked at.
            match record.kind.as_str() {
                kinds::SESSION_TITLE => {
                    lock(&titled).insert(record.session.to_string());
                    return;
                }
                kinds::USER_MESSAGE if !lock(&titled).contains(record.session.as_str()) => {}
                _ => return,
            }
            let session = record.session.to_string();
            let Some((seq, text)) = human_text(record) else {
                return;
            };
            let title =
                normalize::fallback(&text, config.fallback_max_words, config.fallback_max_bytes);
            if title.is_empty() {
                return;
            }
            lock(&titled).insert(session.clone());
            let ctx = listener_ctx.clone();
            let spawned = listener_ctx.spawn(async move {
                if already_titled(&ctx, &session, seq) {
                    return;
                }
                let data = SessionTitleEvent {
                    title,
                    message_seqs: vec![seq],
                    source: TitleSource::Fallback,
                };
                append_or_report(&ctx, "session-title", &session, NewEventRecord::of(&data)).await;
            });
            if let Err(error) = spawned {
                listener_ctx.log(
                    dsh_plugin_api::LogLevel::Error,
                    &format!("session-title: {error}"),
                );
            }
        })?;
        Ok(())
    }
}

/// Whether the log already holds a title from before `seq` (a resumed session). A session that
/// is no longer live is not titled (nor loaded back).
fn already_titled(ctx: &Context, session: &str, seq: u64) -> bool {
    let Ok(live) = open_live(ctx, session) else {
        return true;
    };
    live.events(0, seq)
        .iter()
        .any(|record| record.kind.as_str() == kinds::SESSION_TITLE)
}

dsh_plugin_api::export_plugins!(TitlePlugin);

//! Plugin `repeat-tool-reminder`: an advisory guard against a model stuck calling the same
//! tool with the same arguments. Per session it keeps the chain of consecutive identical calls
//! (the tool's name and its arguments with object keys sorted, so key order does not matter);
//! when the chain's length reaches a threshold (3, 5 and 8 unless configured), a reminder is
//! queued for the session's next step through its inbox, as the reference's guard does: a
//! gentle one at the first threshold, a detailed one (the tool, the count and the arguments,
//! cut at `argumentsPreviewChars`) at the later ones. It never blocks or rewrites a call.
//!
//! Tools left out by `include`/`exclude` (`*` wildcards) neither count nor break a chain; a
//! person's message breaks it (a repetition across new input is not a loop).

mod chain;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, LogLevel, lock};
use dsh_protocol::{ContentBlock, Message, MessageSource, PluginSource, UserMessageEvent};
use dsh_sessions_seam::{EventRecord, SESSION_DISPOSED, SESSION_EVENT};
use dsh_tools_seam::{ResultView, TOOLS_RESULT};

use crate::chain::{Chain, Patterns};

/// Config of `repeat-tool-reminder`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ReminderConfig {
    /// Lengths of a chain of identical calls that queue a reminder (each at least 2, no
    /// duplicates); the smallest gets the gentle text, the others the detailed one.
    pub thresholds: Vec<u64>,
    /// Tool-name patterns (`*` wildcards) to track; empty: every tool.
    pub include: Vec<String>,
    /// Tool-name patterns left out of the chains.
    pub exclude: Vec<String>,
    /// Characters of the arguments quoted in the detailed reminder at most.
    pub arguments_preview_chars: usize,
}

impl Default for ReminderConfig {
    fn default() -> Self {
        Self {
            thresholds: vec![3, 5, 8],
            include: Vec::new(),
            exclude: Vec::new(),
            arguments_preview_chars: 500,
        }
    }
}

impl ReminderConfig {
    /// The thresholds sorted, or what is wrong with them.
    fn checked(&self) -> Result<Vec<u64>, PluginError> {
        let bad = |message: String| PluginError::new(ErrorKind::Config, message);
        if self.thresholds.is_empty() {
            return Err(bad(
                "invalid config: thresholds must not be empty".to_owned()
            ));
        }
        if let Some(low) = self.thresholds.iter().find(|value| **value < 2) {
            return Err(bad(format!(
                "invalid config: thresholds: {low} is below 2 (a single call is no repetition)"
            )));
        }
        let mut sorted = self.thresholds.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(bad(
                "invalid config: thresholds holds a duplicate".to_owned()
            ));
        }
        if self.arguments_preview_chars == 0 {
            return Err(bad(
                "invalid config: argumentsPreviewChars must be at least 1".to_owned(),
            ));
        }
        Ok(sorted)
    }
}

struct Guard {
    ctx: Context,
    thresholds: Vec<u64>,
    patterns: Patterns,
    preview: usize,
    /// Per session, the current chain.
    chains: Mutex<HashMap<String, Chain>>,
}

impl Guard {
    /// A call's result was logged: advance its session's chain and queue the reminder a
    /// threshold asks for.
    fn observe(&self, view: &ResultView) {
        let call = &view.call;
        if call.session.is_empty() || !self.patterns.tracked(&call.name) {
            return;
        }
        let key = chain::canonical(&call.arguments);
        let count = {
            let mut chains = lock(&self.chains);
            let chain = chains.entry(call.session.to_string()).or_default();
            chain.advance(call.name.as_str(), key.clone())
        };
        if !self.thresholds.contains(&count) {
            return;
        }
        let text = match Some(&count) == self.thresholds.first() {
            true => chain::GENTLE.to_owned(),
            false => chain::detailed(&call.name, count, &chain::preview(&key, self.preview)),
        };
        let mut extra = dsh_protocol::SourceExtra::new();
        extra.insert(
            "summary".to_owned(),
            serde_json::Value::from(format!("{} × {count}", call.name)),
        );
        let source = MessageSource::Plugin(PluginSource {
            plugin: Some("repeat-tool-reminder".to_owned()),
            form: Some("notice".to_owned()),
            extra,
            ..PluginSource::default()
        });
        let message = Message::user("", vec![ContentBlock::text(text)], source);
        let queued = match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => agents
                .inject(&call.session, &message)
                .map_err(|error| error.to_string()),
            _ => Err("no `agents` service".to_owned()),
        };
        if let Err(error) = queued {
            self.ctx.log(
                LogLevel::Warn,
                &format!(
                    "repeat-tool-reminder: the reminder for {} × {count} was not queued: {error}",
                    call.name
                ),
            );
        }
    }

    /// A person's message breaks the session's chain.
    fn on_event(&self, record: &EventRecord) {
        let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>() else {
            return;
        };
        if matches!(message.source, MessageSource::User { .. }) {
            lock(&self.chains).remove(record.session.as_str());
        }
    }
}

pub struct RepeatToolReminderPlugin;

impl Plugin for RepeatToolReminderPlugin {
    const NAME: &'static str = "repeat-tool-reminder";
    const OPTIONAL: &'static [&'static str] = &[AGENTS_SERVICE];
    type Config = ReminderConfig;

    async fn apply(ctx: Context, config: ReminderConfig) -> Result<(), PluginError> {
        let thresholds = config.checked()?;
        let guard = Arc::new(Guard {
            ctx: ctx.clone(),
            thresholds,
            patterns: Patterns::new(&config.include, &config.exclude),
            preview: config.arguments_preview_chars,
            chains: Mutex::new(HashMap::new()),
        });
        let results = guard.clone();
        ctx.on_emit(&TOOLS_RESULT, move |view: &ResultView| {
            results.observe(view)
        })?;
        let events = guard.clone();
        ctx.on_emit(&SESSION_EVENT, move |record: &EventRecord| {
            events.on_event(record)
        })?;
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            lock(&guard.chains).remove(id.as_str());
        })?;
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(RepeatToolReminderPlugin);

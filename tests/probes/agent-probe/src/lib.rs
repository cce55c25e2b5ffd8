//! Test plugin `agent-probe`: appends every `agent/*` notification it sees to the file `record`
//! (one JSON line: `{"event","agent","data"}`), and drives the `agents` service as configured:
//! `injectAtStart` stages a message (next-step, no wake) when an agent's session starts;
//! `followupAtClaim` queues a followup (next-turn, waking) when the first message is claimed;
//! `cancelAtClaim` then cancels the agent (cause `user`, the inbox cleared). With `agent`, it
//! also creates (or resumes) that agent when it applies (with `model` and `cwd`), and may stage a
//! message, send a followup (a turn starts) and print its inbox, so a test can watch the
//! registry across reloads and shutdowns.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_agents_seam::{
    AGENT_CREATED, AGENT_DISPOSED, AGENT_ERROR, AGENT_INBOX_CLAIMED, AGENT_INBOX_DISCARDED,
    AGENT_INBOX_INSERTED, AGENT_SESSION_START, AGENT_STATUS, AGENTS_SERVICE, AgentNotice,
    AgentsExt, AgentsService,
};
use dsh_plugin_api::EmitEvent;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{AbortCause, AgentOptions, ContentBlock, InboxTarget, Message, MessageSource};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema, Default, Clone)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ProbeConfig {
    pub record: Option<String>,
    /// At apply: create (or resume, when its session is live or stored) the agent of this
    /// session id, print `agents <list>`, then `stage` and `claim` as set.
    pub agent: Option<String>,
    /// Inject this text into the agent's inbox (next-step, no wake).
    pub stage: Option<String>,
    /// Print `inbox <listing>`: what the agent's inbox holds.
    pub inbox: bool,
    /// With `agent`: the agent's model route (`provider/model`) and working directory.
    pub model: Option<String>,
    pub cwd: Option<String>,
    /// With `agent`: a followup sent once it exists (a turn starts).
    pub followup: Option<String>,
    pub inject_at_start: Option<String>,
    pub followup_at_claim: Option<String>,
    pub cancel_at_claim: bool,
}

fn user_message(text: &str) -> Message {
    Message::user("", vec![ContentBlock::text(text)], MessageSource::user())
}

fn record(path: &str, event: &str, notice: &AgentNotice) {
    let data: Value = serde_json::from_str(notice.data.text()).unwrap_or(Value::Null);
    let line = json!({"event": event, "agent": notice.agent.as_str(), "data": data});
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

pub struct AgentProbe;

impl Plugin for AgentProbe {
    const NAME: &'static str = "agent-probe";
    const INJECT: &'static [&'static str] = &[AGENTS_SERVICE];
    type Config = ProbeConfig;

    async fn apply(ctx: Context, config: ProbeConfig) -> Result<(), PluginError> {
        let events: [(&str, &EmitEvent<AgentNotice>); 8] = [
            ("agent/created", &AGENT_CREATED),
            ("agent/disposed", &AGENT_DISPOSED),
            ("agent/status", &AGENT_STATUS),
            ("agent/session-start", &AGENT_SESSION_START),
            ("agent/inbox/inserted", &AGENT_INBOX_INSERTED),
            ("agent/inbox/claimed", &AGENT_INBOX_CLAIMED),
            ("agent/inbox/discarded", &AGENT_INBOX_DISCARDED),
            ("agent/error", &AGENT_ERROR),
        ];
        if let Some(path) = config.record.clone() {
            for (name, event) in events {
                let path = path.clone();
                ctx.on_emit(event, move |notice: &AgentNotice| {
                    record(&path, name, notice)
                })?;
            }
        }
        if let Some(text) = config.inject_at_start.clone() {
            let agents_ctx = ctx.clone();
            ctx.on_emit(&AGENT_SESSION_START, move |notice: &AgentNotice| {
                if let Ok(Some(agents)) = agents_ctx.get::<AgentsService>(AGENTS_SERVICE) {
                    let _ = agents.inject(&notice.agent, &user_message(&text));
                }
            })?;
        }
        if let Some(id) = &config.agent {
            drive(&ctx, id, &config).await?;
        }
        let claimed_once = Arc::new(AtomicBool::new(false));
        let agents_ctx = ctx.clone();
        let probe = config.clone();
        ctx.on_emit(&AGENT_INBOX_CLAIMED, move |notice: &AgentNotice| {
            if claimed_once.swap(true, Ordering::AcqRel) {
                return;
            }
            let Ok(Some(agents)) = agents_ctx.get::<AgentsService>(AGENTS_SERVICE) else {
                return;
            };
            if let Some(text) = &probe.followup_at_claim {
                let _ = agents.followup(&notice.agent, &user_message(text));
            }
            if probe.cancel_at_claim {
                let _ = agents.cancel(notice.agent.clone(), Json::encode(&AbortCause::User), false);
            }
        })?;
        Ok(())
    }
}

/// Creates (or resumes) agent `id`, prints the agents, then stages and sends as configured.
async fn drive(ctx: &Context, id: &str, config: &ProbeConfig) -> Result<(), PluginError> {
    let agents = ctx.inject::<AgentsService>(AGENTS_SERVICE)?;
    let cwd = config
        .cwd
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().display().to_string());
    let (provider, model) = config
        .model
        .as_deref()
        .and_then(|route| route.split_once('/'))
        .unwrap_or_default();
    let route = AgentOptions {
        cwd,
        provider: provider.to_owned(),
        model: model.to_owned(),
        ..AgentOptions::default()
    };
    let resume = AgentOptions {
        resume: Some(id.to_owned()),
        ..route.clone()
    };
    let resumed = agents.create(Json::encode(&resume)).await.into_result();
    if resumed.is_err() {
        let fresh = AgentOptions {
            session_id: Some(id.to_owned()),
            ..route
        };
        agents
            .create(Json::encode(&fresh))
            .await
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
    }
    say(&format!("agents {}", agents.list().text()));
    if let Some(text) = &config.stage {
        agents
            .send(
                id.into(),
                Json::encode(&user_message(text)),
                Json::encode(&InboxTarget::NextStep),
                false,
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
    }
    if let Some(text) = &config.followup {
        agents
            .followup(id, &user_message(text))
            .map_err(|error| PluginError::plugin(error.to_string()))?;
    }
    if config.inbox {
        let listing = agents
            .inbox(id.into())
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        say(&format!("inbox {}", listing.text()));
    }
    Ok(())
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

dsh_plugin_api::export_plugins!(AgentProbe);

//! Plugin `clients`: the service of the client protocol (`dsh-client-protocol`), the one door
//! every client comes through. It serves sessions (list, search, create, history, items, fork,
//! rename, archive, delete), prompts with their queue and steering, models and permission
//! presets, the token meter, commands and jobs, settings and credentials, and the frames a client
//! follows, over the agents, sessions, approval, question and command services. It knows
//! nothing of transports: the web server, the SDK runtime and the local socket each open a
//! connection through `clients` (`dsh-clients-seam`) and frame its bytes.
//!
//! Approvals and questions go to every connected client that answers them; the first answer
//! wins and the others see it resolved through the session's log; with no such client they
//! are refused at once (fail-closed), as they are without this plugin.

mod api;
mod approvals;
mod attachments;
mod connection;
mod demo;
mod efforts;
mod files;
mod fold;
mod fold_cache;
mod goals;
mod jobs;
mod live;
mod manage;
mod models;
mod opened;
mod presets;
mod providers;
mod questions;
mod rewind;
mod sessions;
mod settings;
mod store_follow;
#[cfg(test)]
mod test_support;
mod trajectory;
mod trust;
mod views;
mod waiting;

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use dsh_agents_seam::{
    AGENT_INBOX_CLAIMED, AGENT_INBOX_DISCARDED, AGENT_INBOX_INSERTED, AGENT_ROUTE, AGENT_STATUS,
    AGENTS_SERVICE, AgentsService,
};
use dsh_client_protocol::ServerFrame;
use dsh_clients_seam::{CLIENTS_SERVICE, Clients_TO};
use dsh_compaction_seam::{COMPACTION_SERVICE, CompactionService};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{AgentNoticeData, AgentStatus, PermissionPresetEvent, SessionSummary, kinds};
use dsh_sessions_seam::{SESSION_CREATED, SESSION_EVENT, SESSION_FOLLOWED, SESSION_REMOTE_EVENT};

use crate::live::Hub;

/// Config of `clients`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ClientsConfig {
    /// The model route new sessions use when none is chosen (`PROVIDER/MODEL`).
    pub model: Option<String>,
    /// Where the offline demo writes its recorded log and runs (`!home demo` in the bundles);
    /// without it the demo is not offered.
    pub demo_dir: Option<String>,
    /// The profile this host runs, as `host.describe` reports it to clients whose transport
    /// does not say (`web`, `sdk`).
    pub profile: Option<String>,
    /// The settings document clients write (`!home settings.yaml` in the bundles), which the
    /// host lays over the profile and watches.
    pub settings_file: Option<String>,
}

pub struct ClientsPlugin;

impl Plugin for ClientsPlugin {
    const NAME: &'static str = "clients";
    const PROVIDES: &'static [&'static str] = &[CLIENTS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_agents_seam::presets::AGENT_PRESETS_SERVICE,
        dsh_attachments_seam::ATTACHMENTS_SERVICE,
        dsh_commands_seam::COMMANDS_SERVICE,
        dsh_credentials_seam::CREDENTIALS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        // `provider.discover` and `provider.save` ask an endpoint for its models.
        dsh_plugin_api::io::http::HTTP_SERVICE,
        dsh_sessions_seam::SESSION_PERSISTENCE_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
        dsh_compaction_seam::COMPACTION_SERVICE,
        dsh_jobs_seam::JOBS_SERVICE,
        dsh_goals_seam::GOALS_SERVICE,
        dsh_plugin_api::io::control::HOST_SERVICE,
        dsh_sandbox_seam::SANDBOX_ROOTS_SERVICE,
        dsh_tools_seam::mcp::MCP_SCOPES_SERVICE,
    ];
    type Config = ClientsConfig;

    async fn apply(ctx: Context, config: ClientsConfig) -> Result<(), PluginError> {
        let hub = Arc::new(Hub::new(ctx.clone()));
        follow_the_host(&ctx, &hub)?;
        store_follow::follow_the_store(&ctx, &hub)?;
        let pending = Arc::new(approvals::Pending::default());
        let questions = Arc::new(questions::Pending::default());
        approvals::answer_asks(&ctx, hub.clone(), pending.clone())?;
        questions::answer_questions(&ctx, hub.clone(), questions.clone())?;
        let efforts = Arc::new(efforts::Efforts::default());
        efforts::shape_requests(&ctx, efforts.clone())?;
        let api = Arc::new(api::Api {
            ctx: ctx.clone(),
            hub: hub.clone(),
            prompted: std::sync::Mutex::default(),
            pending,
            questions,
            boot_id: connection::boot_id()?,
            host_cwd: std::env::current_dir()
                .unwrap_or_default()
                .display()
                .to_string(),
            configured_model: config.model,
            profile: config.profile.unwrap_or_default(),
            demo_dir: config.demo_dir.map(std::path::PathBuf::from),
            demo_mounted: tokio::sync::Mutex::new(false),
            settings_file: config.settings_file.map(std::path::PathBuf::from),
            files: Arc::default(),
            folds: fold_cache::FoldCache::default(),
            presets: dsh_sessions_seam::LatestOf::default(),
            efforts: efforts.clone(),
        });
        ctx.provide(
            CLIENTS_SERVICE,
            Clients_TO::from_value(connection::Door::new(api), TD_Opaque),
        )
    }
}

/// Sends `session`'s token meter to the pages that follow it, as a `session/projection`.
fn push_meter(ctx: &Context, hub: &Arc<Hub>, session: &str) {
    let (ctx, hub, session) = (ctx.clone(), hub.clone(), session.to_owned());
    // Off the event's own dispatch: the meter reads the session's log.
    let _ = ctx.clone().spawn(async move {
        let Ok(Some(compaction)) = ctx.get::<CompactionService>(COMPACTION_SERVICE) else {
            return;
        };
        let Ok(Some(meter)) = compaction.meter(RString::from(session.as_str())).decode() else {
            return;
        };
        let value = serde_json::to_value(meter).unwrap_or_default();
        hub.to_followers(
            &session,
            &ServerFrame::Projection {
                session_id: session.clone(),
                key: "context".to_owned(),
                value,
            },
        );
    });
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// `host/session-added` for a session that just appeared (created, or back from the trash):
/// what the list knows of it before its log is read; the page lists again for the rest.
pub(crate) fn session_added(id: String, live: bool) -> ServerFrame {
    let now = now_ms();
    ServerFrame::SessionAdded {
        session: SessionSummary {
            id,
            cwd: None,
            created_at: now,
            updated_at: now,
            active_at: None,
            title: None,
            live,
            waiting: false,
            archived: false,
            subagent_of: None,
            fork_of: None,
            broken: None,
            agent_preset: None,
        },
    }
}

/// A `session/projection` of key `controls`: one of the page's controls (`model`, `preset`,
/// `plan`) and the session's value for it.
pub(crate) fn controls(session: &str, control: &str, value: &str) -> ServerFrame {
    ServerFrame::Projection {
        session_id: session.to_owned(),
        key: "controls".to_owned(),
        value: serde_json::json!({ control: value }),
    }
}

/// Feeds the hub: every committed event (for the sessions clients follow), every session that
/// appears and every agent that starts or stops running (for every client's list).
fn follow_the_host(ctx: &Context, hub: &Arc<Hub>) -> Result<(), PluginError> {
    let (events, meters) = (hub.clone(), ctx.clone());
    ctx.on_emit(&SESSION_EVENT, move |record| {
        events.committed(record);
        // Every page's list marks a session that waits for a person, followed or not.
        let waiting = match record.kind.as_str() {
            kinds::APPROVAL_ASKED | kinds::QUESTION_ASKED => Some(true),
            kinds::APPROVAL_DECIDED | kinds::QUESTION_ANSWERED | kinds::TURN_END => Some(false),
            _ => None,
        };
        if let Some(waiting) = waiting {
            events.broadcast(&ServerFrame::SessionWaiting {
                session_id: record.session.to_string(),
                waiting,
            });
        }
        // The meter moves with each answer (the provider's count) and each compaction; it is
        // worked out only for a session some page follows.
        if matches!(
            record.kind.as_str(),
            kinds::ASSISTANT_MESSAGE | kinds::COMPACTION_END | kinds::TURN_END
        ) && events.is_followed(record.session.as_str())
        {
            push_meter(&meters, &events, record.session.as_str());
        }
        // The page's controls follow the session, whoever changed it (a command, another tab,
        // the API): a preset as it is logged.
        if let Some(Ok(preset)) = record.decode::<PermissionPresetEvent>() {
            events.to_followers(
                record.session.as_str(),
                &controls(record.session.as_str(), "preset", &preset.preset),
            );
        }
        if let Some(Ok(plan)) = record.decode::<dsh_protocol::PlanModeEvent>() {
            let value = if plan.active { "on" } else { "off" };
            events.to_followers(
                record.session.as_str(),
                &controls(record.session.as_str(), "plan", value),
            );
        }
    })?;
    // The model, whoever chose it (a client, a command, an editor on an ACP host).
    let routes = hub.clone();
    ctx.on_emit(&AGENT_ROUTE, move |notice| {
        let session = notice.agent.as_str();
        if !routes.is_followed(session) {
            return;
        }
        if let Ok(AgentNoticeData::Route { provider, model }) = notice.data.decode() {
            routes.to_followers(
                session,
                &controls(session, "model", &format!("{provider}/{model}")),
            );
        }
    })?;
    // Another host's commits to a session followed here read-only.
    let remote = hub.clone();
    ctx.on_emit(&SESSION_REMOTE_EVENT, move |record| remote.remote(record))?;
    let following = hub.clone();
    ctx.on_bail(&SESSION_FOLLOWED, move |id: &RString| {
        following
            .is_followed_or_opening(id.as_str())
            .then_some(true)
    })?;
    let created = hub.clone();
    ctx.on_emit(&SESSION_CREATED, move |id| {
        created.broadcast(&session_added(id.to_string(), true));
    })?;
    for event in [
        &AGENT_INBOX_INSERTED,
        &AGENT_INBOX_CLAIMED,
        &AGENT_INBOX_DISCARDED,
    ] {
        let (queue, agents) = (hub.clone(), ctx.clone());
        ctx.on_emit(event, move |notice| {
            let Ok(Some(service)) = agents.get::<AgentsService>(AGENTS_SERVICE) else {
                return;
            };
            if let Ok(listing) = service.inbox(notice.agent.clone()).into_result()
                && let Ok(listing) = listing.decode()
            {
                queue.to_followers(
                    notice.agent.as_str(),
                    &ServerFrame::Queue {
                        session_id: notice.agent.to_string(),
                        queue: listing,
                    },
                );
            }
        })?;
    }
    crate::jobs::follow(ctx, hub)?;
    crate::goals::follow(ctx, hub)?;
    let status = hub.clone();
    ctx.on_emit(&AGENT_STATUS, move |notice| {
        if let Ok(AgentNoticeData::Status { status: state }) = notice.data.decode() {
            status.broadcast(&ServerFrame::SessionStatus {
                session_id: notice.agent.to_string(),
                running: state == AgentStatus::Running,
            });
        }
    })?;
    Ok(())
}

dsh_plugin_api::export_plugins!(ClientsPlugin);

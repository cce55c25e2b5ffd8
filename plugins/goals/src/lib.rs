//! Plugin `goals`: provides `goals`. Each session has at most one goal, a revisioned objective
//! (active, paused, blocked or complete) kept in its log as `goal/change` events, so a session
//! opened again knows its goal; the model works on it through `create_goal`, `get_goal` and
//! `update_goal`, a person through `/goal` and the client protocol's `goal.*` methods (over
//! this service). The round driver keeps the agent going: after a turn ends with an active
//! goal, the agent takes another turn towards it (a goal round) until the model reports it
//! complete or blocked, `max_goal_rounds` rounds have started (at most 256), or a person pauses
//! it. Whether this process goes on by itself (the goal's activation) is never logged: a
//! session opened again has its goal disarmed until someone resumes it.

mod command;
mod driver;
mod error;
mod fold;
mod plan;
mod store;
mod tools;

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{
    AGENT_DISPOSED, AGENT_INBOX_DISCARDED, AGENT_PROMPT_SUBMIT, AGENT_SESSION_START, AGENT_STATUS,
};
use dsh_goals_seam::{GOAL_CHANGED, GOALS_SERVICE, Goals, Goals_TO};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, SeamError};
use dsh_protocol::{
    AgentNoticeData, AgentStatus, EventData, GoalAction, GoalChangeEvent, GoalRef, GoalView,
};
use dsh_sessions_seam::{LatestOf, SESSION_EVENT, SESSIONS_SERVICE, SessionsService};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService, tool_box};

use crate::driver::Driver;
use crate::store::{Mutation, Store};
use crate::tools::{GoalTool, GoalTools, Which};

/// Config of `goals`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct GoalsConfig {
    /// Rounds a goal must have run before the model may report it blocked in one of them.
    pub blocked_after_rounds: u64,
    /// Whether the model gets the goal tools (a person's `/goal` works either way).
    pub tools: bool,
}

impl Default for GoalsConfig {
    fn default() -> Self {
        Self {
            blocked_after_rounds: 3,
            tools: true,
        }
    }
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

struct Handle(Arc<Store>);

fn person_action(action: GoalAction) -> Mutation {
    let at = |goal_id, revision| GoalRef {
        id: goal_id,
        revision,
    };
    match action {
        GoalAction::Create {
            objective,
            max_goal_rounds,
        } => Mutation::Create {
            objective,
            max_goal_rounds,
        },
        GoalAction::Edit {
            goal_id,
            revision,
            objective,
            max_goal_rounds,
        } => Mutation::Edit {
            reference: at(goal_id, revision),
            objective,
            max_goal_rounds,
        },
        GoalAction::Pause { goal_id, revision } => Mutation::Pause(at(goal_id, revision)),
        GoalAction::Resume { goal_id, revision } => Mutation::Resume(at(goal_id, revision)),
        GoalAction::Complete { goal_id, revision } => Mutation::Complete(at(goal_id, revision)),
        GoalAction::Clear { goal_id, revision } => Mutation::Clear(at(goal_id, revision)),
    }
}

impl Goals for Handle {
    fn get(&self, session: RString) -> FfiFuture<RResult<Json<Option<GoalView>>, SeamError>> {
        let store = self.0.clone();
        async move {
            store
                .get_any(session.as_str())
                .await
                .map(|goal| Json::encode(&goal))
                .map_err(|error| error.to_seam())
                .into()
        }
        .into_ffi()
    }

    fn act(
        &self,
        session: RString,
        action: Json<GoalAction>,
    ) -> FfiFuture<RResult<Json<Option<GoalView>>, SeamError>> {
        let store = self.0.clone();
        async move {
            let action = match action.decode() {
                Ok(action) => action,
                Err(error) => {
                    return RResult::RErr(SeamError::invalid(format!(
                        "the goal action does not read: {error}"
                    )));
                }
            };
            store
                .mutate(session.as_str(), person_action(action))
                .map(|goal| Json::encode(&goal))
                .map_err(|error| error.to_seam())
                .into()
        }
        .into_ffi()
    }
}

pub struct GoalsPlugin;

impl Plugin for GoalsPlugin {
    const NAME: &'static str = "goals";
    const INJECT: &'static [&'static str] = &[SESSIONS_SERVICE, TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_commands_seam::COMMANDS_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[GOALS_SERVICE];
    type Config = GoalsConfig;

    async fn apply(ctx: Context, config: GoalsConfig) -> Result<(), PluginError> {
        let sessions = ctx.inject::<SessionsService>(SESSIONS_SERVICE)?;
        // `goal/change` is a core type of the reference's vocabulary: a log holding it is
        // readable without this plugin; registering it is harmless where it is known.
        let _ = sessions.register_type(RString::from(GoalChangeEvent::KIND), false);
        let store = Arc::new(Store::new(ctx.clone()));
        let driver = Arc::new(Driver::new(ctx.clone(), store.clone()));
        follow(&ctx, &store, &driver)?;
        command::answer(&ctx, store.clone())?;
        if config.tools {
            let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
            let shared = Arc::new(GoalTools {
                store: store.clone(),
                policies: LatestOf::default(),
                blocked_after: config.blocked_after_rounds.max(1),
                ctx: ctx.clone(),
            });
            let mut registrations = Vec::new();
            for which in [Which::Get, Which::Create, Which::Update] {
                let registration = tools
                    .register(
                        RString::from(ctx.row_id()),
                        RString::new(),
                        tool_box(GoalTool(shared.clone(), which)),
                    )
                    .into_result()
                    .map_err(|error| PluginError::new(ErrorKind::Plugin, error.to_string()))?;
                registrations.push(registration);
            }
            ctx.on_dispose(move || drop(registrations))?;
        }
        ctx.provide(
            GOALS_SERVICE,
            Goals_TO::from_value(Handle(store), TD_Opaque),
        )
    }
}

/// Wires the driver to the log, the agents and the goal's own changes.
fn follow(ctx: &Context, store: &Arc<Store>, driver: &Arc<Driver>) -> Result<(), PluginError> {
    let events = driver.clone();
    ctx.on_emit(&SESSION_EVENT, move |record| events.committed(record))?;
    let (idle, spawner) = (driver.clone(), ctx.clone());
    ctx.on_emit(&AGENT_STATUS, move |notice| {
        if let Ok(AgentNoticeData::Status {
            status: AgentStatus::Idle,
        }) = notice.data.decode()
        {
            let (driver, session) = (idle.clone(), notice.agent.to_string());
            let _ = spawner.spawn(async move { driver.drive(&session) });
        }
    })?;
    let (changed, spawner) = (driver.clone(), ctx.clone());
    ctx.on_emit(&GOAL_CHANGED, move |notice| {
        let (driver, session) = (changed.clone(), notice.session.to_string());
        let _ = spawner.spawn(async move { driver.drive(&session) });
    })?;
    let (started, forget) = (driver.clone(), store.clone());
    ctx.on_emit(&AGENT_SESSION_START, move |notice| {
        // A session that starts again (a restart, a resume) has its goal disarmed.
        forget.forget(notice.agent.as_str());
        started.forget(notice.agent.as_str());
    })?;
    let (gone, forget) = (driver.clone(), store.clone());
    ctx.on_emit(&AGENT_DISPOSED, move |notice| {
        forget.forget(notice.agent.as_str());
        gone.forget(notice.agent.as_str());
    })?;
    let discarded = driver.clone();
    ctx.on_emit(&AGENT_INBOX_DISCARDED, move |notice| {
        if let Ok(AgentNoticeData::InboxDiscarded { message }) = notice.data.decode() {
            discarded.discarded(notice.agent.as_str(), &message);
        }
    })?;
    let admit = driver.clone();
    ctx.on_waterfall(&AGENT_PROMPT_SUBMIT, move |next| {
        let decision = next
            .payload()
            .decode()
            .ok()
            .and_then(|submit| admit.admit(&submit));
        async move {
            match decision {
                Some(decision) => Ok(Json::encode(&decision)),
                None => next.run().await,
            }
        }
    })
}

dsh_plugin_api::export_plugins!(GoalsPlugin);

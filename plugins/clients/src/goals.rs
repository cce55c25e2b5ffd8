//! A session's goal in the clients: the `goal.*` methods put a person's actions to the `goals`
//! service, and the goal is pushed as `session/projection` key `goal` (`{"goal": view|null}`)
//! to the pages that follow the session when it changes and when a page subscribes.

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_client_protocol::{ClientRequest, GoalState, RpcErrorCode, ServerFrame};
use dsh_goals_seam::{GOAL_CHANGED, GOALS_SERVICE, GoalsService};
use dsh_plugin_api::{Context, Json, PluginError, SeamError, SeamErrorKind};
use dsh_protocol::{GoalAction, GoalView, kinds};
use dsh_sessions_seam::SESSION_EVENT;

use crate::api::{Api, Failure};
use crate::live::Hub;

fn projection(session: &str, goal: Option<GoalView>) -> ServerFrame {
    ServerFrame::Projection {
        session_id: session.to_owned(),
        key: "goal".to_owned(),
        value: serde_json::to_value(GoalState { goal }).unwrap_or_default(),
    }
}

/// The `goal` projection of a session that has a goal, for a page that subscribes.
pub(crate) async fn frame(ctx: &Context, session: &str) -> Option<ServerFrame> {
    let goals = ctx.get::<GoalsService>(GOALS_SERVICE).ok().flatten()?;
    let goal = goals
        .get(RString::from(session))
        .await
        .into_result()
        .ok()?
        .decode()
        .ok()??;
    Some(projection(session, Some(goal)))
}

/// Pushes a followed session's goal each time it changes, and when a goal round starts (the
/// round count moves without a mutation).
pub(crate) fn follow(ctx: &Context, hub: &Arc<Hub>) -> Result<(), PluginError> {
    let (rounds, services) = (hub.clone(), ctx.clone());
    ctx.on_emit(&SESSION_EVENT, move |record| {
        let session = record.session.as_str();
        // A goal round is a user message whose source is `goal`: read the goal off this
        // dispatch, which may run inside the goal's own write.
        if record.kind.as_str() != kinds::USER_MESSAGE
            || !record.json.contains(r#""kind":"goal""#)
            || !rounds.is_followed(session)
        {
            return;
        }
        let (ctx, hub, session) = (services.clone(), rounds.clone(), session.to_owned());
        let _ = services.spawn(async move {
            if let Some(frame) = frame(&ctx, &session).await {
                hub.to_followers(&session, &frame);
            }
        });
    })?;
    let hub = hub.clone();
    ctx.on_emit(&GOAL_CHANGED, move |notice| {
        let session = notice.session.as_str();
        if !hub.is_followed(session) {
            return;
        }
        if let Ok(changed) = notice.change.decode() {
            hub.to_followers(session, &projection(session, changed.goal));
        }
    })
}

fn failure(error: SeamError) -> Failure {
    let code = match error.kind {
        SeamErrorKind::NotFound | SeamErrorKind::Invalid => RpcErrorCode::BadRequest,
        SeamErrorKind::Conflict => RpcErrorCode::SessionConflict,
        SeamErrorKind::Unavailable | SeamErrorKind::Failed => RpcErrorCode::Internal,
    };
    Failure(code, error.message.into_string())
}

impl Api {
    /// `goal.get`, `goal.create`, `goal.edit`, `goal.pause`, `goal.resume`, `goal.complete`,
    /// `goal.clear`.
    pub(crate) async fn goal(&self, request: ClientRequest) -> Result<GoalState, Failure> {
        let Ok(Some(goals)) = self.ctx.get::<GoalsService>(GOALS_SERVICE) else {
            return Err(Failure::internal("no `goals` row is running"));
        };
        let (session, action) = match request {
            ClientRequest::GoalGet(request) => {
                let goal = goals
                    .get(RString::from(request.session_id.as_str()))
                    .await
                    .into_result()
                    .map_err(failure)?
                    .decode()
                    .map_err(|error| Failure::internal(error.to_string()))?;
                return Ok(GoalState { goal });
            }
            ClientRequest::GoalCreate(request) => (
                request.session_id,
                GoalAction::Create {
                    objective: request.objective,
                    max_goal_rounds: request.max_goal_rounds,
                },
            ),
            ClientRequest::GoalEdit(request) => (
                request.session_id,
                GoalAction::Edit {
                    goal_id: request.goal_id,
                    revision: request.revision,
                    objective: request.objective,
                    max_goal_rounds: request.max_goal_rounds,
                },
            ),
            ClientRequest::GoalPause(t) => (
                t.session_id,
                GoalAction::Pause {
                    goal_id: t.goal_id,
                    revision: t.revision,
                },
            ),
            ClientRequest::GoalResume(t) => (
                t.session_id,
                GoalAction::Resume {
                    goal_id: t.goal_id,
                    revision: t.revision,
                },
            ),
            ClientRequest::GoalComplete(t) => (
                t.session_id,
                GoalAction::Complete {
                    goal_id: t.goal_id,
                    revision: t.revision,
                },
            ),
            ClientRequest::GoalClear(t) => (
                t.session_id,
                GoalAction::Clear {
                    goal_id: t.goal_id,
                    revision: t.revision,
                },
            ),
            other => {
                return Err(Failure::internal(format!(
                    "{} is not a goal method",
                    other.method()
                )));
            }
        };
        // The session's agent runs the rounds: a stored session gets one, as a prompt would.
        self.agent_of(&session).await?;
        let goal = goals
            .act(RString::from(session.as_str()), Json::encode(&action))
            .await
            .into_result()
            .map_err(failure)?
            .decode()
            .map_err(|error| Failure::internal(error.to_string()))?;
        Ok(GoalState { goal })
    }
}

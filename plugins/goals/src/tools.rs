//! The model's goal tools: `get_goal`, `create_goal {objective, max_goal_rounds}` and
//! `update_goal {goal_id, revision, action, objective, max_goal_rounds, blocked_reason}`.
//! Who may do what, as the reference rules it: creating, editing, pausing and resuming need a
//! person's own message in the current turn of a top-level agent (a delegated child never has
//! one); `complete` and `blocked` are also allowed in the goal's own current round, `blocked`
//! only after `blockedAfterRounds` rounds. A `complete` or `blocked` in a goal round ends the
//! turn. Every refusal is an error result naming its code and what was wrong.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    ApprovalPolicyEvent, ContentBlock, GoalBlockReason, GoalRef, GoalView, Guidance, MessageSource,
    OutcomeSummary, ToolDecl, ToolError, ToolReply, ToolSuccess, UserMessageEvent, kinds,
};
use dsh_sessions_seam::{LatestOf, open_live};
use dsh_tools_seam::{CallView, Tool};
use serde_json::{Value, json};

use crate::error::GoalError;
use crate::fold::round_source;
use crate::store::{MAX_GOAL_ROUNDS, Mutation, Store};

pub(crate) struct GoalTools {
    pub(crate) store: Arc<Store>,
    pub(crate) policies: LatestOf<ApprovalPolicyEvent>,
    pub(crate) blocked_after: u64,
    pub(crate) ctx: Context,
}

/// Which of the three tools a registration is.
#[derive(Clone, Copy)]
pub(crate) enum Which {
    Get,
    Create,
    Update,
}

pub(crate) struct GoalTool(pub(crate) Arc<GoalTools>, pub(crate) Which);

/// What a call may do, from what its turn holds.
enum Authority {
    Human,
    Round,
    None,
}

/// A refused call; its text starts with the code, so the model reads which rule refused it.
fn failure(code: &str, message: String) -> ToolReply {
    let message = match message.starts_with(code) {
        true => message,
        false => format!("{code}: {message}"),
    };
    ToolReply::Error(ToolError {
        name: Some("GoalError".to_owned()),
        code: Some(code.to_owned()),
        ..ToolError::new(message)
    })
}

fn refused(error: GoalError) -> ToolReply {
    failure(error.code(), error.to_string())
}

/// The goal as the tools answer it.
#[derive(dsh_plugin_api::Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct Shown<'a> {
    id: &'a str,
    revision: u64,
    objective: &'a str,
    phase: dsh_protocol::GoalPhase,
    rounds_started: u64,
    max_goal_rounds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked_reason: Option<&'a GoalBlockReason>,
}

/// The tools' compact JSON value: the goal and its activation, or `{"goal": null}`.
fn value(goal: Option<&GoalView>) -> Value {
    let Some(goal) = goal else {
        return json!({"goal": null});
    };
    let shown = Shown {
        id: &goal.goal.id,
        revision: goal.goal.revision,
        objective: &goal.goal.objective,
        phase: goal.goal.phase,
        rounds_started: goal.rounds_started,
        max_goal_rounds: goal.goal.max_goal_rounds,
        blocked_reason: goal.goal.blocked_reason.as_ref(),
    };
    json!({"goal": shown, "activation": goal.activation})
}

/// The arguments of the goal tools, as the model may write them (every field optional here;
/// each tool says which it needs). A number that is no whole number is kept to be named.
#[derive(dsh_plugin_api::Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde", default)]
struct Args {
    objective: Option<String>,
    max_goal_rounds: Option<serde_json::Number>,
    goal_id: Option<String>,
    revision: Option<serde_json::Number>,
    action: Option<String>,
    blocked_reason: Option<String>,
}

fn success(goal: Option<&GoalView>, concludes_turn: bool) -> ToolReply {
    let value = value(goal);
    ToolReply::Ok(ToolSuccess {
        content: vec![ContentBlock::text(value.to_string())],
        value,
        meta: None,
        concludes_turn,
    })
}

impl GoalTools {
    /// Whether the current turn of `call`'s session holds a person's message (and the session
    /// is no delegated child), or the goal's current round.
    fn authority(&self, call: &CallView, goal: Option<&GoalView>) -> Authority {
        let Ok(live) = open_live(&self.ctx, &call.session) else {
            return Authority::None;
        };
        let delegated = self
            .policies
            .of(&live)
            .is_some_and(|policy| policy.source.as_deref() == Some("delegation"));
        // From the newest event back to the current turn's start, a window at a time: the
        // cost is the turn's, not the session's.
        let (mut human, mut round) = (false, false);
        let mut end = live.event_count();
        'scan: while end > 0 {
            let start = end.saturating_sub(64);
            for record in live.events(start, end).iter().rev() {
                if record.kind.as_str() == kinds::TURN_START {
                    break 'scan;
                }
                let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>()
                else {
                    continue;
                };
                if matches!(message.source, MessageSource::User { .. }) {
                    human = true;
                }
                if let (Some(source), Some(goal)) = (round_source(&message), goal) {
                    round |= source.goal_id == goal.goal.id
                        && source.revision == goal.goal.revision
                        && source.round == goal.rounds_started;
                }
            }
            end = start;
        }
        match (human && !delegated, round) {
            (true, _) => Authority::Human,
            (false, true) => Authority::Round,
            (false, false) => Authority::None,
        }
    }

    fn run(&self, which: Which, call: &CallView) -> ToolReply {
        let args: Args = if call.arguments.trim().is_empty() {
            Args::default()
        } else {
            match serde_json::from_str(&call.arguments) {
                Ok(args) => args,
                Err(error) => {
                    return failure(
                        "GOAL_TOOL_INVALID_ARGUMENTS",
                        format!("the arguments do not read: {error}"),
                    );
                }
            }
        };
        let goal = match self.store.get(&call.session) {
            Ok(goal) => goal,
            Err(error) => return refused(error),
        };
        match which {
            Which::Get => success(goal.as_ref(), false),
            Which::Create => self.create(call, args, goal.as_ref()),
            Which::Update => self.update(call, args, goal.as_ref()),
        }
    }

    fn create(&self, call: &CallView, args: Args, goal: Option<&GoalView>) -> ToolReply {
        if !matches!(self.authority(call, goal), Authority::Human) {
            return human_required("create_goal");
        }
        let Some(objective) = args.objective else {
            return failure(
                "GOAL_TOOL_INVALID_ARGUMENTS",
                "`objective` (a string) is required".to_owned(),
            );
        };
        let rounds = match rounds_arg(args.max_goal_rounds.as_ref()) {
            Ok(rounds) => rounds,
            Err(error) => return refused(error),
        };
        let created = self.store.mutate(
            &call.session,
            Mutation::Create {
                objective,
                max_goal_rounds: rounds,
            },
        );
        match created {
            Ok(goal) => success(goal.as_ref(), false),
            Err(error) => refused(error),
        }
    }

    fn update(&self, call: &CallView, args: Args, goal: Option<&GoalView>) -> ToolReply {
        let Some(action) = args.action else {
            return failure(
                "GOAL_TOOL_INVALID_UPDATE",
                "`action` is required: edit, pause, resume, complete or blocked".to_owned(),
            );
        };
        let (Some(goal_id), Some(revision)) = (
            args.goal_id.filter(|id| !id.trim().is_empty()),
            args.revision
                .as_ref()
                .and_then(serde_json::Number::as_u64)
                .filter(|r| *r > 0),
        ) else {
            return failure(
                "GOAL_TOOL_INVALID_UPDATE",
                "`goal_id` (non-empty) and `revision` (a positive integer) are required: copy them from get_goal".to_owned(),
            );
        };
        let reference = GoalRef {
            id: goal_id,
            revision,
        };
        // Providers fill unused optional fields with empty values; only a real one counts.
        let objective = args.objective.filter(|text| !text.is_empty());
        let reason = args.blocked_reason.filter(|text| !text.is_empty());
        let rounds = match rounds_arg(args.max_goal_rounds.as_ref()) {
            Ok(rounds) => rounds,
            Err(error) => return refused(error),
        };
        let authority = self.authority(call, goal);
        let asked = Asked {
            reference,
            objective,
            rounds,
            reason,
        };
        let planned = match action.as_str() {
            "edit" | "pause" | "resume" => steering(&action, asked, &authority),
            "complete" | "blocked" => self.ending(&action, asked, &authority, goal),
            other => {
                return invalid(&format!(
                    "action `{other}` is not one of edit, pause, resume, complete, blocked"
                ));
            }
        };
        let mutation = match planned {
            Ok(mutation) => mutation,
            Err(reply) => return *reply,
        };
        // A round's own terminal report ends its turn: the goal says what happens next.
        let concludes = matches!(authority, Authority::Round)
            && matches!(mutation, Mutation::Complete(_) | Mutation::Block(..));
        match self.store.mutate(&call.session, mutation) {
            Ok(goal) => success(goal.as_ref(), concludes),
            Err(error) => refused(error),
        }
    }
}

/// What an `update_goal` call asks, read.
struct Asked {
    reference: GoalRef,
    objective: Option<String>,
    rounds: Option<u64>,
    reason: Option<String>,
}

/// `edit`, `pause`, `resume`: a person's own request only.
fn steering(action: &str, asked: Asked, authority: &Authority) -> Result<Mutation, Box<ToolReply>> {
    if !matches!(authority, Authority::Human) {
        return Err(Box::new(human_required(&format!(
            "update_goal action {action}"
        ))));
    }
    if action != "edit" && (asked.objective.is_some() || asked.rounds.is_some()) {
        return Err(Box::new(invalid(
            "objective and max_goal_rounds are valid only with action edit",
        )));
    }
    if asked.reason.is_some() {
        return Err(Box::new(invalid(
            "blocked_reason is valid only with action blocked",
        )));
    }
    Ok(match action {
        "edit" => Mutation::Edit {
            reference: asked.reference,
            objective: asked.objective,
            max_goal_rounds: asked.rounds,
        },
        "pause" => Mutation::Pause(asked.reference),
        _ => Mutation::Resume(asked.reference),
    })
}

impl GoalTools {
    /// `complete`, `blocked`: a person's request, or the goal's own current round (`blocked`
    /// there only after `blocked_after` rounds).
    fn ending(
        &self,
        action: &str,
        asked: Asked,
        authority: &Authority,
        goal: Option<&GoalView>,
    ) -> Result<Mutation, Box<ToolReply>> {
        if matches!(authority, Authority::None) {
            return Err(Box::new(failure(
                "GOAL_TOOL_AUTHORITY_REQUIRED",
                "complete and blocked need a person's message in this turn or the goal's current round".to_owned(),
            )));
        }
        if asked.objective.is_some() || asked.rounds.is_some() {
            return Err(Box::new(invalid(
                "objective and max_goal_rounds are valid only with action edit",
            )));
        }
        if action == "complete" {
            if asked.reason.is_some() {
                return Err(Box::new(invalid(
                    "blocked_reason is valid only with action blocked",
                )));
            }
            return Ok(Mutation::Complete(asked.reference));
        }
        let Some(message) = asked.reason.filter(|text| !text.trim().is_empty()) else {
            return Err(Box::new(invalid(
                "blocked_reason is required with action blocked",
            )));
        };
        let started = goal.map_or(0, |goal| goal.rounds_started);
        if matches!(authority, Authority::Round) && started < self.blocked_after {
            return Err(Box::new(failure(
                "GOAL_TOOL_BLOCK_THRESHOLD",
                format!(
                    "blocked requires at least {} consecutive goal rounds; current round is {started}",
                    self.blocked_after
                ),
            )));
        }
        Ok(Mutation::Block(
            asked.reference,
            GoalBlockReason {
                code: "model-reported".to_owned(),
                message,
            },
        ))
    }
}

fn invalid(message: &str) -> ToolReply {
    failure("GOAL_TOOL_INVALID_UPDATE", message.to_owned())
}

fn human_required(what: &str) -> ToolReply {
    failure(
        "GOAL_TOOL_AUTHORITY_REQUIRED",
        format!("{what} needs a person's own message in this turn of a top-level agent"),
    )
}

fn rounds_arg(rounds: Option<&serde_json::Number>) -> Result<Option<u64>, GoalError> {
    match rounds.map(|n| (n, n.as_u64())) {
        None => Ok(None),
        // An unused field a provider filled with 0 is not a cap.
        Some((_, Some(0))) => Ok(None),
        Some((_, Some(rounds))) => Ok(Some(rounds)),
        Some((n, None)) => Err(GoalError::MaxRounds(format!(
            "max_goal_rounds must be a whole number from 1 to {MAX_GOAL_ROUNDS}, not {n}"
        ))),
    }
}

const GUIDANCE: &str = "Use goal tools for one long-running completion objective in the current session. create_goal may infer goal intent from a direct human request in any language; do not create a goal for routine single-turn work. Call get_goal before update_goal and copy its exact goal_id and revision. After the session is reopened, an active goal is disarmed: when a person asks to continue, use update_goal action resume. Mark complete only when the objective is actually achieved. Mark blocked only after the same blocking condition persisted for at least the required number of consecutive goal rounds, and say what it is in blocked_reason; difficulty, uncertainty or useful remaining work is not blocked.";

pub(crate) fn decl(which: Which) -> ToolDecl {
    let mut decl = match which {
        Which::Get => ToolDecl::new(
            "get_goal",
            "Read the current goal of this session: its exact id and revision, objective, phase, rounds started, round limit, the blocker when there is one, and whether another round is armed. Call this before update_goal.",
            json!({"type": "object", "properties": {}}),
        ),
        Which::Create => ToolDecl::new(
            "create_goal",
            "Create this session's goal when the person's own request is a long-running objective that should go on across automatic goal rounds; the intent may be inferred without the words \"create a goal\". Not for routine single-turn work. Refused outside a person's turn and for delegated agents.",
            json!({
                "type": "object",
                "properties": {
                    "objective": {"type": "string", "description": "The concrete completion objective, from the person's request."},
                    "max_goal_rounds": {"type": "number", "description": format!("How many automatic rounds may start in all (1 to {MAX_GOAL_ROUNDS}; default {MAX_GOAL_ROUNDS}).")}
                },
                "required": ["objective"]
            }),
        ),
        Which::Update => ToolDecl::new(
            "update_goal",
            "Update the exact current goal revision. edit, pause and resume need a person's own request in this turn. In the goal's own automatic round, complete and blocked are allowed too (blocked only after the configured number of rounds, with the condition in blocked_reason).",
            json!({
                "type": "object",
                "properties": {
                    "goal_id": {"type": "string", "description": "The exact id get_goal answered."},
                    "revision": {"type": "number", "description": "The exact revision get_goal answered."},
                    "action": {"type": "string", "enum": ["edit", "pause", "resume", "complete", "blocked"], "description": "edit | pause | resume | complete | blocked"},
                    "objective": {"type": "string", "description": "The new objective; only with action edit."},
                    "max_goal_rounds": {"type": "number", "description": "The new round limit; only with action edit."},
                    "blocked_reason": {"type": "string", "description": "What blocks the goal; required with action blocked, only then."}
                },
                "required": ["goal_id", "revision", "action"]
            }),
        ),
    };
    if matches!(which, Which::Get) {
        decl.guidance = Some(Guidance {
            order: 114,
            text: GUIDANCE.to_owned(),
        });
    }
    decl
}

impl Tool for GoalTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&decl(self.1))
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let (tools, which) = (self.0.clone(), self.1);
        async move { Json::encode(&tools.run(which, &call)) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

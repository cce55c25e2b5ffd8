//! `exit_plan_mode`: the model presents its plan, and a person reviews it through the approval
//! seam (`approval/request`, the chain every client already answers: the page's card, the ACP
//! client's permission request, the terminal UI's modal). The ask names the tool and its call
//! and carries the plan as its reason, so each client can show the plan itself; it is logged
//! as `approval/asked` and `approval/decided` like any other.
//!
//! Approved (`allowed-once`): `plan/mode {active: false}` is logged and the model is told to
//! carry the plan out from its next step. Rejected: the person's note, logged with the
//! decision, goes back to the model, which stays in plan mode and plans again. Dismissed: it
//! stops and waits for the person. With no one to answer (`unavailable`: headless, no client
//! connected) plan mode stays on and the model is told to end with the plan in its answer.
//! Under a session whose approval policy is `never` (the `danger-full-access` preset: the
//! person chose not to be asked), the plan is approved without asking, as that preset runs
//! every call unasked.
//!
//! The tool stays registered outside plan mode, so the tool list a provider caches does not
//! change with the mode; called then, it fails and says so.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::{Context, Deserialize, Json};
use dsh_protocol::{
    ApprovalDecidedEvent, ApprovalOutcome, ApprovalPolicy, ApprovalRequest, ContentBlock,
    OutcomeSummary, ToolDecl, ToolError, ToolErrorInfo, ToolReply,
};
use dsh_sessions_seam::open_live;
use dsh_tools_seam::{CallView, Tool, ToolBox, tool_box};
use serde_json::json;

use crate::state::{self, Modes};

pub(crate) const NAME: &str = "exit_plan_mode";

/// The longest a review may wait (the pipeline's cap); each answerer bounds its own wait.
const REVIEW_LIMIT_MS: u64 = 3_600_000;

const APPROVED: &str = "The person approved the plan and plan mode is off. Carry out the plan now, starting with your next step.";
const APPROVED_UNASKED: &str = "Plan mode is off: this session's permissions never put anything to a person (approval policy `never`), so the plan is approved as presented. Carry out the plan now, starting with your next step.";
const KEEP_PLANNING: &str = "The person chose to keep planning. Stay in plan mode: revise the plan and present it again with exit_plan_mode.";
const DISMISSED: &str = "The person dismissed the plan review to speak instead. Stay in plan mode, stop here and wait for their message.";
const UNAVAILABLE: &str = "No one can review the plan here (no client is answering). Plan mode stays on: do not carry the plan out; end your answer with the complete plan, and the person can approve it by leaving plan mode (/plan off).";
const NOT_PLANNING: &str =
    "exit_plan_mode is only for plan mode, and this session is not planning: go on with the work.";
const NO_HEADING: &str =
    "the plan must be complete markdown starting with a `# ` heading that names it";

pub(crate) fn decl() -> ToolDecl {
    let mut decl = ToolDecl::new(
        NAME,
        "Use only in plan mode, as the last call of your answer: presents your plan to the person for review. Send the complete plan as markdown starting with a `# ` heading that names it. If they approve, plan mode ends and you carry the plan out from your next step; if they want more planning, their note comes back as this call's result: revise the plan and present it again.",
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string", "description": "The complete plan, as markdown, starting with a # heading that names it."}
            },
            "required": ["plan"]
        }),
    );
    decl.timeout_ms = Some(REVIEW_LIMIT_MS);
    decl
}

fn failure(message: impl Into<String>, code: &str) -> ToolReply {
    let info = ToolErrorInfo::new("PlanReviewError", code);
    ToolReply::Error(ToolError {
        name: Some(info.name),
        code: Some(info.code),
        ..ToolError::new(message)
    })
}

/// Why a call's arguments hold no plan to review.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PlanError {
    Shape(String),
    NoHeading,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Shape(error) => write!(
                f,
                "the arguments are not a JSON object with a string `plan`: {error}"
            ),
            Self::NoHeading => f.write_str(NO_HEADING),
        }
    }
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Args {
    plan: String,
}

/// The plan of a call's arguments, checked.
pub(crate) fn plan_of(arguments: &str) -> Result<String, PlanError> {
    let args: Args =
        serde_json::from_str(arguments).map_err(|error| PlanError::Shape(error.to_string()))?;
    let plan = args.plan.trim();
    let heading = plan
        .strip_prefix("# ")
        .is_some_and(|rest| !rest.trim().is_empty());
    if !heading {
        return Err(PlanError::NoHeading);
    }
    Ok(plan.to_owned())
}

/// What the model is told when the person keeps planning, with their note when they gave one.
pub(crate) fn keep_planning(note: Option<&str>) -> String {
    match note.map(str::trim).filter(|note| !note.is_empty()) {
        Some(note) => format!("{KEEP_PLANNING}\nTheir note: {note}"),
        None => KEEP_PLANNING.to_owned(),
    }
}

struct ExitPlanMode {
    ctx: Context,
    modes: Arc<Modes>,
}

impl ExitPlanMode {
    async fn run(&self, call: CallView, cancel: CancelBox) -> ToolReply {
        let session = call.session.to_string();
        if !self.modes.active(&self.ctx, &session) {
            return failure(NOT_PLANNING, "NOT_PLANNING");
        }
        let plan = match plan_of(&call.arguments) {
            Ok(plan) => plan,
            Err(error) => return failure(error.to_string(), "INVALID_ARGUMENTS"),
        };
        let Ok(Some(approval)) = self.ctx.get::<ApprovalService>(APPROVAL_SERVICE) else {
            return failure(UNAVAILABLE, "UNAVAILABLE");
        };
        let policy = approval
            .session_policy(RString::from(session.as_str()))
            .decode();
        if matches!(policy, Ok(ApprovalPolicy::Never)) {
            return self.leave(&session, APPROVED_UNASKED);
        }
        let id = format!("plan-review-{}", call.call_id);
        let ask = ApprovalRequest {
            id: id.clone(),
            session: session.clone(),
            tool_name: NAME.to_owned(),
            call_id: Some(call.call_id.to_string()).filter(|id| !id.is_empty()),
            reason: Some(plan),
        };
        let asked = approval.request(Json::encode(&ask));
        let outcome = match first_of(asked, cancel.cancelled()).await {
            Either::Left(outcome) => outcome.decode().unwrap_or(ApprovalOutcome::Unavailable),
            Either::Right(()) => ApprovalOutcome::Cancelled,
        };
        match outcome {
            ApprovalOutcome::AllowedOnce => self.leave(&session, APPROVED),
            ApprovalOutcome::Rejected => {
                let note = self.note(&session, &id);
                failure(keep_planning(note.as_deref()), "KEEP_PLANNING")
            }
            ApprovalOutcome::Cancelled => failure(DISMISSED, "DISMISSED"),
            ApprovalOutcome::Unavailable => failure(UNAVAILABLE, "UNAVAILABLE"),
        }
    }

    /// Leaves plan mode (logged) and answers `text`.
    fn leave(&self, session: &str, text: &str) -> ToolReply {
        match state::set(&self.ctx, session, false) {
            Ok(()) => ToolReply::text(text),
            Err(error) => failure(
                format!(
                    "the plan was approved, but leaving plan mode was not logged ({error}); stay in plan mode and tell the person"
                ),
                "NOT_LOGGED",
            ),
        }
    }

    /// The note logged with the decision of review `id`, read from the log (the session is the
    /// truth, whichever client answered).
    fn note(&self, session: &str, id: &str) -> Option<String> {
        let live = open_live(&self.ctx, session).ok()?;
        live.events(0, live.event_count())
            .iter()
            .rev()
            .filter_map(|record| record.decode::<ApprovalDecidedEvent>()?.ok())
            .find(|decided| decided.id == id)
            .and_then(|decided| decided.note)
    }
}

struct Handle(Arc<ExitPlanMode>);

impl Tool for Handle {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&decl())
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = self.0.clone();
        async move { Json::encode(&tool.run(call, cancel).await) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

/// The tool, for registration.
pub(crate) fn tool(ctx: &Context, modes: Arc<Modes>) -> ToolBox {
    let tool = ExitPlanMode {
        ctx: ctx.clone(),
        modes,
    };
    tool_box(Handle(Arc::new(tool)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_needs_a_heading() {
        assert_eq!(
            plan_of(r##"{"plan":"  # Add a flag\n\n1. parse it"}"##).as_deref(),
            Ok("# Add a flag\n\n1. parse it")
        );
        for bad in [
            r#"{"plan":"do things"}"#,
            r###"{"plan":"## Sub only"}"###,
            r##"{"plan":"# "}"##,
        ] {
            assert_eq!(plan_of(bad), Err(PlanError::NoHeading), "{bad}");
        }
        assert!(matches!(plan_of("{}"), Err(PlanError::Shape(_))));
        assert!(matches!(plan_of("nope"), Err(PlanError::Shape(_))));
    }

    #[test]
    fn a_note_goes_back_to_the_model() {
        assert_eq!(keep_planning(Some("  ")), KEEP_PLANNING);
        assert!(keep_planning(Some("cover the tests")).ends_with("Their note: cover the tests"));
    }

    #[test]
    fn the_declaration_takes_one_plan() {
        let decl = decl();
        assert_eq!(decl.parameters["required"], json!(["plan"]));
    }
}

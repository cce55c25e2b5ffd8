//! A plan under review (`exit_plan_mode`'s approval, see `plugins/plan-mode`), put to the
//! client as a `session/request_permission` that carries the plan: the tool call's title is
//! the plan's heading, its content the whole plan as text, its raw input the call's arguments,
//! and the choices are the review's: Approve (`allow_once`) and Keep planning
//! (`reject_once`). Nothing holds beyond this one review, in either mode: a plan approved
//! once is not a rule for the next. A permission answer carries no text, so a client's
//! "keep planning" reaches the model without a note; the person says more in their next
//! prompt.

use dsh_protocol::{ApprovalOutcome, ApprovalRequest, ApprovalVerdict};

use crate::schema::{PermissionOption, PermissionOutcome};
use crate::updates::{Content, ToolCallContent, ToolCallUpdate, ToolKind};

/// The tool whose approvals are plan reviews.
pub(crate) const TOOL: &str = "exit_plan_mode";

pub(crate) const OPTIONS: [PermissionOption; 2] = [
    PermissionOption {
        option_id: "approve-plan",
        name: "Approve the plan",
        kind: "allow_once",
    },
    PermissionOption {
        option_id: "keep-planning",
        name: "Keep planning",
        kind: "reject_once",
    },
];

/// The tool call a review shows: the plan, titled by its heading.
pub(crate) fn call_view(ask: &ApprovalRequest, call_id: String) -> ToolCallUpdate {
    let plan = ask.reason.clone().unwrap_or_default();
    let title = plan
        .lines()
        .find_map(|line| line.strip_prefix("# "))
        .map_or_else(
            || "Plan".to_owned(),
            |heading| format!("Plan: {}", heading.trim()),
        );
    ToolCallUpdate {
        tool_call_id: call_id,
        title: Some(title),
        kind: Some(ToolKind::Think),
        raw_input: Some(serde_json::Value::Object(
            [("plan".to_owned(), serde_json::Value::String(plan.clone()))]
                .into_iter()
                .collect(),
        )),
        content: Some(vec![ToolCallContent::Content {
            content: Content::text(plan),
        }]),
        ..ToolCallUpdate::default()
    }
}

/// The verdict of the client's answer: only "approve-plan" approves.
pub(crate) fn verdict(outcome: PermissionOutcome) -> ApprovalVerdict {
    match outcome {
        PermissionOutcome::Cancelled => ApprovalVerdict::of(ApprovalOutcome::Cancelled),
        PermissionOutcome::Selected { option_id } if option_id == OPTIONS[0].option_id => {
            ApprovalVerdict::of(ApprovalOutcome::AllowedOnce)
        }
        PermissionOutcome::Selected { .. } => ApprovalVerdict::of(ApprovalOutcome::Rejected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_shows_the_plan_and_only_approve_approves() {
        let ask = ApprovalRequest {
            id: "plan-review-c1".to_owned(),
            session: "s".to_owned(),
            tool_name: TOOL.to_owned(),
            call_id: Some("c1".to_owned()),
            reason: Some("# Add a flag\n\n1. Parse it.".to_owned()),
        };
        let view = serde_json::to_value(call_view(&ask, "c1".to_owned())).unwrap();
        assert_eq!(view["title"], "Plan: Add a flag");
        assert_eq!(
            view["content"][0]["content"]["text"],
            "# Add a flag\n\n1. Parse it."
        );
        let approve = PermissionOutcome::Selected {
            option_id: "approve-plan".to_owned(),
        };
        assert_eq!(verdict(approve).outcome, ApprovalOutcome::AllowedOnce);
        let other = PermissionOutcome::Selected {
            option_id: "allow-always".to_owned(),
        };
        assert_eq!(verdict(other).outcome, ApprovalOutcome::Rejected);
    }
}

//! The pre-dispatch gates: the `tools/pre-execute` decision, the approval answer to an `ask`,
//! then the monotonic guards. Arguments are never rewritten by any gate: they were already
//! logged and shown, and history, audit, UI and execution must agree.

use dsh_protocol::{ApprovalOutcome, PreDecision};

use crate::failure::{DenialSource, ToolFailure};

/// What came of putting an `ask` to the approval service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskAnswer {
    /// No approval service is composed.
    NoService,
    /// The call has no agent, so there is no session to audit to and no UI to route to.
    NoAgent,
    Answered(ApprovalOutcome),
}

/// The verdict of the gates so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Allow,
    Deny(ToolFailure),
}

impl Gate {
    /// The verdict of a pre-execute decision, or `None` for `ask`, which needs
    /// [`Gate::resolve_ask`].
    pub fn from_pre_decision(decision: &PreDecision) -> Option<Self> {
        match decision {
            PreDecision::Allow => Some(Self::Allow),
            PreDecision::Deny { reason } => Some(Self::Deny(ToolFailure::denied(
                reason.clone(),
                DenialSource::PreExecute,
            ))),
            PreDecision::Ask { .. } => None,
            PreDecision::Other(unknown) => Some(Self::Deny(ToolFailure::denied(
                format!(
                    "tools/pre-execute answered a decision this version cannot read (`{}`)",
                    unknown.tag().unwrap_or("?")
                ),
                DenialSource::PreExecute,
            ))),
        }
    }

    /// The verdict of an `ask`. Fail-closed: everything but `allowed-once` denies. The refusals
    /// have distinct reasons so the model can tell a human "no" (try something else) from an
    /// absent approval channel (asking again will not help).
    pub fn resolve_ask(tool: &str, ask_reason: Option<&str>, answer: AskAnswer) -> Self {
        let (reason, source) = match answer {
            AskAnswer::Answered(ApprovalOutcome::AllowedOnce) => return Self::Allow,
            AskAnswer::NoService => (
                ask_reason.map_or_else(
                    || format!("tool \"{tool}\" requires approval (not yet supported)"),
                    str::to_owned,
                ),
                DenialSource::ApprovalMissing,
            ),
            AskAnswer::NoAgent => (
                format!(
                    "tool \"{tool}\" requires approval, but the call has no agent to route it through"
                ),
                DenialSource::ApprovalMissing,
            ),
            AskAnswer::Answered(ApprovalOutcome::Rejected) => (
                format!("the user rejected tool \"{tool}\""),
                DenialSource::ApprovalRejected,
            ),
            AskAnswer::Answered(ApprovalOutcome::Cancelled) => (
                format!("approval for tool \"{tool}\" was cancelled"),
                DenialSource::ApprovalCancelled,
            ),
            AskAnswer::Answered(ApprovalOutcome::Unavailable) => (
                format!("tool \"{tool}\" requires approval, but no approval channel is available"),
                DenialSource::ApprovalUnavailable,
            ),
        };
        Self::Deny(ToolFailure::denied(reason, source))
    }

    /// Run the guards after policy and approval. Guards are consulted only for an allowed call
    /// and can only deny: approval comes first because it is negotiable and the owner's guards
    /// are not, so a human's "allow once" can never override a guard.
    pub fn then_guards(self, guard_denial: impl FnOnce() -> Option<String>) -> Self {
        match self {
            Self::Allow => match guard_denial() {
                Some(reason) => Self::Deny(ToolFailure::denied(reason, DenialSource::Guard)),
                None => Self::Allow,
            },
            denied @ Self::Deny(_) => denied,
        }
    }
}

//! Pre-dispatch gates: pre-execute decision, approval, guards.

use dsh_protocol::{ApprovalOutcome, PreDecision};
use dsh_tools_core::{AskAnswer, DenialSource, FailureKind, Gate, ToolOutcome};
use serde_json::json;

fn denial(gate: Gate) -> (String, FailureKind) {
    match gate {
        Gate::Deny(failure) => (failure.message().to_owned(), failure.kind()),
        Gate::Allow => panic!("expected a denial"),
    }
}

#[test]
fn pre_execute_decisions_have_the_wire_shape() {
    let decisions: Vec<PreDecision> = serde_json::from_value(json!([
        {"kind": "allow"},
        {"kind": "deny", "reason": "bash is disabled by policy in this session"},
        {"kind": "ask"},
        {"kind": "ask", "reason": "writes outside the workspace"}
    ]))
    .unwrap();
    assert_eq!(Gate::from_pre_decision(&decisions[0]), Some(Gate::Allow));
    let (message, kind) = denial(Gate::from_pre_decision(&decisions[1]).unwrap());
    assert_eq!(message, "bash is disabled by policy in this session");
    assert_eq!(kind, FailureKind::Denied(DenialSource::PreExecute));
    assert_eq!(Gate::from_pre_decision(&decisions[2]), None);
    assert_eq!(
        serde_json::to_value(&decisions[3]).unwrap(),
        json!({"kind": "ask", "reason": "writes outside the workspace"})
    );
}

#[test]
fn only_allowed_once_passes_an_ask_and_each_refusal_says_why() {
    assert_eq!(
        Gate::resolve_ask(
            "bash",
            None,
            AskAnswer::Answered(ApprovalOutcome::AllowedOnce)
        ),
        Gate::Allow
    );
    let cases = [
        (
            AskAnswer::Answered(ApprovalOutcome::Rejected),
            "the user rejected tool \"bash\"",
            DenialSource::ApprovalRejected,
        ),
        (
            AskAnswer::Answered(ApprovalOutcome::Cancelled),
            "approval for tool \"bash\" was cancelled",
            DenialSource::ApprovalCancelled,
        ),
        (
            AskAnswer::Answered(ApprovalOutcome::Unavailable),
            "tool \"bash\" requires approval, but no approval channel is available",
            DenialSource::ApprovalUnavailable,
        ),
        (
            AskAnswer::NoService,
            "tool \"bash\" requires approval (not yet supported)",
            DenialSource::ApprovalMissing,
        ),
        (
            AskAnswer::NoAgent,
            "tool \"bash\" requires approval, but the call has no agent to route it through",
            DenialSource::ApprovalMissing,
        ),
    ];
    for (answer, text, source) in cases {
        let (message, kind) = denial(Gate::resolve_ask("bash", None, answer));
        assert_eq!(message, text);
        assert_eq!(kind, FailureKind::Denied(source));
    }
    let (message, _) = denial(Gate::resolve_ask(
        "bash",
        Some("custom reason"),
        AskAnswer::NoService,
    ));
    assert_eq!(message, "custom reason");
    let serialized =
        serde_json::to_value([ApprovalOutcome::AllowedOnce, ApprovalOutcome::Unavailable]).unwrap();
    assert_eq!(serialized, json!(["allowed-once", "unavailable"]));
}

#[test]
fn guards_run_only_for_allowed_calls_and_a_human_cannot_override_them() {
    let mut consulted = false;
    let denied = Gate::from_pre_decision(&PreDecision::Deny {
        reason: "no".into(),
    })
    .unwrap()
    .then_guards(|| {
        consulted = true;
        None
    });
    assert!(!consulted);
    assert_eq!(denial(denied).0, "no");
    // Approved by a human, still denied by the owner's guard.
    let approved = Gate::resolve_ask(
        "write",
        None,
        AskAnswer::Answered(ApprovalOutcome::AllowedOnce),
    );
    let (message, kind) =
        denial(approved.then_guards(|| Some("writes to /etc are forbidden".into())));
    assert_eq!(message, "writes to /etc are forbidden");
    assert_eq!(kind, FailureKind::Denied(DenialSource::Guard));
    assert_eq!(Gate::Allow.then_guards(|| None), Gate::Allow);
}

#[test]
fn a_denial_reaches_the_model_as_error_text_without_a_logged_code() {
    let Gate::Deny(failure) =
        Gate::resolve_ask("bash", None, AskAnswer::Answered(ApprovalOutcome::Rejected))
    else {
        panic!("expected a denial");
    };
    let outcome = ToolOutcome::failure(failure);
    assert_eq!(
        outcome.content(),
        [dsh_protocol::ContentBlock::text(
            "Error: the user rejected tool \"bash\""
        )]
    );
    assert_eq!(outcome.error_info(), None);
}

#[test]
fn a_decision_a_newer_policy_made_denies_and_a_malformed_known_one_does_not_parse() {
    let newer: PreDecision =
        serde_json::from_value(json!({"kind": "sandbox", "profile": "strict"})).unwrap();
    let (message, _) = denial(Gate::from_pre_decision(&newer).unwrap());
    assert!(message.contains("`sandbox`"), "{message}");
    assert!(serde_json::from_value::<PreDecision>(json!({"kind": "deny"})).is_err());
}

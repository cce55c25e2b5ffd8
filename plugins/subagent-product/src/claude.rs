//! Claude Code as a child: `claude` with its stream-json wire on stdin and stdout, driven as
//! the Agent SDK drives it. One run sends the task as one user message and reads until the
//! `result` message: a `success` that is not an error and not blank is the answer; anything
//! else fails with the result's subtype as its category. Permission prompts come over the
//! control protocol (`--permission-prompt-tool=stdio`) and are denied at once: nobody is
//! there to answer them. The product keeps no session (`--no-session-persistence`), may not
//! ask the user questions, and in planning mode may not leave it.

use std::sync::Arc;
use std::time::Duration;

use dsh_plugin_api::cancel::{CancelFlag, first_of};
use serde_json::Value;

use crate::claude_wire::{
    Answer, AssistantMessage, ControlRequest, ControlResponse, Decision, Interrupt,
    InterruptRequest, Printed, TextBlock, UserBody, UserMessage,
};
use crate::outcome::{Failure, Outcome, Stop, unattended_decision};
use crate::run::Task;
use crate::wire::{Line, Wire};

pub(crate) const PRODUCT: &str = "Claude Code";

/// How long an interrupted query gets to end with its result.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// The result subtypes that name a category of their own.
const ERROR_SUBTYPES: [&str; 4] = [
    "error_during_execution",
    "error_max_turns",
    "error_max_budget_usd",
    "error_max_structured_output_retries",
];

/// The command line after the executable, for `permission_mode`: what the Agent SDK passes
/// for one unattended query (no initialize request is sent, so Claude Code keeps its own
/// system prompt).
pub(crate) fn arguments(permission_mode: &str) -> Vec<String> {
    let mut disallowed = vec!["AskUserQuestion"];
    if permission_mode == "plan" {
        disallowed.push("ExitPlanMode");
    }
    let mut args: Vec<String> = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    // In bypass mode nothing is asked; otherwise what would be asked comes to us, and is
    // denied.
    if permission_mode != "bypassPermissions" {
        args.push("--permission-prompt-tool=stdio".to_owned());
    }
    args.push(format!("--disallowedTools={}", disallowed.join(",")));
    args.push(format!("--permission-mode={permission_mode}"));
    if permission_mode == "bypassPermissions" {
        args.push("--allow-dangerously-skip-permissions".to_owned());
    }
    args.push("--no-session-persistence".to_owned());
    args
}

struct Client<'a> {
    wire: &'a Wire,
    mode: String,
    /// The latest assistant text: the partial answer of a run that fails.
    partial: String,
    unattended: Option<String>,
}

/// Runs `task` through a started `claude`.
pub(crate) async fn run(
    wire: &Wire,
    task: &Task,
    permission_mode: &str,
    cancel: &Arc<CancelFlag>,
) -> Outcome {
    let mut client = Client {
        wire,
        mode: permission_mode.to_owned(),
        partial: String::new(),
        unattended: None,
    };
    let mut outcome = match cancel.until(client.drive(task)).await {
        Some(outcome) => outcome,
        None => {
            client.interrupt().await;
            Outcome {
                stop: Stop::Aborted,
                output: client.partial.clone(),
                failure: None,
                unattended: None,
            }
        }
    };
    if outcome.stop == Stop::Error {
        outcome.unattended = client.unattended.clone();
    }
    outcome
}

/// What a denied permission prompt tells the product.
const DENIED: &str = "Nobody can approve this here: the task runs unattended. Do without it, or say in your answer what you would need.";

impl Client<'_> {
    async fn drive(&mut self, task: &Task) -> Outcome {
        let message = UserMessage {
            kind: "user",
            session_id: "",
            parent_tool_use_id: None,
            message: UserBody {
                role: "user",
                content: vec![TextBlock {
                    kind: "text",
                    text: &task.prompt,
                }],
            },
        };
        if self.wire.send(&message).await.is_err() {
            return self.ended(Failure::new("query-start", "unknown")).await;
        }
        loop {
            let message = match self.wire.next().await {
                Line::Message(message) => message,
                Line::Closed(exit) => {
                    let failure = match exit.code {
                        Some(0) => Failure::new("query-run", "missing-result"),
                        _ => Failure::new("process", "process-exit").with_exit(exit),
                    };
                    return Outcome::failed(failure, self.partial.clone());
                }
            };
            match serde_json::from_value::<Printed>(message) {
                Ok(Printed::Assistant { message }) => self.follow_assistant(message),
                Ok(Printed::ControlRequest {
                    request_id,
                    request,
                }) => self.answer_control(&request_id, request).await,
                Ok(Printed::Result {
                    subtype,
                    is_error,
                    result,
                }) => {
                    // The product exits once its input ends.
                    self.wire.close_stdin().await;
                    return self.settle(&subtype, is_error, result.as_deref());
                }
                Ok(Printed::Other) | Err(_) => {}
            }
        }
    }

    /// The process ended before the run could start: its exit is the fact to report.
    async fn ended(&self, failure: Failure) -> Outcome {
        loop {
            if let Line::Closed(exit) = self.wire.next().await {
                return Outcome::failed(failure.with_exit(exit), String::new());
            }
        }
    }

    fn follow_assistant(&mut self, message: AssistantMessage) {
        let text: String = message
            .content
            .into_iter()
            .filter(|block| block.kind == "text")
            .filter_map(|block| block.text)
            .collect();
        if !text.trim().is_empty() {
            self.partial = text;
        }
    }

    /// Answers a control request without a person: tool permissions denied, MCP
    /// elicitation declined, anything else refused.
    async fn answer_control(&mut self, id: &Value, request: ControlRequest) {
        let answer = match request.subtype.as_str() {
            "can_use_tool" => {
                self.decide(
                    "tool permission",
                    "denied",
                    "the provider does not grant interactive approval",
                );
                Answer {
                    subtype: "success",
                    request_id: id,
                    response: Some(Decision::Deny {
                        behavior: "deny",
                        message: DENIED,
                        tool_use_id: request.tool_use_id,
                    }),
                    error: None,
                }
            }
            "elicitation" | "mcp_elicitation" => {
                self.decide(
                    "MCP elicitation",
                    "declined",
                    "the provider does not collect interactive MCP input",
                );
                Answer {
                    subtype: "success",
                    request_id: id,
                    response: Some(Decision::Decline { action: "decline" }),
                    error: None,
                }
            }
            other => Answer {
                subtype: "error",
                request_id: id,
                response: None,
                error: Some(format!(
                    "dsh cannot answer the control request `{other}` without a person"
                )),
            },
        };
        let response = ControlResponse {
            kind: "control_response",
            response: answer,
        };
        let _ = self.wire.send(&response).await;
    }

    /// Asks Claude Code to stop the query, as the Agent SDK does, and gives it
    /// [`INTERRUPT_GRACE`] to end with its result (the process is ended afterwards anyway).
    async fn interrupt(&self) {
        let request = Interrupt {
            kind: "control_request",
            request_id: "dsh-interrupt",
            request: InterruptRequest {
                subtype: "interrupt",
            },
        };
        if self.wire.send(&request).await.is_err() {
            return;
        }
        let ended = async {
            loop {
                match self.wire.next().await {
                    Line::Closed(_) => return,
                    Line::Message(message) => {
                        if let Ok(Printed::Result { .. }) = serde_json::from_value(message) {
                            return;
                        }
                    }
                }
            }
        };
        let _ = first_of(ended, self.wire.sleep(INTERRUPT_GRACE)).await;
    }

    fn decide(&mut self, request: &str, decision: &str, reason: &str) {
        self.unattended = Some(unattended_decision(
            PRODUCT, &self.mode, request, decision, reason,
        ));
    }

    fn settle(&self, subtype: &str, is_error: bool, text: Option<&str>) -> Outcome {
        let text = text.unwrap_or_default();
        if subtype == "success" && !is_error && !text.trim().is_empty() {
            return Outcome::completed(text.to_owned());
        }
        let category = match subtype {
            "success" => "invalid-success",
            other if ERROR_SUBTYPES.contains(&other) => other,
            _ => "unknown",
        };
        Outcome::failed(Failure::new("query-run", category), self.partial.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planning_children_cannot_leave_the_plan_and_nobody_asks_the_user() {
        let args = arguments("plan");
        assert!(args.contains(&"--disallowedTools=AskUserQuestion,ExitPlanMode".to_owned()));
        assert!(args.contains(&"--permission-prompt-tool=stdio".to_owned()));
        assert!(arguments("dontAsk").contains(&"--no-session-persistence".to_owned()));
        assert!(
            arguments("bypassPermissions")
                .contains(&"--allow-dangerously-skip-permissions".to_owned())
        );
    }
}

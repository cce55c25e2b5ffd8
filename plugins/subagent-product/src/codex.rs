//! Codex as a child: `codex app-server` spoken over its stdio (JSON-RPC, one message per
//! line). One run is `initialize`, `initialized`, an ephemeral `thread/start` in the parent's
//! working directory with the approval policy and sandbox this row allows, one `turn/start`
//! with the task, and the wait for that turn's `turn/completed`. The answer is the latest
//! agent message of phase `final_answer` (else the latest without a phase; commentary never
//! counts). Requests Codex makes of a person are answered at once without one: approvals
//! declined or cancelled, no extra permissions, no answers to its questions, MCP elicitation
//! declined; any other request fails the run.

use std::sync::Arc;
use std::time::Duration;

use dsh_plugin_api::cancel::{CancelFlag, first_of};
use serde_json::{Value, json};

use crate::outcome::{Failure, Outcome, Stop};
use crate::run::Task;
use crate::wire::{Exit, Line, Wire};

pub(crate) const PRODUCT: &str = "Codex";

/// How long an interrupted turn gets to report that it stopped.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// Stderr lines by which Codex says it refused something on its own (printed, not sent).
const STDERR_SIGNATURES: [(&str, &str, &str, &str); 2] = [
    (
        "approval policy is Never; reject command",
        "command execution",
        "denied",
        "Codex rejected an escalation because the selected policy never asks for approval",
    ),
    (
        "recorded sandbox violation:",
        "sandbox execution",
        "failed",
        "Codex reported a sandbox violation",
    ),
];

/// The `thread/start` fields of a run: approval policy and sandbox.
pub(crate) struct ThreadPolicy {
    pub(crate) approval_policy: &'static str,
    pub(crate) approvals_reviewer: Option<&'static str>,
    pub(crate) sandbox: &'static str,
    /// The row's mode, for diagnostics.
    pub(crate) mode: String,
}

/// The answer being assembled.
#[derive(Default)]
struct Answer {
    final_answer: Option<String>,
    unphased: Option<String>,
    /// `partial_answer`: only what a run that stopped early had said.
    partial: Option<String>,
}

impl Answer {
    fn best(&self) -> String {
        self.final_answer
            .clone()
            .or_else(|| self.unphased.clone())
            .or_else(|| self.partial.clone())
            .filter(|text| !text.trim().is_empty())
            .unwrap_or_default()
    }
}

struct Client<'a> {
    wire: &'a Wire,
    next_id: u64,
    thread: Option<String>,
    turn: Option<String>,
    answer: Answer,
    unattended: Option<String>,
    mode: String,
}

enum Step {
    Response(Result<Value, String>),
    Completed(Value),
    Closed(Exit),
}

/// Runs `task` through a started app-server.
pub(crate) async fn run(
    wire: &Wire,
    task: &Task,
    policy: &ThreadPolicy,
    cancel: &Arc<CancelFlag>,
) -> Outcome {
    let mut client = Client {
        wire,
        next_id: 0,
        thread: None,
        turn: None,
        answer: Answer::default(),
        unattended: None,
        mode: policy.mode.clone(),
    };
    let outcome = match cancel.until(client.drive(task, policy)).await {
        Some(outcome) => outcome,
        None => {
            client.interrupt().await;
            Outcome {
                stop: Stop::Aborted,
                output: client.answer.best(),
                failure: None,
                unattended: None,
            }
        }
    };
    let mut outcome = outcome;
    if outcome.stop == Stop::Error {
        outcome.unattended = client
            .unattended
            .clone()
            .or_else(|| stderr_decision(wire, &client.mode));
    }
    outcome
}

fn stderr_decision(wire: &Wire, mode: &str) -> Option<String> {
    let stderr = wire.stderr();
    STDERR_SIGNATURES
        .iter()
        .filter_map(|(text, request, decision, reason)| {
            stderr.rfind(text).map(|at| (at, request, decision, reason))
        })
        .max_by_key(|(at, ..)| *at)
        .map(|(_, request, decision, reason)| unattended(mode, request, decision, reason))
}

fn unattended(mode: &str, request: &str, decision: &str, reason: &str) -> String {
    format!(
        "Codex unattended decision (mode: {mode}; request: {request}; decision: {decision}): {reason}"
    )
}

impl Client<'_> {
    async fn drive(&mut self, task: &Task, policy: &ThreadPolicy) -> Outcome {
        let initialize = json!({
            "clientInfo": {"name": "dsh", "title": "dsh", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"experimentalApi": false},
        });
        if let Err(failure) = self.request("initialize", initialize, "initialize").await {
            return Outcome::failed(failure, String::new());
        }
        if self
            .wire
            .send(&json!({"jsonrpc": "2.0", "method": "initialized"}))
            .await
            .is_err()
        {
            return Outcome::failed(Failure::new("initialize", "unknown"), String::new());
        }
        let mut thread = json!({
            "cwd": task.cwd,
            "ephemeral": true,
            "approvalPolicy": policy.approval_policy,
            "sandbox": policy.sandbox,
        });
        if let Some(reviewer) = policy.approvals_reviewer {
            thread["approvalsReviewer"] = json!(reviewer);
        }
        let started = match self.request("thread/start", thread, "thread-start").await {
            Ok(started) => started,
            Err(failure) => return Outcome::failed(failure, String::new()),
        };
        let Some(thread) = started["thread"]["id"].as_str() else {
            return Outcome::failed(Failure::new("thread-start", "unknown"), String::new());
        };
        self.thread = Some(thread.to_owned());
        let input = json!({
            "threadId": thread,
            "input": [{"type": "text", "text": task.prompt, "text_elements": []}],
        });
        let turn = match self.request("turn/start", input, "turn-start").await {
            Ok(turn) => turn,
            Err(failure) => return Outcome::failed(failure, self.answer.best()),
        };
        match turn["turn"]["id"].as_str() {
            Some(id) => self.turn = Some(id.to_owned()),
            None => return Outcome::failed(Failure::new("turn-start", "unknown"), String::new()),
        }
        loop {
            match self.step(None).await {
                Step::Completed(turn) => return self.settle(&turn),
                Step::Closed(exit) => {
                    return Outcome::failed(
                        Failure::new("process", "unknown").with_exit(exit),
                        self.answer.best(),
                    );
                }
                Step::Response(_) => {}
            }
        }
    }

    /// Sends request `method` and waits for its answer, handling what arrives meanwhile.
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        stage: &'static str,
    ) -> Result<Value, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.wire.send(&message).await.is_err() {
            return Err(self.closed_failure(stage).await);
        }
        loop {
            match self.step(Some(id)).await {
                Step::Response(Ok(result)) => return Ok(result),
                Step::Response(Err(_)) => return Err(Failure::new(stage, "unknown")),
                Step::Closed(exit) => return Err(Failure::new(stage, "unknown").with_exit(exit)),
                // A turn cannot complete before it was started; ignore a stray one.
                Step::Completed(_) => {}
            }
        }
    }

    async fn closed_failure(&self, stage: &'static str) -> Failure {
        loop {
            if let Line::Closed(exit) = self.wire.next().await {
                return Failure::new(stage, "unknown").with_exit(exit);
            }
        }
    }

    /// Reads one message: the response to `waiting`, our turn's completion, or the end.
    async fn step(&mut self, waiting: Option<u64>) -> Step {
        loop {
            let message = match self.wire.next().await {
                Line::Message(message) => message,
                Line::Closed(exit) => return Step::Closed(exit),
            };
            let method = message["method"].as_str().map(str::to_owned);
            match (message.get("id"), method) {
                (Some(id), Some(method)) => {
                    let answer = self.answer_request(&method);
                    let reply = match answer {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(error) => {
                            let reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": error}});
                            let _ = self.wire.send(&reply).await;
                            return Step::Response(Err(error));
                        }
                    };
                    let _ = self.wire.send(&reply).await;
                }
                (Some(id), None) => {
                    if waiting.is_some() && id.as_u64() == waiting {
                        return Step::Response(match message.get("error") {
                            Some(error) => Err(error.to_string()),
                            None => Ok(message["result"].clone()),
                        });
                    }
                }
                (None, Some(method)) => {
                    if let Some(turn) = self.notification(&method, &message["params"]) {
                        return Step::Completed(turn);
                    }
                }
                (None, None) => {}
            }
        }
    }

    /// Follows a notification; answers the turn when it is our turn's completion.
    fn notification(&mut self, method: &str, params: &Value) -> Option<Value> {
        if params["threadId"].as_str() != self.thread.as_deref() || self.thread.is_none() {
            return None;
        }
        match method {
            "item/completed" => {
                if params["turnId"].as_str() != self.turn.as_deref() {
                    return None;
                }
                let item = &params["item"];
                match item["type"].as_str() {
                    Some("agentMessage") => {
                        let text = item["text"].as_str().unwrap_or_default().to_owned();
                        match item["phase"].as_str() {
                            Some("final_answer") => self.answer.final_answer = Some(text),
                            None => self.answer.unphased = Some(text),
                            Some("partial_answer") => self.answer.partial = Some(text),
                            Some(_) => {}
                        }
                    }
                    Some("commandExecution") if item["status"] == "declined" => {
                        self.decide(
                            "command execution",
                            "declined",
                            "Codex declined the command under the selected permission mode",
                        );
                    }
                    Some("fileChange") if item["status"] == "declined" => {
                        self.decide(
                            "file change",
                            "declined",
                            "Codex declined the file change under the selected permission mode",
                        );
                    }
                    _ => {}
                }
                None
            }
            "turn/completed" => {
                let turn = &params["turn"];
                (turn["id"].as_str() == self.turn.as_deref()).then(|| turn.clone())
            }
            _ => None,
        }
    }

    fn decide(&mut self, request: &str, decision: &str, reason: &str) {
        self.unattended = Some(unattended(&self.mode, request, decision, reason));
    }

    /// The answer to a request Codex makes of a person, given without one.
    fn answer_request(&mut self, method: &str) -> Result<Value, String> {
        match method {
            // `decline` lets the turn go on without the action; `cancel`, even where it is
            // offered, would end Codex's whole turn as interrupted.
            "item/commandExecution/requestApproval" | "item/fileChange/requestApproval" => {
                let request = match method.contains("command") {
                    true => "command approval",
                    false => "file approval",
                };
                self.decide(
                    request,
                    "declined",
                    "the provider does not grant interactive approval",
                );
                Ok(json!({"decision": "decline"}))
            }
            "item/permissions/requestApproval" => {
                self.decide(
                    "permission grant",
                    "denied",
                    "the provider grants no additional turn permissions",
                );
                Ok(json!({"permissions": {}, "scope": "turn"}))
            }
            "item/tool/requestUserInput" => {
                self.decide(
                    "user input",
                    "empty response",
                    "the provider does not collect interactive answers",
                );
                Ok(json!({"answers": {}}))
            }
            "mcpServer/elicitation/request" => {
                self.decide(
                    "MCP elicitation",
                    "declined",
                    "the provider does not collect interactive MCP input",
                );
                Ok(json!({"action": "decline", "content": null, "_meta": null}))
            }
            other => Err(format!(
                "dsh cannot answer the app-server request `{other}` without a person"
            )),
        }
    }

    /// How the completed turn reads.
    fn settle(&self, turn: &Value) -> Outcome {
        let output = self.answer.best();
        match turn["status"].as_str() {
            Some("completed") if !output.is_empty() => Outcome::completed(output),
            Some("completed") => Outcome::failed(Failure::new("turn", "unknown"), output),
            Some("interrupted") => Outcome {
                stop: Stop::Aborted,
                output,
                failure: None,
                unattended: None,
            },
            _ => {
                let failure = failure_info(turn);
                if failure.category == "contextWindowExceeded" {
                    return Outcome {
                        stop: Stop::MaxTokens,
                        output,
                        failure: None,
                        unattended: None,
                    };
                }
                Outcome::failed(failure, output)
            }
        }
    }

    /// Asks Codex to stop the turn and gives it [`INTERRUPT_GRACE`] to say it did, so what
    /// it runs can wind down (best effort: the process is ended afterwards anyway).
    async fn interrupt(&mut self) {
        let (Some(thread), Some(turn)) = (self.thread.clone(), self.turn.clone()) else {
            return;
        };
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "turn/interrupt", "params": {"threadId": thread, "turnId": turn}});
        if self.wire.send(&message).await.is_err() {
            return;
        }
        let wire = self.wire;
        let settled = async {
            loop {
                if let Step::Completed(_) | Step::Closed(_) = self.step(None).await {
                    return;
                }
            }
        };
        let _ = first_of(settled, wire.sleep(INTERRUPT_GRACE)).await;
    }
}

/// The failure category (and HTTP status) of a failed turn: the `codexErrorInfo` variant's
/// name; anything unrecognised is `unknown`.
fn failure_info(turn: &Value) -> Failure {
    // The string variants of 0.171's `codexErrorInfo`.
    const NAMED: [&str; 19] = [
        "contextWindowExceeded",
        "sessionBudgetExceeded",
        "usageLimitExceeded",
        "rateLimitExceeded",
        "flexUnavailable",
        "serverOverloaded",
        "modelNotFound",
        "policyCapacityUnavailable",
        "inferenceHookDenied",
        "cyberPolicy",
        "bioPolicy",
        "misalignmentPolicyViolation",
        "tooManyDenials",
        "internalServerError",
        "unauthorized",
        "badRequest",
        "threadRollbackFailed",
        "sandboxError",
        "other",
    ];
    const WITH_STATUS: [&str; 4] = [
        "httpConnectionFailed",
        "responseStreamConnectionFailed",
        "responseStreamDisconnected",
        "responseTooManyFailedAttempts",
    ];
    let info = &turn["error"]["codexErrorInfo"];
    if let Some(name) = info.as_str() {
        let category = if NAMED.contains(&name) {
            name
        } else {
            "unknown"
        };
        return Failure::new("turn", category);
    }
    let Some(object) = info.as_object().filter(|object| object.len() == 1) else {
        return Failure::new("turn", "unknown");
    };
    let Some((name, detail)) = object.iter().next() else {
        return Failure::new("turn", "unknown");
    };
    if WITH_STATUS.contains(&name.as_str()) {
        let mut failure = Failure::new("turn", name.as_str());
        failure.http_status = detail["httpStatusCode"]
            .as_u64()
            .filter(|code| *code <= 65_535);
        return failure;
    }
    match name.as_str() {
        "activeTurnNotSteerable" => Failure::new("turn", "activeTurnNotSteerable"),
        _ => Failure::new("turn", "unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_turns_name_their_variant_and_status() {
        let turn = json!({"status": "failed", "error": {"message": "x", "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 503}}}});
        let failure = failure_info(&turn);
        assert_eq!(
            (failure.category.as_str(), failure.http_status),
            ("httpConnectionFailed", Some(503))
        );
        let turn = json!({"status": "failed", "error": {"codexErrorInfo": "usageLimitExceeded"}});
        assert_eq!(failure_info(&turn).category, "usageLimitExceeded");
        let turn = json!({"status": "failed", "error": {"codexErrorInfo": "somethingNew"}});
        assert_eq!(failure_info(&turn).category, "unknown");
        let turn = json!({"status": "failed", "error": {"codexErrorInfo": {"a": {}, "b": {}}}});
        assert_eq!(failure_info(&turn).category, "unknown");
    }
}

//! Codex as a child: `codex app-server` spoken over its stdio (JSON-RPC, one message per
//! line). One run is `initialize`, `initialized`, an ephemeral `thread/start` in the parent's
//! working directory with the approval policy and sandbox this row allows, one `turn/start`
//! with the task, and the wait for that turn's `turn/completed`. The answer is the latest
//! agent message of phase `final_answer` (else the latest without a phase; commentary never
//! counts). Requests Codex makes of a person are answered at once without one: approvals
//! declined (not cancelled: that would end the whole turn), no extra permissions, no answers to its questions, MCP elicitation
//! declined; any other request is refused with a JSON-RPC error (and, while a call of ours
//! waits for its answer, fails that call).

use std::sync::Arc;
use std::time::Duration;

use dsh_plugin_api::Serialize;
use dsh_plugin_api::cancel::{CancelFlag, first_of};
use serde_json::Value;

use crate::codex_failure::failure_info;
use crate::codex_wire::{
    Answered, Capabilities, ClientInfo, Empty, Incoming, Initialize, Notification, Outgoing, Reply,
    ReplyError, Started, TextInput, ThreadStart, Turn, TurnInterrupt, TurnStart,
};
use crate::outcome::{Failure, Outcome, Stop, unattended_decision};
use crate::run::Task;
use crate::wire::{Exit, Line, Wire, WireError};

/// The app-server's JSON-RPC methods this client sends and reads; they are Codex's names, not
/// session event types, though some look alike.
mod rpc {
    pub(super) const THREAD_START: &str = "thread/start";
    pub(super) const TURN_START: &str = "turn/start";
    pub(super) const TURN_INTERRUPT: &str = "turn/interrupt";
    pub(super) const ITEM_COMPLETED: &str = "item/completed";
    pub(super) const TURN_COMPLETED: &str = "turn/completed";
}

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
    /// Notifications about the turn that came before its id did.
    early: Vec<(String, Notification)>,
    answer: Answer,
    unattended: Option<String>,
    mode: String,
}

/// A request Codex makes that only a person could answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("dsh cannot answer the app-server request `{0}` without a person")]
struct Unanswerable(String);

/// Why a request got no usable answer.
#[derive(Debug, thiserror::Error)]
enum ResponseError {
    #[error(transparent)]
    Unanswerable(Unanswerable),
    #[error("the app-server answered with an error: {0}")]
    Rpc(Value),
}

enum Step {
    Response(Result<Value, ResponseError>),
    Completed(Turn),
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
        early: Vec::new(),
        answer: Answer::default(),
        unattended: None,
        mode: policy.mode.clone(),
    };
    let mut outcome = match cancel.until(client.drive(task, policy)).await {
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
    unattended_decision(PRODUCT, mode, request, decision, reason)
}

impl Client<'_> {
    async fn drive(&mut self, task: &Task, policy: &ThreadPolicy) -> Outcome {
        let initialize = Initialize {
            client_info: ClientInfo {
                name: "dsh",
                title: "dsh",
                version: env!("CARGO_PKG_VERSION"),
            },
            capabilities: Capabilities {
                experimental_api: false,
            },
        };
        if let Err(failure) = self.request("initialize", initialize, "initialize").await {
            return Outcome::failed(failure, String::new());
        }
        if self.send(None, "initialized", None::<Empty>).await.is_err() {
            return Outcome::failed(Failure::new("initialize", "unknown"), String::new());
        }
        let thread = ThreadStart {
            cwd: &task.cwd,
            ephemeral: true,
            approval_policy: policy.approval_policy,
            sandbox: policy.sandbox,
            approvals_reviewer: policy.approvals_reviewer,
        };
        let started = match self
            .request(rpc::THREAD_START, thread, "thread-start")
            .await
        {
            Ok(started) => started,
            Err(failure) => return Outcome::failed(failure, String::new()),
        };
        let Some(thread) = started.thread else {
            return Outcome::failed(Failure::new("thread-start", "unknown"), String::new());
        };
        self.thread = Some(thread.id.clone());
        let input = TurnStart {
            thread_id: &thread.id,
            input: vec![TextInput {
                kind: "text",
                text: &task.prompt,
                text_elements: Vec::new(),
            }],
        };
        let turn = match self.request(rpc::TURN_START, input, "turn-start").await {
            Ok(turn) => turn,
            Err(failure) => return Outcome::failed(failure, self.answer.best()),
        };
        match turn.turn {
            Some(turn) => self.turn = Some(turn.id),
            None => return Outcome::failed(Failure::new("turn-start", "unknown"), String::new()),
        }
        for (method, params) in std::mem::take(&mut self.early) {
            if let Some(turn) = self.notification(&method, params) {
                return self.settle(&turn);
            }
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

    async fn send<P: Serialize>(
        &self,
        id: Option<u64>,
        method: &str,
        params: Option<P>,
    ) -> Result<(), WireError> {
        let message = Outgoing {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        self.wire.send(&message).await
    }

    /// Sends request `method` and waits for its answer, handling what arrives meanwhile.
    async fn request<P: Serialize>(
        &mut self,
        method: &str,
        params: P,
        stage: &'static str,
    ) -> Result<Started, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        if self.send(Some(id), method, Some(params)).await.is_err() {
            return Err(self.closed_failure(stage).await);
        }
        loop {
            match self.step(Some(id)).await {
                Step::Response(Ok(result)) => {
                    return serde_json::from_value(result)
                        .map_err(|_| Failure::new(stage, "unknown"));
                }
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
            let Ok(message) = serde_json::from_value::<Incoming>(message) else {
                continue;
            };
            match (&message.id, message.method.as_deref()) {
                (Some(id), Some(method)) => {
                    let answer = self.answer_request(method);
                    let failed = answer.as_ref().err().cloned();
                    let reply = Reply {
                        jsonrpc: "2.0",
                        id,
                        result: answer
                            .ok()
                            .and_then(|answer| serde_json::to_value(answer).ok()),
                        error: failed.as_ref().map(|refused| ReplyError {
                            code: -32601,
                            message: refused.to_string(),
                        }),
                    };
                    let _ = self.wire.send(&reply).await;
                    if let Some(refused) = failed {
                        return Step::Response(Err(ResponseError::Unanswerable(refused)));
                    }
                }
                (Some(id), None) => {
                    if waiting.is_some() && id.as_u64() == waiting {
                        return Step::Response(match message.error {
                            Some(error) => Err(ResponseError::Rpc(error)),
                            None => Ok(message.result.unwrap_or_default()),
                        });
                    }
                }
                (None, Some(method)) => {
                    let method = method.to_owned();
                    if let Ok(params) = serde_json::from_value::<Notification>(message.params)
                        && let Some(turn) = self.notification(&method, params)
                    {
                        return Step::Completed(turn);
                    }
                }
                (None, None) => {}
            }
        }
    }

    /// Follows a notification; answers the turn when it is our turn's completion.
    fn notification(&mut self, method: &str, params: Notification) -> Option<Turn> {
        if self.thread.is_none() || params.thread_id != self.thread {
            return None;
        }
        // Codex may report on the turn before it answered `turn/start` with its id: what
        // arrives for a turn before then is kept and followed once the id is known.
        if self.turn.is_none() && matches!(method, rpc::ITEM_COMPLETED | rpc::TURN_COMPLETED) {
            self.early.push((method.to_owned(), params));
            return None;
        }
        match method {
            rpc::ITEM_COMPLETED => {
                if params.turn_id != self.turn {
                    return None;
                }
                let item = params.item?;
                match (item.kind.as_str(), item.status.as_deref()) {
                    ("agentMessage", _) => {
                        let text = item.text.unwrap_or_default();
                        match item.phase.as_deref() {
                            Some("final_answer") => self.answer.final_answer = Some(text),
                            None => self.answer.unphased = Some(text),
                            Some("partial_answer") => self.answer.partial = Some(text),
                            Some(_) => {}
                        }
                    }
                    ("commandExecution", Some("declined")) => self.decide(
                        "command execution",
                        "declined",
                        "Codex declined the command under the selected permission mode",
                    ),
                    ("fileChange", Some("declined")) => self.decide(
                        "file change",
                        "declined",
                        "Codex declined the file change under the selected permission mode",
                    ),
                    _ => {}
                }
                None
            }
            rpc::TURN_COMPLETED => params
                .turn
                .filter(|turn| Some(&turn.id) == self.turn.as_ref()),
            _ => None,
        }
    }

    fn decide(&mut self, request: &str, decision: &str, reason: &str) {
        self.unattended = Some(unattended(&self.mode, request, decision, reason));
    }

    /// The answer to a request Codex makes of a person, given without one.
    fn answer_request(&mut self, method: &str) -> Result<Answered, Unanswerable> {
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
                Ok(Answered::Decision {
                    decision: "decline",
                })
            }
            "item/permissions/requestApproval" => {
                self.decide(
                    "permission grant",
                    "denied",
                    "the provider grants no additional turn permissions",
                );
                Ok(Answered::Permissions {
                    permissions: Empty {},
                    scope: "turn",
                })
            }
            "item/tool/requestUserInput" => {
                self.decide(
                    "user input",
                    "empty response",
                    "the provider does not collect interactive answers",
                );
                Ok(Answered::Answers { answers: Empty {} })
            }
            "mcpServer/elicitation/request" => {
                self.decide(
                    "MCP elicitation",
                    "declined",
                    "the provider does not collect interactive MCP input",
                );
                Ok(Answered::Elicitation {
                    action: "decline",
                    content: None,
                    meta: None,
                })
            }
            other => Err(Unanswerable(other.to_owned())),
        }
    }

    /// How the completed turn reads.
    fn settle(&self, turn: &Turn) -> Outcome {
        let output = self.answer.best();
        let stopped = |stop| Outcome {
            stop,
            output: output.clone(),
            failure: None,
            unattended: None,
        };
        match turn.status.as_deref() {
            Some("completed") if !output.is_empty() => Outcome::completed(output),
            Some("completed") => Outcome::failed(Failure::new("turn", "unknown"), output),
            Some("interrupted") => stopped(Stop::Aborted),
            _ => {
                let failure = failure_info(turn);
                if failure.category == "contextWindowExceeded" {
                    return stopped(Stop::MaxTokens);
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
        let params = TurnInterrupt {
            thread_id: &thread,
            turn_id: &turn,
        };
        if self
            .send(Some(self.next_id), rpc::TURN_INTERRUPT, Some(params))
            .await
            .is_err()
        {
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

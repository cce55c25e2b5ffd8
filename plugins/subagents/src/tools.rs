//! The delegation tools: `subagent` (a fresh child, in the background by default),
//! `subagent_fork` (a child seeded with this conversation's completed turns, waited for),
//! `send_message`, `interrupt_agent`, `list_agents`, and `report` (children only). Each sees
//! the tree from the calling session.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::AgentsExt;
use dsh_plugin_api::Json;
use dsh_plugin_api::cancel::CancelBox;
use dsh_protocol::{
    AbortCause, ChildStatus, Concurrency, ContentBlock, DelegateArgs, InterruptArgs,
    ListAgentsArgs, ListScope, Message, MessageSource, OutcomeSummary, ReportArgs, SendMessageArgs,
    SubagentMode, ToolDecl, ToolReply,
};
use dsh_tools_seam::{CallView, Tool};
use serde_json::json;

use crate::child::{Delegation, Provider, Start, agents};
use crate::error::DelegationError;

/// A child's run may take as long as the pipeline's longest allowance.
const DELEGATION_TIMEOUT_MS: u64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Subagent,
    Fork,
    SendMessage,
    Interrupt,
    List,
    Report,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Subagent,
        Kind::Fork,
        Kind::SendMessage,
        Kind::Interrupt,
        Kind::List,
        Kind::Report,
    ];
}

pub(crate) struct DelegationTool {
    pub(crate) kind: Kind,
    pub(crate) delegation: Arc<Delegation>,
}

fn string(description: &str) -> serde_json::Value {
    json!({"type": "string", "description": description})
}

fn declaration(kind: Kind, background_by_default: bool) -> ToolDecl {
    let task = |prompt: &str| {
        json!({
            "type": "object",
            "properties": {
                "description": string("A short label for the task (3-5 words), shown to people."),
                "prompt": string(prompt),
            },
            "required": ["description", "prompt"]
        })
    };
    let mut decl = match kind {
        Kind::Subagent => ToolDecl::new(
            "subagent",
            match background_by_default {
                true => {
                    "Hand a focused, independent task to a child agent that works in its own context and answers only its result. In the background by default; set run_in_background to false when your next step needs the result."
                }
                false => {
                    "Hand a focused, independent task to a child agent that works in its own context and answers only its result. Waits for the result by default; set run_in_background to true to get the child's id at once and be told when it settles."
                }
            },
            json!({
                "type": "object",
                "properties": {
                    "description": string("A short label for the task (3-5 words), shown to people."),
                    "prompt": string("The whole task, self-contained: the child does not see this conversation."),
                    "run_in_background": {
                        "type": "boolean",
                        "description": match background_by_default {
                            true => "true (the default): answer the child's id at once; you are told when its run settles and can send it more with send_message. false: wait for its result.",
                            false => "true: answer the child's id at once; you are told when its run settles and can send it more with send_message. false (the default): wait for its result.",
                        }
                    }
                },
                "required": ["description", "prompt"]
            }),
        ),
        Kind::Fork => ToolDecl::new(
            "subagent_fork",
            "Hand a task to a child agent that starts from this conversation's completed turns (not the turn in progress), and wait for its result.",
            task("What the child should do; it already knows the conversation so far."),
        ),
        Kind::SendMessage => ToolDecl::new(
            "send_message",
            "Give a background subagent you started more work: the message becomes its next turn, after the one it is on. Answers only whether it was delivered.",
            json!({
                "type": "object",
                "properties": {
                    "subagent_id": string("The id `subagent` answered when the child started."),
                    "message": string("The message for the child."),
                },
                "required": ["subagent_id", "message"]
            }),
        ),
        Kind::Interrupt => ToolDecl::new(
            "interrupt_agent",
            "Stop the current turn of an agent you started (or one started below it). Its queued messages wait and it stays available; stopping an idle agent does nothing.",
            json!({
                "type": "object",
                "properties": {"agent_id": string("The id of the agent to interrupt.")},
                "required": ["agent_id"]
            }),
        ),
        Kind::List => ToolDecl::new(
            "list_agents",
            "List the background subagents you started, with their ids, labels and whether they are running, idle or settled (ready for more work). You are told when one settles: do not poll.",
            json!({
                "type": "object",
                "properties": {"scope": {
                    "type": "string",
                    "description": "children (the default): your direct children; descendants: the whole tree below you.",
                    "enum": ["children", "descendants"]
                }}
            }),
        ),
        Kind::Report => ToolDecl::new(
            "report",
            "Send a result or a finding to the agent that started you; it does not see your conversation otherwise. Reporting does not end your turn.",
            json!({
                "type": "object",
                "properties": {"output": string("Self-contained content for the agent that started you.")},
                "required": ["output"]
            }),
        ),
    };
    if matches!(kind, Kind::Subagent | Kind::Fork) {
        decl.concurrency = Concurrency::Parallel;
        decl.timeout_ms = Some(DELEGATION_TIMEOUT_MS);
    }
    decl
}

fn args<T: dsh_plugin_api::serde::de::DeserializeOwned>(
    call: &CallView,
) -> Result<T, DelegationError> {
    serde_json::from_str(&call.arguments).map_err(DelegationError::Arguments)
}

impl DelegationTool {
    async fn run(&self, call: CallView, cancel: CancelBox) -> Result<ToolReply, DelegationError> {
        let caller = call.session.to_string();
        match self.kind {
            Kind::Subagent | Kind::Fork => self.delegate(&call, &cancel).await,
            Kind::SendMessage => self.send_message(&caller, args(&call)?),
            Kind::Interrupt => self.interrupt(&caller, args(&call)?),
            Kind::List => Ok(self.list(&caller, args(&call)?)),
            Kind::Report => self.report(&caller, args(&call)?),
        }
    }

    /// `subagent` and `subagent_fork`: start the child, then answer its id (background) or
    /// its result.
    async fn delegate(
        &self,
        call: &CallView,
        cancel: &CancelBox,
    ) -> Result<ToolReply, DelegationError> {
        let task: DelegateArgs = args(call)?;
        let background = self.kind == Kind::Subagent
            && task
                .run_in_background
                .unwrap_or(self.delegation.background_by_default);
        let start = Start {
            parent: call.session.to_string(),
            scope: call.scope.iter().map(RString::to_string).collect(),
            cwd: call.cwd.to_string(),
            mode: match background {
                true => SubagentMode::Continuable,
                false => SubagentMode::OneShot,
            },
            provider: match self.kind {
                Kind::Fork => Provider::Fork,
                _ => Provider::Spawn,
            },
            label: task.description,
            prompt: task.prompt,
        };
        let delegation = &self.delegation;
        let starting = delegation.start(start)?;
        let child = delegation.launch(starting).await?;
        // Readers of the log (the web page's card) find the child's conversation.
        let meta = json!({ "subagentId": child });
        if background {
            delegation.watch(child.clone());
            let started = ToolReply::text(format!("started subagent {child}"));
            return Ok(started.with_meta(meta));
        }
        Ok(delegation.result_of(&child, cancel).await.with_meta(meta))
    }

    /// More work for a background child of the caller: its next turn.
    fn send_message(
        &self,
        caller: &str,
        send: SendMessageArgs,
    ) -> Result<ToolReply, DelegationError> {
        let delegation = &self.delegation;
        let child = delegation
            .tree
            .get(&send.subagent_id)
            .filter(|child| child.parent == caller && child.mode == SubagentMode::Continuable)
            .ok_or_else(|| DelegationError::Unavailable(send.subagent_id.clone()))?;
        let message = Message::user(
            "",
            vec![ContentBlock::text(send.message)],
            MessageSource::user(),
        );
        agents(&delegation.ctx)?
            .followup(&child.id, &message)
            .map_err(|error| DelegationError::NotSent {
                id: send.subagent_id.clone(),
                error,
            })?;
        // A child that had settled runs again: follow it until it settles again. One still
        // being watched keeps its watcher, which now waits for this message's turn too.
        if delegation.tree.sent_more(&child.id) == Some(true) {
            delegation.watch(child.id.clone());
        }
        Ok(ToolReply::text(format!(
            "message queued as the next turn for subagent {}",
            child.id
        )))
    }

    /// Cancels the running turn of an agent below the caller, keeping its queue.
    fn interrupt(&self, caller: &str, target: InterruptArgs) -> Result<ToolReply, DelegationError> {
        let delegation = &self.delegation;
        if !delegation.tree.is_below(&target.agent_id, caller) {
            return Err(DelegationError::NotYours(target.agent_id));
        }
        let agents = agents(&delegation.ctx)?;
        if !agents.is_running(&target.agent_id) {
            return Ok(ToolReply::text(format!(
                "agent {} is not running; nothing to interrupt",
                target.agent_id
            )));
        }
        delegation.tree.mark_interrupted(&target.agent_id);
        agents
            .cancel(
                RString::from(target.agent_id.as_str()),
                Json::encode(&AbortCause::Parent),
                true,
            )
            .into_result()
            .map_err(DelegationError::Cancel)?;
        Ok(ToolReply::text(format!(
            "interrupt requested for agent {}",
            target.agent_id
        )))
    }

    /// The caller's background children (or its whole tree), one line each.
    fn list(&self, caller: &str, list: ListAgentsArgs) -> ToolReply {
        let descendants = list.scope == ListScope::Descendants;
        let lines: Vec<String> = self
            .delegation
            .tree
            .walk(caller, descendants)
            .into_iter()
            .filter(|node| node.mode == SubagentMode::Continuable)
            .map(|node| {
                let status = match node.status {
                    ChildStatus::Running => "running",
                    ChildStatus::Idle => "idle",
                    ChildStatus::Ready => "ready",
                };
                let line = format!("{} [{status}] — {}", node.id, node.label);
                match descendants {
                    true => format!("{line} (parent {}, depth {})", node.parent, node.depth),
                    false => line,
                }
            })
            .collect();
        ToolReply::text(match lines.is_empty() {
            true => "no subagents".to_owned(),
            false => lines.join("\n"),
        })
    }

    /// A child's result or finding, staged in its parent's inbox without waking it: a running
    /// parent reads it at its next step, an idle one with the notice that wakes it.
    fn report(&self, caller: &str, report: ReportArgs) -> Result<ToolReply, DelegationError> {
        let delegation = &self.delegation;
        let node = delegation
            .tree
            .get(caller)
            .ok_or(DelegationError::NotASubagent)?;
        let message = Message::user(
            dsh_protocol::fresh_uuid(),
            vec![
                ContentBlock::text(format!("Background subagent {caller} reported:")),
                ContentBlock::text(report.output),
            ],
            MessageSource::subagent_report(caller),
        );
        let id = agents(&delegation.ctx)?
            .inject(&node.parent, &message)
            .map_err(DelegationError::Report)?;
        Ok(ToolReply::text(format!(
            "report accepted by the agent that started you as message {id}"
        )))
    }
}

impl Tool for DelegationTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&declaration(
            self.kind,
            self.delegation.background_by_default,
        ))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = DelegationTool {
            kind: self.kind,
            delegation: self.delegation.clone(),
        };
        async move {
            let reply = tool
                .run(call, cancel)
                .await
                .unwrap_or_else(|error| ToolReply::error(error.to_string()));
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

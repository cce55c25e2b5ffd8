//! Each hook event on the point of ours that matches it:
//!
//! - `SessionStart` on `agent/session-start`: the run starts at once; its context waits for
//!   the session's first `agent/prompt-submit`, which enters it before the prompt's own, so a
//!   slow hook cannot miss the first request.
//! - `UserPromptSubmit` on `agent/prompt-submit`: a block refuses the turn before any step;
//!   context follows the prompt.
//! - `PreToolUse` on `tools/pre-execute`: deny, or (Claude Code) ask; an allow pre-approves
//!   nothing (policies only narrow).
//! - `PostToolUse` on `tools/post-execute`: a block turns the result into feedback; context is
//!   queued on the session's inbox once the result is logged, and enters at the next step.
//! - `Stop` on `agent/turn-stopping`: a block steers the reason into the turn, which goes on.
//! - `SubagentStart` on `subagent/start` (context for the child's first prompt, as for
//!   SessionStart) and `SubagentStop` on `subagent/end` (observed only), Claude Code's.

use dsh_agents_seam::{AGENTS_SERVICE, AgentNotice, AgentsExt, AgentsService};
use dsh_plugin_api::{Json, Next, RArc};
use dsh_plugin_api::{PluginError, lock};
use dsh_protocol::{
    AgentNoticeData, ContentBlock, Continuation, MessageSource, PostDecision, PreDecision,
    PromptDecision, PromptSubmit, SubagentNotice, TurnStopping, text_of,
};
use dsh_tools_seam::{CallView, PostView, ResultView};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::watch;

use crate::bridge::{At, Bridge};
use crate::config::{Format, Point};
use crate::files::HookFiles;
use crate::output::Merge;
use crate::payload::{EventFields, Payload, ToolInput};

type Answer<T> = Result<Json<T>, PluginError>;

/// The kind Claude Code reports for a subagent of its default kind; ours have no kinds, so a
/// matcher naming another kind does not select them.
const SUBAGENT_TYPE: &str = "general-purpose";

impl Bridge {
    fn payload<'a>(
        &'a self,
        (session, cwd): (&'a str, &'a str),
        point: Point,
        turn: Option<u64>,
        fields: EventFields<'a>,
    ) -> Payload<'a> {
        Payload::new(
            self.format,
            (session, cwd),
            point.name(),
            &self.settings.model,
            turn,
            fields,
        )
    }

    fn agents(&self) -> Option<dsh_plugin_api::Service<AgentsService>> {
        self.ctx.get::<AgentsService>(AGENTS_SERVICE).ok().flatten()
    }

    /// The working directory of agent `session`, as the registry lists it.
    fn cwd_of(&self, session: &str) -> Option<String> {
        let agents = self.agents()?.list().decode().ok()?;
        agents
            .into_iter()
            .find(|agent| agent.id == session)
            .map(|agent| agent.cwd)
    }

    pub(crate) fn session_start(self: &Arc<Self>, notice: &AgentNotice) {
        let Ok(AgentNoticeData::SessionStart { source, .. }) = notice.data.decode() else {
            return;
        };
        let session = notice.agent.to_string();
        let Some(cwd) = self.cwd_of(&session) else {
            return;
        };
        if !self.has(Point::SessionStart, &cwd) {
            return;
        }
        let source = match source {
            dsh_protocol::SessionStartSource::Startup => "startup",
            dsh_protocol::SessionStartSource::Resume => "resume",
        };
        self.detached(Point::SessionStart, session, cwd, source.to_owned(), true);
    }

    /// `subagent/start` and `subagent/end`: a child's run began or settled.
    pub(crate) fn subagent(self: &Arc<Self>, notice: &Json<SubagentNotice>, start: bool) {
        let Ok(notice) = notice.decode() else {
            return;
        };
        let point = match start {
            true => Point::SubagentStart,
            false => Point::SubagentStop,
        };
        let Some(cwd) = self.cwd_of(&notice.child) else {
            return;
        };
        if self.has(point, &cwd) {
            self.detached(point, notice.child, cwd, SUBAGENT_TYPE.to_owned(), start);
        }
    }

    /// Runs `point` for `session` outside any turn (nothing is recorded in the log: a record
    /// belongs to a turn); when `gates`, the session's first prompt waits for its contexts.
    fn detached(
        self: &Arc<Self>,
        point: Point,
        session: String,
        cwd: String,
        subject: String,
        gates: bool,
    ) {
        let (done, waiting) = watch::channel(None);
        if gates {
            lock(&self.starts)
                .entry(session.clone())
                .or_default()
                .push(waiting);
        }
        let bridge = self.clone();
        let spawned = self.ctx.spawn(async move {
            let fields = match point {
                Point::SessionStart => EventFields::SessionStart { source: &subject },
                _ => EventFields::Subagent {
                    agent_id: &session,
                    agent_type: SUBAGENT_TYPE,
                    stop_hook_active: (point == Point::SubagentStop).then_some(false),
                },
            };
            let payload = bridge.payload((&session, &cwd), point, None, fields);
            let at = At {
                session: &session,
                cwd: &cwd,
                turn: None,
            };
            let tables = bridge.tables(&cwd);
            let merged = bridge
                .run_point(point, &subject, at, &tables, &payload)
                .await;
            let _ = done.send(Some(merged.contexts));
        });
        if let Err(error) = spawned {
            self.warn(&format!("{} hooks did not start: {error}", point.name()));
        }
    }

    /// The contexts of `session`'s start runs, once they finished (none when it has none).
    async fn start_contexts(&self, session: &str) -> Vec<String> {
        let waiting = lock(&self.starts).remove(session).unwrap_or_default();
        let mut contexts = Vec::new();
        for mut run in waiting {
            if let Ok(done) = run.wait_for(Option::is_some).await {
                contexts.extend(done.clone().unwrap_or_default());
            }
        }
        contexts
    }

    pub(crate) async fn prompt_submit(
        self: Arc<Self>,
        next: Next<Json<PromptSubmit>, Json<PromptDecision>>,
    ) -> Answer<PromptDecision> {
        // Most turns have nothing to run: only the head is read to tell (not the messages).
        let Ok(head) = serde_json::from_str::<SubmitHead>(next.payload().text()) else {
            return next.run().await;
        };
        let tables = self.tables(&head.cwd);
        if !tables.has(Point::UserPromptSubmit) && !lock(&self.starts).contains_key(&head.session) {
            return next.run().await;
        }
        let Ok(submit) = next.payload().decode() else {
            return next.run().await;
        };
        let mut contexts = self.start_contexts(&submit.session).await;
        let prompts: Vec<String> = submit
            .messages
            .iter()
            .filter(|message| matches!(message.source, MessageSource::User { .. }))
            .map(|message| text_of(&message.content))
            .collect();
        if !prompts.is_empty() {
            let fields = EventFields::Prompt {
                prompt: prompts.join("\n\n"),
            };
            let (session, cwd) = (submit.session.as_str(), submit.cwd.as_str());
            let payload = self.payload(
                (session, cwd),
                Point::UserPromptSubmit,
                Some(submit.turn),
                fields,
            );
            let at = At {
                session,
                cwd,
                turn: Some(submit.turn),
            };
            let merged = self
                .run_point(Point::UserPromptSubmit, "", at, &tables, &payload)
                .await;
            if merged.decision == Some(Merge::Deny) {
                let reason = merged
                    .reason
                    .unwrap_or_else(|| "blocked by UserPromptSubmit hook".to_owned());
                return Ok(Json::encode(&PromptDecision::Reject {
                    reason: Some(reason),
                }));
            }
            if let Some(stop) = merged.stop {
                // `continue: false` ends the prompt's processing, as both tools define it.
                let reason = stop.unwrap_or_else(|| "stopped by UserPromptSubmit hook".to_owned());
                return Ok(Json::encode(&PromptDecision::Reject {
                    reason: Some(reason),
                }));
            }
            contexts.extend(merged.contexts);
        }
        let downstream = next.run().await?;
        if contexts.is_empty() {
            return Ok(downstream);
        }
        match downstream.decode() {
            Ok(PromptDecision::Accept {
                contexts: mut theirs,
            }) => {
                theirs.push(self.message(&contexts));
                Ok(Json::encode(&PromptDecision::Accept { contexts: theirs }))
            }
            _ => Ok(downstream),
        }
    }

    pub(crate) async fn pre_execute(
        self: Arc<Self>,
        next: Next<CallView, Json<PreDecision>>,
    ) -> Answer<PreDecision> {
        let tables = self.tables(&next.payload().cwd);
        if !tables.has(Point::PreToolUse) {
            return next.run().await;
        }
        let call = next.payload().clone();
        let fields = EventFields::Tool {
            tool_name: &call.name,
            tool_input: ToolInput::of(self.format, &call.arguments),
            tool_use_id: &call.call_id,
            tool_response: None,
        };
        let place = (call.session.as_str(), call.cwd.as_str());
        let payload = self.payload(place, Point::PreToolUse, Some(call.turn), fields);
        let merged = self
            .run_point(Point::PreToolUse, &call.name, at(&call), &tables, &payload)
            .await;
        let reason = merged.reason;
        match merged.decision {
            Some(Merge::Deny) => Ok(Json::encode(&PreDecision::Deny {
                reason: reason.unwrap_or_else(|| "blocked by PreToolUse hook".to_owned()),
            })),
            // Codex hooks can only block.
            Some(Merge::Ask) if self.format == Format::ClaudeCode => {
                Ok(Json::encode(&PreDecision::Ask { reason }))
            }
            _ => next.run().await,
        }
    }

    pub(crate) async fn post_execute(
        self: Arc<Self>,
        next: Next<PostView, Json<PostDecision>>,
    ) -> Answer<PostDecision> {
        // What the agent itself may have written applies from this call's PostToolUse on,
        // without waiting for the watch to report it.
        if may_write_hooks(&next.payload().call, &self.files) {
            self.files.invalidate();
        }
        let tables = self.tables(&next.payload().call.cwd);
        if !tables.has(Point::PostToolUse) {
            return next.run().await;
        }
        let post = next.payload().clone();
        let call = &post.call;
        let response = post
            .outcome
            .decode()
            .map(|outcome| text_of(&outcome.content))
            .unwrap_or_default();
        let fields = EventFields::Tool {
            tool_name: &call.name,
            tool_input: ToolInput::of(self.format, &call.arguments),
            tool_use_id: &call.call_id,
            tool_response: Some(response),
        };
        let place = (call.session.as_str(), call.cwd.as_str());
        let payload = self.payload(place, Point::PostToolUse, Some(call.turn), fields);
        let merged = self
            .run_point(Point::PostToolUse, &call.name, at(call), &tables, &payload)
            .await;
        let decision = if merged.decision == Some(Merge::Deny) {
            let feedback = merged
                .reason
                .unwrap_or_else(|| "blocked by PostToolUse hook".to_owned());
            Json::encode(&PostDecision::Block {
                feedback: vec![ContentBlock::text(feedback)],
                additional_contexts: Vec::new(),
            })
        } else {
            next.run().await?
        };
        if merged.contexts.is_empty() {
            return Ok(decision);
        }
        if call.session.is_empty() {
            // No inbox outside a session: the contexts ride on the decision.
            return Ok(with_context(decision, self.message(&merged.contexts)));
        }
        let key = (call.session.to_string(), call.call_id.to_string());
        lock(&self.post_contexts)
            .entry(key)
            .or_default()
            .extend(merged.contexts);
        Ok(decision)
    }

    /// A call's result is logged: its PostToolUse contexts are queued for the next step, as the
    /// reference's loop queues a hook's contexts after the results.
    pub(crate) fn result_logged(&self, view: &ResultView) {
        // Most calls queued nothing: no key is built for them.
        if lock(&self.post_contexts).is_empty() {
            return;
        }
        let key = (view.call.session.to_string(), view.call.call_id.to_string());
        let Some(contexts) = lock(&self.post_contexts).remove(&key) else {
            return;
        };
        let message = self.message(&contexts);
        let queued = match self.agents() {
            Some(agents) => agents
                .inject(&key.0, &message)
                .map_err(|error| error.to_string()),
            None => Err("no `agents` service".to_owned()),
        };
        if let Err(error) = queued {
            self.warn(&format!(
                "PostToolUse context for call {} not queued: {error}",
                key.1
            ));
        }
    }

    pub(crate) async fn turn_stopping(
        self: Arc<Self>,
        stopping: RArc<Json<TurnStopping>>,
    ) -> Option<Json<Continuation>> {
        let stopping = stopping.decode().ok()?;
        let session = stopping.session.as_str();
        let cwd = self.cwd_of(session)?;
        let tables = self.tables(&cwd);
        if !tables.has(Point::Stop) {
            return None;
        }
        let key = (session.to_owned(), stopping.turn);
        let fields = EventFields::Stop {
            stop_hook_active: lock(&self.continued).contains(&key),
            last_assistant_message: (self.format == Format::Codex).then_some(None),
        };
        let payload = self.payload((session, &cwd), Point::Stop, Some(stopping.turn), fields);
        let at = At {
            session,
            cwd: &cwd,
            turn: Some(stopping.turn),
        };
        let merged = self.run_point(Point::Stop, "", at, &tables, &payload).await;
        if merged.decision != Some(Merge::Deny) {
            return None;
        }
        lock(&self.continued).insert(key);
        let text = merged
            .reason
            .unwrap_or_else(|| "continue: blocked by Stop hook".to_owned());
        let message = self.message(&[text]);
        // Steered through the inbox, as the reference's hooks do (logged as a splice, claimed
        // by the loop); a continuation where there is no inbox.
        match self.agents().map(|agents| agents.steer(session, &message)) {
            Some(Ok(_)) => None,
            _ => Some(Json::encode(&Continuation { message })),
        }
    }

    pub(crate) fn forget(&self, session: &str) {
        lock(&self.starts).remove(session);
        lock(&self.continued).retain(|(held, _)| held != session);
        lock(&self.post_contexts).retain(|(held, _), _| held != session);
    }
}

/// The part of a prompt's submission that tells whether a hook runs.
#[derive(serde::Deserialize)]
struct SubmitHead {
    session: String,
    cwd: String,
}

/// The part of a `write`/`edit` call that names its file.
#[derive(serde::Deserialize)]
struct FileArgs {
    file_path: String,
}

/// Whether `call` may have written a hook file: a `write` or `edit` of one, or any command
/// (a shell writes anything; looking again costs a stat of each file).
fn may_write_hooks(call: &CallView, files: &HookFiles) -> bool {
    match call.name.as_str() {
        "bash" => true,
        "write" | "edit" => serde_json::from_str::<FileArgs>(&call.arguments)
            .is_ok_and(|args| files.concerns(&Path::new(call.cwd.as_str()).join(args.file_path))),
        _ => false,
    }
}

fn at(call: &CallView) -> At<'_> {
    At {
        session: &call.session,
        cwd: &call.cwd,
        turn: (!call.session.is_empty()).then_some(call.turn),
    }
}

fn with_context(
    decision: Json<PostDecision>,
    context: dsh_protocol::Message,
) -> Json<PostDecision> {
    match decision.decode() {
        Ok(PostDecision::Accept {
            content,
            value,
            mut additional_contexts,
        }) => {
            additional_contexts.insert(0, context);
            Json::encode(&PostDecision::Accept {
                content,
                value,
                additional_contexts,
            })
        }
        Ok(PostDecision::Block {
            feedback,
            mut additional_contexts,
        }) => {
            additional_contexts.insert(0, context);
            Json::encode(&PostDecision::Block {
                feedback,
                additional_contexts,
            })
        }
        _ => decision,
    }
}

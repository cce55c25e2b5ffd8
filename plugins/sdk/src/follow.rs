//! The notifications: `session.event` for every committed event of every session (one per
//! event, chunks included), `session.status` from the agents' `agent/status`,
//! `subagent.started` and `subagent.finished` from the agent tree. The ordering the reference's
//! recordings pin holds because every listener runs where the event is committed or
//! announced, and writes under one lock: the inbox splice comes before `running`; a child's
//! `subagent.started` comes after its parent's `tool/call` and before any event of the child
//! (an agent this runtime did not create has its events held back until the tree announces it,
//! or until it starts running without being a child); `subagent.finished` follows the child's
//! `idle` and precedes the parent's `tool/result`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENT_CREATED, AGENT_DISPOSED, AGENT_STATUS, AgentNotice};
use dsh_plugin_api::{Context, Json, PluginError, Serialize, lock};
use dsh_protocol::{
    AgentNoticeData, AgentStatus, AssistantMessageEvent, ContentBlock, SubagentDescriptorEvent,
    SubagentNotice, kinds,
};
use dsh_sessions_seam::{EventRecord, SESSION_EVENT};
use dsh_subagents_seam::{SUBAGENT_END, SUBAGENT_START};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use dsh_json_rpc::wire::Out;

/// What the listeners know, under one lock (taken before the writer's).
#[derive(Default)]
pub(crate) struct Book {
    /// Sessions created through `session/prompt`.
    pub(crate) owned: HashSet<String>,
    /// Sessions with a prompt accepted and not yet seen idle.
    pub(crate) busy: HashSet<String>,
    /// Events of agents this runtime did not create, held until the tree says whose child
    /// each is (or that it is none).
    held: HashMap<String, Vec<String>>,
    /// Child session → parent session.
    parents: HashMap<String, String>,
    /// The provider of each child (`spawn`, `fork`), from its descriptor.
    providers: HashMap<String, String>,
    /// Each session's last non-empty assistant message.
    last_answer: HashMap<String, Vec<ContentBlock>>,
    /// The output cap of SDK sessions and their descendants (`initialize.maxTokens`).
    pub(crate) max_tokens: Option<u64>,
    /// `subagent.finished` reports `max-tokens` as `ok` (the row's `maxTokensAsSuccess`).
    pub(crate) max_tokens_as_success: bool,
}

impl Book {
    /// Whether `session` is an SDK session or runs below one.
    pub(crate) fn is_ours(&self, session: &str) -> bool {
        let mut current = session;
        // A chain longer than the map cannot be a chain: it would loop.
        for _ in 0..=self.parents.len() {
            if self.owned.contains(current) {
                return true;
            }
            match self.parents.get(current) {
                Some(parent) => current = parent,
                None => return false,
            }
        }
        false
    }

    fn release(&mut self, session: &str, out: &Out) {
        for frame in self.held.remove(session).unwrap_or_default() {
            out.notify_raw(&frame);
        }
    }
}

/// The shared book and the writer.
#[derive(Clone)]
pub(crate) struct Follow {
    pub(crate) book: Arc<Mutex<Book>>,
    pub(crate) out: Arc<Out>,
}

#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Frame<P> {
    jsonrpc: &'static str,
    method: &'static str,
    params: P,
}

#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct SessionEventParams<'a> {
    session_id: &'a str,
    event: &'a RawValue,
}

/// `session.event` for one committed event (an event line that is not JSON is left out).
fn event_frame(record: &EventRecord) -> Option<String> {
    let event = serde_json::from_str::<&RawValue>(record.json.as_str()).ok()?;
    serde_json::to_string(&Frame {
        jsonrpc: "2.0",
        method: "session.event",
        params: SessionEventParams {
            session_id: record.session.as_str(),
            event,
        },
    })
    .ok()
}

impl Follow {
    /// Registers the listeners.
    pub(crate) fn listen(&self, ctx: &Context) -> Result<(), PluginError> {
        let this = self.clone();
        ctx.on_emit(&SESSION_EVENT, move |record| this.event(record))?;
        let this = self.clone();
        ctx.on_emit(&AGENT_CREATED, move |notice| this.created(notice))?;
        let this = self.clone();
        ctx.on_emit(&AGENT_STATUS, move |notice| this.status(notice))?;
        let this = self.clone();
        ctx.on_emit(&AGENT_DISPOSED, move |notice| this.disposed(notice))?;
        let this = self.clone();
        ctx.on_emit(&SUBAGENT_START, move |notice| this.started(notice))?;
        let this = self.clone();
        ctx.on_emit(&SUBAGENT_END, move |notice| this.finished(notice))?;
        Ok(())
    }

    fn event(&self, record: &EventRecord) {
        let session = record.session.as_str();
        let mut book = lock(&self.book);
        match record.kind.as_str() {
            kinds::ASSISTANT_MESSAGE => {
                if let Some(Ok(message)) = record.decode::<AssistantMessageEvent>()
                    && !message.message.content.is_empty()
                {
                    book.last_answer
                        .insert(session.to_owned(), message.message.content);
                }
            }
            kinds::SUBAGENT_DESCRIPTOR => {
                if let Some(Ok(descriptor)) = record.decode::<SubagentDescriptorEvent>() {
                    book.providers
                        .insert(session.to_owned(), descriptor.provider);
                }
            }
            _ => {}
        }
        let Some(frame) = event_frame(record) else {
            return;
        };
        match book.held.get_mut(session) {
            Some(held) => held.push(frame),
            None => self.out.notify_raw(&frame),
        }
    }

    fn created(&self, notice: &AgentNotice) {
        let mut book = lock(&self.book);
        let agent = notice.agent.as_str();
        if !book.owned.contains(agent) {
            book.held.entry(agent.to_owned()).or_default();
        }
    }

    fn status(&self, notice: &AgentNotice) {
        let Ok(AgentNoticeData::Status { status }) = notice.data.decode() else {
            return;
        };
        let agent = notice.agent.as_str();
        let mut book = lock(&self.book);
        // Running without the tree having announced it: not a child, nothing more to wait for.
        book.release(agent, &self.out);
        let status = match status {
            AgentStatus::Running => "running",
            AgentStatus::Idle => {
                book.busy.remove(agent);
                "idle"
            }
        };
        self.out.notify(
            "session.status",
            json!({"sessionId": agent, "status": status}),
        );
    }

    fn disposed(&self, notice: &AgentNotice) {
        let agent = notice.agent.as_str();
        let mut book = lock(&self.book);
        book.release(agent, &self.out);
        book.busy.remove(agent);
    }

    fn started(&self, notice: &Json<SubagentNotice>) {
        let Ok(notice) = notice.decode() else {
            return;
        };
        let mut book = lock(&self.book);
        book.parents
            .insert(notice.child.clone(), notice.parent.clone());
        self.out.notify(
            "subagent.started",
            json!({"parentSessionId": notice.parent, "childSessionId": notice.child}),
        );
        book.release(&notice.child, &self.out);
    }

    fn finished(&self, notice: &Json<SubagentNotice>) {
        let Ok(notice) = notice.decode() else {
            return;
        };
        let book = lock(&self.book);
        // The tree announces a run that never ended a turn without an end kind.
        let stop = notice.end.clone().unwrap_or_else(|| "error".to_owned());
        let ok = stop == "completed" || (stop == "max-tokens" && book.max_tokens_as_success);
        let mut params = json!({
            "provider": book.providers.get(&notice.child).map_or("spawn", String::as_str),
            "agentId": notice.child,
            "parentSessionId": notice.parent,
            "childSessionId": notice.child,
            "status": if ok { "ok" } else { "error" },
            "stopReason": stop,
        });
        if let (Some(answer), Value::Object(fields)) =
            (book.last_answer.get(&notice.child), &mut params)
        {
            fields.insert("lastAssistantMessage".to_owned(), json!(answer));
        }
        self.out.notify("subagent.finished", params);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_follows_the_tree_upwards() {
        let mut book = Book::default();
        book.owned.insert("root".into());
        book.parents.insert("child".into(), "root".into());
        book.parents.insert("grandchild".into(), "child".into());
        book.parents.insert("a".into(), "b".into());
        book.parents.insert("b".into(), "a".into());
        assert!(book.is_ours("grandchild"));
        assert!(!book.is_ours("a"));
        assert!(!book.is_ours("stranger"));
    }

    #[test]
    fn an_event_frame_embeds_the_line_as_it_is() {
        let record = EventRecord {
            session: "s".into(),
            seq: 0,
            kind: "turn/start".into(),
            time: 1,
            json: r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.into(),
        };
        assert_eq!(
            event_frame(&record).unwrap(),
            r#"{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}}"#
        );
    }
}

//! What the host says: the frames of the followed session (its items' ops, running or not, its
//! queue, its meter and controls, a resync) and the answers to the app's requests (the
//! handshake, the session opened or created, the pickers' lists, a command's output, errors).

use dsh_client_protocol::{
    AnswerReceipt, CommandList, Created, FileCompletions, GoalState, ModelList, PromptAccepted,
    ServerFrame, SessionHistory, SessionList,
};
use dsh_protocol::{InboxListing, SessionSummary};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::app::App;
use crate::app_event::Reply;
use crate::conn::RequestError;
use crate::popup::{PickItem, Picker, PickerKind};
use crate::theme;

/// An answer of the host this client cannot read (a newer host's, or a bug).
#[derive(Debug, thiserror::Error)]
#[error("an answer this client cannot read: {0}")]
pub(crate) struct Unreadable(#[from] serde_json::Error);

fn parse<T: DeserializeOwned>(value: Value) -> Result<T, Unreadable> {
    Ok(serde_json::from_value(value)?)
}

/// The text of a waiting message.
fn message_text(message: &dsh_protocol::Message) -> String {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            dsh_protocol::ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `3m ago`, `2h ago`, `5d ago`.
fn ago(ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64);
    let minutes = (now - ms).max(0) / 60_000;
    match minutes {
        0 => "now".to_owned(),
        1..60 => format!("{minutes}m ago"),
        60..1440 => format!("{}h ago", minutes / 60),
        _ => format!("{}d ago", minutes / 1440),
    }
}

impl App {
    pub(crate) fn on_frame(&mut self, frame: ServerFrame) {
        let ours = |id: &str| self.session.as_deref() == Some(id);
        match frame {
            ServerFrame::Update(update) if ours(&update.session_id) => {
                let mut missing = None;
                for op in update.ops {
                    missing = self.transcript.apply(op).or(missing);
                }
                // Text appended to an item this client never got: what it shows would be
                // wrong, so the session is read again (once per item).
                if let Some(id) = missing
                    && !self.reread.contains(&id)
                {
                    self.reread.push(id);
                    let session = update.session_id;
                    self.status.hint("re-reading the session");
                    self.resume(&session);
                    return;
                }
                if let Some(running) = update.running {
                    self.status.running = running;
                }
                if let Some(stats) = update.stats {
                    self.status.input_tokens = stats.input_tokens;
                    self.status.output_tokens = stats.output_tokens;
                }
                self.sync_modals();
            }
            ServerFrame::Resync { session_id, reason } if ours(&session_id) => {
                self.status.hint(format!("resynchronizing: {reason}"));
                self.resume(&session_id);
            }
            ServerFrame::Queue { session_id, queue } if ours(&session_id) => {
                let InboxListing {
                    next_turn,
                    next_step,
                } = queue;
                self.queue = next_step
                    .iter()
                    .chain(&next_turn)
                    .map(message_text)
                    .collect();
                self.queue_ids = next_step
                    .iter()
                    .chain(&next_turn)
                    .map(|message| message.id.clone())
                    .collect();
                self.queue_changed();
            }
            ServerFrame::Projection {
                session_id,
                key,
                value,
            } if ours(&session_id) => match key.as_str() {
                "context" => self.status.set_context(&value),
                "controls" => self.status.set_controls(&value),
                "goal" => {
                    self.status.goal = serde_json::from_value::<GoalState>(value)
                        .ok()
                        .and_then(|state| state.goal);
                }
                "jobs" => {
                    self.status.jobs = serde_json::from_value(value).unwrap_or_default();
                    let items = self.job_items();
                    self.fill_picker(PickerKind::Jobs, items);
                }
                _ => {}
            },
            ServerFrame::SessionStatus {
                session_id,
                running,
            } if ours(&session_id) => self.status.running = running,
            _ => {}
        }
    }

    pub(crate) fn on_answer(&mut self, reply: Reply, answer: Result<Value, RequestError>) {
        let value = match answer {
            Ok(value) => value,
            Err(error) => return self.failed(reply, &error.to_string()),
        };
        if let Err(error) = self.answered(reply, value) {
            self.note_error(&error.to_string());
        }
    }

    fn failed(&mut self, reply: Reply, error: &str) {
        match reply {
            // A host that is not the client protocol's (the SDK runtime owns `initialize`)
            // may still serve the other methods.
            Reply::Initialize => {
                self.note(&format!("⚠ {error}"), theme::dim());
                self.open_session();
            }
            Reply::History => {
                self.note_error(error);
                if !self.ready {
                    self.session = None;
                    self.create();
                }
            }
            Reply::Files { .. } | Reply::Commands => {}
            Reply::QueueEdit { text } => self.edit_refused(&text, error),
            _ => self.note_error(error),
        }
    }

    fn answered(&mut self, reply: Reply, value: Value) -> Result<(), Unreadable> {
        match reply {
            Reply::Initialize => {
                let initialized: dsh_client_protocol::Initialized = parse(value)?;
                self.answering = crate::answering::Answering::of(&initialized);
                self.open_session();
            }
            Reply::Created => {
                let created: Created = parse(value)?;
                self.leave_session();
                self.session = Some(created.session_id.clone());
                self.status.session = Some(created.session_id);
                self.subscribe(None);
            }
            Reply::Forked => {
                let created: Created = parse(value)?;
                self.resume(&created.session_id);
                self.status.hint("forked: this is the new session");
            }
            Reply::History => {
                let history: SessionHistory = parse(value)?;
                if self.session.as_deref() != Some(history.session_id.as_str()) {
                    return Ok(());
                }
                self.reprint |= self.transcript.printed_any();
                self.transcript.clear();
                if history.earlier > 0 {
                    self.note(
                        &format!("… {} earlier items are not shown", history.earlier),
                        theme::dim(),
                    );
                }
                for item in history.items {
                    self.transcript.upsert(item);
                }
                self.status.running = history.running;
                self.status.preset = history.preset.or(self.status.preset.take());
                self.status.input_tokens = history.stats.input_tokens;
                self.status.output_tokens = history.stats.output_tokens;
                self.sync_modals();
                self.subscribe(history.last_seq);
            }
            Reply::Subscribed => self.status.following = true,
            // A command's line and its output are logged as notices: they arrive with the
            // session's frames like everything else.
            Reply::Prompt => {
                let _: PromptAccepted = parse(value)?;
            }
            Reply::Approval => {
                let receipt: AnswerReceipt = parse(value)?;
                if !receipt.accepted {
                    self.status
                        .hint("already answered (by another client, or too late)");
                }
                if let Some(rule) = receipt.rule {
                    self.note(&format!("allow rule written: {rule}"), theme::dim());
                }
            }
            Reply::Question | Reply::Action(_) | Reply::QueueEdit { .. } => {}
            Reply::Deleted => self.send(
                dsh_client_protocol::ClientRequest::SessionList(dsh_client_protocol::NoParams {}),
                Reply::Sessions,
            ),
            Reply::Commands => {
                let list: CommandList = parse(value)?;
                self.commands = Some(list.commands);
                self.update_completion();
            }
            Reply::Files { query } => {
                let files: FileCompletions = parse(value)?;
                let (_, word) = self.composer.word_at_cursor();
                if word.strip_prefix('@') != Some(query.as_str()) {
                    return Ok(());
                }
                let items = files
                    .files
                    .into_iter()
                    .map(|file| PickItem {
                        label: file.clone(),
                        detail: String::new(),
                        value: file,
                    })
                    .collect();
                // The host matched already: keep its order.
                self.popup = Some(Picker::new(PickerKind::Files, items));
            }
            Reply::Sessions => {
                let list: SessionList = parse(value)?;
                let items = list
                    .sessions
                    .iter()
                    .filter(|s| s.subagent_of.is_none() && !s.archived)
                    .map(|s| session_item(s, self.session.as_deref()))
                    .collect();
                self.fill_picker(PickerKind::Sessions, items);
            }
            Reply::Continue => {
                let list: SessionList = parse(value)?;
                let here = self.cwd.clone();
                let newest = list
                    .sessions
                    .iter()
                    .filter(|s| s.subagent_of.is_none() && s.cwd.as_deref() == Some(here.as_str()))
                    .max_by_key(|s| s.active_at.unwrap_or(s.updated_at));
                match newest {
                    Some(session) => {
                        let id = session.id.clone();
                        self.resume(&id);
                    }
                    None => {
                        self.status
                            .hint("no session of this directory yet: a new one");
                        self.create();
                    }
                }
            }
            Reply::Models => {
                let list: ModelList = parse(value)?;
                if list.current.is_some() {
                    self.status.model = list.current;
                }
            }
            Reply::ModelPicker => {
                let list: ModelList = parse(value)?;
                let items = list
                    .models
                    .into_iter()
                    .map(|route| PickItem {
                        detail: if list.current.as_deref() == Some(route.route.as_str()) {
                            format!("{} (current)", route.label)
                        } else {
                            route.label
                        },
                        label: route.route.clone(),
                        value: route.route,
                    })
                    .collect();
                self.fill_picker(PickerKind::Models, items);
            }
            Reply::Context => self.status.set_context(&value),
        }
        Ok(())
    }
}

impl App {
    /// Fills the open picker of `kind` (closed meanwhile: nothing to do).
    fn fill_picker(&mut self, kind: PickerKind, items: Vec<PickItem>) {
        if let Some(picker) = self.popup.as_mut().filter(|p| p.kind == kind) {
            picker.set_items(items);
        }
    }
}

fn session_item(session: &SessionSummary, open: Option<&str>) -> PickItem {
    let title = session
        .title
        .clone()
        .unwrap_or_else(|| session.id.chars().take(8).collect());
    let mut detail = ago(session.active_at.unwrap_or(session.updated_at));
    if let Some(cwd) = &session.cwd {
        detail.push_str(&format!(" · {cwd}"));
    }
    if open == Some(session.id.as_str()) {
        detail.push_str(" · open");
    }
    PickItem {
        label: title,
        detail,
        value: session.id.clone(),
    }
}

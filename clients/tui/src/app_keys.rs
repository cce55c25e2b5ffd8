//! What a key does: a modal takes the keys first (the approval's letters, the question's
//! answers), then a picker, then the app's own keys (Esc cancels the turn, Ctrl-C twice quits,
//! Ctrl-O the sessions, Ctrl-T the reasoning, Shift-Tab the permission preset, Ctrl-R a new
//! host after one died, Ctrl-Z suspends to the shell, Alt-Up edits the newest queued message
//! (see `app_queue`), Tab steers into the running turn), then the composer. Enter sends,
//! queued while a turn runs; in the `/` list Enter runs the command and Tab completes it (for
//! its arguments); a few commands are the terminal's own (`/sessions`, `/new`, `/fork`,
//! `/rename TITLE`, `/model` and `/permission` without arguments, `/reasoning`, `/jobs`,
//! `/quit`);
//! every other `/` line is the host's.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use dsh_client_protocol::{
    ApprovalAnswer, ClientRequest, CompleteFiles, ForkRequest, JobRef, ModelsRequest, NoParams,
    PromptMode, RenameRequest, SelectModel, SendPrompt, SessionRef, SetPermission,
};

use crate::app::App;
use crate::app_event::Reply;
use crate::composer::Edit;
use crate::popup::{PickItem, Picker, PickerKind};

/// The second Ctrl-C must come within this.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

pub(crate) const PRESETS: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

impl App {
    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if ctrl && key.code == KeyCode::Char('z') {
            return self.suspend();
        }
        if ctrl && key.code == KeyCode::Char('d') && self.composer.is_empty() {
            self.quit = Some(0);
            return;
        }
        if let Some(question) = &mut self.question {
            if let Some(response) = question.handle_key(key) {
                self.question = None;
                self.send(ClientRequest::QuestionRespond(response), Reply::Question);
            }
            return;
        }
        if self.approval.is_some() {
            return self.approval_key(key);
        }
        if self.popup.as_ref().is_some_and(|p| p.kind.owns_input()) {
            return self.picker_key(key);
        }
        if self.editing.is_some() {
            match key.code {
                KeyCode::Esc => return self.cancel_edit(),
                KeyCode::Enter if self.composer.is_empty() => {
                    self.save_edit("");
                    return;
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Up if key.modifiers.contains(KeyModifiers::ALT) => {
                return self.edit_queued();
            }
            KeyCode::Esc => return self.escape(),
            KeyCode::Char('t') if ctrl => return self.toggle_reasoning(),
            KeyCode::Char('o') if ctrl => return self.open_sessions(),
            KeyCode::Char('r') if ctrl => return self.restart(),
            KeyCode::BackTab => return self.cycle_preset(),
            _ => {}
        }
        if self.popup.is_some() && self.completion_key(key) {
            return;
        }
        if key.code == KeyCode::Tab && self.status.running && !self.composer.is_empty() {
            let text = self.composer.text().to_owned();
            self.composer.remember(&text);
            self.composer.clear();
            return self.prompt(text, PromptMode::Steer);
        }
        match self.composer.handle_key(key) {
            Edit::Submit(text) => self.submit(text),
            Edit::Changed => self.update_completion(),
            Edit::Ignored => {}
        }
    }

    fn ctrl_c(&mut self) {
        if self.popup.take().is_some() {
            return;
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.update_completion();
            return;
        }
        let now = Instant::now();
        if self
            .quit_armed
            .is_some_and(|armed| now.duration_since(armed) < QUIT_WINDOW)
        {
            self.quit = Some(0);
            return;
        }
        self.quit_armed = Some(now);
        self.status.hint("Ctrl-C again to quit");
    }

    fn escape(&mut self) {
        if self.popup.take().is_some() {
            return;
        }
        if self.status.running
            && let Some(session) = self.session.clone()
        {
            self.send(
                ClientRequest::SessionCancel(SessionRef {
                    session_id: session,
                }),
                Reply::Action("session.cancel"),
            );
            self.status.hint("cancelling");
        }
    }

    fn approval_key(&mut self, key: KeyEvent) {
        let Some(modal) = &mut self.approval else {
            return;
        };
        if let Some(plan) = &mut modal.plan {
            if let Some((outcome, note)) = plan.key(key) {
                let request = ApprovalAnswer {
                    approval_id: modal.approval_id.clone(),
                    outcome,
                    scope: None,
                    note,
                };
                self.send(ClientRequest::ApprovalRespond(request), Reply::Approval);
                self.status.hint("answered");
            }
            return;
        }
        let answer = match key.code {
            KeyCode::Up => {
                modal.step(false);
                None
            }
            KeyCode::Down | KeyCode::Tab => {
                modal.step(true);
                None
            }
            KeyCode::Enter => Some(modal.selected_answer()),
            KeyCode::Esc => modal.answer_for('n'),
            KeyCode::Char(c) => modal.answer_for(c.to_ascii_lowercase()),
            _ => None,
        };
        if let Some((outcome, scope)) = answer {
            let request = ApprovalAnswer {
                approval_id: modal.approval_id.clone(),
                outcome,
                scope,
                note: None,
            };
            // The modal closes when the decision comes back in the session's frames; until
            // then it stays, so a lost answer can be given again.
            self.send(ClientRequest::ApprovalRespond(request), Reply::Approval);
            self.status.hint("answered");
        }
    }

    /// The keys of a picker with a query of its own (sessions, models, presets).
    fn picker_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.popup else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.popup = None,
            KeyCode::Up => picker.step(false),
            KeyCode::Down | KeyCode::Tab => picker.step(true),
            KeyCode::Backspace => {
                let mut query = picker.query.clone();
                query.pop();
                picker.set_query(&query);
            }
            // Nothing to choose (the list is still on its way, or nothing matches): it stays.
            KeyCode::Enter => {
                if let Some(chosen) = picker.chosen() {
                    let kind = picker.kind;
                    self.popup = None;
                    self.picked(kind, chosen);
                }
            }
            KeyCode::Char('f') if ctrl && picker.kind == PickerKind::Sessions => {
                if let Some(chosen) = picker.chosen() {
                    self.popup = None;
                    let request = ForkRequest {
                        session_id: chosen.value,
                        item_id: None,
                    };
                    self.send(ClientRequest::SessionFork(request), Reply::Forked);
                }
            }
            KeyCode::Char('x') if ctrl && picker.kind == PickerKind::Sessions => {
                if let Some(chosen) = picker.chosen()
                    && Some(&chosen.value) != self.session.as_ref()
                {
                    let request = SessionRef {
                        session_id: chosen.value,
                    };
                    // Each request runs on its own: the list is asked for once the delete is
                    // answered, or it could come from before it.
                    self.send(ClientRequest::SessionDelete(request), Reply::Deleted);
                } else {
                    self.status
                        .hint("the open session is not deleted from here");
                }
            }
            KeyCode::Char(c) if !ctrl => {
                let query = format!("{}{c}", picker.query);
                picker.set_query(&query);
            }
            _ => {}
        }
    }

    fn picked(&mut self, kind: PickerKind, chosen: PickItem) {
        let Some(session) = self.session.clone() else {
            return;
        };
        match kind {
            PickerKind::Sessions => {
                if chosen.value != session {
                    self.resume(&chosen.value);
                }
            }
            PickerKind::Models => {
                self.status.model = Some(chosen.value.clone());
                let request = SelectModel {
                    session_id: session,
                    model: chosen.value,
                    effort: None,
                };
                self.send(
                    ClientRequest::SessionSelectModel(request),
                    Reply::Action("session.selectModel"),
                );
            }
            PickerKind::Presets => self.set_preset(&chosen.value),
            PickerKind::Jobs => self.stop_job(session, &chosen.value),
            PickerKind::Commands | PickerKind::Files => {}
        }
    }

    fn set_preset(&mut self, preset: &str) {
        let Some(session) = self.session.clone() else {
            return;
        };
        self.status.preset = Some(preset.to_owned());
        let request = SetPermission {
            session_id: session,
            preset: preset.to_owned(),
        };
        self.send(
            ClientRequest::SessionSetPermission(request),
            Reply::Action("session.setPermission"),
        );
    }

    fn cycle_preset(&mut self) {
        let current = self.status.preset.as_deref().unwrap_or("workspace-write");
        let at = PRESETS.iter().position(|p| *p == current).unwrap_or(1);
        let next = PRESETS[(at + 1) % PRESETS.len()];
        self.set_preset(next);
        self.status.hint(format!("permission: {next}"));
    }

    /// The keys of the `/` and `@` completions; answers whether the key was theirs.
    fn completion_key(&mut self, key: KeyEvent) -> bool {
        let Some(picker) = &mut self.popup else {
            return false;
        };
        match key.code {
            KeyCode::Up => picker.step(false),
            KeyCode::Down => picker.step(true),
            KeyCode::Tab | KeyCode::Enter => {
                let (kind, chosen) = (picker.kind, picker.chosen());
                self.popup = None;
                let Some(chosen) = chosen else {
                    return key.code == KeyCode::Tab;
                };
                let (start, _) = self.composer.word_at_cursor();
                let with = match kind {
                    PickerKind::Commands => format!("/{} ", chosen.value),
                    _ => format!("@{} ", chosen.value),
                };
                self.composer.replace_before_cursor(start, &with);
                // Enter on a command runs it; Tab only completes it (for its arguments).
                if kind == PickerKind::Commands && key.code == KeyCode::Enter {
                    let text = self.composer.text().trim_end().to_owned();
                    self.submit(text);
                }
            }
            _ => return false,
        }
        true
    }

    /// Opens, narrows or closes the `/` and `@` completions for the word at the cursor.
    pub(crate) fn update_completion(&mut self) {
        let (start, word) = self.composer.word_at_cursor();
        let word = word.to_owned();
        if let Some(query) = word.strip_prefix('/').filter(|_| start == 0) {
            match &self.commands {
                Some(commands) => {
                    let items = commands
                        .iter()
                        .map(|command| PickItem {
                            label: format!("/{}", command.name),
                            detail: command.description.clone(),
                            value: command.name.clone(),
                        })
                        .chain(local_commands())
                        .collect();
                    let mut picker = Picker::new(PickerKind::Commands, items);
                    picker.set_query(query);
                    if let Some(open) = &self.popup
                        && open.kind == PickerKind::Commands
                        && open.query == query
                    {
                        return;
                    }
                    self.popup = Some(picker);
                }
                None => self.send(ClientRequest::CommandsList(NoParams {}), Reply::Commands),
            }
            return;
        }
        if let Some(query) = word.strip_prefix('@')
            && let Some(session) = self.session.clone()
        {
            let request = CompleteFiles {
                session_id: session,
                query: query.to_owned(),
            };
            self.send(
                ClientRequest::FilesComplete(request),
                Reply::Files {
                    query: query.to_owned(),
                },
            );
            return;
        }
        if self
            .popup
            .as_ref()
            .is_some_and(|p| matches!(p.kind, PickerKind::Commands | PickerKind::Files))
        {
            self.popup = None;
        }
    }

    fn submit(&mut self, text: String) {
        self.composer.remember(&text);
        self.composer.clear();
        self.popup = None;
        if self.save_edit(&text) {
            return;
        }
        let mut words = text.split_whitespace();
        let (first, rest) = (words.next().unwrap_or_default(), words.next());
        match (first, rest) {
            ("/quit" | "/exit", _) => self.quit = Some(0),
            ("/sessions" | "/resume", None) => self.open_sessions(),
            ("/new", None) => {
                self.leave_session();
                self.create();
            }
            ("/reasoning", None) => self.toggle_reasoning(),
            ("/jobs", None) => self.open_jobs(),
            ("/fork", None) => {
                if let Some(session) = self.session.clone() {
                    let request = ForkRequest {
                        session_id: session,
                        item_id: None,
                    };
                    self.send(ClientRequest::SessionFork(request), Reply::Forked);
                }
            }
            ("/rename", Some(_)) => {
                let title = text["/rename".len()..].trim().to_owned();
                if let Some(session) = self.session.clone() {
                    let request = RenameRequest {
                        session_id: session,
                        title: title.clone(),
                    };
                    self.send(
                        ClientRequest::SessionRename(request),
                        Reply::Action("session.rename"),
                    );
                    self.status.hint(format!("renamed: {title}"));
                }
            }
            ("/model", None) => {
                self.popup = Some(Picker::new(PickerKind::Models, Vec::new()));
                let request = ModelsRequest {
                    session_id: self.session.clone(),
                };
                self.send(ClientRequest::SessionModels(request), Reply::ModelPicker);
            }
            ("/permission", None) => {
                let items = PRESETS
                    .iter()
                    .map(|preset| PickItem {
                        label: (*preset).to_owned(),
                        detail: String::new(),
                        value: (*preset).to_owned(),
                    })
                    .collect();
                self.popup = Some(Picker::new(PickerKind::Presets, items));
            }
            _ => self.prompt(text, PromptMode::Queue),
        }
    }

    /// Sends a message (held until the session is open).
    pub(crate) fn prompt(&mut self, text: String, mode: PromptMode) {
        match (&self.session, self.ready) {
            (Some(session), true) => {
                let request = SendPrompt {
                    session_id: session.clone(),
                    text,
                    mode,
                    client_request_id: None,
                    images: Vec::new(),
                };
                self.send(ClientRequest::SessionPrompt(request), Reply::Prompt);
            }
            _ => self.pending.push(text),
        }
    }

    /// `/jobs`: the session's background jobs in a picker.
    fn open_jobs(&mut self) {
        if self.status.jobs.is_empty() {
            self.status.hint("no background jobs in this session");
            return;
        }
        self.popup = Some(Picker::new(PickerKind::Jobs, self.job_items()));
    }

    /// The jobs as picker items: the id and what runs, then its state.
    pub(crate) fn job_items(&self) -> Vec<PickItem> {
        self.status
            .jobs
            .iter()
            .map(|job| PickItem {
                label: format!("{} {}", job.id, job.label),
                detail: match &job.detail {
                    Some(detail) => format!("{} · {detail}", job.status.word()),
                    None => job.status.word().to_owned(),
                },
                value: job.id.clone(),
            })
            .collect()
    }

    /// Stops job `id` as `job_kill` would; one that ended already is left as it is.
    fn stop_job(&mut self, session: String, id: &str) {
        let Some(job) = self.status.jobs.iter().find(|job| job.id == id) else {
            return;
        };
        if !matches!(job.status, dsh_protocol::JobStatus::Running) {
            let word = job.status.word();
            self.status.hint(format!("{id} is not running ({word})"));
            return;
        }
        let request = JobRef {
            session_id: session,
            job_id: id.to_owned(),
        };
        self.send(
            ClientRequest::SessionKillJob(request),
            Reply::Action("session.killJob"),
        );
        self.status.hint(format!("stopping {id}"));
    }

    pub(crate) fn open_sessions(&mut self) {
        self.popup = Some(Picker::new(PickerKind::Sessions, Vec::new()));
        self.send(ClientRequest::SessionList(NoParams {}), Reply::Sessions);
    }
}

/// The commands the terminal answers itself, for the `/` list.
fn local_commands() -> Vec<PickItem> {
    [
        ("sessions", "open another session"),
        ("new", "start a new session"),
        ("reasoning", "show or hide the model's reasoning (Ctrl-T)"),
        ("jobs", "the background jobs; Enter stops one"),
        ("fork", "a new session with this conversation"),
        ("rename", "rename this session: /rename TITLE"),
        ("quit", "leave dsh"),
    ]
    .into_iter()
    .map(|(name, detail)| PickItem {
        label: format!("/{name}"),
        detail: detail.to_owned(),
        value: name.to_owned(),
    })
    .collect()
}

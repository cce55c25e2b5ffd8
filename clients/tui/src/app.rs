//! The app: its state and its loop. One thread runs the loop over one channel that every
//! source feeds (the terminal's events, the host's frames and answers, signals, the frame
//! requester); after each batch of events a frame is drawn if one is due, so a burst of
//! streamed text costs one frame and a key is echoed at once. Keys are handled in
//! `app_keys`, the host's frames and answers in `app_host`.

use std::io;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use dsh_client_protocol::{
    ClientInfo, ClientRequest, CreateRequest, HistoryRequest, Initialize, ModelsRequest,
    PROTOCOL_VERSION, SessionRef, SubscribeRequest,
};
use ratatui::text::Line;

use crate::app_event::{AppEvent, FrameRequester, Reply};
use crate::args::Start;
use crate::composer::Composer;
use crate::conn::{Conn, Transport};
use crate::modal::ApprovalModal;
use crate::popup::Picker;
use crate::question::QuestionModal;
use crate::screen::Screen;
use crate::status::Status;
use crate::theme;
use crate::transcript::Transcript;
use crate::view::View;

/// At most this often while text streams (a key is drawn at once).
const FRAME_INTERVAL: Duration = Duration::from_millis(8);
/// How long a hint stays in the status line.
const HINT_FOR: Duration = Duration::from_secs(3);

pub(crate) struct App {
    pub(crate) conn: Option<Conn>,
    pub(crate) transport: Transport,
    tx: Sender<AppEvent>,
    pub(crate) frames: FrameRequester,
    screen: Screen,
    pub(crate) transcript: Transcript,
    pub(crate) composer: Composer,
    pub(crate) session: Option<String>,
    pub(crate) start: Start,
    /// What a new session is made with.
    pub(crate) new_session: CreateRequest,
    pub(crate) cwd: String,
    /// The session's waiting messages (from its `session/queue` frames), and their ids.
    pub(crate) queue: Vec<String>,
    pub(crate) queue_ids: Vec<String>,
    /// The id of the waiting message the composer edits (Alt-Up).
    pub(crate) editing: Option<String>,
    /// Messages typed before the session was open; sent once it is.
    pub(crate) pending: Vec<String>,
    pub(crate) popup: Option<Picker>,
    pub(crate) approval: Option<ApprovalModal>,
    /// The asks the host let this client answer (`initialize`'s features).
    pub(crate) answering: crate::answering::Answering,
    pub(crate) question: Option<QuestionModal>,
    pub(crate) status: Status,
    /// Lines for the scrollback that are not the conversation's (notices, command output).
    pub(crate) notes: Vec<Line<'static>>,
    pub(crate) commands: Option<Vec<dsh_protocol::CommandSpec>>,
    pub(crate) quit_armed: Option<Instant>,
    pub(crate) quit: Option<i32>,
    /// Print the whole conversation again at the next frame.
    pub(crate) reprint: bool,
    /// Whether the session is followed (frames arrive).
    pub(crate) ready: bool,
    /// Items an append named that the transcript did not hold, each re-read once.
    pub(crate) reread: Vec<String>,
    due: Option<Instant>,
    last_draw: Instant,
    started: Instant,
}

impl App {
    pub(crate) fn new(
        transport: Transport,
        tx: Sender<AppEvent>,
        screen: Screen,
        start: Start,
        new_session: CreateRequest,
    ) -> Self {
        let cwd = std::env::current_dir()
            .map(|dir| dir.to_string_lossy().into_owned())
            .unwrap_or_default();
        let status = Status {
            connection: transport.describe(),
            ..Status::default()
        };
        Self {
            conn: None,
            transport,
            frames: FrameRequester::new(tx.clone()),
            tx,
            screen,
            transcript: Transcript::default(),
            composer: Composer::default(),
            session: None,
            start,
            new_session,
            cwd,
            queue: Vec::new(),
            queue_ids: Vec::new(),
            editing: None,
            pending: Vec::new(),
            popup: None,
            approval: None,
            answering: crate::answering::Answering::default(),
            question: None,
            status,
            notes: Vec::new(),
            commands: None,
            quit_armed: None,
            quit: None,
            reprint: false,
            ready: false,
            reread: Vec::new(),
            due: None,
            last_draw: Instant::now(),
            started: Instant::now(),
        }
    }

    /// Runs until the person quits or a signal ends it; answers the exit code.
    pub(crate) fn run(mut self, rx: &Receiver<AppEvent>) -> io::Result<i32> {
        self.draw()?;
        crate::highlight::warm();
        self.connect();
        loop {
            let wait = self.due.map_or(Duration::from_secs(3600), |due| {
                due.saturating_duration_since(Instant::now())
            });
            match rx.recv_timeout(wait) {
                Ok(event) => self.handle(event),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            // Everything already waiting goes into this frame.
            for _ in 0..1024 {
                match rx.try_recv() {
                    Ok(event) => self.handle(event),
                    Err(_) => break,
                }
            }
            if let Some(code) = self.quit {
                self.screen.leave()?;
                return Ok(code);
            }
            if self.due.is_some_and(|due| due <= Instant::now()) {
                self.due = None;
                self.draw()?;
            }
        }
        self.screen.leave()?;
        Ok(0)
    }

    fn handle(&mut self, event: AppEvent) {
        match event {
            AppEvent::Term(event) => self.on_term(event),
            AppEvent::Server(frame) => {
                self.on_frame(*frame);
                self.request_at(self.last_draw + FRAME_INTERVAL);
            }
            AppEvent::Answer(reply, answer) => {
                self.on_answer(reply, answer);
                self.request_now();
            }
            AppEvent::HostGone(last) => self.on_host_gone(&last),
            AppEvent::HostLog(line) => self.on_host_log(&line),
            AppEvent::Signal(signal) => self.quit = Some(128 + signal),
            AppEvent::Frame(at) => self.request_at(at),
        }
    }

    fn on_term(&mut self, event: crossterm::event::Event) {
        use crossterm::event::Event;
        match event {
            Event::Key(key) => self.on_key(key),
            Event::Paste(text) => {
                if let Some(question) = &mut self.question {
                    for c in text.chars().filter(|c| !c.is_control()) {
                        let key =
                            crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c));
                        question.handle_key(key);
                    }
                } else {
                    self.composer.insert(&text);
                    self.update_completion();
                }
            }
            Event::Resize(width, height) => {
                self.fit(Some((width, height)));
                // A resize in steps may report a size that is already old: look again.
                self.frames.schedule_frame_in(Duration::from_millis(100));
            }
            _ => {}
        }
        self.request_now();
    }

    pub(crate) fn request_now(&mut self) {
        self.request_at(Instant::now());
    }

    fn request_at(&mut self, at: Instant) {
        self.due = Some(self.due.map_or(at, |due| due.min(at)));
    }

    /// Fits the screen to the terminal's size (as reported, else as read now).
    fn fit(&mut self, reported: Option<(u16, u16)>) {
        let size = crossterm::terminal::size().ok().or(reported);
        if let Some((width, height)) = size
            && let Err(error) = self.screen.resize(width, height)
        {
            self.note_error(&format!("redrawing after a resize: {error}"));
        }
    }

    fn draw(&mut self) -> io::Result<()> {
        // Every frame checks the size (one ioctl): a missed resize signal costs one frame.
        self.fit(None);
        let now = Instant::now();
        if self
            .status
            .hint
            .as_ref()
            .is_some_and(|(_, at)| now.duration_since(*at) >= HINT_FOR)
        {
            self.status.hint = None;
        }
        let reprint = std::mem::take(&mut self.reprint);
        if reprint {
            self.transcript.rewind();
        }
        let mut history = std::mem::take(&mut self.notes);
        history.extend(self.transcript.take_settled());
        if reprint {
            self.screen.reset_history(std::mem::take(&mut history))?;
        }
        let (width, height) = (self.screen.width(), self.screen.height());
        let live = crate::wrap::wrap_all(&self.transcript.live_lines(), width);
        let mut queue = self.queue.clone();
        queue.extend(self.pending.iter().cloned());
        self.status.queued = queue.len();
        self.status.editing_queued = self.editing.is_some();
        self.status.opening = !self.status.following;
        let view = View {
            live,
            queue: &queue,
            popup: self.popup.as_ref(),
            approval: self.approval.as_ref(),
            question: self.question.as_ref(),
            composer: &self.composer,
            status: self.status.line(now, self.started),
        };
        let rows = view.rows(width, height);
        self.screen
            .frame(history, rows, Box::new(move |buf| view.render(buf)))?;
        self.last_draw = Instant::now();
        if self.status.running {
            self.frames.schedule_frame_in(Duration::from_millis(100));
        }
        if let Some((_, at)) = &self.status.hint {
            self.request_at(*at + HINT_FOR);
        }
        Ok(())
    }

    /// A line for the scrollback, outside the conversation.
    pub(crate) fn note(&mut self, text: &str, style: ratatui::style::Style) {
        self.notes.push(Line::default());
        for line in crate::wrap::sanitize(text).lines() {
            self.notes.push(Line::styled(line.to_owned(), style));
        }
        self.request_now();
    }

    pub(crate) fn note_error(&mut self, text: &str) {
        self.note(&format!("✗ {text}"), theme::error());
    }

    /// Connects (again) and says who we are; the session opens once the host answered.
    pub(crate) fn connect(&mut self) {
        if let Transport::Attach(path) = &self.transport
            && !path.exists()
            && let Ok(found) = Transport::attach(None)
        {
            // The host we attached to is gone; a newer one may serve the same home.
            self.transport = found;
            self.status.connection = self.transport.describe();
        }
        match Conn::open(&self.transport, self.tx.clone()) {
            Ok(conn) => {
                let hello = Initialize {
                    protocol_version: PROTOCOL_VERSION,
                    client_info: ClientInfo {
                        name: "dsh".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                    },
                    features: vec!["approvals".to_owned(), "questions".to_owned()],
                };
                conn.send(ClientRequest::Initialize(hello), Reply::Initialize);
                self.conn = Some(conn);
            }
            Err(error) => self.note_error(&format!("{error} (Ctrl-R tries again)")),
        }
    }

    /// Sends `request` when connected.
    pub(crate) fn send(&mut self, request: ClientRequest, reply: Reply) {
        match &self.conn {
            Some(conn) => conn.send(request, reply),
            None => self.status.hint("not connected: Ctrl-R reconnects"),
        }
    }

    /// Opens the session the command line asked for (or the one open before a restart).
    pub(crate) fn open_session(&mut self) {
        if let Some(session) = self.session.clone() {
            return self.resume(&session);
        }
        match self.start.clone() {
            Start::Resume(id) => self.resume(&id),
            Start::Continue => self.send(
                ClientRequest::SessionList(dsh_client_protocol::NoParams {}),
                Reply::Continue,
            ),
            Start::New => self.create(),
        }
    }

    pub(crate) fn create(&mut self) {
        let request = CreateRequest {
            cwd: Some(self.cwd.clone()),
            ..self.new_session.clone()
        };
        self.send(ClientRequest::SessionCreate(request), Reply::Created);
    }

    /// Opens `session` with its history, then follows it.
    pub(crate) fn resume(&mut self, session: &str) {
        self.leave_session();
        self.session = Some(session.to_owned());
        self.status.session = Some(session.to_owned());
        let request = HistoryRequest {
            session_id: session.to_owned(),
            limit: Some(500),
        };
        self.send(ClientRequest::SessionHistory(request), Reply::History);
    }

    /// Stops following the open session and forgets its screen.
    pub(crate) fn leave_session(&mut self) {
        if let Some(old) = self.session.take()
            && self.ready
        {
            let request = ClientRequest::SessionUnsubscribe(SessionRef { session_id: old });
            self.send(request, Reply::Action("session.unsubscribe"));
        }
        self.ready = false;
        self.status.following = false;
        // A screen that shows another conversation is cleared; a fresh one is not (the
        // shell's own scrollback stays).
        self.reprint |= self.transcript.printed_any();
        self.transcript.clear();
        self.queue.clear();
        self.queue_ids.clear();
        self.editing = None;
        self.status.goal = None;
        self.status.jobs.clear();
        self.approval = None;
        self.question = None;
        self.status.running = false;
        self.status.context = None;
    }

    /// Follows the open session from after `after_seq`.
    pub(crate) fn subscribe(&mut self, after_seq: Option<u64>) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let request = SubscribeRequest {
            session_id: session.clone(),
            after_seq,
        };
        self.send(ClientRequest::SessionSubscribe(request), Reply::Subscribed);
        // Prompts need not wait for the subscription (a long log takes the host a while to
        // replay after `after_seq`): what they cause comes after that seq, so it is followed.
        self.ready = true;
        // What was typed while the session opened may want completing.
        self.update_completion();
        for text in std::mem::take(&mut self.pending) {
            self.prompt(text, dsh_client_protocol::PromptMode::Queue);
        }
        self.send(
            ClientRequest::SessionModels(ModelsRequest {
                session_id: Some(session.clone()),
            }),
            Reply::Models,
        );
        self.send(
            ClientRequest::SessionContext(SessionRef {
                session_id: session,
            }),
            Reply::Context,
        );
    }

    /// Opens or closes the modals to match what waits for an answer.
    pub(crate) fn sync_modals(&mut self) {
        let approval = self.transcript.pending_approval();
        let question = self.transcript.pending_question();
        self.answering
            .show_wait(&mut self.status, approval.is_some(), question.is_some());
        match approval.filter(|_| self.answering.approvals) {
            Some(item)
                if self.approval.as_ref().map(|m| m.approval_id.as_str()) != Some(item.id()) =>
            {
                let call = match item {
                    dsh_client_protocol::ChatItem::Approval {
                        call_id: Some(call),
                        ..
                    } => self.transcript.find(call),
                    _ => None,
                };
                self.approval = ApprovalModal::new(item, call);
            }
            Some(_) => {}
            None => self.approval = None,
        }
        match question.filter(|_| self.answering.questions) {
            Some(item)
                if self.question.as_ref().map(|m| m.question_id.as_str()) != Some(item.id()) =>
            {
                self.question = QuestionModal::new(item);
            }
            Some(_) => {}
            None => self.question = None,
        }
    }

    fn on_host_gone(&mut self, last: &str) {
        self.conn = None;
        self.ready = false;
        self.status.following = false;
        self.status.running = false;
        self.approval = None;
        self.question = None;
        let what = match &self.transport {
            Transport::Attach(path) => {
                format!("The host at {} closed the connection", path.display())
            }
            Transport::Child { .. } => "The host stopped".to_owned(),
        };
        let said = if last.trim().is_empty() {
            String::new()
        } else {
            format!(":\n{last}")
        };
        self.note_error(&format!(
            "{what}{said}\nCtrl-R restarts it and opens the session again."
        ));
        self.status.connection = "disconnected".to_owned();
    }

    fn on_host_log(&mut self, line: &str) {
        let lower = line.to_ascii_lowercase();
        if lower.contains("error") || lower.contains("warn") {
            self.note(line, theme::dim());
        }
    }

    /// Ctrl-R: a new connection (a new child host), the session opened again.
    /// Ctrl-Z: the screen left as a shell expects it, the process stopped until the shell
    /// continues it, then the viewport drawn again. A turn the host runs goes on meanwhile; what
    /// it did is drawn when the screen is back.
    pub(crate) fn suspend(&mut self) {
        if let Err(error) = self.screen.leave() {
            self.note_error(&format!("leaving the screen: {error}"));
        }
        if let Err(error) = crate::term::suspend() {
            self.note_error(&format!("suspending: {error}"));
        }
        self.screen.resumed();
        self.request_now();
    }

    pub(crate) fn restart(&mut self) {
        if self.conn.is_some() {
            self.status.hint("connected");
            return;
        }
        self.status.connection = self.transport.describe();
        self.connect();
    }

    /// Keeps the cells' options and prints everything again with them.
    pub(crate) fn toggle_reasoning(&mut self) {
        let options = &mut self.transcript.options;
        options.show_reasoning = !options.show_reasoning;
        self.reprint = true;
    }
}

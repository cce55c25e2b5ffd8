//! A session log folded into chat items. The same fold serves `session.history` (the whole log,
//! folded once) and the event socket (each new event, folded as it is committed), so an item
//! has one id and one shape whichever way a client learned of it. Raw chunks never reach a
//! client: their text arrives as appends to the streaming assistant item of their step.

use dsh_protocol::kinds;
use std::collections::HashMap;

use dsh_client_protocol::{AppendField, ChatItem, ItemOp};
use dsh_protocol::{
    AssistantChunkEvent, AssistantMessageEvent, FinishReason, SessionTitleEvent, StreamChunk,
    ToolCallEvent, ToolResultEvent, ToolStatus, ToolView, TurnEndEvent, UserMessageEvent, text_of,
};
use dsh_sessions_seam::{EventRecord, shown_title};

use dsh_web_core::StreamedMarkdown;

use crate::views::{view, with_recorded_hunks};

mod asks;
mod tally;
mod user;

/// What one event changed.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Change {
    pub(crate) ops: Vec<ItemOp>,
    pub(crate) running: Option<bool>,
    pub(crate) title: Option<String>,
    pub(crate) stats: Option<dsh_client_protocol::SessionStats>,
}

/// The items of one session, and what the fold needs to place the next event.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fold {
    items: Vec<ChatItem>,
    index: HashMap<String, usize>,
    /// Tool cards by call id: their name and arguments, for the result's view, and when the
    /// call was logged.
    calls: HashMap<String, (String, String, i64)>,
    /// The files the running turn changed.
    produced: Vec<String>,
    /// Steps whose current attempt failed: the next chunk starts the item over.
    failed_attempts: Vec<String>,
    /// How far each streaming answer's text was split into rendered blocks.
    streams: HashMap<String, StreamedMarkdown>,
    /// A fold read for its items only (a history page, a fork point): no updates are made, so
    /// nothing is rendered for them.
    quiet: bool,
    pub(crate) running: bool,
    /// Whether the latest `plan/mode` turned planning on (none: not planning), for the
    /// composer's plan chip: kept here so a history read need not scan the log for it.
    pub(crate) plan_mode: bool,
    pub(crate) title: Option<String>,
    pub(crate) last_seq: Option<u64>,
    /// What the session cost so far.
    pub(crate) tally: tally::Tally,
    /// The tally as of an event that changed nothing else (a step's start, a message whose
    /// items come with events of their own), held until a frame goes anyway: sent alone, they
    /// were half of a turn's frames.
    held_stats: Option<dsh_client_protocol::SessionStats>,
    /// The tally this fold's changes last carried: one equal to it is not sent again (clients
    /// keep the last tally they got). A step of a tool that takes under a millisecond left the
    /// tally as its call's frame carried it, and a third of a live frame's bytes were the
    /// repeated tally.
    sent_stats: Option<dsh_client_protocol::SessionStats>,
}

fn assistant_id(turn: u64, step: u64) -> String {
    format!("t{turn}s{step}")
}

/// `item` as it goes to a page: long tool texts cut, an answer's text rendered.
pub(crate) fn wire_item(item: &ChatItem) -> ChatItem {
    with_blocks(item.for_wire())
}

/// `item` with an answer's text rendered.
pub(crate) fn with_blocks(mut item: ChatItem) -> ChatItem {
    if let ChatItem::Assistant {
        text,
        streaming,
        blocks,
        ..
    } = &mut item
    {
        *blocks = rendered(text, *streaming);
    }
    item
}

/// An answer's blocks: settled blocks and the tail, highlighted too once the answer is done.
fn rendered(text: &str, streaming: bool) -> Vec<String> {
    match (streaming, text.trim().is_empty()) {
        (_, true) => Vec::new(),
        (true, false) => StreamedMarkdown::of(text),
        (false, false) => StreamedMarkdown::finished(text),
    }
}

impl Fold {
    /// A fold whose changes are not sent anywhere: only its items are read.
    pub(crate) fn quiet() -> Self {
        Self {
            quiet: true,
            ..Self::default()
        }
    }

    /// From now on the fold's changes are made (and its streaming answers rendered): a fold
    /// caught up quietly on what a client has already seen starts speaking here. An answer
    /// still streaming gets its split from the text it holds, so its next chunks render as if
    /// the fold had spoken all along.
    pub(crate) fn speak(&mut self) {
        if !self.quiet {
            return;
        }
        self.quiet = false;
        for item in &self.items {
            if let ChatItem::Assistant {
                id,
                text,
                streaming: true,
                ..
            } = item
            {
                let mut stream = StreamedMarkdown::default();
                stream.update(text);
                self.streams.insert(id.clone(), stream);
            }
        }
    }

    /// The items, whole.
    pub(crate) fn items(&self) -> &[ChatItem] {
        &self.items
    }

    fn upsert(&mut self, item: ChatItem, change: &mut Change) {
        let id = item.id().to_owned();
        if !self.quiet {
            // The fold keeps items whole; what leaves it is cut for the wire and rendered. A
            // streaming answer starts (or starts over) its split here.
            let wire = match &item {
                ChatItem::Assistant {
                    text,
                    streaming: true,
                    ..
                } => {
                    let mut stream = StreamedMarkdown::default();
                    let blocks = stream.update(text).blocks;
                    self.streams.insert(id.clone(), stream);
                    let mut wire = item.for_wire();
                    if let ChatItem::Assistant { blocks: slot, .. } = &mut wire {
                        *slot = blocks;
                    }
                    wire
                }
                _ => {
                    self.streams.remove(&id);
                    wire_item(&item)
                }
            };
            change.ops.push(ItemOp::Upsert { item: wire });
        }
        match self.index.get(&id) {
            Some(&at) => self.items[at] = item,
            None => {
                self.index.insert(id, self.items.len());
                self.items.push(item);
            }
        }
    }

    /// Folds one committed event in. Its tally rides with the next change that says anything
    /// else (a turn's end always does), the newest tally winning.
    pub(crate) fn apply(&mut self, record: &EventRecord) -> Change {
        let mut change = self.fold_event(record);
        let speaks = !change.ops.is_empty() || change.running.is_some() || change.title.is_some();
        match (speaks, change.stats.is_some()) {
            (true, true) => self.held_stats = None,
            (true, false) => change.stats = self.held_stats.take(),
            (false, true) => self.held_stats = change.stats.take(),
            (false, false) => {}
        }
        if !self.quiet && change.stats.is_some() {
            if change.stats == self.sent_stats {
                change.stats = None;
            } else {
                self.sent_stats.clone_from(&change.stats);
            }
        }
        change
    }

    /// The tally held back by [`Fold::apply`], for a replay that ends before anything else
    /// would carry it.
    pub(crate) fn take_held_stats(&mut self) -> Option<dsh_client_protocol::SessionStats> {
        self.held_stats.take()
    }

    fn fold_event(&mut self, record: &EventRecord) -> Change {
        let mut change = Change::default();
        let seq = record.seq;
        self.last_seq = Some(seq);
        change.stats = self.tally.observe(record);
        match record.kind.as_str() {
            kinds::PLAN_MODE => {
                if let Some(Ok(mode)) = record.decode::<dsh_protocol::PlanModeEvent>() {
                    self.plan_mode = mode.active;
                }
            }
            kinds::TURN_START => {
                self.running = true;
                self.produced.clear();
                change.running = Some(true);
            }
            kinds::TURN_END => {
                self.running = false;
                change.running = Some(false);
                if let Some(Ok(end)) = record.decode::<TurnEndEvent>() {
                    self.close_streaming(&mut change);
                    let item = ChatItem::TurnEnd {
                        id: format!("turn-{}", end.turn),
                        seq,
                        turn: end.turn,
                        reason: end.reason,
                        stats: self.tally.turn_stats(record.time),
                        produced: std::mem::take(&mut self.produced),
                    };
                    self.upsert(item, &mut change);
                }
            }
            kinds::USER_MESSAGE => {
                if let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>() {
                    self.user_message(seq, message, &mut change);
                }
            }
            kinds::ASSISTANT_CHUNK => {
                if let Some(Ok(chunk)) = record.decode::<AssistantChunkEvent>() {
                    self.chunk(seq, chunk, &mut change);
                }
            }
            kinds::ASSISTANT_MESSAGE => {
                if let Some(Ok(done)) = record.decode::<AssistantMessageEvent>() {
                    change.stats = self.tally.message(record.time, &done);
                    let reasoning: String = done
                        .message
                        .content
                        .iter()
                        .filter_map(|block| match block {
                            dsh_protocol::ContentBlock::Reasoning { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let id = assistant_id(done.turn, done.step);
                    let text = text_of(&done.message.content);
                    // A step that only called tools said nothing: no empty bubble for it.
                    if text.is_empty() && reasoning.is_empty() && !self.index.contains_key(&id) {
                        return change;
                    }
                    let item = ChatItem::Assistant {
                        id,
                        seq,
                        turn: done.turn,
                        step: done.step,
                        text,
                        reasoning,
                        streaming: false,
                        interrupted: done.interrupted.unwrap_or(false),
                        blocks: Vec::new(),
                    };
                    self.upsert(item, &mut change);
                }
            }
            kinds::TOOL_CALL => {
                if let Some(Ok(call)) = record.decode::<ToolCallEvent>() {
                    self.tally.call(record.time, &call);
                    self.calls.insert(
                        call.call_id.clone(),
                        (call.name.clone(), call.arguments.clone(), record.time),
                    );
                    let item = ChatItem::Tool {
                        view: view(&call.name, &call.arguments, None),
                        id: call.call_id,
                        seq,
                        name: call.name,
                        arguments: call.arguments,
                        status: ToolStatus::Running,
                        truncated: false,
                        error: None,
                        duration_ms: None,
                    };
                    self.upsert(item, &mut change);
                }
            }
            kinds::TOOL_RESULT => {
                if let Some(Ok(result)) = record.decode::<ToolResultEvent>() {
                    change.stats = self.tally.result(record.time, &result);
                    self.result(seq, record.time, &result, &mut change);
                }
            }
            kinds::LLM_RETRY | kinds::COMMAND_RUN | kinds::COMMAND_DONE => {
                self.notice(record, &mut change);
            }
            kinds::APPROVAL_ASKED
            | kinds::APPROVAL_DECIDED
            | kinds::QUESTION_ASKED
            | kinds::QUESTION_ANSWERED => {
                self.ask(record, &mut change);
            }
            kinds::SESSION_TITLE => {
                if let Some(Ok(title)) = record.decode::<SessionTitleEvent>() {
                    let shown = self.shown_title(title);
                    self.title = Some(shown.clone());
                    change.title = Some(shown);
                }
            }
            _ => {}
        }
        change
    }

    /// A title as the page shows it, as the session list does ([`shown_title`]).
    fn shown_title(&self, title: SessionTitleEvent) -> String {
        let said = self.items.iter().find_map(|item| match item {
            ChatItem::User { seq, text, .. } if title.message_seqs.contains(seq) => Some(text),
            _ => None,
        });
        shown_title(title, said.map(String::as_str))
    }

    fn chunk(&mut self, seq: u64, event: AssistantChunkEvent, change: &mut Change) {
        let id = assistant_id(event.turn, event.step);
        let (field, text) = match event.chunk {
            StreamChunk::TextDelta { text, .. } => (AppendField::Text, text),
            StreamChunk::ReasoningDelta { text, .. } => (AppendField::Reasoning, text),
            StreamChunk::Finish {
                reason: FinishReason::Error { .. },
                ..
            } => {
                // This attempt failed; a retry streams its own text into the same item.
                if !self.failed_attempts.contains(&id) {
                    self.failed_attempts.push(id);
                }
                return;
            }
            _ => return,
        };
        let restart = self.failed_attempts.iter().position(|failed| *failed == id);
        if let Some(at) = restart {
            self.failed_attempts.remove(at);
        }
        let open = self.index.get(&id).copied().filter(|_| restart.is_none());
        match open {
            Some(at) => {
                if let ChatItem::Assistant {
                    text: whole,
                    reasoning,
                    ..
                } = &mut self.items[at]
                {
                    match field {
                        AppendField::Text => whole.push_str(&text),
                        AppendField::Reasoning => reasoning.push_str(&text),
                    }
                    if self.quiet {
                        return;
                    }
                    // A long open tail is not sent again per chunk (`grow`): the page shows
                    // the appended text after the blocks it has until a block settles.
                    let rendered = match field {
                        AppendField::Text => self.streams.get_mut(&id).and_then(|s| s.grow(whole)),
                        AppendField::Reasoning => None,
                    };
                    change.ops.push(ItemOp::Append {
                        item_id: id.clone(),
                        field,
                        text,
                    });
                    if let Some(update) = rendered {
                        change.ops.push(ItemOp::Blocks {
                            item_id: id,
                            from: update.from as u64,
                            blocks: update.blocks,
                        });
                    }
                }
            }
            None => {
                let (body, reasoning) = match field {
                    AppendField::Text => (text, String::new()),
                    AppendField::Reasoning => (String::new(), text),
                };
                let item = ChatItem::Assistant {
                    id,
                    seq,
                    turn: event.turn,
                    step: event.step,
                    text: body,
                    reasoning,
                    streaming: true,
                    interrupted: false,
                    blocks: Vec::new(),
                };
                self.upsert(item, change);
            }
        }
    }

    fn result(&mut self, seq: u64, time: i64, result: &ToolResultEvent, change: &mut Change) {
        for block in &result.message.content {
            let dsh_protocol::ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } = block
            else {
                continue;
            };
            let (name, arguments, called_at) = self
                .calls
                .get(tool_call_id)
                .cloned()
                .unwrap_or_else(|| ("tool".to_owned(), String::new(), time));
            let text = text_of(content);
            let failed = is_error.unwrap_or(false) || result.error.is_some();
            let mut card = view(&name, &arguments, Some(&text));
            if !failed {
                card = with_recorded_hunks(card, result.meta.as_ref());
            }
            // A failed call's command did not exit 0 unless its result says so (it was
            // refused, rejected or stopped at its timeout).
            if failed
                && let ToolView::Terminal { exit_code, .. } = &mut card
                && *exit_code == Some(0)
            {
                *exit_code = None;
            }
            if let ToolView::Subagent { child, .. } = &mut card {
                // The delegation tools name the child's session in the result's meta.
                *child = result
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.get("subagentId"))
                    .and_then(|id| id.as_str())
                    .map(str::to_owned);
            }
            if !failed
                && let ToolView::Diff { path, .. } = &card
                && !self.produced.contains(path)
            {
                self.produced.push(path.clone());
            }
            let item = ChatItem::Tool {
                id: tool_call_id.clone(),
                seq,
                view: card,
                name,
                arguments,
                status: if failed {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                },
                truncated: false,
                error: failed.then(|| failure_text(&text)),
                duration_ms: u64::try_from(time - called_at).ok(),
            };
            self.upsert(item, change);
        }
    }

    /// A turn that ends with a step still streaming (cancelled before its message): the item
    /// stops streaming and is marked cut short.
    fn close_streaming(&mut self, change: &mut Change) {
        let open: Vec<ChatItem> = self
            .items
            .iter()
            .filter(|item| {
                matches!(
                    item,
                    ChatItem::Assistant {
                        streaming: true,
                        ..
                    }
                )
            })
            .cloned()
            .collect();
        for mut item in open {
            if let ChatItem::Assistant {
                streaming,
                interrupted,
                ..
            } = &mut item
            {
                *streaming = false;
                *interrupted = true;
            }
            self.upsert(item, change);
        }
    }
}

/// The reason a failed call shows: its result's text, the start of it when long (the whole
/// text is in the card's view or `session.item`).
fn failure_text(text: &str) -> String {
    const SHOWN: usize = 2000;
    let text = text.trim();
    if text.len() <= SHOWN {
        return text.to_owned();
    }
    format!("{}…", &text[..text.floor_char_boundary(SHOWN)])
}

#[cfg(test)]
mod tests;

//! A session as a person reads it: the items a log folds into (what was asked, what the model
//! said and thought, each tool call as a card with a view computed by the host, turn ends and
//! notices), and the updates that keep a client's copy current. `session.history` answers
//! items; the event socket sends one [`SessionUpdate`] per log event, so a client that saw
//! seq N and reconnects asks for what came after N and gets nothing twice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use dsh_protocol::ApprovalOutcome;
use dsh_protocol::{ToolStatus, ToolView, TurnEndReason};

/// One item of a conversation; `id` is stable for the item's whole life, so an update that
/// arrives after a reload lands on the right one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum ChatItem {
    /// A person's message, with the images it carries (references; `attachment.read` gives
    /// their bytes).
    User {
        id: String,
        seq: u64,
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<dsh_protocol::ImageAttachment>,
    },
    /// One model step's answer; `streaming` while its chunks arrive.
    Assistant {
        id: String,
        seq: u64,
        turn: u64,
        step: u64,
        text: String,
        reasoning: String,
        streaming: bool,
        /// Cut short (a cancel, a failure): what arrived is kept.
        interrupted: bool,
        /// `text` rendered as HTML for the page, in blocks: the blocks that can no longer
        /// change, then the tail (open while streaming, highlighted once done).
        /// Empty in the log's own fold; filled on the way to a page.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        blocks: Vec<String>,
    },
    /// A tool call and, once it came, its result.
    Tool {
        id: String,
        seq: u64,
        name: String,
        /// The model's raw argument text.
        arguments: String,
        status: ToolStatus,
        view: ToolView,
        /// The view's long texts were cut for the wire; `session.item` answers them whole.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        /// Why a failed call failed (its result's text), shown whatever the view.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// From the call to its result, once it came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// A turn ended; how.
    TurnEnd {
        id: String,
        seq: u64,
        turn: u64,
        reason: TurnEndReason,
        /// How long it took and how fast the model answered, when its start was seen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stats: Option<crate::TurnStats>,
        /// The files the turn wrote or edited, in the order it first changed them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        produced: Vec<String>,
    },
    /// A call put to a person: answerable (`approval.respond`) while `outcome` is absent.
    Approval {
        id: String,
        seq: u64,
        tool_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<ApprovalOutcome>,
        /// How far an allowing answer reaches (`session`, `always`), when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<dsh_protocol::ApprovalScope>,
        /// The note given with a refusal (a plan review's "keep planning").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Questions put to a person (`ask_user_question`): answerable (`question.respond`) while
    /// `outcome` is absent.
    Question {
        id: String,
        seq: u64,
        questions: Vec<dsh_protocol::UserQuestion>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<dsh_protocol::QuestionVerdict>,
    },
    /// Something a person should know that is not a message: a retry, a failure.
    Notice {
        id: String,
        seq: u64,
        level: NoticeLevel,
        text: String,
    },
}

impl ChatItem {
    pub fn id(&self) -> &str {
        match self {
            Self::User { id, .. }
            | Self::Assistant { id, .. }
            | Self::Tool { id, .. }
            | Self::TurnEnd { id, .. }
            | Self::Approval { id, .. }
            | Self::Question { id, .. }
            | Self::Notice { id, .. } => id,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// The longest text a tool card carries on the wire; a longer one is cut (at a character
/// boundary) and the card marked `truncated`.
pub const WIRE_TEXT_LIMIT: usize = 16 * 1024;

fn cut(text: &mut String) -> bool {
    if text.len() <= WIRE_TEXT_LIMIT {
        return false;
    }
    let mut end = WIRE_TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

impl ChatItem {
    /// The item as the wire carries it: a tool card's long texts cut.
    pub fn for_wire(&self) -> Self {
        let mut item = self.clone();
        if let Self::Tool {
            view,
            truncated,
            arguments,
            ..
        } = &mut item
        {
            let mut any = cut(arguments);
            match view {
                ToolView::Terminal { output, .. } => any |= cut(output),
                ToolView::Diff { hunks, .. } => {
                    any |= dsh_protocol::cut_hunks(hunks, WIRE_TEXT_LIMIT);
                }
                ToolView::Read { text, .. } => any |= cut(text),
                ToolView::Search { results, .. } => any |= cut(results),
                ToolView::Todo { .. } => {}
                ToolView::Subagent { prompt, result, .. } => {
                    any |= cut(prompt);
                    any |= cut(result);
                }
                ToolView::Generic { result } => any |= cut(result),
            }
            *truncated = any;
        }
        item
    }
}

/// One change to a client's copy of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum ItemOp {
    /// The item as it now is (new, or replacing the one with its id).
    Upsert { item: ChatItem },
    /// Text appended to a streaming assistant item. While an answer only grows, this is all a
    /// frame carries of its text (never the text so far), so following an answer costs its
    /// length once; a whole item comes again when it changes otherwise (its end, a failed
    /// attempt starting over) and on a subscribe's replay.
    Append {
        item_id: String,
        field: AppendField,
        text: String,
    },
    /// A streaming assistant item's rendered blocks from `from` on are now `blocks` (the ones
    /// that settled, then the open tail), covering all its text so far. An open tail longer
    /// than 16 KiB is not sent again per append (that would be quadratic in its length): until
    /// a block settles or the item ends, a page shows the text appended since its last `blocks`
    /// as text where the last block ends.
    Blocks {
        item_id: String,
        from: u64,
        blocks: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AppendField {
    Text,
    Reasoning,
}

/// What one log event changed, sent as one frame so a client applies it whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdate {
    pub session_id: String,
    pub seq: u64,
    /// When the event was committed (epoch milliseconds).
    #[serde(default)]
    pub time: i64,
    pub ops: Vec<ItemOp>,
    /// Set when the event changed whether a turn is running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// Set when the event renamed the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Set when the event changed what the session cost (a step's message, a tool's result, a
    /// turn's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<crate::SessionStats>,
}

/// The value of `session.history`: the newest items (the tail page) and the seq they reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHistory {
    pub session_id: String,
    pub items: Vec<ChatItem>,
    /// Items before the first one returned (0: this is the whole history).
    pub earlier: u64,
    /// The seq of the last event folded in: subscribe with `afterSeq` set to it.
    pub last_seq: Option<u64>,
    pub running: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The permission preset the session chose (its latest `permission/preset`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Whether the session is in plan mode (its latest `plan/mode`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_mode: bool,
    /// What the whole session cost so far.
    #[serde(default)]
    pub stats: crate::SessionStats,
}

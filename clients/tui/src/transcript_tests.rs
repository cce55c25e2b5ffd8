//! The transcript's promise to the scrollback: a streaming answer goes there line by line and
//! never twice, items go in order (a running tool holds back what follows), a printed item
//! does not change, an undecided approval is left to the modal, and a rewind prints the same.

use dsh_client_protocol::{AppendField, ChatItem, ItemOp};
use dsh_protocol::{ToolStatus, ToolView};

use super::*;

fn texts(lines: &[Line<'static>]) -> Vec<String> {
    lines.iter().map(|line| line.to_string()).collect()
}

fn answer(id: &str, text: &str, streaming: bool) -> ChatItem {
    ChatItem::Assistant {
        id: id.into(),
        seq: 1,
        turn: 1,
        step: 1,
        text: text.into(),
        reasoning: String::new(),
        streaming,
        interrupted: false,
        blocks: Vec::new(),
    }
}

fn append(id: &str, text: &str) -> ItemOp {
    ItemOp::Append {
        item_id: id.into(),
        field: AppendField::Text,
        text: text.into(),
    }
}

fn bash(id: &str, status: ToolStatus) -> ChatItem {
    ChatItem::Tool {
        id: id.into(),
        seq: 2,
        name: "bash".into(),
        arguments: "{}".into(),
        status,
        view: ToolView::Terminal {
            command: "ls".into(),
            output: "a\nb".into(),
            exit_code: (status != ToolStatus::Running).then_some(0),
        },
        truncated: false,
        error: None,
        duration_ms: None,
    }
}

#[test]
fn a_streaming_answer_reaches_the_scrollback_line_by_line() {
    let mut transcript = Transcript::default();
    transcript.apply(ItemOp::Upsert {
        item: answer("a1", "", true),
    });
    transcript.apply(append("a1", "First line\nsec"));
    assert_eq!(texts(&transcript.take_settled()), ["", "First line"]);
    assert_eq!(
        texts(&transcript.live_lines()),
        ["sec"],
        "the open line stays live"
    );
    transcript.apply(append("a1", "ond line\n\n- item"));
    assert_eq!(texts(&transcript.take_settled()), ["second line"]);
    assert!(transcript.take_settled().is_empty(), "nothing twice");
    transcript.apply(ItemOp::Upsert {
        item: answer("a1", "First line\nsecond line\n\n- item", false),
    });
    assert_eq!(texts(&transcript.take_settled()), ["", "• item"]);
    assert!(transcript.live_lines().is_empty());
    assert!(transcript.printed_any());
}

#[test]
fn a_running_tool_holds_back_what_follows_it() {
    let mut transcript = Transcript::default();
    transcript.upsert(bash("c1", ToolStatus::Running));
    transcript.upsert(answer("a2", "after the tool", false));
    assert!(
        transcript.take_settled().is_empty(),
        "in order: the tool first"
    );
    let live = texts(&transcript.live_lines());
    assert!(live.contains(&"⋯ $ ls".to_owned()), "{live:?}");
    assert!(live.contains(&"after the tool".to_owned()), "{live:?}");
    transcript.upsert(bash("c1", ToolStatus::Ok));
    let settled = texts(&transcript.take_settled());
    assert_eq!(
        settled,
        [
            "",
            "✓ $ ls",
            "  │ a",
            "  │ b",
            "  └ exit 0",
            "",
            "after the tool"
        ]
    );
    // The scrollback cannot change: an update of a printed item is not taken.
    transcript.upsert(bash("c1", ToolStatus::Error));
    assert!(matches!(
        transcript.find("c1"),
        Some(ChatItem::Tool {
            status: ToolStatus::Ok,
            ..
        })
    ));
}

#[test]
fn an_undecided_approval_is_the_modals_and_rewinding_prints_all_again() {
    let mut transcript = Transcript::default();
    transcript.upsert(bash("c1", ToolStatus::Running));
    transcript.upsert(ChatItem::Approval {
        id: "ap1".into(),
        seq: 3,
        tool_name: "bash".into(),
        call_id: Some("c1".into()),
        reason: None,
        outcome: None,
        scope: None,
        note: None,
    });
    assert!(transcript.pending_approval().is_some());
    let live = texts(&transcript.live_lines());
    assert!(
        !live.iter().any(|line| line.contains("approval")),
        "{live:?}"
    );
    transcript.upsert(bash("c1", ToolStatus::Ok));
    transcript.upsert(ChatItem::Approval {
        id: "ap1".into(),
        seq: 4,
        tool_name: "bash".into(),
        call_id: Some("c1".into()),
        reason: None,
        outcome: Some(dsh_protocol::ApprovalOutcome::AllowedOnce),
        scope: Some(dsh_protocol::ApprovalScope::Session),
        note: None,
    });
    assert!(transcript.pending_approval().is_none());
    let first = texts(&transcript.take_settled());
    assert_eq!(
        first.last().map(String::as_str),
        Some("✔ Allowed bash for this session")
    );
    transcript.rewind();
    assert_eq!(texts(&transcript.take_settled()), first);
}

#[test]
fn an_append_to_an_answer_not_held_is_named_for_a_reread() {
    let mut transcript = Transcript::default();
    assert_eq!(
        transcript.apply(append("a1", "lost")),
        Some("a1".to_owned())
    );
    assert!(transcript.items().is_empty());
    transcript.apply(ItemOp::Upsert {
        item: answer("a1", "held ", true),
    });
    assert_eq!(transcript.apply(append("a1", "on")), None);
    assert!(matches!(
        transcript.find("a1"),
        Some(ChatItem::Assistant { text, .. }) if text == "held on"
    ));
}

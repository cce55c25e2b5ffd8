//! The viewport and the cards as a person sees them at 60 columns (the narrowest terminal the
//! UI promises to stay usable in), on ratatui's `TestBackend`, compared with insta snapshots.

use dsh_client_protocol::{ChatItem, NoticeLevel};
use dsh_protocol::{
    DiffHunk, DiffLine, DiffLineKind, FailureCode, LlmFailure, TodoItem, TodoStatus, ToolStatus,
    ToolView, TurnEndReason,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;

use super::*;
use crate::cells::{self, CellOptions};
use crate::popup::{PickItem, PickerKind};
use crate::status::Status;

fn tool(name: &str, status: ToolStatus, view: ToolView) -> ChatItem {
    ChatItem::Tool {
        id: format!("call-{name}"),
        seq: 1,
        name: name.into(),
        arguments: "{}".into(),
        status,
        view,
        truncated: false,
        error: None,
        duration_ms: Some(1250),
    }
}

fn draw_lines(lines: &[Line<'static>], width: u16) -> Terminal<TestBackend> {
    let wrapped = crate::wrap::wrap_all(lines, width);
    let mut terminal = Terminal::new(TestBackend::new(width, wrapped.len() as u16)).unwrap();
    terminal
        .draw(|frame| {
            for (row, line) in wrapped.iter().enumerate() {
                frame.buffer_mut().set_line(0, row as u16, line, width);
            }
        })
        .unwrap();
    terminal
}

#[test]
fn cards_at_sixty_columns() {
    let items = [
        tool(
            "bash",
            ToolStatus::Ok,
            ToolView::Terminal {
                command: "cargo test --quiet 2>&1 | tail -3".into(),
                output: (1..=12).map(|n| format!("line {n}\n")).collect(),
                exit_code: Some(0),
            },
        ),
        tool(
            "edit",
            ToolStatus::Ok,
            ToolView::Diff {
                path: "src/lib.rs".into(),
                hunks: vec![DiffHunk {
                    old_start: Some(3),
                    new_start: Some(3),
                    lines: vec![
                        DiffLine {
                            kind: DiffLineKind::Context,
                            old: Some(3),
                            new: Some(3),
                            text: "fn add(a: i32, b: i32) -> i32 {".into(),
                            spans: Vec::new(),
                        },
                        DiffLine {
                            kind: DiffLineKind::Removed,
                            old: Some(4),
                            new: None,
                            text: "    a - b".into(),
                            spans: Vec::new(),
                        },
                        DiffLine {
                            kind: DiffLineKind::Added,
                            old: None,
                            new: Some(4),
                            text: "    a + b".into(),
                            spans: Vec::new(),
                        },
                    ],
                }],
                added: 1,
                removed: 1,
            },
        ),
        tool(
            "read",
            ToolStatus::Ok,
            ToolView::Read {
                path: "README.md".into(),
                first_line: 1,
                text: "# Title\n\nSome words.\n".into(),
            },
        ),
        tool(
            "todo_write",
            ToolStatus::Ok,
            ToolView::Todo {
                items: vec![
                    TodoItem {
                        content: "read the code".into(),
                        status: TodoStatus::Completed,
                    },
                    TodoItem {
                        content: "fix the bug".into(),
                        status: TodoStatus::InProgress,
                    },
                    TodoItem {
                        content: "run the tests".into(),
                        status: TodoStatus::Pending,
                    },
                ],
            },
        ),
        tool(
            "subagent",
            ToolStatus::Running,
            ToolView::Subagent {
                label: "explorer".into(),
                prompt: "Find where the config is read".into(),
                child: None,
                result: String::new(),
            },
        ),
        ChatItem::Notice {
            id: "n1".into(),
            seq: 2,
            level: NoticeLevel::Warning,
            text: "The model was rate limited; retrying in 2 s".into(),
        },
        ChatItem::TurnEnd {
            id: "t1".into(),
            seq: 3,
            turn: 1,
            reason: TurnEndReason::Error {
                error: LlmFailure::new(FailureCode::Auth, "the provider refused the key"),
            },
            stats: None,
            produced: Vec::new(),
        },
    ];
    let lines: Vec<Line<'static>> = items
        .iter()
        .flat_map(|item| cells::render(item, CellOptions::default()))
        .collect();
    insta::assert_snapshot!(draw_lines(&lines, 60).backend());
}

#[test]
fn an_answer_with_reasoning_collapsed_and_shown() {
    let answer = ChatItem::Assistant {
        id: "a1".into(),
        seq: 1,
        turn: 1,
        step: 1,
        text: "Use **`cargo fmt`**:\n\n```sh\ncargo fmt --all\n```\n\n1. run it\n2. commit".into(),
        reasoning: "The user wants formatting. Cargo has a formatter.".into(),
        streaming: false,
        interrupted: false,
        blocks: Vec::new(),
    };
    let collapsed = cells::render(&answer, CellOptions::default());
    insta::assert_snapshot!("collapsed", draw_lines(&collapsed, 60).backend());
    let shown = cells::render(
        &answer,
        CellOptions {
            show_reasoning: true,
        },
    );
    insta::assert_snapshot!("shown", draw_lines(&shown, 60).backend());
}

#[test]
fn the_viewport_with_a_running_card_an_approval_and_the_composer() {
    let running = tool(
        "bash",
        ToolStatus::Running,
        ToolView::Terminal {
            command: "rm -rf build && make".into(),
            output: String::new(),
            exit_code: None,
        },
    );
    let approval = ChatItem::Approval {
        id: "ap1".into(),
        seq: 2,
        tool_name: "bash".into(),
        call_id: Some("call-bash".into()),
        reason: Some("the command deletes files outside the sandbox's reach".into()),
        outcome: None,
        scope: None,
        note: None,
    };
    let modal = ApprovalModal::new(&approval, Some(&running)).unwrap();
    let mut composer = Composer::default();
    composer.insert("and then run the tests");
    let mut status = Status {
        model: Some("deepseek-official/deepseek-v4-flash".into()),
        preset: Some("workspace-write".into()),
        context: Some((12_400, Some(128_000))),
        running: true,
        connection: "own host".into(),
        ..Status::default()
    };
    status.input_tokens = 12_400;
    status.output_tokens = 830;
    let started = std::time::Instant::now();
    let queue = vec!["a message for the next turn".to_owned()];
    let view = View {
        live: crate::wrap::wrap_all(&cells::render(&running, CellOptions::default()), 60),
        queue: &queue,
        popup: None,
        approval: Some(&modal),
        question: None,
        composer: &composer,
        status: status.line(started, started),
    };
    let rows = view.rows(60, 40);
    let mut terminal = Terminal::new(TestBackend::new(60, rows)).unwrap();
    let mut cursor = Some((0, 0));
    terminal
        .draw(|frame| cursor = view.render(frame.buffer_mut()))
        .unwrap();
    assert_eq!(
        cursor, None,
        "the modal has the keys: no cursor in the composer"
    );
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_session_picker_filters_as_a_person_types() {
    let items = [
        "fix the flaky test",
        "write the release notes",
        "refactor the parser",
    ]
    .iter()
    .enumerate()
    .map(|(n, title)| PickItem {
        label: (*title).to_owned(),
        detail: format!("{}h ago · ~/src/project", n + 1),
        value: format!("s{n}"),
    })
    .collect();
    let mut picker = Picker::new(PickerKind::Sessions, items);
    picker.set_query("rele");
    let composer = Composer::default();
    let view = View {
        live: Vec::new(),
        queue: &[],
        popup: Some(&picker),
        approval: None,
        question: None,
        composer: &composer,
        status: Line::from("idle"),
    };
    let rows = view.rows(60, 20);
    let mut terminal = Terminal::new(TestBackend::new(60, rows)).unwrap();
    terminal
        .draw(|frame| {
            view.render(frame.buffer_mut());
        })
        .unwrap();
    assert_eq!(
        picker.chosen().map(|item| item.value),
        Some("s1".to_owned())
    );
    insta::assert_snapshot!(terminal.backend());
}

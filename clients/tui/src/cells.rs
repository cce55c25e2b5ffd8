//! How each item of a conversation reads in a terminal: a person's message, the model's answer
//! (Markdown) and its reasoning (collapsed to one line unless shown), tool cards (a shell
//! command with its output's tail and exit code, a diff coloured by line, a file read with line
//! numbers, search results, the todo list, a subagent and its status), decided approvals and
//! questions, turn ends, notices. Lines come out unwrapped; the transcript wraps them.

use dsh_client_protocol::{ChatItem, NoticeLevel};
use dsh_protocol::{
    ApprovalOutcome, ApprovalScope, DiffLineKind, TodoStatus, ToolStatus, ToolView, TurnEndReason,
};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::theme;
use crate::wrap::sanitize;

/// How many lines of a tool's output a card shows (its tail).
const OUTPUT_TAIL: usize = 8;
/// How many lines of a diff, a read or a search a card shows.
const BODY_LINES: usize = 24;

/// What the reader asked to see.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CellOptions {
    pub(crate) show_reasoning: bool,
}

/// The lines of `item`, a blank line first where it starts a block of its own.
pub(crate) fn render(item: &ChatItem, options: CellOptions) -> Vec<Line<'static>> {
    match item {
        ChatItem::User { text, .. } => user(text),
        ChatItem::Assistant {
            text,
            reasoning,
            interrupted,
            ..
        } => {
            let mut lines = reasoning_lines(reasoning, options);
            lines.extend(answer_lines(text));
            if *interrupted {
                lines.push(Line::styled("  (interrupted)", theme::dim()));
            }
            lines
        }
        ChatItem::Tool {
            name,
            arguments,
            status,
            view,
            error,
            duration_ms,
            ..
        } => tool(
            name,
            arguments,
            *status,
            view,
            error.as_deref(),
            *duration_ms,
        ),
        ChatItem::TurnEnd { reason, stats, .. } => turn_end(reason, stats.as_ref()),
        ChatItem::Approval {
            tool_name,
            outcome,
            scope,
            reason,
            ..
        } => approval(tool_name, *outcome, *scope, reason.as_deref()),
        ChatItem::Question {
            questions, outcome, ..
        } => {
            let first = questions
                .first()
                .map(|q| sanitize(&q.question))
                .unwrap_or_default();
            let state = match outcome {
                None => "waits for your answer",
                Some(dsh_protocol::QuestionVerdict::Answered { .. }) => "answered",
                Some(dsh_protocol::QuestionVerdict::Cancelled) => "declined",
                Some(dsh_protocol::QuestionVerdict::Unavailable) => "not answered",
            };
            vec![
                Line::default(),
                Line::from(vec![
                    Span::styled("? ", theme::warn()),
                    Span::raw(first),
                    Span::styled(format!(" ({state})"), theme::dim()),
                ]),
            ]
        }
        ChatItem::Notice { level, text, .. } => {
            let (mark, style) = match level {
                NoticeLevel::Info => ("· ", theme::dim()),
                NoticeLevel::Warning => ("⚠ ", theme::warn()),
                NoticeLevel::Error => ("✗ ", theme::error()),
            };
            let mut lines = vec![Line::default()];
            lines.extend(prefixed(&sanitize(text), Span::styled(mark, style), style));
            lines
        }
    }
}

/// A person's message.
pub(crate) fn user(text: &str) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    lines.extend(prefixed(
        &sanitize(text),
        Span::styled("› ", theme::accent().patch(theme::bold())),
        theme::bold(),
    ));
    lines
}

/// The collapsed (or whole) reasoning of an answer.
pub(crate) fn reasoning_lines(reasoning: &str, options: CellOptions) -> Vec<Line<'static>> {
    let reasoning = reasoning.trim();
    if reasoning.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Line::default()];
    if options.show_reasoning {
        lines.extend(prefixed(
            &sanitize(reasoning),
            Span::styled("✻ ", theme::dim()),
            theme::dim().patch(theme::italic()),
        ));
    } else {
        let words = reasoning.split_whitespace().count();
        lines.push(Line::styled(
            format!("✻ Thought ({words} words; Ctrl-T shows reasoning)"),
            theme::dim().patch(theme::italic()),
        ));
    }
    lines
}

/// An answer's Markdown, after a blank line.
pub(crate) fn answer_lines(text: &str) -> Vec<Line<'static>> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Line::default()];
    lines.extend(crate::markdown::render(text));
    lines
}

/// `text`'s lines, the first after `mark`, the others indented as far.
fn prefixed(text: &str, mark: Span<'static>, style: Style) -> Vec<Line<'static>> {
    let indent = " ".repeat(crate::wrap::text_width(&mark.content));
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            let lead = if index == 0 {
                mark.clone()
            } else {
                Span::raw(indent.clone())
            };
            Line::from(vec![lead, Span::styled(line.to_owned(), style)])
        })
        .collect()
}

fn status_mark(status: ToolStatus) -> Span<'static> {
    match status {
        ToolStatus::Running => Span::styled("⋯ ", theme::warn()),
        ToolStatus::Ok => Span::styled("✓ ", theme::ok()),
        ToolStatus::Error => Span::styled("✗ ", theme::error()),
    }
}

fn first_line(text: &str) -> String {
    sanitize(text.lines().next().unwrap_or_default())
}

/// Lines of a card's body: `│ ` and the text, in `style`.
fn body(text: &str, style: Style, keep: Keep) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let all: Vec<&str> = text.lines().collect();
    let (shown, hidden) = match keep {
        Keep::Tail(n) if all.len() > n => (&all[all.len() - n..], all.len() - n),
        Keep::Head(n) if all.len() > n => (&all[..n], all.len() - n),
        _ => (&all[..], 0),
    };
    let mut lines = Vec::new();
    if hidden > 0 && matches!(keep, Keep::Tail(_)) {
        lines.push(Line::styled(
            format!("  │ … {hidden} lines above"),
            theme::dim(),
        ));
    }
    lines.extend(shown.iter().map(|line| {
        Line::from(vec![
            Span::styled("  │ ", theme::dim()),
            Span::styled((*line).to_owned(), style),
        ])
    }));
    if hidden > 0 && matches!(keep, Keep::Head(_)) {
        lines.push(Line::styled(
            format!("  │ … {hidden} more lines"),
            theme::dim(),
        ));
    }
    lines
}

#[derive(Clone, Copy)]
enum Keep {
    Head(usize),
    Tail(usize),
}

fn duration(ms: Option<u64>) -> String {
    match ms {
        Some(ms) if ms >= 1000 => format!(" · {:.1}s", ms as f64 / 1000.0),
        Some(ms) => format!(" · {ms}ms"),
        None => String::new(),
    }
}

/// A tool card.
pub(crate) fn tool(
    name: &str,
    arguments: &str,
    status: ToolStatus,
    view: &ToolView,
    error: Option<&str>,
    duration_ms: Option<u64>,
) -> Vec<Line<'static>> {
    let mark = status_mark(status);
    let mut lines = vec![Line::default()];
    let header = |verb: &str, what: String| {
        Line::from(vec![
            mark.clone(),
            Span::styled(verb.to_owned(), theme::bold()),
            Span::raw(" "),
            Span::styled(what, theme::accent()),
        ])
    };
    match view {
        ToolView::Terminal {
            command,
            output,
            exit_code,
        } => {
            lines.push(header("$", first_line(command)));
            lines.extend(body(output, Style::default(), Keep::Tail(OUTPUT_TAIL)));
            if let Some(code) = exit_code {
                let style = if *code == 0 {
                    theme::dim()
                } else {
                    theme::error()
                };
                lines.push(Line::styled(
                    format!("  └ exit {code}{}", duration(duration_ms)),
                    style,
                ));
            }
        }
        ToolView::Diff {
            path,
            hunks,
            added,
            removed,
        } => {
            let mut head = header(
                if name == "write" { "Wrote" } else { "Edited" },
                sanitize(path),
            );
            head.spans
                .push(Span::styled(format!(" +{added}"), theme::ok()));
            head.spans
                .push(Span::styled(format!(" -{removed}"), theme::error()));
            lines.push(head);
            let mut shown = 0;
            for hunk in hunks {
                for line in &hunk.lines {
                    shown += 1;
                    if shown > BODY_LINES {
                        continue;
                    }
                    let (sign, style) = match line.kind {
                        DiffLineKind::Added => ("+", theme::ok()),
                        DiffLineKind::Removed => ("-", theme::error()),
                        DiffLineKind::Context => (" ", theme::dim()),
                    };
                    let number = line
                        .new
                        .or(line.old)
                        .map_or(String::new(), |n| format!("{n:>4} "));
                    lines.push(Line::from(vec![
                        Span::styled(format!("  {number}"), theme::dim()),
                        Span::styled(format!("{sign}{}", sanitize(&line.text)), style),
                    ]));
                }
            }
            if shown > BODY_LINES {
                lines.push(Line::styled(
                    format!("  … {} more lines", shown - BODY_LINES),
                    theme::dim(),
                ));
            }
        }
        ToolView::Read {
            path,
            first_line: start,
            text,
        } => {
            lines.push(header("Read", sanitize(path)));
            let text = sanitize(text);
            let all: Vec<&str> = text.lines().collect();
            for (offset, line) in all.iter().take(BODY_LINES.min(6)).enumerate() {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {:>4} ", *start + offset as u64), theme::dim()),
                    Span::raw((*line).to_owned()),
                ]));
            }
            if all.len() > 6 {
                lines.push(Line::styled(
                    format!("  … {} more lines", all.len() - 6),
                    theme::dim(),
                ));
            }
        }
        ToolView::Search { pattern, results } => {
            lines.push(header("Searched", sanitize(pattern)));
            lines.extend(body(results, Style::default(), Keep::Head(8)));
        }
        ToolView::Todo { items } => {
            lines.push(header("Todo", format!("{} items", items.len())));
            for item in items {
                let (mark, style) = match item.status {
                    TodoStatus::Completed => ("  ☑ ", theme::dim()),
                    TodoStatus::InProgress => ("  ▶ ", theme::bold()),
                    TodoStatus::Pending => ("  ☐ ", Style::default()),
                };
                lines.push(Line::from(vec![
                    Span::raw(mark),
                    Span::styled(sanitize(&item.content), style),
                ]));
            }
        }
        ToolView::Subagent {
            label,
            prompt,
            result,
            ..
        } => {
            let state = match status {
                ToolStatus::Running => "running",
                ToolStatus::Ok => "done",
                ToolStatus::Error => "failed",
            };
            lines.push(header("Subagent", format!("{} ({state})", sanitize(label))));
            lines.push(Line::styled(
                format!("  │ {}", first_line(prompt)),
                theme::dim(),
            ));
            lines.extend(body(result, Style::default(), Keep::Head(6)));
        }
        ToolView::Generic { result } => {
            let arguments = first_line(arguments);
            let cut: String = arguments.chars().take(80).collect();
            lines.push(header(name, cut));
            lines.extend(body(result, Style::default(), Keep::Head(6)));
        }
    }
    if let Some(error) = error
        && status == ToolStatus::Error
    {
        lines.push(Line::styled(
            format!("  └ {}", first_line(error)),
            theme::error(),
        ));
    }
    lines
}

fn turn_end(
    reason: &TurnEndReason,
    stats: Option<&dsh_client_protocol::TurnStats>,
) -> Vec<Line<'static>> {
    let (text, style) = match reason {
        TurnEndReason::Completed => {
            let Some(stats) = stats else {
                return Vec::new();
            };
            let mut text = format!("─ {:.1}s", stats.duration_ms as f64 / 1000.0);
            if let Some(speed) = stats.tokens_per_second {
                text.push_str(&format!(" · {speed:.0} tok/s"));
            }
            (text, theme::dim())
        }
        TurnEndReason::Aborted { .. } => ("■ Cancelled".to_owned(), theme::warn()),
        TurnEndReason::Blocked { reason } => (
            format!(
                "■ Blocked{}",
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            theme::warn(),
        ),
        TurnEndReason::Error { error } => (
            format!(
                "■ Error {}: {}",
                error.code.as_str(),
                first_line(&error.message)
            ),
            theme::error(),
        ),
        TurnEndReason::MaxTokens => ("■ The answer hit the output cap".to_owned(), theme::warn()),
        TurnEndReason::Interrupted => {
            ("■ Interrupted (the host stopped)".to_owned(), theme::warn())
        }
        TurnEndReason::Other(value) => (format!("■ Ended: {value}"), theme::dim()),
    };
    vec![Line::default(), Line::styled(text, style)]
}

fn approval(
    tool: &str,
    outcome: Option<ApprovalOutcome>,
    scope: Option<ApprovalScope>,
    reason: Option<&str>,
) -> Vec<Line<'static>> {
    let (text, style) = match outcome {
        None => (
            format!(
                "? {tool} waits for your approval{}",
                reason.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            theme::warn(),
        ),
        Some(ApprovalOutcome::AllowedOnce) => {
            let reach = match scope {
                Some(ApprovalScope::Session) => " for this session",
                Some(ApprovalScope::Always) => " always",
                _ => " once",
            };
            (format!("✔ Allowed {tool}{reach}"), theme::ok())
        }
        Some(ApprovalOutcome::Rejected) => (format!("✗ Rejected {tool}"), theme::error()),
        Some(ApprovalOutcome::Cancelled) => {
            (format!("✗ Approval of {tool} cancelled"), theme::dim())
        }
        Some(ApprovalOutcome::Unavailable) => (
            format!("✗ {tool} refused: no one could be asked"),
            theme::dim(),
        ),
    };
    vec![Line::default(), Line::styled(text, style)]
}

/// Whether `item` can change no more (it may go to the scrollback).
pub(crate) fn settled(item: &ChatItem) -> bool {
    match item {
        ChatItem::Assistant { streaming, .. } => !streaming,
        ChatItem::Tool { status, .. } => *status != ToolStatus::Running,
        ChatItem::Approval { outcome, .. } => outcome.is_some(),
        ChatItem::Question { outcome, .. } => outcome.is_some(),
        _ => true,
    }
}

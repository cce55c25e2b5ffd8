//! The approval modal: a call the policy put to a person, with what it would do (the command,
//! the diff) and the answers: allow once, allow this exact call for the rest of the session,
//! allow always (a rule in the user's settings), reject. Keys: the arrows and Enter, or
//! `y` / `s` / `a` / `n`; Esc rejects. The answer goes out as `approval.respond`; the first
//! answer of any client wins, so a page or a second terminal may answer it first. A plan
//! review (`exit_plan_mode`) shows the plan and its own answers instead (`plan_review`).

use dsh_client_protocol::ChatItem;
use dsh_protocol::{ApprovalOutcome, ApprovalScope};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::cells::{self, CellOptions};
use crate::plan_review::PlanReview;
use crate::theme;

/// The answers, in the order shown.
pub(crate) const CHOICES: [(char, &str, ApprovalOutcome, Option<ApprovalScope>); 4] = [
    ('y', "Allow once", ApprovalOutcome::AllowedOnce, None),
    (
        's',
        "Allow this call for the session",
        ApprovalOutcome::AllowedOnce,
        Some(ApprovalScope::Session),
    ),
    (
        'a',
        "Always allow (a rule in your settings)",
        ApprovalOutcome::AllowedOnce,
        Some(ApprovalScope::Always),
    ),
    ('n', "Reject", ApprovalOutcome::Rejected, None),
];

/// How many lines of the call's card the modal shows.
const CARD_LINES: usize = 10;

#[derive(Debug, Clone)]
pub(crate) struct ApprovalModal {
    pub(crate) approval_id: String,
    tool: String,
    reason: Option<String>,
    /// The call's card (its command, its diff), when the call is known.
    card: Vec<Line<'static>>,
    pub(crate) selected: usize,
    /// The plan and its review, when the ask is a plan review.
    pub(crate) plan: Option<PlanReview>,
}

impl ApprovalModal {
    /// The modal for `approval`, showing the card of `call` when there is one.
    pub(crate) fn new(approval: &ChatItem, call: Option<&ChatItem>) -> Option<Self> {
        let ChatItem::Approval {
            id,
            tool_name,
            reason,
            outcome: None,
            ..
        } = approval
        else {
            return None;
        };
        let card = call
            .map(|call| {
                cells::render(call, CellOptions::default())
                    .into_iter()
                    .skip(1)
                    .take(CARD_LINES)
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            approval_id: id.clone(),
            tool: tool_name.clone(),
            reason: reason.clone(),
            card,
            selected: 0,
            plan: PlanReview::of(tool_name, reason.as_deref()),
        })
    }

    /// The answer a key picks: a letter directly, Enter the selected one.
    pub(crate) fn answer_for(&self, key: char) -> Option<(ApprovalOutcome, Option<ApprovalScope>)> {
        CHOICES
            .iter()
            .find(|(letter, ..)| *letter == key)
            .map(|(_, _, outcome, scope)| (*outcome, *scope))
    }

    pub(crate) fn selected_answer(&self) -> (ApprovalOutcome, Option<ApprovalScope>) {
        let (_, _, outcome, scope) = CHOICES[self.selected.min(CHOICES.len() - 1)];
        (outcome, scope)
    }

    pub(crate) fn step(&mut self, down: bool) {
        let count = CHOICES.len();
        self.selected = if down {
            (self.selected + 1) % count
        } else {
            (self.selected + count - 1) % count
        };
    }

    fn body(&self, width: u16) -> Vec<Line<'static>> {
        if let Some(plan) = &self.plan {
            return crate::wrap::wrap_all(&plan.body(), width.saturating_sub(3).max(1));
        }
        let mut lines = Vec::new();
        if let Some(reason) = &self.reason {
            lines.push(Line::styled(crate::wrap::sanitize(reason), theme::dim()));
        }
        lines.extend(self.card.iter().cloned());
        lines.push(Line::default());
        for (index, (letter, label, ..)) in CHOICES.iter().enumerate() {
            let style = if index == self.selected {
                theme::selected()
            } else {
                ratatui::style::Style::default()
            };
            lines.push(Line::from(vec![
                Span::styled(format!(" {letter} "), theme::accent().patch(theme::bold())),
                Span::styled(format!(" {label} "), style),
            ]));
        }
        // A border each side and a column of padding on the left.
        crate::wrap::wrap_all(&lines, width.saturating_sub(3).max(1))
    }

    /// Rows the modal takes at `width` (its border included).
    pub(crate) fn height(&self, width: u16) -> u16 {
        self.body(width).len() as u16 + 2
    }

    pub(crate) fn render(&self, area: Rect, buf: &mut Buffer) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme::warn())
            .title(Line::from(vec![Span::styled(
                match self.plan {
                    Some(_) => " Review the plan ".to_owned(),
                    None => format!(" Allow {}? ", self.tool),
                },
                theme::bold(),
            )]));
        let inner = block.inner(area);
        block.render(area, buf);
        for (row, line) in self.body(area.width).iter().enumerate() {
            let y = inner.y + row as u16;
            if y >= inner.bottom() {
                break;
            }
            buf.set_line(inner.x + 1, y, line, inner.width.saturating_sub(1));
        }
    }
}

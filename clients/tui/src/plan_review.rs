//! The plan review inside the approval modal: when the ask is `exit_plan_mode`'s (plan mode,
//! see `plugins/plan-mode`), the modal shows the plan itself and the review's two answers
//! instead of the call's: approve (`y`; plan mode ends and the agent carries the plan out) or
//! keep planning (`n`, then a note typed for the model; Enter sends it, an empty note sends
//! none, Esc goes back to the choices). The answer goes out as `approval.respond` with the
//! note, like the page's card.

use crossterm::event::{KeyCode, KeyEvent};
use dsh_protocol::ApprovalOutcome;
use ratatui::text::{Line, Span};

use crate::theme;

/// The tool whose approvals are plan reviews.
const TOOL: &str = "exit_plan_mode";

/// Lines of the plan shown at most (the rest is summed up).
const PLAN_LINES: usize = 30;

#[derive(Debug, Clone, Default)]
pub(crate) struct PlanReview {
    plan: Vec<String>,
    /// 0: approve, 1: keep planning.
    selected: usize,
    /// The note being written, once "keep planning" was chosen.
    note: Option<String>,
}

impl PlanReview {
    /// The review of an approval of `tool` with `reason` (the plan), when it is one.
    pub(crate) fn of(tool: &str, reason: Option<&str>) -> Option<Self> {
        (tool == TOOL).then(|| Self {
            plan: reason
                .unwrap_or_default()
                .lines()
                .map(crate::wrap::sanitize)
                .collect(),
            ..Self::default()
        })
    }

    /// What a key does: `Some` is the answer to send (outcome and note).
    pub(crate) fn key(&mut self, key: KeyEvent) -> Option<(ApprovalOutcome, Option<String>)> {
        if let Some(note) = &mut self.note {
            match key.code {
                KeyCode::Enter => {
                    let note = note.trim().to_owned();
                    return Some((
                        ApprovalOutcome::Rejected,
                        (!note.is_empty()).then_some(note),
                    ));
                }
                KeyCode::Esc => self.note = None,
                KeyCode::Backspace => {
                    note.pop();
                }
                KeyCode::Char(c) => note.push(c),
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => Some((ApprovalOutcome::AllowedOnce, None)),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                self.note = Some(String::new());
                None
            }
            KeyCode::Up | KeyCode::Down | KeyCode::Tab => {
                self.selected = 1 - self.selected.min(1);
                None
            }
            KeyCode::Enter if self.selected == 0 => Some((ApprovalOutcome::AllowedOnce, None)),
            KeyCode::Enter => {
                self.note = Some(String::new());
                None
            }
            _ => None,
        }
    }

    /// The modal's lines: the plan, then the choices or the note being written.
    pub(crate) fn body(&self) -> Vec<Line<'static>> {
        let mut lines: Vec<Line<'static>> = self
            .plan
            .iter()
            .take(PLAN_LINES)
            .map(|line| match line.starts_with('#') {
                true => Line::styled(line.clone(), theme::bold()),
                false => Line::raw(line.clone()),
            })
            .collect();
        if self.plan.len() > PLAN_LINES {
            lines.push(Line::styled(
                format!("… {} more lines", self.plan.len() - PLAN_LINES),
                theme::dim(),
            ));
        }
        lines.push(Line::default());
        if let Some(note) = &self.note {
            lines.push(Line::styled(
                "A note for the agent (Enter sends, Esc goes back):",
                theme::dim(),
            ));
            lines.push(Line::from(vec![
                Span::styled(" > ", theme::accent()),
                Span::raw(note.clone()),
                Span::styled("▏", theme::accent()),
            ]));
            return lines;
        }
        let choices = [
            ('y', "Approve: leave plan mode and carry the plan out"),
            ('n', "Keep planning (with a note)"),
        ];
        for (index, (letter, label)) in choices.iter().enumerate() {
            let style = match index == self.selected {
                true => theme::selected(),
                false => ratatui::style::Style::default(),
            };
            lines.push(Line::from(vec![
                Span::styled(format!(" {letter} "), theme::accent().patch(theme::bold())),
                Span::styled(format!(" {label} "), style),
            ]));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn press(review: &mut PlanReview, code: KeyCode) -> Option<(ApprovalOutcome, Option<String>)> {
        review.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn only_the_plan_tool_is_reviewed_and_y_approves() {
        assert!(PlanReview::of("bash", Some("# x")).is_none());
        let mut review = PlanReview::of(TOOL, Some("# Add a flag\n1. Parse it.")).unwrap();
        let text: Vec<String> = review.body().iter().map(|line| line.to_string()).collect();
        assert_eq!(text[0], "# Add a flag");
        assert!(text.iter().any(|line| line.contains("Keep planning")));
        assert_eq!(
            press(&mut review, KeyCode::Char('y')),
            Some((ApprovalOutcome::AllowedOnce, None))
        );
    }

    #[test]
    fn keep_planning_sends_the_note_typed() {
        let mut review = PlanReview::of(TOOL, Some("# Plan")).unwrap();
        assert_eq!(press(&mut review, KeyCode::Char('n')), None);
        for c in "add testss".chars() {
            press(&mut review, KeyCode::Char(c));
        }
        press(&mut review, KeyCode::Backspace);
        assert!(
            review
                .body()
                .iter()
                .any(|line| line.to_string().contains("add tests"))
        );
        assert_eq!(
            press(&mut review, KeyCode::Enter),
            Some((ApprovalOutcome::Rejected, Some("add tests".to_owned())))
        );
        let mut quiet = PlanReview::of(TOOL, Some("# Plan")).unwrap();
        press(&mut quiet, KeyCode::Down);
        press(&mut quiet, KeyCode::Enter);
        assert_eq!(
            press(&mut quiet, KeyCode::Enter),
            Some((ApprovalOutcome::Rejected, None))
        );
    }
}

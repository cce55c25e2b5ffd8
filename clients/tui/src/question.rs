//! The question modal: the questions a model put to a person (`ask_user_question`), one after
//! the other. A question with choices is answered with the arrows and Enter (Space picks more
//! than one where the question allows it); one without is answered by typing. Esc declines
//! the whole ask. The answers go out together as `question.respond`.

use crossterm::event::{KeyCode, KeyEvent};
use dsh_client_protocol::ChatItem;
use dsh_protocol::{QuestionAnswer, QuestionResponse, UserQuestion};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::theme;

#[derive(Debug, Clone)]
pub(crate) struct QuestionModal {
    pub(crate) question_id: String,
    questions: Vec<UserQuestion>,
    at: usize,
    selected: usize,
    picked: Vec<bool>,
    text: String,
    answers: Vec<QuestionAnswer>,
}

impl QuestionModal {
    pub(crate) fn new(item: &ChatItem) -> Option<Self> {
        let ChatItem::Question {
            id,
            questions,
            outcome: None,
            ..
        } = item
        else {
            return None;
        };
        let mut modal = Self {
            question_id: id.clone(),
            questions: questions.clone(),
            at: 0,
            selected: 0,
            picked: Vec::new(),
            text: String::new(),
            answers: Vec::new(),
        };
        modal.reset_current();
        Some(modal)
    }

    fn current(&self) -> Option<&UserQuestion> {
        self.questions.get(self.at)
    }

    fn reset_current(&mut self) {
        self.selected = 0;
        self.text.clear();
        self.picked = vec![false; self.current().map_or(0, |q| q.options.len())];
    }

    /// Handles a key; answers the response once the last question is answered or the ask is
    /// declined.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Option<QuestionResponse> {
        let question = self.current()?.clone();
        match key.code {
            KeyCode::Esc => {
                return Some(QuestionResponse {
                    question_id: self.question_id.clone(),
                    answers: Vec::new(),
                    cancelled: true,
                });
            }
            KeyCode::Up if !question.options.is_empty() => {
                self.selected =
                    (self.selected + question.options.len() - 1) % question.options.len();
            }
            KeyCode::Down if !question.options.is_empty() => {
                self.selected = (self.selected + 1) % question.options.len();
            }
            KeyCode::Char(' ') if question.multi_select => {
                if let Some(picked) = self.picked.get_mut(self.selected) {
                    *picked = !*picked;
                }
            }
            KeyCode::Enter => {
                let answer = if question.options.is_empty() {
                    QuestionAnswer {
                        id: question.id.clone(),
                        selected: Vec::new(),
                        text: Some(self.text.clone()),
                    }
                } else {
                    let mut selected: Vec<String> = question
                        .options
                        .iter()
                        .zip(&self.picked)
                        .filter(|(_, picked)| **picked)
                        .map(|(option, _)| option.label.clone())
                        .collect();
                    if selected.is_empty()
                        && let Some(option) = question.options.get(self.selected)
                    {
                        selected.push(option.label.clone());
                    }
                    QuestionAnswer {
                        id: question.id.clone(),
                        selected,
                        text: None,
                    }
                };
                self.answers.push(answer);
                self.at += 1;
                if self.at >= self.questions.len() {
                    return Some(QuestionResponse {
                        question_id: self.question_id.clone(),
                        answers: std::mem::take(&mut self.answers),
                        cancelled: false,
                    });
                }
                self.reset_current();
            }
            KeyCode::Backspace if question.options.is_empty() => {
                self.text.pop();
            }
            KeyCode::Char(c) if question.options.is_empty() => self.text.push(c),
            _ => {}
        }
        None
    }

    fn body(&self, width: u16) -> Vec<Line<'static>> {
        let Some(question) = self.current() else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        if let Some(header) = &question.header {
            lines.push(Line::styled(crate::wrap::sanitize(header), theme::dim()));
        }
        lines.push(Line::styled(
            crate::wrap::sanitize(&question.question),
            theme::bold(),
        ));
        if question.options.is_empty() {
            lines.push(Line::from(vec![
                Span::styled("› ", theme::accent()),
                Span::raw(self.text.clone()),
            ]));
        }
        for (index, option) in question.options.iter().enumerate() {
            let mark = match (question.multi_select, self.picked.get(index).copied()) {
                (true, Some(true)) => "[x] ",
                (true, _) => "[ ] ",
                _ => "",
            };
            let style = if index == self.selected {
                theme::selected()
            } else {
                ratatui::style::Style::default()
            };
            let mut spans = vec![Span::styled(format!(" {mark}{} ", option.label), style)];
            if let Some(description) = &option.description {
                spans.push(Span::styled(format!(" {description}"), theme::dim()));
            }
            lines.push(Line::from(spans));
        }
        // A border each side and a column of padding on the left.
        crate::wrap::wrap_all(&lines, width.saturating_sub(3).max(1))
    }

    pub(crate) fn height(&self, width: u16) -> u16 {
        self.body(width).len() as u16 + 2
    }

    pub(crate) fn render(&self, area: Rect, buf: &mut Buffer) {
        let title = format!(
            " Question {}/{} · Enter answers · Esc declines ",
            (self.at + 1).min(self.questions.len()),
            self.questions.len()
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme::accent())
            .title(Line::styled(title, theme::bold()));
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

//! The pickers of the bottom pane: the commands after `/`, the files after `@`, the sessions,
//! the models and the permission presets. One list widget with fuzzy matching (the letters of
//! the query in order, closer together and at word starts first), a selection moved with the
//! arrows, and at most [`ROWS`] rows shown around it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::theme;

/// Rows a picker shows at most.
pub(crate) const ROWS: usize = 8;

/// What the picker picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PickerKind {
    /// Completes the word after `/` in the composer.
    Commands,
    /// Completes the word after `@` in the composer.
    Files,
    /// Its own query; Enter opens, Ctrl-F forks, Ctrl-X deletes.
    Sessions,
    Models,
    Presets,
    /// The session's background jobs; Enter stops the chosen one.
    Jobs,
}

impl PickerKind {
    fn title(self) -> &'static str {
        match self {
            Self::Commands => "commands",
            Self::Files => "files",
            Self::Sessions => "sessions",
            Self::Models => "model",
            Self::Presets => "permission preset",
            Self::Jobs => "background jobs",
        }
    }

    /// The keys, after the title and the query (cut first on a narrow screen).
    fn keys(self) -> &'static str {
        match self {
            Self::Commands => "Enter runs · Tab completes",
            Self::Files => "Tab adds",
            Self::Sessions => "Enter open · Ctrl-F fork · Ctrl-X delete · Esc",
            Self::Models | Self::Presets => "Enter choose · Esc",
            Self::Jobs => "Enter stops · Esc",
        }
    }

    /// Whether typing goes to the picker's own query (not the composer).
    pub(crate) fn owns_input(self) -> bool {
        matches!(
            self,
            Self::Sessions | Self::Models | Self::Presets | Self::Jobs
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PickItem {
    pub(crate) label: String,
    pub(crate) detail: String,
    /// What choosing it yields (a command's name, a path, a session id, a route).
    pub(crate) value: String,
}

#[derive(Debug)]
pub(crate) struct Picker {
    pub(crate) kind: PickerKind,
    items: Vec<PickItem>,
    pub(crate) query: String,
    selected: usize,
}

/// How well `query` matches `text`: none when its letters are not all there in order.
pub(crate) fn fuzzy_score(query: &str, text: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(0);
    }
    let text: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    let mut score = 0i64;
    let mut at = 0usize;
    let mut previous: Option<usize> = None;
    for wanted in query.chars().flat_map(char::to_lowercase) {
        let found = (at..text.len()).find(|&index| text[index] == wanted)?;
        score += 10;
        if previous.is_some_and(|p| p + 1 == found) {
            score += 15;
        }
        if found == 0 || !text[found - 1].is_alphanumeric() {
            score += 10;
        }
        score -= (found - at) as i64;
        previous = Some(found);
        at = found + 1;
    }
    // Shorter texts first among equals.
    Some(score * 100 - text.len() as i64)
}

impl Picker {
    pub(crate) fn new(kind: PickerKind, items: Vec<PickItem>) -> Self {
        Self {
            kind,
            items,
            query: String::new(),
            selected: 0,
        }
    }

    /// The items, once they came (the picker opens at once, so what is typed meanwhile is
    /// its query).
    pub(crate) fn set_items(&mut self, items: Vec<PickItem>) {
        self.items = items;
        self.selected = 0;
    }

    /// Sets the query (the composer's word, or the picker's own), keeping the selection
    /// in range.
    pub(crate) fn set_query(&mut self, query: &str) {
        if self.query != query {
            self.query = query.to_owned();
            self.selected = 0;
        }
    }

    /// The items that match, best first.
    pub(crate) fn visible(&self) -> Vec<&PickItem> {
        let mut scored: Vec<(i64, usize, &PickItem)> = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(order, item)| {
                let score = fuzzy_score(&self.query, &item.label)
                    .or_else(|| fuzzy_score(&self.query, &item.detail).map(|s| s - 10_000))?;
                Some((score, order, item))
            })
            .collect();
        if !self.query.is_empty() {
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        scored.into_iter().map(|(_, _, item)| item).collect()
    }

    pub(crate) fn step(&mut self, down: bool) {
        let count = self.visible().len();
        if count == 0 {
            return;
        }
        self.selected = if down {
            (self.selected + 1) % count
        } else {
            (self.selected + count - 1) % count
        };
    }

    pub(crate) fn chosen(&self) -> Option<PickItem> {
        self.visible()
            .get(self.selected)
            .map(|item| (*item).clone())
    }

    /// Rows the picker takes: its title and its rows (one saying none match when none do).
    pub(crate) fn height(&self) -> u16 {
        (self.visible().len().clamp(1, ROWS) + 1) as u16
    }

    pub(crate) fn render(&self, area: Rect, buf: &mut Buffer) {
        let visible = self.visible();
        let mut title = vec![Span::styled(
            format!("─ {} ", self.kind.title()),
            theme::dim(),
        )];
        if self.kind.owns_input() {
            title.push(Span::styled(format!("› {} ", self.query), theme::bold()));
        }
        title.push(Span::styled(format!(" {}", self.kind.keys()), theme::dim()));
        buf.set_line(area.x, area.y, &Line::from(title), area.width);
        if visible.is_empty() {
            let line = Line::styled("  (nothing matches)", theme::dim());
            buf.set_line(area.x, area.y + 1, &line, area.width);
            return;
        }
        let first = self.selected.saturating_sub(ROWS - 1);
        for (row, (index, item)) in visible
            .iter()
            .enumerate()
            .skip(first)
            .take(ROWS)
            .enumerate()
        {
            let y = area.y + 1 + row as u16;
            if y >= area.bottom() {
                break;
            }
            let style = if index == self.selected {
                theme::selected()
            } else {
                ratatui::style::Style::default()
            };
            let line = Line::from(vec![
                Span::styled(format!("  {}", item.label), style.patch(theme::bold())),
                Span::styled(format!("  {}", item.detail), theme::dim()),
            ]);
            buf.set_line(area.x, y, &line, area.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(label: &str) -> PickItem {
        PickItem {
            label: label.into(),
            detail: String::new(),
            value: label.into(),
        }
    }

    #[test]
    fn fuzzy_matching_prefers_starts_and_runs() {
        assert!(fuzzy_score("cmp", "compact").is_some());
        assert!(fuzzy_score("xyz", "compact").is_none());
        let mut picker = Picker::new(
            PickerKind::Commands,
            vec![
                item("permission"),
                item("compact"),
                item("model"),
                item("help"),
            ],
        );
        picker.set_query("m");
        let names: Vec<&str> = picker.visible().iter().map(|i| i.label.as_str()).collect();
        assert_eq!(names, ["model", "compact", "permission"]);
        picker.set_query("co");
        assert_eq!(picker.chosen().unwrap().label, "compact");
        picker.step(true);
        assert_eq!(
            picker.chosen().unwrap().label,
            "compact",
            "one match: the step wraps to it"
        );
    }
}

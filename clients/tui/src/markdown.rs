//! Markdown as terminal lines: headings, emphasis, inline code, fenced and indented code,
//! lists (nested, ordered or not), block quotes, rules and links, through pulldown-cmark.
//! Every source line break is a line break here (a soft break too): an answer streams line by
//! line, and a line once rendered must not change when more text arrives, so the lines of a
//! finished source line can go to the scrollback while the answer still streams.
//! Lines come out unwrapped; [`crate::wrap`] cuts them to the screen.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::theme;

/// What a line's start carries for the blocks it sits in.
enum Container {
    Quote,
    /// A list item: its marker on its first line, as many spaces on the next ones.
    Item {
        marker: String,
        first: bool,
    },
}

#[derive(Default)]
struct Builder {
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Each open list: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// Inside a code block: its language and its text so far (drawn at its end, at once,
    /// so it can be highlighted as a whole).
    code: Option<(String, String)>,
    link: Option<String>,
    /// A blank line goes before the next block.
    gap: bool,
}

impl Builder {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, style| acc.patch(*style))
    }

    fn push_text(&mut self, text: &str) {
        let style = self.style();
        self.spans
            .push(Span::styled(crate::wrap::sanitize(text), style));
    }

    fn prefix(&mut self) -> Vec<Span<'static>> {
        let mut prefix = Vec::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => prefix.push(Span::styled("│ ", theme::dim())),
                Container::Item { marker, first } => {
                    if *first {
                        prefix.push(Span::styled(marker.clone(), theme::accent()));
                        *first = false;
                    } else {
                        prefix.push(Span::raw(" ".repeat(marker.chars().count())));
                    }
                }
            }
        }
        prefix
    }

    /// Ends the line being built (even an empty one).
    fn flush(&mut self) {
        let mut spans = self.prefix();
        spans.append(&mut self.spans);
        self.lines.push(Line::from(spans));
    }

    /// Ends the line being built if it holds anything.
    fn flush_open(&mut self) {
        if !self.spans.is_empty() {
            self.flush();
        }
    }

    fn start_block(&mut self) {
        self.flush_open();
        if self.gap && !self.lines.is_empty() {
            // The blank line keeps the quote bar (inside a quote) but no list marker.
            let spans: Vec<Span<'static>> = self
                .containers
                .iter()
                .filter(|c| matches!(c, Container::Quote))
                .map(|_| Span::styled("│", theme::dim()))
                .collect();
            self.lines.push(Line::from(spans));
        }
        self.gap = false;
    }

    /// A code block's lines, indented, highlighted where its language is known.
    fn code_lines(&mut self, language: &str, text: &str) {
        match crate::highlight::highlight(language, text) {
            Some(lines) => {
                for spans in lines {
                    self.spans.push(Span::raw("  "));
                    self.spans.extend(spans);
                    self.flush();
                }
            }
            None => {
                let style = self.style().patch(theme::fg(Color::Yellow));
                for line in text.lines() {
                    self.spans.push(Span::raw("  "));
                    self.spans
                        .push(Span::styled(crate::wrap::sanitize(line), style));
                    self.flush();
                }
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    HeadingLevel::H3 => "### ",
                    _ => "#### ",
                };
                self.styles
                    .push(theme::bold().add_modifier(Modifier::UNDERLINED));
                self.spans.push(Span::styled(hashes, theme::bold()));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
                self.styles.push(theme::italic());
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let mut language = String::new();
                if let CodeBlockKind::Fenced(lang) = kind
                    && !lang.is_empty()
                {
                    self.spans
                        .push(Span::styled(format!("```{lang}"), theme::dim()));
                    self.flush();
                    // `rust,ignore`, `python title=x`: the first word names the language.
                    language = lang
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                }
                self.code = Some((language, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush_open();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_open();
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    first: true,
                });
                // Paragraphs of a loose list item start without a gap.
                self.gap = false;
            }
            Tag::Emphasis => self.styles.push(theme::italic()),
            Tag::Strong => self.styles.push(theme::bold()),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.styles
                    .push(theme::accent().add_modifier(Modifier::UNDERLINED));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush_open();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush_open();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_open();
                self.styles.pop();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                self.flush_open();
                if let Some((language, text)) = self.code.take() {
                    self.code_lines(&language, &text);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush_open();
                self.lists.pop();
                self.gap = true;
            }
            TagEnd::Item => {
                self.flush_open();
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.spans
                        .push(Span::styled(format!(" ({url})"), theme::dim()));
                }
            }
            _ => {}
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code.is_some() => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                }
            }
            Event::Text(text) => self.push_text(&text),
            Event::Code(code) => {
                let style = self.style().patch(theme::accent());
                self.spans
                    .push(Span::styled(crate::wrap::sanitize(&code), style));
            }
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.start_block();
                self.spans.push(Span::styled("───", theme::dim()));
                self.flush();
                self.gap = true;
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for (index, piece) in html.split('\n').enumerate() {
                    if index > 0 {
                        self.flush();
                    }
                    self.push_text(piece);
                }
            }
            Event::TaskListMarker(done) => {
                self.spans
                    .push(Span::raw(if done { "[x] " } else { "[ ] " }));
            }
            _ => {}
        }
    }
}

/// `source` rendered as lines.
pub(crate) fn render(source: &str) -> Vec<Line<'static>> {
    let mut builder = Builder::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        builder.event(event);
    }
    builder.flush_open();
    builder.lines
}

/// The part of a streaming `text` whose lines are final: up to its last newline, and before a
/// code block still open (its lines go out together once it closes, highlighted).
pub(crate) fn settled(text: &str) -> &str {
    let complete = text.rfind('\n').map_or("", |at| &text[..=at]);
    match open_fence(complete) {
        Some(at) => &complete[..at],
        None => complete,
    }
}

/// Where a fenced code block that is not closed starts in `text`.
fn open_fence(text: &str) -> Option<usize> {
    let mut open: Option<(char, usize, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let Some(fence) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~') else {
            continue;
        };
        let run = trimmed.chars().take_while(|c| *c == fence).count();
        if run < 3 {
            continue;
        }
        match open {
            None => open = Some((fence, run, start)),
            Some((kind, length, _))
                if kind == fence && run >= length && trimmed[run..].trim().is_empty() =>
            {
                open = None;
            }
            Some(_) => {}
        }
    }
    open.map(|(_, _, start)| start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(source: &str) -> Vec<String> {
        render(source).iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn blocks_render_with_markers_and_gaps() {
        let source = "# Title\n\nSome *text* with `code`.\nNext line.\n\n- one\n- two\n  1. a\n  2. b\n\n> quoted\n\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            plain(source),
            [
                "# Title",
                "",
                "Some text with code.",
                "Next line.",
                "",
                "• one",
                "• two",
                "  1. a",
                "  2. b",
                "",
                "│ quoted",
                "",
                "```rust",
                "  fn main() {}",
            ]
        );
    }

    #[test]
    fn settled_lines_do_not_change_when_more_text_streams() {
        let full = "First paragraph line\nsecond line\n\n- item one\n- item two\n\nlast words";
        let mut previous: Vec<String> = Vec::new();
        for end in 1..=full.len() {
            let lines = plain(settled(&full[..end]));
            assert!(
                lines.len() >= previous.len() && lines[..previous.len()] == previous[..],
                "{previous:?} then {lines:?}"
            );
            previous = lines;
        }
    }

    #[test]
    fn an_open_code_block_is_not_settled_until_it_closes() {
        let text = "Here:\n\n```rust\nfn main() {\n";
        assert_eq!(settled(text), "Here:\n\n");
        let closed = "Here:\n\n```rust\nfn main() {}\n```\nAfter\n";
        assert_eq!(settled(closed), closed);
        assert_eq!(
            settled("~~~~\n```\nstill open\n"),
            "",
            "a shorter fence closes nothing"
        );
    }

    #[test]
    fn links_show_their_address() {
        assert_eq!(
            plain("see [docs](https://x.test/a)"),
            ["see docs (https://x.test/a)"]
        );
    }
}

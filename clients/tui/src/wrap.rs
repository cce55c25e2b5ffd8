//! Text made safe for a terminal and cut to its width. Tool output and model text may carry
//! escape sequences and control characters that would move the cursor or recolour the screen:
//! [`sanitize`] keeps printable text, newlines and tabs (as spaces). [`wrap`] breaks one
//! styled line into lines no wider than the screen, at spaces where it can, inside a word
//! where a word alone is too wide, counting columns as the terminal does (wide CJK
//! characters take two, combining marks none).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `text` without escape sequences or control characters; tabs become four spaces.
pub(crate) fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of an escape sequence: CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL/ST`), or
/// a two-character one.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Columns `c` takes.
pub(crate) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Columns `text` takes.
pub(crate) fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// Columns `line` takes.
pub(crate) fn line_width(line: &Line<'_>) -> usize {
    line.spans
        .iter()
        .map(|span| text_width(&span.content))
        .sum()
}

type Cells = Vec<(char, Style)>;

/// `line` broken into lines of at most `width` columns (at least one line, maybe empty).
pub(crate) fn wrap(line: &Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    if line_width(line) <= width {
        return vec![line.clone()];
    }
    let cells: Cells = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            span.content.chars().map(move |c| (c, style))
        })
        .collect();
    let mut out = Vec::new();
    let mut current: Cells = Vec::new();
    let mut used = 0;
    let mut at = 0;
    while at < cells.len() {
        let start = at;
        while at < cells.len() && cells[at].0 != ' ' {
            at += 1;
        }
        let word = &cells[start..at];
        let word_width: usize = word.iter().map(|(c, _)| char_width(*c)).sum();
        if used > 0 && used + word_width > width {
            out.push(finish(&mut current));
            used = 0;
        }
        if word_width > width {
            for &(c, style) in word {
                let w = char_width(c);
                if used + w > width && used > 0 {
                    out.push(finish(&mut current));
                    used = 0;
                }
                current.push((c, style));
                used += w;
            }
        } else {
            current.extend_from_slice(word);
            used += word_width;
        }
        while at < cells.len() && cells[at].0 == ' ' {
            // Spaces that would pass the edge are where the line breaks: dropped.
            if used < width {
                current.push(cells[at]);
                used += 1;
            }
            at += 1;
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(finish(&mut current));
    }
    out
}

/// Every line of `lines` wrapped to `width`.
pub(crate) fn wrap_all(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|line| wrap(line, width)).collect()
}

/// The cells taken as a line of spans (runs of one style), trailing spaces dropped.
fn finish(cells: &mut Cells) -> Line<'static> {
    while cells.last().is_some_and(|(c, _)| *c == ' ') {
        cells.pop();
    }
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, cell_style) in cells.drain(..) {
        if style.is_some_and(|current| current != cell_style) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(cell_style);
        text.push(c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_break() {
        let line = Line::from("the quick brown fox jumps");
        assert_eq!(texts(&wrap(&line, 10)), ["the quick", "brown fox", "jumps"]);
        let long = Line::from("abcdefghijkl xy");
        assert_eq!(texts(&wrap(&long, 5)), ["abcde", "fghij", "kl xy"]);
        assert_eq!(texts(&wrap(&Line::from(""), 5)), [""]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let line = Line::from("日本語のテキスト");
        let wrapped = wrap(&line, 6);
        assert_eq!(texts(&wrapped), ["日本語", "のテキ", "スト"]);
        assert!(wrapped.iter().all(|line| line_width(line) <= 6));
    }

    #[test]
    fn styles_survive_a_break() {
        let line = Line::from(vec![
            Span::raw("plain "),
            Span::styled("bold words here", crate::theme::bold()),
        ]);
        let wrapped = wrap(&line, 11);
        assert_eq!(texts(&wrapped), ["plain bold", "words here"]);
        assert_eq!(wrapped[1].spans[0].style, crate::theme::bold());
    }

    #[test]
    fn escapes_and_controls_are_taken_out() {
        assert_eq!(
            sanitize("\u{1b}[31mred\u{1b}[0m\tx\r\n\u{7}\u{1b}]0;title\u{7}ok"),
            "red    x\nok"
        );
    }
}

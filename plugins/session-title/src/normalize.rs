//! Title text: terminal-safe, one line, within a word and a UTF-8 byte budget.

/// Drops escape sequences (OSC, CSI, two-byte ESC), control characters other than whitespace,
/// and the invisible or directional characters that can make a displayed title deceptive;
/// then collapses whitespace to single spaces and trims.
pub(crate) fn clean(input: &str) -> String {
    let mut kept = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // OSC: up to BEL or ESC \ (or the end).
                Some(']') => {
                    chars.next();
                    while let Some(inner) = chars.next() {
                        if inner == '\u{7}' {
                            break;
                        }
                        if inner == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(next) if ('@'..='_').contains(next) => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' => {
                for inner in chars.by_ref() {
                    if inner == '\u{7}' {
                        break;
                    }
                }
            }
            c if c.is_control() && !c.is_whitespace() => {}
            '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}' => {}
            c => kept.push(c),
        }
    }
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&next) = chars.peek() {
        chars.next();
        if ('@'..='~').contains(&next)
            && !('0'..='?').contains(&next)
            && !(' '..='/').contains(&next)
        {
            break;
        }
    }
}

/// The deterministic fallback: the first `max_words` words, within `max_bytes`.
pub(crate) fn fallback(input: &str, max_words: usize, max_bytes: usize) -> String {
    let cleaned = clean(input);
    let words: Vec<&str> = cleaned
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(max_words)
        .collect();
    within(&words.join(" "), max_bytes)
}

/// Any title: cleaned, then within `max_bytes`.
pub(crate) fn bounded(input: &str, max_bytes: usize) -> String {
    within(&clean(input), max_bytes)
}

/// The longest prefix of `text` within `max_bytes` that does not split a character, without
/// trailing whitespace.
fn within(text: &str, max_bytes: usize) -> String {
    text[..text.floor_char_boundary(max_bytes)]
        .trim_end()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_words_within_forty_bytes_as_recorded() {
        assert_eq!(
            fallback(
                "Prove the product headless profile path with one real tool round trip.",
                5,
                40
            ),
            "Prove the product headless profile"
        );
        assert_eq!(
            fallback("Use the read tool (NOT cat) now", 5, 40),
            "Use the read tool (NOT"
        );
        assert_eq!(fallback("short", 5, 40), "short");
    }

    #[test]
    fn the_byte_budget_never_splits_a_character() {
        let title = fallback("éééééééééééééééééééééééééé", 5, 5);
        assert_eq!(title, "éé");
    }

    #[test]
    fn any_title_is_cleaned_then_cut_at_a_character() {
        assert_eq!(
            bounded("  Late\tdurable   session title ", 80),
            "Late durable session title"
        );
        assert_eq!(bounded("会话标题生成测试", 10), "会话标");
        assert_eq!(bounded("ab cd", 3), "ab");
    }

    #[test]
    fn escapes_and_controls_are_dropped_and_whitespace_collapsed() {
        assert_eq!(
            clean("\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}tab\there\u{202e}\n\nnext\u{0}"),
            "red tab here next"
        );
        assert_eq!(clean("   \u{200b}  "), "");
    }
}

//! The title in a model's answer. The model is asked for one plain line, but small models wrap
//! it anyway (quotes, bold, a `Title:` label, a heading mark, a fence, a line of explanation
//! after it); what it wraps the title in is taken off, the rest is cleaned as any title is, and
//! an answer with no letter or digit left is no title at all, so the fallback stays.

use crate::normalize;

/// Pairs a title may come wrapped in, outermost first.
const WRAPPERS: [(&str, &str); 10] = [
    ("**", "**"),
    ("__", "__"),
    ("\"", "\""),
    ("'", "'"),
    ("`", "`"),
    ("*", "*"),
    ("\u{201c}", "\u{201d}"),
    ("\u{2018}", "\u{2019}"),
    ("\u{300c}", "\u{300d}"),
    ("\u{300e}", "\u{300f}"),
];

/// Labels a model may put before the title, compared without case.
const LABELS: [&str; 3] = ["session title:", "title:", "标题："];

/// The title in `answer`, within `max_bytes`; `None` when the answer holds none.
pub(crate) fn title(answer: &str, max_bytes: usize) -> Option<String> {
    // The first line that says something: a fence or an empty line before the title is
    // skipped, an explanation after it is not part of it.
    let line = answer
        .lines()
        .map(normalize::clean)
        .find(|line| has_word(line))?;
    let title = normalize::bounded(unwrap(&line), max_bytes);
    has_word(&title).then_some(title)
}

/// Whether `text` holds a letter or a digit (of any script).
fn has_word(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

/// `line` without a leading heading mark or list bullet, a label, and the pairs it is wrapped
/// in (several layers: `**"Title"**`).
fn unwrap(line: &str) -> &str {
    let mut text = line.trim_start_matches('#').trim();
    if let Some(rest) = text.strip_prefix("- ") {
        text = rest.trim();
    }
    for label in LABELS {
        if let Some(head) = text.get(..label.len())
            && head.eq_ignore_ascii_case(label)
        {
            text = text[label.len()..].trim();
            break;
        }
    }
    loop {
        let inner = WRAPPERS.iter().find_map(|(open, close)| {
            text.strip_prefix(open)?
                .strip_suffix(close)
                .map(str::trim)
                .filter(|inner| !inner.is_empty())
        });
        match inner {
            Some(inner) => text = inner,
            None => return text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_answer_is_the_title() {
        assert_eq!(
            title("Late durable session title", 80).as_deref(),
            Some("Late durable session title")
        );
        assert_eq!(
            title("  修复登录测试  \n", 80).as_deref(),
            Some("修复登录测试")
        );
    }

    #[test]
    fn wrappers_labels_and_marks_are_taken_off() {
        for answer in [
            "\"Fix the flaky login test\"",
            "**Fix the flaky login test**",
            "**\"Fix the flaky login test\"**",
            "Title: Fix the flaky login test",
            "TITLE: \u{201c}Fix the flaky login test\u{201d}",
            "# Fix the flaky login test",
            "- `Fix the flaky login test`",
            "Session title: 'Fix the flaky login test'",
        ] {
            assert_eq!(
                title(answer, 80).as_deref(),
                Some("Fix the flaky login test"),
                "{answer:?}"
            );
        }
        // A quote inside the title stays.
        assert_eq!(
            title("Explain \"borrow\" errors", 80).as_deref(),
            Some("Explain \"borrow\" errors")
        );
    }

    #[test]
    fn only_the_first_line_with_words_counts() {
        assert_eq!(
            title("```\nFix login\n```", 80).as_deref(),
            Some("Fix login")
        );
        assert_eq!(
            title("\n\nFix login\nThis title sums up the request.", 80).as_deref(),
            Some("Fix login")
        );
    }

    #[test]
    fn escapes_are_dropped_and_the_budget_holds() {
        assert_eq!(
            title("\u{1b}[1mFix\u{1b}[0m   the\tbuild\u{202e}", 80).as_deref(),
            Some("Fix the build")
        );
        let long = "word ".repeat(40);
        let cut = title(&long, 80).unwrap();
        assert!(cut.len() <= 80 && !cut.ends_with(' '), "{cut:?}");
        assert_eq!(title("标题生成测试", 7).as_deref(), Some("标题"));
    }

    #[test]
    fn an_answer_without_words_is_no_title() {
        for answer in ["", "   ", "\"\"", "...", "```\n```", "\u{1b}[0m", "**", "—"] {
            assert_eq!(title(answer, 80), None, "{answer:?}");
        }
    }
}

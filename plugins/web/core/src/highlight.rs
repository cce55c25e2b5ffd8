//! A fenced code block as the page shows it: a bar with the language and a Copy button, and
//! the code coloured by syntect's Sublime grammars. Each run of text gets at most one short
//! class naming what it is (`hl-comment`, `hl-string`, `hl-keyword`, ...), chosen from its
//! innermost scope that has one, so the page's stylesheet colours both themes and the HTML
//! stays a little larger than the code (syntect's own classed output nests a span per scope,
//! about fifteen times the code's size).

use std::sync::LazyLock;

use pulldown_cmark_escape::escape_html;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxSet};
use syntect::util::LinesWithEndings;

/// The grammars, loaded on the first highlighted block (tens of milliseconds), not at start.
static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// Scope prefixes and the class a run inside them gets; the first that matches the innermost
/// scope wins, so `punctuation.definition.string` inside `string.quoted` reads as a string.
static CATEGORIES: LazyLock<Vec<(Scope, &'static str)>> = LazyLock::new(|| {
    [
        ("comment", "hl-comment"),
        ("string", "hl-string"),
        ("constant.character", "hl-string"),
        ("constant.numeric", "hl-number"),
        ("constant.language", "hl-constant"),
        ("keyword", "hl-keyword"),
        ("storage", "hl-keyword"),
        ("entity.name.function", "hl-function"),
        ("support.function", "hl-function"),
        ("variable.function", "hl-function"),
        ("entity.name.type", "hl-type"),
        ("entity.name.class", "hl-type"),
        ("entity.name.struct", "hl-type"),
        ("entity.name.enum", "hl-type"),
        ("support.type", "hl-type"),
        ("support.class", "hl-type"),
        ("entity.name.tag", "hl-tag"),
        ("entity.other.attribute-name", "hl-attribute"),
        ("variable.parameter", "hl-parameter"),
        ("markup.heading", "hl-keyword"),
        ("markup.inserted", "hl-inserted"),
        ("markup.deleted", "hl-deleted"),
    ]
    .into_iter()
    .filter_map(|(prefix, class)| Some((Scope::new(prefix).ok()?, class)))
    .collect()
});

/// Longer code is shown uncoloured: the grammars' regexes are not bounded in time, and a page
/// reader gains little from colour in a block that long.
const HIGHLIGHT_LIMIT: usize = 64 * 1024;

/// The class of text under `stack`, if any scope of it has one.
fn class_of(stack: &ScopeStack) -> Option<&'static str> {
    stack.as_slice().iter().rev().find_map(|scope| {
        CATEGORIES
            .iter()
            .find(|(prefix, _)| prefix.is_prefix_of(*scope))
            .map(|(_, class)| *class)
    })
}

/// Appends `text` to `out`, in a span of `class` when it has one.
fn push_run(out: &mut String, class: Option<&str>, text: &str) {
    if text.is_empty() {
        return;
    }
    match class {
        Some(class) => {
            out.push_str("<span class=\"");
            out.push_str(class);
            out.push_str("\">");
            let _ = escape_html(&mut *out, text);
            out.push_str("</span>");
        }
        None => {
            let _ = escape_html(&mut *out, text);
        }
    }
}

/// `code` coloured as `language`, or `None` when no grammar knows the language (or a line
/// defeats the grammar).
fn coloured(language: &str, code: &str) -> Option<String> {
    if language.is_empty() || code.len() > HIGHLIGHT_LIMIT {
        return None;
    }
    let syntax = SYNTAXES.find_syntax_by_token(language)?;
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = String::with_capacity(code.len() * 2);
    // Neighbouring runs of one class are written as one span.
    let mut run = String::new();
    let mut run_class = None;
    for line in LinesWithEndings::from(code) {
        let ops = state.parse_line(line, &SYNTAXES).ok()?;
        let mut at = 0;
        for (offset, op) in ops.iter().chain(std::iter::once(&(
            line.len(),
            syntect::parsing::ScopeStackOp::Noop,
        ))) {
            let piece = &line[at..*offset];
            if !piece.is_empty() {
                let class = class_of(&stack);
                if class != run_class && !piece.trim().is_empty() {
                    push_run(&mut out, run_class, &run);
                    run.clear();
                    run_class = class;
                }
                run.push_str(piece);
            }
            at = *offset;
            stack.apply(op).ok()?;
        }
    }
    push_run(&mut out, run_class, &run);
    Some(out)
}

/// The HTML of one code block.
pub fn code_block(language: &str, code: &str, highlight: bool) -> String {
    let mut out = String::with_capacity(code.len() * 2 + 160);
    out.push_str("<div class=\"code\"");
    let mut label = String::new();
    let _ = escape_html(&mut label, language);
    if !language.is_empty() {
        out.push_str(" data-language=\"");
        out.push_str(&label);
        out.push('"');
    }
    out.push_str("><div class=\"code-bar\"><span class=\"code-language\">");
    out.push_str(&label);
    out.push_str(
        "</span><button type=\"button\" class=\"copy\" title=\"Copy the code\">Copy</button></div><pre><code>",
    );
    match highlight.then(|| coloured(language, code)).flatten() {
        Some(html) => out.push_str(&html),
        None => {
            let _ = escape_html(&mut out, code);
        }
    }
    out.push_str("</code></pre></div>");
    out
}

#[cfg(test)]
mod tests {
    use super::code_block;

    #[test]
    fn an_unknown_language_is_escaped_plain_text() {
        let html = code_block("nosuchlang", "<b>&", true);
        assert!(html.contains("&lt;b&gt;&amp;"), "{html}");
        assert!(!html.contains("hl-"), "{html}");
    }

    #[test]
    fn a_language_label_cannot_inject_markup() {
        let html = code_block("\"><script>", "x", true);
        assert!(!html.contains("<script>"), "{html}");
    }

    #[test]
    fn common_languages_are_coloured() {
        for (language, code) in [
            ("python", "def f():\n    return 'x'\n"),
            ("js", "const a = 1;\n"),
            ("sh", "echo \"hi\"\n"),
            ("json", "{\"a\": 1}\n"),
        ] {
            let html = code_block(language, code, true);
            assert!(html.contains("hl-"), "{language}: {html}");
        }
    }
}

//! Code blocks highlighted with syntect's grammars (the ones the page uses), painted in the
//! terminal's own sixteen colours rather than a theme's fixed ones, so a light and a dark
//! background both read: keywords magenta, strings green, numbers and constants yellow, types
//! cyan, functions blue, comments dim. The grammars load on a thread of their own after the
//! first frame (tens of milliseconds); a block drawn before they are there, or in a language
//! they do not know, is drawn plain. A finished block is highlighted once: its lines are kept
//! (a few dozen blocks), since an answer is drawn again on every frame while it streams.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Mutex, OnceLock, PoisonError};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as Rgba, FontStyle, ScopeSelectors, StyleModifier, Theme, ThemeItem, ThemeSettings,
};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static THEME: OnceLock<Theme> = OnceLock::new();

type Highlighted = Vec<Vec<Span<'static>>>;

/// Highlighted blocks by language and text.
static CACHE: OnceLock<Mutex<HashMap<(String, String), Highlighted>>> = OnceLock::new();
const CACHE_BLOCKS: usize = 64;

/// Loads the grammars in the background.
pub(crate) fn warm() {
    if !crate::theme::colored() {
        return;
    }
    std::thread::spawn(|| {
        SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines);
        THEME.get_or_init(theme);
    });
}

/// An ANSI colour encoded as syntect's: alpha 0 marks a palette index in `r` (bat's trick).
const fn ansi(index: u8) -> Rgba {
    Rgba {
        r: index,
        g: 0,
        b: 0,
        a: 0,
    }
}

/// The terminal's own foreground.
const DEFAULT: Rgba = Rgba {
    r: 0,
    g: 0,
    b: 0,
    a: 1,
};

fn theme() -> Theme {
    let rules: [(&str, Option<Rgba>, Option<FontStyle>); 9] = [
        ("comment", Some(DEFAULT), Some(FontStyle::ITALIC)),
        ("string, constant.character", Some(ansi(2)), None),
        (
            "constant.numeric, constant.language, constant.other",
            Some(ansi(3)),
            None,
        ),
        (
            "keyword, storage.modifier, storage.type.function",
            Some(ansi(5)),
            None,
        ),
        (
            "storage.type, entity.name.type, entity.name.class, support.type, support.class",
            Some(ansi(6)),
            None,
        ),
        (
            "entity.name.function, support.function, meta.function-call",
            Some(ansi(4)),
            None,
        ),
        ("markup.inserted", Some(ansi(2)), None),
        ("markup.deleted", Some(ansi(1)), None),
        ("markup.heading, markup.bold", None, Some(FontStyle::BOLD)),
    ];
    let scopes = rules
        .into_iter()
        .filter_map(|(selector, foreground, font_style)| {
            Some(ThemeItem {
                scope: ScopeSelectors::from_str(selector).ok()?,
                style: StyleModifier {
                    foreground,
                    background: None,
                    font_style,
                },
            })
        })
        .collect();
    Theme {
        name: Some("terminal".to_owned()),
        author: None,
        settings: ThemeSettings {
            foreground: Some(DEFAULT),
            ..ThemeSettings::default()
        },
        scopes,
    }
}

fn style_of(style: syntect::highlighting::Style) -> Style {
    let mut out = Style::new();
    if style.foreground.a == 0 {
        out = out.fg(Color::Indexed(style.foreground.r));
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::DIM | Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    out
}

/// `code`'s lines as styled spans, when colours are on, the grammars are loaded and one knows
/// `lang`.
pub(crate) fn highlight(lang: &str, code: &str) -> Option<Highlighted> {
    if !crate::theme::colored() || lang.is_empty() {
        return None;
    }
    let (syntaxes, theme) = (SYNTAXES.get()?, THEME.get()?);
    let key = (lang.to_owned(), code.to_owned());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(lines) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Some(lines.clone());
    }
    let syntax = syntaxes.find_syntax_by_token(lang)?;
    let mut highlighter = HighlightLines::new(syntax, theme);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(line, syntaxes).ok()?;
        lines.push(
            ranges
                .into_iter()
                .map(|(style, text)| {
                    let text = crate::wrap::sanitize(text.trim_end_matches(['\n', '\r']));
                    Span::styled(text, style_of(style))
                })
                .collect(),
        );
    }
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CACHE_BLOCKS {
        cache.clear();
    }
    cache.insert(key, lines.clone());
    Some(lines)
}

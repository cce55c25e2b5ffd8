//! The scanner under `cargo xtask lint`. It sorts every character of a Rust source into code,
//! literal (strings, raw strings, byte strings, char literals) or comment (line, block, doc),
//! then answers the few questions the lint asks, looking only at code. Lifetimes (`'a`) stay
//! code; a `'` starts a char literal when it closes two characters on or follows a backslash.

mod generics;

use std::ops::RangeInclusive;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Code,
    Literal,
    Comment,
}

/// One scanned file. Lines are numbered from 1, as editors and compilers do.
pub(super) struct Source {
    chars: Vec<char>,
    kinds: Vec<Kind>,
    /// The index of the first character of every line.
    line_starts: Vec<usize>,
}

/// A `fn` item with a body: where it starts, its name and its length in lines (signature line
/// to the line of its closing brace, both included).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Function {
    pub(super) line: usize,
    pub(super) name: String,
    pub(super) length: usize,
}

/// How an item that starts at some point ends.
enum ItemEnd {
    /// A `;` before any body (`fn f();`, `mod tests;`): the line of the `;`.
    Declaration(usize),
    /// The line of the brace that closes the body (the last line if it never closes).
    Body(usize),
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Words after which a `[` opens an array rather than indexing a value.
const KEYWORDS: &[&str] = &[
    "in", "return", "break", "else", "match", "if", "while", "yield",
];

impl Source {
    pub(super) fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let kinds = classify(&chars);
        let mut line_starts = vec![0];
        line_starts.extend(
            chars
                .iter()
                .enumerate()
                .filter(|(_, c)| **c == '\n')
                .map(|(i, _)| i + 1),
        );
        if chars.last() == Some(&'\n') {
            line_starts.pop();
        }
        if chars.is_empty() {
            line_starts.clear();
        }
        Self {
            chars,
            kinds,
            line_starts,
        }
    }

    /// Lines as `str::lines` counts them.
    pub(super) fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The line of the character at `index`.
    pub(super) fn line_of(&self, index: usize) -> usize {
        self.line_starts.partition_point(|start| *start <= index)
    }

    /// The character range of `line` (1-based), newline left out.
    fn line_range(&self, line: usize) -> (usize, usize) {
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .map_or(self.chars.len(), |next| next - 1);
        (start, end)
    }

    fn line_text(&self, line: usize) -> String {
        let (start, end) = self.line_range(line);
        self.chars[start..end].iter().collect()
    }

    fn code(&self, index: usize) -> bool {
        self.kinds.get(index) == Some(&Kind::Code)
    }

    /// Whether `word` is code at `index`, with no identifier character on either side.
    fn word_at(&self, index: usize, word: &str) -> bool {
        let mut end = index;
        for expected in word.chars() {
            if self.chars.get(end) != Some(&expected) || !self.code(end) {
                return false;
            }
            end += 1;
        }
        let before = index.checked_sub(1).map(|i| self.chars[i]);
        !before.is_some_and(is_ident) && !self.chars.get(end).copied().is_some_and(is_ident)
    }

    /// The first index at or after `index` that is not whitespace.
    fn skip_space(&self, mut index: usize) -> usize {
        while self.chars.get(index).is_some_and(|c| c.is_whitespace()) {
            index += 1;
        }
        index
    }

    /// Where the item whose head runs from `index` ends: at a `;` outside brackets before any
    /// `{`, or at the brace that closes the first `{`.
    fn item_end(&self, index: usize) -> ItemEnd {
        let mut brackets = 0usize;
        let mut braces = 0usize;
        for i in index..self.chars.len() {
            if !self.code(i) {
                continue;
            }
            match self.chars[i] {
                '(' | '[' if braces == 0 => brackets += 1,
                ')' | ']' if braces == 0 => brackets = brackets.saturating_sub(1),
                ';' if braces == 0 && brackets == 0 => {
                    return ItemEnd::Declaration(self.line_of(i));
                }
                '{' => braces += 1,
                '}' if braces > 0 => {
                    braces -= 1;
                    if braces == 0 {
                        return ItemEnd::Body(self.line_of(i));
                    }
                }
                _ => {}
            }
        }
        ItemEnd::Body(self.line_count())
    }

    /// Every `fn` item with a body, as matched at the start of its line by
    /// `^\s*(pub(\(crate\)|\(super\))? )?(async )?(unsafe )?(const )?(extern "C" )?fn \w+`.
    pub(super) fn functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        for line in 1..=self.line_count() {
            let text = self.line_text(line);
            let Some((name_end, name)) = fn_head(&text) else {
                continue;
            };
            let (start, _) = self.line_range(line);
            let indent = text.chars().take_while(|c| c.is_whitespace()).count();
            if !self.code(start + indent) {
                continue;
            }
            if let ItemEnd::Body(end) = self.item_end(start + name_end) {
                out.push(Function {
                    line,
                    name,
                    length: end - line + 1,
                });
            }
        }
        out
    }

    /// The lines under `#[cfg(test)]`: each such line marks the item after it (to its closing
    /// brace or `;`), which for the usual trailing `mod tests {` is the rest of the file.
    /// `#![cfg(test)]` makes the whole file test code.
    pub(super) fn test_lines(&self) -> Vec<RangeInclusive<usize>> {
        let mut out = Vec::new();
        for line in 1..=self.line_count() {
            let text = self.line_text(line);
            let trimmed = text.trim_start();
            let (start, _) = self.line_range(line);
            let head = start + (text.chars().count() - trimmed.chars().count());
            if !self.code(head) {
                continue;
            }
            if trimmed.starts_with("#![cfg(test)]") {
                return vec![1..=self.line_count()];
            }
            if let Some(rest) = trimmed.strip_prefix("#[cfg(test)]") {
                let after = head + trimmed.chars().count() - rest.chars().count();
                let end = match self.item_end(after) {
                    ItemEnd::Declaration(end) | ItemEnd::Body(end) => end,
                };
                out.push(line..=end);
            }
        }
        out
    }

    /// The modules declared under `#[cfg(test)]` as `mod NAME;`: their files are test code.
    pub(super) fn test_module_files(&self) -> Vec<String> {
        self.test_lines()
            .into_iter()
            .filter_map(|lines| {
                let text: String = lines.map(|line| self.line_text(line)).collect();
                let rest = text.trim_start().strip_prefix("#[cfg(test)]")?.trim_start();
                let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
                let name = rest.strip_prefix("mod ")?.trim().strip_suffix(';')?.trim();
                name.chars().all(is_ident).then(|| name.to_owned())
            })
            .collect()
    }

    /// The lines of every `json!(` (so also `serde_json::json!(`) in code.
    pub(super) fn json_macros(&self) -> Vec<usize> {
        (0..self.chars.len())
            .filter(|i| self.word_at(*i, "json"))
            .filter(|i| self.chars.get(i + 4) == Some(&'!') && self.code(i + 4))
            .filter(|i| self.chars.get(self.skip_space(i + 5)) == Some(&'('))
            .map(|i| self.line_of(i))
            .collect()
    }

    /// The lines of every index by a string literal that is an identifier, `value["key"]`
    /// (`\[\s*"[A-Za-z_][A-Za-z0-9_]*"\s*\]`), where the `[` follows a value (an identifier
    /// that is not a keyword, `)`, `]` or `?`): arrays such as `&["a"]`, `vec!["a"]` or
    /// `"required": ["a"]` are not lookups.
    pub(super) fn key_lookups(&self) -> Vec<usize> {
        (0..self.chars.len())
            .filter(|i| self.chars[*i] == '[' && self.code(*i))
            .filter(|i| self.indexes_a_value(*i) && self.string_key_closes(*i + 1))
            .map(|i| self.line_of(i))
            .collect()
    }

    fn indexes_a_value(&self, open: usize) -> bool {
        let Some(prev) = (0..open).rev().find(|i| !self.chars[*i].is_whitespace()) else {
            return false;
        };
        if !self.code(prev) {
            return false;
        }
        match self.chars[prev] {
            ')' | ']' | '?' => true,
            c if is_ident(c) => {
                let start = (0..=prev)
                    .rev()
                    .take_while(|i| is_ident(self.chars[*i]))
                    .last()
                    .unwrap_or(prev);
                let word: String = self.chars[start..=prev].iter().collect();
                !KEYWORDS.contains(&word.as_str())
            }
            _ => false,
        }
    }

    /// Whether `"identifier"` and then `]` follow from `index` (whitespace allowed around).
    fn string_key_closes(&self, index: usize) -> bool {
        let mut i = self.skip_space(index);
        if self.chars.get(i) != Some(&'"') || self.code(i) {
            return false;
        }
        i += 1;
        if !self
            .chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
        {
            return false;
        }
        while self
            .chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            i += 1;
        }
        if self.chars.get(i) != Some(&'"') {
            return false;
        }
        let close = self.skip_space(i + 1);
        self.chars.get(close) == Some(&']') && self.code(close)
    }

    /// The index of every `unsafe {` block in code (not `unsafe fn`, `unsafe impl`,
    /// `unsafe extern` or `#[unsafe(..)]`).
    pub(super) fn unsafe_blocks(&self) -> Vec<usize> {
        (0..self.chars.len())
            .filter(|i| self.word_at(*i, "unsafe"))
            .filter(|i| {
                let next = self.skip_space(i + 6);
                self.chars.get(next) == Some(&'{') && self.code(next)
            })
            .collect()
    }

    /// Whether the unsafe block at `index` has a `// SAFETY:` comment on one of the three
    /// lines above it, or on its own line before it.
    pub(super) fn has_safety_comment(&self, index: usize) -> bool {
        let line = self.line_of(index);
        let (own_start, _) = self.line_range(line);
        (line.saturating_sub(3).max(1)..line).any(|above| {
            let (start, end) = self.line_range(above);
            self.safety_comment_in(start, end)
        }) || self.safety_comment_in(own_start, index)
    }

    /// Whether a comment starting in `start..end` begins with `SAFETY:` (after its `//`,
    /// `/*` or doc markers).
    fn safety_comment_in(&self, start: usize, end: usize) -> bool {
        (start..end)
            .filter(|i| self.kinds[*i] == Kind::Comment)
            .filter(|i| *i == start || self.kinds[i - 1] != Kind::Comment)
            .any(|i| {
                let text: String = self.chars[i..].iter().take_while(|c| **c != '\n').collect();
                text.trim_start_matches(['/', '*', '!'])
                    .trim_start()
                    .starts_with("SAFETY:")
            })
    }
}

/// `(index after the name, name)` when `line` opens a `fn` item.
fn fn_head(line: &str) -> Option<(usize, String)> {
    let mut rest = line.trim_start();
    let qualifiers: [&[&str]; 5] = [
        &["pub(crate) ", "pub(super) ", "pub "],
        &["async "],
        &["unsafe "],
        &["const "],
        &["extern \"C\" "],
    ];
    for choices in qualifiers {
        if let Some(found) = choices.iter().find(|prefix| rest.starts_with(**prefix)) {
            rest = &rest[found.len()..];
        }
    }
    let after_fn = rest.strip_prefix("fn ")?;
    let name: String = after_fn.chars().take_while(|c| is_ident(*c)).collect();
    if name.is_empty() {
        return None;
    }
    let consumed = line.len() - after_fn.len() + name.len();
    Some((line[..consumed].chars().count(), name))
}

/// The kind of every character.
fn classify(chars: &[char]) -> Vec<Kind> {
    let mut kinds = vec![Kind::Code; chars.len()];
    let mut i = 0;
    while i < chars.len() {
        let at = |offset: usize| chars.get(i + offset).copied();
        let span = match chars[i] {
            '/' if at(1) == Some('/') => Some((line_end(chars, i), Kind::Comment)),
            '/' if at(1) == Some('*') => Some((block_comment_end(chars, i), Kind::Comment)),
            '"' => Some((string_end(chars, i + 1), Kind::Literal)),
            'r' if raw_string_can_start(chars, i) => {
                raw_string_end(chars, i).map(|end| (end, Kind::Literal))
            }
            '\'' => char_literal_end(chars, i).map(|end| (end, Kind::Literal)),
            _ => None,
        };
        match span {
            Some((end, kind)) => {
                kinds[i..end].fill(kind);
                i = end;
            }
            None => i += 1,
        }
    }
    kinds
}

fn line_end(chars: &[char], from: usize) -> usize {
    (from..chars.len())
        .find(|i| chars[*i] == '\n')
        .unwrap_or(chars.len())
}

/// The end of the (nested) block comment opened at `open`.
fn block_comment_end(chars: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The end (after the closing quote) of a string whose contents start at `from`.
fn string_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// An `r` that is not the tail of an identifier (a `b` before it, as in `br"..."`, is fine).
fn raw_string_can_start(chars: &[char], at: usize) -> bool {
    match at.checked_sub(1).map(|i| chars[i]) {
        Some('b') => !at.checked_sub(2).is_some_and(|i| is_ident(chars[i])),
        Some(c) => !is_ident(c),
        None => true,
    }
}

/// The end of `r"..."`, `r#"..."#` and so on opened at `at`, if a raw string opens there.
fn raw_string_end(chars: &[char], at: usize) -> Option<usize> {
    let hashes = chars[at + 1..].iter().take_while(|c| **c == '#').count();
    if chars.get(at + 1 + hashes) != Some(&'"') {
        return None;
    }
    let mut i = at + 2 + hashes;
    while i < chars.len() {
        if chars[i] == '"'
            && chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// The end of the char literal opened at `at` (`'x'`, `'\n'`, `'\u{1F600}'`); `None` for a
/// lifetime or label.
fn char_literal_end(chars: &[char], at: usize) -> Option<usize> {
    match chars.get(at + 1) {
        Some('\\') => (at + 3..chars.len())
            .take_while(|i| chars[*i] != '\n')
            .find(|i| chars[*i] == '\'')
            .map(|i| i + 1),
        Some('\n') | None => None,
        Some(_) => (chars.get(at + 2) == Some(&'\'')).then_some(at + 3),
    }
}

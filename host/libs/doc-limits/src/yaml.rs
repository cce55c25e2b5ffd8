//! The nesting depth of a YAML document, measured the way libyaml's scanner (which
//! `serde_norway` parses with) will meet it.
//!
//! Which `[` or `{` opens a flow collection depends on everything before it: inside a quoted
//! scalar, a comment, a block scalar or a plain scalar it is text, and whether a line belongs to
//! a block scalar or continues a plain scalar depends on the indentation libyaml tracks. A
//! bracket count that guessed at any of these could be made to count a deep document as
//! shallow, and the parser would then spend minutes on it. So this follows libyaml 0.2.5's
//! `scanner.c` rule by rule where a rule decides token boundaries (what starts a token, where
//! plain, quoted and block scalars end, simple keys and the indentation stack) and drops
//! everything else (values, tags, errors). Where libyaml would stop with an error this keeps
//! scanning: libyaml never gets further, so the depth seen here is never less than the depth
//! the parser reaches. The tests compare it with libyaml's own tokens.
//!
//! Depth is the flow level plus the block indentation levels open at a token: the quantity the
//! parser recurses on.

/// The 1-based line where the nesting of `text` first passes `limit`, if it does.
pub(crate) fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut scanner = Scanner::new(text, limit);
    scanner.run();
    scanner.deep_at.map(|line| line + 1)
}

/// A possible simple key of the block context (`key: value`): where it started.
#[derive(Clone, Copy)]
struct Key {
    index: usize,
    line: usize,
    column: usize,
}

struct Scanner {
    chars: Vec<char>,
    /// Position: an index into `chars` (libyaml's `mark.index` counts characters too).
    index: usize,
    line: usize,
    column: usize,
    flow_level: usize,
    /// The current block indentation (-1 before any block collection) and the ones around it.
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    /// The possible simple key of the block context. Keys inside flow collections never move
    /// the indentation, so only this one matters.
    block_key: Option<Key>,
    limit: usize,
    /// The deepest nesting seen so far.
    max: usize,
    /// 0-based line where the depth passed the limit.
    deep_at: Option<usize>,
}

fn is_break(c: Option<char>) -> bool {
    matches!(c, Some('\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'))
}

fn is_blank(c: Option<char>) -> bool {
    matches!(c, Some(' ' | '\t'))
}

/// End of input, or a NUL (libyaml's end-of-buffer mark).
fn is_z(c: Option<char>) -> bool {
    matches!(c, None | Some('\0'))
}

fn is_breakz(c: Option<char>) -> bool {
    is_break(c) || is_z(c)
}

fn is_blankz(c: Option<char>) -> bool {
    is_blank(c) || is_breakz(c)
}

/// libyaml's `IS_ALPHA`: the characters of anchor names and tag handles.
fn is_alpha(c: Option<char>) -> bool {
    matches!(c, Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The characters of a tag's URI; `,`, `[` and `]` only inside `!<...>`.
fn is_uri(c: Option<char>, verbatim: bool) -> bool {
    match c {
        Some(',' | '[' | ']') => verbatim,
        Some(
            ';' | '/' | '?' | ':' | '@' | '&' | '=' | '+' | '$' | '.' | '%' | '!' | '~' | '*'
            | '\'' | '(' | ')',
        ) => true,
        other => is_alpha(other),
    }
}

impl Scanner {
    fn new(text: &str, limit: usize) -> Self {
        Self {
            chars: text.chars().collect(),
            index: 0,
            line: 0,
            column: 0,
            flow_level: 0,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: true,
            block_key: None,
            limit,
            max: 0,
            deep_at: None,
        }
    }

    fn at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.index + offset).copied()
    }

    fn skip(&mut self) {
        if self.index < self.chars.len() {
            self.index += 1;
            self.column += 1;
        }
    }

    /// Skips one line break (CR LF counts as one).
    fn skip_line(&mut self) {
        if self.at(0) == Some('\r') && self.at(1) == Some('\n') {
            self.index += 2;
        } else if is_break(self.at(0)) {
            self.index += 1;
        } else {
            return;
        }
        self.line += 1;
        self.column = 0;
    }

    fn column(&self) -> isize {
        isize::try_from(self.column).unwrap_or(isize::MAX)
    }

    /// `---` or `...` at the start of a line, followed by a blank or the end.
    fn document_marker(&self) -> bool {
        self.column == 0
            && (self.at(0) == Some('-') && self.at(1) == Some('-') && self.at(2) == Some('-')
                || self.at(0) == Some('.') && self.at(1) == Some('.') && self.at(2) == Some('.'))
            && is_blankz(self.at(3))
    }

    /// A flow collection opened where a block key may start (`[a, b]: c`) may yet turn out to
    /// be that key, under a block mapping libyaml opens only at the `:`: counted in advance.
    fn note_depth(&mut self) {
        let pending_key = usize::from(self.flow_level > 0 && self.block_key.is_some());
        let depth = self.flow_level + self.indents.len() + pending_key;
        self.max = self.max.max(depth);
        if self.deep_at.is_none() && depth > self.limit {
            self.deep_at = Some(self.line);
        }
    }

    fn save_key(&mut self) {
        if self.simple_key_allowed && self.flow_level == 0 {
            self.block_key = Some(Key {
                index: self.index,
                line: self.line,
                column: self.column,
            });
        }
    }

    fn remove_key(&mut self) {
        if self.flow_level == 0 {
            self.block_key = None;
        }
    }

    /// A key that did not find its `:` on its line within 1024 characters never will.
    fn stale_key(&mut self) {
        if let Some(key) = self.block_key
            && (key.line < self.line || key.index + 1024 < self.index)
        {
            self.block_key = None;
        }
    }

    fn roll_indent(&mut self, column: isize) {
        if self.flow_level == 0 && self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            self.note_depth();
        }
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow_level != 0 {
            return;
        }
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn run(&mut self) {
        while self.deep_at.is_none() {
            self.skip_to_next_token();
            self.stale_key();
            self.unroll_indent(self.column());
            let Some(c) = self.at(0) else {
                return;
            };
            self.token(c);
        }
    }

    /// `yaml_parser_fetch_next_token`'s dispatch; every branch consumes at least one character.
    fn token(&mut self, c: char) {
        let next = self.at(1);
        if self.column == 0 && c == '%' {
            self.unroll_indent(-1);
            self.remove_key();
            self.simple_key_allowed = false;
            // A directive that scans takes its whole line.
            while !is_breakz(self.at(0)) {
                self.skip();
            }
            return;
        }
        if self.document_marker() {
            self.unroll_indent(-1);
            self.remove_key();
            self.simple_key_allowed = false;
            (0..3).for_each(|_| self.skip());
            return;
        }
        match c {
            '[' | '{' => {
                self.save_key();
                self.flow_level += 1;
                self.note_depth();
                self.simple_key_allowed = true;
                self.skip();
            }
            ']' | '}' => {
                self.remove_key();
                self.flow_level = self.flow_level.saturating_sub(1);
                self.simple_key_allowed = false;
                self.skip();
            }
            ',' => {
                self.remove_key();
                self.simple_key_allowed = true;
                self.skip();
            }
            '-' if is_blankz(next) => {
                self.roll_indent(self.column());
                self.remove_key();
                self.simple_key_allowed = true;
                self.skip();
            }
            '?' if self.flow_level > 0 || is_blankz(next) => {
                self.roll_indent(self.column());
                self.remove_key();
                self.simple_key_allowed = self.flow_level == 0;
                self.skip();
            }
            ':' if self.flow_level > 0 || is_blankz(next) => {
                self.value();
                self.skip();
            }
            '*' | '&' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.skip();
                while is_alpha(self.at(0)) {
                    self.skip();
                }
            }
            '!' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.tag();
            }
            '|' | '>' if self.flow_level == 0 => {
                self.remove_key();
                self.simple_key_allowed = true;
                self.block_scalar();
            }
            '\'' | '"' => {
                self.save_key();
                self.simple_key_allowed = false;
                self.quoted(c);
            }
            _ if self.starts_plain(c, next) => {
                self.save_key();
                self.simple_key_allowed = false;
                self.plain();
            }
            // libyaml stops here ("cannot start any token"); going on can only see more.
            _ => self.skip(),
        }
    }

    fn starts_plain(&self, c: char, next: Option<char>) -> bool {
        let indicator = is_blankz(Some(c)) || "-?:,[]{}#&*!|>'\"%@`".contains(c);
        !indicator
            || c == '-' && !is_blank(next)
            || self.flow_level == 0 && (c == '?' || c == ':') && !is_blankz(next)
    }

    /// `yaml_parser_scan_skip_to_next_token`: blanks, comments and line breaks.
    fn skip_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.at(0) == Some('\u{feff}') {
                self.skip();
            }
            while self.at(0) == Some(' ')
                || (self.flow_level > 0 || !self.simple_key_allowed) && self.at(0) == Some('\t')
            {
                self.skip();
            }
            if self.at(0) == Some('#') {
                while !is_breakz(self.at(0)) {
                    self.skip();
                }
            }
            if !is_break(self.at(0)) {
                return;
            }
            self.skip_line();
            if self.flow_level == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    /// A value indicator: a possible simple key becomes a key, opening a block mapping at its
    /// column.
    fn value(&mut self) {
        if self.flow_level > 0 {
            self.simple_key_allowed = false;
            return;
        }
        match self.block_key.take() {
            Some(key) => {
                self.roll_indent(isize::try_from(key.column).unwrap_or(isize::MAX));
                self.simple_key_allowed = false;
            }
            None => {
                self.roll_indent(self.column());
                self.simple_key_allowed = true;
            }
        }
    }

    /// `!<uri>`, or `!`, a handle and a suffix, all of URI characters.
    fn tag(&mut self) {
        if self.at(1) == Some('<') {
            self.skip();
            self.skip();
            while is_uri(self.at(0), true) {
                self.skip();
            }
            if self.at(0) == Some('>') {
                self.skip();
            }
            return;
        }
        self.skip();
        while is_uri(self.at(0), false) {
            self.skip();
        }
    }
}

mod scalars;

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;

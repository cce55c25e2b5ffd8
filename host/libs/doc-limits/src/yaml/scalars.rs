//! The three kinds of scalar whose extent libyaml decides by more than a closing character:
//! quoted (escapes, document markers), plain (indentation, flow indicators) and block scalars
//! (their header and their content's indentation).

use super::{Scanner, is_blank, is_blankz, is_break, is_breakz, is_z};

impl Scanner {
    /// A single- or double-quoted scalar, across lines, to its closing quote.
    pub(super) fn quoted(&mut self, quote: char) {
        let single = quote == '\'';
        self.skip();
        loop {
            if self.document_marker() || is_z(self.at(0)) {
                return;
            }
            while !is_blankz(self.at(0)) {
                let c = self.at(0);
                if single && c == Some('\'') && self.at(1) == Some('\'') {
                    self.skip();
                    self.skip();
                } else if c == Some(quote) {
                    break;
                } else if !single && c == Some('\\') && is_break(self.at(1)) {
                    self.skip();
                    self.skip_line();
                    break;
                } else if !single && c == Some('\\') {
                    // The escaped character cannot close the scalar; `\x`, `\u` and `\U`
                    // digits are ordinary characters.
                    self.skip();
                    self.skip();
                } else {
                    self.skip();
                }
            }
            if self.at(0) == Some(quote) {
                self.skip();
                return;
            }
            while is_blank(self.at(0)) || is_break(self.at(0)) {
                if is_blank(self.at(0)) {
                    self.skip();
                } else {
                    self.skip_line();
                }
            }
        }
    }

    /// A plain scalar: in the block context it continues on lines indented past the current
    /// indentation; in a flow collection it ends at a flow indicator.
    pub(super) fn plain(&mut self) {
        let indent = self.indent + 1;
        let mut leading_blanks = false;
        loop {
            if self.document_marker() || self.at(0) == Some('#') {
                break;
            }
            while !is_blankz(self.at(0)) {
                let c = self.at(0);
                if self.flow_level > 0
                    && c == Some(':')
                    && matches!(self.at(1), Some(',' | '?' | '[' | ']' | '{' | '}'))
                {
                    // libyaml stops here ("found unexpected ':'").
                    return;
                }
                if c == Some(':') && is_blankz(self.at(1))
                    || self.flow_level > 0 && matches!(c, Some(',' | '[' | ']' | '{' | '}'))
                {
                    break;
                }
                leading_blanks = false;
                self.skip();
            }
            if !(is_blank(self.at(0)) || is_break(self.at(0))) {
                break;
            }
            while is_blank(self.at(0)) || is_break(self.at(0)) {
                if is_blank(self.at(0)) {
                    self.skip();
                } else {
                    self.skip_line();
                    leading_blanks = true;
                }
            }
            if self.flow_level == 0 && self.column() < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
    }

    /// A literal or folded block scalar: its header, then every line indented at least as far
    /// as its content (given by the header, else by its first non-empty line).
    pub(super) fn block_scalar(&mut self) {
        self.skip();
        let mut increment: isize = 0;
        let digit = |c: Option<char>| {
            c.and_then(|c| c.to_digit(10))
                .and_then(|d| isize::try_from(d).ok())
        };
        if matches!(self.at(0), Some('+' | '-')) {
            self.skip();
            if let Some(d) = digit(self.at(0)) {
                if d == 0 {
                    return;
                }
                increment = d;
                self.skip();
            }
        } else if let Some(d) = digit(self.at(0)) {
            if d == 0 {
                return;
            }
            increment = d;
            self.skip();
            if matches!(self.at(0), Some('+' | '-')) {
                self.skip();
            }
        }
        while is_blank(self.at(0)) {
            self.skip();
        }
        if self.at(0) == Some('#') {
            while !is_breakz(self.at(0)) {
                self.skip();
            }
        }
        if !is_breakz(self.at(0)) {
            return;
        }
        self.skip_line();
        let mut indent = match increment {
            0 => 0,
            _ if self.indent >= 0 => self.indent + increment,
            _ => increment,
        };
        if !self.block_breaks(&mut indent) {
            return;
        }
        while self.column() == indent && !is_z(self.at(0)) {
            while !is_breakz(self.at(0)) {
                self.skip();
            }
            self.skip_line();
            if !self.block_breaks(&mut indent) {
                return;
            }
        }
    }

    /// Empty lines and the indentation of the next one; fixes an undetermined `indent` at the
    /// deepest seen. False where libyaml stops (a tab in the indentation).
    fn block_breaks(&mut self, indent: &mut isize) -> bool {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.column() < *indent) && self.at(0) == Some(' ') {
                self.skip();
            }
            max_indent = max_indent.max(self.column());
            if (*indent == 0 || self.column() < *indent) && self.at(0) == Some('\t') {
                return false;
            }
            if !is_break(self.at(0)) {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        true
    }
}

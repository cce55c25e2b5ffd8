//! `--dump-config`: the composed tree as YAML, with provenance and tag values as comments.
//!
//! Every row is preceded by `# == <layer label>`; every tagged value keeps its source and is
//! followed by its resolved value, e.g. `greeting: !env [DEMO_GREETING, Hello]  # = Hello`.
//! The output is a valid row list (`--config FILE`) with the same rows.

use std::path::Path;

use serde_norway::{Mapping, Value};

use crate::patch::Composed;
use crate::row::{ComposedRow, IsolateTarget};
use crate::tags::{TagContext, resolve_config, resolve_disabled, tag_name};

impl Composed {
    /// The tree as YAML, resolving tags for the comments against `env` and `home`.
    pub fn dump(&self, env: &dyn Fn(&str) -> Option<String>, home: &Path) -> String {
        self.dump_with(&TagContext::new(env, home))
    }

    /// [`Composed::dump`] with an explicit context.
    pub fn dump_with(&self, ctx: &TagContext<'_>) -> String {
        self.dump_annotated(ctx, &|_| None)
    }

    /// [`Composed::dump_with`], with one more comment line under each plugin row's provenance
    /// where `annotate` has something to say (the host tells which services the row's plugin
    /// needs, may use and provides; the loader cannot, it never opens a library).
    pub fn dump_annotated(
        &self,
        ctx: &TagContext<'_>,
        annotate: &dyn Fn(&ComposedRow) -> Option<String>,
    ) -> String {
        let mut out = Emitter {
            buf: String::new(),
            ctx,
            annotate,
        };
        out.buf
            .push_str("# dsh composed config: each row follows the layer that last touched it\n");
        for warning in &self.warnings {
            out.buf
                .push_str(&format!("# warning: {}\n", one_line(warning)));
        }
        if self.rows.is_empty() {
            out.buf.push_str("[]\n");
        }
        out.rows(&self.rows, 0);
        out.buf
    }
}

struct Emitter<'c, 'a> {
    buf: String,
    ctx: &'c TagContext<'a>,
    annotate: &'c dyn Fn(&ComposedRow) -> Option<String>,
}

impl Emitter<'_, '_> {
    fn indent(&mut self, n: usize) {
        self.buf.extend(std::iter::repeat_n(' ', n));
    }

    fn rows(&mut self, rows: &[ComposedRow], indent: usize) {
        for row in rows {
            self.indent(indent);
            self.buf
                .push_str(&format!("# == {}\n", one_line(&row.layer)));
            if let Some(note) = (self.annotate)(row) {
                self.indent(indent);
                self.buf.push_str(&format!("# {}\n", one_line(&note)));
            }
            self.indent(indent);
            self.buf.push_str("- ");
            self.row(row, indent + 2);
        }
    }

    fn row(&mut self, row: &ComposedRow, indent: usize) {
        self.buf
            .push_str(&format!("id: {}\n", scalar_str(&row.id, false)));
        if let Some(name) = &row.name {
            self.key(indent, "name");
            self.buf
                .push_str(&format!(" {}\n", scalar_str(name, false)));
        }
        if row.group {
            self.key(indent, "group");
            self.buf.push_str(" true\n");
        }
        if let Some(disabled) = &row.disabled {
            self.key(indent, "disabled");
            let note = match disabled {
                Value::Tagged(_) => Some(match resolve_disabled(Some(disabled), self.ctx) {
                    Ok(b) => format!("= {b}"),
                    Err(e) => format!("! {e}"),
                }),
                _ => None,
            };
            self.buf.push(' ');
            self.buf.push_str(&flow(disabled));
            if let Some(note) = note {
                self.buf.push_str(&format!("  # {}", one_line(&note)));
            }
            self.buf.push('\n');
        }
        if let Some(inject) = &row.inject {
            self.key(indent, "inject");
            let items: Vec<String> = inject.iter().map(|s| scalar_str(s, true)).collect();
            self.buf.push_str(&format!(" [{}]\n", items.join(", ")));
        }
        if let Some(isolate) = &row.isolate {
            let map: Mapping = isolate
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        IsolateTarget::Private => Value::Bool(true),
                        IsolateTarget::Named(label) => Value::String(label.clone()),
                    };
                    (Value::String(k.clone()), v)
                })
                .collect();
            self.key(indent, "isolate");
            self.after_key(&Value::Mapping(map), indent, "isolate");
        }
        if row.group {
            self.key(indent, "config");
            if row.children.is_empty() {
                self.buf.push_str(" []\n");
            } else {
                self.buf.push('\n');
                self.rows(&row.children, indent + 2);
            }
        } else if let Some(config) = &row.config {
            self.key(indent, "config");
            self.after_key(config, indent, "config");
        }
    }

    fn key(&mut self, indent: usize, key: &str) {
        self.indent(indent);
        self.buf.push_str(key);
        self.buf.push(':');
    }

    /// A value after `key:` on a line indented by `indent`.
    fn after_key(&mut self, value: &Value, indent: usize, field: &str) {
        match value {
            Value::Mapping(map) if !map.is_empty() => {
                self.buf.push('\n');
                self.mapping(map, indent + 2, false, field);
            }
            Value::Sequence(items) if !items.is_empty() => {
                self.buf.push('\n');
                self.sequence(items, indent + 2, false, field);
            }
            Value::String(s) if literal_ok(s) => {
                self.buf.push(' ');
                self.literal(s, indent + 2);
            }
            _ => {
                self.buf.push(' ');
                self.inline(value, field);
            }
        }
    }

    /// A value right after `- `, its content starting at column `indent`.
    fn in_sequence(&mut self, value: &Value, indent: usize, field: &str) {
        match value {
            Value::Mapping(map) if !map.is_empty() => self.mapping(map, indent, true, field),
            Value::Sequence(items) if !items.is_empty() => {
                self.sequence(items, indent, true, field)
            }
            Value::String(s) if literal_ok(s) => self.literal(s, indent),
            _ => self.inline(value, field),
        }
    }

    fn mapping(&mut self, map: &Mapping, indent: usize, first_inline: bool, field: &str) {
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 || !first_inline {
                self.indent(indent);
            }
            let key_text = match key {
                Value::String(s) => scalar_str(s, true),
                other => flow(other),
            };
            let sub = match key {
                Value::String(s) => format!("{field}.{s}"),
                other => format!("{field}.{}", flow(other)),
            };
            self.buf.push_str(&key_text);
            self.buf.push(':');
            self.after_key(value, indent, &sub);
        }
    }

    fn sequence(&mut self, items: &[Value], indent: usize, first_inline: bool, field: &str) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !first_inline {
                self.indent(indent);
            }
            self.buf.push_str("- ");
            self.in_sequence(item, indent + 2, &format!("{field}[{i}]"));
        }
    }

    /// A one-line value, with `# = resolved` after a tag; ends the line.
    fn inline(&mut self, value: &Value, field: &str) {
        self.buf.push_str(&flow(value));
        if let Value::Tagged(_) = value {
            let note = match resolve_config(value, self.ctx, field) {
                Ok(serde_json::Value::String(s)) => format!("= {s}"),
                Ok(other) => format!("= {other}"),
                Err(e) => format!("! {e}"),
            };
            self.buf.push_str(&format!("  # {}", one_line(&note)));
        }
        self.buf.push('\n');
    }

    /// A multi-line string as a literal block scalar whose lines are indented by `indent`.
    fn literal(&mut self, s: &str, indent: usize) {
        let body = s.trim_end_matches('\n');
        let trailing = s.len() - body.len();
        self.buf.push_str(match trailing {
            0 => "|-\n",
            1 => "|\n",
            _ => "|+\n",
        });
        for line in body.split('\n') {
            if !line.is_empty() {
                self.indent(indent);
                self.buf.push_str(line);
            }
            self.buf.push('\n');
        }
        for _ in 1..trailing {
            self.buf.push('\n');
        }
    }
}

/// Whether a string is best written as a literal block: several lines, all printable, and a
/// first line that fixes the indentation (not empty, no leading blank).
fn literal_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\t', '\n'])
        && s.chars()
            .all(|c| c == '\n' || c == '\t' || (printable(c) && c != '\r'))
}

/// A value on one line (flow style); tags are written before their content.
pub(crate) fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar_str(s, true),
        Value::Sequence(items) => {
            format!(
                "[{}]",
                items.iter().map(flow).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Mapping(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", flow(k), flow(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Tagged(tagged) => format!("!{} {}", tag_name(tagged), flow(&tagged.value)),
    }
}

/// A string scalar: plain when that reads back as the same string, else double-quoted.
pub(crate) fn scalar_str(s: &str, in_flow: bool) -> String {
    if plain_ok(s, in_flow) {
        s.to_owned()
    } else {
        double_quoted(s)
    }
}

fn plain_ok(s: &str, in_flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.trim() != s
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.chars().any(|c| c.is_control() || !printable(c))
        || (in_flow && s.contains([',', '[', ']', '{', '}', ':']))
    {
        return false;
    }
    matches!(serde_norway::from_str::<Value>(s), Ok(Value::String(back)) if back == s)
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if printable(c) && c != '\u{85}' && c != '\u{2028}' && c != '\u{2029}' => out.push(c),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Characters YAML (libyaml) accepts unescaped in a document.
fn printable(c: char) -> bool {
    matches!(c as u32,
        0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
        && c != '\u{FEFF}'
}

fn one_line(s: &str) -> String {
    s.replace('\r', "\\r").replace('\n', "\\n")
}

#[cfg(test)]
#[path = "dump_tests.rs"]
mod tests;

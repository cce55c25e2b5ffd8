//! The pure half of `read`: turn decoded text into a bounded, line-numbered window and render
//! the model-facing envelope.
//!
//! Character counts are UTF-16 code units, because the reference measures JavaScript string
//! lengths; byte counts are UTF-8. The line buffer is capped one unit past the truncation point,
//! so a newline-free giant line never grows memory, and the cap is applied *before* a trailing
//! `\r` is stripped, exactly as the reference does (a quirk kept for byte-identical output).

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};

/// Default and maximum lines per `read` call.
pub const READ_LIMIT: usize = 2000;
/// Maximum characters (UTF-16 units) kept of one line.
pub const READ_MAX_LINE_LENGTH: usize = 2000;
/// Maximum UTF-8 bytes of selected line text per call (50 KiB).
pub const READ_MAX_BYTES: usize = 50 * 1024;

/// A resolved window request; the caller has applied defaults and caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadWindow {
    /// 1-based first line.
    pub offset: usize,
    /// Maximum lines returned.
    pub limit: usize,
    /// Maximum UTF-16 units kept per line before the truncation suffix.
    pub max_line_length: usize,
    /// Maximum UTF-8 bytes of selected output (line texts plus joining newlines).
    pub max_bytes: usize,
}

impl ReadWindow {
    /// The reference's default caps with the given offset and limit.
    pub fn new(offset: usize, limit: usize) -> Self {
        Self {
            offset,
            limit,
            max_line_length: READ_MAX_LINE_LENGTH,
            max_bytes: READ_MAX_BYTES,
        }
    }
}

/// One returned line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileLine {
    /// 1-based line number in the file.
    pub number: usize,
    /// The line text without its terminator (possibly truncated with the suffix).
    pub text: String,
}

/// A built window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowResult {
    /// The selected lines.
    pub lines: Vec<FileLine>,
    /// The exact number of lines in the file.
    pub total_lines: usize,
    /// Whether the byte cap stopped the selection.
    pub truncated_by_bytes: bool,
}

/// Incremental window builder: feed decoded text in any chunking, then [`WindowBuilder::finish`].
#[derive(Debug)]
pub struct WindowBuilder {
    request: ReadWindow,
    lines: Vec<FileLine>,
    total_lines: usize,
    output_bytes: usize,
    truncated_by_bytes: bool,
    line: String,
    line_units: usize,
    line_full: bool,
}

impl WindowBuilder {
    /// A builder for `request`.
    pub fn new(request: ReadWindow) -> Self {
        Self {
            request,
            lines: Vec::new(),
            total_lines: 0,
            output_bytes: 0,
            truncated_by_bytes: false,
            line: String::new(),
            line_units: 0,
            line_full: false,
        }
    }

    /// Feed the next chunk of decoded text; chunk boundaries carry no meaning.
    pub fn push(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(newline) = rest.find('\n') {
            self.append(&rest[..newline]);
            self.flush_line();
            rest = &rest[newline + 1..];
        }
        self.append(rest);
    }

    fn append(&mut self, segment: &str) {
        let cap = self.request.max_line_length + 1;
        if self.line_full {
            return;
        }
        for ch in segment.chars() {
            let units = ch.len_utf16();
            if self.line_units + units > cap {
                // The reference would keep half of a surrogate pair here; a Rust string cannot,
                // so the line is marked as over-long instead (same truncation outcome).
                self.line_full = true;
                return;
            }
            self.line.push(ch);
            self.line_units += units;
            if self.line_units == cap {
                self.line_full = true;
                return;
            }
        }
    }

    fn flush_line(&mut self) {
        let mut text = std::mem::take(&mut self.line);
        let mut units = self.line_units;
        let overflowed = self.line_full && units < self.request.max_line_length + 1;
        // When a surrogate pair was refused, the reference's buffer ends in half of it, not `\r`.
        if !overflowed && text.ends_with('\r') {
            text.pop();
            units -= 1;
        }
        self.line_units = 0;
        self.line_full = false;
        self.consume(text, units > self.request.max_line_length || overflowed);
    }

    fn consume(&mut self, text: String, over_long: bool) {
        self.total_lines += 1;
        let request = self.request;
        if self.truncated_by_bytes
            || self.total_lines < request.offset
            || self.lines.len() >= request.limit
        {
            return;
        }
        let text = if over_long {
            truncate_line(&text, request.max_line_length)
        } else {
            text
        };
        let bytes = text.len() + usize::from(!self.lines.is_empty());
        if self.output_bytes + bytes > request.max_bytes {
            self.truncated_by_bytes = true;
            return;
        }
        self.output_bytes += bytes;
        self.lines.push(FileLine {
            number: self.total_lines,
            text,
        });
    }

    /// Close the window: flush a final unterminated line and check the offset. An offset past
    /// the end is `FS_NOT_FOUND` (an empty file read at offset 1 is fine).
    pub fn finish(mut self, display_path: &str) -> Result<WindowResult, ToolError> {
        if self.line_units > 0 || self.line_full {
            self.flush_line();
        }
        let offset = self.request.offset;
        if !self.truncated_by_bytes
            && offset > self.total_lines
            && !(self.total_lines == 0 && offset == 1)
        {
            return Err(ToolError::new(
                ErrorCode::FsNotFound,
                format!(
                    "offset {offset} is out of range for \"{display_path}\" ({} lines)",
                    self.total_lines
                ),
            ));
        }
        Ok(WindowResult {
            lines: self.lines,
            total_lines: self.total_lines,
            truncated_by_bytes: self.truncated_by_bytes,
        })
    }
}

/// Build a window over whole text (convenience over [`WindowBuilder`]).
pub fn build_window(
    text: &str,
    request: ReadWindow,
    display_path: &str,
) -> Result<WindowResult, ToolError> {
    let mut builder = WindowBuilder::new(request);
    builder.push(text);
    builder.finish(display_path)
}

fn truncate_line(text: &str, max_units: usize) -> String {
    let mut units = 0;
    let mut end = 0;
    for (index, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > max_units {
            break;
        }
        end = index + ch.len_utf8();
    }
    format!("{}... (line truncated to {max_units} chars)", &text[..end])
}

/// Render the model-facing `read` envelope. `limit` is the call's effective limit: the
/// reference derives "capped by bytes" from the returned lines falling short of it.
pub fn format_read_output(
    display_path: &str,
    offset: usize,
    limit: usize,
    lines: &[FileLine],
    total_lines: usize,
) -> String {
    let end_line = lines
        .last()
        .map_or(offset.saturating_sub(1), |line| line.number);
    let truncated_by_bytes = lines.len() < limit && end_line < total_lines;
    let footer = if truncated_by_bytes {
        format!(
            "(Output capped. Showing lines {offset}-{end_line}. Use offset={} to continue.)",
            end_line + 1
        )
    } else if end_line < total_lines {
        format!(
            "(Showing lines {offset}-{end_line} of {total_lines}. Use offset={} to continue.)",
            end_line + 1
        )
    } else {
        format!("(End of file - total {total_lines} lines)")
    };
    let body = if lines.is_empty() {
        footer
    } else {
        let numbered: Vec<String> = lines
            .iter()
            .map(|line| format!("{}: {}", line.number, line.text))
            .collect();
        format!("{}\n\n{footer}", numbered.join("\n"))
    };
    format!("<path>{display_path}</path>\n<type>file</type>\n<content>\n{body}\n</content>")
}

/// The `read` result's `meta`: the structured window a UI renders, with a language hint.
pub fn read_meta(
    display_path: &str,
    offset: usize,
    lines: &[FileLine],
    total_lines: usize,
) -> Value {
    let mut meta = json!({
        "path": display_path,
        "offset": offset,
        "lines": lines,
        "totalLines": total_lines,
    });
    if let (Some(lang), Some(object)) = (lang_from_path(display_path), meta.as_object_mut()) {
        object.insert("lang".to_owned(), Value::from(lang));
    }
    meta
}

/// The syntax-highlighting hint for a path's extension (case-insensitive); dotfiles,
/// extensionless names and unknown extensions have none.
pub fn lang_from_path(path: &str) -> Option<&'static str> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let dot = base.rfind('.')?;
    if dot == 0 {
        return None;
    }
    let ext = base[dot + 1..].to_ascii_lowercase();
    Some(match ext.as_str() {
        "ts" | "mts" | "cts" => "ts",
        "tsx" => "tsx",
        "js" | "mjs" | "cjs" => "js",
        "jsx" => "jsx",
        "json" | "jsonc" => "json",
        "py" => "py",
        "rb" => "rb",
        "go" => "go",
        "rs" => "rs",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" | "cxx" => "cpp",
        "cs" => "cs",
        "kt" => "kotlin",
        "swift" => "swift",
        "php" => "php",
        "sh" | "bash" | "zsh" => "sh",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "ini" => "ini",
        "md" | "markdown" => "md",
        "mdx" => "mdx",
        "html" | "htm" => "html",
        "css" => "css",
        "scss" => "scss",
        "less" => "less",
        "sql" => "sql",
        "xml" => "xml",
        "lua" => "lua",
        _ => return None,
    })
}

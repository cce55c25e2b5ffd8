//! The `read` tool: one stat, a streamed UTF-8 decode into the bounded window, and the observed
//! version for the read-before-edit policy.

use std::io;

use dsh_fs_local::{FileStat, read_chunks};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::observe::{ContentHash, FileVersion, Observation, Observations, stat};
use crate::path::{Target, Workspace, io_error};
use crate::window::{
    FileLine, READ_LIMIT, ReadWindow, WindowBuilder, format_read_output, read_meta,
};

/// Bytes at the start of a file scanned for a NUL (the binary heuristic).
const BINARY_SAMPLE_BYTES: usize = 8192;
const CHUNK_BYTES: usize = 64 * 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `read` arguments as the model sends them. Numbers stay `f64` so a fractional or negative
/// value reaches the reference's own check and message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReadArgs {
    /// Path to read, relative to the workspace or absolute.
    pub file_path: String,
    /// 1-based first line (default 1).
    #[serde(default)]
    pub offset: Option<f64>,
    /// Lines to return (default and maximum: the configured limit, 2000).
    #[serde(default)]
    pub limit: Option<f64>,
}

/// A successful read.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOutput {
    /// The model-facing text block.
    pub text: String,
    /// The `tool/result` `meta` (structured window).
    pub meta: Value,
    /// The resolved target.
    pub target: Target,
    /// The 1-based first line requested.
    pub offset: usize,
    /// The returned lines.
    pub lines: Vec<FileLine>,
    /// The exact line count of the file.
    pub total_lines: usize,
    /// Whether the 50 KiB cap cut the window.
    pub truncated_by_bytes: bool,
    /// The version observed (already recorded when a policy was passed).
    pub version: FileVersion,
}

fn positive_integer(value: f64, name: &str) -> Result<usize, ToolError> {
    if !value.is_finite() || value.fract() != 0.0 || value < 1.0 {
        return Err(ToolError::plain(format!(
            "{name} must be a positive integer"
        )));
    }
    // Saturating: a huge offset is simply past the end.
    Ok(value.min(usize::MAX as f64) as usize)
}

/// Validate and default the arguments; `max_limit` is the deployment's line cap.
pub fn parse_read_args(args: &ReadArgs, max_limit: usize) -> Result<(usize, usize), ToolError> {
    if args.file_path.trim().is_empty() {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    let offset = args
        .offset
        .map_or(Ok(1), |v| positive_integer(v, "offset"))?;
    let limit = args
        .limit
        .map_or(Ok(max_limit), |v| positive_integer(v, "limit"))?;
    if limit > max_limit {
        return Err(ToolError::plain(format!(
            "limit must be less than or equal to {max_limit}"
        )));
    }
    Ok((offset, limit))
}

/// Read a text file window with the default caps. With `observations`, the outcome (present
/// with its version, or confirmed absent) is recorded for later `write`/`edit` guards.
pub fn read(
    args: &ReadArgs,
    workspace: &Workspace,
    observations: Option<&Observations>,
) -> Result<ReadOutput, ToolError> {
    read_with(
        args,
        workspace,
        observations,
        ReadWindow::new(1, READ_LIMIT),
    )
}

/// [`read`] with explicit caps: `caps.limit` is the default and maximum line count and
/// `caps.offset` is ignored (the call's offset wins).
pub fn read_with(
    args: &ReadArgs,
    workspace: &Workspace,
    observations: Option<&Observations>,
    caps: ReadWindow,
) -> Result<ReadOutput, ToolError> {
    let (offset, limit) = parse_read_args(args, caps.limit)?;
    let target = workspace.resolve(&args.file_path)?;
    workspace.check_readable(&target)?;
    let display = target.display.clone();
    let fs = workspace.fs();
    let Some(meta) = stat(fs, &target.key).map_err(|e| io_error("read", &display, &e))? else {
        if let Some(record) = observations {
            record.record(target.key.clone(), Observation::Absent);
        }
        return Err(ToolError::new(
            ErrorCode::FsNotFound,
            format!("cannot read \"{display}\": not found"),
        ));
    };
    if !meta.is_file() {
        return Err(ToolError::new(
            ErrorCode::FsNotRegularFile,
            format!("cannot read \"{display}\": not a regular file"),
        ));
    }
    let request = ReadWindow {
        offset,
        limit,
        ..caps
    };
    let (window, hash) = scan(fs, &target, &meta, request)?;
    let version = hash.version(&meta);
    if let Some(record) = observations {
        record.record(target.key.clone(), Observation::Present(version));
    }
    let text = format_read_output(&display, offset, limit, &window.lines, window.total_lines);
    let meta = read_meta(&display, offset, &window.lines, window.total_lines);
    Ok(ReadOutput {
        text,
        meta,
        target,
        offset,
        lines: window.lines,
        total_lines: window.total_lines,
        truncated_by_bytes: window.truncated_by_bytes,
        version,
    })
}

fn not_text(verb: &str, display: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::FsNotText,
        format!("cannot {verb} \"{display}\": {why}"),
    )
}

/// Stream the file through the UTF-8 decoder into the window, hashing the raw bytes on the way.
/// Streaming keeps memory bounded for any file size while the window still counts every line.
fn scan(
    fs: &dyn dsh_fs_local::FileSystem,
    target: &Target,
    meta: &FileStat,
    request: ReadWindow,
) -> Result<(crate::window::WindowResult, ContentHash), ToolError> {
    let display = target.display.as_str();
    let mut hash = ContentHash::default();
    let mut builder = WindowBuilder::new(request);
    let mut decoder = Utf8Stream::default();
    let mut sampled = 0usize;
    read_chunks(
        fs,
        &target.key,
        Some(meta),
        CHUNK_BYTES,
        |chunk| {
            hash.update(chunk);
            if sampled < BINARY_SAMPLE_BYTES {
                let take = chunk.len().min(BINARY_SAMPLE_BYTES - sampled);
                if chunk[..take].contains(&0) {
                    return Err(not_text("read", display, "binary file"));
                }
                sampled += take;
            }
            decoder
                .push(chunk, &mut |text| builder.push(text))
                .map_err(|()| not_text("read", display, "invalid UTF-8 text"))
        },
        |e: io::Error| io_error("read", display, &e),
    )?;
    decoder
        .finish(&mut |text| builder.push(text))
        .map_err(|()| not_text("read", display, "invalid UTF-8 text"))?;
    Ok((builder.finish(display)?, hash))
}

/// A fatal streaming UTF-8 decoder that drops a leading BOM, as the reference's `TextDecoder`
/// does; an incomplete sequence at a chunk edge is carried to the next chunk.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
    started: bool,
}

impl Utf8Stream {
    pub(crate) fn push(&mut self, bytes: &[u8], sink: &mut dyn FnMut(&str)) -> Result<(), ()> {
        self.pending.extend_from_slice(bytes);
        if !self.started {
            if self.pending.len() < UTF8_BOM.len() && UTF8_BOM.starts_with(&self.pending) {
                return Ok(());
            }
            self.started = true;
            if self.pending.starts_with(UTF8_BOM) {
                self.pending.drain(..UTF8_BOM.len());
            }
        }
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(text) => {
                sink(text);
                self.pending.clear();
                return Ok(());
            }
            Err(error) if error.error_len().is_some() => return Err(()),
            Err(error) => error.valid_up_to(),
        };
        let (head, _) = self.pending.split_at(valid);
        sink(std::str::from_utf8(head).map_err(|_| ())?);
        self.pending.drain(..valid);
        Ok(())
    }

    pub(crate) fn finish(&mut self, sink: &mut dyn FnMut(&str)) -> Result<(), ()> {
        if !self.started {
            self.started = true;
            // A file shorter than a BOM that is a BOM prefix is still ordinary text (or invalid).
            let text = std::str::from_utf8(&self.pending).map_err(|_| ())?;
            sink(text);
            self.pending.clear();
            return Ok(());
        }
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(())
        }
    }
}

/// Decode a whole buffer the way [`Utf8Stream`] does (fatal, BOM dropped).
pub(crate) fn decode_utf8(bytes: &[u8]) -> Option<String> {
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    std::str::from_utf8(body).ok().map(str::to_owned)
}

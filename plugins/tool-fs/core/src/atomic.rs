//! Publication of a whole file through the workspace's filesystem, and the text helpers
//! mutations share. The publication itself (staging, rename or create-only link) belongs to
//! the [`FileSystem`] implementation.

use std::path::Path;

use dsh_fs_local::{FileSystem, PublishError};

use crate::error::{ErrorCode, ToolError};
use crate::path::io_error;

/// Publish `content` at `key` atomically, creating parent directories. `mode` is the replaced
/// file's (kept on update); `create_only` publishes without replacing anything.
pub(crate) fn write_file_atomic(
    fs: &dyn FileSystem,
    key: &Path,
    display: &str,
    content: &[u8],
    mode: Option<u32>,
    create_only: bool,
) -> Result<(), ToolError> {
    match fs.publish(key, content, mode, create_only) {
        Ok(()) => Ok(()),
        Err(PublishError::NotRegularFile) => Err(ToolError::new(
            ErrorCode::FsNotRegularFile,
            format!("cannot write \"{display}\": not a regular file"),
        )),
        Err(PublishError::Exists) => Err(not_observed_overwrite(display)),
        Err(PublishError::Io(error)) => Err(io_error("write", display, &error)),
    }
}

/// The reference's refusal of a blind overwrite.
pub(crate) fn not_observed_overwrite(display: &str) -> ToolError {
    ToolError::new(
        ErrorCode::FsNotObserved,
        format!("cannot overwrite existing \"{display}\" without reading it first"),
    )
}

/// Collapse CRLF to LF, the in-memory form every edit and diff basis uses (lone `\r` stays).
pub(crate) fn normalize_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Whether the file's first 4096 UTF-16 units hold more CRLF than bare LF line endings.
pub(crate) fn detect_crlf(raw: &str) -> bool {
    let mut units = 0;
    let mut end = raw.len();
    for (index, ch) in raw.char_indices() {
        if units + ch.len_utf16() > 4096 {
            end = index;
            break;
        }
        units += ch.len_utf16();
    }
    let sample = &raw[..end];
    let crlf = sample.matches("\r\n").count();
    let lf = sample.matches('\n').count() - crlf;
    crlf > lf
}

/// Convert LF-normalized text back to CRLF without doubling existing pairs.
pub(crate) fn restore_crlf(text: &str) -> String {
    normalize_line_endings(text).replace('\n', "\r\n")
}

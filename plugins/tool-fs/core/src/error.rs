//! The error vocabulary shared by every tool in this crate.
//!
//! The reference distinguishes three families on a failed `tool/result`: typed filesystem errors
//! (`FsError` + `FS_*` code), typed search errors (`SearchError` + `SEARCH_*` code) and plain
//! argument errors, which carry no structured `{name, code}` at all. Keeping that split lets the
//! wrapper record exactly the `error` field the reference records.

use dsh_protocol::ToolErrorInfo;
use serde_json::Value;

/// Machine-routable failure codes. [`ErrorCode::Unclassified`] is the reference's plain `Error`
/// (value checks such as "offset must be a positive integer"): it has no recorded code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Schema-level argument failure (`ToolArgsError`, `INVALID_ARGS`).
    InvalidArgs,
    /// A plain value-constraint failure; the reference records no `{name, code}` for it.
    Unclassified,
    /// `FS_NOT_FOUND`: missing file, confirmed-absent edit target, offset past EOF.
    FsNotFound,
    /// `FS_NOT_TEXT`: binary (NUL in the sample) or invalid UTF-8.
    FsNotText,
    /// `FS_NOT_REGULAR_FILE`: a directory or special file.
    FsNotRegularFile,
    /// `FS_PERMISSION_DENIED`: the OS refused access.
    FsPermissionDenied,
    /// `FS_SANDBOX_DENIED`: the workspace fence refused a mutation.
    FsSandboxDenied,
    /// `FS_IO_ERROR`: any other I/O failure.
    FsIoError,
    /// `FS_STALE_VERSION`: the file changed (or vanished) since this session read it.
    FsStaleVersion,
    /// `FS_NOT_OBSERVED`: a mutation of a file this session never read.
    FsNotObserved,
    /// `FS_AMBIGUOUS_EDIT`: `old_string` matched more than once without `replace_all`.
    FsAmbiguousEdit,
    /// `FS_EDIT_NOT_FOUND`: `old_string` did not match.
    FsEditNotFound,
    /// `SEARCH_INVALID_PATTERN`: the regex or glob was rejected.
    SearchInvalidPattern,
    /// `SEARCH_FAILED`: the search could not run (missing target, unreadable entries).
    SearchFailed,
    /// `SEARCH_ABORTED`: the caller cancelled the search.
    SearchAborted,
}

impl ErrorCode {
    /// The wire code, or `None` for an unclassified (plain) error.
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            Self::InvalidArgs => "INVALID_ARGS",
            Self::Unclassified => return None,
            Self::FsNotFound => "FS_NOT_FOUND",
            Self::FsNotText => "FS_NOT_TEXT",
            Self::FsNotRegularFile => "FS_NOT_REGULAR_FILE",
            Self::FsPermissionDenied => "FS_PERMISSION_DENIED",
            Self::FsSandboxDenied => "FS_SANDBOX_DENIED",
            Self::FsIoError => "FS_IO_ERROR",
            Self::FsStaleVersion => "FS_STALE_VERSION",
            Self::FsNotObserved => "FS_NOT_OBSERVED",
            Self::FsAmbiguousEdit => "FS_AMBIGUOUS_EDIT",
            Self::FsEditNotFound => "FS_EDIT_NOT_FOUND",
            Self::SearchInvalidPattern => "SEARCH_INVALID_PATTERN",
            Self::SearchFailed => "SEARCH_FAILED",
            Self::SearchAborted => "SEARCH_ABORTED",
        })
    }

    /// The error class name the reference records beside the code (`FsError`, `SearchError`,
    /// `ToolArgsError`), or `None` for an unclassified error.
    pub fn error_name(self) -> Option<&'static str> {
        match self {
            Self::InvalidArgs => Some("ToolArgsError"),
            Self::Unclassified => None,
            Self::SearchInvalidPattern | Self::SearchFailed | Self::SearchAborted => {
                Some("SearchError")
            }
            _ => Some("FsError"),
        }
    }
}

/// A tool failure: a code, the model-facing message (without the pipeline's `Error: ` envelope)
/// and an optional operator-facing detail that never reaches the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    code: ErrorCode,
    message: String,
    detail: Option<String>,
}

impl ToolError {
    /// A new error with `code` and model-facing `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// A plain argument error (no recorded code), as the reference's value checks throw.
    pub fn plain(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unclassified, message)
    }

    /// Attach an operator-facing detail (logs, diagnostics); the model text is unchanged.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// The failure code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The model-facing message, without the `Error: ` envelope.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The operator-facing detail, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// The text block the reference's pipeline renders for a thrown error: `Error: <message>`.
    pub fn model_text(&self) -> String {
        format!("Error: {}", self.message)
    }

    /// The `error` field of the recorded `tool/result` (`{name, code}`), or `None` when the
    /// reference records none (plain errors).
    pub fn info(&self) -> Option<ToolErrorInfo> {
        let name = self.code.error_name()?;
        let code = self.code.as_str()?;
        Some(ToolErrorInfo::new(name, code))
    }

    /// The reference appends the only correct recovery to the two guarded-mutation failures at
    /// the model boundary of `write`/`edit`; everything else passes through unchanged.
    pub(crate) fn remediated(mut self) -> Self {
        let remedy = match self.code {
            ErrorCode::FsStaleVersion => "re-read the file, then retry",
            ErrorCode::FsNotObserved => "read the file, then retry",
            _ => return self,
        };
        self.message = format!("{} — {remedy}", self.message);
        self
    }
}

/// Deserialize raw tool arguments into one of this crate's argument types. The registry's own
/// JSON-Schema validation runs before a tool body, so this is a safety net: its text is serde's,
/// not the reference validator's.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|error| {
        ToolError::new(
            ErrorCode::InvalidArgs,
            format!("invalid arguments: {error}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_follows_the_reference_families() {
        let fs = ToolError::new(ErrorCode::FsNotFound, "x");
        assert_eq!(
            fs.info(),
            Some(ToolErrorInfo::new("FsError", "FS_NOT_FOUND"))
        );
        let search = ToolError::new(ErrorCode::SearchFailed, "x");
        assert_eq!(
            search.info(),
            Some(ToolErrorInfo::new("SearchError", "SEARCH_FAILED"))
        );
        assert_eq!(
            ToolError::plain("offset must be a positive integer").info(),
            None
        );
        assert_eq!(ToolError::plain("boom").model_text(), "Error: boom");
    }

    #[test]
    fn remedies_are_appended_only_to_guarded_mutation_codes() {
        let stale = ToolError::new(
            ErrorCode::FsStaleVersion,
            "cannot edit \"/a\": file changed since it was read",
        );
        assert_eq!(
            stale.remediated().message(),
            "cannot edit \"/a\": file changed since it was read — re-read the file, then retry"
        );
        let unseen = ToolError::new(
            ErrorCode::FsNotObserved,
            "edit requires reading \"/a\" first",
        );
        assert_eq!(
            unseen.remediated().message(),
            "edit requires reading \"/a\" first — read the file, then retry"
        );
        let other = ToolError::new(ErrorCode::FsNotFound, "cannot edit \"/a\": not found");
        assert_eq!(
            other.remediated().message(),
            "cannot edit \"/a\": not found"
        );
    }

    #[test]
    fn parse_args_maps_serde_failures_to_invalid_args() {
        #[derive(serde::Deserialize, Debug)]
        struct A {
            #[expect(dead_code, reason = "only deserialized")]
            x: String,
        }
        let error = parse_args::<A>(&serde_json::json!({})).err();
        assert_eq!(error.map(|e| e.code()), Some(ErrorCode::InvalidArgs));
    }
}

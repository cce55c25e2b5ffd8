//! The `write` and `edit` tools: guarded by the read-before-edit record, fenced by the
//! workspace, published atomically, and reported with the reference's texts and diff `meta`.
//!
//! Order of checks follows the reference: `edit` consults the record first (never read:
//! `FS_NOT_OBSERVED`; read as absent: `FS_NOT_FOUND`), then the fence, then freshness; `write`
//! derives its intent (create-only, or replace-this-version) without failing, then the fence,
//! then the guard. Staleness is `FS_STALE_VERSION`; both guarded codes gain the reference's
//! model-facing remedy.

use dsh_fs_local::{FileStat, FileSystem, read_all};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::atomic::{
    detect_crlf, normalize_line_endings, not_observed_overwrite, restore_crlf, write_file_atomic,
};
use crate::diff::{FileDiff, compute_hunk_diffs};
use crate::error::{ErrorCode, ToolError};
use crate::observe::{
    ContentHash, FileVersion, Observation, Observations, WriteIntent, hash_file, stat, write_intent,
};
use crate::path::{Target, Workspace, io_error};
use crate::read::decode_utf8;

/// Exclusive byte bound on each side of an overwrite's diff basis (the reference's default
/// `diffBasisMaxBytes`, 10 MiB); at or above it the write reports no hunks.
pub const DIFF_BASIS_MAX_BYTES: usize = 10 * 1024 * 1024;

/// `write` arguments. Escalation fields (`sandbox_permissions`, `justification`) belong to the
/// wrapper and are ignored here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WriteArgs {
    /// Path to write.
    pub file_path: String,
    /// The full new content.
    pub content: String,
}

/// `edit` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EditArgs {
    /// Path to edit.
    pub file_path: String,
    /// Literal text to replace.
    pub old_string: String,
    /// Literal replacement.
    pub new_string: String,
    /// Replace every match instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// Whether a write created the file or replaced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOperation {
    /// The file did not exist.
    Create,
    /// An existing file was replaced.
    Update,
}

/// A successful `write` or `edit`.
#[derive(Debug, Clone, PartialEq)]
pub struct MutationOutput {
    /// The model-facing text block.
    pub text: String,
    /// The `tool/result` `meta`: `{"diffs": [...]}`.
    pub meta: Value,
    /// The applied hunks (also inside `meta`).
    pub diffs: Vec<FileDiff>,
    /// The resolved target.
    pub target: Target,
    /// Create or update (an edit is always an update).
    pub operation: WriteOperation,
    /// The new version (already recorded when a policy was passed).
    pub version: FileVersion,
}

/// The `write` confirmation envelope.
pub fn format_write_output(display: &str, operation: WriteOperation) -> String {
    let verb = match operation {
        WriteOperation::Create => "Created",
        WriteOperation::Update => "Updated",
    };
    format!("<path>{display}</path>\n<type>file</type>\n<content>\n{verb} file\n</content>")
}

/// The `edit` confirmation sentence.
pub fn format_edit_output(display: &str, replace_all: bool) -> String {
    if replace_all {
        format!("The file {display} has been updated. All occurrences were successfully replaced.")
    } else {
        format!("The file {display} has been updated successfully.")
    }
}

fn diffs_meta(diffs: &[FileDiff]) -> Value {
    json!({ "diffs": diffs })
}

/// The file's bytes and the version they correspond to.
fn read_versioned(
    fs: &dyn FileSystem,
    target: &Target,
    meta: &FileStat,
    verb: &str,
) -> Result<(Vec<u8>, FileVersion), ToolError> {
    let bytes = read_all(fs, &target.key).map_err(|e| io_error(verb, &target.display, &e))?;
    let mut hash = ContentHash::default();
    hash.update(&bytes);
    Ok((bytes, hash.version(meta)))
}

/// The permission bits of the file about to be replaced.
fn kept_mode(fs: &dyn FileSystem, target: &Target, verb: &str) -> Result<u32, ToolError> {
    match stat(fs, &target.key) {
        Ok(Some(meta)) => Ok(meta.mode),
        Ok(None) => Err(stale(verb, &target.display, "file no longer exists")),
        Err(error) => Err(io_error(verb, &target.display, &error)),
    }
}

fn version_after(fs: &dyn FileSystem, target: &Target, content: &[u8]) -> FileVersion {
    let mut hash = ContentHash::default();
    hash.update(content);
    match stat(fs, &target.key) {
        Ok(Some(meta)) => hash.version(&meta),
        // Removed right after publication: a version no later check can match.
        _ => FileVersion {
            mtime: None,
            size: u64::MAX,
            hash: hash.version_hash(),
        },
    }
}

/// Create or fully replace a UTF-8 text file (default diff bound).
pub fn write(
    args: &WriteArgs,
    workspace: &Workspace,
    observations: Option<&Observations>,
) -> Result<MutationOutput, ToolError> {
    write_with(args, workspace, observations, DIFF_BASIS_MAX_BYTES)
}

/// [`write`] with an explicit exclusive diff-basis bound.
pub fn write_with(
    args: &WriteArgs,
    workspace: &Workspace,
    observations: Option<&Observations>,
    diff_basis_max_bytes: usize,
) -> Result<MutationOutput, ToolError> {
    if args.file_path.trim().is_empty() {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    let target = workspace.resolve(&args.file_path)?;
    // Held from the guard to the record, so the check-then-write is atomic for this session.
    let mut record = observations.map(Observations::lock);
    let intent = record
        .as_ref()
        .map(|map| write_intent(map.get(&target.key).copied()));
    workspace.check_writable(&target)?;
    let fs = workspace.fs();
    let (operation, before) = guard_write(
        fs,
        &target,
        intent,
        args.content.len(),
        diff_basis_max_bytes,
    )
    .map_err(ToolError::remediated)?;
    // An update keeps the replaced file's mode; one that cannot be read fails the write
    // rather than publish a private file with the default mode.
    let permissions = match operation {
        WriteOperation::Update => Some(kept_mode(fs, &target, "write")?),
        WriteOperation::Create => None,
    };
    let create_only = intent == Some(WriteIntent::CreateIfAbsent);
    write_file_atomic(
        fs,
        &target.key,
        &target.display,
        args.content.as_bytes(),
        permissions,
        create_only,
    )
    .map_err(ToolError::remediated)?;
    let version = version_after(fs, &target, args.content.as_bytes());
    if let Some(map) = record.as_mut() {
        map.insert(target.key.clone(), Observation::Present(version));
    }
    let diffs = before.map_or_else(Vec::new, |before| {
        compute_hunk_diffs(
            &args.file_path,
            &before,
            &normalize_line_endings(&args.content),
        )
    });
    Ok(MutationOutput {
        text: format_write_output(&target.display, operation),
        meta: diffs_meta(&diffs),
        diffs,
        target,
        operation,
        version,
    })
}

/// Check the write intent against the file as it is now; returns the operation and the
/// optional LF-normalized diff basis of the replaced content.
fn guard_write(
    fs: &dyn FileSystem,
    target: &Target,
    intent: Option<WriteIntent>,
    content_len: usize,
    max: usize,
) -> Result<(WriteOperation, Option<String>), ToolError> {
    let display = target.display.as_str();
    let existing = stat(fs, &target.key).map_err(|e| io_error("write", display, &e))?;
    if existing.as_ref().is_some_and(|meta| !meta.is_file()) {
        return Err(ToolError::new(
            ErrorCode::FsNotRegularFile,
            format!("cannot write \"{display}\": not a regular file"),
        ));
    }
    let Some(meta) = existing else {
        if let Some(WriteIntent::ReplaceIfVersion(_)) = intent {
            return Err(stale("write", display, "file no longer exists"));
        }
        return Ok((WriteOperation::Create, None));
    };
    if intent == Some(WriteIntent::CreateIfAbsent) {
        return Err(not_observed_overwrite(display));
    }
    // The diff basis is best-effort presentation: a large, binary or non-UTF-8 side yields none,
    // and a file too large for a basis is only hashed (streamed), never held in memory.
    let keep_basis = content_len < max && usize::try_from(meta.len).is_ok_and(|len| len < max);
    let (bytes, version) = if keep_basis {
        let (bytes, version) = read_versioned(fs, target, &meta, "write")?;
        (Some(bytes), version)
    } else {
        let version =
            hash_file(fs, &target.key, &meta).map_err(|e| io_error("write", display, &e))?;
        (None, version)
    };
    if let Some(WriteIntent::ReplaceIfVersion(seen)) = intent
        && seen != version
    {
        return Err(stale("write", display, "file changed since it was read"));
    }
    let before = bytes
        .filter(|bytes| !bytes.contains(&0))
        .and_then(|bytes| decode_utf8(&bytes))
        .map(|text| normalize_line_endings(&text));
    Ok((WriteOperation::Update, before))
}

fn stale(verb: &str, display: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::FsStaleVersion,
        format!("cannot {verb} \"{display}\": {why}"),
    )
}

/// Validate the edit arguments the schema cannot express.
fn parse_edit_args(args: &EditArgs) -> Result<(), ToolError> {
    if args.file_path.trim().is_empty() {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    if args.old_string.is_empty() {
        return Err(ToolError::plain("old_string must be a non-empty string"));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::plain("old_string and new_string must differ"));
    }
    Ok(())
}

/// Replace literal text in an existing UTF-8 file: exactly one match unless `replace_all`.
pub fn edit(
    args: &EditArgs,
    workspace: &Workspace,
    observations: Option<&Observations>,
) -> Result<MutationOutput, ToolError> {
    parse_edit_args(args)?;
    let replace_all = args.replace_all.unwrap_or(false);
    let target = workspace.resolve(&args.file_path)?;
    let display = target.display.clone();
    let mut record = observations.map(Observations::lock);
    let guard = match record.as_ref().map(|map| map.get(&target.key).copied()) {
        None => None,
        Some(None) => {
            let error = ToolError::new(
                ErrorCode::FsNotObserved,
                format!("edit requires reading \"{display}\" first"),
            );
            return Err(error.remediated());
        }
        Some(Some(Observation::Absent)) => {
            return Err(ToolError::new(
                ErrorCode::FsNotFound,
                format!("cannot edit \"{display}\": not found"),
            ));
        }
        Some(Some(Observation::Present(version))) => Some(version),
    };
    workspace.check_writable(&target)?;
    let fs = workspace.fs();
    let (before, after, content) =
        apply_edit(fs, &target, guard, args, replace_all).map_err(ToolError::remediated)?;
    let permissions = kept_mode(fs, &target, "edit")?;
    write_file_atomic(
        fs,
        &target.key,
        &display,
        &content,
        Some(permissions),
        false,
    )?;
    let version = version_after(fs, &target, &content);
    if let Some(map) = record.as_mut() {
        map.insert(target.key.clone(), Observation::Present(version));
    }
    let diffs = compute_hunk_diffs(&args.file_path, &before, &after);
    Ok(MutationOutput {
        text: format_edit_output(&display, replace_all),
        meta: diffs_meta(&diffs),
        diffs,
        target,
        operation: WriteOperation::Update,
        version,
    })
}

/// Check freshness, decode, and apply the literal replacement. Returns the LF-normalized
/// before/after texts (the diff basis) and the bytes to store (original line endings and BOM).
fn apply_edit(
    fs: &dyn FileSystem,
    target: &Target,
    guard: Option<FileVersion>,
    args: &EditArgs,
    replace_all: bool,
) -> Result<(String, String, Vec<u8>), ToolError> {
    let display = target.display.as_str();
    let Some(meta) = stat(fs, &target.key).map_err(|e| io_error("edit", display, &e))? else {
        return Err(stale("edit", display, "file changed since it was read"));
    };
    if !meta.is_file() {
        return Err(ToolError::new(
            ErrorCode::FsNotRegularFile,
            format!("cannot edit \"{display}\": not a regular file"),
        ));
    }
    let (bytes, version) = read_versioned(fs, target, &meta, "edit")?;
    if guard.is_some_and(|seen| seen != version) {
        return Err(stale("edit", display, "file changed since it was read"));
    }
    if bytes.contains(&0) {
        return Err(ToolError::new(
            ErrorCode::FsNotText,
            format!("cannot edit \"{display}\": binary file"),
        ));
    }
    let raw = decode_utf8(&bytes).ok_or_else(|| {
        ToolError::new(
            ErrorCode::FsNotText,
            format!("cannot edit \"{display}\": invalid UTF-8 text"),
        )
    })?;
    let before = normalize_line_endings(&raw);
    let after = apply_literal_edit(
        &before,
        &args.old_string,
        &args.new_string,
        replace_all,
        display,
    )?;
    let mut stored = if detect_crlf(&raw) {
        restore_crlf(&after)
    } else {
        after.clone()
    };
    // Unlike the reference (whose decoder drops it), a leading BOM survives the edit.
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        stored.insert(0, '\u{FEFF}');
    }
    Ok((before, after, stored.into_bytes()))
}

/// Replace `old` by `new` in LF-normalized `content` (both sides normalized too). Zero matches
/// are `FS_EDIT_NOT_FOUND`; several without `replace_all` are `FS_AMBIGUOUS_EDIT`.
pub fn apply_literal_edit(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    display: &str,
) -> Result<String, ToolError> {
    let old = normalize_line_endings(old);
    if old.is_empty() {
        return Err(ToolError::new(
            ErrorCode::FsEditNotFound,
            "old_string must be a non-empty string",
        ));
    }
    let new = normalize_line_endings(new);
    let matches = content.matches(old.as_str()).count();
    if matches == 0 {
        return Err(ToolError::new(
            ErrorCode::FsEditNotFound,
            format!("old_string was not found in \"{display}\""),
        ));
    }
    if !replace_all && matches > 1 {
        return Err(ToolError::new(
            ErrorCode::FsAmbiguousEdit,
            format!(
                "old_string matched {matches} times in \"{display}\"; provide a more specific old_string or set replace_all to true"
            ),
        ));
    }
    Ok(content.replace(old.as_str(), &new))
}

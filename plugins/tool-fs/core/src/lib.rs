//! The pure, synchronous logic of the file and search tools — `read`, `write`, `edit`, `glob`,
//! `grep` and `todo_write` — over real files, with the model-facing texts, `meta` payloads and
//! error texts of the reference harness. It owns argument value checks, path resolution against
//! a session workspace ([`Workspace`]), the mutation fence (refusing writes outside the
//! workspace root unless full access is set), the read-before-edit observation policy
//! ([`Observations`]: per realpath, the version the last read saw; `FS_NOT_OBSERVED`,
//! `FS_NOT_FOUND`, `FS_STALE_VERSION`), atomic publication, the jsdiff-compatible hunk diffs of
//! `write`/`edit` `meta`, ripgrep-library-backed `glob`/`grep` with their inline caps and
//! overflow notes, and todo-list validation with the `todo/write` event data.
//!
//! It does not own the plugin boundary (tool registration, schemas, JSON-Schema argument
//! validation, the `Error: ` envelope and `{name, code}` recording, spill storage, approval and
//! escalation prompts, appending session events) and it is not async: every function blocks on
//! the filesystem, so a wrapper runs it on the host's blocking pool.
//!
//! Where the brief and the reference differ, the reference's recorded behaviour wins: `glob`
//! lists hidden and ignored files (only VCS metadata is excluded) oldest first, a file changed
//! since it was read is `FS_STALE_VERSION`, and an edit of a file deleted after its read is
//! `FS_STALE_VERSION` (an edit of a file whose read found nothing is `FS_NOT_FOUND`).

mod atomic;
mod diff;
mod error;
mod fence;
mod glob;
mod grep;
mod mutate;
mod observe;
mod path;
mod read;
mod search;
mod todo;
mod window;

pub use diff::{DIFF_CONTEXT, FileDiff, compute_hunk_diffs};
pub use error::{ErrorCode, ToolError, parse_args};
pub use glob::{
    GLOB_VCS_EXCLUDES, GlobArgs, GlobOutput, GlobSample, format_glob_sample, glob, glob_meta,
    glob_spill_text, render_glob, sample_across_top_level,
};
pub use grep::{
    GrepArgs, GrepMatch, GrepOutput, format_grep_matches, grep, grep_meta, grep_spill_text,
    render_grep,
};
pub use mutate::{
    DIFF_BASIS_MAX_BYTES, EditArgs, MutationOutput, WriteArgs, WriteOperation, apply_literal_edit,
    edit, format_edit_output, format_write_output, write, write_with,
};
pub use observe::{FileVersion, Observation, Observations};
pub use path::{
    SandboxMode, Target, Workspace, escalation_hint_marker, resolve_target, sandbox_denial_marker,
};
pub use read::{ReadArgs, ReadOutput, parse_read_args, read, read_with};
pub use search::{
    GLOB_MAX_RESULTS, GREP_MAX_LINE_BYTES, GREP_MAX_MATCHES, SEARCH_META_MAX_BYTES, SearchOptions,
    SpillRef, preview_line, to_workdir_relative,
};
pub use todo::{TodoCounts, TodoItem, TodoOutput, TodoStatus, TodoWriteArgs, todo_write};
pub use window::{
    FileLine, READ_LIMIT, READ_MAX_BYTES, READ_MAX_LINE_LENGTH, ReadWindow, WindowBuilder,
    WindowResult, build_window, format_read_output, lang_from_path, read_meta,
};

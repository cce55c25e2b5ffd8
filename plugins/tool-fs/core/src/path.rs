//! The workspace a tool call runs against, path resolution, and the mutation fence.
//!
//! Resolution follows the reference's local backend: the model-facing *display* path is the
//! lexical `resolve(cwd, path)` (symlinks kept, `.`/`..` folded, no trailing separator), while the
//! *key* that observations are recorded under is the realpath, so two aliases of one file share
//! one observation. For a file that does not exist yet the key is the realpath of the nearest
//! existing ancestor plus the missing suffix, so it stays stable across creation.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use dsh_fs_local::{FileSystem, LocalFs};

use crate::fence::{Fenced, Policy};

use crate::error::{ErrorCode, ToolError};

/// The sandbox mode mutations run under: the vocabulary's.
pub use dsh_protocol::SandboxMode;

/// The model-facing denial marker the reference shares between bash and the fs tools.
pub fn sandbox_denial_marker(mode: SandboxMode) -> String {
    format!("[sandbox: file access denied under {} mode]", mode.as_str())
}

/// The same-turn escalation hint that rides a denial when escalation fields are advertised.
pub fn escalation_hint_marker(subject: &str) -> String {
    format!(
        "[sandbox: escalation available — retry this exact {subject} once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
    )
}

/// Where a call runs: the session cwd that relative paths resolve against, the fence that
/// reads and writes are checked against, and the filesystem every file operation goes through
/// (held to the fence on every read and write, see [`crate::fence`]).
#[derive(Clone)]
pub struct Workspace {
    fs: Fenced,
    escalation_available: bool,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("policy", &self.fs.policy)
            .field("escalation_available", &self.escalation_available)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// A workspace rooted at `root` in `workspace-write` mode (the reference's default preset)
    /// with no extra writable roots. A relative `root` is made absolute against the process cwd.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        Self {
            fs: Fenced {
                inner: Arc::new(LocalFs),
                policy: Policy {
                    root,
                    mode: SandboxMode::WorkspaceWrite,
                    extra_writable_roots: Vec::new(),
                    protected: Vec::new(),
                    hidden: Vec::new(),
                    exposed: Vec::new(),
                    readable_roots: None,
                },
            },
            escalation_available: false,
        }
    }

    /// Route every file operation through `fs` (the host's `fs` service, a sandbox).
    pub fn with_fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs.inner = fs;
        self
    }

    /// The filesystem file operations go through, held to this workspace's fence.
    pub fn fs(&self) -> &dyn FileSystem {
        &self.fs
    }

    /// Set the sandbox mode (`DangerFullAccess` is "full access": no fence).
    pub fn with_mode(mut self, mode: SandboxMode) -> Self {
        self.fs.policy.mode = mode;
        self
    }

    /// Add a root that `workspace-write` also permits.
    pub fn with_writable_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.fs.policy.extra_writable_roots.push(root.into());
        self
    }

    /// Keep `path` read-only in `workspace-write` (a writable root inside it stays writable).
    pub fn with_protected(mut self, path: impl Into<PathBuf>) -> Self {
        self.fs.policy.protected.push(path.into());
        self
    }

    /// Neither read nor write `path` (a file or everything below a directory) outside full
    /// access, but for a writable root or an exposed path inside it.
    pub fn with_hidden(mut self, path: impl Into<PathBuf>) -> Self {
        self.fs.policy.hidden.push(path.into());
        self
    }

    /// Let `path`, inside a hidden one, be read (never written).
    pub fn with_exposed(mut self, path: impl Into<PathBuf>) -> Self {
        self.fs.policy.exposed.push(path.into());
        self
    }

    /// Fence reads to `roots` (with the writable roots and the workspace) outside full access.
    pub fn with_readable_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.fs.policy.readable_roots = Some(roots);
        self
    }

    /// The session's sandbox policy over this workspace: its mode, its writable roots after
    /// the working directory (which is this workspace's own), its protected, hidden and
    /// exposed paths and, when reads are fenced, its readable roots; so the file tools obey
    /// the policy the shell does.
    pub fn with_policy(self, policy: dsh_protocol::SandboxPolicy) -> Self {
        let workspace = policy
            .writable_roots
            .into_iter()
            .skip(1)
            .fold(self.with_mode(policy.mode), Workspace::with_writable_root);
        let workspace = policy
            .protected
            .into_iter()
            .fold(workspace, Workspace::with_protected);
        let workspace = policy
            .hidden
            .into_iter()
            .fold(workspace, Workspace::with_hidden);
        let workspace = policy
            .exposed
            .into_iter()
            .fold(workspace, Workspace::with_exposed);
        match policy.readable_roots {
            Some(roots) => {
                workspace.with_readable_roots(roots.into_iter().map(Into::into).collect())
            }
            None => workspace,
        }
    }

    /// Whether `path` (symlinks resolved) may be read: not in `/proc`, `/sys` or `/dev`, not
    /// hidden, and under a readable root when reads are fenced.
    pub fn may_read(&self, path: &Path) -> bool {
        self.fs.policy.may_read(self.raw(), path)
    }

    /// The filesystem without the fence, for resolving paths.
    fn raw(&self) -> &dyn FileSystem {
        self.fs.inner.as_ref()
    }

    /// Refuse to read under `path` (a search's directory) when the sandbox does not let it.
    pub fn check_path_readable(&self, path: &Path) -> Result<(), ToolError> {
        if self.may_read(path) {
            return Ok(());
        }
        Err(ToolError::new(
            ErrorCode::FsSandboxDenied,
            sandbox_denial_marker(self.mode()),
        )
        .with_detail(format!(
            "cannot read \"{}\": outside what the sandbox lets this session read",
            path.display()
        )))
    }

    /// Whether `path` (symlinks resolved) is one the sandbox hides.
    pub fn is_hidden(&self, path: &Path) -> bool {
        let key = canonical_or_self(self.raw(), path);
        self.fs.policy.hides(self.raw(), &key)
    }

    /// Refuse to read `target` when the sandbox hides it.
    pub fn check_readable(&self, target: &Target) -> Result<(), ToolError> {
        if self.may_read(&target.key) {
            return Ok(());
        }
        Err(ToolError::new(
            ErrorCode::FsSandboxDenied,
            sandbox_denial_marker(self.mode()),
        )
        .with_detail(format!(
            "cannot read \"{}\": the sandbox hides it or fences it out",
            target.display
        )))
    }

    /// Add the platform temp areas (`/tmp` and the OS temp dir), which the reference's
    /// `workspace-write` mode also permits.
    pub fn with_temp_roots(self) -> Self {
        self.with_writable_root("/tmp")
            .with_writable_root(std::env::temp_dir())
    }

    /// Under the session's sandbox `policy`; without one (no `sandbox` service), under
    /// `DSH_PERMISSION_MODE` (default `workspace-write`) over the root and the temp areas.
    pub fn with_policy_or_env(self, policy: Option<dsh_protocol::SandboxPolicy>) -> Self {
        match policy {
            Some(policy) => self.with_policy(policy),
            None => {
                let mode = std::env::var("DSH_PERMISSION_MODE")
                    .ok()
                    .and_then(|name| SandboxMode::parse(&name))
                    .unwrap_or(SandboxMode::WorkspaceWrite);
                self.with_mode(mode).with_temp_roots()
            }
        }
    }

    /// Whether the tool advertises `sandbox_permissions`; a denial then carries the hint.
    pub fn with_escalation_available(mut self, available: bool) -> Self {
        self.escalation_available = available;
        self
    }

    /// The session cwd.
    pub fn root(&self) -> &Path {
        &self.fs.policy.root
    }

    /// The sandbox mode.
    pub fn mode(&self) -> SandboxMode {
        self.fs.policy.mode
    }

    /// Whether a write of `target` is refused only because it is protected (a person may allow
    /// it): the path lies under a protected path and a writable root, and no writable root
    /// inside the protected path holds it.
    pub fn is_protected(&self, target: &Target) -> bool {
        let fs = self.raw();
        let policy = &self.fs.policy;
        let key = &target.key;
        policy
            .protected
            .iter()
            .map(|protected| canonical_or_self(fs, protected))
            .filter(|protected| key.starts_with(protected))
            .any(|protected| {
                !policy
                    .writable_roots()
                    .map(|root| canonical_or_self(fs, root))
                    .any(|root| root.starts_with(&protected) && key.starts_with(&root))
            })
    }

    /// Refuse a mutation of `target` unless the mode allows it: `read-only` refuses all,
    /// `workspace-write` requires the target's realpath under a writable root and outside the
    /// protected and hidden paths, full access allows everything. The model text is the
    /// reference's marker; the detail names the path and the root.
    pub fn check_writable(&self, target: &Target) -> Result<(), ToolError> {
        let mode = self.mode();
        let refuse = |why: String| {
            let mut text = sandbox_denial_marker(mode);
            if self.escalation_available {
                text.push('\n');
                text.push_str(&escalation_hint_marker("operation"));
            }
            Err(ToolError::new(ErrorCode::FsSandboxDenied, text).with_detail(why))
        };
        match mode {
            SandboxMode::DangerFullAccess => Ok(()),
            SandboxMode::ReadOnly => refuse(format!(
                "cannot write \"{}\": the sandbox is read-only",
                target.display
            )),
            SandboxMode::WorkspaceWrite => {
                let policy = &self.fs.policy;
                // A workspace without an absolute root would fence nothing (every path starts
                // with the empty one).
                if !policy.root.is_absolute() {
                    return refuse(format!(
                        "cannot write \"{}\": the workspace has no absolute root",
                        target.display
                    ));
                }
                // Re-canonicalize now so a symlinked ancestor swapped since resolution is seen,
                // and refuse when it now names another file than the one about to be written
                // (the write itself then refuses any symbolic link on the way).
                let fs = self.raw();
                let fresh = resolve_key(fs, Path::new(&target.display))?;
                if fresh != target.key {
                    return refuse(format!(
                        "cannot write \"{}\": the path changed while it was checked",
                        target.display
                    ));
                }
                if policy.hides(fs, &fresh) || !self.may_read(&fresh) {
                    return refuse(format!(
                        "cannot write \"{}\": the sandbox hides it",
                        target.display
                    ));
                }
                if self.is_protected(target) {
                    return refuse(format!(
                        "cannot write \"{}\": it is protected (a person must allow a change there)",
                        target.display
                    ));
                }
                let inside = policy
                    .writable_roots()
                    .map(|root| canonical_or_self(fs, root))
                    .any(|root| fresh.starts_with(root));
                if inside {
                    Ok(())
                } else {
                    refuse(format!(
                        "cannot write \"{}\": outside the workspace root \"{}\"",
                        target.display,
                        policy.root.display()
                    ))
                }
            }
        }
    }

    /// Resolve a model-supplied path against this workspace.
    pub fn resolve(&self, requested: &str) -> Result<Target, ToolError> {
        resolve_target(self.raw(), self.root(), requested)
    }
}

/// A resolved path: what the model sees and the identity observations are keyed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The absolute, lexically normalized path shown to the model.
    pub display: String,
    /// The realpath identity (stable across aliases and across creation).
    pub key: PathBuf,
}

fn has_parent_segment(path: &Path) -> bool {
    path.components().any(|c| matches!(c, Component::ParentDir))
}

fn canonical_or_self(fs: &dyn FileSystem, path: &Path) -> PathBuf {
    fs.canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Node's `path.resolve(cwd, path)`: join, then fold `.` and `..` lexically.
pub(crate) fn lexical_resolve(cwd: &Path, path: &Path) -> PathBuf {
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(component.as_os_str())
            }
            Component::CurDir => {}
            Component::ParentDir => {
                // `..` at the root stays at the root, as in Node.
                if out.parent().is_some() {
                    out.pop();
                }
            }
        }
    }
    out
}

/// Resolve `requested` against `cwd` into display path and realpath key. A blank path is the
/// reference's `FS_NOT_FOUND`; a path through a regular file cannot exist (`FS_NOT_FOUND`).
pub fn resolve_target(
    fs: &dyn FileSystem,
    cwd: &Path,
    requested: &str,
) -> Result<Target, ToolError> {
    if requested.trim().is_empty() {
        return Err(ToolError::new(
            ErrorCode::FsNotFound,
            "file_path must be a non-empty string",
        ));
    }
    let requested_path = Path::new(requested);
    // With `..` in play the filesystem identity of a symlinked cwd becomes observable, so the
    // reference resolves against the canonical cwd in that case only.
    let base = if has_parent_segment(cwd) || has_parent_segment(requested_path) {
        canonical_or_self(fs, cwd)
    } else {
        cwd.to_path_buf()
    };
    let display_path = lexical_resolve(&base, requested_path);
    let key = resolve_key(fs, &display_path)?;
    Ok(Target {
        display: display_path.to_string_lossy().into_owned(),
        key,
    })
}

fn resolve_key(fs: &dyn FileSystem, display_path: &Path) -> Result<PathBuf, ToolError> {
    let not_dir = || {
        ToolError::new(
            ErrorCode::FsNotFound,
            format!(
                "cannot resolve \"{}\": a parent path segment is not a directory",
                display_path.display()
            ),
        )
    };
    match fs.canonicalize(display_path) {
        Ok(real) => return Ok(real),
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => return Err(not_dir()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("resolve", &display_path.to_string_lossy(), &error)),
    }
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut ancestor = display_path;
    loop {
        let Some(name) = ancestor.file_name() else {
            return Ok(display_path.to_path_buf());
        };
        missing.push(name);
        let Some(parent) = ancestor.parent() else {
            return Ok(display_path.to_path_buf());
        };
        ancestor = parent;
        match fs.canonicalize(ancestor) {
            Ok(real) => {
                if !fs
                    .stat(&real)
                    .ok()
                    .flatten()
                    .is_some_and(|meta| meta.is_dir())
                {
                    return Err(not_dir());
                }
                let mut key = real;
                key.extend(missing.iter().rev());
                return Ok(key);
            }
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => return Err(not_dir()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error("resolve", &display_path.to_string_lossy(), &error)),
        }
    }
}

/// Map an unexpected I/O failure on `display` during `verb` into the fs vocabulary.
pub(crate) fn io_error(verb: &str, display: &str, error: &io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::PermissionDenied => ToolError::new(
            ErrorCode::FsPermissionDenied,
            format!("cannot {verb} \"{display}\": permission denied"),
        ),
        io::ErrorKind::NotFound => ToolError::new(
            ErrorCode::FsNotFound,
            format!("cannot {verb} \"{display}\": not found"),
        ),
        _ => ToolError::new(
            ErrorCode::FsIoError,
            format!("cannot {verb} \"{display}\": {error}"),
        ),
    }
}

//! Directory walks for `glob` and `grep`: what a walk covers ([`WalkRequest`]), what it hands
//! its visitor ([`Walked`]), and the local implementation, ripgrep's own walker (the `ignore`
//! crate), so ignore files, hidden entries and override globs behave as in `rg`.

use std::io;
use std::path::Path;
use std::time::SystemTime;

use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;

/// What a walk covers: everything under `root` that the filters let through.
#[derive(Debug, Clone, Copy)]
pub struct WalkRequest<'a> {
    pub root: &'a Path,
    /// ripgrep's standard filters: ignore files (`.gitignore` inside a git repository,
    /// `.ignore`), hidden entries skipped. Without them everything is walked.
    pub standard_filters: bool,
    /// More ignore-file names honoured like `.ignore` (`.rgignore`).
    pub ignore_files: &'a [String],
    /// Globs in ripgrep's override syntax (`!` excludes), matched relative to `glob_base`; when
    /// any is positive, only what one matches is listed.
    pub globs: &'a [String],
    pub glob_base: &'a Path,
    /// Whether entries carry their modification time (a stat per file).
    pub mtimes: bool,
}

/// One entry of a walk, in name order within each directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkEntry<'a> {
    pub path: &'a Path,
    /// 0 for the root itself.
    pub depth: usize,
    /// A regular file (following a symlink only for the root, as ripgrep does).
    pub is_file: bool,
    /// When the request asked for it and the file has one.
    pub mtime: Option<SystemTime>,
}

/// What a walk hands its visitor: an entry, or an error met on the way (the walk goes on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walked<'a> {
    Entry(WalkEntry<'a>),
    Error(&'a str),
}

/// A glob that does not parse: an `InvalidInput` error carrying ripgrep's message.
fn invalid_glob(error: &ignore::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, error.to_string())
}

/// Walks the local tree `request` names, handing each entry to `visit` until it answers false.
pub(crate) fn walk_local(
    request: &WalkRequest<'_>,
    visit: &mut dyn FnMut(Walked<'_>) -> bool,
) -> io::Result<()> {
    let mut overrides = OverrideBuilder::new(request.glob_base);
    for glob in request.globs {
        overrides.add(glob).map_err(|error| invalid_glob(&error))?;
    }
    let overrides = overrides.build().map_err(|error| invalid_glob(&error))?;
    let mut builder = WalkBuilder::new(request.root);
    builder.standard_filters(request.standard_filters);
    for name in request.ignore_files {
        builder.add_custom_ignore_filename(name);
    }
    builder
        .overrides(overrides)
        .sort_by_file_name(|a, b| a.cmp(b));
    for entry in builder.build() {
        let go_on = match entry {
            Ok(entry) => {
                let is_file = if entry.depth() == 0 {
                    entry.path().is_file()
                } else {
                    entry.file_type().is_some_and(|kind| kind.is_file())
                };
                let mtime = if request.mtimes && is_file {
                    entry.metadata().ok().and_then(|meta| meta.modified().ok())
                } else {
                    None
                };
                visit(Walked::Entry(WalkEntry {
                    path: entry.path(),
                    depth: entry.depth(),
                    is_file,
                    mtime,
                }))
            }
            Err(error) => visit(Walked::Error(&error.to_string())),
        };
        if !go_on {
            break;
        }
    }
    Ok(())
}

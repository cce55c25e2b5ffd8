//! Whole-root operations: listing sessions (headers only), finding one by id, and enforcing one
//! encoding per root.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ReadError, RootError};
use crate::header::{SessionHeader, parse_header_line};
use crate::layout::{Encoding, encode_session_id, log_path};
use crate::read::first_record;

/// One stored session, as listing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    pub path: PathBuf,
    /// May carry a foreign `version` (listing shows it; reading it will refuse with advice).
    pub header: SessionHeader,
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> RootError + 'a {
    move |source| RootError::Io {
        path: path.to_owned(),
        op,
        source,
    }
}

fn exists(path: &Path) -> Result<bool, RootError> {
    // Only "not found" means absent; a permission error must not pass for absence.
    path.try_exists().map_err(io_err(path, "stat"))
}

/// Sub-directories of `dir`, sorted; an absent root holds no sessions.
fn subdirs(dir: &Path, missing_ok: bool) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RootError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => {
            return Ok(Default::default());
        }
        Err(e) => {
            return Err(RootError::Io {
                path: dir.to_owned(),
                op: "list directory",
                source: e,
            });
        }
    };
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for entry in entries {
        let entry = entry.map_err(io_err(dir, "list directory"))?;
        let kind = entry.file_type().map_err(io_err(dir, "list directory"))?;
        if kind.is_dir() {
            dirs.push(entry.path());
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
    dirs.sort();
    files.sort();
    Ok((dirs, files))
}

fn project_dirs(root: &Path) -> Result<Vec<PathBuf>, RootError> {
    Ok(subdirs(root, true)?.0)
}

/// Session directories of a project; a flat `<project>/<id>.jsonl*` file is an older layout
/// this format refuses rather than silently ignores.
fn session_dirs(project: &Path) -> Result<Vec<PathBuf>, RootError> {
    let (dirs, files) = subdirs(project, false)?;
    let flat = files.into_iter().find(|f| {
        f.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl") || n.ends_with(".jsonl.zstd"))
    });
    match flat {
        Some(path) => Err(RootError::LegacyLayout { path }),
        None => Ok(dirs),
    }
}

fn reject_opposite(dir: &Path, encoding: Encoding) -> Result<(), RootError> {
    let opposite = dir.join(encoding.opposite().file_name());
    if exists(&opposite)? {
        return Err(RootError::EncodingMismatch {
            path: opposite,
            found: encoding.opposite(),
            configured: encoding,
        });
    }
    Ok(())
}

/// Refuse a root that holds any session file of the other encoding.
pub fn check_root_encoding(root: &Path, encoding: Encoding) -> Result<(), RootError> {
    for project in project_dirs(root)? {
        for dir in session_dirs(&project)? {
            reject_opposite(&dir, encoding)?;
        }
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Every stored session under `root`, reading only each file's header. Files without a complete
/// header record yet (mid-publication) and first lines that are no session header are skipped,
/// as the reference does; a header whose id and cwd name a different path, a duplicate id, a
/// legacy header or an unreadable header frame are errors.
pub fn list_sessions(root: &Path, encoding: Encoding) -> Result<Vec<ListedSession>, RootError> {
    let mut listed = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for project in project_dirs(root)? {
        for dir in session_dirs(&project)? {
            reject_opposite(&dir, encoding)?;
            let path = dir.join(encoding.file_name());
            if !exists(&path)? {
                continue;
            }
            let Some(line) = first_record(&path, encoding).map_err(Box::new)? else {
                continue;
            };
            let header = match parse_header_line(&path, &line, true) {
                Ok(header) => header,
                // Not a session header at all: the reference lists nothing for it either.
                Err(ReadError::BadHeader { .. } | ReadError::MissingHeader { .. }) => continue,
                Err(other) => return Err(Box::new(other).into()),
            };
            let expected =
                log_path(root, header.cwd.as_deref(), &header.id, encoding).map_err(|source| {
                    RootError::HeaderLayout {
                        path: path.clone(),
                        id: header.id.clone(),
                        source,
                    }
                })?;
            if expected != path && !same_file(&expected, &path) {
                return Err(RootError::IdentityMismatch {
                    path,
                    id: header.id,
                    expected,
                });
            }
            if let Some(first) = seen.insert(header.id.clone(), path.clone()) {
                return Err(RootError::DuplicateId {
                    id: header.id,
                    first,
                    second: path,
                });
            }
            listed.push(ListedSession { path, header });
        }
    }
    Ok(listed)
}

/// The one session file for `id` in any project directory (the cwd may be unknown).
pub fn find_session(
    root: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<Option<PathBuf>, RootError> {
    let encoded = encode_session_id(id)?;
    let mut found: Option<PathBuf> = None;
    for project in project_dirs(root)? {
        for flat in [Encoding::Zstd, Encoding::Raw] {
            let path = project.join(format!("{encoded}{}", &flat.file_name()["session".len()..]));
            if exists(&path)? {
                return Err(RootError::LegacyLayout { path });
            }
        }
        let dir = project.join(&encoded);
        reject_opposite(&dir, encoding)?;
        let path = dir.join(encoding.file_name());
        if exists(&path)? {
            if let Some(first) = found {
                return Err(RootError::DuplicateId {
                    id: id.to_owned(),
                    first,
                    second: path,
                });
            }
            found = Some(path);
        }
    }
    Ok(found)
}

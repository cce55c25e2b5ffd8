//! Whole-root operations: listing sessions (headers only), finding one by id, and enforcing one
//! encoding per root.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ReadError, RootError};
use crate::header::{SessionHeader, parse_header_line};
use crate::layout::{Encoding, check_session_id, decode_session_id, encode_session_id, log_path};
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

/// Session directories of a project, and its flat `<project>/<id>.jsonl*` files (an older
/// layout this format refuses rather than silently ignores).
fn session_entries(project: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RootError> {
    let (dirs, files) = subdirs(project, false)?;
    let flat = files
        .into_iter()
        .filter(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".jsonl") || n.ends_with(".jsonl.zstd"))
        })
        .collect();
    Ok((dirs, flat))
}

/// Session directories of a project; a flat file is an error.
fn session_dirs(project: &Path) -> Result<Vec<PathBuf>, RootError> {
    let (dirs, flat) = session_entries(project)?;
    match flat.into_iter().next() {
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

/// A session directory (or a file or project directory where sessions should be) that cannot
/// be listed as a session, and why: listed beside the others rather than hiding them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenSession {
    /// The directory (or file) at fault.
    pub path: PathBuf,
    /// The id its directory's name encodes, when that is a session id; else the name as it is.
    pub id: String,
    /// The cwd its header names, when the header read.
    pub cwd: Option<String>,
    /// Why it cannot be listed, naming the file.
    pub reason: String,
}

/// What a root holds: the sessions that list, and the ones that do not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub sessions: Vec<ListedSession>,
    pub broken: Vec<BrokenSession>,
}

/// Every stored session of `encoding` under `root`, reading only each file's header. Files
/// without a complete header record yet (mid-publication) and first lines that are no session
/// header are skipped, as the reference does. A session that cannot be listed (a header whose
/// id is no session id or names another path, a duplicate id, an unreadable header frame, a
/// file of the other encoding, a flat file of the older layout) is listed as broken with its
/// reason; only a root that cannot be read at all is an error.
pub fn list_sessions(root: &Path, encoding: Encoding) -> Result<Listing, RootError> {
    list(root, Some(encoding))
}

/// [`list_sessions`] for a reader that takes each session in whichever encoding it is stored
/// (a directory holding both is broken).
pub fn list_sessions_any(root: &Path) -> Result<Listing, RootError> {
    list(root, None)
}

fn list(root: &Path, encoding: Option<Encoding>) -> Result<Listing, RootError> {
    let mut listing = Listing::default();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for project in project_dirs(root)? {
        let (dirs, flat) = match session_entries(&project) {
            Ok(entries) => entries,
            Err(error) => {
                listing.broken.push(broken(&project, None, &error));
                continue;
            }
        };
        for path in flat {
            let error = RootError::LegacyLayout { path: path.clone() };
            listing.broken.push(broken(&path, None, &error));
        }
        for dir in dirs {
            let listed = match listed_in(root, &dir, encoding) {
                Ok(Some(listed)) => listed,
                Ok(None) => continue,
                Err((cwd, error)) => {
                    listing.broken.push(broken(&dir, cwd, &error));
                    continue;
                }
            };
            if let Some(first) = seen.get(&listed.header.id) {
                let error = RootError::DuplicateId {
                    id: listed.header.id.clone(),
                    first: first.clone(),
                    second: listed.path.clone(),
                };
                listing.broken.push(broken(&dir, listed.header.cwd, &error));
                continue;
            }
            seen.insert(listed.header.id.clone(), listed.path.clone());
            listing.sessions.push(listed);
        }
    }
    Ok(listing)
}

/// A listing entry for `path`: its name decoded as an id when it is one.
fn broken(path: &Path, cwd: Option<String>, error: &RootError) -> BrokenSession {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = decode_session_id(&name)
        .ok()
        .filter(|id| check_session_id(id).is_ok())
        .unwrap_or(name);
    BrokenSession {
        path: path.to_owned(),
        id,
        cwd,
        reason: error.to_string(),
    }
}

/// The session stored in `dir` (`None` when it holds no complete header yet, or a first line
/// that is no session header); the error says why it cannot be listed, with the cwd of its
/// header when that read.
fn listed_in(
    root: &Path,
    dir: &Path,
    encoding: Option<Encoding>,
) -> Result<Option<ListedSession>, (Option<String>, RootError)> {
    let no_cwd = |error: RootError| (None, error);
    let encoding = match encoding {
        Some(encoding) => {
            reject_opposite(dir, encoding).map_err(no_cwd)?;
            encoding
        }
        None => {
            let zstd = exists(&dir.join(Encoding::Zstd.file_name())).map_err(no_cwd)?;
            let raw = exists(&dir.join(Encoding::Raw.file_name())).map_err(no_cwd)?;
            if zstd && raw {
                reject_opposite(dir, Encoding::Zstd).map_err(no_cwd)?;
            }
            if raw { Encoding::Raw } else { Encoding::Zstd }
        }
    };
    let path = dir.join(encoding.file_name());
    if !exists(&path).map_err(no_cwd)? {
        return Ok(None);
    }
    let Some(line) =
        first_record(&path, encoding).map_err(|error| no_cwd(Box::new(error).into()))?
    else {
        return Ok(None);
    };
    let header = match parse_header_line(&path, &line, true) {
        Ok(header) => header,
        // Not a session header at all: the reference lists nothing for it either.
        Err(ReadError::BadHeader { .. } | ReadError::MissingHeader { .. }) => return Ok(None),
        Err(other) => return Err(no_cwd(Box::new(other).into())),
    };
    let cwd = header.cwd.clone();
    let expected = match log_path(root, header.cwd.as_deref(), &header.id, encoding) {
        Ok(expected) => expected,
        Err(source) => {
            let error = RootError::HeaderLayout {
                path,
                id: header.id,
                source,
            };
            return Err((cwd, error));
        }
    };
    if expected != path && !same_file(&expected, &path) {
        let error = RootError::IdentityMismatch {
            path,
            id: header.id,
            expected,
        };
        return Err((cwd, error));
    }
    Ok(Some(ListedSession { path, header }))
}

/// The one session file for `id` in any project directory (the cwd may be unknown).
pub fn find_session(
    root: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<Option<PathBuf>, RootError> {
    check_session_id(id)?;
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

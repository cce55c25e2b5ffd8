//! The regression corpus in the repository: `corpus/<target>/<kind>-<hash>.bin`, one input per
//! file, exactly the bytes a target was given. Every file is replayed by the crate's test and
//! before every fuzz run.

use std::path::{Path, PathBuf};

use crate::mutate::fnv;

/// A corpus file that cannot be read or written, named.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("cannot read the fuzz corpus {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the fuzz corpus file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The corpus folder of the crate (in the repository).
pub fn default_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Saves `input` as `<dir>/<target>/<kind>-<hash>.bin`; answers the path.
pub fn save(dir: &Path, target: &str, kind: &str, input: &[u8]) -> Result<PathBuf, CorpusError> {
    let folder = dir.join(target);
    std::fs::create_dir_all(&folder).map_err(|source| CorpusError::Write {
        path: folder.clone(),
        source,
    })?;
    let path = folder.join(format!("{kind}-{:016x}.bin", fnv(input)));
    std::fs::write(&path, input).map_err(|source| CorpusError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// The saved inputs of `target` with their paths, in name order (none if it has no folder).
pub fn load_named(dir: &Path, target: &str) -> Result<Vec<(PathBuf, Vec<u8>)>, CorpusError> {
    let folder = dir.join(target);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CorpusError::Read {
                path: folder,
                source,
            });
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "bin"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| match std::fs::read(&path) {
            Ok(bytes) => Ok((path, bytes)),
            Err(source) => Err(CorpusError::Read { path, source }),
        })
        .collect()
}

/// The saved inputs of `target`.
pub fn load(dir: &Path, target: &str) -> Result<Vec<Vec<u8>>, CorpusError> {
    Ok(load_named(dir, target)?
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect())
}

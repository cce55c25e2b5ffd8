//! Reading an archive back: the zstd stream, the tar entries, their paths, the manifest (its
//! format and version first) and each entry's checksum. Nothing here touches the disk; what
//! comes out is the manifest and every entry's bytes, each one listed and checked.

use std::collections::HashMap;
use std::io::Read;

use serde_json::Value;

use crate::error::ArchiveError;
use crate::manifest::{FORMAT, FORMAT_VERSION, MANIFEST_PATH, Manifest, sha256_hex};

/// The most an archive may unpack to (its logs and images are held in memory while checked).
pub const MAX_UNPACKED: u64 = 4 << 30;

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// A checked archive: its manifest and the bytes of every entry it lists, by path.
#[derive(Debug)]
pub(crate) struct Unpacked {
    pub(crate) manifest: Manifest,
    pub(crate) entries: HashMap<String, Vec<u8>>,
}

/// The tar inside the zstd stream. A stream that ends before its frame does is truncated.
fn decompress(archive: &str, bytes: &[u8]) -> Result<Vec<u8>, ArchiveError> {
    if !bytes.starts_with(&ZSTD_MAGIC) {
        return Err(match bytes.len() < ZSTD_MAGIC.len() {
            true => ArchiveError::Truncated {
                archive: archive.to_owned(),
                detail: format!("{} bytes, not even a zstd frame header", bytes.len()),
            },
            false => ArchiveError::NotAnArchive {
                archive: archive.to_owned(),
                detail: "not zstd-compressed".to_owned(),
            },
        });
    }
    let decoder =
        zstd::stream::Decoder::new(bytes).map_err(|error| ArchiveError::NotAnArchive {
            archive: archive.to_owned(),
            detail: error.to_string(),
        })?;
    let mut out = Vec::new();
    decoder
        .take(MAX_UNPACKED + 1)
        .read_to_end(&mut out)
        .map_err(|error| ArchiveError::Truncated {
            archive: archive.to_owned(),
            detail: format!("the zstd stream does not end whole ({error})"),
        })?;
    if out.len() as u64 > MAX_UNPACKED {
        return Err(ArchiveError::TooLarge {
            archive: archive.to_owned(),
            limit: MAX_UNPACKED,
        });
    }
    Ok(out)
}

/// An entry's path as a relative path of plain names, or why it is not one.
fn check_path(archive: &str, raw: &[u8]) -> Result<String, ArchiveError> {
    let shown = String::from_utf8_lossy(raw).into_owned();
    let escaping = |reason| ArchiveError::EscapingPath {
        archive: archive.to_owned(),
        path: shown.clone(),
        reason,
    };
    let path = std::str::from_utf8(raw).map_err(|_| escaping("the path is not UTF-8"))?;
    if path.starts_with('/') {
        return Err(escaping("the path is absolute"));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(escaping("the path holds a backslash or a NUL"));
    }
    for segment in path.split('/') {
        match segment {
            ".." => return Err(escaping("the path climbs out with `..`")),
            "." => return Err(escaping("the path holds `.`")),
            "" => return Err(escaping("the path names no file")),
            _ => {}
        }
    }
    Ok(path.to_owned())
}

/// The manifest's format and version, read from the raw JSON before its shape is.
fn read_manifest(archive: &str, bytes: &[u8]) -> Result<Manifest, ArchiveError> {
    let bad = |reason: String| ArchiveError::BadEntry {
        archive: archive.to_owned(),
        path: MANIFEST_PATH.to_owned(),
        reason,
    };
    /// The two members every version keeps, whatever else it changes.
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        format: Value,
        #[serde(default)]
        version: Value,
    }
    let head: Head =
        serde_json::from_slice(bytes).map_err(|error| bad(format!("not JSON: {error}")))?;
    let shown = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if head.format.as_str() != Some(FORMAT)
        || head.version.as_u64() != Some(u64::from(FORMAT_VERSION))
    {
        return Err(ArchiveError::ForeignFormat {
            archive: archive.to_owned(),
            format: shown(&head.format),
            version: shown(&head.version),
        });
    }
    serde_json::from_slice(bytes).map_err(|error| bad(error.to_string()))
}

/// Reads and checks a whole archive; `archive` names it in every error.
pub(crate) fn unpack(archive: &str, bytes: &[u8]) -> Result<Unpacked, ArchiveError> {
    let tar_bytes = decompress(archive, bytes)?;
    let truncated = |detail: String| ArchiveError::Truncated {
        archive: archive.to_owned(),
        detail,
    };
    let mut reader = tar::Archive::new(tar_bytes.as_slice());
    let entries = reader
        .entries()
        .map_err(|error| truncated(format!("the tar does not read: {error}")))?;
    let mut manifest: Option<Manifest> = None;
    let mut found: HashMap<String, Vec<u8>> = HashMap::new();
    for entry in entries {
        let mut entry = entry.map_err(|error| truncated(format!("a tar entry: {error}")))?;
        let path = check_path(archive, &entry.path_bytes())?;
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            return Err(ArchiveError::EscapingPath {
                archive: archive.to_owned(),
                path,
                reason: "not a plain file (links and devices are refused)",
            });
        }
        let mut content = Vec::new();
        entry
            .read_to_end(&mut content)
            .map_err(|error| truncated(format!("entry `{path}` ends early: {error}")))?;
        let Some(listed) = &manifest else {
            if path != MANIFEST_PATH {
                return Err(ArchiveError::NotAnArchive {
                    archive: archive.to_owned(),
                    detail: format!("its first entry is `{path}`, not `{MANIFEST_PATH}`"),
                });
            }
            manifest = Some(read_manifest(archive, &content)?);
            continue;
        };
        let bad = |reason: String| ArchiveError::BadEntry {
            archive: archive.to_owned(),
            path: path.clone(),
            reason,
        };
        let Some(expected) = listed.entries.iter().find(|listed| listed.path == path) else {
            return Err(bad("not listed in the manifest".to_owned()));
        };
        if found.contains_key(&path) {
            return Err(bad("appears twice".to_owned()));
        }
        let sha256 = sha256_hex(&content);
        if sha256 != expected.sha256 || content.len() as u64 != expected.bytes {
            return Err(ArchiveError::Checksum {
                archive: archive.to_owned(),
                path,
                expected: format!("{} ({} bytes)", expected.sha256, expected.bytes),
                found: format!("{sha256} ({} bytes)", content.len()),
            });
        }
        found.insert(path, content);
    }
    let Some(manifest) = manifest else {
        return Err(truncated("no entries at all".to_owned()));
    };
    if let Some(absent) = manifest
        .entries
        .iter()
        .find(|listed| !found.contains_key(&listed.path))
    {
        return Err(truncated(format!(
            "entry `{}` listed in the manifest is missing",
            absent.path
        )));
    }
    Ok(Unpacked {
        manifest,
        entries: found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_names_pass() {
        assert_eq!(
            check_path("a", b"sessions/x.jsonl").unwrap(),
            "sessions/x.jsonl"
        );
        for bad in [
            &b"../x"[..],
            b"/etc/passwd",
            b"sessions/../../x",
            b"./x",
            b"sessions/./x",
            b"a//b",
            b"a\\..\\b",
            b"",
            b"dir/",
        ] {
            assert!(
                matches!(check_path("a", bad), Err(ArchiveError::EscapingPath { .. })),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}

//! Where a session lives: `<root>/--<project key>--/<encoded id>/session.jsonl[.zstd]`, or
//! `<root>/_no-cwd/<encoded id>/...` for a session without a cwd.
//!
//! Both encodings work per UTF-16 code unit, as the reference does on JS strings, so that the
//! same cwd or id names the same directory in both implementations (non-BMP characters become two
//! `~XXXX` escapes, one per surrogate).

use std::path::{Path, PathBuf};

use crate::error::LayoutError;

/// Project directory of sessions that have no cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";

/// The project key keeps at most this many units between its `--` wrappers, which keeps the
/// directory name under the usual 255-byte component limit.
const PROJECT_KEY_MAX_UNITS: usize = 251;

/// The physical encoding of a session file; one per root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `session.jsonl.zstd`: concatenated independent checksummed zstd frames (the default).
    Zstd,
    /// `session.jsonl`: plain lines (the reference's `compression: none`).
    Raw,
}

impl Encoding {
    /// The session file's name in its session directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Encoding::Zstd => "session.jsonl.zstd",
            Encoding::Raw => "session.jsonl",
        }
    }

    /// The other encoding, whose files in the same root are an error.
    pub fn opposite(self) -> Encoding {
        match self {
            Encoding::Zstd => Encoding::Raw,
            Encoding::Raw => Encoding::Zstd,
        }
    }

    /// The encoding a file name implies: `.jsonl.zstd` is compressed, anything else is raw.
    pub fn of_path(path: &Path) -> Encoding {
        let compressed = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl.zstd"));
        if compressed {
            Encoding::Zstd
        } else {
            Encoding::Raw
        }
    }
}

/// The characters both encodings keep literally. `~` is excluded because it starts an escape.
fn is_kept(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x2E | 0x5F | 0x2D)
}

fn push_escape(out: &mut String, unit: u16) {
    out.push_str(&format!("~{unit:04X}"));
}

/// The human-navigable, lossy directory key of a project path: runs of `/`, `\` and `:` become
/// one `-`, unsafe units become `~XXXX`, leading dashes are dropped, the result is cut to 251
/// units and wrapped as `--<key>--`. Two cwds may share a key; the header's cwd disambiguates.
pub fn project_key(cwd: &str) -> Result<String, LayoutError> {
    if cwd.is_empty() {
        return Err(LayoutError::EmptyCwd);
    }
    let mut readable = String::with_capacity(cwd.len());
    let mut separator_run = false;
    for unit in cwd.encode_utf16() {
        if matches!(unit, 0x2F | 0x5C | 0x3A) {
            if !separator_run {
                readable.push('-');
            }
            separator_run = true;
        } else {
            if is_kept(unit) {
                // Kept units are ASCII, so the cast cannot lose anything.
                readable.push(char::from(unit as u8));
            } else {
                push_escape(&mut readable, unit);
            }
            separator_run = false;
        }
    }
    let slug = readable.trim_start_matches('-');
    let slug = if slug.is_empty() { "root" } else { slug };
    // The slug is ASCII here, so byte length equals UTF-16 length and slicing is safe.
    let cut = &slug[..slug.len().min(PROJECT_KEY_MAX_UNITS)];
    Ok(format!("--{cut}--"))
}

/// Encode a session id as one safe path segment, injectively: kept units stay, every other unit
/// (including `~`) becomes `~XXXX`, and the whole segments `.` and `..` are escaped so an id can
/// never climb out of its project directory.
pub fn encode_session_id(id: &str) -> Result<String, LayoutError> {
    match id {
        "" => return Err(LayoutError::EmptySessionId),
        "." => return Ok("~002E".to_owned()),
        ".." => return Ok("~002E~002E".to_owned()),
        _ => {}
    }
    let mut out = String::with_capacity(id.len());
    for unit in id.encode_utf16() {
        if is_kept(unit) {
            out.push(char::from(unit as u8));
        } else {
            push_escape(&mut out, unit);
        }
    }
    Ok(out)
}

/// Invert [`encode_session_id`]. Only canonical encodings decode (anything the encoder would
/// not have produced is refused), so decode∘encode and encode∘decode are both identities.
pub fn decode_session_id(encoded: &str) -> Result<String, LayoutError> {
    let not_encoded = |reason| LayoutError::NotEncoded {
        encoded: encoded.to_owned(),
        reason,
    };
    let bytes = encoded.as_bytes();
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'~' {
            let hex = bytes
                .get(i + 1..i + 5)
                .ok_or_else(|| not_encoded("truncated ~ escape"))?;
            if !hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
                return Err(not_encoded("escape is not four upper-case hex digits"));
            }
            let text = std::str::from_utf8(hex).map_err(|_| not_encoded("bad escape"))?;
            let unit = u16::from_str_radix(text, 16).map_err(|_| not_encoded("bad escape"))?;
            units.push(unit);
            i += 5;
        } else if is_kept(u16::from(bytes[i])) {
            units.push(u16::from(bytes[i]));
            i += 1;
        } else {
            return Err(not_encoded("contains a character the encoder escapes"));
        }
    }
    // Rust strings cannot hold the lone surrogates a JS id could; such ids are unreachable here.
    let id = String::from_utf16(&units).map_err(|_| not_encoded("decodes to a lone surrogate"))?;
    if encode_session_id(&id)? != encoded {
        return Err(not_encoded("not the canonical encoding of any id"));
    }
    Ok(id)
}

/// Refuses an id no session of ours or the reference's has
/// ([`dsh_protocol::check_session_id`]) before any path is built from it: an id comes from a
/// request or from a header anyone could have written.
pub fn check_session_id(id: &str) -> Result<(), LayoutError> {
    if id.is_empty() {
        return Err(LayoutError::EmptySessionId);
    }
    dsh_protocol::check_session_id(id).map_err(|bad| LayoutError::BadSessionId {
        id: bad.id,
        reason: bad.reason,
    })
}

/// The project directory of a cwd under `root` (`_no-cwd` without one).
pub fn project_dir(root: &Path, cwd: Option<&str>) -> Result<PathBuf, LayoutError> {
    Ok(match cwd {
        None => root.join(NO_CWD_DIR),
        Some(cwd) => root.join(project_key(cwd)?),
    })
}

/// The directory one session owns; the id is checked first ([`check_session_id`]).
pub fn session_dir(root: &Path, cwd: Option<&str>, id: &str) -> Result<PathBuf, LayoutError> {
    check_session_id(id)?;
    Ok(project_dir(root, cwd)?.join(encode_session_id(id)?))
}

/// The session's log file.
pub fn log_path(
    root: &Path,
    cwd: Option<&str>,
    id: &str,
    encoding: Encoding,
) -> Result<PathBuf, LayoutError> {
    Ok(session_dir(root, cwd, id)?.join(encoding.file_name()))
}

/// A deleted session's directory in a store's trash: `<id>-<milliseconds>`, when it was
/// deleted, so a session deleted, restored and deleted again has one entry per deletion.
pub fn trash_entry_name(id: &str, deleted_at_ms: u64) -> String {
    format!("{id}-{deleted_at_ms}")
}

/// The session id and deletion time a trash entry's name holds; `None` for another name.
pub fn parse_trash_entry(name: &str) -> Option<(&str, u64)> {
    let (id, stamp) = name.rsplit_once('-')?;
    Some((id, stamp.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trash_entries_name_their_session_and_time() {
        let id = "0650a582-7113-4f51-9477-b77a42c1996b";
        let name = trash_entry_name(id, 1_764_800_000_123);
        assert_eq!(name, format!("{id}-1764800000123"));
        assert_eq!(parse_trash_entry(&name), Some((id, 1_764_800_000_123)));
        assert_eq!(
            parse_trash_entry(id),
            None,
            "an id alone ends in hex, not a time"
        );
        assert_eq!(parse_trash_entry("notes.txt"), None);
    }

    fn key(cwd: &str) -> String {
        project_key(cwd).unwrap()
    }

    #[test]
    fn project_key_cases() {
        assert_eq!(key("/home/u/proj"), "--home-u-proj--");
        assert_eq!(key("/"), "--root--");
        assert_eq!(key("///"), "--root--");
        assert_eq!(key("C:\\Users\\me\\code"), "--C-Users-me-code--");
        assert_eq!(key("C:/x"), "--C-x--");
        assert_eq!(key("/a//b\\:/c"), "--a-b-c--");
        assert_eq!(key("/a-/b"), "--a--b--");
        assert_eq!(key("-lead"), "--lead--");
        assert_eq!(key("/-x"), "--x--");
        assert_eq!(key("/tmp/my project"), "--tmp-my~0020project--");
        assert_eq!(key("/~/x"), "--~007E-x--");
        assert_eq!(key("/v1.2_3"), "--v1.2_3--");
        assert_eq!(key("{{cwd}}"), "--~007B~007Bcwd~007D~007D--");
        assert_eq!(key("/é"), "--~00E9--");
        assert_eq!(key("/项目"), "--~9879~76EE--");
        // One astral character is two UTF-16 units, hence two escapes.
        assert_eq!(key("/😀"), "--~D83D~DE00--");
        assert_eq!(project_key(""), Err(LayoutError::EmptyCwd));
    }

    #[test]
    fn project_key_is_cut_to_251_units() {
        let long = format!("/{}", "a".repeat(400));
        let k = key(&long);
        assert_eq!(k.len(), 251 + 4);
        assert_eq!(&k[2..253], "a".repeat(251));
        // The cut counts output units and may split an escape, as the reference's does.
        let escaped = format!("/{}é", "b".repeat(248));
        assert_eq!(key(&escaped), format!("--{}~00--", "b".repeat(248)));
        let exact = "c".repeat(251);
        assert_eq!(key(&exact), format!("--{exact}--"));
    }

    #[test]
    fn session_id_cases() {
        let enc = |id: &str| encode_session_id(id).unwrap();
        assert_eq!(
            enc("00000000-0000-0000-0000-000000000000"),
            "00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(enc("."), "~002E");
        assert_eq!(enc(".."), "~002E~002E");
        assert_eq!(enc("..."), "...");
        assert_eq!(enc("../etc"), "..~002Fetc");
        assert_eq!(enc("a~b"), "a~007Eb");
        assert_eq!(enc("a b"), "a~0020b");
        assert_eq!(enc("x:y\\z"), "x~003Ay~005Cz");
        assert_eq!(enc("nul\0"), "nul~0000");
        assert_eq!(enc("é"), "~00E9");
        assert_eq!(enc("😀"), "~D83D~DE00");
        assert_eq!(encode_session_id(""), Err(LayoutError::EmptySessionId));
    }

    #[test]
    fn session_id_round_trips_and_is_injective() {
        let ids = [
            "a",
            ".",
            "..",
            "...",
            "~002E",
            "~",
            "a/b",
            "a~002Fb",
            "😀",
            "é",
            "x y",
            "-",
            "_.-",
            "{{sessionId}}",
            "😀~D83D",
        ];
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            let e = encode_session_id(id).unwrap();
            assert!(seen.insert(e.clone()), "collision on {e}");
            assert_eq!(decode_session_id(&e).unwrap(), id, "round trip of {id:?}");
        }
    }

    #[test]
    fn decode_refuses_non_canonical() {
        for bad in [
            "~0041", "~002e", "a~00", "a b", "~", "~D83D", "~GGGG", "", "a/b",
        ] {
            assert!(decode_session_id(bad).is_err(), "{bad:?} should be refused");
        }
        // `.` alone is not canonical: the encoder escapes the whole segment.
        assert!(decode_session_id(".").is_err());
        assert!(decode_session_id("..").is_err());
    }

    #[test]
    fn no_path_is_built_from_an_id_that_is_not_one() {
        let root = Path::new("/r");
        for bad in ["../x", "a/b", "x\0", "~002E"] {
            assert!(
                matches!(
                    session_dir(root, Some("/w"), bad),
                    Err(LayoutError::BadSessionId { .. })
                ),
                "{bad:?}"
            );
        }
        assert_eq!(check_session_id(""), Err(LayoutError::EmptySessionId));
        assert_eq!(check_session_id("s-one"), Ok(()));
    }

    #[test]
    fn paths() {
        let root = Path::new("/r");
        assert_eq!(
            log_path(root, Some("/w/p"), "s1", Encoding::Zstd).unwrap(),
            Path::new("/r/--w-p--/s1/session.jsonl.zstd")
        );
        assert!(matches!(
            log_path(root, None, "..", Encoding::Raw),
            Err(LayoutError::BadSessionId { .. })
        ));
        assert_eq!(session_dir(root, Some(""), "x"), Err(LayoutError::EmptyCwd));
        assert_eq!(
            Encoding::of_path(Path::new("/a/session.jsonl.zstd")),
            Encoding::Zstd
        );
        assert_eq!(
            Encoding::of_path(Path::new("/a/session.1.jsonl")),
            Encoding::Raw
        );
    }
}

//! `session export` and `session import`: the archive of `dsh-session-archive` written to a
//! file (or standard output) and read back into this home's stores, with a line per session.

use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{Encoding, check_session_id};

use super::SessionCliError;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

pub(super) fn export(
    home: &Path,
    id: &str,
    output: Option<PathBuf>,
) -> Result<(), SessionCliError> {
    check_session_id(id)?;
    let stores = dsh_session_archive::Stores::of_home(home);
    let exported = dsh_session_archive::export_session(&stores, id, now_ms())?;
    let manifest = &exported.manifest;
    let path =
        output.unwrap_or_else(|| PathBuf::from(dsh_session_archive::suggested_file_name(id)));
    let to_stdout = path.as_os_str() == "-";
    if to_stdout {
        std::io::stdout()
            .lock()
            .write_all(&exported.bytes)
            .map_err(|source| SessionCliError::Io {
                path: path.clone(),
                source,
            })?;
    } else {
        dsh_session_archive::write_file(&path, &exported.bytes)?;
    }
    // With the archive on stdout, the report goes to stderr.
    let report = format!(
        "exported session {id}: {} session(s), {} events, {} attachment(s), {} bytes{}",
        manifest.sessions.len(),
        manifest.event_count(),
        manifest.attachments.len(),
        exported.bytes.len(),
        match to_stdout {
            true => String::new(),
            false => format!(" -> {}", path.display()),
        }
    );
    let missing = manifest.missing_attachments.iter().map(|id| {
        format!("warning: attachment {id} is referred to but not in the store; not exported")
    });
    for line in std::iter::once(report).chain(missing) {
        match to_stdout {
            true => eprintln!("{line}"),
            false => println!("{line}"),
        }
    }
    Ok(())
}

pub(super) fn import(
    home: &Path,
    file: &Path,
    new_ids: bool,
    compression: Option<&str>,
) -> Result<(), SessionCliError> {
    let encoding = match compression {
        None => None,
        Some("zstd") => Some(Encoding::Zstd),
        Some("none") => Some(Encoding::Raw),
        Some(other) => return Err(SessionCliError::Compression(other.to_owned())),
    };
    let bytes = std::fs::read(file).map_err(|source| SessionCliError::Io {
        path: file.to_owned(),
        source,
    })?;
    let stores = dsh_session_archive::Stores::of_home(home);
    let options = dsh_session_archive::ImportOptions {
        encoding,
        fresh_ids: new_ids,
    };
    let imported =
        dsh_session_archive::import_archive(&stores, &file.display().to_string(), &bytes, options)?;
    for (index, session) in imported.sessions.iter().enumerate() {
        let what = match index {
            0 => "imported session",
            _ => "  with subagent session",
        };
        let renamed = match session.id == session.archived_id {
            true => String::new(),
            false => format!(" (was {})", session.archived_id),
        };
        println!(
            "{what} {}{renamed}: {} events -> {}",
            session.id,
            session.events,
            session.path.display()
        );
    }
    println!(
        "attachments: {} written, {} already in the store",
        imported.attachments_written, imported.attachments_present
    );
    Ok(())
}

//! `dsh-host session ...`: inspection of session logs, stored under `$DSH_HOME/sessions` or
//! anywhere on disk (a `session.jsonl` or `session.jsonl.zstd` path), and their export and
//! import as one archive (`dsh-session-archive`). The inspecting commands never write: a torn
//! tail or an open turn is repaired in memory only and reported as what a load would do.
//! `export` writes only its archive file; `import` writes into the stores only once the whole
//! archive checked.

mod archive;
mod migrate;

use dsh_protocol::{SessionTitleEvent, kinds};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Subcommand;
use dsh_session_jsonl::{
    Encoding, LayoutError, ReadError, ReadSession, RootError, check_session_id, find_session,
    list_sessions_any, read_session,
};
use dsh_session_log::{
    AppendError, SessionEvent, SessionLog, Severity, TypeRegistry, check_log,
    interrupted_turn_closers, summarize,
};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Sessions stored under `$DSH_HOME/sessions`: id, cwd, created, turns, title; one that
    /// does not read is listed as broken, with the reason.
    List {
        /// Only sessions of this working directory.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Header, event counts by type, turns and how they ended, token usage.
    Show {
        /// A session id, or the path of a session file.
        target: String,
        #[arg(long)]
        json: bool,
    },
    /// The model history the log derives, one JSON message per line.
    Derive { target: String },
    /// Validates format, seq contiguity, surface rules and turn bracketing: exit 0 when sound,
    /// 1 with the exact problem.
    Check { target: String },
    /// Writes one archive with the session, its subagents' sessions, the attachments they
    /// refer to and a manifest.
    Export {
        /// The session's id.
        id: String,
        /// The archive to write (`-`: standard output); default
        /// `dsh-session-<ID>.tar.zst` in the current directory.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Checks an archive whole and loads its sessions and attachments; a session id that
    /// already exists is refused unless `--new-ids`.
    Import {
        file: PathBuf,
        /// Import a copy: every session of the archive under a fresh id (the links between
        /// them follow).
        #[arg(long)]
        new_ids: bool,
        /// Write the logs as `zstd` or `none` (plain JSONL); default: what the sessions root
        /// already holds, zstd for an empty one.
        #[arg(long, value_name = "zstd|none")]
        compression: Option<String>,
    },
    /// Copies every session into the other store: `--to postgres URL` the logs under
    /// `$DSH_HOME/sessions` into the database, `--to jsonl URL` the database's sessions (not
    /// in its trash) into logs there. Each copy is read back and its history derived and
    /// compared; a session the destination already holds is refused by name. Exit 0 only when
    /// every session migrated.
    Migrate {
        /// The destination: `postgres` or `jsonl`.
        #[arg(long, value_name = "postgres|jsonl")]
        to: String,
        /// The database's connection string (`postgresql://...` or `host=... dbname=...`).
        url: String,
        /// With `--to jsonl`: write the logs as `zstd` or `none`; default: what the sessions
        /// root already holds, zstd for an empty one.
        #[arg(long, value_name = "zstd|none")]
        compression: Option<String>,
    },
}

/// Why a session command failed: `error: ...` on stderr and exit 1, or `corrupt: ...` on stdout
/// from `check`.
#[derive(Debug, thiserror::Error)]
enum SessionCliError {
    #[error("no session `{target}` under {} (and no such file)", root.display())]
    NotFound { target: String, root: PathBuf },
    /// Neither encoding could be searched; both reasons are shown, since which one the root
    /// was meant to hold is unknown. (Boxed here and in `List`: two root errors inline would
    /// make every result of these commands large.)
    #[error("{zstd}; {raw}")]
    Find {
        #[source]
        zstd: Box<RootError>,
        raw: Box<RootError>,
    },
    #[error(transparent)]
    List(#[from] RootError),
    /// Neither a file nor a session id: no path is built from it.
    #[error("{0} (and no such file)")]
    BadId(#[from] LayoutError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Load(#[from] dsh_session_log::LoadError),
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Archive(#[from] dsh_session_archive::ArchiveError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--compression is `zstd` or `none`, not `{0}`")]
    Compression(String),
    #[error(transparent)]
    Migrate(#[from] migrate::MigrateError),
}

fn sessions_root(home: &Path) -> PathBuf {
    home.join("sessions")
}

/// Reads a session named by id (under the root, either encoding) or by file path.
fn open(home: &Path, target: &str) -> Result<(PathBuf, ReadSession), SessionCliError> {
    let as_path = Path::new(target);
    let path = if as_path.is_file() {
        as_path.to_path_buf()
    } else {
        check_session_id(target)?;
        let root = sessions_root(home);
        // One encoding per root: look with the one the root holds.
        match find_session(&root, Encoding::Zstd, target) {
            Ok(Some(path)) => path,
            zstd => match (zstd, find_session(&root, Encoding::Raw, target)) {
                (_, Ok(Some(path))) => path,
                (Err(zstd), Err(raw)) => {
                    return Err(SessionCliError::Find {
                        zstd: Box::new(zstd),
                        raw: Box::new(raw),
                    });
                }
                _ => {
                    return Err(SessionCliError::NotFound {
                        target: target.to_owned(),
                        root,
                    });
                }
            },
        }
    };
    let read = read_session(&path)?;
    Ok((path, read))
}

/// The events a load would end up with: the stored ones plus the crash-repair closers.
fn repaired(read: &ReadSession) -> Result<(Vec<Arc<SessionEvent>>, usize), SessionCliError> {
    let registry = Arc::new(TypeRegistry::default());
    let log = SessionLog::from_events(read.events.iter().cloned(), registry)?;
    let closers = interrupted_turn_closers(&log);
    let added = closers.len();
    let mut log = log;
    for closer in closers {
        log.append(closer)?;
    }
    Ok((log.events().to_vec(), added))
}

pub fn run(home: &Path, command: SessionCommand) -> i32 {
    let result = match command {
        SessionCommand::List { cwd, json } => list(home, cwd.as_deref(), json),
        SessionCommand::Show { target, json } => show(home, &target, json),
        SessionCommand::Derive { target } => derive(home, &target),
        SessionCommand::Check { target } => return check(home, &target),
        SessionCommand::Export { id, output } => archive::export(home, &id, output),
        SessionCommand::Import {
            file,
            new_ids,
            compression,
        } => archive::import(home, &file, new_ids, compression.as_deref()),
        SessionCommand::Migrate {
            to,
            url,
            compression,
        } => migrate::migrate(home, &to, &url, compression.as_deref()),
    };
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error: {error}");
            1
        }
    }
}

fn title_of(events: &[SessionEvent]) -> Option<String> {
    events
        .iter()
        .rev()
        .find_map(|event| event.read::<SessionTitleEvent>())
        .map(|event| event.title)
}

/// One line of `session list` (and one object of its `--json`).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum SessionRow {
    Listed {
        id: String,
        cwd: Option<String>,
        #[serde(rename = "createdAt")]
        created_at: i64,
        turns: String,
        title: Option<String>,
        path: String,
    },
    Broken {
        id: String,
        cwd: Option<String>,
        path: String,
        broken: String,
    },
}

fn list(home: &Path, cwd: Option<&Path>, json: bool) -> Result<(), SessionCliError> {
    let root = sessions_root(home);
    let wanted_cwd = cwd.map(|dir| {
        std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string()
    });
    let mut rows = Vec::new();
    // Each session in the encoding it is stored in (the store refuses a root of both; listing
    // shows them); one that does not list is shown broken beside the others.
    let listing = list_sessions_any(&root)?;
    {
        for listed in listing.sessions {
            if wanted_cwd.is_some() && listed.header.cwd != wanted_cwd {
                continue;
            }
            let (turns, title) = match read_session(&listed.path) {
                Ok(read) => (
                    summarize(&read.events).turns.len().to_string(),
                    title_of(&read.events),
                ),
                Err(error) => (format!("unreadable: {error}"), None),
            };
            rows.push(SessionRow::Listed {
                id: listed.header.id,
                cwd: listed.header.cwd,
                created_at: listed.header.created_at,
                turns,
                title,
                path: listed.path.display().to_string(),
            });
        }
        for broken in listing.broken {
            if wanted_cwd.is_some() && broken.cwd != wanted_cwd {
                continue;
            }
            rows.push(SessionRow::Broken {
                id: broken.id,
                cwd: broken.cwd,
                path: broken.path.display().to_string(),
                broken: broken.reason,
            });
        }
    }
    if json {
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(());
    }
    if rows.is_empty() {
        println!("no sessions under {}", root.display());
    }
    for row in rows {
        match row {
            SessionRow::Broken {
                id, cwd, broken, ..
            } => println!(
                "{id}  cwd={}  broken: {broken}",
                cwd.as_deref().unwrap_or("-")
            ),
            SessionRow::Listed {
                id,
                cwd,
                created_at,
                turns,
                title,
                ..
            } => println!(
                "{id}  cwd={}  created={created_at}  turns={turns}{}",
                cwd.as_deref().unwrap_or("-"),
                title
                    .map(|title| format!("  title={title}"))
                    .unwrap_or_default()
            ),
        }
    }
    Ok(())
}

fn show(home: &Path, target: &str, json: bool) -> Result<(), SessionCliError> {
    let (path, read) = open(home, target)?;
    let summary = summarize(&read.events);
    let repair = read.repair.as_ref().map(|repair| repair.reason.clone());
    if json {
        let value = json!({
            "path": path.display().to_string(),
            "header": serde_json::from_str::<serde_json::Value>(&read.header.to_line()).unwrap_or_default(),
            "summary": summary,
            "tornTail": repair,
        });
        println!("{value}");
        return Ok(());
    }
    println!("session {}  ({})", read.header.id, path.display());
    println!("header: {}", read.header.to_line());
    if let Some(reason) = repair {
        println!("torn tail (a load would truncate it): {reason}");
    }
    println!("events: {}", summary.events);
    for (kind, count) in &summary.by_type {
        println!("  {kind:<28} {count}");
    }
    println!("turns: {}", summary.turns.len());
    for turn in &summary.turns {
        let ended = match (&turn.reason, turn.end_seq) {
            (Some(reason), Some(seq)) => format!(
                "ended at seq {seq}: {}",
                serde_json::to_string(reason).unwrap_or_else(|_| reason.kind().to_owned())
            ),
            _ => "open (a load would close it as interrupted)".to_owned(),
        };
        println!(
            "  turn {} from seq {}: {} step(s), {ended}",
            turn.turn, turn.start_seq, turn.steps
        );
    }
    let usage = summary.usage;
    println!(
        "usage: input {} output {} cache read {} cache write {} reasoning {}",
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens.unwrap_or(0),
        usage.cache_write_tokens.unwrap_or(0),
        usage.reasoning_tokens.unwrap_or(0)
    );
    let share = |tokens: u64, window: u64| tokens as f64 * 100.0 / window.max(1) as f64;
    match (summary.last_request_tokens, summary.context_window) {
        (Some(tokens), Some(window)) => println!(
            "context: {tokens} of {window} tokens ({:.1}%) at the latest request; compactions {}",
            share(tokens, window),
            summary
                .by_type
                .get(kinds::COMPACTION_SUMMARY)
                .copied()
                .unwrap_or(0)
        ),
        (Some(tokens), None) => {
            println!("context: {tokens} tokens at the latest request (window unknown)")
        }
        _ => println!("context: no request answered yet"),
    }
    Ok(())
}

fn derive(home: &Path, target: &str) -> Result<(), SessionCliError> {
    let (_, read) = open(home, target)?;
    let (events, _) = repaired(&read)?;
    let log = SessionLog::from_events(
        events.iter().map(|event| (**event).clone()),
        Arc::new(TypeRegistry::default()),
    )?;
    let mut stdout = std::io::stdout().lock();
    for message in log.derive_messages().iter() {
        // Fixed key order (role, content, source), whatever the map type sorts by.
        let line = format!(
            "{{\"role\":\"{}\",\"content\":{},\"source\":{}}}",
            message.role().as_str(),
            serde_json::to_string(message.content())?,
            serde_json::to_string(message.source())?,
        );
        // A closed pipe (`| head`) ends the listing quietly.
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(())
}

fn check(home: &Path, target: &str) -> i32 {
    let (path, read) = match open(home, target) {
        Ok(opened) => opened,
        Err(error) => {
            println!("corrupt: {error}");
            return 1;
        }
    };
    let problems = check_log(&read.events, &TypeRegistry::default());
    let mut corrupt = false;
    for problem in &problems {
        let label = match problem.severity {
            Severity::Repairable => "repairable",
            _ => {
                corrupt = true;
                "corrupt"
            }
        };
        println!(
            "{label}: seq {} ({}): {}: {}",
            problem.seq,
            problem.kind,
            problem.rule.as_str(),
            problem.detail
        );
    }
    if let Some(repair) = &read.repair {
        println!("repairable: torn tail: {}", repair.reason);
    }
    if corrupt {
        1
    } else {
        println!("sound: {} ({} events)", path.display(), read.events.len());
        0
    }
}

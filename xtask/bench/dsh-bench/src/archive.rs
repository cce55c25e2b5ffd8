//! Session archive figures (issue 24; ours only): export and import of a 10,000-event session
//! with two subagent children of 1,000 events each, through `dsh-session-archive` on stores
//! in the default (zstd) encoding: the archive's size, the time to build it, and the time to
//! check it whole and load it into empty stores.

use std::path::Path;
use std::time::Instant;

use dsh_session_archive::{ImportOptions, Stores, export_session, import_archive};
use dsh_session_jsonl::{SessionHeader, SessionWriter, WriterOptions};
use dsh_session_log::SessionEvent;

use crate::session::build_log;
use crate::{median, report};

const RUNS: usize = 5;

fn store(root: &Path, header: SessionHeader, events: usize) -> anyhow::Result<usize> {
    let log = build_log(events)?;
    let events: Vec<SessionEvent> = log.events().iter().map(|event| (**event).clone()).collect();
    let mut writer = SessionWriter::create(root, header, WriterOptions::default())?;
    for batch in events.chunks(1000) {
        writer.append(batch)?;
    }
    Ok(events.len())
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("dsh-bench-archive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let from = Stores::of_home(&dir.join("from"));
    let mut parent = SessionHeader::new("parent", 1);
    parent.cwd = Some("/bench".into());
    let mut total = store(&from.sessions, parent, 10_000)?;
    for child in ["child-1", "child-2"] {
        let mut header = SessionHeader::new(child, 2);
        header.cwd = Some("/bench".into());
        header.parent_session = Some("parent".into());
        header.origin = Some("subagent".into());
        header.delegation_depth = 1;
        total += store(&from.sessions, header, 1_000)?;
    }
    let (mut exports, mut imports, mut size) = (Vec::new(), Vec::new(), 0);
    for run in 0..RUNS {
        let started = Instant::now();
        let exported = export_session(&from, "parent", 0)?;
        exports.push(started.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(
            exported.manifest.event_count() as usize == total,
            "the archive holds {} events of {total}",
            exported.manifest.event_count()
        );
        size = exported.bytes.len();
        let to = Stores::of_home(&dir.join(format!("to-{run}")));
        let started = Instant::now();
        import_archive(&to, "bench", &exported.bytes, ImportOptions::default())?;
        imports.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_dir_all(&dir);
    report("archive_export_10k_2_children", median(exports), "ms");
    report("archive_import_10k_2_children", median(imports), "ms");
    report("archive_size_10k_2_children", size as f64 / 1024.0, "KiB");
    Ok(())
}

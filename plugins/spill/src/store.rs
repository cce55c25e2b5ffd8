//! Where spilled texts go: `<root>/session-<hash of the session id>/<random>-<tool>.txt`,
//! directories private to the user (0700) and files readable by the user only (0600). Files
//! are never removed here: the model may read them in any later turn, after a resume too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// FNV-1a, enough to give a session a short stable directory name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A name no other spill of this process takes: clock, process and a counter, hashed.
fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = fnv(&format!("{nanos}-{}-{n}", std::process::id()));
    format!("{:012x}", hash & 0xffff_ffff_ffff)
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Where `session`'s spill of a `tool` result goes: a fresh name, nothing written yet.
pub(crate) fn path_for(root: &Path, session: &str, tool: &str) -> PathBuf {
    let dir = root.join(format!("session-{:012x}", fnv(session) & 0xffff_ffff_ffff));
    let safe_tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{}-{safe_tool}.txt", unique()))
}

/// Writes `text` at `path` (from [`path_for`]), its directory private to the user.
pub(crate) fn save(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

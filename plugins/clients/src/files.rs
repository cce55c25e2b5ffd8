//! `@` in the composer: the files of a session's folder a person may name in a prompt. The
//! folder is walked as git would list it (`.gitignore`, `.ignore` and global excludes honoured,
//! hidden files left out), up to a bound, and kept a few seconds so each key typed does not
//! walk it again. The prompt then carries the path as typed (`@src/main.rs`): the model reads
//! the file with its own tools, under the session's permissions.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dsh_plugin_api::lock;

/// Files looked at in one folder at most; past that the completion says it is partial.
const MOST_FILES: usize = 50_000;

/// How long a walk is reused.
const FRESH: Duration = Duration::from_secs(5);

/// Completions answered at most.
const SHOWN: usize = 20;

/// One folder's files, as walked.
struct Walked {
    root: PathBuf,
    at: Instant,
    files: Arc<Vec<String>>,
    partial: bool,
}

/// The last folder walked.
#[derive(Default)]
pub(crate) struct FileIndex {
    last: Mutex<Option<Walked>>,
}

fn walk(root: &Path) -> (Vec<String>, bool) {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        if files.len() >= MOST_FILES {
            return (files, true);
        }
        if let Ok(relative) = entry.path().strip_prefix(root) {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    (files, false)
}

/// How well `path` answers `query` (lowercase): lower is better, `None` is no match. A file
/// whose name starts with it beats one whose name holds it, which beats a match in a folder.
fn rank(path: &str, query: &str) -> Option<(u8, usize)> {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let class = if query.is_empty() || name.starts_with(query) {
        0
    } else if name.contains(query) {
        1
    } else if lower.starts_with(query) {
        2
    } else if lower.contains(query) {
        3
    } else {
        return None;
    };
    Some((class, path.len()))
}

impl FileIndex {
    /// The files of `root` that best answer `query`, and whether the folder was cut short.
    pub(crate) fn complete(&self, root: &Path, query: &str) -> (Vec<String>, bool) {
        let (files, partial) = self.files_of(root);
        let query = query.trim().trim_start_matches("./").to_lowercase();
        let mut ranked: Vec<((u8, usize), &String)> = files
            .iter()
            .filter_map(|path| Some((rank(path, &query)?, path)))
            .collect();
        ranked.sort();
        let best = ranked.into_iter().take(SHOWN).map(|(_, path)| path.clone());
        (best.collect(), partial)
    }

    fn files_of(&self, root: &Path) -> (Arc<Vec<String>>, bool) {
        let mut last = lock(&self.last);
        if let Some(walked) = last.as_ref()
            && walked.root == root
            && walked.at.elapsed() < FRESH
        {
            return (walked.files.clone(), walked.partial);
        }
        let (files, partial) = walk(root);
        let files = Arc::new(files);
        *last = Some(Walked {
            root: root.to_path_buf(),
            at: Instant::now(),
            files: files.clone(),
            partial,
        });
        (files, partial)
    }
}

impl crate::api::Api {
    /// `files.complete`: the files of the session's folder that best answer what follows `@`.
    pub(crate) async fn complete_files(
        &self,
        caller: &crate::connection::Caller,
        request: dsh_client_protocol::CompleteFiles,
    ) -> Result<dsh_client_protocol::FileCompletions, crate::api::Failure> {
        let live = self
            .agents()
            .ok()
            .and_then(|agents| {
                let listed: Vec<dsh_protocol::AgentSummary> = agents.list().decode().ok()?;
                listed
                    .into_iter()
                    .find(|agent| agent.id == request.session_id)
            })
            .map(|agent| agent.cwd);
        let cwd = match live {
            Some(cwd) => Some(cwd),
            None => self
                .stored()
                .await?
                .into_iter()
                .find(|summary| summary.id == request.session_id)
                .and_then(|summary| summary.cwd),
        };
        let root = PathBuf::from(cwd.unwrap_or_else(|| caller.cwd.clone()));
        let query = request.query;
        let index = self.files.clone();
        // A large folder takes a while to walk: off the runtime's threads.
        let (files, partial) = self
            .ctx
            .blocking(move || index.complete(&root, &query))
            .await
            .map_err(|error| crate::api::Failure::internal(error.to_string()))?;
        Ok(dsh_client_protocol::FileCompletions { files, partial })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_starts_with_the_query_comes_first_and_ignored_files_never() {
        let root = std::env::temp_dir().join(format!("dsh-web-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for path in [
            "src/main.rs",
            "src/domain.rs",
            "docs/main-notes.md",
            "target/main.o",
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let index = FileIndex::default();
        let (found, partial) = index.complete(&root, "main");
        assert!(!partial);
        assert_eq!(
            found,
            ["src/main.rs", "docs/main-notes.md", "src/domain.rs"]
        );
        let (found, _) = index.complete(&root, "SRC/");
        assert_eq!(found, ["src/main.rs", "src/domain.rs"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! Instruction files below the working directory, reached as the agent works. A successful
//! `read`, `write` or `edit` of a file under a subdirectory marks the directories between the
//! working directory and the file; before the session's next step, their instruction files
//! new to the session (and those shown before that changed or are gone) are queued in the
//! session's `next-step` inbox as one message, as the reference's agent-instructions plugin
//! queues them: logged as an inbox splice, entering with the step. A file shown once is not
//! shown again while it stays the same.
//!
//! What was shown is held in memory for the life of the session in this process: a resumed
//! session is shown its nested files again on their first touch.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::lock;
use dsh_protocol::{ContentBlock, Message, MessageSource};
use dsh_tools_seam::ResultView;
use serde_json::json;

use crate::instructions::{self, Discovery, Loaded};
use crate::render::{self, Action, Item, Style};

/// A file the session was shown.
#[derive(Clone)]
struct Shown {
    dir: PathBuf,
    display: String,
    digest: String,
}

#[derive(Default)]
struct Session {
    cwd: PathBuf,
    /// Directories touched since the last queued message.
    touched: BTreeSet<PathBuf>,
    /// By key (directory and file name).
    shown: BTreeMap<String, Shown>,
}

#[derive(Default)]
pub(crate) struct Nested {
    sessions: Mutex<HashMap<String, Session>>,
}

impl Nested {
    /// A file tool worked on `file` (relative to `cwd` or absolute) in `session`.
    pub(crate) fn touch(&self, session: &str, cwd: &str, file: &str) {
        let dirs = instructions::directories_below(Path::new(cwd), file);
        if dirs.is_empty() {
            return;
        }
        let mut sessions = lock(&self.sessions);
        let state = sessions.entry(session.to_owned()).or_default();
        state.cwd = PathBuf::from(cwd);
        state.touched.extend(dirs);
    }

    /// A successful `read`, `write` or `edit` of a session: its file's directories count as
    /// touched.
    pub(crate) fn note(&self, result: &ResultView) {
        let call = &result.call;
        if call.session.is_empty() || !matches!(call.name.as_str(), "read" | "write" | "edit") {
            return;
        }
        let failed = result.result.decode().map_or(true, |logged| {
            logged.message.content.iter().any(|block| {
                matches!(
                    block,
                    ContentBlock::ToolResult {
                        is_error: Some(true),
                        ..
                    }
                )
            })
        });
        if failed {
            return;
        }
        /// The one argument every file tool shares.
        #[derive(dsh_plugin_api::serde::Deserialize)]
        #[serde(crate = "dsh_plugin_api::serde")]
        struct FilePath {
            file_path: String,
        }
        let Ok(arguments) = serde_json::from_str::<FilePath>(&call.arguments) else {
            return;
        };
        self.touch(&call.session, &call.cwd, arguments.file_path.trim());
    }

    pub(crate) fn forget(&self, session: &str) {
        lock(&self.sessions).remove(session);
    }

    /// The message of what changed for `session` since the last one, within `max` bytes;
    /// `None` when nothing did. What it shows counts as shown.
    pub(crate) fn changes(
        &self,
        session: &str,
        discovery: &Discovery,
        max: usize,
    ) -> Option<Message> {
        let mut sessions = lock(&self.sessions);
        let state = sessions.get_mut(session)?;
        if state.touched.is_empty() {
            return None;
        }
        let root = discovery.project_root(&state.cwd);
        let mut dirs = std::mem::take(&mut state.touched);
        dirs.extend(state.shown.values().map(|shown| shown.dir.clone()));
        // (key, file, action, dir)
        let mut found: Vec<(String, Loaded, Action, PathBuf)> = Vec::new();
        let mut present = BTreeSet::new();
        for dir in &dirs {
            for file in discovery.in_directory(&root, dir) {
                let key = file.key(discovery);
                present.insert(key.clone());
                let digest = instructions::digest(&file.content);
                let action = match state.shown.get(&key) {
                    None => Action::Set,
                    Some(shown) if shown.digest != digest => Action::Replace,
                    Some(_) => continue,
                };
                found.push((key, file, action, dir.clone()));
            }
        }
        for (key, shown) in &state.shown {
            if !present.contains(key) {
                let file = Loaded {
                    display: shown.display.clone(),
                    content: Arc::from(""),
                };
                found.push((key.clone(), file, Action::Remove, shown.dir.clone()));
            }
        }
        if found.is_empty() {
            return None;
        }
        let items: Vec<Item<'_>> = found
            .iter()
            .map(|(_, file, action, _)| Item {
                file,
                action: *action,
                scope: file.scope(discovery),
            })
            .collect();
        let rendered = render::render(Style::Changes, &items, max);
        let mut changes = Vec::new();
        for index in rendered.shown {
            let (key, file, action, dir) = &found[index];
            let digest = instructions::digest(&file.content);
            match action {
                Action::Remove => {
                    state.shown.remove(key);
                    changes
                        .push(json!({"action": action.name(), "scope": key, "path": file.display}));
                }
                Action::Set | Action::Replace => {
                    state.shown.insert(
                        key.clone(),
                        Shown {
                            dir: dir.clone(),
                            display: file.display.clone(),
                            digest: digest.clone(),
                        },
                    );
                    changes.push(json!({"action": action.name(), "scope": key, "path": file.display, "digest": digest}));
                }
            }
        }
        if changes.is_empty() {
            return None;
        }
        let source = MessageSource::Other(json!({
            "kind": "agent-instructions",
            "form": "instructions",
            "changes": changes,
        }));
        Some(Message::user(
            "",
            vec![ContentBlock::text(rendered.text)],
            source,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_shown_once_then_again_when_it_changes_or_goes() {
        let root = std::env::temp_dir().join(format!("dsh-nested-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/AGENTS.md"), "first\n").unwrap();
        let discovery = Discovery {
            user_file: None,
            root_markers: Vec::new(),
            candidates: vec!["AGENTS.md".to_owned()],
            local_candidates: Vec::new(),
            max_source_bytes: 1 << 20,
            files: Arc::default(),
            shapes: Arc::default(),
        };
        let nested = Nested::default();
        let cwd = root.to_str().unwrap();
        let text = |message: Message| match &message.content[0] {
            ContentBlock::Text { text } => text.clone(),
            _ => String::new(),
        };
        assert!(nested.changes("s", &discovery, 1 << 16).is_none());
        nested.touch("s", cwd, "top.txt");
        assert!(nested.changes("s", &discovery, 1 << 16).is_none());
        nested.touch("s", cwd, "a/x.txt");
        let first = text(nested.changes("s", &discovery, 1 << 16).unwrap());
        assert!(
            first.contains("Additional instructions from: a/AGENTS.md") && first.contains("first"),
            "{first}"
        );
        nested.touch("s", cwd, "a/y.txt");
        assert!(
            nested.changes("s", &discovery, 1 << 16).is_none(),
            "shown again unchanged"
        );
        std::fs::write(root.join("a/AGENTS.md"), "second\n").unwrap();
        nested.touch("s", cwd, "a/y.txt");
        let updated = text(nested.changes("s", &discovery, 1 << 16).unwrap());
        assert!(
            updated.contains("Updated instructions from: a/AGENTS.md")
                && updated.contains("second"),
            "{updated}"
        );
        std::fs::remove_file(root.join("a/AGENTS.md")).unwrap();
        nested.touch("s", cwd, "a/y.txt");
        let removed = text(nested.changes("s", &discovery, 1 << 16).unwrap());
        assert!(
            removed.contains("Instructions removed: a/AGENTS.md"),
            "{removed}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! A recorded case's working directory and composition: the workspace copied out of the
//! fixture, what the reference's scenario prepares beyond it, and the home patch (automation
//! mode, the reference's hook files, the case's own overlay and, for a case replayed with a
//! composition of its own, its replay rows).

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_tests::sessions::PLAIN_STORE;

use super::{MODELS, PATCHES};

pub(super) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            // The shared fixtures are read-only; the run's copy is its owner's to change.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode | 0o200))
                .unwrap();
        }
    }
}

/// The reference's `prepareFsSearchWorkspace`: eight files under `tree/` whose fixed
/// modification times pin the order a glob sorts them in.
pub(super) fn prepare_fs_search(work: &Path) {
    let files = [
        "archive/a.ts",
        "archive/b.ts",
        "archive/c.ts",
        "docs/guide.md",
        "src/index.ts",
        "test/spec.ts",
        "top.txt",
        "notes.md",
    ];
    // 2000-01-01T00:00:00 local time in the reference; a fixed instant serves the same end.
    let base = std::time::UNIX_EPOCH + Duration::from_secs(946_684_800);
    for (index, relative) in files.iter().enumerate() {
        let path = work.join("tree").join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "fixture\n").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        let when = base + Duration::from_millis(u64::try_from(index).unwrap() + 1);
        file.set_times(
            std::fs::FileTimes::new()
                .set_accessed(when)
                .set_modified(when),
        )
        .unwrap();
    }
}

/// The image scenarios' workspace files, which the shared corpus does not carry: the
/// reference's `red.png` (1x1) and a 2001x1 `wide.png`, one pixel over the side limit.
pub(super) fn prepare_images(name: &str, work: &Path) {
    match name {
        "read-image" | "read-image-text-route" => {
            std::fs::write(work.join("red.png"), crate::images::RED_PNG).unwrap();
        }
        "read-image-dimension" => {
            std::fs::write(work.join("wide.png"), crate::images::png(2001, 1)).unwrap();
        }
        _ => {}
    }
}

/// The reference's `agent-instructions` workspace: its `AGENTS.md` files are symlinks to
/// `AGENTS.canonical.md` siblings and its root marker a dotfile, neither of which the shared
/// corpus keeps, so they are made here (the links as links: discovery follows them); and
/// `prepareDelimiterPathWorkspace`: a directory whose name holds a closing
/// `</system-reminder>`.
pub(super) fn prepare_instructions(work: &Path) {
    for (dir, text) in [
        ("", "Root snapshot instruction.\n"),
        ("nested", "Nested snapshot instruction.\n"),
    ] {
        let dir = work.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("AGENTS.canonical.md"), text).unwrap();
        std::os::unix::fs::symlink("AGENTS.canonical.md", dir.join("AGENTS.md")).unwrap();
    }
    std::fs::write(work.join(".dsh-project"), "snapshot root marker\n").unwrap();
    let scope = work.join("scope</system-reminder>");
    std::fs::create_dir_all(&scope).unwrap();
    std::fs::write(
        scope.join("AGENTS.md"),
        "Delimiter path snapshot instruction.\n",
    )
    .unwrap();
    std::fs::write(scope.join("task.txt"), "delimiter path snapshot task\n").unwrap();
}

/// A case the reference replays with a composition of its own: `session-title-after-turn`
/// answers the conversation from its log and the title model, on a route of its own, from its
/// override (paced, so the title lands after the turn). The route is registered with `llm`
/// by an adapter row that is never reached (the replay answers first). The rows, given the
/// replay folder.
pub(super) fn own_replay_rows(name: &str, replay: &Path) -> Option<String> {
    if name != "session-title-after-turn" {
        return None;
    }
    let (main, title) = (replay.join("main"), replay.join("title"));
    for folder in [&main, &title] {
        std::fs::create_dir_all(folder).unwrap();
        std::fs::copy(replay.join("session.jsonl"), folder.join("session.jsonl")).unwrap();
    }
    std::fs::rename(
        replay.join("replay.override.json"),
        title.join("replay.override.json"),
    )
    .unwrap();
    let path = |path: PathBuf| serde_json::to_string(&path).unwrap();
    Some(format!(
        "- insert:\n\
         \x20   - id: llm-replay-main\n      name: llm-replay\n      config:\n        log: {}\n        provider: deepseek-official\n\
         \x20   - id: title-replay\n      group: true\n      isolate: {{llm_replay: true}}\n      config:\n\
         \x20       - id: llm-replay-title\n          name: llm-replay\n          config:\n            log: {}\n            provider: title-replay\n            paceMs: 10\n            answerTitles: true\n\
         \x20   - id: llm-title-route\n      name: llm-deepseek\n      config:\n        provider: title-replay\n        baseURL: http://127.0.0.1:9\n\
         - id: session-title\n  config:\n    llm:\n      enabled: true\n      route:\n        provider: title-replay\n        model: title-model\n",
        path(main.join("session.jsonl")),
        path(title.join("session.jsonl")),
    ))
}

/// The home patch of a case: automation mode on the recordings' route, a plain store, the
/// reference's hook files of the process's directory, and the case's own overlay.
pub(super) fn patch(name: &str, work: &Path) -> String {
    let quoted = |file: &str| serde_json::to_string(&work.join(file)).unwrap();
    let model = MODELS
        .iter()
        .find(|(case, _)| *case == name)
        .map_or("deepseek-official/deepseek-v4-flash", |(_, model)| model);
    let mut patch = format!(
        "- id: acp\n  config:\n    mode: automation\n    model: {model}\n\
         {PLAIN_STORE}\
         - id: hooks-claude-code\n  config:\n    format: claude-code\n    files: [{}]\n\
         - id: hooks-codex\n  config:\n    format: codex\n    files: [{}]\n",
        quoted("hooks.json"),
        quoted("codex-hooks.json"),
    );
    if let Some((_, extra)) = PATCHES.iter().find(|(case, _)| *case == name) {
        patch.push_str(extra);
    }
    patch
}

//! `AGENTS.md` files as context snapshots. The working directory's and its parents' make one
//! snapshot: the nearest file last (it is the most specific), at most `cap` bytes in all (the
//! farthest files give way first). A directory below the working directory that the agent
//! worked in (a successful `read`, `write` or `edit` of a file under it) adds its own
//! `AGENTS.md`, one snapshot per directory, from the next step on.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The snapshot text, or `None` when there is no instruction file.
pub(crate) fn agents_md(cwd: &Path, cap: usize) -> Option<String> {
    let mut found = Vec::new();
    let mut dir = Some(cwd);
    while let Some(current) = dir {
        let file = current.join("AGENTS.md");
        if let Some(text) = read_capped(&file, cap) {
            let shown = match file.strip_prefix(cwd) {
                Ok(relative) => relative.display().to_string(),
                Err(_) => file.display().to_string(),
            };
            found.push((shown, text));
        }
        dir = current.parent();
    }
    if found.is_empty() {
        return None;
    }
    // Nearest first while budgeting, so the most specific file is the one always kept.
    let mut kept = Vec::new();
    let mut budget = cap;
    for (shown, text) in found {
        if text.len() > budget {
            kept.push((shown, capped(text, budget)));
            break;
        }
        budget -= text.len();
        kept.push((shown, text));
    }
    kept.reverse();
    let mut out = String::from(
        "Project instructions from AGENTS.md files (farthest first; nearer files are more specific \
         and win where they differ):",
    );
    for (shown, text) in kept {
        out.push_str(&format!("\n\n## {shown}\n\n{}", text.trim_end()));
    }
    Some(out)
}

/// The directories strictly below `cwd` down to the parent of `file` (`a`, `a/b` for
/// `a/b/c.txt`), relative to `cwd`; none for a file outside `cwd` or directly in it.
pub(crate) fn directories_below(cwd: &Path, file: &str) -> Vec<PathBuf> {
    let path = Path::new(file);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let Ok(relative) = joined.strip_prefix(cwd) else {
        return Vec::new();
    };
    // `..` could climb out; such a path adds nothing.
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return Vec::new();
    }
    let Some(parent) = relative.parent() else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    let mut current = PathBuf::new();
    for component in parent.components() {
        current.push(component);
        dirs.push(current.clone());
    }
    dirs
}

/// One snapshot per touched directory that holds an `AGENTS.md`: `(key, text)`.
pub(crate) fn nested(cwd: &Path, touched: &BTreeSet<PathBuf>, cap: usize) -> Vec<(String, String)> {
    touched
        .iter()
        .filter_map(|dir| {
            let text = read_capped(&cwd.join(dir).join("AGENTS.md"), cap)?;
            let shown = dir.display();
            let text = capped(text, cap);
            Some((
                format!("agents-md:{shown}"),
                format!(
                    "Project instructions from {shown}/AGENTS.md (they apply to work under {shown}; more specific than the files above it):\n\n{}",
                    text.trim_end()
                ),
            ))
        })
        .collect()
}

/// The text of a regular file, at most `cap` bytes and one more (enough to see it was cut);
/// `None` for anything else. A FIFO or a device named `AGENTS.md` must not hang or flood the
/// host (this runs on its runtime thread).
fn read_capped(file: &Path, cap: usize) -> Option<String> {
    use std::io::Read;
    if !std::fs::metadata(file).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `text` within `cap` bytes (never splitting a character), marked when it was cut.
fn capped(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    format!(
        "{}\n[cut at the size cap]",
        &text[..text.floor_char_boundary(cap)]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_strictly_below_the_cwd_count() {
        let cwd = Path::new("/w");
        assert_eq!(
            directories_below(cwd, "a/b/c.txt"),
            [PathBuf::from("a"), PathBuf::from("a/b")]
        );
        assert_eq!(directories_below(cwd, "/w/a/x.rs"), [PathBuf::from("a")]);
        assert!(directories_below(cwd, "top.txt").is_empty());
        assert!(directories_below(cwd, "/elsewhere/a/b.txt").is_empty());
        assert!(directories_below(cwd, "a/../../b/c.txt").is_empty());
    }

    #[test]
    fn nearest_file_comes_last_and_the_cap_drops_the_farthest() {
        let root = std::env::temp_dir().join(format!("dsh-agents-md-{}", std::process::id()));
        let nested = root.join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(root.join("AGENTS.md"), "outer rule").unwrap();
        std::fs::write(nested.join("AGENTS.md"), "inner rule").unwrap();
        let text = agents_md(&nested, 1 << 16).unwrap();
        let (outer, inner) = (
            text.find("outer rule").unwrap(),
            text.find("inner rule").unwrap(),
        );
        assert!(outer < inner, "{text}");
        let capped = agents_md(&nested, 12).unwrap();
        assert!(
            capped.contains("inner rule") && capped.contains("cut at the size cap"),
            "{capped}"
        );
        assert!(!capped.contains("outer rule"), "{capped}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}

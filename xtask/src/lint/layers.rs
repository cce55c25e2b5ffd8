//! Who may use whom, by folder: a crate under `plugin-api/` depends on nothing under `host/` or
//! `plugins/`, and a crate under `host/` on nothing under `plugins/` (its `[dependencies]`; its
//! tests may reach further). Plugin authors build on `plugin-api` alone, the host links
//! `plugin-api` and its own libraries, plugins may take any of them: a dependency the other way
//! runs back up the folders.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The folder's rank: a crate may depend on crates of its own rank or lower.
fn rank(path: &str) -> Option<u8> {
    [("plugin-api/", 0), ("host/", 1), ("plugins/", 2)]
        .iter()
        .find(|(prefix, _)| path.starts_with(prefix))
        .map(|(_, rank)| *rank)
}

/// `name = { path = "dir" ... }` lines of the root manifest's `[workspace.dependencies]`.
fn workspace_paths(root_manifest: &str) -> BTreeMap<String, String> {
    section(root_manifest, "[workspace.dependencies]")
        .filter_map(|line| {
            let (name, rest) = line.split_once('=')?;
            let path = rest.split("path = \"").nth(1)?.split('"').next()?;
            Some((name.trim().to_owned(), format!("{path}/")))
        })
        .collect()
}

/// The lines of `[header]` in a manifest, up to the next table.
fn section<'a>(manifest: &'a str, header: &'a str) -> impl Iterator<Item = &'a str> {
    manifest
        .lines()
        .skip_while(move |line| line.trim() != header)
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
}

/// The names a crate's `[dependencies]` list (`name.workspace = true`, `name = {...}`).
fn dependencies(manifest: &str) -> Vec<String> {
    section(manifest, "[dependencies]")
        .filter_map(|line| {
            let name = line.split(['=', '.']).next()?.trim();
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// Every dependency that runs back up: `crate dir -> dependency dir`.
pub(super) fn back_up(manifests: &[(String, String)], root_manifest: &str) -> Vec<String> {
    let located = workspace_paths(root_manifest);
    let mut found = Vec::new();
    for (dir, manifest) in manifests {
        let Some(own) = rank(dir) else { continue };
        for name in dependencies(manifest) {
            let Some(path) = located.get(&name) else {
                continue;
            };
            if rank(path).is_some_and(|theirs| theirs > own) {
                found.push(format!("{dir} -> {path} ({name})"));
            }
        }
    }
    found
}

/// The workspace-relative directory and text of every `Cargo.toml` under the three folders.
fn manifests(root: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut pending: Vec<std::path::PathBuf> = ["plugin-api", "host", "plugins"]
        .iter()
        .map(|top| root.join(top))
        .collect();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() && name != "target" && name != "src" && !name.starts_with('.') {
                pending.push(path);
            } else if name == "Cargo.toml" {
                let relative = dir
                    .strip_prefix(root)
                    .map(|dir| format!("{}/", dir.display()))
                    .unwrap_or_default();
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                out.push((relative, text));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Prints the count and fails on any.
pub(super) fn check(root: &Path) -> Result<()> {
    let root_manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .context("cannot read the workspace's Cargo.toml")?;
    let found = back_up(&manifests(root)?, &root_manifest);
    let mut out = format!(
        "lint: dependencies that run back up the folders (plugin-api < host < plugins): {}\n",
        found.len()
    );
    for line in &found {
        let _ = writeln!(out, "lint:   {line}");
    }
    print!("{out}");
    if let Some(first) = found.first() {
        bail!("a dependency runs back up the folders: {first}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_back_up_the_folders_is_named() {
        let root = "[workspace.dependencies]\n\
                    dsh-session-log = { path = \"host/libs/session-log\" }\n\
                    dsh-protocol = { path = \"plugin-api/protocol\" }\n\
                    dsh-tools-core = { path = \"plugins/tools/core\" }\n";
        let manifests = vec![
            (
                "plugin-api/kit/visible-check/".to_owned(),
                "[dependencies]\ndsh-protocol.workspace = true\ndsh-session-log.workspace = true\n\n[dev-dependencies]\ndsh-tools-core.workspace = true\n".to_owned(),
            ),
            (
                "host/libs/session-log/".to_owned(),
                "[dependencies]\ndsh-protocol.workspace = true\n".to_owned(),
            ),
            (
                "plugins/tools/".to_owned(),
                "[dependencies]\ndsh-session-log = { workspace = true }\n".to_owned(),
            ),
        ];
        assert_eq!(
            back_up(&manifests, root),
            ["plugin-api/kit/visible-check/ -> host/libs/session-log/ (dsh-session-log)"]
        );
    }
}

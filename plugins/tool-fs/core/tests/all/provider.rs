//! `glob` and `grep` reach files only through the workspace's file system: over a provider that
//! serves a tree held in memory (nothing of it on disk), they list and search that tree.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs_local::{FileKind, FileStat, FileSystem, PublishError, WalkEntry, WalkRequest, Walked};
use dsh_tool_fs_core::{GlobArgs, GrepArgs, SearchOptions, Workspace, glob, grep};

const ROOT: &str = "/nowhere/on/disk";

/// A read-only tree in memory; its walk lists the root, then every file, in name order.
struct InMemory(Vec<(PathBuf, &'static str)>);

impl InMemory {
    fn new(files: &[(&str, &'static str)]) -> Self {
        let mut files: Vec<(PathBuf, &'static str)> = files
            .iter()
            .map(|(path, text)| (Path::new(ROOT).join(path), *text))
            .collect();
        files.sort();
        Self(files)
    }

    fn file(&self, path: &Path) -> Option<&'static str> {
        self.0
            .iter()
            .find(|(known, _)| known == path)
            .map(|(_, text)| *text)
    }
}

impl FileSystem for InMemory {
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        Ok(self.file(path).map(|text| FileStat {
            kind: FileKind::File,
            len: text.len() as u64,
            mtime: None,
            mode: 0o644,
            device: 0,
            inode: 0,
        }))
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let text = self.file(path).ok_or(io::ErrorKind::NotFound)?.as_bytes();
        let start = usize::try_from(offset).unwrap().min(text.len());
        Ok(text[start..(start + len).min(text.len())].to_vec())
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }

    fn publish(&self, _: &Path, _: &[u8], _: Option<u32>, _: bool) -> Result<(), PublishError> {
        Err(PublishError::Io(io::Error::other("read-only")))
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        let root = WalkEntry {
            path: request.root,
            depth: 0,
            is_file: false,
            mtime: None,
        };
        if !visit(Walked::Entry(root)) {
            return Ok(());
        }
        for (path, _) in &self.0 {
            let Ok(relative) = path.strip_prefix(request.root) else {
                continue;
            };
            let entry = WalkEntry {
                path,
                depth: relative.components().count(),
                is_file: true,
                mtime: None,
            };
            if !visit(Walked::Entry(entry)) {
                break;
            }
        }
        Ok(())
    }
}

fn workspace() -> Workspace {
    let tree = InMemory::new(&[
        ("src/lib.rs", "pub fn needle() {}\n"),
        ("src/main.rs", "fn main() {\n    needle();\n}\n"),
        ("README.md", "no match here\n"),
    ]);
    Workspace::new(ROOT).with_fs(Arc::new(tree))
}

#[test]
fn glob_lists_the_providers_tree() {
    let out = glob(
        &GlobArgs {
            pattern: "**".to_owned(),
            path: None,
        },
        &workspace(),
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(out.paths, ["README.md", "src/lib.rs", "src/main.rs"]);
}

#[test]
fn grep_searches_the_providers_files() {
    let out = grep(
        &GrepArgs {
            pattern: "needle".to_owned(),
            path: Some("src".to_owned()),
            include: None,
        },
        &workspace(),
        &SearchOptions::default(),
    )
    .unwrap();
    let found: Vec<(String, u64)> = out
        .matches
        .iter()
        .map(|found| (found.path.clone(), found.line_number))
        .collect();
    assert_eq!(
        found,
        [("src/lib.rs".to_owned(), 1), ("src/main.rs".to_owned(), 2)]
    );
}

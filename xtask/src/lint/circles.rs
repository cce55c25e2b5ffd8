//! Import circles between modules: within each crate, a module (a file) points at the modules
//! whose items it names (`use crate::a::b`, `crate::a::f(..)`, `super::x`), and a circle is a
//! set of modules that reach each other. A circle whose modules sit in more than one folder
//! (`host/src/app` and `host/src/cli`) is what a layout by folders must not have: a folder
//! below another then needs the one above. Circles inside one folder are counted apart.

use std::collections::{BTreeMap, BTreeSet};

/// One crate's module graph: module path (`app::boot`) to the modules it names.
#[derive(Debug, Default)]
struct Graph {
    /// Module path to its file.
    files: BTreeMap<String, String>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

/// The crate root (`host/src/`) and module path (`app::boot`) of a source file, or `None` for a
/// file outside a `src/` folder (tests, examples, benches).
fn module_of(path: &str) -> Option<(String, String)> {
    let (root, rest) = path
        .split_once("/src/")
        .or_else(|| path.strip_prefix("src/").map(|rest| ("", rest)))?;
    let rest = rest.strip_suffix(".rs")?;
    let mut parts: Vec<&str> = rest.split('/').collect();
    if matches!(parts.last(), Some(&"mod" | &"lib" | &"main")) {
        parts.pop();
    }
    Some((format!("{root}/src/"), parts.join("::")))
}

/// The folder a module's file sits in.
fn folder_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// The module paths `text` (the source of module `here`) names, among `known`.
fn named(text: &str, here: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut resolve = |segments: Vec<&str>| {
        // The longest known module the path starts with.
        for take in (1..=segments.len()).rev() {
            let candidate = segments[..take].join("::");
            if known.contains(&candidate) {
                if candidate != here {
                    found.insert(candidate);
                }
                return;
            }
        }
    };
    for (at, _) in text.match_indices("crate::") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        resolve(path_segments(&text[at + "crate::".len()..]));
    }
    let parent: Vec<&str> = here.split("::").filter(|part| !part.is_empty()).collect();
    for (at, _) in text.match_indices("super::") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base: Vec<&str> = parent.clone();
        base.pop();
        let mut segments = base;
        segments.extend(path_segments(&text[at + "super::".len()..]));
        resolve(segments);
    }
    found
}

/// The `::`-separated identifiers at the start of `text`, up to `{`, `(`, `;` or anything else;
/// a `{` group's first names are taken too (`crate::a::{b, c}` names `a::b` and `a::c` as far as
/// a module is concerned, and `a` at least).
fn path_segments(text: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        segments.push(&rest[..end]);
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    segments
}

/// Every circle (a strongly connected set of more than one module) of `graph`, each sorted.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iterative over an explicit stack of (node, next edge index).
    let nodes: Vec<&String> = graph.files.keys().collect();
    let index_of: BTreeMap<&String, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adjacency: Vec<Vec<usize>> = nodes
        .iter()
        .map(|node| {
            graph
                .edges
                .get(*node)
                .map(|targets| {
                    targets
                        .iter()
                        .filter_map(|t| index_of.get(t).copied())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let count = nodes.len();
    let (mut index, mut low, mut on_stack) =
        (vec![usize::MAX; count], vec![0; count], vec![false; count]);
    let (mut next, mut stack, mut found) = (0, Vec::new(), Vec::new());
    for start in 0..count {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some((node, edge)) = work.pop() {
            if edge == 0 {
                index[node] = next;
                low[node] = next;
                next += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&target) = adjacency[node].get(edge) {
                work.push((node, edge + 1));
                if index[target] == usize::MAX {
                    work.push((target, 0));
                } else if on_stack[target] {
                    low[node] = low[node].min(index[target]);
                }
                continue;
            }
            if low[node] == index[node] {
                let mut members = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    members.push(nodes[member].clone());
                    if member == node {
                        break;
                    }
                }
                if members.len() > 1 {
                    members.sort();
                    found.push(members);
                }
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
        }
    }
    found
}

/// The circles of every crate in `files` (workspace-relative path, text): those that span
/// folders, then those inside one, each as the files it joins.
pub(crate) fn of(files: &[(String, String)]) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for (path, _) in files {
        if let Some((root, module)) = module_of(path) {
            graphs
                .entry(root)
                .or_default()
                .files
                .insert(module, path.clone());
        }
    }
    for (path, text) in files {
        let Some((root, module)) = module_of(path) else {
            continue;
        };
        let Some(graph) = graphs.get_mut(&root) else {
            continue;
        };
        let known: BTreeSet<String> = graph.files.keys().cloned().collect();
        let targets = named(text, &module, &known);
        graph.edges.insert(module, targets);
    }
    let (mut across, mut inside) = (Vec::new(), Vec::new());
    for graph in graphs.values() {
        for circle in circles(graph) {
            let paths: Vec<String> = circle
                .iter()
                .filter_map(|m| graph.files.get(m).cloned())
                .collect();
            let folders: BTreeSet<&str> = paths.iter().map(|path| folder_of(path)).collect();
            match folders.len() > 1 {
                true => across.push(paths),
                false => inside.push(paths),
            }
        }
    }
    (across, inside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn modules_are_named_by_their_path_below_src() {
        assert_eq!(
            module_of("host/src/app/mod.rs"),
            Some(("host/src/".to_owned(), "app".to_owned()))
        );
        assert_eq!(
            module_of("host/src/app/boot.rs"),
            Some(("host/src/".to_owned(), "app::boot".to_owned()))
        );
        assert_eq!(
            module_of("host/src/lib.rs"),
            Some(("host/src/".to_owned(), String::new()))
        );
        assert_eq!(module_of("tests/all/main.rs"), None);
    }

    #[test]
    fn a_circle_across_folders_is_told_from_one_inside_a_folder() {
        let (across, inside) = of(&files(&[
            ("h/src/lib.rs", "mod app; mod cli;"),
            ("h/src/app/mod.rs", "use crate::cli::Args;"),
            ("h/src/cli/mod.rs", "fn f() { crate::app::run(); }"),
            ("h/src/runtime/a.rs", "use super::b::X;"),
            ("h/src/runtime/b.rs", "use crate::runtime::a::Y;"),
            ("h/src/runtime/mod.rs", ""),
        ]));
        assert_eq!(across, [["h/src/app/mod.rs", "h/src/cli/mod.rs"]]);
        assert_eq!(inside, [["h/src/runtime/a.rs", "h/src/runtime/b.rs"]]);
    }
}

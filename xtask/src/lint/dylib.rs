//! The workspace's host and plugin libraries link `plugin-api` as one shared `dylib`, whose file
//! name carries no hash: every build of it replaces the last one. A build of a few packages
//! (`cargo build -p tool-bash`, `cargo test -p dsh-tests`) must therefore compile it, and what
//! it links, exactly as a build of the whole workspace does, or the binaries built before stop
//! finding its symbols (their names carry the hash of each crate's features). Cargo resolves
//! features per build, over the packages it builds; `plugin-api` pins, as dependencies of its
//! own, the features the whole workspace enables. This check compares the features of its
//! dependency closure when it is built alone (the fewest any build can have) with those of the
//! whole workspace with its tests and build scripts (the most).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Each package (`name vX.Y.Z`) of a `cargo tree` with the feature sets it is built with (one
/// per way it is built: for the target, for build scripts and macros).
type Features = BTreeMap<String, BTreeSet<String>>;

pub(crate) fn check(root: &Path) -> Result<()> {
    let alone = features(root, &["-p", "dsh-plugin-api", "-e", "normal,build"])?;
    let whole = features(root, &["--workspace", "-e", "normal,build,dev"])?;
    let drifted: Vec<String> = alone
        .iter()
        .filter(|(package, sets)| whole.get(*package) != Some(sets))
        .map(|(package, _)| {
            let wanted = whole.get(package).cloned().unwrap_or_default();
            format!("{package} (the workspace: {wanted:?})")
        })
        .collect();
    println!(
        "lint: dependencies of the shared plugin-api dylib whose features a partial build would change: {}",
        drifted.len()
    );
    if drifted.is_empty() {
        return Ok(());
    }
    bail!(
        "pin these features in plugin-api/Cargo.toml (a partial build would rebuild \
         libdsh_plugin_api.so differently and break the binaries built before it): {}",
        drifted.join("; ")
    )
}

fn features(root: &Path, selection: &[&str]) -> Result<Features> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .arg("tree")
        .args(selection)
        .args(["--prefix", "none", "--format", "{p}|{f}"])
        .current_dir(root)
        .output()
        .with_context(|| format!("cannot run {cargo} tree"))?;
    if !output.status.success() {
        bail!(
            "cargo tree {} failed: {}",
            selection.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(parse(&String::from_utf8_lossy(&output.stdout)))
}

/// Reads `name vX.Y.Z (path)|feature,feature` lines (a repeated package ends in ` (*)`).
fn parse(tree: &str) -> Features {
    let mut out = Features::new();
    for line in tree.lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        let package: Vec<&str> = package.split_whitespace().take(2).collect();
        let features = features.trim_end_matches(" (*)").trim();
        out.entry(package.join(" "))
            .or_default()
            .insert(features.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_built_two_ways_keeps_both_feature_sets() {
        let tree = "memchr v2.8.3|alloc,std\nsyn v2.0.1|full\nmemchr v2.8.3|alloc,std (*)\nsyn v2.0.1|derive\nhost v0.1.0 (/w/host)|\n";
        let features = parse(tree);
        assert_eq!(features["memchr v2.8.3"].len(), 1);
        assert_eq!(features["syn v2.0.1"].len(), 2);
        assert!(features["host v0.1.0"].contains(""));
    }
}

//! Test fixtures that must live outside the workspace, built into `target/fixtures/out/`:
//!
//! - `libthird_party_plugin.so`: a plugin made by the `new-plugin` template, depending on
//!   `plugin-api` only, as a third-party author would build it;
//! - `libincompatible_layout.so`: built against a copy of `plugin-api` whose `PluginDecl` has an
//!   extra field (same version), so the host's layout check must refuse it;
//! - `libincompatible_version.so`: built against a copy of `plugin-api` one minor version ahead
//!   (that version is written beside it, in `incompatible_version.txt`);
//! - `libnot_a_plugin.so`: a shared library without the plugin root module;
//! - `libseam_compat.so`: a tool plugin built against the tool seam of an earlier version
//!   (see the `seam` module).
//!
//! They are built as a third party builds them: with cargo's default flags (none of the
//! workspace's `.cargo/config.toml`, so each links its own standard library and its own copy of
//! `plugin-api`), in a target directory of their own, `target/fixtures/target`. Sharing the
//! workspace's would not work: `plugin-api` is also a `dylib`, whose file name carries no hash,
//! so a fixture's build of it would replace the workspace's.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

mod seam;

use crate::plugin_template;
use crate::process::cargo_with_env;

/// The profile settings of the workspace, so the fixtures are built as the workspace is.
const PROFILE_FLAGS: [&str; 4] = [
    "--config",
    "profile.dev.debug=\"line-tables-only\"",
    "--config",
    "profile.dev.package.\"*\".debug=false",
];

pub(crate) fn build(root: &Path) -> Result<()> {
    crate::timed("build fixtures", || {
        let base = root.join("target/fixtures");
        let out = base.join("out");
        std::fs::create_dir_all(&out)?;

        let third_party = base.join("third-party-plugin");
        refresh_template(
            root,
            "third-party-plugin",
            &third_party,
            &root.join("plugin-api"),
        )?;
        build_crate(root, &third_party, "third_party_plugin", &out)?;

        let not_plugin = base.join("not-a-plugin");
        write_if_changed(&not_plugin.join("Cargo.toml"), NOT_A_PLUGIN_TOML)?;
        write_if_changed(&not_plugin.join("src/lib.rs"), NOT_A_PLUGIN_RS)?;
        build_crate(root, &not_plugin, "not_a_plugin", &out)?;

        let layout_api = base.join("api-layout/plugin-api");
        // The same version with a changed layout, and the next minor version (incompatible
        // under 0.x semver) with the same layout.
        copy_api(root, &layout_api, env!("CARGO_PKG_VERSION"), true)?;
        let layout_plugin = base.join("api-layout/incompatible-layout");
        refresh_template(root, "incompatible-layout", &layout_plugin, &layout_api)?;
        build_crate(root, &layout_plugin, "incompatible_layout", &out)?;

        let version_api = base.join("api-version/plugin-api");
        let next = next_minor(env!("CARGO_PKG_VERSION"));
        copy_api(root, &version_api, &next, false)?;
        // The tests read the version the library was built as from here.
        write_if_changed(&out.join("incompatible_version.txt"), &next)?;
        let version_plugin = base.join("api-version/incompatible-version");
        refresh_template(root, "incompatible-version", &version_plugin, &version_api)?;
        build_crate(root, &version_plugin, "incompatible_version", &out)?;

        seam::build(root, &base, &out)?;
        Ok(())
    })
}

const NOT_A_PLUGIN_TOML: &str = "[package]\nname = \"not-a-plugin\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[workspace]\n";
const NOT_A_PLUGIN_RS: &str = "//! A shared library that is not a dsh plugin.\n\n#[unsafe(no_mangle)]\npub extern \"C\" fn answer() -> u32 {\n    42\n}\n";

/// Writes the template crate, keeping unchanged files untouched (cargo's fingerprints).
fn refresh_template(root: &Path, name: &str, dir: &Path, api: &Path) -> Result<()> {
    let scratch = dir.with_extension("new");
    let _ = std::fs::remove_dir_all(&scratch);
    plugin_template::create(root, name, &scratch)?;
    for file in ["Cargo.toml", "src/lib.rs"] {
        let text = std::fs::read_to_string(scratch.join(file))?;
        let text = text.replace(
            &root.join("plugin-api").display().to_string(),
            &api.display().to_string(),
        );
        write_if_changed(&dir.join(file), &text)?;
    }
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}

fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Copies `plugin-api` as a standalone crate at `version`, optionally with a changed layout.
fn copy_api(root: &Path, dir: &Path, version: &str, change_layout: bool) -> Result<()> {
    let source = root.join("plugin-api");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).ok();
    let manifest = std::fs::read_to_string(source.join("Cargo.toml"))?;
    let manifest = standalone_manifest(root, &manifest, version, &[])?;
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    copy_tree(&source.join("src"), &dir.join("src"), &|file, text| {
        if change_layout {
            change_decl_layout(file, text)
        } else {
            Ok(text)
        }
    })?;
    if let Some(lock) = lock {
        write_if_changed(&dir.join("Cargo.lock"), &lock)?;
    }
    Ok(())
}

/// Copies a source tree, each file's text through `transform` (given its path relative to
/// `from`); unchanged files are left untouched, so cargo does not rebuild them.
fn copy_tree(
    from: &Path,
    to: &Path,
    transform: &dyn Fn(&Path, String) -> Result<String>,
) -> Result<()> {
    copy_tree_at(from, to, Path::new(""), transform)
}

fn copy_tree_at(
    from: &Path,
    to: &Path,
    relative: &Path,
    transform: &dyn Fn(&Path, String) -> Result<String>,
) -> Result<()> {
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let Some(file) = path.file_name().map(PathBuf::from) else {
            continue;
        };
        if path.is_dir() {
            copy_tree_at(&path, &to.join(&file), &relative.join(&file), transform)?;
            continue;
        }
        let text = transform(&relative.join(&file), std::fs::read_to_string(&path)?)?;
        write_if_changed(&to.join(file), &text)?;
    }
    Ok(())
}

/// Adds a field to `PluginDecl`: what a plugin-api edited without a version bump looks like.
fn change_decl_layout(file: &Path, text: String) -> Result<String> {
    let patches: &[(&str, &str)] = match file.to_str() {
        Some("abi.rs") => &[(
            "    pub provides: RVec<RString>,\n",
            "    pub provides: RVec<RString>,\n    /// Added without a version bump.\n    pub priority: u32,\n",
        )],
        Some("plugin.rs") => &[(
            "        apply: apply_shim::<P>,\n",
            "        priority: 0,\n        apply: apply_shim::<P>,\n",
        )],
        _ => &[],
    };
    let mut text = text;
    for (from, to) in patches {
        if !text.contains(from) {
            bail!(
                "plugin-api/src/{} changed: cannot find `{}` to build the layout fixture",
                file.display(),
                from.trim()
            );
        }
        text = text.replacen(from, to, 1);
    }
    Ok(text)
}

/// A workspace crate's manifest with the workspace inheritance replaced by literal values; the
/// crates named in `paths` are depended on at those paths.
fn standalone_manifest(
    root: &Path,
    manifest: &str,
    version: &str,
    paths: &[(&str, PathBuf)],
) -> Result<String> {
    let workspace = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let mut out = String::new();
    let mut in_shared_feature = false;
    for line in manifest.lines() {
        let trimmed = line.trim();
        // The `workspace-shared` feature and its optional dependencies: a copy carries none of
        // the workspace's shared crates (see below), and an optional dependency nobody enables
        // needs no version of its own.
        if in_shared_feature || trimmed.starts_with("workspace-shared = [") {
            in_shared_feature = !trimmed.ends_with(']');
            continue;
        }
        if trimmed.contains("workspace = true") && trimmed.contains("optional = true") {
            continue;
        }
        if let Some(dep) = trimmed.strip_suffix(".workspace = true") {
            if ["version", "edition", "license", "rust-version"].contains(&dep) {
                match dep {
                    "version" => out.push_str(&format!("version = \"{version}\"\n")),
                    "edition" => out.push_str("edition = \"2024\"\n"),
                    _ => {}
                }
                continue;
            }
            if let Some((_, path)) = paths.iter().find(|(name, _)| *name == dep) {
                out.push_str(&format!("{dep} = {{ path = \"{}\" }}\n", path.display()));
                continue;
            }
            let spec = workspace
                .lines()
                .find(|line| line.starts_with(&format!("{dep} = ")))
                .with_context(|| format!("workspace dependency `{dep}` not found"))?;
            out.push_str(spec);
            out.push('\n');
        } else if trimmed == "[lints]"
            || trimmed == "workspace = true"
            || trimmed.starts_with("crate-type = [\"dylib\"")
            || trimmed == "default = [\"workspace-shared\"]"
        {
            // A copy is not shared as a `dylib`: that output's file name has no hash, and the
            // copies of `plugin-api` would replace the real one's in the fixtures' target; so
            // it carries none of the workspace's shared crates either.
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("\n[workspace]\n");
    Ok(out)
}

/// Builds the crate in `dir` and moves `lib<lib>.so` to `out`.
fn build_crate(root: &Path, dir: &Path, lib: &str, out: &Path) -> Result<()> {
    let lock = root.join("Cargo.lock");
    if lock.exists() && !dir.join("Cargo.lock").exists() {
        std::fs::copy(&lock, dir.join("Cargo.lock"))?;
    }
    let manifest = dir.join("Cargo.toml").display().to_string();
    let target_dir = root.join("target/fixtures/target");
    let target = target_dir.display().to_string();
    let mut args = vec![
        "build",
        "--quiet",
        "--manifest-path",
        manifest.as_str(),
        "--target-dir",
        target.as_str(),
    ];
    args.extend(PROFILE_FLAGS);
    // An empty RUSTFLAGS replaces the workspace configuration's flags.
    cargo_with_env(root, &args, &[("RUSTFLAGS", "")])?;
    let file = format!("lib{lib}.so");
    let built = target_dir.join("debug").join(&file);
    std::fs::copy(&built, out.join(&file))
        .with_context(|| format!("cannot copy {}", built.display()))?;
    Ok(())
}

/// `0.2.0` -> `0.3.0`: a version a 0.x host refuses.
fn next_minor(version: &str) -> String {
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    let minor: u64 = parts
        .next()
        .and_then(|minor| minor.parse().ok())
        .unwrap_or(0);
    format!("{major}.{}.0", minor + 1)
}

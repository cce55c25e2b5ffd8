//! `plugin_build {path}`: `cargo rustc --lib` (a build) of one plugin crate, confined by the session's sandbox,
//! offline (a confined command has no network; the dependencies come from cargo's cache).
//! Cargo's JSON stream names the library it produced; the diagnostics it renders are what the
//! model reads when the build fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Deserialize, lock};
use dsh_tools_seam::CallView;

use crate::State;
use crate::error::AuthorError;
use crate::run::{Command, run as run_confined};
use crate::tools::capped;

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
struct Arguments {
    path: String,
}

/// What a successful build produced.
#[derive(Clone)]
pub(crate) struct Built {
    /// The cdylib.
    pub library: PathBuf,
    /// The library's name (`word_count` for `libword_count.so`): what a row names.
    pub name: String,
    /// The library file's size and modification time right after the build: crates of the
    /// same name share the file in the shared target directory.
    pub stamp: Option<Stamp>,
}

/// A file's size and modification time.
pub(crate) type Stamp = (u64, std::time::SystemTime);

/// The stamp of the file at `path` now.
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.len(), metadata.modified().ok()?))
}

/// The lines of cargo's `--message-format=json` stream this tool reads.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Message {
    reason: String,
    #[serde(default)]
    manifest_path: Option<String>,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    filenames: Vec<String>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Target {
    kind: Vec<String>,
    name: String,
}

pub(crate) async fn run(
    state: &State,
    call: &CallView,
    cancel: CancelBox,
) -> Result<String, AuthorError> {
    let arguments: Arguments = serde_json::from_str(&call.arguments)?;
    let dir = State::resolve(call, &arguments.path);
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(AuthorError::NoManifest(dir));
    }
    let (target_dir, note) = target_dir(state, call, &dir);
    let args = vec![
        // `cargo rustc` to pass the crate, and it alone, the cfg below.
        "rustc".to_owned(),
        "--lib".to_owned(),
        "--quiet".to_owned(),
        "--offline".to_owned(),
        "--message-format=json-render-diagnostics".to_owned(),
        "--manifest-path".to_owned(),
        manifest.display().to_string(),
        "--target-dir".to_owned(),
        target_dir.display().to_string(),
        "--".to_owned(),
        // Cargo hashes a crate's path relative to its workspace root, and each plugin crate is
        // a workspace of its own: two crates of the same name in the shared target directory
        // would take each other's build for their own. A cfg naming the crate's folder makes
        // their fingerprints differ; the dependencies stay shared.
        "--cfg".to_owned(),
        format!(
            "dsh_plugin_source=\"{:016x}\"",
            fnv1a(dir.display().to_string().as_bytes())
        ),
    ];
    let scratch = target_dir.join("tmp");
    std::fs::create_dir_all(&scratch).map_err(|source| {
        AuthorError::io(format!("cannot create {}", scratch.display()), source)
    })?;
    let dir_text = dir.display().to_string();
    let finished = run_confined(
        &state.ctx,
        &state.sandbox,
        call,
        Command {
            program: &state.cargo,
            args,
            cwd: &dir_text,
            env: vec![
                ("CARGO_TERM_COLOR", "never".to_owned()),
                // rustc renames its temporary files into the target directory: they must be
                // made on the same mount (the sandbox binds the temp dir and each writable
                // root separately, and a rename across them fails).
                ("TMPDIR", scratch.display().to_string()),
            ],
            timeout: Duration::from_millis(state.build_timeout_ms),
        },
        cancel,
        // The JSON stream is long (a line per artefact); the diagnostics are capped below.
        4 << 20,
    )
    .await?;
    let seconds = finished.elapsed.as_secs_f64();
    let messages = finished.stderr.trim();
    if finished.code != Some(0) {
        let exit = finished
            .code
            .map_or_else(|| "a signal".to_owned(), |code| format!("exit code {code}"));
        return Err(AuthorError::BuildFailed {
            exit,
            seconds,
            note,
            messages: capped(messages, state.max_message_bytes),
        });
    }
    let built =
        artefact(&finished.stdout, &manifest).ok_or_else(|| AuthorError::NoCdylib(dir.clone()))?;
    lock(&state.built).insert(dir.clone(), built.clone());
    let mut text = format!(
        "Built {} in {seconds:.1} s (cargo){note}. Install it with plugin_install {{\"path\": \"{}\"}}.",
        built.library.display(),
        arguments.path
    );
    if !messages.is_empty() {
        text.push_str("\nCompiler messages:\n");
        text.push_str(&capped(messages, state.max_message_bytes));
    }
    Ok(text)
}

/// The 64-bit FNV-1a hash of `bytes`: stable across runs and builds, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The shared target directory where the session's commands may write it, else the crate's
/// own, with a note saying why.
fn target_dir(state: &State, call: &CallView, dir: &Path) -> (PathBuf, String) {
    let shared = &state.target_dir;
    // The sandbox binds writable roots that exist; the host makes the directory first.
    if state.writable(call, shared) && std::fs::create_dir_all(shared).is_ok() {
        return (shared.clone(), String::new());
    }
    (
        dir.join("target"),
        format!(
            " (in the crate's own target/: this session's sandbox does not let commands write the shared {}, which the sandbox row's writableRoots can list)",
            shared.display()
        ),
    )
}

/// The cdylib cargo reported for the package of `manifest`.
fn artefact(stdout: &str, manifest: &Path) -> Option<Built> {
    let manifest = std::fs::canonicalize(manifest).unwrap_or_else(|_| manifest.to_path_buf());
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Message>(line).ok())
        .filter(|message| message.reason == "compiler-artifact")
        .filter(|message| {
            message.manifest_path.as_deref().is_some_and(|path| {
                std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path)) == manifest
            })
        })
        .find_map(|message| {
            let target = message.target?;
            if !target.kind.iter().any(|kind| kind == "cdylib") {
                return None;
            }
            let library = message
                .filenames
                .iter()
                .find(|file| file.ends_with(".so"))?;
            Some(Built {
                stamp: stamp(Path::new(library)),
                library: PathBuf::from(library),
                name: target.name,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdylib_of_the_crate_is_found_in_cargos_stream() {
        let stream = concat!(
            r#"{"reason":"compiler-artifact","manifest_path":"/dep/Cargo.toml","target":{"kind":["cdylib"],"name":"dep"},"filenames":["/t/debug/libdep.so"]}"#,
            "\n",
            "not json\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/c/Cargo.toml","target":{"kind":["cdylib","rlib"],"name":"word_count"},"filenames":["/t/debug/libword_count.rlib","/t/debug/libword_count.so"]}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        let built = artefact(stream, Path::new("/w/c/Cargo.toml"));
        let built = built.map(|built| (built.library, built.name));
        assert_eq!(
            built,
            Some((
                PathBuf::from("/t/debug/libword_count.so"),
                "word_count".to_owned()
            ))
        );
        assert!(artefact(stream, Path::new("/w/other/Cargo.toml")).is_none());
    }
}

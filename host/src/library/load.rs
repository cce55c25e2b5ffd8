//! Loading one library file and turning abi_stable's errors into short, actionable messages.

use std::path::{Path, PathBuf};

use abi_stable::library::{LibraryError, RootModule, lib_header_from_path};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RStr;
use dsh_plugin_api::abi::{LogSink, LogSink_TO};
use dsh_plugin_api::{LogLevel, PluginLibRef};

use super::{FileIdentity, LoadedLibrary};

/// Why a library could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot load library: {message}", path = .path.display())]
    Open { path: PathBuf, message: String },
    #[error("{path}: not a dsh plugin library (no plugin root module): {message}", path = .path.display())]
    NotAPlugin { path: PathBuf, message: String },
    #[error(
        "{path}: built against plugin-api {found}, but this host needs a version compatible with {expected}",
        path = .path.display()
    )]
    IncompatibleVersion { path: PathBuf, expected: String, found: String },
    #[error(
        "{path}: built against an incompatible plugin-api (host {expected}, library {found}): {mismatch}; full report in {dump}",
        path = .path.display(),
        dump = .dump.display()
    )]
    AbiMismatch { path: PathBuf, expected: String, found: String, mismatch: String, dump: PathBuf },
    #[error("{path}: plugin library failed to initialise: {message}", path = .path.display())]
    Init { path: PathBuf, message: String },
    #[error("{path}: {message}", path = .path.display())]
    Io { path: PathBuf, message: String },
}

/// Forwards plugin log records into the host's `tracing` subscriber.
struct HostLogSink {
    library: String,
}

impl LogSink for HostLogSink {
    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>) {
        let source = format!("{}:{}", self.library, target);
        crate::logging::plugin_record(level, &source, message.as_str());
    }
}

/// Loads the library file `load_from` as the library found at `path`.
pub fn load_library(path: &Path, load_from: &Path, debug_dir: &Path) -> Result<LoadedLibrary, LoadError> {
    let identity = FileIdentity::of(load_from)
        .map_err(|error| LoadError::Io { path: path.to_owned(), message: error.to_string() })?;
    let header = lib_header_from_path(load_from).map_err(|error| match error {
        LibraryError::GetSymbolError { err, .. } => {
            LoadError::NotAPlugin { path: path.to_owned(), message: err.to_string() }
        }
        other => LoadError::Open { path: path.to_owned(), message: short_open_error(&other.to_string()) },
    })?;
    let found = header.version_strings().version.to_string();
    let expected = PluginLibRef::VERSION_STRINGS.version.to_string();
    let module = header.init_root_module::<PluginLibRef>().map_err(|error| match error {
        LibraryError::IncompatibleVersionNumber { expected_version, actual_version, .. } => {
            LoadError::IncompatibleVersion {
                path: path.to_owned(),
                expected: expected_version.to_string(),
                found: actual_version.to_string(),
            }
        }
        LibraryError::AbiInstability(report) => {
            let text = report.to_string();
            let dump = write_dump(debug_dir, path, &text);
            LoadError::AbiMismatch {
                path: path.to_owned(),
                expected: expected.clone(),
                found: found.clone(),
                mismatch: summarize_abi_report(&text),
                dump,
            }
        }
        other => LoadError::Init { path: path.to_owned(), message: other.to_string() },
    })?;
    let name = library_name(path);
    (module.init())(LogSink_TO::from_value(HostLogSink { library: name.clone() }, TD_Opaque));
    let decls = (module.plugins())()
        .into_result()
        .map_err(|error| LoadError::Init { path: path.to_owned(), message: error.to_string() })?;
    Ok(LoadedLibrary {
        name,
        path: path.to_owned(),
        loaded_from: load_from.to_owned(),
        identity,
        api_version: found,
        decls: decls.into_vec(),
    })
}

/// `libgreeter_alt.so` -> `greeter_alt`.
fn library_name(path: &Path) -> String {
    let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or("plugin");
    stem.strip_prefix("lib").unwrap_or(stem).to_owned()
}

/// dlopen's message, without abi_stable's wrapping.
fn short_open_error(text: &str) -> String {
    text.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(" ")
}

/// The lines of abi_stable's report that say what differs (the report runs to 1,400+ lines).
pub(crate) fn summarize_abi_report(text: &str) -> String {
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("Error:") || line.starts_with("Expected:") || line.starts_with("Found:"))
        .collect();
    lines.dedup();
    lines.truncate(6);
    if lines.is_empty() {
        return crate::runtime::first_error_line(text);
    }
    lines.join(" ")
}

fn write_dump(debug_dir: &Path, path: &Path, text: &str) -> PathBuf {
    let file = debug_dir.join(format!(
        "abi-mismatch-{}-{}.txt",
        library_name(path),
        std::process::id()
    ));
    let written = std::fs::create_dir_all(debug_dir).and_then(|()| std::fs::write(&file, text));
    if let Err(error) = written {
        tracing::warn!("could not write the ABI report to {}: {error}", file.display());
    }
    file
}

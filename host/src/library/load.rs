//! Loading one library file and turning abi_stable's errors into short, actionable messages.

use std::path::{Path, PathBuf};

use abi_stable::library::{LibraryError, RootModule, lib_header_from_path};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RStr;
use dsh_plugin_api::abi::{LogSink, LogSink_TO};
use dsh_plugin_api::{LogLevel, PluginLibRef};

use super::abi_checks::AbiChecks;
use super::elf::ElfError;
use super::{FileIdentity, LoadedLibrary};

/// Why a library could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot load library: {message}", path = .path.display())]
    Open { path: PathBuf, message: String },
    #[error("{path}: cannot load library: {source}", path = .path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: ElfError,
    },
    #[error("{path}: not a dsh plugin library (no plugin root module): {message}", path = .path.display())]
    NotAPlugin { path: PathBuf, message: String },
    #[error(
        "{path}: built against plugin-api {found}, but this host needs a version compatible with {expected}",
        path = .path.display()
    )]
    IncompatibleVersion {
        path: PathBuf,
        expected: String,
        found: String,
    },
    #[error(
        "{path}: built against an incompatible plugin-api (host {expected}, library {found}): {mismatch}; full report in {dump}",
        path = .path.display(),
        dump = .dump.display()
    )]
    AbiMismatch {
        path: PathBuf,
        expected: String,
        found: String,
        mismatch: String,
        dump: PathBuf,
    },
    #[error("{path}: plugin library failed to initialise: {message}", path = .path.display())]
    Init { path: PathBuf, message: String },
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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

/// Loads the library file `load_from` as the library found at `path`, whose file had
/// `identity` when `load_from` was taken from it.
pub(crate) fn load_library(
    path: &Path,
    load_from: &Path,
    identity: FileIdentity,
    debug_dir: &Path,
    checks: &AbiChecks,
) -> Result<LoadedLibrary, LoadError> {
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(load_from).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let prefix = super::elf::read_prefix(&mut file, len).map_err(io)?;
    super::elf::check_prefix(&prefix, len).map_err(|source| LoadError::Malformed {
        path: path.to_owned(),
        source,
    })?;
    let library_id = super::elf::build_id(&mut file, &prefix);
    let checked_before = checks.library_key(library_id.as_deref());
    drop(file);
    let header = lib_header_from_path(load_from).map_err(|error| match error {
        LibraryError::GetSymbolError { err, .. } => {
            let message = err.to_string();
            // dlsym repeats the file name; the error already starts with it.
            let prefix = format!("{}: ", load_from.display());
            let message = message.strip_prefix(&prefix).unwrap_or(&message).to_owned();
            LoadError::NotAPlugin {
                path: path.to_owned(),
                message,
            }
        }
        other => LoadError::Open {
            path: path.to_owned(),
            message: short_open_error(&other.to_string()),
        },
    })?;
    let found = header.version_strings().version.to_string();
    let expected = PluginLibRef::VERSION_STRINGS.version.to_string();
    if !semver_compatible(&expected, &found) {
        return Err(LoadError::IncompatibleVersion {
            path: path.to_owned(),
            expected,
            found,
        });
    }
    let module = match &checked_before {
        Some(key) if checks.passed(key) => {
            #[allow(
                unsafe_code,
                reason = "the layout check this pair of builds passed before (see abi_checks)"
            )]
            // SAFETY: the layouts compared are data inside the two files, which the two build
            // ids name; this host build checked this library build and found them compatible,
            // so the check would answer the same. The version is still checked.
            unsafe {
                header.init_root_module_with_unchecked_layout::<PluginLibRef>()
            }
        }
        _ => header.init_root_module::<PluginLibRef>(),
    };
    let module = module.map_err(|error| match error {
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => LoadError::IncompatibleVersion {
            path: path.to_owned(),
            expected: expected_version.to_string(),
            found: actual_version.to_string(),
        },
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
        other => LoadError::Init {
            path: path.to_owned(),
            message: other.to_string(),
        },
    })?;
    if let Some(key) = checked_before {
        checks.remember(key);
    }
    let name = library_name(path);
    (module.init())(LogSink_TO::from_value(
        HostLogSink {
            library: name.clone(),
        },
        TD_Opaque,
    ));
    let decls = (module.plugins())()
        .into_result()
        .map_err(|error| LoadError::Init {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
    if let Some(id) = &library_id {
        checks.note_loaded(load_from, id);
    }
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
    let stem = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("plugin");
    stem.strip_prefix("lib").unwrap_or(stem).to_owned()
}

/// dlopen's message, without abi_stable's wrapping.
fn short_open_error(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Our compatibility rule for plugin-api versions (semver; below 1.0 the minor version is the
/// breaking one).
fn semver_compatible(expected: &str, found: &str) -> bool {
    let parse = |text: &str| -> Option<(u64, u64)> {
        let mut parts = text.split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    match (parse(expected), parse(found)) {
        (Some((0, minor)), Some((0, found_minor))) => minor == found_minor,
        (Some((major, _)), Some((found_major, _))) => major == found_major,
        _ => false,
    }
}

/// What abi_stable's report (hundreds of lines) says differs: the first mismatching type and
/// up to three of its errors with their expected and found values.
pub(crate) fn summarize_abi_report(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first_error) = lines.iter().position(|line| line.starts_with("Error:")) else {
        return crate::runtime::first_error_line(text);
    };
    let type_name = lines[..first_error]
        .iter()
        .rposition(|line| line.starts_with("Layout of expected type:"))
        .and_then(|start| {
            lines[start..]
                .iter()
                .find_map(|line| line.trim().strip_prefix("type:"))
        })
        .unwrap_or("?");
    let value_after = |from: usize, label: &str| -> String {
        lines[from..]
            .iter()
            .skip_while(|line| line.trim() != label)
            .nth(1)
            .map(|line| line.trim().to_owned())
            .unwrap_or_default()
    };
    let mut errors = Vec::new();
    for (index, line) in lines.iter().enumerate().skip(first_error) {
        if let Some(kind) = line.strip_prefix("Error:") {
            let entry = format!(
                "{} (expected {}, found {})",
                kind.trim(),
                value_after(index, "Expected:"),
                value_after(index, "Found:")
            );
            if !errors.contains(&entry) {
                errors.push(entry);
            }
        }
        if errors.len() == 3 {
            break;
        }
    }
    format!("type `{type_name}`: {}", errors.join("; "))
}

fn write_dump(debug_dir: &Path, path: &Path, text: &str) -> PathBuf {
    let file = debug_dir.join(format!(
        "abi-mismatch-{}-{}.txt",
        library_name(path),
        std::process::id()
    ));
    let written = std::fs::create_dir_all(debug_dir).and_then(|()| std::fs::write(&file, text));
    if let Err(error) = written {
        tracing::warn!(
            "could not write the ABI report to {}: {error}",
            file.display()
        );
    }
    file
}

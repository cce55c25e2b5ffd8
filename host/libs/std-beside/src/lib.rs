//! The workspace links the Rust standard library dynamically (`-C prefer-dynamic` in
//! `.cargo/config.toml`), so the host and its forty-odd plugin libraries map one copy of it
//! instead of carrying one each. Each binary finds it through its run path `$ORIGIN` (an
//! RPATH, which LD_LIBRARY_PATH does not override), that is beside itself in `target/<profile>/`; this crate, called from the build script of every
//! package whose binaries are started directly (`dsh-host`, `dsh-sandbox-exec`, `dsh`), copies
//! it there from the toolchain. `cargo run` and `cargo test` find it without the copy (cargo
//! puts the toolchain's library directory on the loader's path).
//!
//! A build script reports problems as `cargo:warning` lines: a missing copy makes a binary
//! fail at start with the loader's "cannot open shared object file", which names the file.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the standard library could not be put beside the binaries.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{0} is not set (is this a build script run by cargo?)")]
    NoVariable(&'static str),
    #[error("OUT_DIR {0} is not under a profile directory")]
    OutDir(PathBuf),
    #[error("cannot run {rustc} --print sysroot: {source}")]
    Rustc {
        rustc: String,
        source: std::io::Error,
    },
    #[error("{0} --print sysroot did not print a sysroot")]
    Sysroot(String),
    #[error("cannot list {path}: {source}")]
    List {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot copy {from} to {to}: {source}")]
    Copy {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
}

/// Copies every `libstd-*.so` of the toolchain building this package into the profile's
/// output directory, unless a file of the same size is there already.
pub fn copy_std_beside_binaries() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(problem) = copy() {
        println!("cargo:warning=the standard library was not put beside the binaries: {problem}");
    }
}

fn copy() -> Result<(), CopyError> {
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    // OUT_DIR is <profile>/build/<package>-<hash>/out.
    let profile_dir = out_dir
        .ancestors()
        .nth(3)
        .ok_or_else(|| CopyError::OutDir(out_dir.clone()))?;
    let library_dir = toolchain_library_dir()?;
    let entries = std::fs::read_dir(&library_dir).map_err(|source| CopyError::List {
        path: library_dir.clone(),
        source,
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("libstd-") && name.ends_with(".so") {
            println!("cargo:rerun-if-changed={}", entry.path().display());
            copy_if_changed(&entry.path(), &profile_dir.join(name))?;
        }
    }
    Ok(())
}

/// `<sysroot>/lib/rustlib/<target>/lib` of the compiler cargo runs for this build.
fn toolchain_library_dir() -> Result<PathBuf, CopyError> {
    let rustc = env("RUSTC")?;
    let output = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|source| CopyError::Rustc {
            rustc: rustc.clone(),
            source,
        })?;
    let sysroot = String::from_utf8(output.stdout)
        .ok()
        .filter(|sysroot| output.status.success() && !sysroot.trim().is_empty())
        .ok_or_else(|| CopyError::Sysroot(rustc.clone()))?;
    Ok(Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(env("TARGET")?)
        .join("lib"))
}

/// Replaces `to` by a renamed copy, never by writing into it: a running process may have the
/// old file mapped, and rewriting mapped pages under it would crash it.
fn copy_if_changed(from: &Path, to: &Path) -> Result<(), CopyError> {
    let size = |path: &Path| std::fs::metadata(path).map(|meta| meta.len()).ok();
    if size(from).is_some() && size(from) == size(to) {
        return Ok(());
    }
    // Several build scripts may copy at once: each writes its own temporary name.
    let partial = to.with_extension(format!("so.{}.partial", std::process::id()));
    std::fs::copy(from, &partial)
        .and_then(|_| std::fs::rename(&partial, to))
        .map_err(|source| {
            let _ = std::fs::remove_file(&partial);
            CopyError::Copy {
                from: from.to_owned(),
                to: to.to_owned(),
                source,
            }
        })
}

fn env(name: &'static str) -> Result<String, CopyError> {
    std::env::var(name).map_err(|_| CopyError::NoVariable(name))
}

//! Plugin libraries: finding `lib<name>.so` in the plugin directories, loading and checking it
//! (abi_stable layout and version checks), and keeping every loaded copy alive.
//!
//! Libraries are never unloaded (ARCHITECTURE §4): `dlclose` crashes when anything still points
//! into the library. A changed library is copied to a unique path and loaded from there, because
//! `dlopen` caches by path; the old copy stays mapped and is counted in diagnostics.

mod abi_checks;
mod elf;
mod layout_record;
mod load;

use crate::fast_map::FastMap;
use dsh_plugin_api::lock;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub use elf::{ElfError, ElfPart};
pub use load::LoadError;
use load::load_library;

pub use crate::runtime::{FileIdentity, LoadedLibrary, PluginRef};
use crate::runtime::{Resolver, Source};

/// The file name of library `name`: `lib<name>.so`, with `-` read as `_`.
pub fn library_file_name(name: &str) -> String {
    format!("lib{}.so", name.replace('-', "_"))
}

/// Splits a row's `name` into library and export.
pub fn split_spec(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once('/') {
        Some((library, export)) => (library, Some(export)),
        None => (spec, None),
    }
}

/// No plugin directory holds the library file.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{file} not found in {}", list_dirs(dirs))]
pub struct NotFound {
    /// The file looked for (`lib<name>.so`).
    pub file: String,
    /// The directories searched, in lookup order.
    pub dirs: Vec<PathBuf>,
}

fn list_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Libraries by name, as resolved last. `generation` moves whenever a location is forgotten or
/// a copy replaced, so a resolution that began before does not store what it found.
#[derive(Default)]
struct Ready {
    generation: u64,
    libraries: FastMap<String, Arc<LoadedLibrary>>,
}

/// The plugin directories, in lookup order, and every library loaded from them.
pub struct Libraries {
    dirs: Vec<PathBuf>,
    copies_dir: PathBuf,
    loaded: Mutex<FastMap<PathBuf, Arc<LoadedLibrary>>>,
    copies_held: AtomicUsize,
    copy_counter: AtomicUsize,
    debug_dir: PathBuf,
    /// Library builds that passed the layout check against this host build.
    checks: Arc<abi_checks::AbiChecks>,
    /// Where each library name was found; misses are not cached, so a PENDING row finds its
    /// library as soon as it appears. Cleared whenever a plugin directory changes.
    found: Mutex<FastMap<String, PathBuf>>,
    /// The library each name resolved to, while where it was found and the copy loaded there
    /// stand: a row's mount takes it with one look-up by name.
    ready: Mutex<Ready>,
    /// The plugins compiled into the host (the library `dsh-host`).
    builtin: Arc<LoadedLibrary>,
}

impl Libraries {
    /// `dirs` in lookup order; reload copies go to `copies_dir`, ABI dumps to `debug_dir`;
    /// rows that name `builtin`'s library get the plugins compiled into the host.
    pub fn new(
        dirs: Vec<PathBuf>,
        copies_dir: PathBuf,
        debug_dir: PathBuf,
        builtin: LoadedLibrary,
    ) -> Self {
        let checks = Arc::new(abi_checks::AbiChecks::open(copies_dir.join("abi-checked")));
        Self {
            dirs,
            checks,
            copies_dir,
            loaded: Mutex::default(),
            copies_held: AtomicUsize::new(0),
            copy_counter: AtomicUsize::new(0),
            debug_dir,
            found: Mutex::default(),
            ready: Mutex::default(),
            builtin: Arc::new(builtin),
        }
    }

    /// The record the bus consults before checking two type layouts (kept beside the record
    /// of checked libraries).
    pub fn layout_record(&self) -> Arc<dyn crate::runtime::LayoutRecord> {
        Arc::new(layout_record::LayoutNames::new(self.checks.clone()))
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Library copies loaded so far (never unloaded).
    pub fn copies_held(&self) -> usize {
        self.copies_held.load(Ordering::Relaxed)
    }

    /// The first `lib<name>.so` in the directories; a later duplicate is logged as a warning.
    pub fn find(&self, name: &str) -> Result<PathBuf, NotFound> {
        if let Some(path) = lock(&self.found).get(name) {
            return Ok(path.clone());
        }
        let path = self.search(name)?;
        lock(&self.found).insert(name.to_owned(), path.clone());
        Ok(path)
    }

    /// Forgets where libraries were found (a plugin directory changed).
    pub fn forget_locations(&self) {
        lock(&self.found).clear();
        let mut ready = lock(&self.ready);
        ready.generation += 1;
        ready.libraries.clear();
    }

    fn search(&self, name: &str) -> Result<PathBuf, NotFound> {
        let file = library_file_name(name);
        let mut found = self
            .dirs
            .iter()
            .map(|dir| dir.join(&file))
            .filter(|path| path.is_file());
        let Some(first) = found.next() else {
            return Err(NotFound {
                file,
                dirs: self.dirs.clone(),
            });
        };
        for shadowed in found {
            tracing::warn!(
                "{} is shadowed by {} (first match wins)",
                shadowed.display(),
                first.display()
            );
        }
        Ok(first)
    }

    /// The loaded library at `path`, loading it (from its own path) on first use.
    pub fn get_or_load(&self, path: &Path) -> Result<Arc<LoadedLibrary>, LoadError> {
        if let Some(library) = self.lock().get(path).cloned() {
            return Ok(library);
        }
        let identity = FileIdentity::of(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        let library = Arc::new(load_library(
            path,
            path,
            identity,
            &self.debug_dir,
            &self.checks,
        )?);
        self.copies_held.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(path.to_owned(), library.clone());
        Ok(library)
    }

    /// The loaded library at `path`, if any.
    pub fn loaded(&self, path: &Path) -> Option<Arc<LoadedLibrary>> {
        self.lock().get(path).cloned()
    }

    /// Loads the current file at `path` from a unique copy. On success it becomes the library
    /// rows resolve to; on failure the previous copy stays in use.
    pub fn reload(&self, path: &Path) -> Result<Arc<LoadedLibrary>, LoadError> {
        std::fs::create_dir_all(&self.copies_dir).map_err(|source| LoadError::Io {
            path: self.copies_dir.clone(),
            source,
        })?;
        let serial = self.copy_counter.fetch_add(1, Ordering::Relaxed) + 1;
        let stem = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or("plugin");
        let copy = self
            .copies_dir
            .join(format!("{stem}-{}-{serial}.so", std::process::id()));
        // The identity is taken before the copy: a replacement arriving meanwhile shows up as a
        // further change and is loaded in its turn.
        let identity = FileIdentity::of(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        std::fs::copy(path, &copy).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        let loaded = load_library(path, &copy, identity, &self.debug_dir, &self.checks);
        let library = match loaded {
            Ok(library) => Arc::new(library),
            Err(error) => {
                let _ = std::fs::remove_file(&copy);
                return Err(error);
            }
        };
        self.copies_held.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(path.to_owned(), library.clone());
        let mut ready = lock(&self.ready);
        ready.generation += 1;
        ready.libraries.retain(|_, library| library.path != path);
        drop(ready);
        Ok(library)
    }

    /// Whether the library of plugin spec `spec` is loaded already (the host's own always is).
    pub fn is_loaded(&self, spec: &str) -> bool {
        let (name, _) = split_spec(spec);
        name == self.builtin.name
            || self
                .find(name)
                .is_ok_and(|path| self.loaded(&path).is_some())
    }

    /// Resolves a row's plugin spec against the directories and the libraries loaded: a
    /// library loaded before is used as it was loaded, without looking at its file again. A
    /// file replaced since is picked up by the watcher's reload of the rows that use it; not
    /// looking costs a row's mount no system call (a `statx` per row was a tenth of mounting
    /// 100 rows).
    pub fn resolve_spec(&self, spec: &str) -> Source {
        self.resolve_with(spec, false)
    }

    /// As [`Self::resolve_spec`], but a library whose file was replaced since it was loaded (a
    /// plugin installed again from a session, which then mounts it) is loaded afresh, from a
    /// unique copy as a reload is: the mount gets the file as it is now. When the new file
    /// does not load, the copy loaded before is used, as a reload keeps the running version.
    pub fn resolve_spec_as_now(&self, spec: &str) -> Source {
        self.resolve_with(spec, true)
    }

    fn resolve_with(&self, spec: &str, as_now: bool) -> Source {
        let (name, export) = split_spec(spec);
        if name == self.builtin.name {
            return select_export(&self.builtin, export);
        }
        let generation = {
            let ready = lock(&self.ready);
            match ready.libraries.get(name) {
                Some(library) if !as_now => return select_export(library, export),
                _ => ready.generation,
            }
        };
        let path = match self.find(name) {
            Ok(path) => path,
            Err(missing) => return Source::Missing(missing.to_string()),
        };
        let replaced = as_now
            && self.loaded(&path).is_some_and(|loaded| {
                FileIdentity::of(&path).is_ok_and(|now| now != loaded.identity)
            });
        let library = match replaced {
            true => self.reload(&path).or_else(|error| {
                tracing::error!("keeping the loaded version: {error}");
                self.get_or_load(&path)
            }),
            false => self.get_or_load(&path),
        };
        let library = match library {
            Ok(library) => library,
            Err(error) => return Source::Broken(error.to_string()),
        };
        let mut ready = lock(&self.ready);
        if ready.generation == generation {
            ready.libraries.insert(name.to_owned(), library.clone());
        }
        drop(ready);
        select_export(&library, export)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FastMap<PathBuf, Arc<LoadedLibrary>>> {
        lock(&self.loaded)
    }
}

/// Picks the plugin a row names: the export given, else the only one, else the one named like
/// the library.
pub fn select_export(library: &Arc<LoadedLibrary>, export: Option<&str>) -> Source {
    let names: Vec<&str> = library
        .decls
        .iter()
        .map(|decl| decl.name.as_str())
        .collect();
    let index = match export {
        Some(export) => names.iter().position(|name| *name == export),
        None if names.len() == 1 => Some(0),
        None => names
            .iter()
            .position(|name| name.replace('-', "_") == library.name.replace('-', "_")),
    };
    match index {
        Some(index) => Source::Plugin(PluginRef {
            library: library.clone(),
            index,
        }),
        None => Source::Broken(match export {
            Some(export) => format!(
                "{} exports no plugin `{export}` (it exports: {})",
                library.path.display(),
                names.join(", ")
            ),
            None => format!(
                "{} exports several plugins ({}); name one as `{}/<export>`",
                library.path.display(),
                names.join(", "),
                library.name
            ),
        }),
    }
}

/// Children mounted by plugins at run time get their library's file as it is now: the
/// plugin that mounts one may have just put a new version in place.
impl Resolver for Libraries {
    fn resolve(&self, spec: &str) -> Source {
        self.resolve_spec_as_now(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_map_to_files() {
        assert_eq!(library_file_name("greeter"), "libgreeter.so");
        assert_eq!(library_file_name("greeter-alt"), "libgreeter_alt.so");
        assert_eq!(
            split_spec("tool-subagent-control/list-agents"),
            ("tool-subagent-control", Some("list-agents"))
        );
        assert_eq!(split_spec("greeter"), ("greeter", None));
    }

    #[test]
    fn missing_library_names_file_and_dirs() {
        let libraries = Libraries::new(
            vec![
                PathBuf::from("/nonexistent/a"),
                PathBuf::from("/nonexistent/b"),
            ],
            PathBuf::from("/tmp"),
            PathBuf::from("/tmp"),
            crate::builtin::library(),
        );
        match libraries.resolve_spec("ghost") {
            Source::Missing(reason) => {
                assert_eq!(
                    reason,
                    "libghost.so not found in /nonexistent/a, /nonexistent/b"
                )
            }
            _ => panic!("expected Missing"),
        }
    }
}

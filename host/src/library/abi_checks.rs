//! Which library builds passed abi_stable's layout check against this host build, kept across
//! starts (`$DSH_HOME/.loaded/abi-checked`, one `host-id library-id` line each), and which
//! pairs of type layouts passed the check a service look-up or an event declaration makes
//! (`layout <id>+<offset> <id>+<offset>` lines, see `layout_record`).
//!
//! Why: the check walks the whole layout of the plugin root module and everything it reaches,
//! the same types for every library, and took about 14 ms of a headless start's 50 ms to its
//! first model request (release, 8 interleaved runs each: 49.9 ms checked, 36.0 ms unchecked).
//! Its answer depends only on the two files: both layouts are data compiled into them, and a
//! GNU build id is the linker's hash of what it wrote. So a pair of build ids that passed once
//! passes again, and a rebuilt library or host (another id) is checked anew. A file without a
//! build id, or a host whose own cannot be read, is always checked. A library crafted to carry
//! another's id could skip the check, but such a file runs its own code in the host anyway: the
//! check guards against accidents (a stale build), not against a hostile plugin.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use dsh_plugin_api::lock;

/// A record longer than this is started afresh (many rebuilds later, old lines are dead).
const MAX_RECORD: u64 = 1 << 20;

pub(crate) struct AbiChecks {
    file: PathBuf,
    passed: Mutex<HashSet<String>>,
    /// The build id of every library file loaded, by its canonical path (as
    /// `/proc/self/maps` names it), so naming a layout does not read the file again.
    loaded: Mutex<HashMap<PathBuf, String>>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The build id of the file at `path`, in hex; `None` when it has none or cannot be read.
pub(crate) fn file_build_id(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let prefix = super::elf::read_prefix(&mut file, len).ok()?;
    super::elf::build_id(&mut file, &prefix).map(|id| hex(&id))
}

/// This host's own build id, read once.
fn host_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| file_build_id(Path::new("/proc/self/exe")))
        .as_deref()
}

impl AbiChecks {
    /// The pairs recorded in `file` (none when it is missing, unreadable or too long).
    pub(crate) fn open(file: PathBuf) -> Self {
        let fits = std::fs::metadata(&file).is_ok_and(|meta| meta.len() <= MAX_RECORD);
        let passed = match fits {
            true => std::fs::read_to_string(&file)
                .map(|text| text.lines().map(str::to_owned).collect())
                .unwrap_or_default(),
            false => HashSet::new(),
        };
        Self {
            file,
            passed: Mutex::new(passed),
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Notes the build id of the library file `file`, just loaded.
    pub(crate) fn note_loaded(&self, file: &Path, id: &[u8]) {
        if let Ok(file) = std::fs::canonicalize(file) {
            lock(&self.loaded).insert(file, hex(id));
        }
    }

    /// The build id of `file` (a canonical path) when it is a library noted as loaded or this
    /// host's own executable.
    pub(crate) fn known_build_id(&self, file: &Path) -> Option<String> {
        if let Some(id) = lock(&self.loaded).get(file) {
            return Some(id.clone());
        }
        let exe = std::env::current_exe().ok()?;
        (exe == file)
            .then(|| host_id().map(str::to_owned))
            .flatten()
    }

    /// The record of a library whose build id is `library`; `None` when either id is unknown
    /// (the library is then checked every time).
    pub(crate) fn library_key(&self, library: Option<&[u8]>) -> Option<String> {
        Some(format!("{} {}", host_id()?, hex(library?)))
    }

    /// Whether `key` passed the check before.
    pub(crate) fn passed(&self, key: &str) -> bool {
        lock(&self.passed).contains(key)
    }

    /// Records that `key` passed the check. A record that cannot be written only costs the
    /// next start the check.
    pub(crate) fn remember(&self, key: String) {
        if !lock(&self.passed).insert(key.clone()) {
            return;
        }
        if std::fs::metadata(&self.file).is_ok_and(|meta| meta.len() > MAX_RECORD) {
            let _ = std::fs::remove_file(&self.file);
        }
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // One short append per line: two hosts starting at once do not interleave.
        if let Ok(mut out) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
        {
            let _ = out.write_all(format!("{key}\n").as_bytes());
        }
    }
}

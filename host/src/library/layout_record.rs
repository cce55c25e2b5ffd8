//! Names for type layouts that hold across starts, so the bus can skip a layout check an
//! earlier start already made (`runtime::LayoutRecord`).
//!
//! A layout is a `static` compiled into a library or into the host, so it is named by the GNU
//! build id of the file that holds it and its offset in that file: a pair of such names that
//! passed once passes again, because both layouts are the same bytes at the same places of the
//! same two builds. The place of an address is read from `/proc/self/maps` (safe code, no
//! `dladdr`), read again when an address falls outside what was read (a library loaded since).
//! A mapping whose file was deleted or replaced since it was mapped has no name, and a pair
//! involving it is checked every time.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::type_layout::TypeLayout;
use dsh_plugin_api::lock;

use super::abi_checks::{AbiChecks, file_build_id};
use crate::runtime::LayoutRecord;

/// One file-backed mapping of `/proc/self/maps`.
struct Mapping {
    start: usize,
    end: usize,
    offset: usize,
    inode: u64,
    file: PathBuf,
}

#[derive(Default)]
struct Places {
    mappings: Vec<Mapping>,
    /// The build id of each mapped file (`None`: none, unreadable, or not the mapped file).
    ids: HashMap<PathBuf, Option<String>>,
}

pub(crate) struct LayoutNames {
    checks: Arc<AbiChecks>,
    places: Mutex<Places>,
}

/// The file-backed mappings of this process (an unreadable or odd line is left out).
fn read_mappings() -> Vec<Mapping> {
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    text.lines().filter_map(parse_mapping).collect()
}

/// `start-end perms offset dev inode   path`, all numbers but the inode in hex.
fn parse_mapping(line: &str) -> Option<Mapping> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let _perms = fields.next()?;
    let offset = fields.next()?;
    let _device = fields.next()?;
    let inode = fields.next()?.parse().ok()?;
    let file = fields.next()?.trim_start();
    if inode == 0 || !file.starts_with('/') || file.ends_with(" (deleted)") {
        return None;
    }
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        offset: usize::from_str_radix(offset, 16).ok()?,
        inode,
        file: PathBuf::from(file),
    })
}

/// The build id of `file` when it is still the file mapped (same inode).
fn mapped_build_id(file: &Path, inode: u64) -> Option<String> {
    let same = std::fs::metadata(file).is_ok_and(|meta| meta.ino() == inode);
    same.then(|| file_build_id(file)).flatten()
}

impl Places {
    fn find(&self, address: usize) -> Option<&Mapping> {
        self.mappings
            .iter()
            .find(|mapping| (mapping.start..mapping.end).contains(&address))
    }

    /// `<build id>+<offset in its file>` of `address`.
    fn name(&mut self, address: usize, checks: &AbiChecks) -> Option<String> {
        if self.find(address).is_none() {
            self.mappings = read_mappings();
        }
        let mapping = self.find(address)?;
        let offset = address - mapping.start + mapping.offset;
        let (file, inode) = (mapping.file.clone(), mapping.inode);
        let id = self
            .ids
            .entry(file)
            .or_insert_with_key(|file| {
                (checks.known_build_id(file)).or_else(|| mapped_build_id(file, inode))
            })
            .as_ref()?;
        Some(format!("{id}+{offset:x}"))
    }
}

impl LayoutNames {
    pub(crate) fn new(checks: Arc<AbiChecks>) -> Self {
        Self {
            checks,
            places: Mutex::new(Places::default()),
        }
    }
}

impl LayoutRecord for LayoutNames {
    fn key(&self, expected: &'static TypeLayout, found: &'static TypeLayout) -> Option<String> {
        let mut places = lock(&self.places);
        let expected = places.name(expected as *const TypeLayout as usize, &self.checks)?;
        let found = places.name(found as *const TypeLayout as usize, &self.checks)?;
        Some(format!("layout {expected} {found}"))
    }

    fn passed(&self, key: &str) -> bool {
        self.checks.passed(key)
    }

    fn remember(&self, key: String) {
        self.checks.remember(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::StableAbi;
    use abi_stable::std_types::RString;

    #[test]
    fn a_mapping_line_is_read_and_a_deleted_or_anonymous_one_left_out() {
        let line =
            "7f1c2a000000-7f1c2a021000 r--p 00021000 fd:01 1234567                    /lib/libx.so";
        let mapping = parse_mapping(line).expect("a file mapping");
        assert_eq!(
            (mapping.start, mapping.end, mapping.offset, mapping.inode),
            (0x7f1c2a000000, 0x7f1c2a021000, 0x21000, 1234567)
        );
        assert_eq!(mapping.file, Path::new("/lib/libx.so"));
        assert!(parse_mapping("7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 ").is_none());
        assert!(
            parse_mapping(
                "7f1c2a000000-7f1c2a021000 r--p 00000000 fd:01 99   /lib/old.so (deleted)"
            )
            .is_none()
        );
        assert!(parse_mapping("7ffd1000-7ffd2000 rw-p 00000000 00:00 0    [stack]").is_none());
    }

    #[test]
    fn a_layout_of_this_build_is_named_by_its_build_id_and_place_the_same_way_twice() {
        let dir = std::env::temp_dir().join(format!("dsh-layout-names-{}", std::process::id()));
        let checks = Arc::new(AbiChecks::open(dir.join("abi-checked")));
        let names = LayoutNames::new(checks.clone());
        let a = <RString as StableAbi>::LAYOUT;
        let b = <u64 as StableAbi>::LAYOUT;
        // The test binary carries a build id (the linker writes one by default).
        let key = names.key(a, b).expect("named");
        let exe_id = file_build_id(Path::new("/proc/self/exe")).expect("a build id");
        assert!(key.starts_with(&format!("layout {exe_id}+")), "{key}");
        assert_eq!(names.key(a, b), Some(key.clone()));
        assert_ne!(names.key(b, a), Some(key.clone()));
        assert!(!names.passed(&key));
        names.remember(key.clone());
        let again = LayoutNames::new(Arc::new(AbiChecks::open(dir.join("abi-checked"))));
        assert!(again.passed(&key), "the record outlives the process's copy");
        let _ = std::fs::remove_dir_all(dir);
    }
}

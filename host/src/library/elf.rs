//! A structural check of a library file before `dlopen` sees it.
//!
//! `dlopen` maps a library's segments by the sizes its headers claim. A truncated file (a copy
//! or a build still being written) is mapped anyway, and the first touch of a page past the end
//! of the file kills the process with SIGBUS. Checking that every header and loadable segment
//! lies inside the file turns that into an ordinary error.

use std::io::{Read, Seek, SeekFrom};

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
const CLASS_64: u8 = 2;
const LITTLE_ENDIAN: u8 = 1;
const PT_LOAD: u64 = 1;
const PT_NOTE: u64 = 4;
const NT_GNU_BUILD_ID: u64 = 3;
/// The largest note segment read for a build id (they are a few dozen bytes).
const MAX_NOTES: u64 = 64 << 10;

fn read_u16(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_le_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32::from_le_bytes(
        bytes.get(at..at + 4)?.try_into().ok()?,
    )))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Why a file is not a complete 64-bit little-endian ELF file.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum ElfError {
    #[error("not an ELF shared library")]
    NotElf,
    #[error("not a 64-bit little-endian ELF file")]
    UnsupportedClass,
    #[error("truncated file ({len} bytes): its {part} lies past the end")]
    Truncated { len: u64, part: ElfPart },
}

/// The part of an ELF file that does not fit in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfPart {
    Header,
    ProgramHeaders,
    SectionHeaders,
    LoadableSegment(u64),
}

impl std::fmt::Display for ElfPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Header => f.write_str("ELF header"),
            Self::ProgramHeaders => f.write_str("program header table"),
            Self::SectionHeaders => f.write_str("section header table"),
            Self::LoadableSegment(index) => write!(f, "loadable segment {index}"),
        }
    }
}

/// How much of a file the check reads at most: an ELF header and a program header table are
/// a few hundred bytes; anything claiming more is refused as truncated by its length.
const MAX_PREFIX: u64 = 1 << 20;

/// Reads what [`check_prefix`] needs of `file`, a file of `len` bytes: its ELF header and its
/// program header table, not the whole library (tens of megabytes, at every start).
pub(crate) fn read_prefix(file: &mut impl Read, len: u64) -> std::io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(1024);
    file.by_ref().take(64).read_to_end(&mut prefix)?;
    let table_end = match (
        read_u64(&prefix, 0x20),
        read_u16(&prefix, 0x36),
        read_u16(&prefix, 0x38),
    ) {
        (Some(phoff), Some(phentsize), Some(phnum)) => {
            phoff.saturating_add(phentsize.saturating_mul(phnum))
        }
        _ => 64,
    };
    let end = table_end.min(len).min(MAX_PREFIX);
    let have = prefix.len() as u64;
    if end > have {
        file.take(end - have).read_to_end(&mut prefix)?;
    }
    Ok(prefix)
}

/// Checks that `bytes` is a complete 64-bit little-endian ELF file.
#[cfg(test)]
pub(crate) fn check(bytes: &[u8]) -> Result<(), ElfError> {
    check_prefix(bytes, bytes.len() as u64)
}

/// Checks that a file of `len` bytes starting with `prefix` (at least its ELF header and
/// program header table, see [`read_prefix`]) is a complete 64-bit little-endian ELF file: every
/// table and loadable segment its headers claim lies inside those `len` bytes.
pub(crate) fn check_prefix(bytes: &[u8], len: u64) -> Result<(), ElfError> {
    if bytes.get(..4) != Some(&ELF_MAGIC[..]) {
        return Err(ElfError::NotElf);
    }
    if bytes.get(4) != Some(&CLASS_64) || bytes.get(5) != Some(&LITTLE_ENDIAN) {
        return Err(ElfError::UnsupportedClass);
    }
    let truncated = |part| Err(ElfError::Truncated { len, part });
    let (Some(phoff), Some(shoff), Some(phentsize), Some(phnum), Some(shentsize), Some(shnum)) = (
        read_u64(bytes, 0x20),
        read_u64(bytes, 0x28),
        read_u16(bytes, 0x36),
        read_u16(bytes, 0x38),
        read_u16(bytes, 0x3a),
        read_u16(bytes, 0x3c),
    ) else {
        return truncated(ElfPart::Header);
    };
    if phoff.saturating_add(phentsize.saturating_mul(phnum)) > len {
        return truncated(ElfPart::ProgramHeaders);
    }
    if shoff.saturating_add(shentsize.saturating_mul(shnum)) > len {
        return truncated(ElfPart::SectionHeaders);
    }
    for index in 0..phnum {
        // The table was checked to end inside the file, so an offset too large for `usize`
        // cannot belong to it.
        let Ok(header) = usize::try_from(phoff + index * phentsize) else {
            return truncated(ElfPart::ProgramHeaders);
        };
        let (Some(kind), Some(offset), Some(filesz)) = (
            read_u32(bytes, header),
            read_u64(bytes, header + 8),
            read_u64(bytes, header + 32),
        ) else {
            return truncated(ElfPart::ProgramHeaders);
        };
        if kind == PT_LOAD && offset.saturating_add(filesz) > len {
            return truncated(ElfPart::LoadableSegment(index));
        }
    }
    Ok(())
}

/// The GNU build id of the file whose headers are `prefix` (see [`read_prefix`]): the linker's
/// hash of the linked output, read from its note segments. `None` for a file without one.
pub(crate) fn build_id(file: &mut (impl Read + Seek), prefix: &[u8]) -> Option<Vec<u8>> {
    let (phoff, phentsize, phnum) = (
        read_u64(prefix, 0x20)?,
        read_u16(prefix, 0x36)?,
        read_u16(prefix, 0x38)?,
    );
    for index in 0..phnum {
        let header = usize::try_from(phoff + index * phentsize).ok()?;
        if read_u32(prefix, header)? != PT_NOTE {
            continue;
        }
        let (offset, size) = (
            read_u64(prefix, header + 8)?,
            read_u64(prefix, header + 32)?,
        );
        if size > MAX_NOTES {
            continue;
        }
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut notes = Vec::new();
        file.by_ref().take(size).read_to_end(&mut notes).ok()?;
        if let Some(id) = gnu_build_id(&notes) {
            return Some(id);
        }
    }
    None
}

/// The `NT_GNU_BUILD_ID` note among `notes` (4-byte aligned name and description).
fn gnu_build_id(notes: &[u8]) -> Option<Vec<u8>> {
    let aligned = |n: u64| n.div_ceil(4) * 4;
    let mut at = 0usize;
    while at + 12 <= notes.len() {
        let (name_size, desc_size, kind) = (
            read_u32(notes, at)?,
            read_u32(notes, at + 4)?,
            read_u32(notes, at + 8)?,
        );
        let name_at = at + 12;
        let desc_at = name_at + usize::try_from(aligned(name_size)).ok()?;
        let desc_end = desc_at + usize::try_from(desc_size).ok()?;
        if kind == NT_GNU_BUILD_ID && notes.get(name_at..name_at + 4) == Some(b"GNU\0") {
            return notes.get(desc_at..desc_end).map(<[u8]>::to_vec);
        }
        at = desc_at + usize::try_from(aligned(desc_size)).ok()?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_binary_itself_is_complete_and_a_prefix_is_not() {
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(exe).unwrap();
        assert_eq!(check(&bytes), Ok(()));
        let error = check(&bytes[..bytes.len() / 2]).unwrap_err();
        assert!(matches!(error, ElfError::Truncated { .. }), "{error:?}");
        assert!(error.to_string().starts_with("truncated file"), "{error}");
        assert_eq!(check(b"hello world, not elf"), Err(ElfError::NotElf));
        assert_eq!(ElfError::NotElf.to_string(), "not an ELF shared library");
    }

    #[test]
    fn the_build_id_is_read_from_the_note_segment() {
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let prefix = read_prefix(&mut &bytes[..], bytes.len() as u64).unwrap();
        let id = build_id(&mut std::io::Cursor::new(&bytes), &prefix).expect("a build id");
        assert!(id.len() >= 8, "{id:?}");
        // The same bytes give the same id; a file without notes has none.
        let again = build_id(&mut std::io::Cursor::new(&bytes), &prefix);
        assert_eq!(again, Some(id));
        assert_eq!(gnu_build_id(b"short"), None);
    }

    #[test]
    fn the_headers_alone_tell_a_complete_file_from_a_truncated_one() {
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(exe).unwrap();
        let len = bytes.len() as u64;
        let prefix = read_prefix(&mut &bytes[..], len).unwrap();
        assert!(prefix.len() < 4096, "read {} bytes", prefix.len());
        assert_eq!(check_prefix(&prefix, len), Ok(()));
        // The same headers in a file cut in half: its segments run past its end.
        let half = len / 2;
        let cut = read_prefix(&mut &bytes[..half as usize], half).unwrap();
        assert!(matches!(
            check_prefix(&cut, half),
            Err(ElfError::Truncated { .. })
        ));
        let short = read_prefix(&mut &b"\x7fELF"[..], 4).unwrap();
        assert!(matches!(
            check_prefix(&short, 4),
            Err(ElfError::UnsupportedClass | ElfError::Truncated { .. })
        ));
    }
}

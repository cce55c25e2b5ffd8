//! A structural check of a library file before `dlopen` sees it.
//!
//! `dlopen` maps a library's segments by the sizes its headers claim. A truncated file (a copy
//! or a build still being written) is mapped anyway, and the first touch of a page past the end
//! of the file kills the process with SIGBUS. Checking that every header and loadable segment
//! lies inside the file turns that into an ordinary error.

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
const CLASS_64: u8 = 2;
const LITTLE_ENDIAN: u8 = 1;
const PT_LOAD: u64 = 1;

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

/// Checks that `bytes` is a complete 64-bit little-endian ELF file.
pub(crate) fn check(bytes: &[u8]) -> Result<(), String> {
    let len = bytes.len() as u64;
    if bytes.get(..4) != Some(&ELF_MAGIC[..]) {
        return Err("not an ELF shared library".to_owned());
    }
    if bytes.get(4) != Some(&CLASS_64) || bytes.get(5) != Some(&LITTLE_ENDIAN) {
        return Err("not a 64-bit little-endian ELF file".to_owned());
    }
    let truncated = |what: &str| {
        Err(format!(
            "truncated file ({len} bytes): its {what} lies past the end"
        ))
    };
    let (Some(phoff), Some(shoff), Some(phentsize), Some(phnum), Some(shentsize), Some(shnum)) = (
        read_u64(bytes, 0x20),
        read_u64(bytes, 0x28),
        read_u16(bytes, 0x36),
        read_u16(bytes, 0x38),
        read_u16(bytes, 0x3a),
        read_u16(bytes, 0x3c),
    ) else {
        return truncated("ELF header");
    };
    if phoff.saturating_add(phentsize.saturating_mul(phnum)) > len {
        return truncated("program header table");
    }
    if shoff.saturating_add(shentsize.saturating_mul(shnum)) > len {
        return truncated("section header table");
    }
    for index in 0..phnum {
        let header =
            usize::try_from(phoff + index * phentsize).map_err(|error| error.to_string())?;
        let (Some(kind), Some(offset), Some(filesz)) = (
            read_u32(bytes, header),
            read_u64(bytes, header + 8),
            read_u64(bytes, header + 32),
        ) else {
            return truncated("program header table");
        };
        if kind == PT_LOAD && offset.saturating_add(filesz) > len {
            return truncated(&format!("loadable segment {index}"));
        }
    }
    Ok(())
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
        assert!(error.starts_with("truncated file"), "{error}");
        assert_eq!(
            check(b"hello world, not elf").unwrap_err(),
            "not an ELF shared library"
        );
    }
}

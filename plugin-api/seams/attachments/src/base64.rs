//! Canonical base64 (standard alphabet, padded), as uploads must send it: the reference
//! refuses any other spelling of the same bytes, so one image has one upload form.

use crate::{AttachmentCode, AttachmentFailure};

fn value(byte: u8) -> Option<u32> {
    match byte {
        b'A'..=b'Z' => Some(u32::from(byte - b'A')),
        b'a'..=b'z' => Some(u32::from(byte - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(byte - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn refused() -> AttachmentFailure {
    AttachmentFailure::new(
        AttachmentCode::InvalidImageBase64,
        "image data is not canonical base64 (standard alphabet, padded, no whitespace)",
    )
}

/// `bytes` as canonical base64 (standard alphabet, padded).
pub fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(match i <= group.len() {
                true => char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]),
                false => '=',
            });
        }
    }
    out
}

/// The bytes `text` encodes, refusing empty, unpadded, non-alphabet or non-canonical text
/// (`INVALID_IMAGE_BASE64`).
pub fn decode_base64(text: &str) -> Result<Vec<u8>, AttachmentFailure> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return Err(refused());
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (index, group) in bytes.chunks(4).enumerate() {
        let last = index + 1 == groups;
        let pad = group.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err(refused());
        }
        let mut n = 0u32;
        for &byte in &group[..4 - pad] {
            n = (n << 6) | value(byte).ok_or_else(refused)?;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // Canonical: the bits a padded group does not carry are zero.
        let carried = 3 - pad;
        if decoded[carried..].iter().any(|b| *b != 0) {
            return Err(refused());
        }
        out.extend_from_slice(&decoded[..carried]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn decodes_canonical_and_refuses_the_rest() {
        assert_eq!(decode_base64("YWFh").unwrap(), b"aaa");
        assert_eq!(decode_base64("YQ==").unwrap(), b"a");
        assert_eq!(decode_base64("YWE=").unwrap(), b"aa");
        for bytes in [&b""[..], b"a", b"aa", b"aaa", b"\xff\x00\x10\x80"] {
            if !bytes.is_empty() {
                assert_eq!(decode_base64(&encode_base64(bytes)).unwrap(), bytes);
            }
        }
        assert_eq!(encode_base64(b"aaa"), "YWFh");
        for bad in ["", "YQ", "YR==", "Y===", "YQ==YWFh", "YW h", "YWF\n"] {
            let error = decode_base64(bad).unwrap_err();
            assert_eq!(error.code, AttachmentCode::InvalidImageBase64, "{bad:?}");
        }
    }
}

//! What an image is, read from its bytes alone (never from a name or a declared type): PNG,
//! JPEG, WebP or GIF, and its intrinsic width and height from the format's header. Bytes that
//! are none of these, or whose header or end is cut short, are not an image.

/// A recognized image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sniffed {
    pub media_type: &'static str,
    pub width: u32,
    pub height: u32,
}

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_END: &[u8] = b"\x00\x00\x00\x00IEND\xaeB`\x82";

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([
        *bytes.get(at)?,
        *bytes.get(at + 1)?,
    ])))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([
        *bytes.get(at)?,
        *bytes.get(at + 1)?,
    ])))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *bytes.get(at)?,
        *bytes.get(at + 1)?,
        *bytes.get(at + 2)?,
        0,
    ]))
}

fn png(bytes: &[u8]) -> Option<Sniffed> {
    // The first chunk is IHDR (length 13), and a whole file ends with IEND.
    if bytes.get(8..16)? != b"\x00\x00\x00\x0dIHDR" || !bytes.ends_with(PNG_END) {
        return None;
    }
    let width = u32::from_be_bytes(bytes.get(16..20)?.try_into().ok()?);
    let height = u32::from_be_bytes(bytes.get(20..24)?.try_into().ok()?);
    Some(Sniffed {
        media_type: "image/png",
        width,
        height,
    })
}

fn gif(bytes: &[u8]) -> Option<Sniffed> {
    if bytes.last() != Some(&0x3b) || bytes.len() < 14 {
        return None;
    }
    Some(Sniffed {
        media_type: "image/gif",
        width: le16(bytes, 6)?,
        height: le16(bytes, 8)?,
    })
}

fn jpeg(bytes: &[u8]) -> Option<Sniffed> {
    // Walk the marker segments up to the first start-of-frame, which holds the dimensions.
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xff {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            0xff => at += 1,
            0xd8 | 0x01 | 0xd0..=0xd7 => at += 2,
            0xd9 | 0xda => return None,
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some(Sniffed {
                    media_type: "image/jpeg",
                    height: be16(bytes, at + 5)?,
                    width: be16(bytes, at + 7)?,
                });
            }
            _ => at += 2 + usize::try_from(be16(bytes, at + 2)?).ok()?,
        }
    }
}

fn webp(bytes: &[u8]) -> Option<Sniffed> {
    let declared = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
    if usize::try_from(declared).ok()?.checked_add(8)? > bytes.len() {
        return None;
    }
    let (width, height) = match bytes.get(12..16)? {
        b"VP8 " => {
            if bytes.get(23..26)? != b"\x9d\x01\x2a" {
                return None;
            }
            (le16(bytes, 26)? & 0x3fff, le16(bytes, 28)? & 0x3fff)
        }
        b"VP8L" => {
            if *bytes.get(20)? != 0x2f {
                return None;
            }
            let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
        }
        b"VP8X" => (le24(bytes, 24)? + 1, le24(bytes, 27)? + 1),
        _ => return None,
    };
    Some(Sniffed {
        media_type: "image/webp",
        width,
        height,
    })
}

/// The image `bytes` hold, or `None` when they are not a whole PNG, JPEG, WebP or GIF.
pub fn sniff(bytes: &[u8]) -> Option<Sniffed> {
    let found = if bytes.starts_with(PNG_MAGIC) {
        png(bytes)
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        jpeg(bytes)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        gif(bytes)
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        webp(bytes)
    } else {
        None
    };
    found.filter(|image| image.width > 0 && image.height > 0)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A 1x1 red PNG (69 bytes), the recorded cases' `red.png`.
    pub(crate) const RED_PNG: &[u8] = &[
        137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2,
        0, 0, 0, 144, 119, 83, 222, 0, 0, 0, 12, 73, 68, 65, 84, 120, 156, 99, 248, 207, 192, 0, 0,
        3, 1, 1, 0, 201, 254, 146, 239, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
    ];

    #[test]
    fn reads_each_format_and_refuses_the_rest() {
        assert_eq!(
            sniff(RED_PNG),
            Some(Sniffed {
                media_type: "image/png",
                width: 1,
                height: 1
            })
        );
        let gif = b"GIF89a\x03\x00\x02\x00\x00\x00\x00;";
        assert_eq!(sniff(gif).unwrap().media_type, "image/gif");
        assert_eq!(
            (sniff(gif).unwrap().width, sniff(gif).unwrap().height),
            (3, 2)
        );
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 5, 0, 7, 1, 1, 0x11, 0,
            0xff, 0xd9,
        ];
        let found = sniff(&jpeg).unwrap();
        assert_eq!(
            (found.media_type, found.width, found.height),
            ("image/jpeg", 7, 5)
        );
        let mut webp = b"RIFF\x16\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
        webp.extend_from_slice(&[9, 0, 0, 4, 0, 0]);
        let found = sniff(&webp).unwrap();
        assert_eq!(
            (found.media_type, found.width, found.height),
            ("image/webp", 10, 5)
        );
        assert_eq!(sniff(b"hello, world"), None);
        assert_eq!(sniff(&RED_PNG[..40]), None, "a PNG cut short");
        assert_eq!(
            sniff(b"GIF89a\x00\x00\x02\x00\x00\x00\x00;"),
            None,
            "zero width"
        );
    }
}

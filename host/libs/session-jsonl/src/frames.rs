//! Zstandard frames as the session container: each write batch is one independent, checksummed
//! frame, so an append never rewrites earlier bytes and a crash can only leave the last frame
//! incomplete.
//!
//! Frame boundaries are found structurally (RFC 8878 headers and block sizes) without
//! decompressing, which is what tells "structurally incomplete last frame" (a torn write, to be
//! repaired) apart from "complete frame that fails to decode" (corruption, to be refused).

use std::cell::RefCell;
use std::io;
use std::ops::Range;

use zstd::stream::raw::{CParameter, Decoder, InBuffer, Operation, OutBuffer};

const ZSTD_MAGIC: u32 = 0xFD2F_B528;

/// Complete frames in file order, and the start of an incomplete final frame if EOF cut one.
#[derive(Debug, Default)]
pub(crate) struct FrameScan {
    pub(crate) frames: Vec<Range<usize>>,
    pub(crate) torn_start: Option<usize>,
}

/// A complete structure that no writer produces (bad magic, reserved bits or block type).
#[derive(Debug)]
pub(crate) struct FrameDefect {
    /// 1-based frame index.
    pub(crate) frame: usize,
    pub(crate) offset: usize,
    pub(crate) reason: &'static str,
}

/// Locate frames from byte `from`, where frame number `first_frame` (1-based) starts. Stops
/// after `max_frames` complete frames (listing needs only the header).
pub(crate) fn scan_frames(
    buf: &[u8],
    from: usize,
    first_frame: usize,
    max_frames: usize,
) -> Result<FrameScan, FrameDefect> {
    let mut scan = FrameScan::default();
    let mut offset = from;
    while offset < buf.len() && scan.frames.len() < max_frames {
        let start = offset;
        let frame = first_frame + scan.frames.len();
        let defect = |offset, reason| FrameDefect {
            frame,
            offset,
            reason,
        };
        match frame_end(buf, start) {
            Ok(Some(end)) => {
                scan.frames.push(start..end);
                offset = end;
            }
            Ok(None) => {
                scan.torn_start = Some(start);
                break;
            }
            Err((at, reason)) => return Err(defect(at, reason)),
        }
    }
    Ok(scan)
}

/// End of the frame starting at `start`, `None` when the buffer ends inside it.
fn frame_end(buf: &[u8], start: usize) -> Result<Option<usize>, (usize, &'static str)> {
    let byte = |at: usize| buf.get(at).copied();
    let mut offset = start;
    let Some(magic) = buf.get(offset..offset + 4) else {
        return Ok(None);
    };
    if u32::from_le_bytes([magic[0], magic[1], magic[2], magic[3]]) != ZSTD_MAGIC {
        return Err((offset, "invalid frame magic"));
    }
    offset += 4;
    let Some(descriptor) = byte(offset) else {
        return Ok(None);
    };
    if descriptor & 0x18 != 0 {
        return Err((offset, "reserved frame-header bit set"));
    }
    offset += 1;
    let content_size_flag = descriptor >> 6;
    let single_segment = descriptor & 0x20 != 0;
    let checksum = descriptor & 0x04 != 0;
    let dictionary_bytes = match descriptor & 0x03 {
        3 => 4,
        n => usize::from(n),
    };
    let content_size_bytes = match content_size_flag {
        0 => usize::from(single_segment),
        n => 1 << n,
    };
    offset += usize::from(!single_segment) + dictionary_bytes + content_size_bytes;
    if offset > buf.len() {
        return Ok(None);
    }
    loop {
        let Some(header) = buf.get(offset..offset + 3) else {
            return Ok(None);
        };
        let header = u32::from(header[0]) | u32::from(header[1]) << 8 | u32::from(header[2]) << 16;
        let last = header & 1 != 0;
        let block_type = (header >> 1) & 0x03;
        if block_type == 3 {
            return Err((offset, "reserved block type"));
        }
        offset += 3;
        // An RLE block stores its one repeated byte; the size field is the decoded length.
        offset += if block_type == 1 {
            1
        } else {
            (header >> 3) as usize
        };
        if offset > buf.len() {
            return Ok(None);
        }
        if last {
            break;
        }
    }
    if checksum {
        offset += 4;
        if offset > buf.len() {
            return Ok(None);
        }
    }
    Ok(Some(offset))
}

/// Compressors kept between frames: making one costs about 13 µs a frame (its tables), several
/// times what compressing a step's events costs, and a step writes a frame at each durability
/// checkpoint. Kept in one pool rather than one per thread: each holds some 300 KiB, and the
/// blocking pool's threads grow with the sessions writing at once (ten subagents kept 13 of
/// them), while compressing a frame takes microseconds, so a few serve them all.
static COMPRESSORS: std::sync::Mutex<Vec<zstd::bulk::Compressor<'static>>> =
    std::sync::Mutex::new(Vec::new());

/// One independent frame with a content checksum, at zstd's default level (as the reference's
/// Node zstd writes them).
pub(crate) fn compress_frame(data: &[u8]) -> io::Result<Vec<u8>> {
    let kept = COMPRESSORS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .pop();
    let mut compressor = match kept {
        Some(compressor) => compressor,
        None => {
            let mut made = zstd::bulk::Compressor::new(zstd::DEFAULT_COMPRESSION_LEVEL)?;
            made.set_parameter(CParameter::ChecksumFlag(true))?;
            made
        }
    };
    let frame = compressor.compress(data);
    COMPRESSORS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(compressor);
    frame
}

thread_local! {
    /// The decoder of this thread and its output buffer, kept between frames for the same
    /// reason as the compressor: making them for each frame cost about 30 µs a frame (the
    /// decoder's tables, 64 KiB zeroed), so a session of 20,000 small frames took 0.6 s to
    /// read (36 ms with them kept). Found by the `session-zstd` fuzz target's slowest cases.
    static DECODER: RefCell<Option<(Decoder<'static>, Vec<u8>)>> = const { RefCell::new(None) };
}

/// Decode as much of one frame as the input allows. Returns the plaintext and whether the frame
/// ended (the decoder verifies the checksum when it reaches it).
fn decode(input: &[u8]) -> io::Result<(Vec<u8>, bool)> {
    DECODER.with(|cell| {
        let mut kept = cell.borrow_mut();
        let (decoder, chunk) = match kept.as_mut() {
            Some(kept) => kept,
            None => kept.insert((Decoder::new()?, vec![0u8; 1 << 16])),
        };
        // A frame read before may have stopped midway (torn or corrupt): start clean.
        decoder.reinit()?;
        decode_with(decoder, chunk, input)
    })
}

fn decode_with(
    decoder: &mut Decoder<'static>,
    chunk: &mut [u8],
    input: &[u8],
) -> io::Result<(Vec<u8>, bool)> {
    let mut input_buf = InBuffer::around(input);
    let mut out = Vec::with_capacity(input.len() * 4);
    loop {
        let (hint, written) = {
            let mut output = OutBuffer::around(&mut *chunk);
            let hint = decoder.run(&mut input_buf, &mut output)?;
            (hint, output.pos())
        };
        out.extend_from_slice(&chunk[..written]);
        if hint == 0 {
            if input_buf.pos() != input.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the frame end",
                ));
            }
            return Ok((out, true));
        }
        if input_buf.pos() == input.len() && written < chunk.len() {
            return Ok((out, false));
        }
    }
}

/// Decode one structurally complete frame, verifying its checksum.
pub(crate) fn decompress_frame(frame: &[u8]) -> io::Result<Vec<u8>> {
    match decode(frame)? {
        (plain, true) => Ok(plain),
        (_, false) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "frame ended early",
        )),
    }
}

/// Plaintext recoverable from an incomplete final frame. A decoder error means the bytes are not
/// a clean prefix of a frame, so nothing is trusted from it (the reference does the same).
pub(crate) fn decompress_prefix(frame: &[u8]) -> Vec<u8> {
    decode(frame).map(|(plain, _)| plain).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_found_and_torn_tails_detected() {
        let a = compress_frame(b"{\"type\":\"session\"}\n").unwrap();
        let b = compress_frame("x\n".repeat(5000).as_bytes()).unwrap();
        let mut all = a.clone();
        all.extend_from_slice(&b);
        let scan = scan_frames(&all, 0, 1, usize::MAX).unwrap();
        assert_eq!(scan.frames, vec![0..a.len(), a.len()..all.len()]);
        assert_eq!(scan.torn_start, None);
        assert_eq!(
            decompress_frame(&all[scan.frames[1].clone()]).unwrap(),
            "x\n".repeat(5000).as_bytes()
        );
        // Every cut inside the second frame is a torn tail at its start.
        for cut in a.len() + 1..all.len() {
            let scan = scan_frames(&all[..cut], 0, 1, usize::MAX).unwrap();
            assert_eq!(scan.frames.len(), 1, "cut {cut}");
            assert_eq!(scan.torn_start, Some(a.len()), "cut {cut}");
        }
        assert_eq!(scan_frames(&all, 0, 1, 1).unwrap().frames.len(), 1);
    }

    #[test]
    fn prefix_of_a_frame_yields_a_plaintext_prefix() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let frame = compress_frame(text.as_bytes()).unwrap();
        let part = decompress_prefix(&frame[..frame.len() - 10]);
        assert!(text.as_bytes().starts_with(&part));
        assert!(decompress_frame(&frame[..frame.len() - 1]).is_err());
    }

    #[test]
    fn structural_defects_and_checksum_failures() {
        let frame = compress_frame(b"hello hello hello\n").unwrap();
        let mut bad_magic = frame.clone();
        bad_magic[0] ^= 0xFF;
        assert_eq!(
            scan_frames(&bad_magic, 0, 1, usize::MAX)
                .unwrap_err()
                .reason,
            "invalid frame magic"
        );
        let mut flipped = frame.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x01; // inside the checksum
        assert!(
            scan_frames(&flipped, 0, 1, usize::MAX)
                .unwrap()
                .torn_start
                .is_none()
        );
        assert!(decompress_frame(&flipped).is_err());
    }

    /// The kept decoder starts each frame clean, whatever the frame before left it in.
    #[test]
    fn a_frame_reads_whole_after_a_torn_or_corrupt_one_on_the_same_thread() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let frame = compress_frame(text.as_bytes()).unwrap();
        let torn = &frame[..frame.len() / 2];
        let mut corrupt = frame.clone();
        corrupt[frame.len() / 2] ^= 0x5A;
        for before in [torn, &corrupt[..], b"\x28\xb5\x2f\xfd garbage"] {
            let _ = decompress_frame(before);
            let _ = decompress_prefix(before);
            assert_eq!(decompress_frame(&frame).unwrap(), text.as_bytes());
            assert_eq!(decompress_prefix(&frame), text.as_bytes());
        }
    }
}

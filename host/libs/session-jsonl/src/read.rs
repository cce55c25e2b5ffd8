//! Reading a session file: the header, the committed events, and a repair note for a torn tail.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use dsh_session_log::SessionEvent;

use crate::error::ReadError;
use crate::frames::{FrameDefect, decompress_frame, decompress_prefix, scan_frames};
use crate::header::{SessionHeader, parse_header_line};
use crate::layout::Encoding;
use crate::scan::{Keep, ScanResult, Scanner};

/// A decoded session file.
#[derive(Debug)]
pub struct ReadSession {
    pub header: SessionHeader,
    /// The committed events, `events[i].seq == i`; with a repair note, this already includes the
    /// events recovered from a torn zstd frame.
    pub events: Vec<SessionEvent>,
    pub encoding: Encoding,
    /// File length when read.
    pub file_len: u64,
    pub repair: Option<Repair>,
}

/// A decoded session file whose events are kept as their JSON lines (see
/// [`read_session_lines`]).
#[derive(Debug)]
pub struct ReadLines {
    pub header: SessionHeader,
    /// Each committed event's JSON line, `lines[i]` the event of seq `i`; with a repair note,
    /// this already includes the events recovered from a torn zstd frame.
    pub lines: Vec<String>,
    pub encoding: Encoding,
    pub file_len: u64,
    pub repair: Option<Repair>,
}

/// A torn tail was found. To make the file match `events`: [`truncate_to`](crate::truncate_to)
/// `truncate_to`, then append `events[recovered_from..]` again (non-empty only for a torn zstd
/// frame, whose complete records were decoded but whose bytes must go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    pub truncate_to: u64,
    pub file_len: u64,
    pub recovered_from: usize,
    /// What was torn, for the operator's log.
    pub reason: String,
}

fn io_error<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> ReadError + 'a {
    move |source| ReadError::Io {
        path: path.to_owned(),
        op,
        source,
    }
}

/// Read and decode a session file; the encoding follows the file name (`.jsonl.zstd` or not).
pub fn read_session(path: &Path) -> Result<ReadSession, ReadError> {
    let bytes = std::fs::read(path).map_err(io_error(path, "read session log"))?;
    decode_session(path, &bytes, Encoding::of_path(path))
}

/// Read a session file as [`read_session`] does, keeping each event as its JSON line instead
/// of decoding it: for a reader that parses the lines itself (the session service, which gets
/// them across the plugin boundary as text), so a long log is parsed once, not twice. A plain
/// envelope's line is checked in place and kept byte for byte (trailing whitespace trimmed);
/// a packed row is expanded and its events written out. Accepts and refuses exactly what
/// [`read_session`] does.
pub fn read_session_lines(path: &Path) -> Result<ReadLines, ReadError> {
    let bytes = std::fs::read(path).map_err(io_error(path, "read session log"))?;
    let decoded = decode(path, &bytes, Encoding::of_path(path), Keep::Lines)?;
    Ok(ReadLines {
        header: decoded.header,
        lines: decoded.scan.lines,
        encoding: decoded.encoding,
        file_len: decoded.file_len,
        repair: decoded.repair,
    })
}

/// Decode a session file's bytes (`path` only names it in errors).
pub fn decode_session(
    path: &Path,
    bytes: &[u8],
    encoding: Encoding,
) -> Result<ReadSession, ReadError> {
    let decoded = decode(path, bytes, encoding, Keep::Events)?;
    Ok(ReadSession {
        header: decoded.header,
        events: decoded.scan.events,
        encoding: decoded.encoding,
        file_len: decoded.file_len,
        repair: decoded.repair,
    })
}

/// A decoded file, whichever way its records were kept.
struct Decoded {
    header: SessionHeader,
    scan: ScanResult,
    encoding: Encoding,
    file_len: u64,
    repair: Option<Repair>,
}

fn decode(path: &Path, bytes: &[u8], encoding: Encoding, keep: Keep) -> Result<Decoded, ReadError> {
    match encoding {
        Encoding::Raw => decode_raw(path, bytes, keep),
        Encoding::Zstd => decode_zstd(path, bytes, keep),
    }
}

fn missing(path: &Path, reason: &'static str) -> ReadError {
    ReadError::MissingHeader {
        path: path.to_owned(),
        reason,
    }
}

fn decode_raw(path: &Path, bytes: &[u8], keep: Keep) -> Result<Decoded, ReadError> {
    let Some(header_end) = bytes.iter().position(|b| *b == b'\n') else {
        return Err(missing(path, "empty or header-less session log"));
    };
    let header = parse_header_line(path, &bytes[..header_end], false)?;
    let mut scanner = Scanner::keeping(keep, path, header_end as u64 + 1, None);
    scanner.write(&bytes[header_end + 1..])?;
    let committed = scanner.event_count();
    let scan = scanner.finish();
    let file_len = bytes.len() as u64;
    let repair = (scan.committed_bytes < file_len).then(|| Repair {
        truncate_to: scan.committed_bytes,
        file_len,
        recovered_from: committed,
        reason: scan.issue.as_ref().map_or_else(
            || "last line has no newline".to_owned(),
            |issue| issue.to_string(),
        ),
    });
    Ok(Decoded {
        header,
        scan,
        encoding: Encoding::Raw,
        file_len,
        repair,
    })
}

/// Frame 1 must be exactly one newline-terminated line: the header, alone, so listing can read
/// it without touching event frames.
fn header_of_frame(path: &Path, plain: &[u8]) -> Result<usize, ReadError> {
    match plain.iter().position(|b| *b == b'\n') {
        Some(end) if end + 1 == plain.len() => Ok(end),
        _ => Err(missing(path, "zstd frame 1 is not exactly one header line")),
    }
}

fn decode_zstd(path: &Path, bytes: &[u8], keep: Keep) -> Result<Decoded, ReadError> {
    let frame_error = |frame: usize, offset: usize, reason: String| ReadError::Frame {
        path: path.to_owned(),
        frame,
        offset: offset as u64,
        reason,
    };
    let defect = |d: FrameDefect| frame_error(d.frame, d.offset, d.reason.to_owned());
    // The header frame alone first: a foreign version is refused before anything after it is
    // even located (a future format need not frame its body like v0).
    let Some(first) = scan_frames(bytes, 0, 1, 1).map_err(defect)?.frames.pop() else {
        return Err(missing(
            path,
            "empty Zstandard session log or incomplete header frame",
        ));
    };
    let plain =
        decompress_frame(&bytes[first.clone()]).map_err(|e| frame_error(1, 0, e.to_string()))?;
    let header_end = header_of_frame(path, &plain)?;
    let header = parse_header_line(path, &plain[..header_end], false)?;
    let scan = scan_frames(bytes, first.end, 2, usize::MAX).map_err(defect)?;
    let mut scanner = Scanner::keeping(keep, path, plain.len() as u64, Some(1));
    for (i, range) in scan.frames.iter().enumerate() {
        let frame = i + 2;
        let plain = decompress_frame(&bytes[range.clone()])
            .map_err(|e| frame_error(frame, range.start, e.to_string()))?;
        scanner.set_frame(frame);
        scanner.write(&plain)?;
    }
    let complete_frames = scan.frames.len() + 1;
    // Complete frames are checksummed, so a defect inside them is never a torn write.
    if !scanner.fully_committed() {
        let start = scan.frames.last().map_or(0, |r| r.start);
        return Err(scanner.take_issue().unwrap_or_else(|| {
            frame_error(
                complete_frames,
                start,
                "complete frames end inside a JSONL record".to_owned(),
            )
        }));
    }
    let complete_events = scanner.event_count();
    let file_len = bytes.len() as u64;
    let mut repair = None;
    if let Some(torn) = scan.torn_start {
        let torn_frame = complete_frames + 1;
        scanner.set_frame(torn_frame);
        scanner.write(&decompress_prefix(&bytes[torn..]))?;
        repair = Some(Repair {
            truncate_to: torn as u64,
            file_len,
            recovered_from: complete_events,
            reason: format!("incomplete last zstd frame {torn_frame} at byte {torn}"),
        });
    }
    let scan = scanner.finish();
    Ok(Decoded {
        header,
        scan,
        encoding: Encoding::Zstd,
        file_len,
        repair,
    })
}

/// The most bytes read looking for a session file's header record (a header is well under a
/// KiB; its zstd frame too).
const MAX_HEADER_BYTES: usize = 4 << 20;

/// The header line's bytes (without newline), or `None` when the file holds no complete header
/// record yet (empty, or a publication still being written). Reads only what it needs.
pub(crate) fn first_record(path: &Path, encoding: Encoding) -> Result<Option<Vec<u8>>, ReadError> {
    let mut file = File::open(path).map_err(io_error(path, "open session log"))?;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        // A listing reads every header: a file whose first record never ends must not be read
        // whole into memory.
        if buf.len() > MAX_HEADER_BYTES {
            return Err(ReadError::Io {
                path: path.to_owned(),
                op: "read session header",
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("no complete header record in its first {MAX_HEADER_BYTES} bytes"),
                ),
            });
        }
        let n = file
            .read(&mut chunk)
            .map_err(io_error(path, "read session log"))?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        match encoding {
            Encoding::Raw => {
                if let Some(end) = buf.iter().position(|b| *b == b'\n') {
                    buf.truncate(end);
                    return Ok(Some(buf));
                }
            }
            Encoding::Zstd => {
                let scan = scan_frames(&buf, 0, 1, 1).map_err(|d| ReadError::Frame {
                    path: path.to_owned(),
                    frame: d.frame,
                    offset: d.offset as u64,
                    reason: d.reason.to_owned(),
                })?;
                if let Some(range) = scan.frames.first() {
                    let plain =
                        decompress_frame(&buf[range.clone()]).map_err(|e| ReadError::Frame {
                            path: path.to_owned(),
                            frame: 1,
                            offset: 0,
                            reason: format!("header frame failed validation: {e}"),
                        })?;
                    let end = header_of_frame(path, &plain)?;
                    return Ok(Some(plain[..end].to_vec()));
                }
            }
        }
    }
}

/// Read only a session file's header (frame 1 in zstd mode), refusing foreign versions.
pub fn read_header(path: &Path) -> Result<SessionHeader, ReadError> {
    match first_record(path, Encoding::of_path(path))? {
        Some(line) => parse_header_line(path, &line, false),
        None => Err(missing(path, "empty or header-less session log")),
    }
}

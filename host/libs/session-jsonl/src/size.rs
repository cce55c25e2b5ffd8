//! Size accounting: how big our raw encoding of a log is next to the file it was read from. It
//! checks that we pack like the reference (same rows, so about the same bytes).

use std::path::Path;

use dsh_session_log::SessionEvent;

use crate::chunks::encode_lines;
use crate::error::{ReadError, RecordError};
use crate::header::SessionHeader;
use crate::read::read_session;

/// A whole raw log (header line + body), as a raw-mode file would hold it.
pub fn encode_raw_log(
    header: &SessionHeader,
    events: &[SessionEvent],
    pack: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = header.to_line().into_bytes();
    out.push(b'\n');
    out.extend_from_slice(encode_lines(events, pack)?.as_bytes());
    Ok(out)
}

/// Byte counts for one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeReport {
    /// The file as stored (compressed bytes for a zstd file).
    pub file_bytes: u64,
    /// Our raw encoding with packing.
    pub packed_bytes: u64,
    /// Our raw encoding with one event per line.
    pub unpacked_bytes: u64,
    pub events: usize,
}

impl SizeReport {
    /// `packed_bytes / file_bytes`.
    pub fn packed_ratio(&self) -> f64 {
        self.packed_bytes as f64 / self.file_bytes.max(1) as f64
    }
}

/// Read a log and measure our re-encoding of its events.
pub fn size_report(path: &Path) -> Result<SizeReport, ReadError> {
    let read = read_session(path)?;
    let encode = |pack| {
        encode_raw_log(&read.header, &read.events, pack).map_err(|e| ReadError::Record {
            path: path.to_owned(),
            line: 0,
            frame: None,
            expected_seq: 0,
            source: RecordError::Envelope(format!("cannot re-encode: {e}")),
        })
    };
    Ok(SizeReport {
        file_bytes: read.file_len,
        packed_bytes: encode(true)?.len() as u64,
        unpacked_bytes: encode(false)?.len() as u64,
        events: read.events.len(),
    })
}

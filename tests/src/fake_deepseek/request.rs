//! Reading one HTTP/1.1 request off a fake server's connection: the head (bounded), an
//! `Expect: 100-continue` answered, and the body by its length or in chunks (bounded), kept as
//! JSON when it parses and as a JSON string when it does not.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;

use serde_json::Value;

use super::script::RecordedRequest;

const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Reads one request; `None` when the client closed the connection between requests.
pub(super) fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut head = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .by_ref()
            .take(MAX_HEAD_BYTES as u64)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(ErrorKind::UnexpectedEof.into())
            };
        }
        if line == b"\r\n" || line == b"\n" {
            if head.is_empty() {
                continue; // stray blank line between requests
            }
            break;
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD_BYTES {
            return Err(ErrorKind::InvalidData.into());
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let mut start = lines.next().unwrap_or_default().split_whitespace();
    let method = start.next().unwrap_or_default().to_owned();
    let path = start.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    if find("expect").is_some_and(|value| value.eq_ignore_ascii_case("100-continue")) {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body =
        if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
            read_chunked(reader)?
        } else {
            let length: usize = find("content-length")
                .and_then(|value| value.parse().ok())
                .unwrap_or(0);
            if length > MAX_BODY_BYTES {
                return Err(ErrorKind::InvalidData.into());
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body)?;
            body
        };
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.by_ref().take(1024).read_line(&mut size_line)?;
        let size_text = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| ErrorKind::InvalidData)?;
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                let mut trailer = String::new();
                if reader.by_ref().take(1024).read_line(&mut trailer)? == 0
                    || trailer.trim().is_empty()
                {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(ErrorKind::InvalidData.into());
        }
        let at = body.len();
        body.resize(at + size, 0);
        reader.read_exact(&mut body[at..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

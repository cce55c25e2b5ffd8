//! A raw HTTP/1.1 client over loopback for the web tests: every request is written by hand, so
//! a test can send exactly the headers an attacker would (a spoofed `Host`, a foreign `Origin`,
//! a wrong content type) and read the status and headers as they came.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One response, as received.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.body))
    }
}

/// Sends `method path` to `address` (`127.0.0.1:PORT`) with `headers` (a `Host` naming the
/// address unless one is given, and `Connection: close`) and `body`; reads until the server
/// closes, for at most 10 s.
pub fn send(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut stream = TcpStream::connect(address).expect("connect to the web server");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(head.as_bytes()).expect("send the request");
    let mut raw = Vec::new();
    // A WebSocket answer keeps the connection open: what arrived before the timeout is enough.
    let _ = stream.read_to_end(&mut raw);
    parse(&String::from_utf8_lossy(&raw))
}

fn parse(raw: &str) -> Response {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in: {raw:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A unary call's body, in the reference's envelope.
pub fn envelope(method: &str, payload: &serde_json::Value) -> String {
    serde_json::json!({"type": "client-request", "rpcId": "t1", "method": method, "payload": payload})
        .to_string()
}

/// A WebSocket to `address` at `path` (blocking), with `headers` on the upgrade request; reads
/// time out after 10 s so a test waiting for a frame cannot hang.
pub fn websocket(
    address: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{address}{path}").into_client_request()?;
    for (name, value) in headers {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes())
            .expect("a header name");
        let value = tokio_tungstenite::tungstenite::http::HeaderValue::from_str(value)
            .expect("a header value");
        request.headers_mut().insert(name, value);
    }
    let stream = TcpStream::connect(address).expect("connect to the web server");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let (socket, _) =
        tokio_tungstenite::tungstenite::client(request, stream).map_err(|error| match error {
            tokio_tungstenite::tungstenite::HandshakeError::Failure(error) => error,
            tokio_tungstenite::tungstenite::HandshakeError::Interrupted(_) => {
                tokio_tungstenite::tungstenite::Error::ConnectionClosed
            }
        })?;
    Ok(Socket(socket))
}

/// An open event socket.
pub struct Socket(tokio_tungstenite::tungstenite::WebSocket<TcpStream>);

impl Socket {
    pub fn send(&mut self, frame: &serde_json::Value) {
        self.0
            .send(tokio_tungstenite::tungstenite::Message::text(
                frame.to_string(),
            ))
            .expect("send a frame");
    }

    /// The next text frame as JSON; `None` when the server closed or nothing came in 10 s.
    pub fn next_frame(&mut self) -> Option<serde_json::Value> {
        loop {
            match self.0.read() {
                Ok(tokio_tungstenite::tungstenite::Message::Text(text)) => {
                    return serde_json::from_str(text.as_str()).ok();
                }
                Ok(tokio_tungstenite::tungstenite::Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Frames until one satisfies `done` (included), at most `limit` of them.
    pub fn until(
        &mut self,
        limit: usize,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> Vec<serde_json::Value> {
        let mut frames = Vec::new();
        while frames.len() < limit {
            let Some(frame) = self.next_frame() else {
                break;
            };
            let finished = done(&frame);
            frames.push(frame);
            if finished {
                break;
            }
        }
        frames
    }
}

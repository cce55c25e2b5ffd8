//! A client of a host's client socket for the tests: newline-delimited JSON-RPC 2.0 over a Unix
//! stream, requests answered by id, the `frame` notifications kept in arrival order. Reads are
//! bounded by a deadline, so a host that stops answering fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::WAIT;

/// The client socket a host serves under `home/run`, once it exists.
pub fn client_socket(home: &Path, pid: i32) -> PathBuf {
    let path = home.join("run").join(format!("dsh-clients-{pid}.sock"));
    let deadline = Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "no client socket at {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    path
}

/// One attached client.
pub struct LineClient {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
    /// `frame` notifications not yet taken, in arrival order.
    pub frames: Vec<Value>,
    /// Answers that arrived before they were asked for, by id.
    answers: Vec<Value>,
}

impl LineClient {
    pub fn connect(path: &Path) -> Self {
        let stream = UnixStream::connect(path).expect("the client socket accepts");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Self {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
            next_id: 0,
            frames: Vec::new(),
            answers: Vec::new(),
        }
    }

    /// Writes one raw line.
    pub fn send_line(&mut self, line: &str) {
        writeln!(self.writer, "{line}").unwrap();
    }

    /// Sends a request; answers its id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let frame =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.send_line(&frame.to_string());
        self.next_id
    }

    /// The whole answer (`result` or `error`) to request `id`.
    pub fn answer(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(at) = self.answers.iter().position(|answer| answer["id"] == id) {
                return self.answers.remove(at);
            }
            assert!(Instant::now() < deadline, "no answer to request {id}");
            self.read_one();
        }
    }

    /// Calls `method`; its result, or a panic with the error.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let answer = self.answer(id);
        assert!(answer["error"].is_null(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// An answer with no id to match (to a line that was not a request).
    pub fn unmatched_answer(&mut self) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(at) = self
                .answers
                .iter()
                .position(|answer| answer["id"].is_null())
            {
                return self.answers.remove(at);
            }
            assert!(Instant::now() < deadline, "no answer without an id");
            self.read_one();
        }
    }

    /// Reads frames until one satisfies `done` (at most `limit` frames); answers the frames
    /// read, the last one included, and keeps none of them.
    pub fn until(&mut self, limit: usize, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        let mut taken = Vec::new();
        loop {
            while !self.frames.is_empty() {
                let frame = self.frames.remove(0);
                let finished = done(&frame);
                taken.push(frame);
                if finished {
                    return taken;
                }
                assert!(
                    taken.len() < limit,
                    "no matching frame in {limit}: {taken:?}"
                );
            }
            assert!(Instant::now() < deadline, "no matching frame: {taken:?}");
            self.read_one();
        }
    }

    /// Reads one line if one arrives within the read timeout.
    fn read_one(&mut self) {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => panic!("the host closed the client socket"),
            Ok(_) => {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
                assert_eq!(value["jsonrpc"], "2.0", "{value}");
                if value["method"] == "frame" {
                    self.frames.push(value["params"].clone());
                } else {
                    self.answers.push(value);
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(error) => panic!("reading the client socket: {error}"),
        }
    }
}

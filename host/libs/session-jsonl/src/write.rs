//! Writing: first publication, appends, truncation.
//!
//! A session that never appended leaves nothing on disk, so the first append publishes the
//! header and first batch at once: written to a temp file beside the target, fsynced, then hard
//! linked into place. `link` fails if the target exists, so two writers racing on one id cannot
//! overwrite each other (a rename would silently clobber). Later appends only add bytes; a failed
//! append is truncated back so a retry cannot duplicate seqs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_session_log::SessionEvent;

use crate::chunks::{CommittedLine, encode_committed, encode_lines};
use crate::error::WriteError;
use crate::frames::compress_frame;
use crate::header::SessionHeader;
use crate::layout::{Encoding, log_path};

/// How a writer encodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    pub encoding: Encoding,
    /// Pack chunk delta runs into rows (the reference's default). Off writes one event per line.
    pub pack_chunks: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            encoding: Encoding::Zstd,
            pack_chunks: true,
        }
    }
}

#[derive(Debug)]
enum State {
    /// Nothing on disk yet; the header waits for the first append.
    Pending(Box<SessionHeader>),
    /// Published; `len` is the length this writer last left the file at. The append handle is
    /// opened on the first append after publication and kept, so each batch costs one write
    /// and one fsync rather than an open, a stat and a close as well.
    Open { len: u64, file: Option<File> },
    /// An append failed and could not be rolled back; the file needs a read and a repair.
    Poisoned,
}

/// The single writer of one session file.
#[derive(Debug)]
pub struct SessionWriter {
    path: PathBuf,
    options: WriterOptions,
    next_seq: u64,
    state: State,
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        path: path.to_owned(),
        op,
        source,
    }
}

impl SessionWriter {
    /// A writer for a new session under `root`. Touches nothing on disk.
    pub fn create(
        root: &Path,
        header: SessionHeader,
        options: WriterOptions,
    ) -> Result<Self, WriteError> {
        let path = log_path(root, header.cwd.as_deref(), &header.id, options.encoding)?;
        if let Some(reason) = header.write_problem() {
            return Err(WriteError::BadHeader { path, reason });
        }
        Ok(SessionWriter {
            path,
            options,
            next_seq: 0,
            state: State::Pending(Box::new(header)),
        })
    }

    /// A writer appending to an existing file whose committed log ends before `next_seq` (after a
    /// read, and after applying its repair if it had one).
    pub fn open(path: &Path, pack_chunks: bool, next_seq: u64) -> Result<Self, WriteError> {
        let len = fs::metadata(path)
            .map_err(io_err(path, "stat session log"))?
            .len();
        let options = WriterOptions {
            encoding: Encoding::of_path(path),
            pack_chunks,
        };
        Ok(SessionWriter {
            path: path.to_owned(),
            options,
            next_seq,
            state: State::Open { len, file: None },
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn options(&self) -> WriterOptions {
        self.options
    }

    /// The seq the next append must start at.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Whether the file exists (the first append succeeded, or the writer was opened).
    pub fn is_materialized(&self) -> bool {
        !matches!(self.state, State::Pending(_))
    }

    /// Durably append a batch (an empty batch is a no-op and publishes nothing).
    pub fn append(&mut self, events: &[SessionEvent]) -> Result<(), WriteError> {
        if events.is_empty() {
            return Ok(());
        }
        self.check_seqs(events.iter().map(|event| event.seq))?;
        let body = encode_lines(events, self.options.pack_chunks).map_err(|source| {
            WriteError::Encode {
                path: self.path.clone(),
                source,
            }
        })?;
        self.append_body(events.len(), body.as_bytes())
    }

    /// [`append`](Self::append) for events the log already serialized: the lines are written
    /// as they are, parsing only the chunk runs that pack.
    pub fn append_committed(&mut self, lines: &[CommittedLine<'_>]) -> Result<(), WriteError> {
        if lines.is_empty() {
            return Ok(());
        }
        self.check_seqs(lines.iter().map(|line| line.seq))?;
        let body = encode_committed(lines, self.options.pack_chunks).map_err(|source| {
            WriteError::Encode {
                path: self.path.clone(),
                source,
            }
        })?;
        self.append_body(lines.len(), body.as_bytes())
    }

    fn check_seqs(&self, seqs: impl Iterator<Item = u64>) -> Result<(), WriteError> {
        for (k, seq) in seqs.enumerate() {
            let expected = self.next_seq + k as u64;
            if seq != expected {
                return Err(WriteError::SeqMismatch {
                    path: self.path.clone(),
                    expected,
                    found: seq,
                });
            }
        }
        Ok(())
    }

    fn append_body(&mut self, count: usize, body: &[u8]) -> Result<(), WriteError> {
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Poisoned => {
                return Err(WriteError::Poisoned {
                    path: self.path.clone(),
                });
            }
            State::Pending(header) => match self.publish(&header, body) {
                Ok(len) => self.state = State::Open { len, file: None },
                Err(error) => {
                    self.state = State::Pending(header);
                    return Err(error);
                }
            },
            State::Open { len, file } => {
                let (new_len, file) = self.append_bytes(len, file, body)?;
                self.state = State::Open {
                    len: new_len,
                    file: Some(file),
                };
            }
        }
        self.next_seq += count as u64;
        Ok(())
    }

    fn encode_body(&self, body: &[u8]) -> Result<Vec<u8>, WriteError> {
        match self.options.encoding {
            Encoding::Raw => Ok(body.to_vec()),
            Encoding::Zstd => compress_frame(body).map_err(io_err(&self.path, "compress batch")),
        }
    }

    /// First publication of header + first batch; returns the published length.
    fn publish(&self, header: &SessionHeader, body: &[u8]) -> Result<u64, WriteError> {
        let path = &self.path;
        let mut content = Vec::new();
        let header_line = format!("{}\n", header.to_line());
        match self.options.encoding {
            Encoding::Raw => {
                content.extend_from_slice(header_line.as_bytes());
                content.extend_from_slice(body);
            }
            // The header gets a frame of its own so listing decodes only that.
            Encoding::Zstd => {
                content = compress_frame(header_line.as_bytes())
                    .map_err(io_err(path, "compress header"))?;
                content.extend_from_slice(&self.encode_body(body)?);
            }
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        create_durable_dirs(dir)?;
        let opposite = dir.join(self.options.encoding.opposite().file_name());
        if opposite.exists() {
            return Err(WriteError::EncodingMismatch {
                path: opposite,
                found: self.options.encoding.opposite(),
                configured: self.options.encoding,
            });
        }
        if path.exists() {
            return Err(WriteError::AlreadyExists { path: path.clone() });
        }
        let tmp = dir.join(temp_name(self.options.encoding));
        let written = write_synced(&tmp, &content);
        let linked = written.and_then(|()| match fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(WriteError::AlreadyExists { path: path.clone() })
            }
            Err(e) => Err(WriteError::Io {
                path: path.clone(),
                op: "publish (hard link)",
                source: e,
            }),
        });
        // The temp name is only a staging link; after publication or failure it goes either way.
        // Removing it cannot lose data: the published link (if any) names the same inode.
        let _ = fs::remove_file(&tmp);
        linked?;
        sync_dir(dir)?;
        Ok(content.len() as u64)
    }

    /// Append `body` at `len`, through `file` when the writer kept one open. On failure the
    /// state is set here: back to `Open` after a rollback (the handle dropped, so the next
    /// append reopens), `Poisoned` when the rollback failed too.
    fn append_bytes(
        &mut self,
        len: u64,
        file: Option<File>,
        body: &[u8],
    ) -> Result<(u64, File), WriteError> {
        let path = self.path.clone();
        let reopen_state = State::Open { len, file: None };
        let content = match self.encode_body(body) {
            Ok(content) => content,
            Err(error) => {
                self.state = reopen_state;
                return Err(error);
            }
        };
        // A kept handle to a file that was since removed or replaced would write where nobody
        // reads; such a handle is dropped and the path reopened, failing as before if it is gone.
        let opened = match file.filter(still_linked) {
            Some(file) => Ok(file),
            None => OpenOptions::new().append(true).open(&path),
        };
        let mut file = match opened {
            Ok(file) => file,
            Err(source) => {
                self.state = reopen_state;
                return Err(io_err(&path, "open for append")(source));
            }
        };
        let before = match file.metadata() {
            Ok(metadata) => metadata.len(),
            Err(source) => {
                self.state = reopen_state;
                return Err(io_err(&path, "stat session log")(source));
            }
        };
        if before != len {
            self.state = reopen_state;
            return Err(WriteError::LengthChanged {
                path,
                expected: len,
                found: before,
            });
        }
        let result = file.write_all(&content).and_then(|()| file.sync_all());
        match result {
            Ok(()) => Ok((before + content.len() as u64, file)),
            Err(source) => {
                drop(file);
                match truncate_file(&path, before) {
                    Ok(()) => {
                        self.state = reopen_state;
                        Err(WriteError::Io {
                            path,
                            op: "append batch",
                            source,
                        })
                    }
                    Err(rollback) => Err(WriteError::RollbackFailed {
                        path,
                        len: before,
                        source,
                        rollback,
                    }),
                }
            }
        }
    }
}

#[cfg(unix)]
fn still_linked(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|metadata| metadata.nlink() > 0)
}

#[cfg(not(unix))]
fn still_linked(_file: &File) -> bool {
    false
}

fn truncate_file(path: &Path, len: u64) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(len)?;
    file.sync_all()
}

/// Cut a session file to `offset` bytes (a [`Repair`](crate::Repair)'s `truncate_to`) and fsync.
pub fn truncate_to(path: &Path, offset: u64) -> Result<(), WriteError> {
    truncate_file(path, offset).map_err(io_err(path, "truncate session log"))
}

/// A name no other writer picks: pid, clock and a process-wide counter.
fn temp_name(encoding: Encoding) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{}.{:x}{:x}{:x}.tmp",
        encoding.file_name(),
        std::process::id(),
        nanos,
        n
    )
}

fn write_synced(path: &Path, content: &[u8]) -> Result<(), WriteError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(io_err(path, "create temp file"))?;
    file.write_all(content)
        .map_err(io_err(path, "write temp file"))?;
    file.sync_all().map_err(io_err(path, "fsync temp file"))
}

/// Create `dir` and its missing ancestors (private to the user), fsyncing each new entry's parent
/// so the directories survive a power loss along with the file published into them.
fn create_durable_dirs(dir: &Path) -> Result<(), WriteError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_durable_dirs(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) => {}
        // Another writer made it meanwhile: fine, it is a directory either way.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(e) => {
            return Err(WriteError::Io {
                path: dir.to_owned(),
                op: "create directory",
                source: e,
            });
        }
    }
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// fsync a directory so a new entry in it is durable. POSIX only: Windows cannot open a
/// directory this way (the reference uses write-through moves there instead).
fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    if cfg!(unix) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir, "fsync directory"))?;
    }
    Ok(())
}

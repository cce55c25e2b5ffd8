//! A full-access session's text files through its client ([`ThroughClient`]): an editor that
//! keeps buffers answers reads with their text, saved or not, and takes writes into them, so
//! the person sees the agent's change where they are looking and the agent never reads a file
//! older than the buffer on screen.
//!
//! Only for a session whose calls run unconfined ([`session_files`]): the sandbox's checks of
//! a path promise that what is written lands where it was checked, which an editor writing in
//! the person's own process (following symbolic links) cannot, so a sandboxed session keeps the
//! disk. Only for a client that both reads and writes, so what is read and what is replaced are
//! one text. What stays on the wrapped file system: stats (with no modification time for a
//! file read through the client: a buffer has none, and saving it must not make the file look
//! changed), real paths, walks, and every file that is not UTF-8 text on disk (bytes an editor
//! would decode and write back changed), larger than [`MAX_TEXT`], or that the client refuses
//! (one outside its project).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RSlice, RStr};
use dsh_plugin_api::io::client_files::{CLIENT_FILES_SERVICE, ClientFilesService};
use dsh_plugin_api::io::fs::FsErrorKind;
use dsh_plugin_api::{Context, lock};

use crate::service::{from_abi_error, path_bytes};
use crate::{FileStat, FileSystem, PublishError, WalkRequest, Walked};

/// The largest file read through the client; a larger one is no editor's buffer.
pub(crate) const MAX_TEXT: u64 = 16 << 20;

/// Where one path's text comes from, decided at its first use in a call.
#[derive(Clone)]
enum Held {
    /// The client's text.
    Text(Arc<str>),
    /// The wrapped file system's bytes.
    Disk,
}

/// `fs` with the text of `session`'s files read and written by its client (see the module
/// docs). Each path is asked once per instance (one tool call): the chunked reads of a file
/// and the stats around them then agree.
pub struct ThroughClient<S> {
    fs: Arc<dyn FileSystem>,
    client: S,
    session: String,
    held: Mutex<HashMap<PathBuf, Held>>,
}

/// The files of `session` for one tool call: `fs`, with their text through the session's
/// client where a `client_files` row serves it for reading and writing and the call runs
/// `unconfined` (its sandbox mode is full access). A plugin that uses this lists
/// [`CLIENT_FILES_SERVICE`] among its optional services.
pub fn session_files(
    ctx: &Context,
    fs: &Arc<dyn FileSystem>,
    session: &str,
    unconfined: bool,
) -> Arc<dyn FileSystem> {
    if !unconfined {
        return fs.clone();
    }
    let Ok(Some(client)) = ctx.get::<ClientFilesService>(CLIENT_FILES_SERVICE) else {
        return fs.clone();
    };
    let ops = client.serves(RStr::from_str(session));
    if !(ops.read && ops.write) {
        return fs.clone();
    }
    Arc::new(ThroughClient::new(fs.clone(), client, session.to_owned()))
}

impl<S> ThroughClient<S>
where
    S: std::ops::Deref<Target = ClientFilesService> + Send + Sync,
{
    pub fn new(fs: Arc<dyn FileSystem>, client: S, session: String) -> Self {
        Self {
            fs,
            client,
            session,
            held: Mutex::default(),
        }
    }

    /// Where `path`'s text comes from: the client, unless the disk's file is no text for it
    /// or the client refuses it.
    fn held(&self, path: &Path) -> io::Result<Held> {
        match self.cached(path) {
            Some(held) => Ok(held),
            None => self.decide(path, self.fs.stat(path)?.as_ref()),
        }
    }

    fn cached(&self, path: &Path) -> Option<Held> {
        lock(&self.held).get(path).cloned()
    }

    /// Decides where `path`'s text comes from, given the disk's `meta` of it, and keeps that.
    fn decide(&self, path: &Path, meta: Option<&FileStat>) -> io::Result<Held> {
        let held = match meta {
            Some(meta)
                if meta.is_file() && meta.len <= MAX_TEXT && self.text_on_disk(path, meta)? =>
            {
                self.ask(path)?
            }
            _ => Held::Disk,
        };
        lock(&self.held).insert(path.to_path_buf(), held.clone());
        Ok(held)
    }

    /// Whether the file at `path` is UTF-8 text without NUL bytes.
    fn text_on_disk(&self, path: &Path, meta: &FileStat) -> io::Result<bool> {
        let len = usize::try_from(meta.len).unwrap_or(usize::MAX);
        let bytes = self.fs.read_at(path, 0, len)?;
        Ok(!bytes.contains(&0) && std::str::from_utf8(&bytes).is_ok())
    }

    /// The client's text of `path`; [`Held::Disk`] when it refuses the path.
    fn ask(&self, path: &Path) -> io::Result<Held> {
        let read = self.client.read_text(
            RStr::from_str(&self.session),
            RSlice::from_slice(&path_bytes(path)),
        );
        match read.into_result() {
            Ok(text) => Ok(Held::Text(text.as_str().into())),
            Err(refused) if refused.kind == FsErrorKind::Denied => Ok(Held::Disk),
            Err(error) => Err(from_abi_error(error)),
        }
    }

    /// Writes `content` through the client when it is text; `None` when the wrapped file
    /// system must (bytes that are not UTF-8 cannot cross `fs/write_text_file`, and a path the
    /// client refuses).
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        create_only: bool,
    ) -> Option<Result<(), PublishError>> {
        let text = std::str::from_utf8(content).ok()?;
        match self.fs.stat(path) {
            Err(error) => return Some(Err(PublishError::Io(error))),
            Ok(Some(meta)) if !meta.is_file() => return Some(Err(PublishError::NotRegularFile)),
            Ok(Some(_)) if create_only => return Some(Err(PublishError::Exists)),
            Ok(_) => {}
        }
        let written = self.client.write_text(
            RStr::from_str(&self.session),
            RSlice::from_slice(&path_bytes(path)),
            RStr::from_str(text),
        );
        match written.into_result() {
            Ok(()) => {
                lock(&self.held).insert(path.to_path_buf(), Held::Text(text.into()));
                Some(Ok(()))
            }
            Err(refused) if refused.kind == FsErrorKind::Denied => None,
            Err(error) => Some(Err(PublishError::Io(from_abi_error(error)))),
        }
    }

    /// A publication by the wrapped file system: the path's text is read from it again.
    fn on_disk(
        &self,
        path: &Path,
        published: Result<(), PublishError>,
    ) -> Result<(), PublishError> {
        lock(&self.held).remove(path);
        published
    }
}

fn slice(text: &str, offset: u64, len: usize) -> Vec<u8> {
    let bytes = text.as_bytes();
    let start = usize::try_from(offset).map_or(bytes.len(), |start| start.min(bytes.len()));
    let end = start.saturating_add(len).min(bytes.len());
    bytes[start..end].to_vec()
}

impl<S> FileSystem for ThroughClient<S>
where
    S: std::ops::Deref<Target = ClientFilesService> + Send + Sync,
{
    /// The wrapped stat; for a file read through the client, the text's length (a buffer
    /// longer than the saved file is read whole) and no modification time.
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        let meta = self.fs.stat(path)?;
        match meta {
            Some(mut meta) if meta.is_file() => {
                let held = match self.cached(path) {
                    Some(held) => held,
                    None => self.decide(path, Some(&meta))?,
                };
                if let Held::Text(text) = held {
                    meta.len = text.len() as u64;
                    meta.mtime = None;
                }
                Ok(Some(meta))
            }
            other => Ok(other),
        }
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        match self.held(path)? {
            Held::Text(text) => Ok(slice(&text, offset, len)),
            Held::Disk => self.fs.read_at(path, offset, len),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.fs.canonicalize(path)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        match self.write(path, content, create_only) {
            Some(written) => written,
            None => self.on_disk(path, self.fs.publish(path, content, mode, create_only)),
        }
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        self.fs.walk(request, visit)
    }

    fn read_at_resolved(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> io::Result<(Vec<u8>, PathBuf)> {
        match self.held(path)? {
            Held::Text(text) => Ok((slice(&text, offset, len), self.fs.canonicalize(path)?)),
            Held::Disk => self.fs.read_at_resolved(path, offset, len),
        }
    }

    /// Through the client the path is named to it as the tools resolved it (the session is
    /// unconfined: nothing it may not write lies behind a link); the permission bits of a file
    /// it creates are the client's.
    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        match self.write(path, content, create_only) {
            Some(written) => written,
            None => self.on_disk(
                path,
                self.fs
                    .publish_no_symlinks(path, content, mode, create_only),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use abi_stable::sabi_trait::TD_Opaque;
    use abi_stable::std_types::{RErr, ROk, RResult, RString};
    use dsh_plugin_api::io::client_files::{ClientFileOps, ClientFiles, ClientFiles_TO};
    use dsh_plugin_api::io::fs::FsError;

    use super::*;
    use crate::LocalFs;

    /// An editor: its buffers by path, paths it refuses, and how often it was asked.
    #[derive(Default)]
    struct Editor {
        buffers: Mutex<HashMap<String, String>>,
        refused: Vec<String>,
        asked: AtomicUsize,
    }

    struct Shared(Arc<Editor>);

    fn path_of(path: RSlice<'_, u8>) -> String {
        String::from_utf8_lossy(path.as_slice()).into_owned()
    }

    fn refusal(path: &str) -> FsError {
        FsError {
            kind: FsErrorKind::Denied,
            message: RString::from(format!("{path} is not in this project")),
        }
    }

    impl ClientFiles for Shared {
        fn serves(&self, _session: RStr<'_>) -> ClientFileOps {
            ClientFileOps {
                read: true,
                write: true,
            }
        }

        fn read_text(&self, _session: RStr<'_>, path: RSlice<'_, u8>) -> RResult<RString, FsError> {
            self.0.asked.fetch_add(1, Ordering::Relaxed);
            let path = path_of(path);
            if self.0.refused.contains(&path) {
                return RErr(refusal(&path));
            }
            let held = lock(&self.0.buffers).get(&path).cloned();
            match held.or_else(|| std::fs::read_to_string(&path).ok()) {
                Some(text) => ROk(RString::from(text)),
                None => RErr(refusal(&path)),
            }
        }

        fn write_text(
            &self,
            _session: RStr<'_>,
            path: RSlice<'_, u8>,
            text: RStr<'_>,
        ) -> RResult<(), FsError> {
            let path = path_of(path);
            if self.0.refused.contains(&path) {
                return RErr(refusal(&path));
            }
            lock(&self.0.buffers).insert(path, text.to_string());
            ROk(())
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-fs-client-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn through(editor: &Arc<Editor>) -> ThroughClient<Box<ClientFilesService>> {
        let client = ClientFiles_TO::from_value(Shared(editor.clone()), TD_Opaque);
        ThroughClient::new(Arc::new(LocalFs), Box::new(client), "s1".to_owned())
    }

    #[test]
    fn a_buffer_is_read_whole_and_written_into_and_the_disk_is_left_alone() {
        let dir = scratch("buffer");
        let notes = dir.join("notes.txt");
        std::fs::write(&notes, "saved\n").unwrap();
        let editor = Arc::new(Editor::default());
        let key = notes.display().to_string();
        lock(&editor.buffers).insert(key.clone(), "saved\nand unsaved\n".to_owned());
        let files = through(&editor);
        let meta = files.stat(&notes).unwrap().unwrap();
        assert_eq!((meta.len, meta.mtime), (18, None));
        assert_eq!(files.read_at(&notes, 6, 100).unwrap(), b"and unsaved\n");
        // Asked once per call, whatever the reads.
        assert_eq!(editor.asked.load(Ordering::Relaxed), 1);
        files.publish(&notes, b"changed\n", None, false).unwrap();
        assert_eq!(lock(&editor.buffers)[&key], "changed\n");
        assert_eq!(files.read_at(&notes, 0, 100).unwrap(), b"changed\n");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "saved\n");
        // A new file is the editor's too; a create-only write of an existing one is refused.
        let fresh = dir.join("fresh.txt");
        files.publish(&fresh, b"new\n", None, true).unwrap();
        assert!(!fresh.exists());
        assert!(matches!(
            files.publish(&notes, b"x", None, true),
            Err(PublishError::Exists)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bytes_that_are_not_text_and_refused_paths_stay_on_the_disk() {
        let dir = scratch("disk");
        let latin = dir.join("latin.txt");
        std::fs::write(&latin, b"caf\xe9\n").unwrap();
        let outside = dir.join("outside.txt");
        std::fs::write(&outside, "mine\n").unwrap();
        let editor = Arc::new(Editor {
            refused: vec![outside.display().to_string()],
            ..Editor::default()
        });
        let files = through(&editor);
        assert_eq!(files.read_at(&latin, 0, 100).unwrap(), b"caf\xe9\n");
        assert!(files.stat(&latin).unwrap().unwrap().mtime.is_some());
        assert_eq!(editor.asked.load(Ordering::Relaxed), 0);
        assert_eq!(files.read_at(&outside, 0, 100).unwrap(), b"mine\n");
        // Refused for writing too: written on the disk, and read from there again.
        files.publish(&outside, b"ours\n", None, false).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "ours\n");
        assert_eq!(files.read_at(&outside, 0, 100).unwrap(), b"ours\n");
        // Bytes that are not UTF-8 cannot cross: the disk takes them.
        files.publish(&latin, b"\xff\n", None, false).unwrap();
        assert_eq!(std::fs::read(&latin).unwrap(), b"\xff\n");
        assert_eq!(files.read_at(&latin, 0, 100).unwrap(), b"\xff\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn slices_stay_inside_the_text() {
        assert_eq!(slice("hello", 0, 3), b"hel");
        assert_eq!(slice("hello", 3, 10), b"lo");
        assert_eq!(slice("hello", 9, 10), b"");
        assert_eq!(slice("hello", u64::MAX, usize::MAX), b"");
    }
}

//! A session's text files through its client ([`ThroughClient`]): an editor that keeps buffers
//! answers reads with their text, saved or not, and takes writes into them, so the person sees
//! the agent's change where they are looking and the agent never reads a file older than the
//! buffer on screen. Only the text goes through the client: stats, real paths and walks stay
//! with the wrapped file system, so every check the tools make of a path is made as before.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RSlice, RStr};
use dsh_plugin_api::io::client_files::{CLIENT_FILES_SERVICE, ClientFileOps, ClientFilesService};
use dsh_plugin_api::{Context, lock};

use crate::service::{from_abi_error, path_bytes};
use crate::{FileStat, FileSystem, PublishError, WalkRequest, Walked};

/// `fs` with the text of `session`'s files read and written by its client, as `ops` says.
/// Each text read is asked once per instance (one tool call): the chunked reads of a file and
/// the stats around them then agree.
pub struct ThroughClient<S> {
    pub fs: Arc<dyn FileSystem>,
    pub client: S,
    pub session: String,
    pub ops: ClientFileOps,
    texts: Mutex<HashMap<PathBuf, Arc<str>>>,
}

impl<S> ThroughClient<S>
where
    S: std::ops::Deref<Target = ClientFilesService> + Send + Sync,
{
    pub fn new(fs: Arc<dyn FileSystem>, client: S, session: String, ops: ClientFileOps) -> Self {
        Self {
            fs,
            client,
            session,
            ops,
            texts: Mutex::default(),
        }
    }

    /// The client's text of `path`, asked once.
    fn text(&self, path: &Path) -> io::Result<Arc<str>> {
        if let Some(text) = lock(&self.texts).get(path) {
            return Ok(text.clone());
        }
        let text: Arc<str> = self
            .client
            .read_text(
                RStr::from_str(&self.session),
                RSlice::from_slice(&path_bytes(path)),
            )
            .into_result()
            .map_err(from_abi_error)?
            .as_str()
            .into();
        lock(&self.texts).insert(path.to_path_buf(), text.clone());
        Ok(text)
    }

    /// Writes `content` through the client when it is text; `None` when the wrapped file
    /// system must (bytes that are not UTF-8 cannot cross `fs/write_text_file`).
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        create_only: bool,
    ) -> Option<Result<(), PublishError>> {
        if !self.ops.write {
            return None;
        }
        let text = std::str::from_utf8(content).ok()?;
        Some(self.write_text(path, text, create_only))
    }

    fn write_text(&self, path: &Path, text: &str, create_only: bool) -> Result<(), PublishError> {
        match self.fs.stat(path).map_err(PublishError::Io)? {
            Some(meta) if !meta.is_file() => return Err(PublishError::NotRegularFile),
            Some(_) if create_only => return Err(PublishError::Exists),
            _ => {}
        }
        self.client
            .write_text(
                RStr::from_str(&self.session),
                RSlice::from_slice(&path_bytes(path)),
                RStr::from_str(text),
            )
            .into_result()
            .map_err(|error| PublishError::Io(from_abi_error(error)))?;
        lock(&self.texts).insert(path.to_path_buf(), text.into());
        Ok(())
    }
}

/// The files of `session` for one tool call: `fs`, with their text through the session's
/// client where a `client_files` row serves it. A plugin that uses this lists
/// [`CLIENT_FILES_SERVICE`] among its optional services.
pub fn session_files(
    ctx: &Context,
    fs: &Arc<dyn FileSystem>,
    session: &str,
) -> Arc<dyn FileSystem> {
    let Ok(Some(client)) = ctx.get::<ClientFilesService>(CLIENT_FILES_SERVICE) else {
        return fs.clone();
    };
    let ops = client.serves(RStr::from_str(session));
    if !ops.any() {
        return fs.clone();
    }
    Arc::new(ThroughClient::new(
        fs.clone(),
        client,
        session.to_owned(),
        ops,
    ))
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
    /// The wrapped stat, with a file's length the client's text's: a buffer longer than the
    /// saved file is read whole.
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        let meta = self.fs.stat(path)?;
        match meta {
            Some(mut meta) if self.ops.read && meta.is_file() => {
                meta.len = self.text(path)?.len() as u64;
                Ok(Some(meta))
            }
            other => Ok(other),
        }
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        if !self.ops.read {
            return self.fs.read_at(path, offset, len);
        }
        Ok(slice(&self.text(path)?, offset, len))
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
            None => self.fs.publish(path, content, mode, create_only),
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
        if !self.ops.read {
            return self.fs.read_at_resolved(path, offset, len);
        }
        let bytes = slice(&self.text(path)?, offset, len);
        Ok((bytes, self.fs.canonicalize(path)?))
    }

    /// Through the client, the path the tools checked is the one named to it (the client
    /// resolves it as the person's editor does); the permission bits of a file it creates are
    /// the client's.
    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        match self.write(path, content, create_only) {
            Some(written) => written,
            None => self
                .fs
                .publish_no_symlinks(path, content, mode, create_only),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slice;

    #[test]
    fn slices_stay_inside_the_text() {
        assert_eq!(slice("hello", 0, 3), b"hel");
        assert_eq!(slice("hello", 3, 10), b"lo");
        assert_eq!(slice("hello", 9, 10), b"");
        assert_eq!(slice("hello", u64::MAX, usize::MAX), b"");
    }
}

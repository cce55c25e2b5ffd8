//! The client's files for the file tools of this connection's sessions (the `client_files`
//! service), in editor mode where the row's `clientFs` asks for it: a session's text reads are
//! `fs/read_text_file` and its writes `fs/write_text_file`, where the client said at
//! `initialize` that it does them. An editor answers with its buffers, saved or not, and shows
//! the agent's writes in them. A session's children (subagents) and every other session keep the
//! host's files, and the file tools ask only for sessions whose calls run unconfined, from a
//! client that does both (`dsh_fs_local::session_files`).
//!
//! A request waits for the client's answer until it comes, the session's prompt is cancelled
//! by the client (the request is withdrawn), stdin closes or the row's bound passes
//! ([`ANSWER_BOUND`] unless `clientFsTimeoutMs` says otherwise; the request is then withdrawn
//! from the client with `$/cancel_request`). A refusal of the client sends the tools to the
//! disk for that file.

use std::sync::{Arc, Weak};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RSlice, RStr, RString};
use dsh_plugin_api::io::client_files::{
    CLIENT_FILES_SERVICE, ClientFileOps, ClientFiles, ClientFiles_TO,
};
use dsh_plugin_api::io::fs::{FsError, FsErrorKind};
use dsh_plugin_api::{PluginError, lock};
use serde::{Deserialize, Serialize};

use crate::server::Server;
use crate::wire::CallError;

pub(crate) const READ_TEXT_FILE: &str = "fs/read_text_file";
pub(crate) const WRITE_TEXT_FILE: &str = "fs/write_text_file";

/// How long a request waits for the client's answer by default: an editor answers from memory
/// at once, and an answer too long to read (over the line limit) never comes.
pub(crate) const ANSWER_BOUND: Duration = Duration::from_secs(30);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReadTextFile<'a> {
    session_id: &'a str,
    path: &'a str,
}

#[derive(Deserialize)]
struct ReadTextFileResponse {
    content: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WriteTextFile<'a> {
    session_id: &'a str,
    path: &'a str,
    content: &'a str,
}

/// Offers the client's files as the `client_files` service, for as long as the row runs.
pub(crate) fn provide(server: &Arc<Server>, bound: Duration) -> Result<(), PluginError> {
    let files = EditorFiles {
        server: Arc::downgrade(server),
        bound,
    };
    server.ctx.provide(
        CLIENT_FILES_SERVICE,
        ClientFiles_TO::from_value(files, TD_Opaque),
    )
}

struct EditorFiles {
    server: Weak<Server>,
    /// How long a request waits for the client's answer.
    bound: Duration,
}

impl EditorFiles {
    /// The connection, while `session` is one of its sessions and it is open.
    fn server_of(&self, session: &str) -> Option<Arc<Server>> {
        let server = self.server.upgrade()?;
        server.editor_session(session)?;
        Some(server)
    }
}

fn failure(kind: FsErrorKind, message: String) -> FsError {
    FsError {
        kind,
        message: RString::from(message),
    }
}

/// A path the client can be told: JSON carries text only.
fn path_text<'a>(path: &'a RSlice<'_, u8>, verb: &str) -> Result<&'a str, FsError> {
    std::str::from_utf8(path.as_slice()).map_err(|_| {
        failure(
            FsErrorKind::Other,
            format!(
                "cannot {verb} \"{}\" through the editor: the path is not UTF-8",
                String::from_utf8_lossy(path.as_slice())
            ),
        )
    })
}

/// The client's refusal (`Denied`: the file tools then use the disk, as for a file outside
/// the editor's project), or the wait that ended without an answer, as the tool reports it.
fn call_failure(error: CallError, verb: &str, path: &str) -> FsError {
    let (kind, why) = match error {
        CallError::Answered(rpc) => (
            FsErrorKind::Denied,
            format!("the editor answered: {}", rpc.message),
        ),
        CallError::Unreadable(rpc) => (FsErrorKind::Other, rpc.message),
        CallError::TimedOut(_) => (FsErrorKind::Other, error.to_string()),
        CallError::Withdrawn => (FsErrorKind::Other, "the prompt was cancelled".to_owned()),
        CallError::Closed => (
            FsErrorKind::Other,
            "the editor closed the connection".to_owned(),
        ),
    };
    failure(
        kind,
        format!("cannot {verb} \"{path}\" through the editor: {why}"),
    )
}

fn gone(session: RStr<'_>) -> FsError {
    failure(
        FsErrorKind::Other,
        format!("session {session} is no longer held by an editor"),
    )
}

impl ClientFiles for EditorFiles {
    fn serves(&self, session: RStr<'_>) -> ClientFileOps {
        let Some(server) = self.server_of(session.as_str()) else {
            return ClientFileOps::default();
        };
        let client = lock(&server.client);
        ClientFileOps {
            read: client.fs.read_text_file,
            write: client.fs.write_text_file,
        }
    }

    fn read_text(&self, session: RStr<'_>, path: RSlice<'_, u8>) -> RResult<RString, FsError> {
        let Some(server) = self.server_of(session.as_str()) else {
            return RErr(gone(session));
        };
        let path = match path_text(&path, "read") {
            Ok(path) => path,
            Err(error) => return RErr(error),
        };
        let params = ReadTextFile {
            session_id: session.as_str(),
            path,
        };
        match server.wire.request_blocking::<_, ReadTextFileResponse>(
            session.as_str(),
            READ_TEXT_FILE,
            params,
            self.bound,
        ) {
            Ok(read) => ROk(RString::from(read.content)),
            Err(error) => RErr(call_failure(error, "read", path)),
        }
    }

    fn write_text(
        &self,
        session: RStr<'_>,
        path: RSlice<'_, u8>,
        text: RStr<'_>,
    ) -> RResult<(), FsError> {
        let Some(server) = self.server_of(session.as_str()) else {
            return RErr(gone(session));
        };
        let path = match path_text(&path, "write") {
            Ok(path) => path,
            Err(error) => return RErr(error),
        };
        let params = WriteTextFile {
            session_id: session.as_str(),
            path,
            content: text.as_str(),
        };
        // The answer is `null` or an empty object; anything readable will do.
        match server.wire.request_blocking::<_, serde::de::IgnoredAny>(
            session.as_str(),
            WRITE_TEXT_FILE,
            params,
            self.bound,
        ) {
            Ok(_) => ROk(()),
            Err(error) => RErr(call_failure(error, "write", path)),
        }
    }
}

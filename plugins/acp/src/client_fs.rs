//! The client's files for the file tools of this connection's sessions (the `client_files`
//! service), in editor mode where the row's `clientFs` asks for it: a session's text reads are
//! `fs/read_text_file` and its writes `fs/write_text_file`, each as far as the client said at
//! `initialize` that it does them. An editor answers with its buffers, saved or not, and shows
//! the agent's writes in them. A session's children (subagents) and every other session keep the
//! host's files.
//!
//! A request waits for the client's answer as a permission question does: until it answers,
//! the session's prompt is cancelled (the request is withdrawn) or stdin closes.

use std::sync::{Arc, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RSlice, RStr, RString};
use dsh_plugin_api::io::client_files::{
    CLIENT_FILES_SERVICE, ClientFileOps, ClientFiles, ClientFiles_TO,
};
use dsh_plugin_api::io::fs::{FsError, FsErrorKind};
use dsh_plugin_api::{PluginError, lock};
use serde::{Deserialize, Serialize};

use crate::server::{Mode, Server};
use crate::wire::CallError;

pub(crate) const READ_TEXT_FILE: &str = "fs/read_text_file";
pub(crate) const WRITE_TEXT_FILE: &str = "fs/write_text_file";

/// ACP's "resource not found", which a client answers for a file it does not have.
const RESOURCE_NOT_FOUND: i64 = -32002;

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
pub(crate) fn provide(server: &Arc<Server>) -> Result<(), PluginError> {
    let files = EditorFiles {
        server: Arc::downgrade(server),
    };
    server.ctx.provide(
        CLIENT_FILES_SERVICE,
        ClientFiles_TO::from_value(files, TD_Opaque),
    )
}

struct EditorFiles {
    server: Weak<Server>,
}

impl EditorFiles {
    /// The connection, while `session` is one of its sessions and it is open.
    fn server_of(&self, session: &str) -> Option<Arc<Server>> {
        let server = self.server.upgrade()?;
        let held = server.mode == Mode::Editor && server.session(session).is_some();
        (held && !server.is_closed()).then_some(server)
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

/// The client's refusal, or the wait that ended without an answer, as the tool reports it.
fn call_failure(error: CallError, verb: &str, path: &str) -> FsError {
    let kind = match &error {
        CallError::Answered(rpc) if rpc.code == RESOURCE_NOT_FOUND => FsErrorKind::NotFound,
        _ => FsErrorKind::Other,
    };
    let why = match error {
        CallError::Answered(rpc) => format!("the editor answered: {}", rpc.message),
        CallError::Withdrawn => "the prompt was cancelled".to_owned(),
        CallError::Closed => "the editor closed the connection".to_owned(),
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
        ) {
            Ok(_) => ROk(()),
            Err(error) => RErr(call_failure(error, "write", path)),
        }
    }
}

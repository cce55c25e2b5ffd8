//! The `client_files` service: the files a session's client holds, for a client that keeps
//! its own view of them (an editor over ACP, whose `fs/read_text_file` answers with a buffer's
//! unsaved text and whose `fs/write_text_file` lands in the buffer the person is looking at).
//! The file tools ask it per call, for sessions whose calls run unconfined (a sandbox's checks
//! promise that a write lands where it was checked, which a client writing in the person's own
//! process cannot): a session it serves for reading and writing reads and writes the text of
//! its files through the client, and stats, resolves and walks through `fs`. A refusal of kind
//! `Denied` (a file outside the client's project) sends the tools to `fs` for that file.
//!
//! `read_text` and `write_text` block until the client answers: call them from a blocking job
//! (`Context::blocking`), never on the runtime.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, RResult, RSlice, RStr, RString};
use abi_stable::{StableAbi, sabi_trait};

use super::fs::FsError;

/// The service key.
pub const CLIENT_FILES_SERVICE: &str = "client_files";

/// Which operations the client performs for one session.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientFileOps {
    /// Text reads go to the client.
    pub read: bool,
    /// Text writes go to the client.
    pub write: bool,
}

/// A session's files as its client holds them (see the module docs). Paths are absolute and
/// cross as their raw bytes.
#[sabi_trait]
pub trait ClientFiles: Send + Sync {
    /// What the client does for `session` (nothing for a session it does not hold).
    fn serves(&self, session: RStr<'_>) -> ClientFileOps;
    /// The whole text of `path` as the client holds it, saved or not.
    fn read_text(&self, session: RStr<'_>, path: RSlice<'_, u8>) -> RResult<RString, FsError>;
    /// Replaces the text of `path` through the client (created when absent).
    fn write_text(
        &self,
        session: RStr<'_>,
        path: RSlice<'_, u8>,
        text: RStr<'_>,
    ) -> RResult<(), FsError>;
}

/// The value registered under [`CLIENT_FILES_SERVICE`].
pub type ClientFilesService = ClientFiles_TO<'static, RBox<()>>;

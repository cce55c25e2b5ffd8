//! Plugins compiled into the host binary: the I/O services (`http`, `http_server`,
//! `subprocess`, `fs`, `fs_watch`, `postgres`) and `secret_values`; all but `fs` must run on the host's own runtime. They are exported as the library `dsh-host`
//! (rows name `dsh-host/http`, `dsh-host/subprocess`, `dsh-host/fs`), mounted by rows and
//! replaceable like any other plugin.

pub(crate) mod batched_watch;
mod fs;
mod fs_watch;
mod http;
mod http_server;
mod launcher;
mod postgres;
mod pty;
pub(crate) mod secret_values;
mod subprocess;

use std::path::PathBuf;

use dsh_plugin_api::declare;

use crate::runtime::{FileIdentity, LoadedLibrary};

/// The library name rows use for the host's own plugins.
pub const LIBRARY: &str = "dsh-host";

/// The host's plugins as a library.
pub fn library() -> LoadedLibrary {
    let path = std::env::current_exe().unwrap_or_else(|_| PathBuf::from(LIBRARY));
    LoadedLibrary {
        name: LIBRARY.to_owned(),
        path: path.clone(),
        loaded_from: path,
        identity: FileIdentity {
            len: 0,
            modified_ns: 0,
            inode: 0,
        },
        api_version: dsh_plugin_api::API_VERSION.to_owned(),
        decls: vec![
            declare::<http::HttpPlugin>(),
            declare::<http_server::HttpServerPlugin>(),
            declare::<subprocess::SubprocessPlugin>(),
            declare::<fs::FsPlugin>(),
            declare::<fs_watch::FsWatchPlugin>(),
            declare::<postgres::PostgresPlugin>(),
            declare::<secret_values::SecretValuesPlugin>(),
        ],
    }
}

pub use http::prewarm as prewarm_http;

/// The row name of the host's `http` service.
pub const HTTP_ROW: &str = "dsh-host/http";

/// Installs the process-wide TLS crypto provider (ring), once, before any HTTPS use.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

//! Seams of the host's I/O services. Plugins reach the network, processes and files
//! through these services, whose futures run on the host's runtime: a plugin's own copy of
//! tokio has no reactor (ARCHITECTURE §4).

pub mod client_files;
pub mod client_terminal;
pub mod control;
pub mod fs;
pub mod http;
pub mod http_server;
pub mod launcher;
pub mod piped;
pub mod postgres;
pub mod pty;
pub mod secrets;
pub mod subprocess;
pub mod watch;

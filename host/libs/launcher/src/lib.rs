//! `dsh-launcher`: the launcher protocol. A launcher is a small single-threaded process the
//! host starts once and then asks, over a `SOCK_SEQPACKET` socket on the launcher's
//! descriptor 3, for processes: each request ([`Request`]: arguments, environment, working
//! directory) carries four descriptors, the new process's stdin, stdout and stderr and the
//! write end of a status pipe. The launcher forks; the child puts itself in a process group of
//! its own, writes its pid on the status pipe ([`Status::Started`]) and runs the request the
//! way the launcher's program decides; when the launcher reaps it, it writes how it ended
//! ([`Status::Exited`], [`Status::Signaled`]) and closes the pipe.
//!
//! Why: on the machines we measured, an `exec` costs about a millisecond (the dynamic loader's
//! processor detection traps to the hypervisor), and every confined command paid one for the
//! sandbox's front program before paying one for itself. A fork of a small process that already
//! is that program, with the work it does once (control groups joined) done, costs a tenth of
//! it. The host keeps the stdio and status pipes, so a launched process is followed, waited for
//! and terminated as one it spawned itself.
//!
//! The host side (sending a request) is [`send`]; the launcher side is [`serve`].

mod program_path;
mod serve;
mod socket;
mod status;
mod wire;

pub use program_path::{resolve as resolve_program, search_path};
pub use serve::{Forker, Program, report_end, serve};
pub use socket::{Message, SocketError, receive, send, socket_pair};
pub use status::{STATUS_LEN, Status};
pub use wire::{Request, WireError};

/// The launcher's descriptor of its end of the request socket.
pub const SOCKET_FD: i32 = 3;

/// Descriptors a request carries, in order.
pub const STDIN: usize = 0;
pub const STDOUT: usize = 1;
pub const STDERR: usize = 2;
pub const STATUS: usize = 3;
pub const DESCRIPTORS: usize = 4;

//! Fronting bubblewrap: one process that joins the host's control groups for commands, sets the
//! resource limits (bubblewrap and everything it starts inherit them), puts each seccomp
//! program in a memory file and becomes bubblewrap with `--add-seccomp-fd` for each, which
//! bubblewrap installs (after its namespaces and mounts, with `no_new_privs`) right before it
//! starts the program. One exec in front of bubblewrap instead of one on each side of it: on
//! a slow machine an exec is a millisecond of every command.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use crate::seccomp::SocketFamily;

/// A memory file holding `bytes`, left open across `exec` and rewound, named for `/proc`.
#[allow(unsafe_code, reason = "memfd_create has no safe wrapper in std")]
fn memory_file(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let name = CString::new("dsh-seccomp").map_err(std::io::Error::other)?;
    // SAFETY: `name` is NUL-terminated and outlives the call; no flags: the descriptor must
    // survive the exec into bubblewrap.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    file.write_all(bytes)?;
    std::io::Seek::rewind(&mut file)?;
    Ok(OwnedFd::from(file))
}

/// Becomes `bwrap` with `args`, the seccomp programs refusing `denied_sockets` handed over;
/// answers only why it could not.
pub(crate) fn exec_bwrap(
    bwrap: &str,
    args: &[String],
    seccomp: bool,
    denied_sockets: &[SocketFamily],
) -> String {
    let mut argv: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    if seccomp {
        let programs = match crate::seccomp::raw_programs(denied_sockets) {
            Ok(programs) => programs,
            Err(error) => return format!("seccomp: {error}"),
        };
        for program in programs {
            match memory_file(&program) {
                Ok(fd) => {
                    argv.extend(["--add-seccomp-fd".to_owned(), fd.as_raw_fd().to_string()]);
                    kept.push(fd);
                }
                Err(error) => return format!("seccomp: a memory file: {error}"),
            }
        }
    }
    argv.extend(args.iter().cloned());
    let error = std::process::Command::new(bwrap).args(&argv).exec();
    drop(kept);
    format!("cannot run `{bwrap}`: {error}")
}

//! One request per `SOCK_SEQPACKET` message, its descriptors passed beside it
//! (`SCM_RIGHTS`). A message boundary is kept by the socket, so a request is read whole or
//! not at all.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Why a request could not be sent or received.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("sending the request: {0}")]
    Send(std::io::Error),
    #[error("receiving a request: {0}")]
    Receive(std::io::Error),
    #[error("a message came with {found} descriptors, not {expected}")]
    Descriptors { found: usize, expected: usize },
    #[error("a message can carry at most {MOST} descriptors")]
    TooMany,
}

/// A connected pair of `SOCK_SEQPACKET` sockets, both closed on exec: the host's end and the
/// launcher's, or the launcher's and a spare's.
#[allow(
    unsafe_code,
    reason = "socketpair has no safe wrapper for SOCK_SEQPACKET"
)]
pub fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors the call writes.
    let done = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A message's bytes and the descriptors that came with it.
pub type Message = (Vec<u8>, Vec<OwnedFd>);

/// Descriptors one message may carry.
const MOST: usize = 8;

/// Room for the control message of [`MOST`] descriptors, aligned as `cmsghdr` is.
#[repr(C)]
struct ControlRoom {
    _align: [libc::cmsghdr; 0],
    bytes: [u8; 64],
}

#[allow(
    unsafe_code,
    reason = "CMSG_SPACE is a const computation libc exposes as unsafe"
)]
fn control_len(count: usize) -> usize {
    let fds = std::mem::size_of::<RawFd>() * count;
    // SAFETY: CMSG_SPACE only computes a size from its argument.
    unsafe { libc::CMSG_SPACE(fds as u32) as usize }
}

/// Sends `bytes` with `fds` (one to [`MOST`]) as one message on `socket` (a blocking socket:
/// it waits for room).
#[allow(
    unsafe_code,
    reason = "sendmsg with SCM_RIGHTS has no safe wrapper in std"
)]
pub fn send(
    socket: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> Result<(), SocketError> {
    if fds.is_empty() || fds.len() > MOST {
        return Err(SocketError::TooMany);
    }
    let mut room = ControlRoom {
        _align: [],
        bytes: [0; 64],
    };
    let len = control_len(fds.len());
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: msghdr is plain data; zeroed is its empty value.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = room.bytes.as_mut_ptr().cast();
    header.msg_controllen = len as _;
    // SAFETY: `header` points at `room`, which holds `len` (at most 64) bytes, so the first
    // header and its data fit; the data is written as raw descriptors, unaligned-safe.
    unsafe {
        let control = libc::CMSG_FIRSTHDR(&header);
        (*control).cmsg_level = libc::SOL_SOCKET;
        (*control).cmsg_type = libc::SCM_RIGHTS;
        (*control).cmsg_len =
            libc::CMSG_LEN((std::mem::size_of::<RawFd>() * fds.len()) as u32) as _;
        let data = libc::CMSG_DATA(control).cast::<RawFd>();
        for (at, fd) in fds.iter().enumerate() {
            data.add(at).write_unaligned(fd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: every pointer in `header` is live for the call; the kernel only reads.
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(SocketError::Send(error));
        }
    }
}

/// The next message on `socket` and its descriptors (closed on exec), which must be
/// `expected` of them; `None` once the other end is closed.
#[allow(
    unsafe_code,
    reason = "recvmsg with SCM_RIGHTS has no safe wrapper in std"
)]
pub fn receive(socket: BorrowedFd<'_>, expected: usize) -> Result<Option<Message>, SocketError> {
    let fd = socket.as_raw_fd();
    let size = loop {
        // SAFETY: a zero-length peek writes nothing; MSG_TRUNC answers the message's length.
        let size = unsafe {
            libc::recv(
                fd,
                std::ptr::null_mut(),
                0,
                libc::MSG_PEEK | libc::MSG_TRUNC,
            )
        };
        if size >= 0 {
            break size as usize;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(SocketError::Receive(error));
        }
    };
    if size == 0 {
        return Ok(None);
    }
    let mut bytes = vec![0_u8; size];
    let mut room = ControlRoom {
        _align: [],
        bytes: [0; 64],
    };
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: size,
    };
    // SAFETY: msghdr is plain data; zeroed is its empty value.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = room.bytes.as_mut_ptr().cast();
    header.msg_controllen = room.bytes.len() as _;
    let read = loop {
        // SAFETY: the buffers `header` points at are live and as long as it says.
        let read = unsafe { libc::recvmsg(fd, &mut header, libc::MSG_CMSG_CLOEXEC) };
        if read >= 0 {
            break read as usize;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(SocketError::Receive(error));
        }
    };
    bytes.truncate(read);
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `header`'s control buffer; the macros walk it within
    // `msg_controllen`, and each SCM_RIGHTS descriptor is new and ours alone.
    unsafe {
        let mut control = libc::CMSG_FIRSTHDR(&header);
        while !control.is_null() {
            if (*control).cmsg_level == libc::SOL_SOCKET && (*control).cmsg_type == libc::SCM_RIGHTS
            {
                let data_len = (*control).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(control).cast::<RawFd>();
                for at in 0..data_len / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(at).read_unaligned()));
                }
            }
            control = libc::CMSG_NXTHDR(&header, control);
        }
    }
    if header.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() != expected {
        return Err(SocketError::Descriptors {
            found: fds.len(),
            expected,
        });
    }
    Ok(Some((bytes, fds)))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::*;
    use crate::DESCRIPTORS;

    #[test]
    fn a_message_and_its_descriptors_arrive_whole_and_a_closed_end_is_none() {
        let (host, launcher) = socket_pair().unwrap();
        let streams: Vec<(UnixStream, UnixStream)> = (0..DESCRIPTORS)
            .map(|_| UnixStream::pair().unwrap())
            .collect();
        let fds = [
            streams[0].0.as_fd(),
            streams[1].0.as_fd(),
            streams[2].0.as_fd(),
            streams[3].0.as_fd(),
        ];
        let big = vec![7_u8; 100_000];
        send(host.as_fd(), &big, &fds).unwrap();
        let (bytes, received) = receive(launcher.as_fd(), DESCRIPTORS).unwrap().unwrap();
        assert_eq!(bytes, big);
        assert_eq!(received.len(), DESCRIPTORS);
        // The third descriptor received is the third sent: what is written to it arrives.
        let mut third = std::fs::File::from(received.into_iter().nth(2).unwrap());
        third.write_all(b"hi").unwrap();
        let mut seen = [0_u8; 2];
        (&streams[2].1).read_exact(&mut seen).unwrap();
        assert_eq!(&seen, b"hi");
        drop(host);
        assert!(receive(launcher.as_fd(), DESCRIPTORS).unwrap().is_none());
    }
}

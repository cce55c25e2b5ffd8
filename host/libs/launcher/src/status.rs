//! What a status pipe carries: fixed-size messages, a tag byte and a little-endian number.
//! The launcher writes [`Status::Started`] once the child runs, and one of the others once it
//! has reaped the child (or [`Status::Failed`] alone when it could not start it), then closes
//! the pipe.

/// Bytes of one message.
pub const STATUS_LEN: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The child runs, with this pid (in the launcher's pid namespace, which is the host's).
    Started(u32),
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It could not be started: the launcher's fork failed with this `errno`.
    Failed(i32),
}

impl Status {
    pub fn encode(self) -> [u8; STATUS_LEN] {
        let (tag, number) = match self {
            Self::Started(pid) => (b'P', pid.to_le_bytes()),
            Self::Exited(code) => (b'X', code.to_le_bytes()),
            Self::Signaled(signal) => (b'S', signal.to_le_bytes()),
            Self::Failed(errno) => (b'F', errno.to_le_bytes()),
        };
        let mut bytes = [tag, 0, 0, 0, 0];
        bytes[1..].copy_from_slice(&number);
        bytes
    }

    /// `None` for a tag no launcher writes.
    pub fn decode(bytes: [u8; STATUS_LEN]) -> Option<Self> {
        let number = [bytes[1], bytes[2], bytes[3], bytes[4]];
        match bytes[0] {
            b'P' => Some(Self::Started(u32::from_le_bytes(number))),
            b'X' => Some(Self::Exited(i32::from_le_bytes(number))),
            b'S' => Some(Self::Signaled(i32::from_le_bytes(number))),
            b'F' => Some(Self::Failed(i32::from_le_bytes(number))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_survives_its_bytes_and_a_strange_tag_is_none() {
        for status in [
            Status::Started(4_000_000),
            Status::Exited(-1),
            Status::Exited(126),
            Status::Signaled(9),
            Status::Failed(11),
        ] {
            assert_eq!(Status::decode(status.encode()), Some(status));
        }
        assert_eq!(Status::decode([b'?', 0, 0, 0, 0]), None);
    }
}

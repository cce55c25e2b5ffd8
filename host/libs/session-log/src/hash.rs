//! The history hash, from `dsh-history-hash` (the one definition the log and the plugins that
//! check a request against it share).

pub(crate) use dsh_history_hash::{EMPTY_HISTORY_HASH, Fnv64, chain, write_canonical};
pub use dsh_history_hash::{message_hash, messages_hash};

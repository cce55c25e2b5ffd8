//! The session log model: an append-only, in-memory list of [`SessionEvent`]s that is the single
//! source of truth for a session, and everything that is computed from it. The event types and
//! their data are `dsh-protocol`'s (`dsh_protocol::kinds` names every type, one typed struct per
//! core event); this crate owns which types a log accepts ([`TypeRegistry`] for plugin types
//! beside the built-in [`KNOWN_EVENT_TYPES`]), the derived views ([`MessageView`]: a message
//! read in place from its logged event, no copy), lossless-JSON
//! validation at the append site ([`parse_lossless`], [`check_lossless`]), the log's rules
//! (contiguous seqs, surface ops, provenance, message shapes), the surface and the incremental
//! [`SessionLog::derive_messages`] projection with its history hash, crash-repair closers
//! ([`interrupted_turn_closers`]), seeding and [`fork`] with the `session/end-seed` marker, and the
//! read-only [`check_log`] and [`summarize`] used by `dsh-host session check` / `show`.
//!
//! It does no I/O and keeps no clock (callers stamp `time`), knows nothing of the persistence
//! format (JSONL lines, packed chunk rows, zstd frames and torn tails belong to
//! `dsh-session-jsonl`), and has no plugin boundary: the `sessions` service plugin wraps it.
//!
//! Two facts taken from the recorded logs where the prose is loose: a `replace` surface op names
//! surface nodes by their event seqs (`{start, end}` are seqs of nodes currently on the surface,
//! spanning the inclusive range of positions between them), and the crash-repair text for an
//! unknown tool outcome is byte-identical to the reference's.

mod check;
mod derive;
mod error;
mod fork;
mod frozen;
mod hash;
mod log;
mod lossless;
pub mod probe;
mod repair;
mod shape;
mod summary;
mod surface;
mod types;

pub use check::{Problem, Rule, Severity, check_log};
pub use derive::{DerivedMessages, MessageView};
pub use dsh_protocol::Role;
pub use error::{AppendError, LoadError, Violation};
// The envelope is the protocol's; the log's readers name it through this crate too.
pub use dsh_protocol::{AppendTag, ReplaceTag, SessionEvent, SurfaceOp};
pub use fork::{ForkError, SeedError, fork};
pub use hash::{message_hash, messages_hash};
pub use log::{NewEvent, Prechecked, SessionLog};
pub use lossless::{LosslessError, MAX_SAFE_INTEGER, check_lossless, parse_lossless};
pub use repair::{
    NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, closers_for,
    interrupted_turn_closers,
};
pub use summary::{LogSummary, TurnSummary, summarize};
pub use surface::DeriveStats;
pub use types::{
    KNOWN_EVENT_TYPES, RegistryError, SURFACE_EVENT_TYPES, TypeRegistry, TypeRequirement,
    is_surface_type,
};

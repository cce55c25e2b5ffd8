//! Seeding a log from existing events (resume, replay, fork) and the `session/end-seed` marker.
//!
//! Seeded history and live work are byte-identical, so a bracket left open in the seed (say a
//! `compaction/start` from a crashed run) would look exactly like one opened right now. The
//! end-seed event draws that line: openers before the last end-seed belong to an ended lifetime.

use dsh_protocol::kinds;
use std::sync::Arc;

use serde_json::json;
use thiserror::Error;

use crate::error::{AppendError, LoadError};
use crate::log::{NewEvent, SessionLog};
use crate::repair::open_turn_in;
use crate::types::TypeRegistry;
use dsh_protocol::SessionEvent;

/// A seed could not become a log.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SeedError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// A fork was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ForkError {
    #[error("fork prefix of {prefix_len} events is longer than the source log ({len} events)")]
    PrefixTooLong { prefix_len: u64, len: u64 },
    /// Refused rather than silently cut back: the caller would believe it forked at one point
    /// and get another.
    #[error(
        "fork prefix of {prefix_len} events ends inside open turn {turn} (turn/start at seq {turn_start_seq})"
    )]
    OpenTurn {
        prefix_len: u64,
        turn: u64,
        turn_start_seq: u64,
    },
    #[error(transparent)]
    Seed(#[from] SeedError),
}

/// Seeds a child log from the source's first `prefix_len` events (seqs `[0, prefix_len)`), then
/// marks the seed's end. The reference's `fork(source, boundary)` takes an inclusive seq: its
/// boundary `b` is `prefix_len = b + 1`. The child shares the source's events (no copies) and
/// its registry; `time` stamps the end-seed.
pub fn fork(source: &SessionLog, prefix_len: u64, time: i64) -> Result<SessionLog, ForkError> {
    let len = source.next_seq();
    let prefix = usize::try_from(prefix_len)
        .ok()
        .and_then(|n| source.events().get(..n))
        .ok_or(ForkError::PrefixTooLong { prefix_len, len })?;
    if let Some((turn, turn_start_seq)) = open_turn_in(prefix) {
        return Err(ForkError::OpenTurn {
            prefix_len,
            turn,
            turn_start_seq,
        });
    }
    let mut child =
        SessionLog::adopt(prefix, Arc::clone(source.registry())).map_err(SeedError::from)?;
    child.mark_end_seed(time).map_err(SeedError::from)?;
    Ok(child)
}

impl SessionLog {
    /// Loads a seed (replay, resume of a live-closed log) and marks its end, per REFERENCE §2
    /// rule 5: `session/end-seed` is appended unless the seed already ends with one, so reopening
    /// an untouched session does not grow it; an empty seed gets it at seq 0.
    pub fn from_seed<I, E>(
        seed: I,
        registry: Arc<TypeRegistry>,
        time: i64,
    ) -> Result<Self, SeedError>
    where
        I: IntoIterator<Item = E>,
        E: Into<Arc<SessionEvent>>,
    {
        let mut log = Self::from_events(seed, registry)?;
        log.mark_end_seed(time)?;
        Ok(log)
    }

    /// Cold resume: loads a stored log, closes an interrupted tail turn (crash repair), then marks
    /// the seed's end. Returns the log and how many closers were appended.
    pub fn resume_cold<I, E>(
        stored: I,
        registry: Arc<TypeRegistry>,
        time: i64,
    ) -> Result<(Self, usize), SeedError>
    where
        I: IntoIterator<Item = E>,
        E: Into<Arc<SessionEvent>>,
    {
        let mut log = Self::from_events(stored, registry)?;
        let repaired = log.repair_interrupted()?.len();
        log.mark_end_seed(time)?;
        Ok((log, repaired))
    }

    /// Appends `session/end-seed` unless the log already ends with one. Only seeding writes it;
    /// a live session never does.
    pub fn mark_end_seed(&mut self, time: i64) -> Result<Option<Arc<SessionEvent>>, AppendError> {
        if self
            .last()
            .is_some_and(|e| e.kind == kinds::SESSION_END_SEED)
        {
            return Ok(None);
        }
        self.append(NewEvent::new(kinds::SESSION_END_SEED, json!({}), time))
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SurfaceOp;

    fn log_with_two_turns() -> SessionLog {
        let mut log = SessionLog::default();
        for turn in 1..=2 {
            log.append(NewEvent::new("turn/start", json!({"turn": turn}), 1))
                .unwrap();
            log.append(NewEvent::surface(
                "user/message",
                json!({"id": format!("u{turn}"), "role":"user","source":{"kind":"user"},
                       "content":[{"type":"text","text":"hi"}]}),
                SurfaceOp::append(),
                1,
            ))
            .unwrap();
            log.append(NewEvent::new(
                "turn/end",
                json!({"turn": turn, "reason":{"kind":"completed"}}),
                1,
            ))
            .unwrap();
        }
        log
    }

    #[test]
    fn fork_shares_events_and_appends_end_seed() {
        let source = log_with_two_turns();
        let child = fork(&source, 3, 42).unwrap();
        assert_eq!(child.len(), 4);
        assert!(
            Arc::ptr_eq(&child.events()[1], &source.events()[1]),
            "events are shared"
        );
        let seed_end = &child.events()[3];
        assert_eq!(
            (seed_end.kind.as_str(), seed_end.seq, seed_end.time),
            ("session/end-seed", 3, 42)
        );
        assert_eq!(child.last_end_seed(), Some(3));
        assert_eq!(child.derive_messages().len(), 1);
        // Forking the child at its full length does not mark twice.
        let grandchild = fork(&child, 4, 43).unwrap();
        assert_eq!(grandchild.len(), 4);
    }

    #[test]
    fn fork_refuses_a_prefix_inside_an_open_turn_and_naming_it() {
        let source = log_with_two_turns();
        let err = fork(&source, 5, 0).unwrap_err();
        assert_eq!(
            err,
            ForkError::OpenTurn {
                prefix_len: 5,
                turn: 2,
                turn_start_seq: 3
            }
        );
        assert!(err.to_string().contains("open turn 2"), "{err}");
        assert!(matches!(
            fork(&source, 7, 0),
            Err(ForkError::PrefixTooLong { len: 6, .. })
        ));
        // Ending right after a turn/end, or between turns, is fine.
        assert!(fork(&source, 6, 0).is_ok());
    }

    #[test]
    fn openers_before_the_last_end_seed_are_stale_and_later_ones_live() {
        let mut log = SessionLog::default();
        let opener = log.append(NewEvent::new(
            "compaction/start",
            json!({"compactionId": "a", "turn": null}),
            0,
        ));
        let opener = opener.unwrap().seq;
        assert!(!log.is_stale_opener(opener), "no end-seed yet: a live lock");
        let mut resumed =
            SessionLog::from_seed(log.events().iter().cloned(), Arc::clone(log.registry()), 1)
                .unwrap();
        assert!(
            resumed.is_stale_opener(opener),
            "crashed run's lock is dead after resume"
        );
        let live = resumed.append(NewEvent::new(
            "compaction/start",
            json!({"compactionId": "b", "turn": null}),
            2,
        ));
        assert!(!resumed.is_stale_opener(live.unwrap().seq));
    }

    #[test]
    fn empty_seed_writes_end_seed_at_zero() {
        let empty = fork(&SessionLog::default(), 0, 5).unwrap();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty.events()[0].kind, "session/end-seed");
        assert_eq!(empty.events()[0].seq, 0);
        let seeded =
            SessionLog::from_seed(Vec::<SessionEvent>::new(), Arc::new(TypeRegistry::new()), 5)
                .unwrap();
        assert_eq!(seeded.events()[0].kind, "session/end-seed");
    }

    #[test]
    fn seed_already_ending_with_end_seed_is_not_remarked() {
        let source = fork(&log_with_two_turns(), 6, 9).unwrap();
        let events: Vec<SessionEvent> = source.events().iter().map(|e| (**e).clone()).collect();
        let reopened = SessionLog::from_seed(events, Arc::clone(source.registry()), 10).unwrap();
        assert_eq!(reopened.len(), source.len());
    }
}

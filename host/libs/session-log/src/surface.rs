//! The surface (ordered seqs of the model-visible events) and the derived history kept in step
//! with it.
//!
//! Validation (`plan`) never mutates, so a refused event leaves everything as it was; `commit`
//! applies a plan that was validated against the same state. The derived history is maintained
//! eagerly on commit: an append projects one message, a replace re-places the messages from the
//! replaced position on (their projections are reused, never recomputed).

use dsh_protocol::kinds;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::derive::{DerivedMessages, MessageView, project};
use crate::error::Violation;
use crate::frozen::FrozenList;
use crate::hash::{EMPTY_HISTORY_HASH, chain};
use crate::types::is_surface_type;
use dsh_protocol::SessionEvent;

/// Work done maintaining derived history, for tests and diagnostics: the cost of keeping
/// `derive_messages()` current must track what changed, not the log length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeriveStats {
    /// Surface events projected into messages (each at most once, when committed).
    pub projected: u64,
    /// Messages placed into the derived list, including ones re-placed after a replace.
    pub placed: u64,
}

/// How a validated event changes the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    NotSurface,
    Append,
    /// Replace the inclusive span of surface positions.
    Replace {
        start_pos: usize,
        end_pos: usize,
    },
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Projection {
    /// Surface nodes: seqs in model-visible order.
    seqs: Vec<u64>,
    /// Per node: how many derived messages come before it.
    msgs_before: Vec<usize>,
    /// Per node: whether it derives a message (an empty assistant message does not).
    emits: Vec<bool>,
    generation: u64,
    messages: FrozenList<MessageView>,
    /// `prefix_hashes[i]` = history hash of `messages[..=i]`.
    prefix_hashes: Vec<u64>,
    stats: DeriveStats,
}

impl Projection {
    pub(crate) fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn stats(&self) -> DeriveStats {
        self.stats
    }

    pub(crate) fn hash(&self) -> u64 {
        self.prefix_hashes
            .last()
            .copied()
            .unwrap_or(EMPTY_HISTORY_HASH)
    }

    pub(crate) fn derived(&self) -> DerivedMessages {
        DerivedMessages::new(self.messages.clone(), self.hash())
    }

    /// Checks the surface rules for `event` (whose seq is already known to be next) against the
    /// current surface; `events` is the log so far (for the tool-result rewrite rule).
    pub(crate) fn plan(
        &self,
        event: &SessionEvent,
        events: &[Arc<SessionEvent>],
    ) -> Result<Plan, Violation> {
        if !is_surface_type(&event.kind) {
            if event.surface_op.is_some() {
                return Err(Violation::SurfaceOpNotAllowed {
                    kind: event.kind.clone(),
                });
            }
            if event.source_event_seqs.is_some() {
                return Err(Violation::SourcesNotAllowed {
                    kind: event.kind.clone(),
                });
            }
            return Ok(Plan::NotSurface);
        }
        let Some(op) = &event.surface_op else {
            return Err(Violation::SurfaceOpMissing {
                kind: event.kind.clone(),
            });
        };
        let Some((start, end)) = op.replace_span() else {
            check_sources(event, &[])?;
            return Ok(Plan::Append);
        };
        // Search from the back: replaces (compaction, tool-result rewrites) usually target recent
        // nodes, and the rebuild after a replace costs as much as the scan anyway.
        let find = |seq: u64, which| {
            self.seqs
                .iter()
                .rposition(|s| *s == seq)
                .ok_or(Violation::ReplaceNotOnSurface { which, seq })
        };
        let start_pos = find(start, "start")?;
        let end_pos = find(end, "end")?;
        if start_pos > end_pos {
            return Err(Violation::ReplaceReversed {
                start,
                end,
                start_pos,
                end_pos,
            });
        }
        let shadowed = &self.seqs[start_pos..=end_pos];
        check_sources(event, shadowed)?;
        if event.kind == kinds::TOOL_RESULT {
            check_tool_result_rewrite(event, shadowed, events)?;
        }
        Ok(Plan::Replace { start_pos, end_pos })
    }

    pub(crate) fn commit(&mut self, event: &Arc<SessionEvent>, plan: Plan) {
        match plan {
            Plan::NotSurface => {}
            Plan::Append => {
                let message = self.project(event);
                self.seqs.push(event.seq);
                self.msgs_before.push(self.messages.len());
                self.emits.push(message.is_some());
                if let Some(m) = message {
                    self.place(m);
                }
            }
            Plan::Replace { start_pos, end_pos } => self.replace(event, start_pos, end_pos),
        }
    }

    fn project(&mut self, event: &Arc<SessionEvent>) -> Option<MessageView> {
        self.stats.projected += 1;
        project(event)
    }

    fn place(&mut self, message: MessageView) {
        let hash = chain(self.hash(), message.hash());
        self.prefix_hashes.push(hash);
        self.messages.push(message);
        self.stats.placed += 1;
    }

    fn replace(&mut self, event: &Arc<SessionEvent>, start_pos: usize, end_pos: usize) {
        let cut = self
            .msgs_before
            .get(start_pos)
            .copied()
            .unwrap_or(self.messages.len());
        let tail_from = self
            .msgs_before
            .get(end_pos + 1)
            .copied()
            .unwrap_or(self.messages.len());
        let tail: Vec<MessageView> = self.messages.iter_from(tail_from).cloned().collect();

        let repushed = self.messages.truncate(cut);
        self.stats.placed += repushed as u64;
        self.prefix_hashes.truncate(cut);

        let message = self.project(event);
        self.seqs.splice(start_pos..=end_pos, [event.seq]);
        self.emits.splice(start_pos..=end_pos, [message.is_some()]);
        self.msgs_before.truncate(start_pos);
        if let Some(m) = message {
            self.place(m);
        }
        for m in tail {
            self.place(m);
        }
        // Re-number the nodes from the replaced position on.
        let mut before = cut;
        for emits in &self.emits[start_pos..] {
            self.msgs_before.push(before);
            before += usize::from(*emits);
        }
        self.generation += 1;
    }
}

fn check_sources(event: &SessionEvent, shadowed: &[u64]) -> Result<(), Violation> {
    let mut cited = HashSet::new();
    if let Some(sources) = &event.source_event_seqs {
        if sources.is_empty() && event.kind != kinds::ASSISTANT_MESSAGE {
            return Err(Violation::EmptySources);
        }
        for &source_seq in sources {
            if source_seq >= event.seq {
                return Err(Violation::SourceNotEarlier { source_seq });
            }
            if !cited.insert(source_seq) {
                return Err(Violation::DuplicateSource { source_seq });
            }
        }
    }
    let missing: Vec<u64> = shadowed
        .iter()
        .copied()
        .filter(|s| !cited.contains(s))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Violation::ReplaceMissingSources { missing })
    }
}

/// A tool result may be replaced only by a rewrite of one current tool result that changes
/// nothing but the result block's content (e.g. spilling a large output to a file reference).
fn check_tool_result_rewrite(
    event: &SessionEvent,
    shadowed: &[u64],
    events: &[Arc<SessionEvent>],
) -> Result<(), Violation> {
    let [original_seq] = shadowed else {
        return Err(Violation::ToolResultRewrite {
            reason: "must rewrite exactly one surface node",
        });
    };
    let original = usize::try_from(*original_seq)
        .ok()
        .and_then(|i| events.get(i));
    let Some(original) = original.filter(|o| o.kind == kinds::TOOL_RESULT) else {
        return Err(Violation::ToolResultRewrite {
            reason: "must target a current tool/result",
        });
    };
    if without_result_content(&original.data) != without_result_content(&event.data) {
        return Err(Violation::ToolResultRewrite {
            reason: "may change only the result content",
        });
    }
    Ok(())
}

fn without_result_content(data: &Value) -> Value {
    let mut data = data.clone();
    if let Some(block) = data
        .pointer_mut("/message/content/0")
        .and_then(Value::as_object_mut)
    {
        block.insert("content".into(), Value::Null);
    }
    data
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{NewEvent, SessionLog, SurfaceOp};

    fn user(log: &mut SessionLog, i: u64) -> u64 {
        let data = json!({"id": format!("u{i}"), "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": format!("m{i}")}]});
        log.append(NewEvent::surface(
            "user/message",
            data,
            SurfaceOp::append(),
            0,
        ))
        .unwrap()
        .seq
    }

    #[test]
    fn derive_work_tracks_what_changed_not_the_log_length() {
        let mut log = SessionLog::default();
        let seqs: Vec<u64> = (0..1000).map(|i| user(&mut log, i)).collect();
        for _ in 0..1000 {
            log.append(NewEvent::new("todo/write", json!({"todos": []}), 0))
                .unwrap();
        }
        let before = log.derive_stats();
        assert_eq!(
            (before.projected, before.placed),
            (1000, 1000),
            "each message projected once"
        );

        // Reading derived history does no projection work, however often.
        for _ in 0..10 {
            assert_eq!(log.derive_messages().len(), 1000);
        }
        assert_eq!(log.derive_stats(), before);

        // One more message: one projection, one placement (not 1001).
        user(&mut log, 1000);
        let after = log.derive_stats();
        assert_eq!(
            (
                after.projected - before.projected,
                after.placed - before.placed
            ),
            (1, 1)
        );
        // Log-only events cost nothing here.
        log.append(NewEvent::new("plan/mode", json!({"active": false}), 0))
            .unwrap();
        assert_eq!(log.derive_stats(), after);

        // A replace near the end re-places only what follows the cut: the summary, the two
        // messages after the span, and the kept part of the frozen-list chunk the cut falls in
        // (1001 = 512+256+128+64+32+8+1, so position 996 is 4 into the 8-chunk).
        let (start, end) = (seqs[996], seqs[998]);
        let data = json!({"id": "s", "role": "user", "source": {"kind": "plugin", "plugin": "compact"},
            "content": [{"type": "text", "text": "summary"}]});
        log.append(
            NewEvent::surface("user/message", data, SurfaceOp::replace(start, end), 0)
                .with_sources(vec![seqs[996], seqs[997], seqs[998]]),
        )
        .unwrap();
        let replaced = log.derive_stats();
        assert_eq!(
            replaced.projected - after.projected,
            1,
            "only the summary is projected"
        );
        let placed = replaced.placed - after.placed;
        assert_eq!(placed, 1 + 2 + 4);
        assert_eq!(log.derive_messages().len(), 1001 - 3 + 1);

        // A replace at the front rebuilds from there: proportional to the tail, as documented.
        let data = json!({"id": "s0", "role": "user", "source": {"kind": "plugin", "plugin": "compact"},
            "content": [{"type": "text", "text": "summary"}]});
        log.append(
            NewEvent::surface(
                "user/message",
                data,
                SurfaceOp::replace(seqs[0], seqs[0]),
                0,
            )
            .with_sources(vec![seqs[0]]),
        )
        .unwrap();
        let front = log.derive_stats();
        assert_eq!(front.projected - replaced.projected, 1);
        assert_eq!(front.placed - replaced.placed, 999);
    }
}

//! The tool-result pruner: an old tool result over `over` code points is shown to the model
//! as its head, a marker and its tail (the reference's 8,192 → 4,096 + marker + 1,024) through
//! a `replace` of that result in place, preceded by `compaction/prune`; the whole result stays
//! in the log. A result is old once `after` assistant messages follow it, and results are
//! pruned in batches (once the estimated saving reaches `batch` tokens), because each rewrite
//! breaks the provider's cached prefix from that point on.

use abi_stable::std_types::{ROption, RVec};
use dsh_plugin_api::Serialize;
use dsh_protocol::kinds;
use dsh_protocol::{ContentBlock, ShadowedRange, SurfaceOp};
use dsh_sessions_seam::{NewEventRecord, SessionBox};
use serde_json::Value;

use crate::plan::{Node, NodeKind};

/// The pruner's rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pruning {
    pub(crate) over: usize,
    pub(crate) head: usize,
    pub(crate) tail: usize,
    pub(crate) after: usize,
    pub(crate) batch: u64,
}

/// A logged event's data, untouched.
#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Logged {
    data: Value,
}

/// `compaction/prune`: the price of the replace that follows it.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct PruneEvent {
    shadowed_range: ShadowedRange,
    shadowed_seqs: Vec<u64>,
    shadowed_token_count: u64,
}

/// The results old and long enough to prune, when together they save a batch's worth.
pub(crate) fn due(nodes: &[Node], rule: &Pruning) -> Vec<u64> {
    // A result's tokens are estimated from its logged text: four bytes each.
    let long = (rule.over / 4) as u64;
    let kept = ((rule.head + rule.tail) / 4) as u64;
    let mut newer_answers = 0;
    let mut due = Vec::new();
    let mut saving = 0;
    for node in nodes.iter().rev() {
        match node.kind {
            NodeKind::Assistant => newer_answers += 1,
            NodeKind::ToolResult if newer_answers >= rule.after && node.tokens > long => {
                due.push(node.seq);
                saving += node.tokens.saturating_sub(kept);
            }
            _ => {}
        }
    }
    if saving < rule.batch {
        return Vec::new();
    }
    due.reverse();
    due
}

/// `text` cut to its head, a marker and its tail when it is over the limit (code points).
pub(crate) fn cut(text: &str, rule: &Pruning) -> Option<String> {
    let count = text.chars().count();
    if count <= rule.over {
        return None;
    }
    let head: String = text.chars().take(rule.head).collect();
    let tail: String = text.chars().skip(count - rule.tail).collect();
    let dropped = count - rule.head - rule.tail;
    Some(format!(
        "{head}\n[… {dropped} characters of this old tool result are not shown; the whole result stays in the session log …]\n{tail}"
    ))
}

/// The prune batch for results `seqs` of `session`: per result, `compaction/prune` then the
/// in-place rewrite of its content.
pub(crate) fn batch(session: &SessionBox, seqs: &[u64], rule: &Pruning) -> Vec<NewEventRecord> {
    let mut records = Vec::new();
    for &seq in seqs {
        let Some(original) = session.events(seq, seq + 1).into_iter().next() else {
            continue;
        };
        // The data is kept as logged, all but the result's content: the log checks that a
        // rewrite changes nothing else.
        let Ok(Logged { mut data }) = serde_json::from_str::<Logged>(&original.json) else {
            continue;
        };
        let Some(slot) = data.pointer_mut("/message/content/0/content") else {
            continue;
        };
        let Ok(mut blocks) = serde_json::from_value::<Vec<ContentBlock>>(slot.take()) else {
            continue;
        };
        let mut changed = false;
        for block in &mut blocks {
            if let ContentBlock::Text { text } = block
                && let Some(shorter) = cut(text, rule)
            {
                *text = shorter;
                changed = true;
            }
        }
        let Ok(content) = serde_json::to_value(&blocks) else {
            continue;
        };
        *slot = content;
        if !changed {
            continue;
        }
        let price = PruneEvent {
            shadowed_range: ShadowedRange {
                start: seq,
                end: seq,
            },
            shadowed_seqs: vec![seq],
            shadowed_token_count: (original.json.len() as u64).div_ceil(4),
        };
        records.push(NewEventRecord::plugin(kinds::COMPACTION_PRUNE, &price));
        let mut rewrite = NewEventRecord::plugin(kinds::TOOL_RESULT, &data)
            .with_surface(SurfaceOp::replace(seq, seq));
        rewrite.source_event_seqs = ROption::RSome(RVec::from(vec![seq]));
        records.push(rewrite);
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Pruning = Pruning {
        over: 8_192,
        head: 4_096,
        tail: 1_024,
        after: 2,
        batch: 1_000,
    };

    #[test]
    fn a_long_text_keeps_its_head_and_tail_around_a_marker() {
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let cut = cut(&text, &RULE).unwrap();
        assert!(cut.starts_with(&text[..4_096]) && cut.ends_with(&text[10_000 - 1_024..]));
        assert!(cut.contains("4880 characters of this old tool result are not shown"));
        assert_eq!(super::cut("short", &RULE), None);
    }

    #[test]
    fn only_old_long_results_are_due_and_only_in_a_batch() {
        let node = |seq, kind, tokens| Node { seq, kind, tokens };
        let nodes = [
            node(1, NodeKind::ToolResult, 5_000),
            node(2, NodeKind::Assistant, 10),
            node(3, NodeKind::ToolResult, 5_000),
            node(4, NodeKind::Assistant, 10),
            node(5, NodeKind::ToolResult, 5_000),
        ];
        // Result 5 is the newest; result 3 has one answer after it: only result 1 is old.
        assert_eq!(due(&nodes, &RULE), vec![1]);
        let stingy = Pruning {
            batch: 10_000,
            ..RULE
        };
        assert!(due(&nodes, &stingy).is_empty());
    }
}

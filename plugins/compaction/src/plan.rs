//! Which span to compact: the surface's oldest nodes, leaving a tail of about `keep` tokens
//! verbatim, never splitting a tool call from its result (the tail never starts with a tool
//! result). Pure, on token estimates.

/// What a surface node is, for the boundary rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    User,
    Assistant,
    ToolResult,
}

/// One node of the surface: its event seq, its kind and its estimated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) seq: u64,
    pub(crate) kind: NodeKind,
    pub(crate) tokens: u64,
}

/// The span to replace: node indexes `0..=end`, and how many nodes stay verbatim after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) end: usize,
    pub(crate) tail: usize,
}

/// The span whose replacement leaves at least `keep` tokens (or everything but the shadowed
/// part) verbatim; `None` when nothing can be shadowed without splitting a call from its
/// result or leaving nothing to summarize.
pub(crate) fn span(nodes: &[Node], keep: u64) -> Option<Span> {
    let mut tail_tokens = 0;
    let mut boundary = nodes.len();
    while boundary > 0 && tail_tokens < keep {
        boundary -= 1;
        tail_tokens += nodes[boundary].tokens;
    }
    // A tail that starts with a tool result would separate it from its call: keep more.
    while boundary > 0
        && nodes
            .get(boundary)
            .is_some_and(|node| node.kind == NodeKind::ToolResult)
    {
        boundary -= 1;
    }
    (boundary > 0).then(|| Span {
        end: boundary - 1,
        tail: nodes.len() - boundary,
    })
}

/// A text's estimated tokens: about four bytes each, at least one.
pub(crate) fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(seq: u64, kind: NodeKind, tokens: u64) -> Node {
        Node { seq, kind, tokens }
    }

    #[test]
    fn the_tail_keeps_about_keep_tokens_and_never_starts_with_a_result() {
        use NodeKind::*;
        let nodes = [
            node(4, User, 500),
            node(8, Assistant, 50),
            node(9, ToolResult, 800),
            node(13, Assistant, 50),
            node(14, ToolResult, 300),
        ];
        // 300 tokens of tail would start at the result 14: its call 13 stays with it.
        assert_eq!(span(&nodes, 300), Some(Span { end: 2, tail: 2 }));
        // A tail of 1,000 reaches back to the result 9, so its call 8 stays too.
        assert_eq!(span(&nodes, 1_000), Some(Span { end: 0, tail: 4 }));
        // Everything would stay: nothing to compact.
        assert_eq!(span(&nodes, 10_000), None);
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate(""), 1);
        assert_eq!(estimate("abcde"), 2);
    }
}

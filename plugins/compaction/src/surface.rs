//! The model-visible surface of a live session, rebuilt from its log: each node's seq, kind,
//! message and estimated tokens, in order (appends add a node, a replace swaps a span of nodes
//! for one), plus what the latest request logged (its header and the model's context window)
//! and the provider's token count for it. [`Trackers`] keeps one per session up to date event
//! by event, so the check before every step costs what was logged since the last one; it
//! estimates appended nodes from their logged text without parsing them.

use dsh_protocol::kinds;
use std::collections::HashMap;
use std::sync::Mutex;

use dsh_plugin_api::lock;
use dsh_protocol::{
    AssistantChunkEvent, Message, RequestContextEvent, RequestHeader, RequestHeaderEvent,
    StreamChunk, SurfaceOp, TokenMeter,
};
use dsh_sessions_seam::{EventRecord, SessionBox};

use crate::plan::{Node, NodeKind, estimate};

/// What compaction reads of a session.
#[derive(Default)]
pub(crate) struct Surface {
    pub(crate) nodes: Vec<Node>,
    /// The nodes' messages, when they are kept (a compaction needs them, the check does not).
    pub(crate) messages: Vec<Message>,
    keep_messages: bool,
    /// The latest `request/header`.
    pub(crate) header: Option<RequestHeader>,
    header_tokens: u64,
    /// The latest `request/context`'s window.
    pub(crate) context_window: Option<u64>,
    /// The sum of the nodes' estimates.
    total: u64,
    /// The provider's input + output tokens of the latest answered request, and the sum of
    /// the estimates of the nodes it covered.
    measured: Option<(u64, u64)>,
    /// A usage chunk not yet paired with its assistant message.
    pending_usage: Option<u64>,
    /// The cache hits the latest usage chunk reported.
    cache_hits: Option<u64>,
    read_up_to: u64,
}

impl Surface {
    /// The tokens the next request would carry: the provider's count of the last one plus an
    /// estimate of what was appended since, or an estimate of everything when no count came.
    pub(crate) fn tokens(&self) -> u64 {
        match self.measured {
            Some((counted, covered)) => counted + self.total.saturating_sub(covered),
            None => self.header_tokens + self.total,
        }
    }

    /// The meter: what the next request carries, of which what the provider counted.
    fn meter(&self, window: Option<u64>) -> TokenMeter {
        let tokens = self.tokens();
        let measured = self.measured.map(|(counted, _)| counted);
        TokenMeter {
            tokens,
            measured,
            estimated_since: tokens.saturating_sub(measured.unwrap_or(0)),
            window: window.or(self.context_window),
            cache_hit_tokens: self.cache_hits,
        }
    }

    /// Folds in the events of `session` logged since the last call.
    fn catch_up(&mut self, session: &SessionBox) {
        let count = session.event_count();
        if count > self.read_up_to {
            for record in session.events(self.read_up_to, count).iter() {
                self.apply(record);
            }
            self.read_up_to = count;
        }
    }

    fn apply(&mut self, record: &EventRecord) {
        match record.kind.as_str() {
            kinds::REQUEST_HEADER => {
                if let Some(Ok(event)) = record.decode::<RequestHeaderEvent>() {
                    self.header_tokens = estimate(event.header.system.as_deref().unwrap_or(""))
                        + estimate(&serde_json::to_string(&event.header.tools).unwrap_or_default());
                    self.header = Some(event.header);
                }
                return;
            }
            kinds::REQUEST_CONTEXT => {
                if let Some(Ok(event)) = record.decode::<RequestContextEvent>() {
                    self.context_window = event.context_window.or(self.context_window);
                }
                return;
            }
            kinds::ASSISTANT_CHUNK => {
                // Most chunks are text or call deltas: only a usage chunk is read.
                if record.json.contains("\"usage\"")
                    && let Some(Ok(event)) = record.decode::<AssistantChunkEvent>()
                    && let StreamChunk::Usage { usage } = event.chunk
                {
                    self.pending_usage = Some(usage.input_tokens + usage.output_tokens);
                    self.cache_hits = usage.cache_read_tokens;
                }
                return;
            }
            _ => {}
        }
        let Some(kind) = node_kind(record.kind.as_str()) else {
            return;
        };
        if !self.keep_messages && !record.json.contains("\"replace\"") {
            // The check before each step: an append, estimated from its logged text, unparsed.
            let tokens = estimate(&record.json);
            self.total += tokens;
            self.nodes.push(Node {
                seq: record.seq,
                kind,
                tokens,
            });
            self.pair_usage(kind);
            return;
        }
        let read = match kind {
            NodeKind::User => serde_json::from_str::<Logged<Message>>(&record.json)
                .map(|line| (line.data, line.surface_op)),
            _ => serde_json::from_str::<Logged<Wrapped>>(&record.json)
                .map(|line| (line.data.message, line.surface_op)),
        };
        let Ok((message, op)) = read else {
            return;
        };
        // One estimator for the check and the plan (the logged text), so what a compaction
        // keeps is what the next check counts.
        let tokens = estimate(&record.json);
        let node = Node {
            seq: record.seq,
            kind,
            tokens,
        };
        match op.and_then(|op| op.replace_span()) {
            Some((start, end)) => {
                let at = |seq: u64| self.nodes.iter().rposition(|node| node.seq == seq);
                if let (Some(from), Some(to)) = (at(start), at(end))
                    && from <= to
                {
                    let gone: u64 = self.nodes[from..=to].iter().map(|node| node.tokens).sum();
                    self.total = self.total - gone + tokens;
                    self.nodes.splice(from..=to, [node]);
                    if self.keep_messages {
                        self.messages.splice(from..=to, [message]);
                    }
                    // The provider's count was of the surface before the replace.
                    self.measured = None;
                }
            }
            None => {
                self.total += tokens;
                self.nodes.push(node);
                if self.keep_messages {
                    self.messages.push(message);
                }
            }
        }
        self.pair_usage(kind);
    }

    /// An assistant message closes the request its usage counted: the surface up to here.
    fn pair_usage(&mut self, kind: NodeKind) {
        if kind == NodeKind::Assistant
            && let Some(counted) = self.pending_usage.take()
        {
            self.measured = Some((counted, self.total));
        }
    }
}

/// A logged surface event, as far as the surface needs it.
#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Logged<D> {
    data: D,
    #[serde(rename = "surfaceOp", default)]
    surface_op: Option<SurfaceOp>,
}

/// The data of `assistant/message` and `tool/result`: the message they carry.
#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Wrapped {
    message: Message,
}

fn node_kind(kind: &str) -> Option<NodeKind> {
    match kind {
        kinds::USER_MESSAGE => Some(NodeKind::User),
        kinds::ASSISTANT_MESSAGE => Some(NodeKind::Assistant),
        kinds::TOOL_RESULT => Some(NodeKind::ToolResult),
        _ => None,
    }
}

/// Reads the whole surface of `session`, messages included (for a compaction).
pub(crate) fn read(session: &SessionBox) -> Surface {
    let mut surface = Surface {
        keep_messages: true,
        ..Surface::default()
    };
    surface.catch_up(session);
    surface
}

/// One incrementally kept surface (without messages) per session.
#[derive(Default)]
pub(crate) struct Trackers(Mutex<HashMap<String, Surface>>);

impl Trackers {
    /// The estimated tokens of `session`'s next request and its window, when it is known.
    pub(crate) fn pressure(&self, session: &SessionBox, window: Option<u64>) -> Option<(u64, u64)> {
        let mut all = lock(&self.0);
        let surface = all.entry(session.id().to_string()).or_default();
        surface.catch_up(session);
        let window = window.or(surface.context_window)?;
        Some((surface.tokens(), window))
    }

    /// The token meter of `session`.
    pub(crate) fn meter(&self, session: &SessionBox, window: Option<u64>) -> TokenMeter {
        let mut all = lock(&self.0);
        let surface = all.entry(session.id().to_string()).or_default();
        surface.catch_up(session);
        surface.meter(window)
    }

    /// Forgets a session that left the registry.
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.0).remove(session);
    }

    /// The results of `session` the pruner should rewrite now.
    pub(crate) fn prunable(&self, session: &SessionBox, rule: &crate::prune::Pruning) -> Vec<u64> {
        let mut all = lock(&self.0);
        let surface = all.entry(session.id().to_string()).or_default();
        surface.catch_up(session);
        crate::prune::due(&surface.nodes, rule)
    }

    /// The surface of `session` for a compaction: the kept nodes and header, with the
    /// messages read from the session's own derived history (one per node), so a compaction
    /// costs the size of the surface, not of the whole log. A history that does not line up
    /// with the nodes is read again from the log.
    pub(crate) fn for_compaction(&self, session: &SessionBox) -> Surface {
        let (nodes, header, context_window) = {
            let mut all = lock(&self.0);
            let surface = all.entry(session.id().to_string()).or_default();
            surface.catch_up(session);
            (
                surface.nodes.clone(),
                surface.header.clone(),
                surface.context_window,
            )
        };
        let view = session.derive_messages();
        let messages: Vec<Message> = (0..view.message_count())
            .filter_map(|index| view.message(index).into_option())
            .filter_map(|message| message.decode().ok())
            .collect();
        if messages.len() != nodes.len() {
            return read(session);
        }
        Surface {
            nodes,
            messages,
            header,
            context_window,
            ..Surface::default()
        }
    }
}

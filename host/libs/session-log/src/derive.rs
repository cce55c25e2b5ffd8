//! Derived model history: the messages the surface projects, shared with the log's events.

use dsh_protocol::kinds;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::frozen::FrozenList;
use crate::hash::{EMPTY_HISTORY_HASH, Fnv64, write_canonical};
use dsh_protocol::{Role, SessionEvent};

/// One derived message, as a view of its committed event (no copy of the content): it
/// serializes as `{role, content, source}`, with `content` exactly as logged. Its role is the
/// vocabulary's: tool results are user-role messages (adapters turn their single tool-result
/// block into the provider's tool role). Reading it as a [`dsh_protocol::Message`] copies.
#[derive(Debug, Clone)]
pub struct MessageView {
    event: Arc<SessionEvent>,
    hash: u64,
}

static NULL: Value = Value::Null;

impl MessageView {
    /// Seq of the surface event this message projects.
    pub fn seq(&self) -> u64 {
        self.event.seq
    }

    pub fn role(&self) -> Role {
        if self.event.kind == kinds::ASSISTANT_MESSAGE {
            Role::Assistant
        } else {
            Role::User
        }
    }

    /// The logged message object (`data` for `user/message`, `data.message` otherwise).
    pub fn logged(&self) -> &Value {
        match self.event.kind.as_str() {
            kinds::USER_MESSAGE => &self.event.data,
            _ => self.event.data.get("message").unwrap_or(&NULL),
        }
    }

    /// The content blocks, exactly as logged.
    pub fn content(&self) -> &[Value] {
        self.content_value().as_array().map_or(&[], Vec::as_slice)
    }

    /// The logged `content` member itself (what serializing and hashing the view write).
    fn content_value(&self) -> &Value {
        self.logged().get("content").unwrap_or(&NULL)
    }

    /// The message source (provenance: user, plugin, model with provider/model/replayState, tool).
    pub fn source(&self) -> &Value {
        self.logged().get("source").unwrap_or(&NULL)
    }

    /// The logged message id.
    pub fn id(&self) -> Option<&str> {
        self.logged().get("id").and_then(Value::as_str)
    }

    /// The committed event (shared, not copied).
    pub fn event(&self) -> &Arc<SessionEvent> {
        &self.event
    }

    /// FNV-1a of this message's canonical JSON (see the `hash` rules in the crate docs).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// `{role, content, source}` as a JSON value (copies; prefer serializing the message).
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "role": self.role().as_str(),
            "content": self.content_value().clone(),
            "source": self.source().clone(),
        })
    }
}

impl PartialEq for MessageView {
    /// Messages are equal when they would serialize identically.
    fn eq(&self, other: &Self) -> bool {
        self.role() == other.role()
            && self.content_value() == other.content_value()
            && self.source() == other.source()
    }
}

impl Serialize for MessageView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("role", self.role().as_str())?;
        map.serialize_entry("content", self.content_value())?;
        map.serialize_entry("source", self.source())?;
        map.end()
    }
}

/// Projects one event (REFERENCE §2 deriveMessages rules). `None` for non-message types and for
/// an assistant message with empty content (it only hosts a max-tokens step's usage; an empty
/// assistant turn would be rejected by providers).
pub(crate) fn project(event: &Arc<SessionEvent>) -> Option<MessageView> {
    if !matches!(
        event.kind.as_str(),
        kinds::USER_MESSAGE | kinds::TOOL_RESULT | kinds::ASSISTANT_MESSAGE
    ) {
        return None;
    }
    let mut message = MessageView {
        event: Arc::clone(event),
        hash: 0,
    };
    if message.role() == Role::Assistant && message.content().is_empty() {
        return None;
    }
    message.hash = canonical_hash(&message);
    Some(message)
}

/// The canonical JSON of `{content, role, source}` (keys already in sorted order), hashed without
/// building the object.
fn canonical_hash(message: &MessageView) -> u64 {
    let mut h = Fnv64::new();
    h.feed(b"{\"content\":");
    write_canonical(&mut h, message.content_value());
    h.feed(b",\"role\":\"");
    h.feed(message.role().as_str().as_bytes());
    h.feed(b"\",\"source\":");
    write_canonical(&mut h, message.source());
    h.feed(b"}");
    h.finish()
}

/// A snapshot of the derived history. Cheap to take and to clone (O(log n) handles), immutable:
/// later appends to the log never change a snapshot already handed out.
#[derive(Debug, Clone)]
pub struct DerivedMessages {
    list: FrozenList<MessageView>,
    hash: u64,
}

impl Default for DerivedMessages {
    fn default() -> Self {
        Self {
            list: FrozenList::default(),
            hash: EMPTY_HISTORY_HASH,
        }
    }
}

impl DerivedMessages {
    pub(crate) fn new(list: FrozenList<MessageView>, hash: u64) -> Self {
        Self { list, hash }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.len() == 0
    }

    pub fn get(&self, index: usize) -> Option<&MessageView> {
        self.list.get(index)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &MessageView> + '_ {
        self.list.iter()
    }

    /// The history hash of these messages (equals `messages_hash` over their JSON values).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The messages as JSON values (copies).
    pub fn to_values(&self) -> Vec<Value> {
        self.iter().map(MessageView::to_value).collect()
    }
}

impl<'a> IntoIterator for &'a DerivedMessages {
    type Item = &'a MessageView;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a MessageView> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl Serialize for DerivedMessages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for m in self.iter() {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::message_hash;
    use serde_json::json;

    fn ev(kind: &str, data: Value) -> Arc<SessionEvent> {
        Arc::new(SessionEvent {
            kind: kind.into(),
            seq: 7,
            time: 0,
            data,
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        })
    }

    #[test]
    fn projection_rules_per_type() {
        let user = ev(
            "user/message",
            json!({"id":"u","role":"user","source":{"kind":"plugin","plugin":"x"},
                   "content":[{"type":"text","text":"<ctx>hi</ctx>"}]}),
        );
        let m = project(&user).unwrap();
        assert_eq!(m.role(), Role::User);
        assert_eq!(m.seq(), 7);
        assert_eq!(m.id(), Some("u"));
        // Exact content: nothing wrapped, nothing dropped.
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role":"user","content":[{"type":"text","text":"<ctx>hi</ctx>"}],
                   "source":{"kind":"plugin","plugin":"x"}})
        );
        let asst = |content: Value| {
            ev(
                "assistant/message",
                json!({"turn":1,"step":1,"message":{"id":"a","role":"assistant",
                "source":{"kind":"model","provider":"p","model":"m","replayState":{"k":1}},
                "content":content}}),
            )
        };
        assert!(
            project(&asst(json!([]))).is_none(),
            "empty assistant content never projects"
        );
        let a = project(&asst(json!([{"type":"text","text":"ok"}]))).unwrap();
        assert_eq!(a.role(), Role::Assistant);
        assert_eq!(a.source()["replayState"], json!({"k":1}), "provenance kept");
        let tr = ev(
            "tool/result",
            json!({"turn":1,"step":1,"message":{"id":"t","role":"user",
            "source":{"kind":"tool","callId":"c"},
            "content":[{"type":"tool-result","toolCallId":"c","content":[]}]}}),
        );
        let t = project(&tr).unwrap();
        assert_eq!(t.role(), Role::User);
        assert_eq!(t.content().len(), 1);
        assert!(project(&ev("assistant/chunk", json!({}))).is_none());
        assert!(project(&ev("turn/start", json!({"turn":1}))).is_none());
    }

    #[test]
    fn message_hash_equals_hash_of_its_serialized_value() {
        let user = ev(
            "user/message",
            json!({"id":"u","role":"user","source":{"kind":"user","z":1,"a":2},
            "content":[{"type":"text","text":"é\"\u{1}"}]}),
        );
        let m = project(&user).unwrap();
        assert_eq!(m.hash(), message_hash(&serde_json::to_value(&m).unwrap()));
        assert_eq!(m.hash(), message_hash(&m.to_value()));
    }
}

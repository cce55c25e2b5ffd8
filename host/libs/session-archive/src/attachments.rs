//! The attachments a log refers to: image blocks name them as `sha256:<hex>` (an
//! `attachmentId`, wherever the block sits: a message, a tool result, a nested result), and the
//! attachment store keeps each one's bytes at `<store>/v1/objects/<first two hex>/<hex>` (the
//! layout of the `attachments` plugin's store: written once, never changed).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The prefix of every attachment id.
const PREFIX: &str = "sha256:";

/// The hex of an attachment id, when it is one (64 lower-case hex digits): nothing else ever
/// becomes a path.
pub(crate) fn attachment_hex(id: &str) -> Option<&str> {
    let hex = id.strip_prefix(PREFIX)?;
    let valid = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    valid.then_some(hex)
}

/// The file of attachment `id` in the store at `dir`, when `id` is an attachment id.
pub fn attachment_file(dir: &Path, id: &str) -> Option<PathBuf> {
    attachment_hex(id).map(|hex| dir.join("v1").join("objects").join(&hex[..2]).join(hex))
}

/// Every attachment id named under an `attachmentId` key in `value`, added to `found`.
fn collect(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("attachmentId", Value::String(id)) if id.starts_with(PREFIX) => {
                        found.insert(id.clone());
                    }
                    _ => collect(inner, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, found)),
        _ => {}
    }
}

/// The attachment ids the events' data refer to, sorted, each once.
pub fn attachment_ids<'a>(data: impl IntoIterator<Item = &'a Value>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for value in data {
        collect(value, &mut found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_found_at_any_depth_and_only_hex_ones_become_paths() {
        let hex = "ab".repeat(32);
        let data = json!({"content": [{"type": "tool-result", "content": [
            {"type": "image", "attachment": {"attachmentId": format!("sha256:{hex}")}}
        ]}, {"type": "image", "attachment": {"attachmentId": "sha256:../../etc"}}]});
        let ids = attachment_ids([&data]);
        assert_eq!(ids.len(), 2);
        let dir = Path::new("/store");
        assert_eq!(
            attachment_file(dir, &format!("sha256:{hex}")),
            Some(dir.join("v1/objects/ab").join(&hex))
        );
        assert_eq!(attachment_file(dir, "sha256:../../etc"), None);
    }
}

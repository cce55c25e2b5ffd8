//! The header line (line 0 of every log, alone in zstd frame 1).
//!
//! Parsing is by hand rather than by serde derive so that the checks are exactly the reference's
//! (plus type checks it leaves implicit), `null` never silently becomes "absent", and a foreign
//! version is refused from the raw value before any of today's shape rules run: a future format
//! need not look like v0, and its user must read "upgrade", not "corrupt".

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{ReadError, VersionDirection};

/// The only format version this crate reads and writes.
pub const SESSION_FORMAT_VERSION: u32 = 0;

/// Largest integer a JS number holds exactly; the reference refuses anything beyond it.
pub(crate) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A session's immutable metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHeader {
    pub version: u32,
    pub id: String,
    /// Epoch milliseconds; never negative.
    pub created_at: i64,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    pub seed_length: Option<u64>,
    /// `Some("subagent")` or absent.
    pub origin: Option<String>,
    /// Required on disk; 0 for a top-level session.
    pub delegation_depth: u64,
    pub agent_preset: Option<String>,
}

/// The on-disk spelling: `type` first, optional fields omitted (never null), key order as the
/// reference writes it.
#[derive(Serialize)]
struct HeaderLineOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    version: u32,
    id: &'a str,
    #[serde(rename = "createdAt")]
    created_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(rename = "parentSession", skip_serializing_if = "Option::is_none")]
    parent_session: Option<&'a str>,
    #[serde(rename = "seedLength", skip_serializing_if = "Option::is_none")]
    seed_length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<&'a str>,
    #[serde(rename = "delegationDepth")]
    delegation_depth: u64,
    #[serde(rename = "agentPreset", skip_serializing_if = "Option::is_none")]
    agent_preset: Option<&'a str>,
}

impl SessionHeader {
    /// A top-level v0 header with no optional fields.
    pub fn new(id: impl Into<String>, created_at: i64) -> Self {
        SessionHeader {
            version: SESSION_FORMAT_VERSION,
            id: id.into(),
            created_at,
            cwd: None,
            parent_session: None,
            seed_length: None,
            origin: None,
            delegation_depth: 0,
            agent_preset: None,
        }
    }

    /// The header line without its newline.
    /// Parses a header line handed over by another component (`source` names it in errors).
    pub fn parse(source: &str, line: &str) -> Result<Self, ReadError> {
        parse_header_line(Path::new(source), line.as_bytes(), false)
    }

    pub fn to_line(&self) -> String {
        let out = HeaderLineOut {
            kind: "session",
            version: self.version,
            id: &self.id,
            created_at: self.created_at,
            cwd: self.cwd.as_deref(),
            parent_session: self.parent_session.as_deref(),
            seed_length: self.seed_length,
            origin: self.origin.as_deref(),
            delegation_depth: self.delegation_depth,
            agent_preset: self.agent_preset.as_deref(),
        };
        // A struct of strings and integers always serializes; the fallback only keeps the
        // signature infallible without an unwrap.
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// Why this header must not be written, if it must not.
    pub(crate) fn write_problem(&self) -> Option<String> {
        if self.version != SESSION_FORMAT_VERSION {
            return Some(format!(
                "this writer writes only format v{SESSION_FORMAT_VERSION}"
            ));
        }
        if self.id.is_empty() {
            return Some("empty session id".to_owned());
        }
        if self.created_at < 0 || self.created_at.unsigned_abs() > MAX_SAFE_INTEGER {
            return Some("createdAt must be a non-negative safe integer".to_owned());
        }
        if self.delegation_depth > MAX_SAFE_INTEGER {
            return Some("delegationDepth must be a safe integer".to_owned());
        }
        if self.origin.as_deref().is_some_and(|o| o != "subagent") {
            return Some("origin must be \"subagent\" or absent".to_owned());
        }
        None
    }
}

fn safe_non_negative(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// Refuse a numeric version other than ours; a missing or non-numeric one is left to the shape
/// check (it is not a header of any version).
fn refuse_foreign_version(path: &Path, value: &Value) -> Result<(), ReadError> {
    let Some(obj) = value.as_object() else {
        return Ok(());
    };
    let Some(Value::Number(version)) = obj.get("version") else {
        return Ok(());
    };
    let ours = f64::from(SESSION_FORMAT_VERSION);
    let Some(found) = version.as_f64() else {
        return Ok(());
    };
    if found == ours {
        return Ok(());
    }
    let id = match obj.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "undefined".to_owned(),
    };
    let direction = if found > ours {
        VersionDirection::Newer
    } else {
        VersionDirection::Older
    };
    Err(ReadError::UnsupportedVersion {
        path: path.to_owned(),
        id,
        found: version.to_string(),
        direction,
    })
}

/// A header field that must be a string when present is something else.
#[derive(Debug, thiserror::Error)]
#[error("{0} must be a string when present")]
struct NotAString(String);

fn optional_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, NotAString> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(NotAString(key.to_owned())),
    }
}

/// Parse the header line (without its newline). `allow_foreign` lets listing show a session of
/// another version whose header still has the v0 shape; reading never allows it.
pub(crate) fn parse_header_line(
    path: &Path,
    line: &[u8],
    allow_foreign: bool,
) -> Result<SessionHeader, ReadError> {
    let bad = |reason: String| ReadError::BadHeader {
        path: path.to_owned(),
        reason,
    };
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| bad(format!("header line is not valid JSON: {e}")))?;
    if !allow_foreign {
        refuse_foreign_version(path, &value)?;
    }
    let obj = value
        .as_object()
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("session"))
        .ok_or_else(|| ReadError::MissingHeader {
            path: path.to_owned(),
            reason: "first record is not a session header",
        })?;
    if obj.contains_key("sandboxMode") || obj.contains_key("approvalPolicy") {
        return Err(ReadError::LegacyHeader {
            path: path.to_owned(),
        });
    }
    let version = match obj.get("version") {
        Some(v) if v.as_f64() == Some(f64::from(SESSION_FORMAT_VERSION)) => SESSION_FORMAT_VERSION,
        Some(v) if allow_foreign => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad("version must be a small non-negative integer".to_owned()))?,
        _ => return Err(bad("version must be a number".to_owned())),
    };
    let id = match obj.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(bad("id must be a string".to_owned())),
    };
    let created_at = obj
        .get("createdAt")
        .and_then(safe_non_negative)
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| bad("createdAt must be a non-negative safe integer".to_owned()))?;
    let delegation_depth = obj
        .get("delegationDepth")
        .and_then(safe_non_negative)
        .ok_or_else(|| bad("delegationDepth must be a non-negative safe integer".to_owned()))?;
    let origin = optional_string(obj, "origin").map_err(|e| bad(e.to_string()))?;
    if origin.as_deref().is_some_and(|o| o != "subagent") {
        return Err(bad("origin must be \"subagent\" when present".to_owned()));
    }
    let seed_length = match obj.get("seedLength") {
        None => None,
        Some(v) => Some(
            safe_non_negative(v)
                .ok_or_else(|| bad("seedLength must be a non-negative integer".to_owned()))?,
        ),
    };
    Ok(SessionHeader {
        version,
        id,
        created_at,
        cwd: optional_string(obj, "cwd").map_err(|e| bad(e.to_string()))?,
        parent_session: optional_string(obj, "parentSession").map_err(|e| bad(e.to_string()))?,
        seed_length,
        origin,
        delegation_depth,
        agent_preset: optional_string(obj, "agentPreset").map_err(|e| bad(e.to_string()))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<SessionHeader, ReadError> {
        parse_header_line(Path::new("/x/session.jsonl"), line.as_bytes(), false)
    }

    #[test]
    fn writes_reference_key_order() {
        let mut h = SessionHeader::new("c1", 5);
        h.cwd = Some("/w".into());
        h.parent_session = Some("p".into());
        h.seed_length = Some(3);
        h.origin = Some("subagent".into());
        h.delegation_depth = 1;
        h.agent_preset = Some("plan".into());
        let line = h.to_line();
        assert_eq!(
            line,
            r#"{"type":"session","version":0,"id":"c1","createdAt":5,"cwd":"/w","parentSession":"p","seedLength":3,"origin":"subagent","delegationDepth":1,"agentPreset":"plan"}"#
        );
        assert_eq!(parse(&line).unwrap(), h);
        let plain = SessionHeader::new("a", 0).to_line();
        assert_eq!(
            plain,
            r#"{"type":"session","version":0,"id":"a","createdAt":0,"delegationDepth":0}"#
        );
    }

    #[test]
    fn refuses_foreign_versions_first_with_direction() {
        // Not even a v0 shape: the version refusal still comes first.
        let e = parse(r#"{"version":3,"id":"s"}"#).unwrap_err();
        match &e {
            ReadError::UnsupportedVersion {
                direction,
                found,
                id,
                ..
            } => {
                assert_eq!(*direction, VersionDirection::Newer);
                assert_eq!(found, "3");
                assert_eq!(id, "s");
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("upgrade dsh"), "{e}");
        assert!(e.to_string().contains("/x/session.jsonl"), "{e}");
        let e =
            parse(r#"{"type":"session","version":-1,"id":"s","createdAt":0,"delegationDepth":0}"#)
                .unwrap_err();
        assert!(matches!(
            e,
            ReadError::UnsupportedVersion {
                direction: VersionDirection::Older,
                ..
            }
        ));
        assert!(e.to_string().contains("older than this reader"), "{e}");
    }

    #[test]
    fn refuses_bad_headers() {
        let legacy = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"sandboxMode":"x"}"#;
        assert!(matches!(parse(legacy), Err(ReadError::LegacyHeader { .. })));
        let legacy = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"approvalPolicy":"never"}"#;
        assert!(matches!(parse(legacy), Err(ReadError::LegacyHeader { .. })));
        for bad in [
            r#"{"type":"session","version":0,"id":"s","createdAt":0}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":-1,"delegationDepth":0}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":1.5,"delegationDepth":0}"#,
            r#"{"type":"session","version":0,"id":1,"createdAt":0,"delegationDepth":0}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"origin":"x"}"#,
            r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"cwd":null}"#,
            r#"{"type":"session","id":"s","createdAt":0,"delegationDepth":0}"#,
            "not json",
        ] {
            assert!(
                matches!(parse(bad), Err(ReadError::BadHeader { .. })),
                "{bad}"
            );
        }
        let event = r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#;
        assert!(matches!(parse(event), Err(ReadError::MissingHeader { .. })));
    }

    #[test]
    fn listing_may_show_foreign_versions() {
        let line = br#"{"type":"session","version":2,"id":"s","createdAt":0,"delegationDepth":0}"#;
        let h = parse_header_line(Path::new("p"), line, true).unwrap();
        assert_eq!(h.version, 2);
    }
}

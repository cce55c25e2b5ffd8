//! The header line (line 0 of every log, alone in zstd frame 1).
//!
//! The line is read into [`HeaderLine`], whose fields keep each member as written (`null` apart
//! from absent), and checked field by field, so the checks are exactly the reference's (plus type
//! checks it leaves implicit), each with its own message, `null` never silently becomes
//! "absent", and a foreign version is refused before any of today's shape rules run: a future
//! format need not look like v0, and its user must read "upgrade", not "corrupt".

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

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

/// The members of a header line as written. Each is raw JSON because a wrong kind is a problem
/// to name, not a parse failure; members a header never has are skipped.
#[derive(Debug, Default, Deserialize)]
struct HeaderLine {
    #[serde(rename = "type", default, deserialize_with = "present")]
    kind: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    version: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(rename = "createdAt", default, deserialize_with = "present")]
    created_at: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    cwd: Option<Value>,
    #[serde(rename = "parentSession", default, deserialize_with = "present")]
    parent_session: Option<Value>,
    #[serde(rename = "seedLength", default, deserialize_with = "present")]
    seed_length: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    origin: Option<Value>,
    #[serde(rename = "delegationDepth", default, deserialize_with = "present")]
    delegation_depth: Option<Value>,
    #[serde(rename = "agentPreset", default, deserialize_with = "present")]
    agent_preset: Option<Value>,
    /// Only in pre-v0 headers (refused as legacy).
    #[serde(rename = "sandboxMode", default, deserialize_with = "present")]
    sandbox_mode: Option<Value>,
    /// Only in pre-v0 headers (refused as legacy).
    #[serde(rename = "approvalPolicy", default, deserialize_with = "present")]
    approval_policy: Option<Value>,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl HeaderLine {
    /// The members of a JSON object; `None` for any other value (no header of any version).
    fn of(value: Value) -> Option<Self> {
        match value {
            // Every field takes any JSON value, so reading an object cannot fail.
            Value::Object(members) => Self::deserialize(Value::Object(members)).ok(),
            _ => None,
        }
    }
}

fn safe_non_negative(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// Refuse a numeric version other than ours; a missing or non-numeric one is left to the shape
/// check (it is not a header of any version).
fn refuse_foreign_version(path: &Path, line: &HeaderLine) -> Result<(), ReadError> {
    let Some(Value::Number(version)) = &line.version else {
        return Ok(());
    };
    let ours = f64::from(SESSION_FORMAT_VERSION);
    let Some(found) = version.as_f64() else {
        return Ok(());
    };
    if found == ours {
        return Ok(());
    }
    let id = match &line.id {
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
struct NotAString(&'static str);

fn optional_string(value: Option<Value>, key: &'static str) -> Result<Option<String>, NotAString> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(NotAString(key)),
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
    let fields = HeaderLine::of(value);
    if !allow_foreign && let Some(fields) = &fields {
        refuse_foreign_version(path, fields)?;
    }
    let line = fields
        .filter(|line| line.kind.as_ref().and_then(Value::as_str) == Some("session"))
        .ok_or_else(|| ReadError::MissingHeader {
            path: path.to_owned(),
            reason: "first record is not a session header",
        })?;
    if line.sandbox_mode.is_some() || line.approval_policy.is_some() {
        return Err(ReadError::LegacyHeader {
            path: path.to_owned(),
        });
    }
    let version = match &line.version {
        Some(v) if v.as_f64() == Some(f64::from(SESSION_FORMAT_VERSION)) => SESSION_FORMAT_VERSION,
        Some(v) if allow_foreign => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad("version must be a small non-negative integer".to_owned()))?,
        _ => return Err(bad("version must be a number".to_owned())),
    };
    let id = match line.id {
        Some(Value::String(s)) => s,
        _ => return Err(bad("id must be a string".to_owned())),
    };
    let created_at = line
        .created_at
        .as_ref()
        .and_then(safe_non_negative)
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| bad("createdAt must be a non-negative safe integer".to_owned()))?;
    let delegation_depth = line
        .delegation_depth
        .as_ref()
        .and_then(safe_non_negative)
        .ok_or_else(|| bad("delegationDepth must be a non-negative safe integer".to_owned()))?;
    let origin = optional_string(line.origin, "origin").map_err(|e| bad(e.to_string()))?;
    if origin.as_deref().is_some_and(|o| o != "subagent") {
        return Err(bad("origin must be \"subagent\" when present".to_owned()));
    }
    let seed_length = match &line.seed_length {
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
        cwd: optional_string(line.cwd, "cwd").map_err(|e| bad(e.to_string()))?,
        parent_session: optional_string(line.parent_session, "parentSession")
            .map_err(|e| bad(e.to_string()))?,
        seed_length,
        origin,
        delegation_depth,
        agent_preset: optional_string(line.agent_preset, "agentPreset")
            .map_err(|e| bad(e.to_string()))?,
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
        // `null` is not "absent": the member is named.
        let e = parse(
            r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"agentPreset":null}"#,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("agentPreset must be a string when present"),
            "{e}"
        );
        let e = parse(r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0,"seedLength":null}"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("seedLength must be a non-negative integer"),
            "{e}"
        );
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

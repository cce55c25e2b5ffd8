//! The reference's normalization of an ACP transcript (`normalize.ts`): every line JSON, ids
//! renumbered 1, 2, ... by first sight (one map for both directions), the run's working
//! directory `{{cwd}}` (at path boundaries, longest spelling first), its session ids and any
//! UUID `{{sessionId}}`, and a spilled result's notice with `{{spillLocator:<name>}}`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

/// What a transcript's volatile values are: the working directory (every spelling of it) and
/// the session ids the run issued.
pub struct Volatile {
    pub cwd: Vec<String>,
    pub session_ids: Vec<String>,
}

impl Volatile {
    /// `cwd` and its real path.
    pub fn of(cwd: &Path, session_ids: Vec<String>) -> Self {
        let mut spellings = vec![cwd.display().to_string()];
        if let Ok(real) = cwd.canonicalize() {
            spellings.push(real.display().to_string());
        }
        spellings.sort_by_key(|spelling| std::cmp::Reverse(spelling.len()));
        spellings.dedup();
        Self {
            cwd: spellings,
            session_ids,
        }
    }
}

/// The reference's normalization of a stdout transcript; `Err` names a line that is not JSON.
pub fn normalize_stdout(lines: &[String], volatile: &Volatile) -> Result<Vec<Value>, String> {
    let mut ids: HashMap<String, i64> = HashMap::new();
    let mut frames = Vec::new();
    for line in lines.iter().filter(|line| !line.trim().is_empty()) {
        let mut frame: Value = serde_json::from_str(line)
            .map_err(|error| format!("stdout line is not JSON ({error}): {line}"))?;
        if let Some(id) = frame.get("id").filter(|id| !id.is_null()) {
            let next = i64::try_from(ids.len()).unwrap() + 1;
            let number = *ids.entry(id.to_string()).or_insert(next);
            frame["id"] = json!(number);
        }
        scrub(&mut frame, volatile);
        frames.push(frame);
    }
    Ok(frames)
}

fn scrub(value: &mut Value, volatile: &Volatile) {
    match value {
        Value::String(text) => *text = scrub_text(text, volatile),
        Value::Array(items) => items.iter_mut().for_each(|item| scrub(item, volatile)),
        Value::Object(members) => members.values_mut().for_each(|item| scrub(item, volatile)),
        _ => {}
    }
}

/// Whether `c` may stand beside a path in text.
fn boundary(c: Option<char>) -> bool {
    c.is_none_or(|c| c.is_whitespace() || "<>'\"`()[]{},;:!?=/\\.".contains(c))
}

/// One text with the run's volatile values as the transcript's placeholders, and a spilled
/// result's notice as `normalize.ts` reads it (`{{spillLocator:<name>}}`).
pub fn scrub_line(text: &str, volatile: &Volatile) -> String {
    spilled(&scrub_text(text, volatile))
}

/// A spilled result names a file whose path differs between runs, and its preview's length
/// follows that path's: its first and last 16 characters are kept, the byte count and the
/// path are placeholders.
fn spilled(text: &str) -> String {
    const STORED: &str = " Full formatted result stored at: ";
    const HINT: &str = ". Use read with offset/limit";
    let Some(at) = text.find("\n\n(Omitted ") else {
        return text.to_owned();
    };
    let (preview, notice) = text.split_at(at);
    let (Some(stored), Some(hint)) = (notice.find(STORED), notice.find(HINT)) else {
        return text.to_owned();
    };
    let path = &notice[stored + STORED.len()..hint];
    if path.starts_with("{{spillLocator:") {
        return text.to_owned();
    }
    let file = path.rsplit('/').next().unwrap_or_default();
    let name = file.split_once('-').map_or(file, |(_, name)| name);
    let chars: Vec<char> = preview.chars().collect();
    let head: String = chars.iter().take(16).collect();
    let tail: String = chars[chars.len().saturating_sub(16)..].iter().collect();
    format!(
        "{head}…{tail}\n\n(Omitted {{{{n}}}} bytes.{STORED}{{{{spillLocator:{name}}}}}{}",
        &notice[hint..]
    )
}

fn scrub_text(text: &str, volatile: &Volatile) -> String {
    let mut out = text.to_owned();
    for spelling in &volatile.cwd {
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(spelling.as_str()) {
            let before = match at {
                0 => result.chars().last(),
                _ => rest[..at].chars().last(),
            };
            let after = rest[at + spelling.len()..].chars().next();
            result.push_str(&rest[..at]);
            if boundary(before) && boundary(after) {
                result.push_str("{{cwd}}");
            } else {
                result.push_str(spelling);
            }
            rest = &rest[at + spelling.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    for id in &volatile.session_ids {
        out = out.replace(id.as_str(), "{{sessionId}}");
    }
    replace_uuids(&out)
}

/// Any UUID (8-4-4-4-12 hex digits) as `{{sessionId}}`.
fn replace_uuids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let is_uuid_at = |start: usize| {
        let mut at = start;
        for (index, len) in SHAPE.iter().enumerate() {
            if index > 0 {
                if bytes.get(at) != Some(&b'-') {
                    return false;
                }
                at += 1;
            }
            for _ in 0..*len {
                if !bytes.get(at).is_some_and(u8::is_ascii_hexdigit) {
                    return false;
                }
                at += 1;
            }
        }
        true
    };
    let mut out = String::new();
    let mut at = 0;
    while at < bytes.len() {
        if text.is_char_boundary(at) && is_uuid_at(at) {
            out.push_str("{{sessionId}}");
            at += 36;
            continue;
        }
        let c = text[at..].chars().next().unwrap();
        out.push(c);
        at += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_renumber_and_volatile_text_is_scrubbed() {
        let volatile = Volatile {
            cwd: vec!["/home/u/w".to_owned()],
            session_ids: vec!["s-1".to_owned()],
        };
        let lines = vec![
            r#"{"id":0,"result":{"sessionId":"s-1","cwd":"/home/u/w/a","other":"/home/u/wx"}}"#.to_owned(),
            r#"{"id":0,"method":"session/request_permission","params":{"u":"a7c3e1f2-1111-4222-8333-123456789abc"}}"#.to_owned(),
            r#"{"id":1,"result":{}}"#.to_owned(),
        ];
        let frames = normalize_stdout(&lines, &volatile).unwrap();
        assert_eq!(frames[0]["id"], 1);
        assert_eq!(frames[1]["id"], 1);
        assert_eq!(frames[2]["id"], 2);
        assert_eq!(frames[0]["result"]["sessionId"], "{{sessionId}}");
        assert_eq!(frames[0]["result"]["cwd"], "{{cwd}}/a");
        assert_eq!(frames[0]["result"]["other"], "/home/u/wx");
        assert_eq!(frames[1]["params"]["u"], "{{sessionId}}");
        assert!(normalize_stdout(&["log line".to_owned()], &volatile).is_err());
    }

    #[test]
    fn a_spill_notice_keeps_its_shape_not_its_path() {
        let volatile = Volatile {
            cwd: Vec::new(),
            session_ids: Vec::new(),
        };
        let ours = "0123456789abcdefXXXX0123456789abcdef\n\n(Omitted 14 bytes. Full formatted result stored at: /h/spill/session-0/0f6738b2d871-bash.txt. Use read with offset/limit.)";
        let theirs = "0123456789abcdefXX0123456789abcdef\n\n(Omitted 9 bytes. Full formatted result stored at: /var/snap/session-5/2ce9d7a31a38-bash.txt. Use read with offset/limit.)";
        assert_eq!(scrub_line(ours, &volatile), scrub_line(theirs, &volatile));
        assert!(scrub_line(ours, &volatile).contains("{{spillLocator:bash.txt}}"));
    }
}

//! The catalog: what the model is told of the skills it may load, as a user-role
//! `<system-reminder>` logged in the session under the `skill-catalog` source (form `catalog`,
//! its `entries` the names and descriptions it lists, `update: true` on a replacement), as the
//! reference logs it. It is appended, never written into the system prompt: the first one
//! before the first request that has skills to offer, a whole replacement after it only when
//! the entries changed (an emptied catalog says so, so the model stops using old names), and
//! again when a compaction summarized the last one away. Whether it changed is read from the
//! log (the newest catalog message still visible), so a resumed session does not repeat it.
//! The model sees it only while the `skill` tool is in its scope's view.

use std::collections::HashMap;
use std::sync::Mutex;

use dsh_plugin_api::lock;
use dsh_plugin_api::serde::{Deserialize, Serialize};
use dsh_protocol::{
    CompactionSummaryEvent, MessageSource, PromptContext, PromptRequest, UserMessageEvent,
};
use dsh_sessions_seam::SessionBox;

use crate::discover::Discovery;

/// The key the loop files the catalog under.
pub(crate) const KEY: &str = "skill-catalog";

/// One skill as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) description: String,
}

/// The `skill-catalog` source, as it is logged.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct CatalogSource {
    kind: String,
    form: String,
    entries: Vec<Entry>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    update: bool,
}

/// `description` on one line, at most `max` characters (an ellipsis marks a cut).
fn normalize(description: &str, max: usize) -> String {
    let line = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let kept: String = line.chars().take(max.saturating_sub(3)).collect();
    format!("{}...", kept.trim_end())
}

/// `text` safe inside the catalog's (and a `<skill_content>` block's) markup.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The entries of the skills the model may load, by name.
pub(crate) fn entries(found: &Discovery, max: usize) -> Vec<Entry> {
    found
        .skills
        .iter()
        .filter(|skill| skill.model_invocable)
        .map(|skill| Entry {
            name: skill.name.clone(),
            description: normalize(&skill.description, max),
        })
        .collect()
}

/// The catalog message's text.
pub(crate) fn render(entries: &[Entry], update: bool) -> String {
    let mut text = String::from("<system-reminder>\n");
    if entries.is_empty() {
        text.push_str(
            "No skills are available in this session any more. Do not load a skill named in an \
             earlier list.\n",
        );
    } else {
        text.push_str(match update {
            true => "The skills available in this session changed; this list replaces every earlier one:\n",
            false => "Skills are task-specific instructions, loaded when needed. These can be loaded in this session:\n",
        });
        text.push_str("\n<available_skills>\n");
        for entry in entries {
            text.push_str(&format!(
                "- `{}`: {}\n",
                entry.name,
                escape(&entry.description)
            ));
        }
        text.push_str("</available_skills>\n\n");
        text.push_str(
            "When the user names one of these skills, or the task fits a skill's description, \
             load it with the `skill` tool (its exact name) before you act on the task; load \
             every skill that applies and follow its instructions. The list only summarizes: \
             do not guess at a skill's instructions before it is loaded.\n",
        );
    }
    text.push_str(
        "When the user runs a skill themselves, its <skill_content> block appears in the \
         conversation: follow it, without loading that skill again.\n</system-reminder>",
    );
    text
}

/// What the log says of the last catalog.
#[derive(Debug, Default)]
struct Seen {
    /// Events read so far.
    read: u64,
    /// The seq and entries of the newest catalog message.
    last: Option<(u64, Vec<Entry>)>,
    /// That message was summarized away.
    shadowed: bool,
}

impl Seen {
    /// Reads the events logged since the last call.
    fn catch_up(&mut self, session: &SessionBox) {
        let count = session.event_count();
        if count < self.read {
            *self = Self::default();
        }
        for record in session.events(self.read, count).iter() {
            if let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>()
                && let MessageSource::Other(value) = message.source
                && let Ok(source) = serde_json::from_value::<CatalogSource>(value)
                && source.kind == KEY
            {
                self.last = Some((record.seq, source.entries));
                self.shadowed = false;
            } else if let Some(Ok(summary)) = record.decode::<CompactionSummaryEvent>()
                && let Some((seq, _)) = &self.last
                && summary.shadowed_seqs.contains(seq)
            {
                self.shadowed = true;
            }
        }
        self.read = count;
    }
}

/// The catalog to append to each session, when it changed.
#[derive(Default)]
pub(crate) struct Catalogs {
    sessions: Mutex<HashMap<String, Seen>>,
}

impl Catalogs {
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.sessions).remove(session);
    }

    /// The catalog message `request`'s session needs now, if any: `current` is what the model
    /// may load (`None`: the look was incomplete, so the last catalog stands).
    pub(crate) fn due(
        &self,
        request: &PromptRequest,
        session: &SessionBox,
        current: Option<Vec<Entry>>,
    ) -> Option<PromptContext> {
        let current = current?;
        let mut sessions = lock(&self.sessions);
        let seen = sessions.entry(request.session.clone()).or_default();
        seen.catch_up(session);
        let update = match &seen.last {
            Some((_, entries)) if !seen.shadowed && *entries == current => return None,
            Some(_) if !seen.shadowed => true,
            // Nothing to announce, and nothing visible to retire.
            _ if current.is_empty() => return None,
            Some(_) => true,
            None => false,
        };
        let source = CatalogSource {
            kind: KEY.to_owned(),
            form: "catalog".to_owned(),
            entries: current.clone(),
            update,
        };
        let source = serde_json::to_value(&source).ok()?;
        Some(PromptContext {
            key: KEY.to_owned(),
            text: render(&current, update),
            sections: None,
            source: Some(MessageSource::Other(source)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> Entry {
        Entry {
            name: name.into(),
            description: description.into(),
        }
    }

    #[test]
    fn descriptions_are_one_capped_line() {
        assert_eq!(normalize("  Fix\n  the   tests. ", 500), "Fix the tests.");
        assert_eq!(normalize("abcdefghij", 8), "abcde...");
        assert_eq!(normalize("abcdefgh", 8), "abcdefgh");
    }

    #[test]
    fn the_catalog_lists_each_entry_escaped() {
        let text = render(&[entry("a-b", "Use <this> & that")], false);
        assert!(text.starts_with("<system-reminder>\n"), "{text}");
        assert!(text.ends_with("</system-reminder>"), "{text}");
        assert!(
            text.contains(
                "<available_skills>\n- `a-b`: Use &lt;this&gt; &amp; that\n</available_skills>"
            ),
            "{text}"
        );
        assert!(render(&[entry("a", "b")], true).contains("replaces every earlier one"));
        assert!(render(&[], true).contains("No skills are available"));
    }

    #[test]
    fn the_source_reads_back_as_logged() {
        let source = CatalogSource {
            kind: KEY.into(),
            form: "catalog".into(),
            entries: vec![entry("a", "b")],
            update: false,
        };
        let text = serde_json::to_string(&source).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"skill-catalog","form":"catalog","entries":[{"name":"a","description":"b"}]}"#
        );
        let message: MessageSource = serde_json::from_str(&text).unwrap();
        assert!(matches!(message, MessageSource::Other(_)));
    }
}

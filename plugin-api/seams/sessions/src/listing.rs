//! What a list of sessions shows of one, read from its events: the title as a list should
//! show it, and when its conversation last moved. The store keeps both beside each log so a
//! listing reads no log; a live session's are read from its events in memory.

use abi_stable::std_types::RArc;
use dsh_protocol::{TitleSource, kinds, text_of};

use crate::EventRecord;

/// `title` as a list shows it: one made of the first words of a message that goes on (`said`,
/// that message's text, when known) ends with "…", so it does not read as a phrase cut short.
pub fn shown_title(title: dsh_protocol::SessionTitleEvent, said: Option<&str>) -> String {
    let cut = title.source == TitleSource::Fallback
        && said.is_some_and(|said| {
            said.split_whitespace().count() > title.title.split_whitespace().count()
        });
    match cut {
        true => format!("{}…", title.title.trim_end()),
        false => title.title,
    }
}

/// The latest title of `records`, as a list shows it ([`shown_title`]; when the message it was
/// made of is not among `records`, the title is shown as it is).
pub fn listed_title(records: &[RArc<EventRecord>]) -> Option<String> {
    let title = records
        .iter()
        .rev()
        .filter(|record| record.kind.as_str() == kinds::SESSION_TITLE)
        .find_map(|record| record.decode::<dsh_protocol::SessionTitleEvent>()?.ok())?;
    let said = records
        .iter()
        .filter(|record| title.message_seqs.contains(&record.seq))
        .find_map(|record| record.decode::<dsh_protocol::UserMessageEvent>()?.ok())
        .map(|dsh_protocol::UserMessageEvent(message)| text_of(&message.content));
    Some(shown_title(title, said.as_deref()))
}

/// Whether the turn `records` end in waits for a person: it asked (an approval, a question)
/// more often than it was answered since the turn started.
pub fn waiting_for_a_person(records: &[RArc<EventRecord>]) -> bool {
    let mut open: i64 = 0;
    for record in records.iter().rev() {
        match record.kind.as_str() {
            kinds::APPROVAL_ASKED | kinds::QUESTION_ASKED => open += 1,
            kinds::APPROVAL_DECIDED | kinds::QUESTION_ANSWERED => open -= 1,
            kinds::TURN_START => break,
            kinds::TURN_END => return false,
            _ => {}
        }
    }
    open > 0
}

/// When the last message of `records` (a person's or the model's) was committed.
pub fn last_activity(records: &[RArc<EventRecord>]) -> Option<i64> {
    records
        .iter()
        .rev()
        .find(|record| {
            let kind = record.kind.as_str();
            kind == kinds::USER_MESSAGE || kind == kinds::ASSISTANT_MESSAGE
        })
        .map(|record| record.time)
}

/// Characters a search snippet keeps on each side of its match.
const AROUND: usize = 60;

/// `text` around its first match of `needle` (lowercase), ignoring case, on one line: what a
/// search shows of a message or title that holds it.
pub fn search_snippet(text: &str, needle: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let at = lower.find(needle)?;
    // `lower` and `text` can differ in length (a few letters lowercase to more bytes): count
    // characters, not bytes.
    let chars_before = lower[..at].chars().count();
    let chars: Vec<char> = text.chars().collect();
    let start = chars_before.saturating_sub(AROUND);
    let end = (chars_before + needle.chars().count() + AROUND).min(chars.len());
    let mut shown: String = chars[start.min(chars.len())..end].iter().collect();
    shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    if start > 0 {
        shown.insert(0, '…');
    }
    if end < chars.len() {
        shown.push('…');
    }
    Some(shown)
}

#[cfg(test)]
mod tests {
    use super::search_snippet;

    #[test]
    fn a_snippet_is_cut_around_the_match_on_one_line() {
        let text = format!("{}needle in\nthe {}", "a ".repeat(50), "b ".repeat(50));
        let shown = search_snippet(&text, "needle").unwrap();
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.contains("needle in the"), "{shown}");
        assert!(!shown.contains('\n'));
    }

    #[test]
    fn case_and_wide_letters_do_not_shift_the_snippet() {
        let text = "İİİ Straße and the Needle";
        let shown = search_snippet(text, "needle").unwrap();
        assert!(shown.ends_with("Needle"), "{shown}");
        assert_eq!(search_snippet(text, "haystack"), None);
    }
}

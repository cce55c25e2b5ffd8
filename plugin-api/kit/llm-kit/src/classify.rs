//! Recognizing provider error wording: context-window overflow and exhausted quota.
//!
//! Providers say these things in prose, codes and types (`context_length_exceeded`, "This
//! model's maximum context length is ...", "Insufficient Balance"). Both classifiers work on
//! lower-cased words, with every run of other characters (spaces, `_`, `-`, punctuation) read as
//! one separator, and match the same phrase families the reference recognizes, so callers pass
//! the provider's code, type and message joined into one string.

/// One word, its byte span in the normalized text.
struct Word<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

/// Lower-cases and splits into words of `[a-z0-9']`, apostrophes trimmed at the edges (so
/// `model's` is one word and a quoted `'context'` is `context`).
fn words(detail: &str) -> (String, Vec<(usize, usize)>) {
    let lower = detail.to_lowercase();
    let mut spans = Vec::new();
    let mut start = None;
    for (at, ch) in lower.char_indices() {
        let word_char = ch.is_ascii_alphanumeric() || ch == '\'';
        match (word_char, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                spans.push((from, at));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(from) = start {
        spans.push((from, lower.len()));
    }
    (lower, spans)
}

fn split<'a>(lower: &'a str, spans: &[(usize, usize)]) -> Vec<Word<'a>> {
    spans
        .iter()
        .filter_map(|&(start, end)| {
            let raw = &lower[start..end];
            let text = raw.trim_matches('\'');
            if text.is_empty() {
                return None;
            }
            let offset = raw.len() - raw.trim_start_matches('\'').len();
            Some(Word {
                text,
                start: start + offset,
                end: start + offset + text.len(),
            })
        })
        .collect()
}

/// One step of a phrase: a required or optional word from a set of spellings.
#[derive(Clone, Copy)]
enum Step {
    Req(&'static [&'static str]),
    Opt(&'static [&'static str]),
}
use Step::{Opt, Req};

fn matches_at(words: &[Word<'_>], at: usize, steps: &[Step]) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return true;
    };
    let hit = |set: &[&str]| words.get(at).is_some_and(|w| set.contains(&w.text));
    match *step {
        Req(set) => hit(set) && matches_at(words, at + 1, rest),
        Opt(set) => (hit(set) && matches_at(words, at + 1, rest)) || matches_at(words, at, rest),
    }
}

fn phrase(words: &[Word<'_>], steps: &[Step]) -> bool {
    (0..words.len()).any(|at| matches_at(words, at, steps))
}

const EXCEEDED: &[&str] = &["exceeded", "exhausted", "reached"];
const CREDITS: &[&str] = &["credit", "credits"];

/// True only for terminal quota, balance, credit, budget or usage-limit wording (as opposed to
/// a transient rate limit).
pub fn is_quota_exceeded(detail: &str) -> bool {
    let (lower, spans) = words(detail);
    let words = split(&lower, &spans);
    let phrases: &[&[Step]] = &[
        &[
            Req(&["insufficient"]),
            Req(&["quota", "balance", "credit", "credits"]),
        ],
        &[Req(&["quota"]), Req(EXCEEDED)],
        &[Req(&["usage"]), Req(&["limit"]), Req(EXCEEDED)],
        &[
            Req(&["exceed", "exceeded", "exceeds"]),
            Opt(&["your", "the"]),
            Opt(&["current"]),
            Req(&["quota"]),
        ],
        &[
            Req(&["balance", "credit", "credits"]),
            Req(&["exhausted", "depleted"]),
        ],
        &[Req(&["out"]), Req(&["of"]), Req(CREDITS)],
        &[Req(&["out"]), Req(&["of"]), Req(&["budget"])],
    ];
    phrases.iter().any(|steps| phrase(&words, steps))
}

const SUBJECTS: &[&str] = &["request", "prompt", "input", "message", "messages"];
const LENGTH_OR_WINDOW: &[&str] = &["length", "window"];

/// True when the detail says the request exceeded the model's context window.
pub fn is_context_window_exceeded(detail: &str) -> bool {
    let (lower, spans) = words(detail);
    let words = split(&lower, &spans);
    let phrases: &[&[Step]] = &[
        &[
            Req(&["context"]),
            Req(LENGTH_OR_WINDOW),
            Req(&["exceed", "exceeded", "exceeds", "overflow", "overflowed"]),
        ],
        &[
            Req(&["context"]),
            Req(LENGTH_OR_WINDOW),
            Req(&["limit"]),
            Req(&["exceeded"]),
        ],
        &[
            Req(&["maximum", "max"]),
            Opt(&["allowed", "supported"]),
            Req(&["context"]),
            Req(LENGTH_OR_WINDOW),
        ],
        &[
            Req(SUBJECTS),
            Opt(&["is", "are"]),
            Req(&["too"]),
            Req(&["large", "long"]),
            Req(&["for"]),
            Opt(&["this", "the"]),
            Opt(&["model", "model's"]),
            Req(&["context"]),
        ],
        &[
            Req(&["input", "prompt", "request"]),
            Opt(&["is"]),
            Req(&["too"]),
            Req(&["long", "large"]),
            Req(&["for"]),
            Req(&["this", "the"]),
            Req(&["model"]),
        ],
    ];
    phrases.iter().any(|steps| phrase(&words, steps)) || exceeds_model_context(&words)
}

/// "<subject> ... exceeds ... [the] [model's] context": the verb must come within 40 characters
/// of the subject and the context within 40 of the verb, so a long unrelated sentence that
/// happens to hold all three words does not count.
fn exceeds_model_context(words: &[Word<'_>]) -> bool {
    const GAP: usize = 40;
    const VERBS: &[&str] = &["exceed", "exceeds", "exceeded", "overflow", "overflows"];
    // (start, end) of every verb occurrence, "is larger than" included.
    let verbs: Vec<(usize, usize)> = (0..words.len())
        .filter_map(|at| {
            if VERBS.contains(&words[at].text) {
                return Some((words[at].start, words[at].end));
            }
            matches_at(words, at, &[Req(&["is"]), Req(&["larger"]), Req(&["than"])])
                .then(|| (words[at].start, words[at + 2].end))
        })
        .collect();
    // Start of every "context", widened over a directly preceding "[the] [model|model's]".
    let contexts: Vec<usize> = (0..words.len())
        .filter(|&at| words[at].text == "context")
        .map(|at| {
            let mut first = at;
            if first > 0 && matches!(words[first - 1].text, "model" | "model's") {
                first -= 1;
            }
            if first > 0 && words[first - 1].text == "the" {
                first -= 1;
            }
            words[first].start
        })
        .collect();
    words
        .iter()
        .filter(|w| SUBJECTS.contains(&w.text))
        .any(|subject| {
            verbs.iter().any(|&(verb_start, verb_end)| {
                verb_start >= subject.end
                    && verb_start - subject.end <= GAP
                    && contexts
                        .iter()
                        .any(|&context| context >= verb_end && context - verb_end <= GAP)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_context_overflow_wording() {
        for detail in [
            "context_length_exceeded invalid_request_error",
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens",
            "prompt is too long for the model's context window",
            "Request too large for this model context",
            "input is too long for this model",
            "mock input exceeds the model context window",
            "Your messages exceeded the model's context length",
            "the input is larger than the context window",
            "context window exceeded",
            "context-length-limit-exceeded",
        ] {
            assert!(is_context_window_exceeded(detail), "{detail}");
        }
        for detail in [
            "invalid_request",
            "mock invalid request",
            "the context of this request is unclear",
            "input exceeds the limit of 10 items, and elsewhere we talk about the context",
            "Insufficient Balance",
        ] {
            assert!(!is_context_window_exceeded(detail), "{detail}");
        }
    }

    #[test]
    fn recognizes_quota_wording() {
        for detail in [
            "Insufficient Balance",
            "insufficient_quota mock insufficient quota",
            "You exceeded your current quota, please check your plan",
            "quota exceeded",
            "monthly usage limit reached",
            "credits depleted",
            "account is out of budget",
        ] {
            assert!(is_quota_exceeded(detail), "{detail}");
        }
        for detail in [
            "rate_limit mock rate limit",
            "Rate limit reached for requests",
            "too many requests",
            "quota",
        ] {
            assert!(!is_quota_exceeded(detail), "{detail}");
        }
    }
}

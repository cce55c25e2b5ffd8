//! Parsing a stored session's lines into events, the larger part of opening a long log: done on
//! the blocking pool, a long log in two halves side by side (one per core), so the plugins'
//! thread keeps serving other sessions meanwhile and the open takes half the parsing time. All
//! the per-event work of an open is done there, beside the parse: each event's own checks
//! (the load then reads verdicts) and the record readers share, which keeps its line.

use abi_stable::std_types::{RArc, RString, RVec};
use dsh_plugin_api::{Context, PluginError};
use dsh_protocol::SessionEvent;
use dsh_session_log::Prechecked;
use dsh_sessions_seam::EventRecord;

/// Why the lines were not parsed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ParseError {
    /// A line that is not an event.
    #[error("{0}")]
    Line(#[from] serde_json::Error),
    /// The blocking pool did not run the job.
    #[error("{0}")]
    Pool(#[from] PluginError),
}

/// A stored log's events, checked, and their records, one of each per line in order.
pub(crate) struct Parsed {
    pub(crate) events: Vec<Prechecked>,
    pub(crate) records: Vec<RArc<EventRecord>>,
}

/// Below this many lines one job parses them all (a second would cost more than it saves).
const SPLIT_AT: usize = 2_048;

fn parse(session: &str, lines: Vec<RString>) -> Result<Parsed, serde_json::Error> {
    let mut parsed = Parsed {
        events: Vec::with_capacity(lines.len()),
        records: Vec::with_capacity(lines.len()),
    };
    let session = RString::from(session);
    for json in lines {
        let event = serde_json::from_str::<SessionEvent>(&json)?;
        parsed.records.push(RArc::new(EventRecord {
            session: session.clone(),
            seq: event.seq,
            kind: RString::from(event.kind.as_str()),
            time: event.time,
            json,
        }));
        parsed.events.push(Prechecked::new(event));
    }
    Ok(parsed)
}

/// Session `session`'s stored `lines` as events and records, in order; the first line that
/// does not parse is the error.
pub(crate) async fn parse_stored(
    ctx: &Context,
    session: &str,
    lines: RVec<RString>,
) -> Result<Parsed, ParseError> {
    let mut first = lines.into_vec();
    let second = match first.len() >= SPLIT_AT {
        true => first.split_off(first.len() / 2),
        false => Vec::new(),
    };
    let (id_first, id_second) = (session.to_owned(), session.to_owned());
    let earlier = ctx.blocking(move || parse(&id_first, first));
    let later = ctx.blocking(move || parse(&id_second, second));
    let (earlier, later) = futures_util::future::join(earlier, later).await;
    let (mut parsed, later) = (earlier??, later??);
    parsed.events.extend(later.events);
    parsed.records.extend(later.records);
    Ok(parsed)
}

//! Parsing a stored session's lines into events, the larger part of opening a long log: done on
//! the blocking pool, a long log in two halves side by side (one per core), so the plugins'
//! thread keeps serving other sessions meanwhile and the open takes half the parsing time. Each
//! event's lossless check is made there too, beside its parse (the load then reads verdicts).

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::{Context, PluginError};
use dsh_protocol::SessionEvent;
use dsh_session_log::Prechecked;

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

/// Below this many lines one job parses them all (a second would cost more than it saves).
const SPLIT_AT: usize = 2_048;

fn parse(lines: &[RString]) -> Result<Vec<Prechecked>, serde_json::Error> {
    lines
        .iter()
        .map(|line| serde_json::from_str::<SessionEvent>(line).map(Prechecked::new))
        .collect()
}

/// `lines` as events, in order, and `lines` given back; the first line that does not parse
/// is the error.
pub(crate) async fn parse_stored(
    ctx: &Context,
    lines: RVec<RString>,
) -> Result<(Vec<Prechecked>, RVec<RString>), ParseError> {
    let mut first = lines.into_vec();
    let second = match first.len() >= SPLIT_AT {
        true => first.split_off(first.len() / 2),
        false => Vec::new(),
    };
    let earlier = ctx.blocking(move || (parse(&first), first));
    let later = ctx.blocking(move || (parse(&second), second));
    let (earlier, later) = futures_util::future::join(earlier, later).await;
    let ((first_events, mut lines), (second_events, second)) = (earlier?, later?);
    let mut events = first_events?;
    events.extend(second_events?);
    lines.extend(second);
    Ok((events, RVec::from(lines)))
}

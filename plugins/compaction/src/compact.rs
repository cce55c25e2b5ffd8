//! One compaction of a live session: `compaction/start`, the summary request, then in one
//! atomic batch `compaction/summary`, the `user/message` that replaces the shadowed span
//! (citing the start, the summary and every shadowed node) and `compaction/end`. A failure
//! logs `compaction/end` with the error and leaves the surface as it was.

use abi_stable::std_types::{ROption, RVec};
use dsh_plugin_api::{Context, SeamError, SeamErrorKind};
use dsh_protocol::{
    CompactionEndEvent, CompactionStartEvent, CompactionSummaryEvent, ContentBlock, Message,
    MessageSource, PluginSource, SUMMARY_CLOSE, SUMMARY_PREAMBLE, ShadowedRange, SurfaceOp,
    UserMessageEvent,
};
use dsh_sessions_seam::{NewEventRecord, SessionBox, open_live};

use crate::plan::span;
use crate::summarize::summarize;
use crate::surface::Trackers;

/// What a compaction is allowed to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Compact when the next request would carry more than this share of the window.
    pub(crate) threshold: f64,
    /// The share of the window kept verbatim after the summary.
    pub(crate) keep: f64,
    pub(crate) max_summary_tokens: u64,
    /// The window to assume over the catalog's (for small-window setups and tests).
    pub(crate) context_window: Option<u64>,
}

/// Why a compaction did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactError {
    #[error("a turn is running: /compact once it ends (cancel it first to compact now)")]
    Running,
    #[error("this session is compacting already")]
    Busy,
    #[error("session `{0}` is not live here")]
    NotLive(String),
    #[error(
        "the model's context window is not known (no request/context logged, no contextWindow set)"
    )]
    NoWindow,
    #[error("nothing can be compacted: everything is within the kept tail")]
    NothingToCompact,
    #[error("compaction not logged: {0}")]
    Log(String),
    #[error("compaction failed: {0}")]
    Summary(String),
}

impl From<CompactError> for SeamError {
    fn from(error: CompactError) -> Self {
        let kind = match error {
            CompactError::NotLive(_) => SeamErrorKind::NotFound,
            CompactError::Running | CompactError::Busy | CompactError::NothingToCompact => {
                SeamErrorKind::Conflict
            }
            CompactError::NoWindow => SeamErrorKind::Unavailable,
            CompactError::Log(_) | CompactError::Summary(_) => SeamErrorKind::Failed,
        };
        SeamError::new(kind, error.to_string())
    }
}

fn append(session: &SessionBox, batch: Vec<NewEventRecord>) -> Result<Vec<u64>, CompactError> {
    session
        .append(RVec::from(batch))
        .into_result()
        .map(|records| records.iter().map(|record| record.seq).collect())
        .map_err(|error| CompactError::Log(error.to_string()))
}

/// How much a compaction keeps verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// About `keep` of the window (before a step, under pressure).
    Share,
    /// As little as a legal boundary allows: the provider already refused the request.
    Least,
}

/// Compacts session `id` in turn `turn` (`None`: between turns).
pub(crate) async fn compact(
    ctx: &Context,
    settings: &Settings,
    id: &str,
    turn: Option<u64>,
    how: Keep,
    focus: Option<&str>,
    trackers: &Trackers,
) -> Result<(), CompactError> {
    let session = open_live(ctx, id).map_err(|_| CompactError::NotLive(id.to_owned()))?;
    let surface = trackers.for_compaction(&session);
    // After an overflow the window need not be known: the provider said it was crossed.
    let keep = match how {
        Keep::Share => {
            let window = settings
                .context_window
                .or(surface.context_window)
                .ok_or(CompactError::NoWindow)?;
            (window as f64 * settings.keep) as u64
        }
        Keep::Least => 1,
    };
    let chosen = span(&surface.nodes, keep).ok_or(CompactError::NothingToCompact)?;
    let shadowed: Vec<u64> = surface.nodes[..=chosen.end]
        .iter()
        .map(|node| node.seq)
        .collect();
    let shadowed_tokens: u64 = surface.nodes[..=chosen.end]
        .iter()
        .map(|node| node.tokens)
        .sum();
    let compaction_id = format!("{id}-compaction-{}", session.event_count());
    let started = append(
        &session,
        vec![NewEventRecord::of(&CompactionStartEvent {
            compaction_id: compaction_id.clone(),
            source_command_id: None,
            turn,
        })],
    )?;
    let end = |error: Option<String>| {
        NewEventRecord::of(&CompactionEndEvent {
            compaction_id: compaction_id.clone(),
            source_command_id: None,
            turn,
            error,
        })
    };
    let summary = match summarize(
        ctx,
        id,
        surface.header.as_ref(),
        &surface.messages,
        chosen.tail,
        settings.max_summary_tokens,
        focus,
    )
    .await
    {
        Ok(summary) => summary,
        Err(error) => {
            append(&session, vec![end(Some(error.to_string()))])?;
            return Err(CompactError::Summary(error.to_string()));
        }
    };
    let blocks = vec![ContentBlock::text(summary.text.clone())];
    let recorded = NewEventRecord::of(&CompactionSummaryEvent {
        compaction_id: compaction_id.clone(),
        source_command_id: None,
        summary: blocks.clone(),
        raw_output: Some(blocks),
        llm_stream_call: Some(true),
        shadowed_range: ShadowedRange {
            start: shadowed[0],
            end: shadowed[shadowed.len() - 1],
        },
        shadowed_seqs: shadowed.clone(),
        shadowed_token_count: shadowed_tokens,
        provider: summary.config.provider.clone(),
        model: summary.config.model.clone(),
        max_tokens: summary.config.max_tokens,
        usage: summary.usage,
    });
    let mut extra = dsh_protocol::SourceExtra::new();
    extra.insert("compactionId".to_owned(), compaction_id.clone().into());
    let replacement = Message::user(
        format!("{compaction_id}-summary"),
        vec![
            ContentBlock::text(SUMMARY_PREAMBLE),
            ContentBlock::text(summary.text),
            ContentBlock::text(SUMMARY_CLOSE),
        ],
        MessageSource::Plugin(PluginSource {
            plugin: Some("compact".to_owned()),
            extra,
            ..PluginSource::default()
        }),
    );
    // The summary event's seq is the next one: the batch commits in order.
    let summary_seq = session.event_count();
    let mut sources = vec![started[0], summary_seq];
    sources.extend(&shadowed);
    let mut replace = NewEventRecord::of(&UserMessageEvent(replacement)).with_surface(
        SurfaceOp::replace(shadowed[0], shadowed[shadowed.len() - 1]),
    );
    replace.source_event_seqs = ROption::RSome(RVec::from(sources));
    let committed = append(&session, vec![recorded, replace, end(None)]);
    if let Err(error) = committed {
        // The batch did not commit: the surface is as it was; close the compaction.
        append(&session, vec![end(Some(error.to_string()))])?;
        return Err(error);
    }
    Ok(())
}

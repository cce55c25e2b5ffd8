//! One model title, start to end: the fallback made sure of first (the model's title replaces
//! it, never precedes it), the request logged and sent, the answer read into a title and
//! appended as the provider's. Whatever fails leaves the fallback and says why in the host
//! log; the session's turn never waits on any of it.

use std::time::Duration;

use dsh_plugin_api::{Context, LogLevel};
use dsh_protocol::TitleRoute;

use crate::answer;
use crate::log::AppendError;
use crate::model::{self, ModelError};
use crate::request::{self, RequestError, TITLE_PROVIDER};
use crate::schedule::{Pending, Titler};

/// Why a model title did not land.
#[derive(Debug, thiserror::Error)]
enum TitleError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("the answer holds no title: {0:?}")]
    NoTitle(String),
}

/// Asks the model for the title of `pending`'s message on `route` and appends it.
pub(crate) async fn title_by_model(
    ctx: &Context,
    titler: &Titler,
    session: &str,
    pending: Pending,
    route: TitleRoute,
) {
    let described = format!("{}/{}", route.provider, route.model);
    match titled(ctx, titler, session, &pending, route).await {
        Ok(title) => ctx.log(
            LogLevel::Info,
            &format!("session-title: `{session}` titled {title:?} by {described}"),
        ),
        // Nothing went wrong: the session closed, or a person named it first.
        Err(TitleError::Append(reason @ (AppendError::Closed | AppendError::Renamed))) => ctx.log(
            LogLevel::Info,
            &format!("session-title: no model title for `{session}`: {reason}"),
        ),
        Err(error) => ctx.log(
            LogLevel::Warn,
            &format!(
                "session-title: no model title for session `{session}` from {described}: \
                 {error}; its fallback title stays"
            ),
        ),
    }
}

async fn titled(
    ctx: &Context,
    titler: &Titler,
    session: &str,
    pending: &Pending,
    route: TitleRoute,
) -> Result<String, TitleError> {
    let config = &titler.config;
    titler
        .titles
        .fallback(ctx, session, pending.seq, &pending.fallback)?;
    let (event, generate) = request::build(&config.llm, route.clone(), pending.seq, &pending.text)?;
    titler.titles.request(ctx, session, &event)?;
    let timeout = Duration::from_millis(config.llm.timeout_ms);
    let answer = model::ask(ctx, &generate, timeout).await?;
    let title = answer::title(&answer, config.max_title_bytes)
        .ok_or_else(|| TitleError::NoTitle(excerpt(&answer)))?;
    titler.titles.provided(
        ctx,
        session,
        pending.seq,
        title.clone(),
        &route,
        TITLE_PROVIDER,
    )?;
    Ok(title)
}

/// The start of an answer, for a warning.
fn excerpt(answer: &str) -> String {
    const MAX: usize = 120;
    match answer.len() > MAX {
        true => format!("{}…", &answer[..answer.floor_char_boundary(MAX)]),
        false => answer.to_owned(),
    }
}

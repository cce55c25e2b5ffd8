//! A new version of a plugin this row runs, in place of the running one: the running version's
//! library is set aside (a rename, so the loaded copy is untouched), the new one copied in, the
//! old child unmounted (its tools go, so the new one can register the same names) and the new
//! one mounted; the host loads the replaced file afresh. When the new version FAILS, the one
//! set aside is put back and mounted again with the config it was listed with, so a broken
//! update does not take a working tool away.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::lock;
use serde_json::{Map, Value};

use crate::error::AuthorError;
use crate::{State, installed};

/// Sets the installed `file` of `dir` aside; `None` when there is none.
pub(crate) fn set_aside(dir: &Path, file: &str) -> Result<Option<PathBuf>, AuthorError> {
    let current = dir.join(file);
    if !current.is_file() {
        return Ok(None);
    }
    let aside = dir.join(format!(".{file}.previous"));
    std::fs::rename(&current, &aside).map_err(|source| {
        AuthorError::io(format!("setting {} aside", current.display()), source)
    })?;
    Ok(Some(aside))
}

/// The new version is in: the one set aside is not needed any more.
pub(crate) fn discard(aside: Option<PathBuf>) {
    if let Some(aside) = aside {
        let _ = std::fs::remove_file(aside);
    }
}

/// Puts the version set aside back in place of `failed` (unmounted first) and mounts it again;
/// answers what happened, as a sentence to append to the failure (empty when nothing was set
/// aside).
pub(crate) async fn restore(
    state: &State,
    name: &str,
    file: &str,
    failed: Option<u64>,
    aside: Option<PathBuf>,
) -> String {
    let Some(aside) = aside else {
        return String::new();
    };
    if let Some(fiber) = failed {
        if let Err(error) = state.ctx.unmount(fiber).await {
            return format!(" The previous version was not put back: {error}.");
        }
        lock(&state.mounted).remove(name);
    }
    let target = state.plugins_dir.join(file);
    if let Err(error) = std::fs::rename(&aside, &target) {
        return format!(
            " The previous version was not put back ({} to {}): {error}.",
            aside.display(),
            target.display()
        );
    }
    let config = listed_config(state, name);
    let fiber = match state.ctx.mount(name, &Value::Object(config)) {
        Ok(fiber) => fiber,
        Err(error) => return format!(" The previous version did not mount again: {error}."),
    };
    lock(&state.mounted).insert(name.to_owned(), fiber);
    let settle = Duration::from_millis(state.settle_timeout_ms);
    match first_of(state.ctx.settled(fiber), state.ctx.sleep(settle)).await {
        Either::Left(Ok(())) => {
            format!(
                " The previous version runs again (fiber {fiber}) and its tools answer as before."
            )
        }
        Either::Left(Err(error)) => {
            format!(" The previous version, mounted again as fiber {fiber}, FAILED too: {error}.")
        }
        Either::Right(()) => format!(
            " The previous version is mounted again as fiber {fiber} but not active after {} s.",
            settle.as_secs()
        ),
    }
}

/// The config `name` was listed with for this row's scope (none when it is not listed).
fn listed_config(state: &State, name: &str) -> Map<String, Value> {
    installed::load(&state.installed_file)
        .ok()
        .and_then(|entries| {
            entries
                .into_iter()
                .find(|entry| entry.name == name && entry.scope == state.scope)
        })
        .map(|entry| entry.config)
        .unwrap_or_default()
}

//! Plugin `spill`: keeps huge tool results out of the conversation without losing them. On
//! `tools/post-execute`, after every inner listener decided, a successful plain-text result
//! larger than `maxInlineBytes` (UTF-8) is saved whole to a private file and replaced, for the
//! model only, by a head and a tail of it plus a notice with the number of bytes left out and
//! the file's path (read it with offset/limit, or grep it). The replacement never exceeds the
//! budget. `read` results are exempt (reading a spill back must not spill again); results
//! outside a session, errors, non-text content and anything the file could not be written for
//! stay as they were.

mod preview;
mod store;

use std::path::PathBuf;
use std::sync::Arc;

use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, PostDecision};
use dsh_tools_seam::TOOLS_POST_EXECUTE;

/// Config of `spill`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SpillConfig {
    /// Results longer than this many UTF-8 bytes are spilled.
    pub max_inline_bytes: usize,
    /// Where spilled texts are kept (default: `spill` in `$DSH_HOME`, else in `~/.dsh`; never a
    /// shared temp directory another user could have prepared).
    pub root: Option<String>,
    /// Tools whose results are never spilled.
    pub exempt: Vec<String>,
}

impl Default for SpillConfig {
    fn default() -> Self {
        Self {
            max_inline_bytes: 50_000,
            root: None,
            exempt: vec!["read".to_owned()],
        }
    }
}

/// The text of a plain-text content list, or `None` when a block is not text.
fn plain_text(content: &[ContentBlock]) -> Option<String> {
    let mut text = String::new();
    for block in content {
        let ContentBlock::Text { text: part } = block else {
            return None;
        };
        text.push_str(part);
    }
    Some(text)
}

/// `spill` in the dsh home: `$DSH_HOME`, else `~/.dsh`.
fn default_root() -> Option<PathBuf> {
    std::env::var_os("DSH_HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".dsh"))
        })
        .map(|home| home.join("spill"))
}

pub struct SpillPlugin;

impl Plugin for SpillPlugin {
    const NAME: &'static str = "spill";
    type Config = SpillConfig;

    async fn apply(ctx: Context, config: SpillConfig) -> Result<(), PluginError> {
        if config.max_inline_bytes == 0 {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                "invalid config: maxInlineBytes must be a positive integer",
            ));
        }
        let root = match config
            .root
            .as_ref()
            .map(PathBuf::from)
            .or_else(default_root)
        {
            Some(root) => Arc::new(root),
            None => {
                ctx.log(
                    dsh_plugin_api::LogLevel::Warn,
                    "spill: no `root` and no home directory (DSH_HOME, HOME): results stay inline",
                );
                return Ok(());
            }
        };
        let max = config.max_inline_bytes;
        let exempt = Arc::new(config.exempt);
        let listener_ctx = ctx.clone();
        ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |next| {
            let (ctx, root, exempt) = (listener_ctx.clone(), root.clone(), exempt.clone());
            async move {
                let post = next.payload_arc();
                let decided = next.run().await?;
                let call = &post.call;
                if call.session.is_empty() || exempt.iter().any(|name| name == call.name.as_str()) {
                    return Ok(decided);
                }
                let (Ok(decision), Ok(outcome)) = (decided.decode(), post.outcome.decode()) else {
                    return Ok(decided);
                };
                let PostDecision::Accept {
                    content,
                    value: None,
                    additional_contexts,
                } = decision
                else {
                    return Ok(decided);
                };
                if outcome.is_error {
                    return Ok(decided);
                }
                let content = content.unwrap_or(outcome.content);
                let Some(text) = plain_text(&content).filter(|text| text.len() > max) else {
                    return Ok(decided);
                };
                // The preview is priced with the final path before anything is written, so a
                // budget too small for the notice leaves no file behind.
                let path = store::path_for(&root, &call.session, &call.name);
                let Some(replacement) = preview::bound(&text, max, &path.display().to_string())
                else {
                    return Ok(decided);
                };
                let (full, target) = (text.clone(), path.clone());
                let saved = ctx
                    .blocking(move || store::save(&target, &full))
                    .await
                    .map_err(|error| error.to_string())
                    .and_then(|written| written.map_err(|error| error.to_string()));
                if let Err(error) = saved {
                    ctx.log(
                        dsh_plugin_api::LogLevel::Warn,
                        &format!("spill: the result of `{}` stays inline: {error}", call.name),
                    );
                    return Ok(decided);
                }
                Ok(Json::encode(&PostDecision::Accept {
                    content: Some(vec![ContentBlock::text(replacement)]),
                    value: None,
                    additional_contexts,
                }))
            }
        })?;
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(SpillPlugin);

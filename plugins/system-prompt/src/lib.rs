//! Plugin `system-prompt`: provides `system_prompt`. The system prompt is the row's sections
//! (`identity` at -100, `persona` at 0) plus the sections other plugins add (tool guidance
//! 100-199), in order (equal orders by id), joined by blank lines and passed through the
//! `system-prompt/assemble` waterfall. Context that changes while a session runs, such as the
//! `AGENTS.md` files of its working directory and their parents (64 KiB at most), is answered
//! as snapshots the loop appends to the history when they change, so the system prompt, and
//! with it the provider's prompt cache, stays the same.

mod instructions;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, ROk, RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agent_seam::{
    PromptRequest, SYSTEM_PROMPT, SYSTEM_PROMPT_ASSEMBLE, SectionHandle, SectionHandle_TO,
    SectionHandleBox, SystemPrompt, SystemPrompt_TO,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, lock};
use serde_json::{Value, json};

/// Config of `system-prompt`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct PromptConfig {
    pub identity: String,
    pub persona: String,
    /// Read `AGENTS.md` from the working directory and its parents.
    pub agents_md: bool,
    /// Bytes of `AGENTS.md` text at most.
    pub agents_md_max_bytes: usize,
}

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            identity: "You are a coding agent working in the user's repository through tools."
                .to_owned(),
            persona: "Read before you change files, keep changes small, and say plainly what you \
                      did and what you could not do."
                .to_owned(),
            agents_md: true,
            agents_md_max_bytes: 64 * 1024,
        }
    }
}

/// Sections by (order, id).
type Sections = BTreeMap<(i64, String), String>;

struct Prompt {
    sections: Mutex<Sections>,
    assemble: Channel<WaterfallEvent<PromptRequest, RString>>,
    agents_md: Option<usize>,
}

struct Held {
    prompt: Weak<Prompt>,
    key: (i64, String),
}

impl SectionHandle for Held {
    fn id(&self) -> RString {
        RString::from(self.key.1.as_str())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(prompt) = self.prompt.upgrade() {
            lock(&prompt.sections).remove(&self.key);
        }
    }
}

struct Service(Arc<Prompt>);

impl SystemPrompt for Service {
    fn section(&self, owner: RString, section: RString) -> RResult<SectionHandleBox, RString> {
        let value: Value = match serde_json::from_str(&section) {
            Ok(value) => value,
            Err(error) => return RErr(format!("{owner}: a section is JSON: {error}").into()),
        };
        let (Some(id), Some(order), Some(text)) = (
            value["id"].as_str(),
            value["order"].as_i64(),
            value["text"].as_str(),
        ) else {
            return RErr(format!("{owner}: a section is {{\"id\",\"order\",\"text\"}}").into());
        };
        let key = (order, id.to_owned());
        {
            let mut sections = lock(&self.0.sections);
            if sections.keys().any(|(_, existing)| existing == id) {
                return RErr(format!("{owner}: prompt section `{id}` already exists").into());
            }
            sections.insert(key.clone(), text.to_owned());
        }
        ROk(SectionHandle_TO::from_value(
            Held {
                prompt: Arc::downgrade(&self.0),
                key,
            },
            TD_Opaque,
        ))
    }

    fn assemble(&self, request: PromptRequest) -> FfiFuture<RString> {
        let prompt = self.0.clone();
        async move {
            let joined = lock(&prompt.sections)
                .values()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("\n\n");
            let assembled = prompt
                .assemble
                .waterfall(RArc::new(request.clone()), move |_| async move {
                    Ok(RString::from(joined))
                })
                .await;
            let system = match assembled {
                Ok(system) => system.into_string(),
                Err(error) => {
                    return RString::from(json!({"error": error.to_string()}).to_string());
                }
            };
            let mut contexts = Vec::new();
            if let Some(cap) = prompt.agents_md
                && let Some(text) = instructions::agents_md(Path::new(request.cwd.as_str()), cap)
            {
                contexts.push(json!({"key": "agents-md", "text": text}));
            }
            RString::from(json!({"system": system, "contexts": contexts}).to_string())
        }
        .into_ffi()
    }
}

pub struct SystemPromptPlugin;

impl Plugin for SystemPromptPlugin {
    const NAME: &'static str = "system-prompt";
    const PROVIDES: &'static [&'static str] = &[SYSTEM_PROMPT];
    type Config = PromptConfig;

    async fn apply(ctx: Context, config: PromptConfig) -> Result<(), PluginError> {
        let mut sections = Sections::new();
        if !config.identity.is_empty() {
            sections.insert((-100, "identity".to_owned()), config.identity);
        }
        if !config.persona.is_empty() {
            sections.insert((0, "persona".to_owned()), config.persona);
        }
        let prompt = Prompt {
            sections: Mutex::new(sections),
            assemble: ctx.channel(&SYSTEM_PROMPT_ASSEMBLE)?,
            agents_md: config.agents_md.then_some(config.agents_md_max_bytes),
        };
        ctx.provide(
            SYSTEM_PROMPT,
            SystemPrompt_TO::from_value(Service(Arc::new(prompt)), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(SystemPromptPlugin);

//! Plugin `system-prompt`: provides `system_prompt`. The system prompt is the row's sections
//! (`identity` at -100, `persona` at 0), the sections other plugins add, and the guidance of
//! the tools the agent's scope sees (`tool:<name>`, 100-199, pulled from the `tools` registry's
//! view, so a hidden tool is never mentioned), in order (equal orders by id). Each section's
//! `{{name}}` references are replaced (`provider`, `model`, `cwd` built in, more registered by
//! plugins; an unknown or malformed reference fails the assembly, naming it and the section;
//! tool guidance is shown as written), empty sections are dropped, the rest joined by blank
//! lines and passed through the `system-prompt/assemble` waterfall.
//!
//! Context that changes while a session runs is answered as snapshots the loop appends to the
//! history when they change, so the system prompt, and with it the provider's prompt cache,
//! stays the same: the workspace instructions (the user-wide `$DSH_HOME/AGENTS.md` and the
//! `AGENTS.md`/`CLAUDE.md` chain from the project root to the working directory, 64 KiB at
//! most, see [`instructions`]), the runtime context (the file and approval policies the
//! session runs under); then what the `system-prompt/contexts` listeners add. The instruction
//! files of a directory below the working directory that the agent worked in (a successful
//! `read`, `write` or `edit` of a file there) are queued in the session's inbox before its next
//! step (see [`nested`]).

mod files;
mod instructions;
mod memo;
mod nested;
mod render;
mod runtime;
mod shapes;
mod variables;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, ROk, RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{AGENT_PRE_STEP, AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{BailEvent, Channel, LogLevel, SeamError, lock};
use dsh_protocol::{
    AssembledPrompt, PromptContext, PromptRequest, PromptSection, StepProposal, ToolGuidance,
};
use dsh_sessions_seam::SESSION_DISPOSED;
use dsh_system_prompt_seam::{
    SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_BASE, SYSTEM_PROMPT_CONTEXTS, SYSTEM_PROMPT_SERVICE,
    SectionHandle, SectionHandle_TO, SectionHandleBox, SystemPrompt, SystemPrompt_TO,
};
use dsh_tools_seam::{ResultView, TOOLS_RESULT, TOOLS_SERVICE, ToolsService};

use crate::instructions::Discovery;
use crate::nested::Nested;

use crate::variables::VariableError;

/// Config of `system-prompt`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct PromptConfig {
    pub identity: String,
    pub persona: String,
    /// Show the model the workspace's instruction files (`AGENTS.md`, `CLAUDE.md`...).
    pub agents_md: bool,
    /// Bytes of one instructions text at most (the baseline chain, or one batch of files
    /// reached later), the `<system-reminder>` frame included.
    pub agents_md_max_bytes: usize,
    /// A file larger than this many bytes is ignored (never cut).
    pub max_source_bytes: usize,
    /// Instruction file names looked for in each directory, in order.
    pub instruction_files: Vec<String>,
    /// Local overlays, after the instruction files of the same directory.
    pub local_instruction_files: Vec<String>,
    /// What marks the project root the chain starts from (the nearest parent holding one);
    /// without one, the working directory's own files only.
    pub project_root_markers: Vec<String>,
    /// The user-wide instructions (default: `AGENTS.md` in `$DSH_HOME`, else in `~/.dsh-host`,
    /// the host's home).
    pub user_instructions: Option<String>,
    /// Tell the model its file and approval policies, as a snapshot logged when they change
    /// (what other plugins add to the runtime context, a subagent's delegation, is told either
    /// way).
    pub runtime_context: bool,
}

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            identity: "You are a coding agent working in the user's repository through tools."
                .to_owned(),
            persona: "You run on {{model}} and work in {{cwd}}. Read before you change files, \
                      keep changes small, and say plainly what you did and what you could not do."
                .to_owned(),
            agents_md: true,
            agents_md_max_bytes: 64 * 1024,
            max_source_bytes: 1 << 20,
            instruction_files: vec!["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()],
            local_instruction_files: vec![
                "AGENTS.local.md".to_owned(),
                "CLAUDE.local.md".to_owned(),
            ],
            project_root_markers: vec![".git".to_owned()],
            user_instructions: None,
            runtime_context: true,
        }
    }
}

/// Sections by (order, id).
type Sections = BTreeMap<(i64, String), String>;

struct Prompt {
    ctx: Context,
    sections: Mutex<Sections>,
    /// Registered variables (the built-ins are added per request).
    variables: Mutex<BTreeMap<String, String>>,
    /// Bumped by every change of the sections or variables.
    version: AtomicU64,
    /// The last render and what it was rendered from: a loop assembles every step and the
    /// inputs rarely change.
    rendered: Mutex<Option<(RenderKey, String)>>,
    /// Asks for a text in place of the sections (`system-prompt/base`).
    base: Channel<BailEvent<Json<PromptRequest>, RString>>,
    assemble: Channel<WaterfallEvent<Json<PromptRequest>, RString>>,
    /// Other plugins' snapshots, after this one's.
    contexts: Channel<WaterfallEvent<Json<PromptRequest>, Json<Vec<PromptContext>>>>,
    /// Where instruction files are looked for, and the byte budget of one text.
    instructions: Option<(Discovery, usize)>,
    /// Tell the model its file and approval policies (the runtime-context snapshot).
    runtime_context: bool,
    /// Instruction files below the working directory the agent reached.
    nested: Nested,
    /// What each session was last answered, made again only when its inputs changed.
    memos: memo::Memos,
}

/// What a held registration undoes.
enum Key {
    Section((i64, String)),
    Variable(String),
}

struct Held {
    prompt: Weak<Prompt>,
    key: Key,
}

impl SectionHandle for Held {
    fn id(&self) -> RString {
        match &self.key {
            Key::Section((_, id)) | Key::Variable(id) => RString::from(id.as_str()),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(prompt) = self.prompt.upgrade() {
            match &self.key {
                Key::Section(key) => {
                    lock(&prompt.sections).remove(key);
                }
                Key::Variable(name) => {
                    lock(&prompt.variables).remove(name);
                }
            }
            prompt.version.fetch_add(1, Ordering::AcqRel);
        }
    }
}

const BUILT_IN: [&str; 3] = ["provider", "model", "cwd"];

/// Everything a render depends on: the registrations' version, the tool guidance text, and the
/// built-in variables' values.
#[derive(PartialEq, Eq)]
struct RenderKey {
    version: u64,
    guidance: String,
    provider: String,
    model: String,
    cwd: String,
}

impl Prompt {
    /// Records the directories a successful `read`, `write` or `edit` worked in.
    fn note_touch(&self, result: &ResultView) {
        if self.instructions.is_some() {
            self.nested.note(result);
        }
    }

    /// Before a step after the first: queues the instruction files the agent reached since
    /// the last step, for the loop to claim as it opens the step.
    fn queue_reached(&self, step: &StepProposal) {
        let Some((discovery, max)) = &self.instructions else {
            return;
        };
        if step.step < 2 {
            return;
        }
        let Some(message) = self.nested.changes(&step.session, discovery, *max) else {
            return;
        };
        let queued = match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => agents
                .inject(&step.session, &message)
                .map_err(|error| error.to_string()),
            _ => Err("no `agents` service".to_owned()),
        };
        if let Err(error) = queued {
            self.ctx.log(
                LogLevel::Warn,
                &format!(
                    "instructions reached in {} not queued: {error}",
                    step.session
                ),
            );
        }
    }

    /// The sections of `request` in order: the registered ones and the guidance of the tools
    /// its scope sees (`tool:<name>`), each interpolated; empty ones dropped.
    fn render(&self, request: &PromptRequest) -> Result<String, VariableError> {
        let guidance = match self.ctx.get::<ToolsService>(TOOLS_SERVICE) {
            Ok(Some(tools)) => tools
                .guidance(
                    request
                        .scope
                        .iter()
                        .map(|key| RString::from(key.as_str()))
                        .collect(),
                )
                .into_text()
                .into_string(),
            _ => String::new(),
        };
        let key = RenderKey {
            version: self.version.load(Ordering::Acquire),
            guidance,
            provider: request.provider.to_string(),
            model: request.model.to_string(),
            cwd: request.cwd.to_string(),
        };
        if let Some((seen, text)) = lock(&self.rendered).as_ref()
            && *seen == key
        {
            return Ok(text.clone());
        }
        let text = self.render_from(&key)?;
        *lock(&self.rendered) = Some((key, text.clone()));
        Ok(text)
    }

    fn render_from(&self, key: &RenderKey) -> Result<String, VariableError> {
        let mut sections: Vec<(i64, String, String)> = lock(&self.sections)
            .iter()
            .map(|((order, id), text)| (*order, id.clone(), text.clone()))
            .collect();
        let guidance: Vec<ToolGuidance> =
            Json::<Vec<ToolGuidance>>::from_text(key.guidance.as_str())
                .decode()
                .unwrap_or_default();
        for entry in guidance {
            sections.push((entry.order, format!("tool:{}", entry.name), entry.text));
        }
        sections.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut variables = lock(&self.variables).clone();
        for (name, value) in BUILT_IN
            .into_iter()
            .zip([&key.provider, &key.model, &key.cwd])
        {
            variables.insert(name.to_owned(), value.clone());
        }
        let mut rendered = Vec::with_capacity(sections.len());
        for (_, id, text) in sections {
            // Tool guidance is a tool's own text, shown as written: a literal `{{` in it (a
            // template example) must not fail every turn.
            let text = match id.starts_with("tool:") {
                true => text,
                false => variables::interpolate(&text, &id, &variables)?,
            };
            if !text.trim().is_empty() {
                rendered.push(text);
            }
        }
        Ok(rendered.join("\n\n"))
    }
}

struct Service(Arc<Prompt>);

impl SystemPrompt for Service {
    fn section(
        &self,
        owner: RString,
        section: Json<PromptSection>,
    ) -> RResult<SectionHandleBox, SeamError> {
        let PromptSection { id, order, text } = match section.decode() {
            Ok(section) => section,
            Err(error) => return RErr(SeamError::invalid(format!("{owner}: {error}"))),
        };
        let key = (order, id.clone());
        {
            let mut sections = lock(&self.0.sections);
            if sections.keys().any(|(_, existing)| *existing == id) {
                return RErr(SeamError::conflict(format!(
                    "{owner}: prompt section `{id}` already exists"
                )));
            }
            sections.insert(key.clone(), text);
            self.0.version.fetch_add(1, Ordering::AcqRel);
        }
        ROk(SectionHandle_TO::from_value(
            Held {
                prompt: Arc::downgrade(&self.0),
                key: Key::Section(key),
            },
            TD_Opaque,
        ))
    }

    fn variable(
        &self,
        owner: RString,
        name: RString,
        value: RString,
    ) -> RResult<SectionHandleBox, SeamError> {
        if let Err(error) = variables::check_name(&name) {
            return RErr(SeamError::invalid(format!("{owner}: {error}")));
        }
        if BUILT_IN.contains(&name.as_str()) {
            return RErr(SeamError::conflict(format!(
                "{owner}: prompt variable `{name}` is built in"
            )));
        }
        {
            let mut variables = lock(&self.0.variables);
            if variables.contains_key(name.as_str()) {
                return RErr(SeamError::conflict(format!(
                    "{owner}: prompt variable `{name}` already exists"
                )));
            }
            variables.insert(name.to_string(), value.into_string());
            self.0.version.fetch_add(1, Ordering::AcqRel);
        }
        ROk(SectionHandle_TO::from_value(
            Held {
                prompt: Arc::downgrade(&self.0),
                key: Key::Variable(name.into_string()),
            },
            TD_Opaque,
        ))
    }

    fn assemble(
        &self,
        request: Json<PromptRequest>,
    ) -> FfiFuture<RResult<Json<AssembledPrompt>, SeamError>> {
        let prompt = self.0.clone();
        async move {
            let decoded = match request.decode() {
                Ok(decoded) => decoded,
                Err(error) => return RErr(SeamError::invalid(error.to_string())),
            };
            let fixed = match prompt.base.bail(&request) {
                Ok(fixed) => fixed,
                Err(error) => {
                    // A failed stand-in costs its own text: the sections are used.
                    prompt.ctx.log(
                        LogLevel::Warn,
                        &format!("system-prompt/base: {error}; the sections are used"),
                    );
                    None
                }
            };
            let joined = match fixed {
                Some(text) => text,
                None => match prompt.render(&decoded) {
                    Ok(joined) => RString::from(joined),
                    Err(error) => return RErr(SeamError::invalid(error.to_string())),
                },
            };
            let request = RArc::new(request);
            let assembled = prompt
                .assemble
                .waterfall(request.clone(), move |_| async move { Ok(joined) })
                .await;
            let system = match assembled {
                Ok(system) => system.into_string(),
                // A handler of `system-prompt/assemble` failed.
                Err(error) => return RErr(SeamError::failed(error.to_string())),
            };
            let own = prompt.contexts(&decoded);
            let encoded = prompt
                .memos
                .own
                .get_or_make(&decoded.session, &own, Json::encode);
            let sent = encoded.clone();
            let added = prompt
                .contexts
                .waterfall(request, move |_| async move { Ok(encoded) })
                .await
                .map_err(|error| error.to_string());
            let read = match added {
                // Nobody added a snapshot (most steps): the system prompt's own, unread.
                Ok(answer) if answer == sent => None,
                Ok(answer) => Some(answer.decode().map_err(|error| error.to_string())),
                Err(error) => Some(Err(error)),
            };
            let contexts = match read {
                None => own,
                Some(Ok(all)) => runtime::merge(all),
                // A contributor that fails costs its own snapshot, not the step.
                Some(Err(error)) => {
                    prompt.ctx.log(
                        LogLevel::Warn,
                        &format!("system-prompt/contexts: {error}; only the system prompt's own snapshots this step"),
                    );
                    own
                }
            };
            ROk(prompt.memos.answers.get_or_make(
                &decoded.session,
                &AssembledPrompt { system, contexts },
                Json::encode,
            ))
        }
        .into_ffi()
    }
}

impl Prompt {
    /// The snapshots of `request`: the instruction chain of its working directory, then the
    /// runtime context (the reference's order).
    fn contexts(&self, request: &PromptRequest) -> Vec<PromptContext> {
        let mut contexts = Vec::new();
        if let Some((discovery, max)) = &self.instructions {
            let files = discovery.baseline(Path::new(&request.cwd));
            let text = self
                .memos
                .instructions
                .get_or_make(&request.session, &files, |files| {
                    let items: Vec<render::Item<'_>> = files
                        .iter()
                        .map(|file| render::Item {
                            file,
                            action: render::Action::Set,
                            scope: file.scope(discovery),
                        })
                        .collect();
                    render::render(render::Style::Baseline, &items, *max).text
                });
            if !text.is_empty() {
                contexts.push(PromptContext {
                    source: None,
                    key: "agents-md".to_owned(),
                    text,
                    sections: None,
                });
            }
        }
        if self.runtime_context {
            contexts.push(
                self.memos
                    .runtime
                    .of(&self.ctx, &request.session, &request.cwd),
            );
        }
        contexts
    }
}

pub struct SystemPromptPlugin;

impl Plugin for SystemPromptPlugin {
    const NAME: &'static str = "system-prompt";
    const OPTIONAL: &'static [&'static str] = &[
        AGENTS_SERVICE,
        dsh_approval_seam::APPROVAL_SERVICE,
        dsh_sandbox_seam::SANDBOX_SERVICE,
        dsh_tools_seam::TOOLS_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[SYSTEM_PROMPT_SERVICE];
    type Config = PromptConfig;

    async fn apply(ctx: Context, config: PromptConfig) -> Result<(), PluginError> {
        let instructions = match config.agents_md {
            true => Some((
                instructions::discovery(&config)?,
                config.agents_md_max_bytes,
            )),
            false => None,
        };
        let mut sections = Sections::new();
        if !config.identity.is_empty() {
            sections.insert((-100, "identity".to_owned()), config.identity);
        }
        if !config.persona.is_empty() {
            sections.insert((0, "persona".to_owned()), config.persona);
        }
        let prompt = Prompt {
            ctx: ctx.clone(),
            sections: Mutex::new(sections),
            variables: Mutex::new(BTreeMap::new()),
            version: AtomicU64::new(0),
            rendered: Mutex::new(None),
            base: ctx.channel(&SYSTEM_PROMPT_BASE)?,
            assemble: ctx.channel(&SYSTEM_PROMPT_ASSEMBLE)?,
            contexts: ctx.channel(&SYSTEM_PROMPT_CONTEXTS)?,
            instructions,
            runtime_context: config.runtime_context,
            nested: Nested::default(),
            memos: memo::Memos::default(),
        };
        let prompt = Arc::new(prompt);
        // A file the agent read or changed under a subdirectory brings that directory's
        // instructions in from the next step on.
        let watch = Arc::downgrade(&prompt);
        ctx.on_emit(&TOOLS_RESULT, move |result: &ResultView| {
            if let Some(prompt) = watch.upgrade() {
                prompt.note_touch(result);
            }
        })?;
        let forget = Arc::downgrade(&prompt);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            if let Some(prompt) = forget.upgrade() {
                prompt.nested.forget(id.as_str());
                prompt.memos.forget(id.as_str());
            }
        })?;
        let reached = Arc::downgrade(&prompt);
        ctx.on_waterfall(&AGENT_PRE_STEP, move |next| {
            let proposal = next.payload().decode();
            if let (Some(prompt), Ok(proposal)) = (reached.upgrade(), proposal) {
                prompt.queue_reached(&proposal);
            }
            next.run()
        })?;
        ctx.provide(
            SYSTEM_PROMPT_SERVICE,
            SystemPrompt_TO::from_value(Service(prompt), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(SystemPromptPlugin);

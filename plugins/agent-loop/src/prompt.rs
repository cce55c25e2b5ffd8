//! The step's prompt and what the log must hold before a request: the context snapshots that
//! changed (appended, never inserted before older messages, so the prefix a provider caches
//! stays the same), `request/header` when the header changed and `request/context` when the
//! route did; then the request itself, its history by reference.

use dsh_protocol::kinds;
use std::collections::HashMap;

use dsh_llm_seam::LlmService;
use dsh_plugin_api::Json;
use dsh_protocol::{
    AssembledPrompt, HeaderReason, HistoryRef, LlmCallConfig, Message, MessageSource,
    PromptRequest, RequestContextEvent, RequestHeader, RequestHeaderEvent, ToolSchema,
};
use dsh_sessions_seam::SessionBox;
use serde::Serialize;

use crate::Deps;
use crate::error::LoopError;
use crate::hooks::Prompt;
use crate::log::{Log, Past};
use crate::turn::Route;

/// The plugin whose context snapshots the loop logs (and finds again on resume).
pub(crate) const SNAPSHOT_PLUGIN: &str = "system-prompt";

/// What a turn remembers of its log between steps.
pub(crate) struct Memory {
    last_header: Option<RequestHeader>,
    /// The tool list text and system prompt the last header was built from.
    last_header_key: Option<(String, String)>,
    /// The route of the last logged `request/context`.
    last_context: Option<(String, String)>,
    /// The last logged text of each prompt context snapshot, by key.
    snapshots: HashMap<String, String>,
    /// How far the log was looked at for compactions (a compaction can shadow a snapshot).
    seen: Option<u64>,
    /// The last assembled prompt as the service wrote it and as read: from one step to the
    /// next it rarely changes, and reading it again was a twentieth of an instant step.
    last_assembled: Option<(Json<AssembledPrompt>, AssembledPrompt)>,
}

impl Memory {
    pub(crate) fn of(past: Past) -> Self {
        Self {
            last_header: past.last_header,
            last_header_key: None,
            last_context: past.last_context,
            snapshots: past.snapshots,
            seen: None,
            last_assembled: None,
        }
    }

    /// `written` read, or the last one read when it is the same text.
    fn read_assembled(
        &mut self,
        written: Json<AssembledPrompt>,
    ) -> Result<AssembledPrompt, LoopError> {
        if let Some((text, read)) = &self.last_assembled
            && *text == written
        {
            return Ok(read.clone());
        }
        let read = written
            .decode()
            .map_err(|error| LoopError::decode("system prompt", error))?;
        self.last_assembled = Some((written, read.clone()));
        Ok(read)
    }
}

/// The system prompt of a step.
pub(crate) enum System {
    Ready(String),
    /// A section cannot be rendered (an unknown variable, say): the turn ends before anything
    /// is asked, as the reference flattens non-model errors.
    Unrenderable(String),
}

/// The system prompt of this step (the `system_prompt` service's, else the row's), after
/// appending the step's `input` messages and every context snapshot that changed since it was
/// last logged, in one batch: what a step adds before its request is one commit, so what
/// listeners append on seeing it (a first-words title) lands after all of it, as the
/// reference's does.
pub(crate) async fn system_prompt(
    deps: &Deps,
    log: &Log<'_>,
    route: &Route,
    at: (u64, u64),
    memory: &mut Memory,
    input: Vec<Message>,
) -> Result<System, LoopError> {
    let mut batch: Vec<Message> = input;
    let request = PromptRequest {
        session: log.session.id().into_string(),
        cwd: route.cwd.clone(),
        scope: route.scope.clone(),
        provider: route.provider.clone(),
        model: route.model.clone(),
    };
    let assembled = match deps.hooks.prompt(request).await {
        Ok(Prompt::Assembled(written)) => match memory.read_assembled(written) {
            Ok(assembled) => assembled,
            Err(error) => {
                log.append_messages(batch)?;
                return Err(error);
            }
        },
        Ok(Prompt::Missing) => {
            log.append_messages(batch)?;
            return Ok(System::Ready(deps.system.clone()));
        }
        Ok(Prompt::Unrenderable(problem)) => {
            log.append_messages(batch)?;
            return Ok(System::Unrenderable(format!("system prompt: {problem}")));
        }
        Err(error) => {
            log.append_messages(batch)?;
            return Err(error);
        }
    };
    let (turn, step) = at;
    // A compaction since the last step may have summarized a snapshot away: log them all again.
    let count = log.session.event_count();
    let from = memory.seen.unwrap_or(count);
    if from < count
        && log
            .session
            .events(from, count)
            .iter()
            .any(|record| record.kind.as_str() == kinds::COMPACTION_SUMMARY)
    {
        memory.snapshots.clear();
    }
    memory.seen = Some(count);
    let mut logged = Vec::new();
    for context in assembled.contexts {
        if memory.snapshots.get(&context.key) == Some(&context.text) {
            continue;
        }
        // A contributor with a source of its own (a skill catalog) is logged under it.
        let source = match context.source.clone() {
            Some(source) => source,
            None => {
                let mut source = MessageSource::snapshot(SNAPSHOT_PLUGIN, context.key.as_str());
                if let MessageSource::Plugin(plugin) = &mut source {
                    plugin.sections = context.sections.clone();
                }
                source
            }
        };
        let message = Message::user(
            format!("{}-t{turn}-s{step}-{}", log.session.id(), context.key),
            vec![dsh_protocol::ContentBlock::text(context.text.as_str())],
            source,
        );
        batch.push(message);
        logged.push((context.key, context.text));
    }
    log.append_messages(batch)?;
    memory.snapshots.extend(logged);
    Ok(System::Ready(assembled.system))
}

/// The tool list of the scope, as the registry's text.
pub(crate) fn tool_schemas(deps: &Deps, route: &Route) -> Result<Json<Vec<ToolSchema>>, LoopError> {
    let Some(tools) = &deps.tools else {
        return Ok(Json::encode(&Vec::new()));
    };
    tools
        .schemas(route.scope.iter().map(|key| key.as_str().into()).collect())
        .into_result()
        .map_err(|error| LoopError::Tools(error.to_string()))
}

/// Logs `request/header` when the header changed and `request/context` when the route did.
pub(crate) fn log_header(
    log: &Log<'_>,
    llm: &LlmService,
    route: &Route,
    system: &str,
    tools: &Json<Vec<ToolSchema>>,
    memory: &mut Memory,
) -> Result<(), LoopError> {
    // Rebuilt only when something in it changed: the tool list is compared as the registry's
    // text, not parsed and compared every step.
    let changed = memory
        .last_header_key
        .as_ref()
        .is_none_or(|(text, sys)| text != tools.text() || sys != system);
    if changed {
        let schemas = tools
            .decode()
            .map_err(|error| LoopError::Tools(error.to_string()))?;
        let header = RequestHeader {
            config: LlmCallConfig::new(route.provider.as_str(), route.model.as_str()),
            adapter_defaults: None,
            system: Some(system.to_owned()),
            tools: Some(schemas),
        };
        if memory.last_header.as_ref() != Some(&header) {
            let reason = match memory.last_header {
                None => HeaderReason::Initial,
                Some(_) => HeaderReason::Change,
            };
            log.append(&RequestHeaderEvent {
                header: header.clone(),
                reason,
            })?;
            memory.last_header = Some(header);
        }
        memory.last_header_key = Some((tools.text().to_owned(), system.to_owned()));
    }
    let context = (route.provider.clone(), route.model.clone());
    if memory.last_context.as_ref() != Some(&context) {
        // The model's window from the catalog, for what keeps the history within it.
        let context_window = llm
            .models(context.0.as_str().into())
            .into_option()
            .and_then(|models| models.decode().ok())
            .and_then(|models| models.into_iter().find(|model| model.id == context.1))
            .and_then(|model| model.context_window);
        log.append(&RequestContextEvent {
            provider: context.0.clone(),
            model: context.1.clone(),
            context_window,
        })?;
        memory.last_context = Some(context);
    }
    Ok(())
}

/// A request as it is sent, but for its tools: a `GenerateRequest` whose history goes by
/// reference (the count and rolling hash of the log's snapshot, so the request stays the same
/// size however long the session is).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outgoing<'a> {
    config: &'a LlmCallConfig,
    system: &'a str,
    history: &'a HistoryRef,
    session_id: &'a str,
}

/// The request of this attempt, rebuilt from the log: what the model sees is what was logged.
/// The tool list is the registry's text, put in as it is: it is JSON the registry wrote, read
/// whole by the model seam, so it is not parsed here a step at a time to be checked again.
pub(crate) fn request(
    session: &SessionBox,
    route: &Route,
    system: &str,
    tools: &Json<Vec<ToolSchema>>,
) -> Result<Json<dsh_protocol::GenerateRequest>, LoopError> {
    let view = session.derive_messages();
    let history = HistoryRef {
        count: view.message_count(),
        hash: format!("{:016x}", view.hash()),
    };
    let config = LlmCallConfig::new(route.provider.as_str(), route.model.as_str());
    let id = session.id();
    let outgoing = Outgoing {
        config: &config,
        system,
        history: &history,
        session_id: id.as_str(),
    };
    let mut text =
        serde_json::to_string(&outgoing).map_err(|error| LoopError::Tools(error.to_string()))?;
    // `{...}` becomes `{...,"tools":[...]}`.
    if text.pop() != Some('}') {
        return Err(LoopError::Tools(format!(
            "the request is not an object: {text}"
        )));
    }
    text.reserve(tools.text().len() + 10);
    text.push_str(",\"tools\":");
    text.push_str(tools.text());
    text.push('}');
    Ok(Json::from_text(text))
}

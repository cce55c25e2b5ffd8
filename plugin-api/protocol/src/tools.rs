//! Tools as the registry, the pipeline, their hooks and the loop talk about them: what a tool
//! declares, one call, a tool's reply, the hooks' decisions, approvals, and a step's report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::unknown::{OpenTags, Unknown};

use crate::content::{ContentBlock, Message};
use crate::events::present;

/// How a tool's calls may overlap with their neighbours in one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Concurrency {
    /// A barrier: runs alone.
    #[default]
    Exclusive,
    /// Runs beside other parallel-safe calls.
    Parallel,
    /// The tool answers per call (`parallel_safe`).
    PerCall,
}

/// Prompt guidance a tool contributes, shown only to agents that can see the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Guidance {
    /// Where it goes among the prompt's sections (tool guidance: 100-199).
    pub order: i64,
    pub text: String,
}

/// What a tool declares when it registers. Only the name, the description and the parameters
/// ever reach a model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDecl {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    #[serde(default)]
    pub concurrency: Concurrency,
    /// The body's time limit; none means the pipeline's default policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidance: Option<Guidance>,
    /// The parameters are a provider's raw schema (an MCP server's), sent as given and checked
    /// by the provider rather than by the registry's schema subset.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passthrough: bool,
}

impl ToolDecl {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            concurrency: Concurrency::Exclusive,
            timeout_ms: None,
            guidance: None,
            passthrough: false,
        }
    }
}

/// The structured error of a failed call, logged as `tool/result.error`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ToolErrorInfo {
    /// The error class name (`ToolNotFoundError`, `FsError`, ...).
    pub name: String,
    /// The stable routing code (`UNKNOWN_TOOL`, `FS_NOT_FOUND`, ...).
    pub code: String,
}

impl ToolErrorInfo {
    pub fn new(name: impl Into<String>, code: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            code: code.into(),
        }
    }
}

/// A successful body's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSuccess {
    /// The canonical value (checked against the tool's output schema, if it has one).
    #[serde(default)]
    pub value: serde_json::Value,
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Tool-private data for readers of the log (a diff, say), never model input.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<serde_json::Value>,
    /// The call ends the turn once its step's calls are done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concludes_turn: bool,
}

/// A failed body's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolError {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What the model sees instead of the message, when the tool has more to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// Tool-private data for readers of the log, as on a success; never model input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            name: None,
            code: None,
            content: None,
            meta: None,
        }
    }

    /// The error with its class and code.
    pub fn coded(mut self, name: impl Into<String>, code: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self.code = Some(code.into());
        self
    }
}

/// A tool body's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolReply {
    Ok(ToolSuccess),
    Error(ToolError),
}

impl ToolReply {
    /// The same reply carrying `meta` for readers of the log.
    pub fn with_meta(mut self, meta: serde_json::Value) -> Self {
        match &mut self {
            Self::Ok(success) => success.meta = Some(meta),
            Self::Error(error) => error.meta = Some(meta),
        }
        self
    }

    /// A success whose value is `{"text": text}` and whose content is that text.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::Ok(ToolSuccess {
            value: serde_json::Value::Object(
                [("text".to_owned(), serde_json::Value::String(text.clone()))]
                    .into_iter()
                    .collect(),
            ),
            content: vec![ContentBlock::text(text)],
            meta: None,
            concludes_turn: false,
        })
    }

    /// A failure with `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error(ToolError::new(message))
    }
}

/// An outcome as `tools/post-execute` listeners and content finalizers see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeSummary {
    pub is_error: bool,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// The answer of `tools/pre-execute`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PreDecision {
    /// Go on (the same as calling `next`: approval and guards still run).
    Allow,
    Deny {
        reason: String,
    },
    /// Put the call to a human; only an `allowed-once` answer lets it through.
    Ask {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A decision a newer policy made that this version cannot read: the call is denied
    /// (fail closed).
    #[serde(untagged)]
    Other(Unknown<PreDecision>),
}

impl OpenTags for PreDecision {
    const TAG: &'static str = "kind";
    const KNOWN: &'static [&'static str] = &["allow", "deny", "ask"];
}

/// The answer of `tools/post-execute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PostDecision {
    /// Keep the outcome, optionally replacing the model-facing content *or* the canonical
    /// value (re-validated and re-rendered by the tool), never both.
    Accept {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Vec<ContentBlock>>,
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        value: Option<serde_json::Value>,
        #[serde(
            default,
            rename = "additionalContexts",
            skip_serializing_if = "Vec::is_empty"
        )]
        additional_contexts: Vec<Message>,
    },
    /// Turn the outcome into an error whose content is corrective feedback for the model.
    Block {
        feedback: Vec<ContentBlock>,
        #[serde(
            default,
            rename = "additionalContexts",
            skip_serializing_if = "Vec::is_empty"
        )]
        additional_contexts: Vec<Message>,
    },
    /// A decision a newer hook made that this version cannot read: the outcome becomes a
    /// pipeline failure rather than passing unexamined.
    #[serde(untagged)]
    Other(Unknown<PostDecision>),
}

impl OpenTags for PostDecision {
    const TAG: &'static str = "kind";
    const KNOWN: &'static [&'static str] = &["accept", "block"];
}

impl PostDecision {
    /// The decision of a listener with nothing to say.
    pub fn accept() -> Self {
        Self::Accept {
            content: None,
            value: None,
            additional_contexts: Vec::new(),
        }
    }
}

/// What a scope may inherit of the tools above it: `allow` keeps only the listed names, `deny`
/// removes the listed names (a deny-only mask lets inherited tools registered later through; an
/// allow list excludes them). Unknown members are refused rather than skipped: a registry that ignored a restriction it did not understand would let more through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Restriction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Vec<String>>,
}

/// One piece of prompt guidance, as the registry lists it for a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolGuidance {
    pub order: i64,
    /// The tool it belongs to.
    pub name: String,
    pub text: String,
}

/// What became of one call of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    pub call_id: String,
    pub is_error: bool,
    /// Seq of its `tool/result` (0 when no session logged it).
    pub seq: u64,
    /// Whether its result reached the session log (always true outside a session).
    pub logged: bool,
    /// Its model-facing content, for a Code Mode sub-call only (the program reads it; a
    /// model step's results are in the log).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    /// Its canonical value, for a successful Code Mode sub-call only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// What a step's calls came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    /// Per call, in the model's order.
    pub results: Vec<CallReport>,
    /// Contexts the hooks added, for the loop to log as user messages after the results.
    #[serde(default)]
    pub additional_contexts: Vec<AdditionalContext>,
    /// A call asked to end the turn.
    #[serde(default)]
    pub concludes_turn: bool,
}

/// Content a hook adds to the history after a step's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdditionalContext {
    pub content: Vec<ContentBlock>,
    /// Where it came from; the plugin source when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::content::MessageSource>,
}

/// The approval service's closed answer vocabulary. Only `allowed-once` lets anything through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalOutcome {
    AllowedOnce,
    Rejected,
    Cancelled,
    Unavailable,
}

impl ApprovalOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AllowedOnce => "allowed-once",
            Self::Rejected => "rejected",
            Self::Cancelled => "cancelled",
            Self::Unavailable => "unavailable",
        }
    }
}

/// What is put to a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The approval's id (logged in `approval/asked` and `approval/decided`); the service
    /// gives one when it is empty.
    #[serde(default)]
    pub id: String,
    pub session: String,
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

//! `dsh-system-prompt-seam`: prompt assembly across the plugin ABI. The `system_prompt` service keeps
//! the sections and variables plugins contribute and assembles, for one request, the system
//! prompt and the context snapshots the loop appends to the history when they change; the
//! `system-prompt/base` bail lets a listener put a text of its own in place of the sections, the
//! `system-prompt/assemble` waterfall lets a listener rewrite the assembled text, and the
//! `system-prompt/contexts` waterfall lets other plugins add snapshots of their own.
//!
//! Requests, sections and assemblies are `dsh-protocol` values crossing as [`Json`].
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{BailEvent, Json, SeamError, WaterfallEvent};
use dsh_protocol::{AssembledPrompt, PromptContext, PromptRequest, PromptSection};

/// Service key of prompt assembly.
pub const SYSTEM_PROMPT_SERVICE: &str = "system_prompt";

/// `system-prompt/base`: a text that stands in for the sections of a request (an agent preset
/// with a prompt of its own answers it for its sessions). The first answer wins; without one
/// the sections are joined. Either way the `system-prompt/assemble` waterfall runs around the
/// result, so what its listeners add (plan mode's policy) is kept under a fixed prompt too.
pub const SYSTEM_PROMPT_BASE: BailEvent<Json<PromptRequest>, RString> =
    BailEvent::new("system-prompt/base");

/// `system-prompt/assemble`: the assembled system prompt text on its way to the request; a
/// listener may answer another text (or call `next` and change what it returns).
pub const SYSTEM_PROMPT_ASSEMBLE: WaterfallEvent<Json<PromptRequest>, RString> =
    WaterfallEvent::new("system-prompt/assemble");

/// `system-prompt/contexts`: the context snapshots of a request; each listener answers `next`'s
/// contexts with its own appended (the innermost default is the system prompt's own), so a
/// contribution always follows the older ones in the history.
pub const SYSTEM_PROMPT_CONTEXTS: WaterfallEvent<Json<PromptRequest>, Json<Vec<PromptContext>>> =
    WaterfallEvent::new("system-prompt/contexts");

/// The key of the runtime context: what the model should know of the session's standing (its
/// sandbox, its approvals, its delegation). A `system-prompt/contexts` contribution under this
/// key and without a source of its own adds its `sections` (its `text` is not read) to that one
/// snapshot, after the system prompt's own sections: the `system_prompt` service renders them
/// into one message, so the model reads one runtime context, not one per contributor.
pub const RUNTIME_CONTEXT: &str = "runtime-context";

/// Keeps a section or a variable registered; dropping it removes it.
#[sabi_trait]
pub trait SectionHandle: Send + Sync {
    fn id(&self) -> RString;
}
pub type SectionHandleBox = SectionHandle_TO<'static, RBox<()>>;

/// The `system_prompt` service.
#[sabi_trait]
pub trait SystemPrompt: Send + Sync {
    /// Adds a section; a second section with the same id is refused.
    fn section(
        &self,
        owner: RString,
        section: Json<PromptSection>,
    ) -> RResult<SectionHandleBox, SeamError>;
    /// Adds a variable for `{{name}}` references in sections (`name` matches
    /// `[a-z][a-z0-9_]*`; `provider`, `model` and `cwd` are built in). A second variable with
    /// the same name is refused.
    fn variable(
        &self,
        owner: RString,
        name: RString,
        value: RString,
    ) -> RResult<SectionHandleBox, SeamError>;
    /// Assembles the prompt of `request`: the registered sections plus the guidance of the
    /// tools its scope sees, each interpolated, empty ones dropped; and the context snapshots.
    /// `Err` names a section that refers to a variable that is unknown, malformed or without
    /// a value.
    fn assemble(
        &self,
        request: Json<PromptRequest>,
    ) -> FfiFuture<RResult<Json<AssembledPrompt>, SeamError>>;
}
pub type SystemPromptService = SystemPrompt_TO<'static, RBox<()>>;

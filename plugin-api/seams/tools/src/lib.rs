//! `dsh-tools-seam`: the tool seam across the plugin ABI. The `tools` service (register a tool,
//! a guard or a restriction in a scope; list the schemas and guidance a scope sees; run the
//! calls of one step through the guarded pipeline), the tool objects plugins register with it,
//! and the `tools/*` events.
//!
//! Declarations, replies, decisions, outcomes and reports are `dsh-protocol` values that cross
//! as [`Json`]: serialized once by their maker, parsed once by their reader, and free to gain
//! optional fields without breaking a tool built against an older seam. A call's identity
//! ([`CallView`]) is a plain ABI struct, and its arguments stay the model's raw string, never
//! re-encoded. Cancellation is `dsh_plugin_api::cancel`'s. The servers a client brings for one
//! session are [`mcp`]'s (`mcp_scopes`). A plugin boxes its tools and guards with [`tool_box`]
//! and [`guard_box`], so a panic in them fails the call instead of ending the host.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

mod contained;
pub mod mcp;

pub use contained::{guard_box, tool_box};

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{EmitEvent, Json, SeamError, WaterfallEvent};
use dsh_protocol::{
    ContentBlock, OutcomeSummary, PostDecision, PreDecision, Restriction, StepReport, ToolDecl,
    ToolGuidance, ToolReply, ToolResultEvent, ToolSchema,
};

/// Service key of the tool registry.
pub const TOOLS_SERVICE: &str = "tools";

/// `tools/pre-execute`: policy before anything runs. A listener answers a [`PreDecision`] or
/// calls `next`; answering allow is the same as calling `next` (it never skips approval or
/// guards). The innermost default allows.
pub const TOOLS_PRE_EXECUTE: WaterfallEvent<CallView, Json<PreDecision>> =
    WaterfallEvent::new("tools/pre-execute");

/// `tools/execute`: wraps the tool body; the innermost default runs the tool and answers its
/// reply (see [`Tool::execute`]). Wrappers see the call as it was frozen and cannot change it.
pub const TOOLS_EXECUTE: WaterfallEvent<CallView, Json<ToolReply>> =
    WaterfallEvent::new("tools/execute");

/// `tools/post-execute`: answers a [`PostDecision`] (accept, replace content or value, block
/// with feedback, additional contexts); the innermost default accepts.
pub const TOOLS_POST_EXECUTE: WaterfallEvent<PostView, Json<PostDecision>> =
    WaterfallEvent::new("tools/post-execute");

/// `tools/result`: one call's frozen result, as it was logged.
pub const TOOLS_RESULT: EmitEvent<ResultView> = EmitEvent::new("tools/result");

/// `tools/code-dispatch-log`: the content of a Code Mode sub-call on its way into the log's
/// `tool/code-dispatch` (a listener may answer a shorter or redacted copy); the program and
/// the model's result are untouched. The innermost default keeps the content.
pub const TOOLS_CODE_DISPATCH_LOG: WaterfallEvent<CodeDispatchView, Json<Vec<ContentBlock>>> =
    WaterfallEvent::new("tools/code-dispatch-log");

/// A settled Code Mode sub-call, for `tools/code-dispatch-log`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct CodeDispatchView {
    /// The sub-call (its `call_id` is `<parent>:code:<n>`).
    pub call: CallView,
    /// The `run_code` call it ran inside.
    pub parent_call_id: RString,
    pub is_error: bool,
    pub content: Json<Vec<ContentBlock>>,
}

/// `tools/change`: a tool, guard or restriction was registered or removed (payload: what, as
/// the registration describes itself).
pub const TOOLS_CHANGE: EmitEvent<RString> = EmitEvent::new("tools/change");

/// One call as hooks and guards see it; `arguments` is the model's raw string.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct CallView {
    /// The session the call belongs to (empty when run outside a session).
    pub session: RString,
    /// The agent scope chain, farthest ancestor first (empty: the global view).
    pub scope: RVec<RString>,
    pub turn: u64,
    pub step: u64,
    pub call_id: RString,
    pub name: RString,
    pub arguments: RString,
    /// The working directory tools resolve relative paths against.
    pub cwd: RString,
}

/// A call with the outcome it came to, for `tools/post-execute`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct PostView {
    pub call: CallView,
    pub outcome: Json<OutcomeSummary>,
}

/// A call's frozen result, for `tools/result`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ResultView {
    pub call: CallView,
    /// The logged `tool/result` data.
    pub result: Json<ToolResultEvent>,
    /// Sequence number of the `tool/result` event (0 when no session logged it).
    pub seq: u64,
}

/// A registered tool. Only the declaration's name, description and parameters ever reach a
/// model request.
#[sabi_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> Json<ToolDecl>;
    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>>;
    /// Whether this call may overlap with neighbouring calls, for a `per-call` declaration
    /// (`None`: exclusive).
    fn parallel_safe(&self, arguments: RString) -> ROption<bool>;
    /// The last word on a finished outcome's content, run exactly once per outcome; `None`
    /// keeps the content.
    fn finalize_content(&self, outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>>;
    /// The output renderer: the content for a value of this tool, used when
    /// `tools/post-execute` replaces a result's value. `None`: this tool renders no values,
    /// and such a replacement fails the call.
    fn render(&self, value: Json<serde_json::Value>) -> ROption<Json<Vec<ContentBlock>>> {
        let _ = value;
        ROption::RNone
    }
}
/// A registered tool's box: made only by [`tool_box`], so every tool the registry holds runs
/// with its panics contained.
#[repr(transparent)]
#[derive(StableAbi)]
pub struct ToolBox(Tool_TO<'static, RBox<()>>);

impl std::ops::Deref for ToolBox {
    type Target = Tool_TO<'static, RBox<()>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A monotonic guard: `Some(reason)` denies, `None` abstains; it can never allow.
#[sabi_trait]
pub trait Guard: Send + Sync {
    fn check(&self, call: &CallView) -> ROption<RString>;
}
/// A registered guard's box: made only by [`guard_box`] (a guard that panics denies).
#[repr(transparent)]
#[derive(StableAbi)]
pub struct GuardBox(Guard_TO<'static, RBox<()>>);

impl std::ops::Deref for GuardBox {
    type Target = Guard_TO<'static, RBox<()>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Keeps a registration alive; dropping it removes exactly that registration (hold it until
/// your plugin unloads, for example with `ctx.effect`).
#[sabi_trait]
pub trait Registration: Send + Sync {
    fn describe(&self) -> RString;
}
pub type RegistrationBox = Registration_TO<'static, RBox<()>>;

/// The calls of one step, in the model's order.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct StepCalls {
    pub session: RString,
    pub scope: RVec<RString>,
    pub turn: u64,
    pub step: u64,
    pub cwd: RString,
    pub calls: RVec<StepCall>,
}

/// One call of a step, as the model wrote it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct StepCall {
    pub call_id: RString,
    pub name: RString,
    pub arguments: RString,
}

/// The `tools` service.
#[sabi_trait]
pub trait Tools: Send + Sync {
    /// Registers `tool` in the layer of `scope` (empty: global). A second tool of the same name
    /// in one layer is refused naming both owners.
    fn register(
        &self,
        owner: RString,
        scope: RString,
        tool: ToolBox,
    ) -> RResult<RegistrationBox, SeamError>;
    fn guard(&self, owner: RString, guard: GuardBox) -> RegistrationBox;
    /// Restricts what `scope` inherits; names no layer knows are refused.
    fn restrict(
        &self,
        owner: RString,
        scope: RVec<RString>,
        restriction: Json<Restriction>,
    ) -> RResult<RegistrationBox, SeamError>;
    /// The tool schemas `scope` sees, in request order. The text is the same as long as the
    /// registry is, so a caller may compare it to tell whether the list changed.
    fn schemas(&self, scope: RVec<RString>) -> RResult<Json<Vec<ToolSchema>>, SeamError>;
    /// The prompt guidance of the tools `scope` sees, by order then name.
    fn guidance(&self, scope: RVec<RString>) -> Json<Vec<ToolGuidance>>;
    /// Runs one step's calls; never fails: every failure is an error result.
    fn run_step(&self, step: StepCalls, cancel: CancelBox) -> FfiFuture<Json<StepReport>>;
    /// Runs calls a Code Mode program made inside the model's call `parent` (its `run_code`
    /// call) through the same pipeline as [`Tools::run_step`] (policy, approval, guards,
    /// execute, post-execute, `tools/result`), except that each is logged as
    /// `tool/code-dispatch-start` and `tool/code-dispatch` (through `tools/code-dispatch-log`)
    /// instead of `tool/call` and `tool/result`, and its report carries its content and value
    /// for the program. The caller names each call `<parent>:code:<n>`.
    fn run_code_calls(
        &self,
        parent: RString,
        step: StepCalls,
        cancel: CancelBox,
    ) -> FfiFuture<Json<StepReport>> {
        let _ = (parent, cancel);
        // A registry too old for Code Mode answers every call as an error.
        let results = step
            .calls
            .iter()
            .map(|call| dsh_protocol::CallReport {
                call_id: call.call_id.to_string(),
                is_error: true,
                seq: 0,
                logged: false,
                content: vec![ContentBlock::text(
                    "this tools service cannot run Code Mode sub-calls",
                )],
                value: None,
            })
            .collect();
        let report = StepReport {
            results,
            ..StepReport::default()
        };
        async move { Json::encode(&report) }.into_ffi()
    }
}
pub type ToolsService = Tools_TO<'static, RBox<()>>;

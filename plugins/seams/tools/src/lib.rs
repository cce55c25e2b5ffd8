//! The tool seam across the plugin ABI: the `tools` service (register a tool, a guard or a
//! restriction in a scope; list the schemas a scope sees; run the calls of one step through the
//! guarded pipeline), the tool objects plugins register with it, the cancellation signal the
//! pipeline hands to a tool body, and the `tools/*` events.
//!
//! Specs, arguments, outcomes and decisions cross as JSON in the vocabulary of
//! `dsh-tools-core` and `dsh-llm-api`: a call's arguments are the model's raw string (never
//! re-encoded), and a result is logged as JSON anyway, so each is serialized once.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RArc, RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, WaterfallEvent};

/// Service key of the tool registry.
pub const TOOLS: &str = "tools";

/// `tools/pre-execute`: policy before anything runs. A listener answers a `PreDecision` as JSON
/// (`{"kind":"allow"}`, `{"kind":"deny","reason":..}`, `{"kind":"ask","reason":..}`) or calls
/// `next`; answering allow is the same as calling `next` (it never skips approval or guards).
pub const TOOLS_PRE_EXECUTE: WaterfallEvent<CallView, RString> =
    WaterfallEvent::new("tools/pre-execute");

/// `tools/execute`: wraps the tool body; the innermost default runs the tool and answers its
/// reply (see [`Tool::execute`]). Wrappers see the call as it was frozen and cannot change it.
pub const TOOLS_EXECUTE: WaterfallEvent<CallView, RString> = WaterfallEvent::new("tools/execute");

/// `tools/post-execute`: answers a `PostDecision` as JSON (accept, replace content or value,
/// block with feedback, additional contexts); the innermost default accepts.
pub const TOOLS_POST_EXECUTE: WaterfallEvent<PostView, RString> =
    WaterfallEvent::new("tools/post-execute");

/// `tools/result`: one call's frozen result (the `tool/result` event data as JSON).
pub const TOOLS_RESULT: EmitEvent<ResultView> = EmitEvent::new("tools/result");

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
    /// `{"isError":bool,"content":[..],"code":..}` of the outcome so far.
    pub outcome: RString,
}

/// A call's frozen result, for `tools/result`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ResultView {
    pub call: CallView,
    /// The logged `tool/result` data.
    pub result: RString,
    /// Sequence number of the `tool/result` event (0 when no session logged it).
    pub seq: u64,
}

/// A cancellation signal. Tool bodies stop early when it fires; the pipeline fuses the caller's
/// signal with its own (timeouts), so a body only ever watches one.
#[sabi_trait]
pub trait Cancel: Send + Sync {
    fn is_cancelled(&self) -> bool;
    /// Resolves once cancelled (at once when already cancelled).
    fn cancelled(&self) -> FfiFuture<()>;
}
pub type CancelBox = Cancel_TO<'static, RArc<()>>;

/// A registered tool.
///
/// `spec` is `{"name","description","parameters","concurrency":"parallel"|"exclusive",
/// "timeoutMs"?}`; only name, description and parameters ever reach a model request.
///
/// `execute` answers a reply as JSON: `{"ok":{"value":..,"content":[..],"meta"?:..}}` or
/// `{"error":{"message":..,"name"?:..,"code"?:..,"content"?:[..]}}`. Content blocks are
/// `dsh-llm-api` blocks (`{"type":"text","text":..}`).
#[sabi_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> RString;
    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<RString>;
    /// Whether this call may overlap with neighbouring calls (`None`: the spec's class).
    fn parallel_safe(&self, arguments: RString) -> ROption<bool>;
    /// The last word on a finished outcome's content (`{"isError","content"}` in, content
    /// blocks out), run exactly once per outcome; `None` keeps the content.
    fn finalize_content(&self, outcome: RString) -> ROption<RString>;
    /// The output renderer: content blocks (JSON) for a value (JSON) of this tool, used when
    /// `tools/post-execute` replaces a result's value. `None`: this tool renders no values,
    /// and such a replacement fails the call.
    fn render(&self, value: RString) -> ROption<RString> {
        let _ = value;
        ROption::RNone
    }
}
pub type ToolBox = Tool_TO<'static, RBox<()>>;

/// A monotonic guard: `Some(reason)` denies, `None` abstains; it can never allow.
#[sabi_trait]
pub trait Guard: Send + Sync {
    fn check(&self, call: &CallView) -> ROption<RString>;
}
pub type GuardBox = Guard_TO<'static, RBox<()>>;

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
    /// `(call id, tool name, raw arguments)` per call.
    pub calls: RVec<StepCall>,
}

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
    ) -> RResult<RegistrationBox, RString>;
    fn guard(&self, owner: RString, guard: GuardBox) -> RegistrationBox;
    /// Restricts what `scope` inherits (`{"allow":[..]}` / `{"deny":[..]}`); unknown names fail.
    fn restrict(
        &self,
        owner: RString,
        scope: RVec<RString>,
        restriction: RString,
    ) -> RResult<RegistrationBox, RString>;
    /// The tool schemas `scope` sees, in request order (`[{"name","description","parameters"}]`).
    fn schemas(&self, scope: RVec<RString>) -> RResult<RString, RString>;
    /// The prompt guidance of the tools `scope` sees, by order then name
    /// (`[{"order","name","text"}]`; a tool declares it as `"guidance": {"order","text"}` in its
    /// spec).
    fn guidance(&self, scope: RVec<RString>) -> RString;
    /// Runs one step's calls; never fails: every failure is an error result. Answers
    /// `{"results":[{"callId","isError","seq"}..],"additionalContexts":[..],"concludesTurn":bool}`.
    fn run_step(&self, step: StepCalls, cancel: CancelBox) -> FfiFuture<RString>;
}
pub type ToolsService = Tools_TO<'static, RBox<()>>;

/// A ready-made cancellation signal: a one-shot flag with wakers, for callers of `run_step`
/// and for anything else that needs a [`CancelBox`].
#[derive(Default)]
pub struct CancelFlag {
    fired: std::sync::atomic::AtomicBool,
    wakers: std::sync::Mutex<Vec<std::task::Waker>>,
}

impl CancelFlag {
    pub fn new() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self::default())
    }

    pub fn fire(&self) {
        self.fired.store(true, std::sync::atomic::Ordering::Release);
        // Taken out first: wakers run after the lock is released.
        let wakers = std::mem::take(&mut *dsh_plugin_api::lock(&self.wakers));
        for waker in wakers {
            waker.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Resolves once fired.
    pub fn wait(
        self: &std::sync::Arc<Self>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let flag = self.clone();
        std::future::poll_fn(move |cx| {
            if flag.is_fired() {
                return std::task::Poll::Ready(());
            }
            {
                // One entry per task: a task that waits again (a new wait per chunk) does not
                // grow the list.
                let mut wakers = dsh_plugin_api::lock(&flag.wakers);
                if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
            }
            // Checked again: `fire` may have run between the first check and the push.
            if flag.is_fired() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }

    /// Runs `future` until it finishes (`Some`) or this flag fires first (`None`, the future
    /// is dropped).
    pub async fn until<F: std::future::Future>(
        self: &std::sync::Arc<Self>,
        future: F,
    ) -> Option<F::Output> {
        match first_of(future, self.wait()).await {
            Either::Left(value) => Some(value),
            Either::Right(()) => None,
        }
    }

    /// This flag as a signal for the seam.
    pub fn signal(self: &std::sync::Arc<Self>) -> CancelBox {
        Cancel_TO::from_ptr(
            RArc::new(FlagSignal(self.clone())),
            abi_stable::sabi_trait::TD_Opaque,
        )
    }
}

struct FlagSignal(std::sync::Arc<CancelFlag>);

impl Cancel for FlagSignal {
    fn is_cancelled(&self) -> bool {
        self.0.is_fired()
    }

    fn cancelled(&self) -> FfiFuture<()> {
        async_ffi::FutureExt::into_ffi(self.0.wait())
    }
}

/// Service key of the approval service.
pub const APPROVAL: &str = "approval";

/// `approval/request`: the answerer chain (a UI, an ACP client); the first listener that
/// answers an outcome wins. The innermost default answers `unavailable`: no one to ask.
pub const APPROVAL_REQUEST: WaterfallEvent<ApprovalAsk, RString> =
    WaterfallEvent::new("approval/request");

/// What is put to a human.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAsk {
    /// The approval's id (logged in `approval/asked` and `approval/decided`).
    pub id: RString,
    pub session: RString,
    pub tool_name: RString,
    pub call_id: RString,
    pub reason: RString,
}

/// The approval service. Outcomes are `allowed-once`, `rejected`, `cancelled`, `unavailable`;
/// only `allowed-once` lets anything through, and nothing is approved automatically.
#[sabi_trait]
pub trait Approval: Send + Sync {
    fn request(&self, ask: ApprovalAsk) -> FfiFuture<RString>;
    /// The policy asks are decided by: `ask` (put to the answerers) or `never` (rejected).
    fn policy(&self) -> RString {
        RString::from("ask")
    }
}
pub type ApprovalService = Approval_TO<'static, RBox<()>>;

/// Which of two futures finished first.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures and answers the first to finish, dropping the other (`a` wins a tie).
pub async fn first_of<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(move |cx| {
        if let std::task::Poll::Ready(value) = a.as_mut().poll(cx) {
            return std::task::Poll::Ready(Either::Left(value));
        }
        if let std::task::Poll::Ready(value) = b.as_mut().poll(cx) {
            return std::task::Poll::Ready(Either::Right(value));
        }
        std::task::Poll::Pending
    })
    .await
}

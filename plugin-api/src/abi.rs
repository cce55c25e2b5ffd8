//! The ABI-stable types that cross the boundary between `dsh-host` and a plugin library.
//!
//! Everything here is `#[repr(C)]` and derives `StableAbi`, so the host checks the layout of the
//! whole surface (reachable from [`PluginLib`]) when it loads a library. Extending the root module
//! means adding fields after the `last_prefix_field`; changing anything else is a semver-major
//! change of this crate.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(unreachable_pub, reason = "sabi_trait generates public helper items")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]
#![allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "erased payload pointers are built only by the typed SDK and the host dispatcher, which check the layout first"
)]

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RArc, RBox, ROption, RResult, RStr, RString, RVec},
    type_layout::TypeLayout,
};
use async_ffi::FfiFuture;

/// The root module every plugin library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginLibRef)))]
#[sabi(missing_field(panic))]
pub struct PluginLib {
    /// Called once per loaded copy of the library, before anything else: installs the log
    /// forwarder and the panic hook of the library's own `std`.
    pub init: extern "C" fn(sink: LogSinkBox),
    /// The plugins this library exports, in declaration order.
    #[sabi(last_prefix_field)]
    pub plugins: extern "C" fn() -> RResult<RVec<PluginDecl>, PluginError>,
}

impl RootModule for PluginLibRef {
    declare_root_module_statics! {PluginLibRef}
    const BASE_NAME: &'static str = "dsh_plugin";
    const NAME: &'static str = "dsh plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// One exported plugin: what it needs, what it provides, and how to start it.
#[repr(C)]
#[derive(StableAbi)]
pub struct PluginDecl {
    /// Export name, unique within the library.
    pub name: RString,
    /// JSON Schema of the config, as JSON text, built when asked: building it at every load
    /// ran each library's schema code for nothing the host needed to start the row.
    pub config_schema: extern "C" fn() -> RString,
    /// Services that must be present before `apply` runs.
    pub inject: RVec<RString>,
    /// Services the plugin probes with `get` but can live without.
    pub optional: RVec<RString>,
    /// Services the plugin registers from `apply`.
    pub provides: RVec<RString>,
    /// Validates `config` (JSON text) and runs the plugin body.
    pub apply: extern "C" fn(ctx: HostCtx, config: RString) -> FfiFuture<RResult<(), PluginError>>,
}

/// What went wrong in a plugin, as it crosses the boundary.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    pub kind: ErrorKind,
    pub message: RString,
    /// JSON path of an invalid config value (`$.targets[0]`), when `kind` is `Config`.
    pub path: ROption<RString>,
}

/// The class of a [`PluginError`].
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The row's config does not match the plugin's schema; `apply` was not called.
    Config,
    /// Plugin code panicked; the panic was caught at the boundary.
    Panic,
    /// The plugin returned an error.
    Plugin,
    /// A registration was refused (duplicate service, layout mismatch, inactive context...).
    Registration,
    /// A dispatch could not be completed (waterfall `next` called twice, listener failure...).
    Dispatch,
}

/// Severity of a forwarded log record.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// How an event is dispatched. Fixed when the event is declared.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DispatchMode {
    Emit,
    Parallel,
    Serial,
    Bail,
    Waterfall,
}

impl DispatchMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Emit => "emit",
            Self::Parallel => "parallel",
            Self::Serial => "serial",
            Self::Bail => "bail",
            Self::Waterfall => "waterfall",
        }
    }
}

/// A `&'static TypeLayout` that can cross the boundary as an opaque pointer.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy)]
pub struct LayoutRef {
    #[sabi(unsafe_opaque_field)]
    layout: &'static TypeLayout,
}

impl LayoutRef {
    pub const fn of<T: StableAbi>() -> Self {
        Self { layout: T::LAYOUT }
    }
    pub fn get(self) -> &'static TypeLayout {
        self.layout
    }
}

impl std::fmt::Debug for LayoutRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.layout.full_type())
    }
}

/// The declaration of an event as a dispatcher or listener sees it.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct EventDecl {
    pub name: RStr<'static>,
    pub mode: DispatchMode,
    /// Layout of the payload `P`.
    pub payload: LayoutRef,
    /// Layout of the result `R` (`()` for emit and parallel).
    pub output: LayoutRef,
}

/// A service as stored by the host: a shared value of a checked layout.
#[repr(C)]
#[derive(StableAbi, Clone)]
pub struct ErasedService {
    pub layout: LayoutRef,
    /// An `RArc<S>` whose element type was erased.
    pub value: RArc<()>,
}

/// A boxed value whose type was erased (`RBox<R>` transmuted to `RBox<()>`).
pub type ErasedBox = RBox<()>;

/// The result of a listener call: `RSome` stops a bail or serial dispatch.
pub type ListenerResult = RResult<ROption<ErasedBox>, PluginError>;

/// The result of one level of a waterfall: the erased `R` of the event, or its failure.
pub type WaterfallResult = RResult<ErasedBox, PluginError>;

/// Where plugin log records and panic messages go.
#[sabi_trait]
pub trait LogSink: Send + Sync {
    fn log(&self, level: LogLevel, target: RStr<'_>, message: RStr<'_>);
}
pub type LogSinkBox = LogSink_TO<'static, RBox<()>>;

/// A listener for the synchronous modes (emit, bail). `payload` points to a `P` the dispatcher
/// borrows for the duration of the call.
#[sabi_trait]
pub trait SyncListener: Send + Sync {
    fn call(&self, payload: *const ()) -> ListenerResult;
}
pub type SyncListenerBox = SyncListener_TO<'static, RBox<()>>;

/// A listener for the asynchronous modes (parallel, serial). `payload` is an erased `RArc<P>`;
/// the call answers one boxed future, which the dispatcher polls and drops.
#[sabi_trait]
pub trait AsyncListener: Send + Sync {
    fn call(&self, payload: RArc<()>) -> FfiFuture<ListenerResult>;
}
pub type AsyncListenerBox = AsyncListener_TO<'static, RBox<()>>;

/// The rest of a running waterfall after one listener: the host's chain and the position of
/// the listener it was handed to. Running it a second time is an error.
#[sabi_trait]
pub trait WaterfallNext: Send + Sync {
    fn run(&self) -> FfiFuture<WaterfallResult>;
}
pub type NextBox = WaterfallNext_TO<'static, RBox<()>>;

/// A waterfall listener: middleware around the rest of the chain, which `next` runs.
/// `payload` is an erased `RArc<P>`.
#[sabi_trait]
pub trait WaterfallListener: Send + Sync {
    fn call(&self, payload: RArc<()>, next: NextBox) -> FfiFuture<WaterfallResult>;
}
pub type WaterfallListenerBox = WaterfallListener_TO<'static, RBox<()>>;

/// The innermost default of a waterfall dispatch, supplied by the dispatcher; run at most once.
#[sabi_trait]
pub trait WaterfallInner: Send + Sync {
    fn run(&self, payload: RArc<()>) -> FfiFuture<WaterfallResult>;
}
pub type WaterfallInnerBox = WaterfallInner_TO<'static, RBox<()>>;

/// A host-side event channel, resolved once and dispatched many times.
#[sabi_trait]
pub trait EventChannel: Send + Sync {
    fn emit(&self, payload: *const ()) -> RResult<(), PluginError>;
    fn bail(&self, payload: *const ()) -> ListenerResult;
    fn parallel(&self, payload: RArc<()>) -> FfiFuture<RResult<(), PluginError>>;
    fn serial(&self, payload: RArc<()>) -> FfiFuture<ListenerResult>;
    /// Runs the chain of the event's listeners around `inner`.
    fn waterfall(&self, payload: RArc<()>, inner: WaterfallInnerBox) -> FfiFuture<WaterfallResult>;
}
pub type EventChannelBox = EventChannel_TO<'static, RBox<()>>;

/// An effect's release: started when the owning fiber unloads, awaited to completion.
#[sabi_trait]
pub trait Disposer: Send {
    fn dispose(&mut self) -> FfiFuture<RResult<(), PluginError>>;
}
pub type DisposerBox = Disposer_TO<'static, RBox<()>>;

/// Work for the host's blocking pool.
#[sabi_trait]
pub trait BlockingJob: Send {
    fn run(&mut self) -> RResult<(), PluginError>;
}
pub type BlockingJobBox = BlockingJob_TO<'static, RBox<()>>;

/// The host as one fiber sees it. Every registration made through it is owned by that fiber and
/// force-dropped when the fiber unloads.
#[sabi_trait]
pub trait HostContext: Send + Sync {
    /// Another handle on the same fiber context.
    fn clone_ctx(&self) -> HostCtx;
    /// The fiber's numeric id (unique for the life of the process).
    fn fiber_id(&self) -> u64;
    /// The id of the config row the fiber was mounted from.
    fn row_id(&self) -> RString;
    /// Whether registrations are still accepted (false once the fiber is unloading).
    fn is_active(&self) -> bool;
    fn log(&self, level: LogLevel, message: RStr<'_>);
    /// Registers `service` under `name` in the fiber's realm; visible to others once `apply`
    /// returns successfully.
    fn provide(&self, name: RStr<'_>, service: ErasedService) -> RResult<(), PluginError>;
    /// Looks up a service, checking that its layout matches `expected`.
    fn service(
        &self,
        name: RStr<'_>,
        expected: LayoutRef,
    ) -> RResult<ROption<ErasedService>, PluginError>;
    /// Resolves the channel of an event, declaring it on first use.
    fn event(&self, decl: EventDecl) -> RResult<EventChannelBox, PluginError>;
    fn on_sync(
        &self,
        decl: EventDecl,
        listener: SyncListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError>;
    fn on_async(
        &self,
        decl: EventDecl,
        listener: AsyncListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError>;
    fn on_waterfall(
        &self,
        decl: EventDecl,
        listener: WaterfallListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError>;
    /// Registers a disposer that runs when the fiber unloads.
    fn effect(&self, disposer: DisposerBox) -> RResult<(), PluginError>;
    /// Runs `task` on the host runtime; the task is aborted when the fiber unloads.
    fn spawn(&self, task: FfiFuture<()>) -> RResult<(), PluginError>;
    /// Resolves after `millis` milliseconds on the host's timer.
    fn sleep(&self, millis: u64) -> FfiFuture<()>;
    /// Runs `job` on the host's blocking pool.
    fn spawn_blocking(&self, job: BlockingJobBox) -> FfiFuture<RResult<(), PluginError>>;
    /// Mounts a child plugin (`library` or `library/export`) owned by this fiber.
    fn mount(&self, plugin: RStr<'_>, config_json: RString) -> RResult<u64, PluginError>;
    /// Resolves when fiber `fiber` (a child from `mount`) is ACTIVE, or with its error once
    /// it FAILED or is gone. A PENDING fiber keeps it waiting: callers race it with a timeout.
    fn settled(&self, fiber: u64) -> FfiFuture<RResult<(), PluginError>>;
    /// Disposes fiber `fiber`, a child this fiber mounted, and resolves once it is unloaded;
    /// refuses a fiber that is not one of its children.
    fn unmount(&self, fiber: u64) -> FfiFuture<RResult<(), PluginError>>;
}
pub type HostCtx = HostContext_TO<'static, RBox<()>>;

/// The key of the host's `cmdline` service, whose value is [`CmdlineArgs`].
pub const CMDLINE_SERVICE: &str = "cmdline";

/// The value of the host's `cmdline` service: the application arguments that followed the host
/// options (or `--`), unchanged, for the profile's entry plugin to parse.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct CmdlineArgs {
    pub args: RVec<RString>,
}

//! The `tools` service: registrations (tools, guards, restrictions) that undo themselves when
//! dropped, the schemas a scope sees, and the entry into the step pipeline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, EmitEvent, SeamError, SeamErrorKind, lock};
use dsh_protocol::{
    Concurrency as DeclaredConcurrency, ContentBlock, PostDecision, PreDecision, Restriction,
    StepReport, ToolDecl, ToolGuidance, ToolReply, ToolSchema,
};
use dsh_tools_core::{
    Concurrency, ConcurrencyClass, Layer, RegistrationId, RegistryError, Scope, ScopeKey,
    ToolFailure, ToolOrder, ToolRegistry, ToolSpec,
};
use dsh_tools_seam::{
    CallView, CodeDispatchView, GuardBox, PostView, Registration, Registration_TO, RegistrationBox,
    ResultView, StepCalls, ToolBox, Tools,
};
use serde_json::Value;

/// Texts rendered per scope chain, with the registry generation they were rendered at: a loop
/// asks every step and the registry rarely changes, so each is rendered once per change.
type RenderCache = Mutex<HashMap<Vec<String>, (u64, RString)>>;

/// The text `chain` gets from `cache`, rendered again only when the registry changed.
fn cached<E>(
    cache: &RenderCache,
    chain: &RVec<RString>,
    generation: u64,
    render: impl FnOnce() -> Result<RString, E>,
) -> Result<RString, E> {
    let key: Vec<String> = chain.iter().map(|key| key.to_string()).collect();
    if let Some((seen, text)) = lock(cache).get(&key)
        && *seen == generation
    {
        return Ok(text.clone());
    }
    let text = render()?;
    lock(cache).insert(key, (generation, text.clone()));
    Ok(text)
}

/// Everything the service and the pipeline share.
/// The one timeout policy of every call (`TOOL_TIMEOUT` when it fires): a tool's declared
/// timeout, else the default, never more than the cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) default_ms: u64,
    pub(crate) max_ms: u64,
}

pub(crate) struct Shared {
    pub(crate) ctx: Context,
    pub(crate) registry: Mutex<ToolRegistry<Arc<ToolBox>>>,
    /// The schema list each scope chain last got.
    schemas: RenderCache,
    /// The guidance list each scope chain last got.
    guidance: RenderCache,
    pub(crate) guards: Mutex<Vec<(u64, Arc<GuardBox>)>>,
    next_guard: AtomicU64,
    pub(crate) order: ToolOrder,
    pub(crate) max_parallel: usize,
    pub(crate) timeouts: Timeouts,
    pub(crate) pre_execute: Channel<WaterfallEvent<CallView, Json<PreDecision>>>,
    pub(crate) execute: Channel<WaterfallEvent<CallView, Json<ToolReply>>>,
    pub(crate) post_execute: Channel<WaterfallEvent<PostView, Json<PostDecision>>>,
    pub(crate) result: Channel<EmitEvent<ResultView>>,
    pub(crate) code_dispatch_log:
        Channel<WaterfallEvent<CodeDispatchView, Json<Vec<ContentBlock>>>>,
    change: Channel<EmitEvent<RString>>,
}

impl Shared {
    pub(crate) fn new(
        ctx: Context,
        order: ToolOrder,
        max_parallel: usize,
        timeouts: Timeouts,
    ) -> Result<Self, PluginError> {
        Ok(Self {
            registry: Mutex::new(ToolRegistry::new()),
            schemas: RenderCache::default(),
            guidance: RenderCache::default(),
            guards: Mutex::new(Vec::new()),
            next_guard: AtomicU64::new(1),
            order,
            max_parallel,
            timeouts,
            pre_execute: ctx.channel(&dsh_tools_seam::TOOLS_PRE_EXECUTE)?,
            execute: ctx.channel(&dsh_tools_seam::TOOLS_EXECUTE)?,
            post_execute: ctx.channel(&dsh_tools_seam::TOOLS_POST_EXECUTE)?,
            result: ctx.channel(&dsh_tools_seam::TOOLS_RESULT)?,
            code_dispatch_log: ctx.channel(&dsh_tools_seam::TOOLS_CODE_DISPATCH_LOG)?,
            change: ctx.channel(&dsh_tools_seam::TOOLS_CHANGE)?,
            ctx,
        })
    }

    /// The tool `name` resolves to in the scope chain `scope` now. Cloned under the registry
    /// lock, so the tool's own code runs outside it.
    pub(crate) fn tool(&self, scope: &[RString], name: &str) -> Option<Arc<ToolBox>> {
        let registry = lock(&self.registry);
        registry
            .get(&scope_of(scope), name)
            .map(|tool| tool.payload().clone())
    }

    /// The tool `name` resolves to in `scope`, with its timeout, once `arguments` pass its
    /// schema: `UNKNOWN_TOOL` or `INVALID_ARGS` otherwise.
    pub(crate) fn checked_tool(
        &self,
        scope: &[RString],
        name: &str,
        arguments: &Value,
    ) -> Result<(Arc<ToolBox>, Option<u64>), ToolFailure> {
        let registry = lock(&self.registry);
        let tool = registry.lookup(&scope_of(scope), name)?;
        tool.spec().validate_arguments(arguments)?;
        let limit = tool
            .spec()
            .timeout_ms()
            .unwrap_or(self.timeouts.default_ms)
            .min(self.timeouts.max_ms);
        Ok((tool.payload().clone(), Some(limit)))
    }

    /// Announces `tools/change`; the registry's locks are released by then.
    fn changed(&self, what: &str) {
        if let Err(error) = self.change.emit(&RString::from(what)) {
            self.ctx.log(
                dsh_plugin_api::LogLevel::Warn,
                &format!("tools/change: {error}"),
            );
        }
    }

    /// The first guard that denies `call`, if any.
    pub(crate) fn guard_denial(&self, call: &CallView) -> Option<String> {
        let guards: Vec<Arc<GuardBox>> = lock(&self.guards)
            .iter()
            .map(|(_, guard)| guard.clone())
            .collect();
        guards
            .iter()
            .find_map(|guard| guard.check(call).into_option().map(RString::into_string))
    }
}

/// The viewing scope of an agent chain (empty: global).
pub(crate) fn scope_of(chain: &[RString]) -> Scope {
    if chain.is_empty() {
        Scope::global()
    } else {
        Scope::from_chain(
            chain
                .iter()
                .map(|key| ScopeKey::new(key.as_str()))
                .collect(),
        )
    }
}

/// A registration or restriction the registry refused, classed for the caller.
fn refused(error: &RegistryError) -> SeamError {
    let kind = match error {
        RegistryError::DuplicateTool { .. } => SeamErrorKind::Conflict,
        RegistryError::RestrictUnknown { .. } => SeamErrorKind::NotFound,
        RegistryError::ReservedName { .. }
        | RegistryError::InvalidParameters { .. }
        | RegistryError::InvalidTimeout { .. }
        | RegistryError::RestrictGlobal
        | RegistryError::EmptyRestriction
        | RegistryError::RestrictReserved => SeamErrorKind::Invalid,
    };
    SeamError::new(kind, error.to_string())
}

/// A tool declaration the registry cannot take.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeclError {
    #[error("its declaration does not read: {0}")]
    Unreadable(dsh_plugin_api::DecodeError),
    #[error("tool `{0}` declares an empty name or description")]
    Empty(String),
}

/// A tool's spec from its declaration; `tool` answers per-call concurrency questions.
fn spec_of(decl: ToolDecl, tool: &Arc<ToolBox>) -> Result<ToolSpec, DeclError> {
    if decl.name.is_empty() || decl.description.is_empty() {
        return Err(DeclError::Empty(decl.name));
    }
    let mut spec = if decl.passthrough {
        ToolSpec::passthrough(decl.name, decl.description, decl.parameters)
    } else {
        ToolSpec::new(decl.name, decl.description, decl.parameters)
    };
    spec = match decl.concurrency {
        DeclaredConcurrency::Exclusive => spec,
        DeclaredConcurrency::Parallel => spec.with_concurrency(ConcurrencyClass::Parallel),
        DeclaredConcurrency::PerCall => {
            let tool = tool.clone();
            spec.with_concurrency(ConcurrencyClass::PerCall(Arc::new(
                move |arguments| match tool.parallel_safe(RString::from(arguments.to_string())) {
                    abi_stable::std_types::RSome(true) => Concurrency::Parallel,
                    _ => Concurrency::Exclusive,
                },
            )))
        }
    };
    if let Some(guidance) = decl.guidance {
        spec = spec.with_guidance(guidance.order, guidance.text);
    }
    if let Some(millis) = decl.timeout_ms {
        spec = spec.with_timeout_ms(millis);
    }
    Ok(spec)
}

/// What a held registration undoes.
enum Undo {
    Registry(RegistrationId),
    Guard(u64),
}

/// Removes its registration when dropped.
struct Held {
    shared: Weak<Shared>,
    undo: Undo,
    what: String,
}

impl Registration for Held {
    fn describe(&self) -> RString {
        RString::from(self.what.as_str())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        match self.undo {
            Undo::Registry(id) => {
                // The removed tool object is dropped after the lock is released: its
                // destructor is the registering plugin's code.
                let removed = lock(&shared.registry).remove(id);
                drop(removed);
            }
            Undo::Guard(id) => {
                let removed = {
                    let mut guards = lock(&shared.guards);
                    let index = guards.iter().position(|(guard_id, _)| *guard_id == id);
                    index.map(|index| guards.remove(index))
                };
                drop(removed);
            }
        }
        shared.changed(&self.what);
    }
}

pub(crate) struct Service(pub Arc<Shared>);

impl Service {
    fn held(&self, undo: Undo, what: String) -> RegistrationBox {
        self.0.changed(&what);
        Registration_TO::from_value(
            Held {
                shared: Arc::downgrade(&self.0),
                undo,
                what,
            },
            TD_Opaque,
        )
    }
}

impl Tools for Service {
    fn register(
        &self,
        owner: RString,
        scope: RString,
        tool: ToolBox,
    ) -> RResult<RegistrationBox, SeamError> {
        let tool = Arc::new(tool);
        let spec = match tool.spec().decode().map_err(DeclError::Unreadable) {
            Ok(decl) => spec_of(decl, &tool),
            Err(error) => Err(error),
        };
        let spec = match spec {
            Ok(spec) => spec,
            Err(error) => return RErr(SeamError::invalid(format!("{owner}: {error}"))),
        };
        let name = spec.name().to_owned();
        let layer = if scope.is_empty() {
            Layer::Global
        } else {
            Layer::Scoped(ScopeKey::new(scope.as_str()))
        };
        // A refused registration drops its copy under the lock; ours (`tool`) is released after
        // it, so the plugin's destructor never runs while the registry is locked.
        let registered = lock(&self.0.registry).register(layer, owner.as_str(), spec, tool.clone());
        drop(tool);
        match registered {
            Ok(id) => ROk(self.held(Undo::Registry(id), format!("tool `{name}`"))),
            Err(error) => RErr(refused(&error)),
        }
    }

    fn guard(&self, owner: RString, guard: GuardBox) -> RegistrationBox {
        let id = self.0.next_guard.fetch_add(1, Ordering::Relaxed);
        lock(&self.0.guards).push((id, Arc::new(guard)));
        self.held(Undo::Guard(id), format!("guard of {owner}"))
    }

    fn restrict(
        &self,
        owner: RString,
        scope: RVec<RString>,
        restriction: Json<Restriction>,
    ) -> RResult<RegistrationBox, SeamError> {
        let restriction = match restriction.decode() {
            Ok(restriction) => restriction,
            Err(error) => {
                return RErr(SeamError::invalid(format!(
                    "{owner}: a restriction is {{\"allow\":[..]}} or {{\"deny\":[..]}}: {error}"
                )));
            }
        };
        let scope = scope_of(&scope);
        let restricted = lock(&self.0.registry).restrict(&scope, owner.as_str(), restriction);
        match restricted {
            Ok(id) => ROk(self.held(Undo::Registry(id), format!("restriction of {owner}"))),
            Err(error) => RErr(refused(&error)),
        }
    }

    fn schemas(&self, chain: RVec<RString>) -> RResult<Json<Vec<ToolSchema>>, SeamError> {
        let registry = lock(&self.0.registry);
        let rendered = cached(&self.0.schemas, &chain, registry.generation(), || {
            registry
                .view(&scope_of(&chain))
                .schemas(&self.0.order)
                .map(|schemas| Json::encode(&schemas).into_text())
        });
        match rendered {
            Ok(text) => ROk(Json::from_text(text)),
            // The configured toolOrder cannot be applied to what is registered.
            Err(error) => RErr(SeamError::failed(error.to_string())),
        }
    }

    fn guidance(&self, chain: RVec<RString>) -> Json<Vec<ToolGuidance>> {
        let registry = lock(&self.0.registry);
        let rendered = cached(&self.0.guidance, &chain, registry.generation(), || {
            let guidance: Vec<ToolGuidance> = registry
                .view(&scope_of(&chain))
                .guidance()
                .into_iter()
                .map(|(order, name, text)| ToolGuidance {
                    order,
                    name: name.to_owned(),
                    text: text.to_owned(),
                })
                .collect();
            Ok::<_, std::convert::Infallible>(Json::encode(&guidance).into_text())
        });
        match rendered {
            Ok(text) => Json::from_text(text),
            Err(never) => match never {},
        }
    }

    fn run_step(&self, step: StepCalls, cancel: CancelBox) -> FfiFuture<Json<StepReport>> {
        let shared = self.0.clone();
        async move { Json::encode(&crate::pipeline::run_step(shared, step, cancel, None).await) }
            .into_ffi()
    }

    fn run_code_calls(
        &self,
        parent: RString,
        step: StepCalls,
        cancel: CancelBox,
    ) -> FfiFuture<Json<StepReport>> {
        let shared = self.0.clone();
        let parent: Arc<str> = Arc::from(parent.as_str());
        async move {
            Json::encode(&crate::pipeline::run_step(shared, step, cancel, Some(parent)).await)
        }
        .into_ffi()
    }
}

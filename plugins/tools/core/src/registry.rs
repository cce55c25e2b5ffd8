//! The layered tool registry: registrations, restrictions and guards per layer, each removable
//! by the id its registration returned.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use dsh_protocol::Restriction;
use serde_json::Value;

use crate::failure::ToolFailure;
use crate::order::{TOOL_ORDER_REST, compare_code_units};
use crate::registry_error::RegistryError;
use crate::scope::{Layer, Scope, ScopeKey};
use crate::spec::ToolSpec;
use crate::view::ToolView;

/// The name of the Code Mode transport. The `tool-run-code` plugin registers it like any tool,
/// but it lives outside the filterable layers: no restriction may name it, and none masks it
/// (a scope that hides every inherited tool in Code Mode still offers it, to its children too).
pub const RUN_CODE_NAME: &str = "run_code";

/// The handle of one registration (tool, restriction or guard); pass it to
/// [`ToolRegistry::remove`] to undo exactly that registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegistrationId(u64);

/// What a guard sees of one call: its identity and its (immutable) parsed arguments.
#[derive(Debug, Clone, Copy)]
pub struct GuardCall<'a> {
    pub call_id: &'a str,
    pub name: &'a str,
    pub arguments: &'a Value,
    pub scope: &'a Scope,
}

/// A monotonic guard: `Some(reason)` denies the call, `None` abstains. There is no "allow"
/// answer, so no ordering of guards can turn one guard's denial back into permission.
pub type ToolGuard = Arc<dyn Fn(&GuardCall<'_>) -> Option<String> + Send + Sync>;

/// One registered tool: its declaration, the owner that registered it, and the caller's
/// payload (the execute function, renderers, ...), which this crate never looks into.
#[derive(Debug)]
pub struct RegisteredTool<T> {
    id: RegistrationId,
    owner: String,
    spec: ToolSpec,
    payload: T,
}

impl<T> RegisteredTool<T> {
    pub fn id(&self) -> RegistrationId {
        self.id
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn name(&self) -> &str {
        self.spec.name()
    }

    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    pub fn payload(&self) -> &T {
        &self.payload
    }

    pub fn into_payload(self) -> T {
        self.payload
    }
}

/// What [`ToolRegistry::remove`] took out.
#[derive(Debug)]
pub enum Removed<T> {
    Tool(Box<RegisteredTool<T>>),
    Restriction,
    Guard,
}

#[derive(Debug)]
pub(crate) struct StoredRestriction {
    id: RegistrationId,
    owner: String,
    allow: Option<BTreeSet<String>>,
    deny: Option<BTreeSet<String>>,
}

impl StoredRestriction {
    pub(crate) fn admits(&self, name: &str) -> bool {
        self.allow.as_ref().is_none_or(|allow| allow.contains(name))
            && self.deny.as_ref().is_none_or(|deny| !deny.contains(name))
    }
}

struct StoredGuard {
    id: RegistrationId,
    owner: String,
    guard: ToolGuard,
}

/// One layer's contributions.
pub(crate) struct LayerData<T> {
    pub(crate) tools: BTreeMap<String, RegisteredTool<T>>,
    pub(crate) restrictions: Vec<StoredRestriction>,
    guards: Vec<StoredGuard>,
}

impl<T> Default for LayerData<T> {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            restrictions: Vec::new(),
            guards: Vec::new(),
        }
    }
}

impl<T> LayerData<T> {
    pub(crate) fn admits(&self, name: &str) -> bool {
        self.restrictions.iter().all(|filter| filter.admits(name))
    }

    fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.restrictions.is_empty() && self.guards.is_empty()
    }

    fn guard_denial(&self, call: &GuardCall<'_>) -> Option<String> {
        self.guards.iter().find_map(|stored| (stored.guard)(call))
    }
}

/// The registry: a global layer plus one layer per agent scope that registered anything.
pub struct ToolRegistry<T> {
    pub(crate) global: LayerData<T>,
    pub(crate) scoped: BTreeMap<ScopeKey, LayerData<T>>,
    next_id: u64,
    generation: u64,
}

impl<T> Default for ToolRegistry<T> {
    fn default() -> Self {
        Self {
            global: LayerData::default(),
            scoped: BTreeMap::new(),
            next_id: 0,
            generation: 0,
        }
    }
}

impl<T> ToolRegistry<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bumped by every change of what some scope can see (tools and restrictions, not guards):
    /// the `tools/change` signal, and a cheap staleness check for a cached prompt.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn mint(&mut self) -> RegistrationId {
        self.next_id += 1;
        RegistrationId(self.next_id)
    }

    fn layer_mut(&mut self, layer: &Layer) -> &mut LayerData<T> {
        match layer {
            Layer::Global => &mut self.global,
            Layer::Scoped(key) => self.scoped.entry(key.clone()).or_default(),
        }
    }

    /// Register a tool in one layer. A scoped tool shadows a global (or ancestor's) tool of the
    /// same name; the same name twice in one layer is two plugins colliding, and is refused
    /// naming both owners.
    pub fn register(
        &mut self,
        layer: Layer,
        owner: &str,
        spec: ToolSpec,
        payload: T,
    ) -> Result<RegistrationId, RegistryError> {
        let name = spec.name().to_owned();
        let purpose = match name.as_str() {
            TOOL_ORDER_REST => Some("toolOrder's rest entry"),
            _ => None,
        };
        if let Some(purpose) = purpose {
            return Err(RegistryError::ReservedName { name, purpose });
        }
        if spec.is_enforced() {
            spec.checked_parameters()
                .map_err(|error| RegistryError::InvalidParameters {
                    name: name.clone(),
                    error: error.clone(),
                })?;
        }
        if spec.timeout_ms() == Some(0) {
            return Err(RegistryError::InvalidTimeout { name });
        }
        let existing = match &layer {
            Layer::Global => self.global.tools.get(&name),
            Layer::Scoped(key) => self.scoped.get(key).and_then(|data| data.tools.get(&name)),
        };
        if let Some(existing) = existing {
            return Err(RegistryError::DuplicateTool {
                name,
                layer,
                existing_owner: existing.owner.clone(),
                new_owner: owner.to_owned(),
            });
        }
        let id = self.mint();
        let tool = RegisteredTool {
            id,
            owner: owner.to_owned(),
            spec,
            payload,
        };
        self.layer_mut(&layer).tools.insert(name, tool);
        self.generation += 1;
        Ok(id)
    }

    /// Restrict what `scope` (and everything nested in it) inherits. Restrictions intersect
    /// down the chain and never touch the scope's own registrations, so a delegated child keeps
    /// the tools it reports through. Names are checked against what the scope inherits now: a
    /// misspelt name fails loudly instead of silently restricting nothing.
    pub fn restrict(
        &mut self,
        scope: &Scope,
        owner: &str,
        restriction: Restriction,
    ) -> Result<RegistrationId, RegistryError> {
        let Some(own) = scope.own().cloned() else {
            return Err(RegistryError::RestrictGlobal);
        };
        let Restriction { allow, deny } = restriction;
        if allow.is_none() && deny.is_none() {
            return Err(RegistryError::EmptyRestriction);
        }
        let named: Vec<&String> = allow.iter().chain(deny.iter()).flatten().collect();
        if named.iter().any(|name| *name == RUN_CODE_NAME) {
            return Err(RegistryError::RestrictReserved);
        }
        let view = self.view(scope);
        let unknown: Vec<String> = named
            .iter()
            .filter(|name| !view.is_restrictable(name))
            .map(|name| (*name).clone())
            .collect();
        if !unknown.is_empty() {
            let mut known: Vec<String> = view.restrictable_names().map(str::to_owned).collect();
            known.sort_by(|a, b| compare_code_units(a, b));
            return Err(RegistryError::RestrictUnknown {
                names: unknown,
                known,
            });
        }
        let id = self.mint();
        let stored = StoredRestriction {
            id,
            owner: owner.to_owned(),
            allow: allow.map(|names| names.into_iter().collect()),
            deny: deny.map(|names| names.into_iter().collect()),
        };
        self.layer_mut(&Layer::Scoped(own))
            .restrictions
            .push(stored);
        self.generation += 1;
        Ok(id)
    }

    /// Register a guard. A global guard sees every call; a scoped one sees the calls of that
    /// scope and everything nested in it.
    pub fn guard(&mut self, layer: Layer, owner: &str, guard: ToolGuard) -> RegistrationId {
        let id = self.mint();
        self.layer_mut(&layer).guards.push(StoredGuard {
            id,
            owner: owner.to_owned(),
            guard,
        });
        id
    }

    /// The first guard denial for a call: global guards first, then the scope chain's,
    /// farthest ancestor first. Order only decides *which* reason is reported, never whether
    /// the call is denied.
    pub fn guard_denial(&self, call: &GuardCall<'_>) -> Option<String> {
        self.global.guard_denial(call).or_else(|| {
            call.scope
                .chain()
                .iter()
                .filter_map(|key| self.scoped.get(key))
                .find_map(|layer| layer.guard_denial(call))
        })
    }

    /// Undo one registration. `None` when the id is unknown (already removed).
    pub fn remove(&mut self, id: RegistrationId) -> Option<Removed<T>> {
        let mut removed = None;
        let layers = std::iter::once(&mut self.global).chain(self.scoped.values_mut());
        for layer in layers {
            if let Some(name) = layer
                .tools
                .iter()
                .find(|(_, tool)| tool.id == id)
                .map(|(name, _)| name.clone())
            {
                removed = layer
                    .tools
                    .remove(&name)
                    .map(|tool| Removed::Tool(Box::new(tool)));
            } else if let Some(index) = layer.restrictions.iter().position(|r| r.id == id) {
                layer.restrictions.remove(index);
                removed = Some(Removed::Restriction);
            } else if let Some(index) = layer.guards.iter().position(|g| g.id == id) {
                layer.guards.remove(index);
                removed = Some(Removed::Guard);
            }
            if removed.is_some() {
                break;
            }
        }
        if matches!(removed, Some(Removed::Tool(_) | Removed::Restriction)) {
            self.generation += 1;
        }
        self.scoped.retain(|_, layer| !layer.is_empty());
        removed
    }

    /// Undo every registration of one owner (a plugin's unload). Returns how many were removed.
    pub fn remove_owner(&mut self, owner: &str) -> usize {
        let mut count = 0;
        let mut visible_change = false;
        let layers = std::iter::once(&mut self.global).chain(self.scoped.values_mut());
        for layer in layers {
            let before = (
                layer.tools.len(),
                layer.restrictions.len(),
                layer.guards.len(),
            );
            layer.tools.retain(|_, tool| tool.owner != owner);
            layer.restrictions.retain(|r| r.owner != owner);
            layer.guards.retain(|g| g.owner != owner);
            let visible = before.0 - layer.tools.len() + before.1 - layer.restrictions.len();
            visible_change |= visible > 0;
            count += visible + before.2 - layer.guards.len();
        }
        if visible_change {
            self.generation += 1;
        }
        self.scoped.retain(|_, layer| !layer.is_empty());
        count
    }

    /// Drop everything registered in one agent scope (the agent was disposed).
    pub fn forget_scope(&mut self, key: &ScopeKey) -> usize {
        let Some(layer) = self.scoped.remove(key) else {
            return 0;
        };
        if !layer.tools.is_empty() || !layer.restrictions.is_empty() {
            self.generation += 1;
        }
        layer.tools.len() + layer.restrictions.len() + layer.guards.len()
    }

    /// The one visibility resolver: the prompt's schema list and execution lookup both come
    /// from this view, so a tool the prompt omits can never be executed and vice versa.
    pub fn view(&self, scope: &Scope) -> ToolView<'_, T> {
        ToolView::compute(self, scope)
    }

    /// The tool `name` resolves to in `scope`, if visible: what [`ToolView::get`] of
    /// [`Self::view`] gives, without building the view.
    pub fn get(&self, scope: &Scope, name: &str) -> Option<&RegisteredTool<T>> {
        ToolView::resolve_one(self, scope, name)
    }

    /// Resolve a call's tool name, or the `UNKNOWN_TOOL` failure. A filtered tool yields the
    /// very same failure as a name that never existed.
    pub fn lookup(&self, scope: &Scope, name: &str) -> Result<&RegisteredTool<T>, ToolFailure> {
        self.get(scope, name)
            .ok_or_else(|| ToolFailure::unknown_tool(name))
    }
}

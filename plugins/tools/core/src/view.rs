//! One scope's resolved view of the registry.

use std::collections::{BTreeMap, BTreeSet};

use dsh_protocol::ToolSchema;
use serde_json::Value;

use crate::order::{OrderError, ToolOrder, compare_code_units, order_schemas};
use crate::registry::{LayerData, RUN_CODE_NAME, RegisteredTool, ToolRegistry};
use crate::scheduler::Concurrency;
use crate::scope::Scope;

/// Whether an inherited `name` stays visible under the restrictions of the layers of a scope's
/// chain: they intersect, so any scope on it may mask the name for everything nested inside it;
/// the Code Mode transport is never masked.
fn admitted<'l, T: 'l>(chain: impl IntoIterator<Item = &'l LayerData<T>>, name: &str) -> bool {
    name == RUN_CODE_NAME || chain.into_iter().all(|layer| layer.admits(name))
}

/// Everything one scope can see, computed in a single pass over its layers.
pub struct ToolView<'a, T> {
    visible: BTreeMap<&'a str, &'a RegisteredTool<T>>,
    /// Names known to the scope before restrictions: a configured tool order may name a tool
    /// this scope has filtered away without being wrong, but not a tool nobody registered.
    known: BTreeSet<&'a str>,
    /// Inherited names, the ones a restriction of this scope may name.
    restrictable: BTreeSet<&'a str>,
}

impl<'a, T> ToolView<'a, T> {
    pub(crate) fn compute(registry: &'a ToolRegistry<T>, scope: &Scope) -> Self {
        let chain: Vec<_> = scope
            .chain()
            .iter()
            .filter_map(|key| registry.scoped.get(key))
            .collect();
        // Inherited surface: the global layer, then each ancestor, nearer ones shadowing
        // farther ones.
        let mut inherited: BTreeMap<&'a str, &'a RegisteredTool<T>> = registry
            .global
            .tools
            .iter()
            .map(|(name, tool)| (name.as_str(), tool))
            .collect();
        for key in scope.ancestors() {
            if let Some(layer) = registry.scoped.get(key) {
                inherited.extend(layer.tools.iter().map(|(name, tool)| (name.as_str(), tool)));
            }
        }
        let known: BTreeSet<&'a str> = inherited.keys().copied().collect();
        let restrictable = known.clone();
        let mut view = Self {
            visible: BTreeMap::new(),
            known,
            restrictable,
        };
        for (name, tool) in inherited {
            if admitted(chain.iter().copied(), name) {
                view.visible.insert(name, tool);
            }
        }
        // The scope's own registrations last: they shadow inherited names and no restriction
        // applies to them.
        if let Some(own) = scope.own().and_then(|key| registry.scoped.get(key)) {
            for (name, tool) in &own.tools {
                view.known.insert(name.as_str());
                view.visible.insert(name.as_str(), tool);
            }
        }
        view
    }

    /// What [`ToolView::compute`] followed by [`ToolView::get`] gives for one name, without
    /// building the view: a call resolves its tool two or three times (its concurrency, its
    /// schema check, its body), and building the whole view of some forty tools for each was
    /// about a seventh of the instructions a no-op step of the instant model ran.
    pub(crate) fn resolve_one(
        registry: &'a ToolRegistry<T>,
        scope: &Scope,
        name: &str,
    ) -> Option<&'a RegisteredTool<T>> {
        // The scope's own registrations shadow everything, and no restriction applies to them.
        let own = scope.own().and_then(|key| registry.scoped.get(key));
        if let Some(tool) = own.and_then(|layer| layer.tools.get(name)) {
            return Some(tool);
        }
        // Inherited: the nearest ancestor that registered the name, else the global layer.
        let inherited = scope
            .ancestors()
            .iter()
            .rev()
            .filter_map(|key| registry.scoped.get(key))
            .find_map(|layer| layer.tools.get(name))
            .or_else(|| registry.global.tools.get(name))?;
        let chain = scope
            .chain()
            .iter()
            .filter_map(|key| registry.scoped.get(key));
        admitted(chain, name).then_some(inherited)
    }

    /// The tool a name resolves to in this scope, if visible.
    pub fn get(&self, name: &str) -> Option<&'a RegisteredTool<T>> {
        self.visible.get(name).copied()
    }

    /// The visible tools, in code-unit order of their names.
    pub fn tools(&self) -> Vec<&'a RegisteredTool<T>> {
        let mut tools: Vec<_> = self.visible.values().copied().collect();
        tools.sort_by(|a, b| compare_code_units(a.name(), b.name()));
        tools
    }

    /// The visible names (byte order).
    pub fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.visible.keys().copied()
    }

    /// Names known before restrictions (inherited and own).
    pub fn known_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.known.iter().copied()
    }

    pub(crate) fn is_restrictable(&self, name: &str) -> bool {
        self.restrictable.contains(name)
    }

    pub(crate) fn restrictable_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.restrictable.iter().copied()
    }

    /// The model-facing tool list of this scope, in the configured order.
    pub fn schemas(&self, order: &ToolOrder) -> Result<Vec<ToolSchema>, OrderError> {
        let schemas = self
            .visible
            .values()
            .map(|tool| tool.spec().schema())
            .collect();
        let known: BTreeSet<String> = self.known.iter().map(|name| (*name).to_owned()).collect();
        order_schemas(schemas, order, &known)
    }

    /// The guidance of the visible tools, by (order, name): what the prompt says of tools comes
    /// from the same view as the schema list, so a hidden tool is never mentioned.
    pub fn guidance(&self) -> Vec<(i64, String, String)> {
        let mut guidance: Vec<(i64, String, String)> = self
            .visible
            .values()
            .filter_map(|tool| {
                let spec = tool.spec();
                spec.guidance()
                    .map(|g| (g.order, spec.name().to_owned(), g.text.clone()))
            })
            .collect();
        guidance.sort();
        guidance
    }

    /// How one call may be scheduled. Fail-closed: a name this scope cannot see is exclusive,
    /// so an unknown call never overlaps with anything.
    pub fn execution_mode(&self, name: &str, arguments: &Value) -> Concurrency {
        self.get(name).map_or(Concurrency::Exclusive, |tool| {
            tool.spec().concurrency_for(arguments)
        })
    }
}

//! Scope keys, viewing scopes and registration layers.

use std::fmt;

/// One agent scope's identity, as the agent registry names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeKey(String);

impl ScopeKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ScopeKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for ScopeKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

/// The scope a view is computed for: the chain of agent scopes from the farthest ancestor to
/// the viewing agent itself. Empty is the global (agent-less) view. The caller passes the chain
/// because the agent tree belongs to the agent registry; this crate never keeps a second copy
/// that could drift from it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    chain: Vec<ScopeKey>,
}

impl Scope {
    /// The global view: global registrations only, no restriction applies.
    pub fn global() -> Self {
        Self::default()
    }

    /// A root agent's scope (no ancestor).
    pub fn root(key: impl Into<ScopeKey>) -> Self {
        Self {
            chain: vec![key.into()],
        }
    }

    /// A scope from its full chain, farthest ancestor first, the viewing agent last.
    pub fn from_chain(chain: Vec<ScopeKey>) -> Self {
        Self { chain }
    }

    /// The scope of a child agent of this scope.
    pub fn child(&self, key: impl Into<ScopeKey>) -> Self {
        let mut chain = self.chain.clone();
        chain.push(key.into());
        Self { chain }
    }

    /// The viewing agent's own key; `None` for the global view.
    pub fn own(&self) -> Option<&ScopeKey> {
        self.chain.last()
    }

    /// The ancestors, farthest first, without the viewing agent.
    pub fn ancestors(&self) -> &[ScopeKey] {
        self.chain
            .split_last()
            .map_or(&[], |(_, ancestors)| ancestors)
    }

    pub fn chain(&self) -> &[ScopeKey] {
        &self.chain
    }

    pub fn is_global(&self) -> bool {
        self.chain.is_empty()
    }
}

/// Where a registration lives: the global layer every scope inherits, or one agent's layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Layer {
    Global,
    Scoped(ScopeKey),
}

impl Layer {
    pub fn scoped(key: impl Into<ScopeKey>) -> Self {
        Self::Scoped(key.into())
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Global => f.write_str("the global layer"),
            Self::Scoped(key) => write!(f, "scope \"{key}\""),
        }
    }
}

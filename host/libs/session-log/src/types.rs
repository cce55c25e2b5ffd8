//! The event vocabulary: the reference's 48 known types, the 3 surface types, and the registry
//! plugins extend with their own types.

use std::collections::BTreeMap;

use thiserror::Error;

/// Every event type the reference declares, sorted (the vocabulary crate names each one).
pub use dsh_protocol::kinds::KNOWN as KNOWN_EVENT_TYPES;
/// The three surface types.
pub use dsh_protocol::kinds::SURFACE as SURFACE_EVENT_TYPES;
/// Whether a type is one of the surface types.
pub use dsh_protocol::kinds::is_surface as is_surface_type;

/// Whether a reader that does not know a type may skip its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeRequirement {
    /// Events are written without a marker; a reader that lacks the type must refuse the log.
    Required,
    /// Events are written with `ignorable: true`; a reader that lacks the type skips them.
    Ignorable,
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// The 48 known types belong to the core vocabulary and cannot be redeclared or removed.
    #[error(
        "event type \"{0}\" is a built-in type and cannot be registered or removed by a plugin"
    )]
    Builtin(String),
    /// Plugin types need a `/`: the persistence format uses bare tags (`session`, `text-chunks`,
    /// ...) for lines that are not events, and a slash keeps the two vocabularies apart.
    #[error(
        "event type \"{0}\" is not a valid plugin type name (needs a '/', no whitespace or control characters)"
    )]
    InvalidName(String),
    /// The same type registered twice with different requirements: two plugins disagree.
    #[error("event type \"{kind}\" is already registered as {existing:?}, not {requested:?}")]
    Conflict {
        kind: String,
        existing: TypeRequirement,
        requested: TypeRequirement,
    },
}

/// The set of event types a log accepts: the built-ins plus what plugins registered.
#[derive(Debug, Clone)]
pub struct TypeRegistry {
    /// Plugin types only; the built-ins are the constant list.
    plugin_types: BTreeMap<String, TypeRequirement>,
}

impl Default for TypeRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl TypeRegistry {
    /// A registry holding the 48 built-in types, all required.
    pub fn new() -> Self {
        Self {
            plugin_types: BTreeMap::new(),
        }
    }

    /// Registers a plugin type. Registering the same type again with the same requirement is a
    /// no-op, so a plugin that reloads can register again.
    pub fn register(
        &mut self,
        kind: impl Into<String>,
        requirement: TypeRequirement,
    ) -> Result<(), RegistryError> {
        let kind = kind.into();
        if is_builtin(&kind) {
            return Err(RegistryError::Builtin(kind));
        }
        if !valid_plugin_name(&kind) {
            return Err(RegistryError::InvalidName(kind));
        }
        match self.plugin_types.get(&kind) {
            Some(existing) if *existing != requirement => Err(RegistryError::Conflict {
                kind,
                existing: *existing,
                requested: requirement,
            }),
            Some(_) => Ok(()),
            None => {
                self.plugin_types.insert(kind, requirement);
                Ok(())
            }
        }
    }

    /// Registers a plugin type whose events readers may skip (the default for plugin types).
    pub fn register_ignorable(&mut self, kind: impl Into<String>) -> Result<(), RegistryError> {
        self.register(kind, TypeRequirement::Ignorable)
    }

    /// Removes a plugin type (when its plugin unloads). Returns whether it was registered.
    pub fn unregister(&mut self, kind: &str) -> Result<bool, RegistryError> {
        if is_builtin(kind) {
            return Err(RegistryError::Builtin(kind.to_owned()));
        }
        Ok(self.plugin_types.remove(kind).is_some())
    }

    /// The requirement of a known type, `None` when the type is unknown.
    pub fn requirement(&self, kind: &str) -> Option<TypeRequirement> {
        if is_builtin(kind) {
            Some(TypeRequirement::Required)
        } else {
            self.plugin_types.get(kind).copied()
        }
    }

    /// Whether the type is a built-in or registered.
    pub fn is_known(&self, kind: &str) -> bool {
        self.requirement(kind).is_some()
    }

    /// Whether the type is one of the 48 built-ins.
    pub fn is_builtin(&self, kind: &str) -> bool {
        is_builtin(kind)
    }

    /// The `ignorable` envelope field an appended event of this type carries: `Some(true)` for
    /// ignorable plugin types, `None` (field absent) otherwise.
    pub fn ignorable_marker(&self, kind: &str) -> Option<bool> {
        match self.requirement(kind) {
            Some(TypeRequirement::Ignorable) => Some(true),
            _ => None,
        }
    }

    /// The plugin-registered types, sorted by name.
    pub fn plugin_types(&self) -> impl Iterator<Item = (&str, TypeRequirement)> {
        self.plugin_types.iter().map(|(k, r)| (k.as_str(), *r))
    }
}

fn is_builtin(kind: &str) -> bool {
    dsh_protocol::kinds::is_known(kind)
}

fn valid_plugin_name(kind: &str) -> bool {
    kind.contains('/')
        && !kind.starts_with('/')
        && !kind.ends_with('/')
        && !kind.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_list_is_sorted_unique_and_has_the_surface_types() {
        assert!(
            KNOWN_EVENT_TYPES.windows(2).all(|w| w[0] < w[1]),
            "binary search needs sorted"
        );
        for s in SURFACE_EVENT_TYPES {
            assert!(KNOWN_EVENT_TYPES.contains(&s));
        }
        assert!(is_surface_type("tool/result"));
        assert!(!is_surface_type("assistant/chunk"));
    }

    #[test]
    fn builtins_are_required_and_unknown_is_none() {
        let r = TypeRegistry::new();
        assert_eq!(r.requirement("turn/start"), Some(TypeRequirement::Required));
        assert_eq!(r.ignorable_marker("turn/start"), None);
        assert_eq!(r.requirement("x/y"), None);
        assert!(!r.is_known("steering/message"), "removed upstream");
    }

    #[test]
    fn plugin_types_default_to_ignorable_unless_required() {
        let mut r = TypeRegistry::new();
        r.register_ignorable("demo/note").unwrap();
        r.register("demo/state", TypeRequirement::Required).unwrap();
        assert_eq!(r.ignorable_marker("demo/note"), Some(true));
        assert_eq!(r.ignorable_marker("demo/state"), None);
        assert!(r.is_known("demo/state"));
        assert!(!r.is_builtin("demo/state"));
        let names: Vec<_> = r.plugin_types().map(|(k, _)| k).collect();
        assert_eq!(names, ["demo/note", "demo/state"]);
    }

    #[test]
    fn registration_rules() {
        let mut r = TypeRegistry::new();
        assert_eq!(
            r.register_ignorable("turn/start"),
            Err(RegistryError::Builtin("turn/start".into()))
        );
        for bad in ["text-chunks", "session", "", "/x", "x/", "a b/c", "a/\nb"] {
            assert_eq!(
                r.register_ignorable(bad),
                Err(RegistryError::InvalidName(bad.into()))
            );
        }
        r.register_ignorable("p/e").unwrap();
        r.register_ignorable("p/e").unwrap();
        assert!(matches!(
            r.register("p/e", TypeRequirement::Required),
            Err(RegistryError::Conflict { .. })
        ));
        assert_eq!(r.unregister("p/e"), Ok(true));
        assert_eq!(r.unregister("p/e"), Ok(false));
        assert!(r.unregister("tool/call").is_err());
    }
}

//! Realms: which service table a fiber sees for each service name.
//!
//! Services live in one flat namespace per realm. By default every fiber sees the root realm; a
//! group row that isolates a name gives its subtree a realm of its own for that name (private, or
//! shared with other groups using the same label), so two groups can each have their own `shell`.

use crate::fast_map::FastMap;
use std::sync::Arc;

pub type RealmId = u64;

pub const ROOT_REALM: RealmId = 0;

/// The realm mapping of one subtree, chained to its parent's.
#[derive(Debug, Default)]
pub struct Scope {
    parent: Option<Arc<Scope>>,
    isolated: FastMap<String, RealmId>,
}

impl Scope {
    pub fn root() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A child scope in which each of `isolated` names resolves to the given realm.
    pub fn isolate(parent: &Arc<Scope>, isolated: FastMap<String, RealmId>) -> Arc<Self> {
        if isolated.is_empty() {
            return parent.clone();
        }
        Arc::new(Self {
            parent: Some(parent.clone()),
            isolated,
        })
    }

    pub fn realm_of(&self, service: &str) -> RealmId {
        let mut scope = self;
        loop {
            if let Some(realm) = scope.isolated.get(service) {
                return *realm;
            }
            match &scope.parent {
                Some(parent) => scope = parent,
                None => return ROOT_REALM,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolated_names_resolve_to_their_realm_and_others_fall_through() {
        let root = Scope::root();
        let group = Scope::isolate(&root, FastMap::from_iter([("shell".to_owned(), 7)]));
        let nested = Scope::isolate(&group, FastMap::from_iter([("fs".to_owned(), 9)]));
        assert_eq!(root.realm_of("shell"), ROOT_REALM);
        assert_eq!(group.realm_of("shell"), 7);
        assert_eq!(group.realm_of("tools"), ROOT_REALM);
        assert_eq!(nested.realm_of("shell"), 7);
        assert_eq!(nested.realm_of("fs"), 9);
    }
}

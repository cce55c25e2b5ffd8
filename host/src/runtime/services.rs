//! The service tables: one flat namespace per realm, looked up by `&str` without allocating.

use crate::fast_map::FastMap;

use dsh_plugin_api::abi::ErasedService;

use super::fiber::FiberId;
use super::scope::RealmId;

/// A published service and the fiber that owns it (0: the host).
pub(super) struct ServiceEntry {
    pub(super) fiber: FiberId,
    /// Unique per publication: a provider that unloads and applies again in the same fiber
    /// publishes under a new serial, so its dependents see the change.
    pub(super) serial: u64,
    pub(super) service: ErasedService,
}

#[derive(Default)]
pub(super) struct ServiceTable {
    realms: FastMap<RealmId, FastMap<String, ServiceEntry>>,
}

impl ServiceTable {
    pub(super) fn get(&self, realm: RealmId, name: &str) -> Option<&ServiceEntry> {
        self.realms.get(&realm)?.get(name)
    }

    pub(super) fn contains(&self, realm: RealmId, name: &str) -> bool {
        self.get(realm, name).is_some()
    }

    /// Inserts unless the name is taken in that realm (then the entry comes back).
    pub(super) fn insert(
        &mut self,
        realm: RealmId,
        name: &str,
        entry: ServiceEntry,
    ) -> Result<(), ServiceEntry> {
        let table = self.realms.entry(realm).or_default();
        if table.contains_key(name) {
            return Err(entry);
        }
        table.insert(name.to_owned(), entry);
        Ok(())
    }

    /// Removes `name` from `realm` if `fiber` owns it and hands the entry
    /// back, so the caller can drop the plugin's service object after it
    /// has released the host lock (its destructor is plugin code).
    pub(super) fn remove_owned(
        &mut self,
        realm: RealmId,
        name: &str,
        fiber: FiberId,
    ) -> Option<ServiceEntry> {
        let table = self.realms.get_mut(&realm)?;
        if table.get(name).is_none_or(|entry| entry.fiber != fiber) {
            return None;
        }
        let removed = table.remove(name);
        if table.is_empty() {
            self.realms.remove(&realm);
        }
        removed
    }
}

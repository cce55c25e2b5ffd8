//! The event bus: one slot per event name, holding the event's declaration (mode and layouts)
//! and its listeners.
//!
//! The first party to use an event (a listener or a dispatcher) declares it; everyone after must
//! agree on the mode and on the payload and result layouts, or the registration is refused. The
//! listener list is copy-on-write: a dispatch takes a snapshot (one `Arc` clone) and never holds
//! a lock while calling plugin code. A listener removed during a dispatch is skipped from then
//! on (`alive`), so a disposed plugin's code is never called after its unload.

use crate::fast_map::{FastMap, FastSet};
use dsh_plugin_api::lock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use abi_stable::abi_stability::abi_checking::check_layout_compatibility;
use abi_stable::type_layout::TypeLayout;
use dsh_plugin_api::abi::{AsyncListenerBox, SyncListenerBox, WaterfallListenerBox};
use dsh_plugin_api::{DispatchMode, EventDecl};

use super::fiber::FiberId;

pub enum ListenerKind {
    Sync(SyncListenerBox),
    Async(AsyncListenerBox),
    Waterfall(WaterfallListenerBox),
}

pub struct ListenerEntry {
    pub id: u64,
    pub fiber: FiberId,
    /// The owner, for messages (`row id (plugin)`).
    pub owner: String,
    pub alive: AtomicBool,
    pub kind: ListenerKind,
}

impl ListenerEntry {
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }
}

/// An event's declaration, fixed by its first user.
#[derive(Clone, Copy)]
pub struct Declaration {
    pub mode: DispatchMode,
    pub payload: &'static TypeLayout,
    pub output: &'static TypeLayout,
}

pub struct Slot {
    pub name: String,
    declaration: Mutex<(Declaration, String)>,
    listeners: RwLock<Arc<Vec<Arc<ListenerEntry>>>>,
}

impl Slot {
    pub fn declaration(&self) -> Declaration {
        lock(&self.declaration).0
    }

    pub fn snapshot(&self) -> Arc<Vec<Arc<ListenerEntry>>> {
        match self.listeners.read() {
            Ok(list) => list.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn update(&self, change: impl FnOnce(&mut Vec<Arc<ListenerEntry>>)) {
        let mut guard = match self.listeners.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut next: Vec<_> = guard.as_ref().clone();
        change(&mut next);
        let previous = std::mem::replace(&mut *guard, Arc::new(next));
        drop(guard);
        // A removed listener's last reference may be in `previous`: its destructor is plugin
        // code, which must not run while the slot is locked (it could touch the bus).
        drop(previous);
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BusError {
    #[error("event `{event}` is declared as {declared} (by {by}) but used as {used}")]
    ModeMismatch {
        event: String,
        declared: &'static str,
        by: String,
        used: &'static str,
    },
    #[error("{0}")]
    LayoutMismatch(Box<LayoutMismatch>),
}

/// A payload or result type that differs from the event's declaration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "event `{event}`: {what} type `{found}` does not match the declared `{declared}` (by {by}): {detail}"
)]
pub struct LayoutMismatch {
    pub event: String,
    pub what: &'static str,
    pub found: String,
    pub declared: String,
    pub by: String,
    #[source]
    pub detail: IncompatibleLayout,
}

/// A type layout that cannot stand where another is declared.
///
/// abi_stable's report runs to hundreds of lines and borrows the layouts; its first
/// meaningful line is what a reader needs, and it keeps this error cheap to clone and compare.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{detail}")]
pub struct IncompatibleLayout {
    pub detail: String,
}

/// Layout pairs found compatible by earlier starts, so a start does not check them again.
///
/// Why: every service look-up and event declaration across two libraries compares two layouts,
/// and abi_stable's check walks everything each reaches; at a headless start those checks took
/// about 26 ms of the 66 to the first model request (release, 8 interleaved runs each: 66.6 ms
/// checked, 40.3 ms skipped). The library module names a layout by the build of the file that
/// holds it and its place in that file (`library::layout_record`).
pub trait LayoutRecord: Send + Sync {
    /// A name for the pair that holds across starts; `None` when one of them cannot be named
    /// (the pair is then checked every time).
    fn key(&self, expected: &'static TypeLayout, found: &'static TypeLayout) -> Option<String>;
    /// Whether `key` passed the check before.
    fn passed(&self, key: &str) -> bool;
    /// Records that `key` passed the check.
    fn remember(&self, key: String);
}

#[derive(Default)]
pub struct Bus {
    slots: RwLock<FastMap<String, Arc<Slot>>>,
    next_listener: AtomicU64,
    /// Layout pairs already found compatible (by address), so the full check runs once.
    compatible: Mutex<FastSet<(usize, usize)>>,
    /// The pairs earlier starts found compatible; none until the host sets it.
    record: OnceLock<Arc<dyn LayoutRecord>>,
}

impl Bus {
    /// Resolves (declaring on first use) the slot of `decl`, checking it against the declaration.
    pub fn slot(&self, decl: &EventDecl, by: &str) -> Result<Arc<Slot>, BusError> {
        let name = decl.name.as_str();
        let wanted = Declaration {
            mode: decl.mode,
            payload: decl.payload.get(),
            output: decl.output.get(),
        };
        if let Some(slot) = self.read_slots().get(name).cloned() {
            self.check(&slot, wanted, by)?;
            return Ok(slot);
        }
        let mut slots = match self.slots.write() {
            Ok(slots) => slots,
            Err(poisoned) => poisoned.into_inner(),
        };
        let slot = slots
            .entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    name: name.to_owned(),
                    declaration: Mutex::new((wanted, by.to_owned())),
                    listeners: RwLock::new(Arc::new(Vec::new())),
                })
            })
            .clone();
        drop(slots);
        self.check(&slot, wanted, by)?;
        Ok(slot)
    }

    fn read_slots(&self) -> std::sync::RwLockReadGuard<'_, FastMap<String, Arc<Slot>>> {
        match self.slots.read() {
            Ok(slots) => slots,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn check(&self, slot: &Arc<Slot>, wanted: Declaration, by: &str) -> Result<(), BusError> {
        let mut declaration = lock(&slot.declaration);
        // A slot nobody uses any more (no listeners, no channel held outside the map) may be
        // re-declared: a plugin reloaded with a changed payload type must not be refused forever.
        if slot.snapshot().is_empty() && Arc::strong_count(slot) <= 2 {
            *declaration = (wanted, by.to_owned());
            return Ok(());
        }
        let (declared, declared_by) = (&declaration.0, &declaration.1);
        if declared.mode != wanted.mode {
            return Err(BusError::ModeMismatch {
                event: slot.name.clone(),
                declared: declared.mode.as_str(),
                by: declared_by.clone(),
                used: wanted.mode.as_str(),
            });
        }
        for (what, expected, found) in [
            ("payload", declared.payload, wanted.payload),
            ("result", declared.output, wanted.output),
        ] {
            self.check_layout(expected, found).map_err(|detail| {
                BusError::LayoutMismatch(Box::new(LayoutMismatch {
                    event: slot.name.clone(),
                    what,
                    found: found.full_type().to_string(),
                    declared: expected.full_type().to_string(),
                    by: declared_by.clone(),
                    detail,
                }))
            })?;
        }
        Ok(())
    }

    /// Checks that `found` can be used where `expected` is declared (cached per address pair).
    pub fn check_layout(
        &self,
        expected: &'static TypeLayout,
        found: &'static TypeLayout,
    ) -> Result<(), IncompatibleLayout> {
        let key = (
            expected as *const TypeLayout as usize,
            found as *const TypeLayout as usize,
        );
        if key.0 == key.1 || lock(&self.compatible).contains(&key) {
            return Ok(());
        }
        let named = self
            .record
            .get()
            .and_then(|record| Some((record, record.key(expected, found)?)));
        if let Some((record, name)) = &named
            && record.passed(name)
        {
            lock(&self.compatible).insert(key);
            return Ok(());
        }
        check_layout_compatibility(expected, found).map_err(|errors| IncompatibleLayout {
            detail: first_error_line(&errors.to_string()),
        })?;
        lock(&self.compatible).insert(key);
        if let Some((record, name)) = named {
            record.remember(name);
        }
        Ok(())
    }

    /// Sets the record of pairs earlier starts found compatible (once: a later call is
    /// ignored).
    pub fn set_layout_record(&self, record: Arc<dyn LayoutRecord>) {
        let _ = self.record.set(record);
    }

    /// Adds a listener, first or last.
    pub fn add(
        &self,
        slot: &Arc<Slot>,
        fiber: FiberId,
        owner: String,
        kind: ListenerKind,
        prepend: bool,
    ) -> u64 {
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed) + 1;
        let entry = Arc::new(ListenerEntry {
            id,
            fiber,
            owner,
            alive: AtomicBool::new(true),
            kind,
        });
        slot.update(|list| {
            if prepend {
                list.insert(0, entry);
            } else {
                list.push(entry);
            }
        });
        id
    }

    /// Removes a listener; a dispatch already under way skips it from now on.
    pub fn remove(&self, event: &str, id: u64) {
        let Some(slot) = self.read_slots().get(event).cloned() else {
            return;
        };
        slot.update(|list| {
            list.retain(|entry| {
                if entry.id == id {
                    entry.alive.store(false, Ordering::Release);
                    false
                } else {
                    true
                }
            })
        });
    }

    /// Number of listeners registered on all events (diagnostics, leak tests).
    pub fn listener_count(&self) -> usize {
        self.read_slots()
            .values()
            .map(|slot| slot.snapshot().len())
            .sum()
    }
}

/// The first meaningful line of abi_stable's (very long) layout error.
pub fn first_error_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| line.starts_with("Error:"))
        .or_else(|| text.lines().map(str::trim).find(|line| !line.is_empty()))
        .unwrap_or("incompatible layout")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::StableAbi;
    use abi_stable::std_types::{RStr, RString};
    use dsh_plugin_api::LayoutRef;

    fn decl<P: StableAbi, R: StableAbi>(mode: DispatchMode) -> EventDecl {
        EventDecl {
            name: RStr::from_str("demo/event"),
            mode,
            payload: LayoutRef::of::<P>(),
            output: LayoutRef::of::<R>(),
        }
    }

    #[test]
    fn first_user_declares_and_mode_mismatch_is_refused() {
        let bus = Bus::default();
        let slot = bus
            .slot(&decl::<RString, ()>(DispatchMode::Emit), "a")
            .unwrap();
        // Keep a channel alive so the declaration is in use.
        let error = bus
            .slot(&decl::<RString, ()>(DispatchMode::Waterfall), "b")
            .err()
            .unwrap();
        assert!(matches!(
            error,
            BusError::ModeMismatch {
                declared: "emit",
                used: "waterfall",
                ..
            }
        ));
        drop(slot);
    }

    #[test]
    fn payload_layout_mismatch_is_refused() {
        let bus = Bus::default();
        let _slot = bus
            .slot(&decl::<RString, ()>(DispatchMode::Emit), "a")
            .unwrap();
        let error = bus
            .slot(&decl::<u64, ()>(DispatchMode::Emit), "b")
            .err()
            .unwrap();
        match error {
            BusError::LayoutMismatch(mismatch) => {
                assert_eq!(mismatch.what, "payload");
                assert_eq!(mismatch.by, "a");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unused_slot_can_be_redeclared() {
        let bus = Bus::default();
        drop(
            bus.slot(&decl::<RString, ()>(DispatchMode::Emit), "a")
                .unwrap(),
        );
        assert!(bus.slot(&decl::<u64, ()>(DispatchMode::Bail), "b").is_ok());
    }
}

//! The order of a whole-tree disposal: consumers before the providers they use, so that what a
//! row does while it unloads (a turn closing its log, a last flush) still finds the services it
//! needs. Rows are disposed in waves: a wave is every remaining root whose services no other
//! remaining root requires or may probe; rows that depend on each other in a cycle go together.

use crate::fast_map::{FastMap, FastSet};
use std::sync::Arc;

use super::Inner;
use super::effects::Effect;
use super::fiber::{Fiber, FiberId, Source};

/// What a root fiber and everything mounted below it provide and use.
struct Needs {
    fiber: Arc<Fiber>,
    provides: FastSet<String>,
    uses: FastSet<String>,
}

impl Inner {
    fn needs_of(&self, root: &Arc<Fiber>) -> Needs {
        let mut needs = Needs {
            fiber: root.clone(),
            provides: FastSet::default(),
            uses: FastSet::default(),
        };
        let mut stack: Vec<FiberId> = vec![root.id];
        while let Some(id) = stack.pop() {
            let Some(fiber) = self.fiber(id) else {
                continue;
            };
            let inner = fiber.inner();
            needs.uses.extend(inner.deps.iter().cloned());
            if let Source::Plugin(plugin) = &inner.source {
                needs.uses.extend(plugin.optional());
            }
            for effect in &inner.effects {
                match effect {
                    Effect::Service { name, .. } => {
                        needs.provides.insert(name.clone());
                    }
                    Effect::Child(child) => stack.push(*child),
                    _ => {}
                }
            }
        }
        needs
    }

    /// The roots in disposal waves (see the module docs).
    pub(super) fn disposal_waves(&self, roots: Vec<Arc<Fiber>>) -> Vec<Vec<Arc<Fiber>>> {
        let mut remaining: Vec<Needs> = roots.iter().map(|root| self.needs_of(root)).collect();
        let mut waves = Vec::new();
        while !remaining.is_empty() {
            // How many remaining roots use each service: a root is blocked when one other than
            // itself does.
            let mut users: FastMap<&str, usize> = FastMap::default();
            for row in &remaining {
                for name in &row.uses {
                    *users.entry(name.as_str()).or_default() += 1;
                }
            }
            let blocked: Vec<bool> = remaining
                .iter()
                .map(|row| {
                    row.provides.iter().any(|name| {
                        let own = usize::from(row.uses.contains(name));
                        users.get(name.as_str()).is_some_and(|count| *count > own)
                    })
                })
                .collect();
            drop(users);
            let wave: Vec<Arc<Fiber>> = if blocked.iter().all(|blocked| *blocked) {
                remaining.drain(..).map(|row| row.fiber).collect()
            } else {
                let mut index = 0;
                let mut wave = Vec::new();
                remaining.retain(|row| {
                    let keep = blocked[index];
                    index += 1;
                    if !keep {
                        wave.push(row.fiber.clone());
                    }
                    keep
                });
                wave
            };
            waves.push(wave);
        }
        waves
    }
}

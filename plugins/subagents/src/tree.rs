//! The agent tree of this process: every child started here, its parent, depth, mode and
//! status, in start order (so a walk from a parent is a stable pre-order). Waiters for a
//! subtree to settle are woken on every status change. Each child counts the work it was sent
//! (its generation), so a watcher that saw it go idle settles it only if nothing was sent
//! meanwhile, and notices on their way to a parent are counted until they arrive.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_plugin_api::lock;
use dsh_protocol::{ChildStatus, ChildSummary, SubagentMode};
use tokio::sync::Notify;

/// One child.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) id: String,
    pub(crate) parent: String,
    pub(crate) depth: u64,
    pub(crate) mode: SubagentMode,
    pub(crate) provider: String,
    pub(crate) label: String,
    pub(crate) status: ChildStatus,
    /// Bumped by every message sent to the child after its task.
    pub(crate) generation: u64,
    /// Its current turn was stopped by `interrupt_agent`: the parent asked, and is told.
    pub(crate) interrupted: bool,
}

impl Node {
    fn summary(&self) -> ChildSummary {
        ChildSummary {
            id: self.id.clone(),
            parent: self.parent.clone(),
            depth: self.depth,
            mode: self.mode,
            provider: self.provider.clone(),
            label: self.label.clone(),
            status: self.status,
        }
    }
}

#[derive(Default)]
pub(crate) struct Tree {
    nodes: Mutex<Vec<Node>>,
    changed: Notify,
    /// Settled notices not yet in their parent's inbox.
    notices_in_flight: AtomicUsize,
}

impl Tree {
    /// The delegation depth of `session`: 0 for a session that is nobody's child here.
    pub(crate) fn depth(&self, session: &str) -> u64 {
        self.get(session).map_or(0, |node| node.depth)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Node> {
        lock(&self.nodes).iter().find(|node| node.id == id).cloned()
    }

    pub(crate) fn insert(&self, node: Node) {
        lock(&self.nodes).push(node);
        self.changed.notify_waiters();
    }

    /// Marks `id` as interrupted by `interrupt_agent`.
    pub(crate) fn mark_interrupted(&self, id: &str) {
        if let Some(node) = lock(&self.nodes).iter_mut().find(|node| node.id == id) {
            node.interrupted = true;
        }
    }

    /// Records that `id` was sent more work; answers true when it had settled (it runs again
    /// and needs a watcher), false when its watcher is still on it, `None` when unknown.
    pub(crate) fn sent_more(&self, id: &str) -> Option<bool> {
        let woke = lock(&self.nodes)
            .iter_mut()
            .find(|node| node.id == id)
            .map(|node| {
                node.generation += 1;
                node.interrupted = false;
                let settled = node.status == ChildStatus::Ready;
                node.status = ChildStatus::Running;
                settled
            });
        self.changed.notify_waiters();
        woke
    }

    /// The work count of `id`, read before waiting for it to go idle.
    pub(crate) fn generation(&self, id: &str) -> Option<u64> {
        lock(&self.nodes)
            .iter()
            .find(|node| node.id == id)
            .map(|node| node.generation)
    }

    /// Settles `id` if it was sent nothing since `generation` (else its watcher waits again);
    /// a settled child's notice counts as in flight until [`Tree::notice_delivered`].
    pub(crate) fn settle_if(&self, id: &str, generation: u64) -> bool {
        let settled = lock(&self.nodes)
            .iter_mut()
            .find(|node| node.id == id && node.generation == generation)
            .map(|node| {
                node.status = ChildStatus::Ready;
                self.notices_in_flight.fetch_add(1, Ordering::AcqRel);
            })
            .is_some();
        self.changed.notify_waiters();
        settled
    }

    /// A settled notice reached its parent (or could not).
    pub(crate) fn notice_delivered(&self) {
        self.notices_in_flight.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Forgets `id` and everything below it; answers the ids forgotten.
    pub(crate) fn remove_subtree(&self, id: &str) -> Vec<String> {
        let gone: Vec<String> = self.walk(id, true).into_iter().map(|n| n.id).collect();
        lock(&self.nodes).retain(|node| node.id != id && !gone.contains(&node.id));
        self.changed.notify_waiters();
        gone
    }

    /// Whether `ancestor` is above `id` in the tree.
    pub(crate) fn is_below(&self, id: &str, ancestor: &str) -> bool {
        let nodes = lock(&self.nodes);
        let mut current = id.to_owned();
        while let Some(node) = nodes.iter().find(|node| node.id == current) {
            if node.parent == ancestor {
                return true;
            }
            current = node.parent.clone();
        }
        false
    }

    /// The children of `parent` (every descendant, in pre-order, when `descendants`).
    pub(crate) fn walk(&self, parent: &str, descendants: bool) -> Vec<Node> {
        let nodes = lock(&self.nodes);
        let mut out = Vec::new();
        collect(&nodes, parent, descendants, &mut out);
        out
    }

    pub(crate) fn summaries(&self, parent: &str, descendants: bool) -> Vec<ChildSummary> {
        self.walk(parent, descendants)
            .iter()
            .map(Node::summary)
            .collect()
    }

    /// Resolves once no descendant of `session` is running and no settled notice is on its
    /// way.
    pub(crate) async fn settled(&self, session: &str) {
        loop {
            // Registered before the check, so a change between the check and the wait wakes it.
            let changed = self.changed.notified();
            if self.notices_in_flight.load(Ordering::Acquire) == 0
                && self
                    .walk(session, true)
                    .iter()
                    .all(|node| node.status != ChildStatus::Running)
            {
                return;
            }
            changed.await;
        }
    }
}

fn collect(nodes: &[Node], parent: &str, descendants: bool, out: &mut Vec<Node>) {
    for node in nodes.iter().filter(|node| node.parent == parent) {
        out.push(node.clone());
        if descendants {
            collect(nodes, &node.id, true, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, parent: &str, depth: u64) -> Node {
        Node {
            id: id.to_owned(),
            parent: parent.to_owned(),
            depth,
            mode: SubagentMode::Continuable,
            provider: "spawn".to_owned(),
            label: id.to_owned(),
            status: ChildStatus::Running,
            generation: 0,
            interrupted: false,
        }
    }

    #[test]
    fn descendants_walk_in_pre_order_and_removal_takes_the_subtree() {
        let tree = Tree::default();
        for (id, parent, depth) in [("a", "root", 1), ("b", "root", 1), ("a1", "a", 2)] {
            tree.insert(node(id, parent, depth));
        }
        let order: Vec<String> = tree.walk("root", true).into_iter().map(|n| n.id).collect();
        assert_eq!(order, ["a", "a1", "b"]);
        assert_eq!(tree.walk("root", false).len(), 2);
        assert!(tree.is_below("a1", "root"));
        assert!(!tree.is_below("b", "a"));
        assert_eq!(tree.depth("a1"), 2);
        assert_eq!(tree.remove_subtree("a"), ["a1"]);
        assert!(tree.get("a").is_none() && tree.get("a1").is_none());
    }

    #[test]
    fn work_sent_while_a_child_settles_keeps_it_running() {
        let tree = Tree::default();
        tree.insert(node("a", "root", 1));
        let seen = tree.generation("a").unwrap();
        // Sent more after its watcher saw it idle: the watcher must not settle it.
        assert_eq!(tree.sent_more("a"), Some(false));
        assert!(!tree.settle_if("a", seen));
        assert_eq!(tree.get("a").unwrap().status, ChildStatus::Running);
        let seen = tree.generation("a").unwrap();
        assert!(tree.settle_if("a", seen));
        tree.notice_delivered();
        // Sent more once settled: it runs again and needs a watcher.
        assert_eq!(tree.sent_more("a"), Some(true));
        assert_eq!(tree.sent_more("nobody"), None);
    }
}

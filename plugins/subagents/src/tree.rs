//! The agent tree of this process: every child started here, its parent, depth, mode and
//! status, in start order (so a walk from a parent is a stable pre-order). Waiters for a
//! subtree to settle are woken on every status change.

use std::sync::Mutex;

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

    /// Sets the status of `id`; answers the status it had.
    pub(crate) fn set_status(&self, id: &str, status: ChildStatus) -> Option<ChildStatus> {
        let before = lock(&self.nodes)
            .iter_mut()
            .find(|node| node.id == id)
            .map(|node| std::mem::replace(&mut node.status, status));
        self.changed.notify_waiters();
        before
    }

    /// Moves a settled child back to running; false when it was not settled (its watcher is
    /// still on it, or it is unknown).
    pub(crate) fn wake_if_ready(&self, id: &str) -> bool {
        let woke = lock(&self.nodes)
            .iter_mut()
            .find(|node| node.id == id && node.status == ChildStatus::Ready)
            .map(|node| node.status = ChildStatus::Running)
            .is_some();
        if woke {
            self.changed.notify_waiters();
        }
        woke
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

    /// Resolves once no descendant of `session` is running.
    pub(crate) async fn settled(&self, session: &str) {
        loop {
            // Registered before the check, so a change between the check and the wait wakes it.
            let changed = self.changed.notified();
            if self
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
    fn a_ready_child_wakes_once() {
        let tree = Tree::default();
        tree.insert(node("a", "root", 1));
        assert!(!tree.wake_if_ready("a"));
        tree.set_status("a", ChildStatus::Ready);
        assert!(tree.wake_if_ready("a"));
        assert!(!tree.wake_if_ready("a"));
    }
}

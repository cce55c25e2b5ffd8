//! What the system prompt last answered each session, by what it was made from: a loop asks
//! before every step, and from one step to the next the answer rarely changes, so it is made
//! again (a text formatted, JSON written) only when its inputs did.

use std::collections::HashMap;
use std::sync::Mutex;

use dsh_plugin_api::{Json, lock};
use dsh_protocol::{AssembledPrompt, PromptContext};

use crate::instructions::Loaded;
use crate::runtime::RuntimeContexts;

/// Everything the system prompt keeps per session between steps.
#[derive(Default)]
pub(crate) struct Memos {
    /// The runtime-context snapshot, by the services' answers.
    pub(crate) runtime: RuntimeContexts,
    /// The instructions snapshot's text, by the files it shows.
    pub(crate) instructions: SessionMemo<Vec<Loaded>, String>,
    /// The system prompt's own snapshots as sent down the contexts waterfall.
    pub(crate) own: SessionMemo<Vec<PromptContext>, Json<Vec<PromptContext>>>,
    /// The answer, as written out.
    pub(crate) answers: SessionMemo<AssembledPrompt, Json<AssembledPrompt>>,
}

impl Memos {
    /// Forgets a disposed session.
    pub(crate) fn forget(&self, session: &str) {
        self.runtime.forget(session);
        self.instructions.forget(session);
        self.own.forget(session);
        self.answers.forget(session);
    }
}

/// Per session, the last inputs `K` and the value `V` made from them.
pub(crate) struct SessionMemo<K, V>(Mutex<HashMap<String, (K, V)>>);

impl<K, V> Default for SessionMemo<K, V> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<K: PartialEq + Clone, V: Clone> SessionMemo<K, V> {
    /// The value of `inputs` for `session`: the kept one when the inputs are the last ones,
    /// else `make`'s, kept in its place (the inputs copied only then).
    pub(crate) fn get_or_make(&self, session: &str, inputs: &K, make: impl FnOnce(&K) -> V) -> V {
        if let Some((seen, value)) = lock(&self.0).get(session)
            && seen == inputs
        {
            return value.clone();
        }
        let value = make(inputs);
        lock(&self.0).insert(session.to_owned(), (inputs.clone(), value.clone()));
        value
    }

    /// Forgets a disposed session.
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.0).remove(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_again_only_when_its_session_s_inputs_change() {
        let memo = SessionMemo::<u32, String>::default();
        let mut made = 0;
        let mut get = |session: &str, inputs: u32| {
            memo.get_or_make(session, &inputs, |inputs| {
                made += 1;
                format!("{session}:{inputs}")
            })
        };
        assert_eq!(get("a", 1), "a:1");
        assert_eq!(get("a", 1), "a:1");
        assert_eq!(get("b", 1), "b:1");
        assert_eq!(get("a", 2), "a:2");
        assert_eq!(made, 3);
        memo.forget("a");
        assert!(lock(&memo.0).get("a").is_none());
    }
}

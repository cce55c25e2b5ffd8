//! The policies the `sandbox` service answered, kept encoded by what they were built from. The
//! system prompt asks for its session's policy before every step to tell the model its
//! runtime context; building it (a path string per protected name and root) and writing it
//! out as JSON was a twentieth of an instant step, for an answer that changes only with the
//! session's mode, its roots or a repository's `.git` turning into a file. The policy is built
//! here too, from those inputs and the row's settings.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use dsh_plugin_api::{Json, lock};
use dsh_protocol::{Enforcement, SandboxMode, SandboxPolicy};

use crate::service::{Backend, SandboxImpl, git_is_file, protected_paths};

/// Inputs kept at once; past this many the memo starts over (one entry per working directory
/// and mode in use, so a long-lived host with many sessions stays small).
const KEPT: usize = 256;

/// What a policy is built from besides the row's settings, which do not change while the row
/// lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PolicyInputs {
    pub(crate) mode: SandboxMode,
    pub(crate) cwd: String,
    /// The session's extra writable roots.
    pub(crate) extra: Vec<String>,
    /// For each project root (the working directory, the configured writable roots, then
    /// `extra`), whether its `.git` is a file; empty when `.git` is not a protected name.
    pub(crate) git_files: Vec<bool>,
}

#[derive(Default)]
pub(crate) struct EncodedPolicies(Mutex<HashMap<PolicyInputs, Json<SandboxPolicy>>>);

impl EncodedPolicies {
    /// The policy built from `inputs`, encoded; `build` runs only for inputs not seen before.
    pub(crate) fn get_or_encode(
        &self,
        inputs: PolicyInputs,
        build: impl FnOnce(&PolicyInputs) -> SandboxPolicy,
    ) -> Json<SandboxPolicy> {
        if let Some(encoded) = lock(&self.0).get(&inputs) {
            return encoded.clone();
        }
        let encoded = Json::encode(&build(&inputs));
        let mut kept = lock(&self.0);
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(inputs, encoded.clone());
        encoded
    }
}

impl SandboxImpl {
    /// What a policy is built from besides the row's settings.
    pub(crate) fn inputs(&self, mode: SandboxMode, session: &str, cwd: &str) -> PolicyInputs {
        let extra = self.roots.of(session);
        let git_files = match self
            .settings
            .protected_names
            .iter()
            .any(|name| name == ".git")
        {
            true => std::iter::once(cwd)
                .chain(self.settings.writable_roots.iter().map(String::as_str))
                .chain(extra.iter().map(String::as_str))
                .map(|root| git_is_file(Path::new(root)))
                .collect(),
            false => Vec::new(),
        };
        PolicyInputs {
            mode,
            cwd: cwd.to_owned(),
            extra,
            git_files,
        }
    }

    pub(crate) fn policy_from(&self, inputs: &PolicyInputs) -> SandboxPolicy {
        let PolicyInputs {
            mode,
            cwd,
            extra,
            git_files,
        } = inputs;
        let mode = *mode;
        let mut writable_roots = vec![cwd.clone()];
        writable_roots.extend(self.settings.writable_roots.iter().cloned());
        writable_roots.extend(extra.iter().cloned());
        let temps = [
            "/tmp".to_owned(),
            std::env::temp_dir().display().to_string(),
        ];
        for temp in temps.into_iter().filter(|_| self.settings.temp_writable) {
            if !writable_roots.contains(&temp) {
                writable_roots.push(temp);
            }
        }
        let (enforcement, backend) = match (&self.backend, mode) {
            (_, SandboxMode::DangerFullAccess) => (Enforcement::None, "none".to_owned()),
            (Backend::Bwrap { .. }, _) => (Enforcement::Full, "bwrap".to_owned()),
            (Backend::Landlock(_), _) => (Enforcement::Partial, "landlock".to_owned()),
            (Backend::Unavailable(reason), _) => (Enforcement::None, reason.clone()),
        };
        let mut protected = self.settings.protected.clone();
        // The project roots: the working directory, the configured writable roots, then the
        // session's own, as `inputs` looked at them.
        let roots = std::iter::once(cwd)
            .chain(&self.settings.writable_roots)
            .chain(extra);
        for (index, root) in roots.enumerate() {
            let git_file = git_files.get(index).copied().unwrap_or(false);
            protected.extend(protected_paths(
                Path::new(root),
                &self.settings.protected_names,
                git_file,
            ));
        }
        SandboxPolicy {
            mode,
            writable_roots,
            protected,
            readable_roots: self.settings.readable_roots.clone(),
            hidden: self.settings.hidden.clone(),
            exposed: self.settings.exposed.clone(),
            network: self.settings.network || mode == SandboxMode::DangerFullAccess,
            unix_sockets: self.settings.unix_sockets || mode == SandboxMode::DangerFullAccess,
            enforcement,
            backend,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(cwd: &str, git_file: bool) -> PolicyInputs {
        PolicyInputs {
            mode: SandboxMode::WorkspaceWrite,
            cwd: cwd.to_owned(),
            extra: Vec::new(),
            git_files: vec![git_file],
        }
    }

    fn policy(root: &str) -> SandboxPolicy {
        SandboxPolicy::unenforced(SandboxMode::WorkspaceWrite, vec![root.to_owned()])
    }

    #[test]
    fn the_same_inputs_are_built_once_and_changed_ones_again() {
        let memo = EncodedPolicies::default();
        let mut built = 0;
        for _ in 0..3 {
            memo.get_or_encode(inputs("/w", false), |inputs| {
                built += 1;
                policy(&inputs.cwd)
            });
        }
        assert_eq!(built, 1);
        let changed = memo.get_or_encode(inputs("/w", true), |_| {
            built += 1;
            policy("/changed")
        });
        assert_eq!(built, 2);
        assert!(changed.text().contains("/changed"), "{}", changed.text());
    }

    #[test]
    fn it_starts_over_past_its_size() {
        let memo = EncodedPolicies::default();
        for index in 0..KEPT + 1 {
            memo.get_or_encode(inputs(&format!("/w{index}"), false), |inputs| {
                policy(&inputs.cwd)
            });
        }
        assert_eq!(lock(&memo.0).len(), 1);
    }
}

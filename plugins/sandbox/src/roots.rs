//! Each session's extra writable roots (`sandbox_roots`): directories a client named for one
//! session (an ACP editor's `additionalDirectories`), added to that session's policy next to
//! its working directory. Kept in memory: a reload of this row forgets them, and the client's
//! next `session/load` sets them again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RResult, RString, RVec};
use dsh_plugin_api::{SeamError, SeamErrorKind, lock};
use dsh_sandbox_seam::SandboxRoots;

use crate::service::SandboxImpl;

/// The extra roots of every session that has some.
#[derive(Default)]
pub(crate) struct Roots(Mutex<HashMap<String, Vec<String>>>);

impl Roots {
    /// The extra roots of `session` (none for most).
    pub(crate) fn of(&self, session: &str) -> Vec<String> {
        lock(&self.0).get(session).cloned().unwrap_or_default()
    }

    fn set(&self, session: &str, roots: Vec<String>) -> Result<(), SeamError> {
        if let Some(relative) = roots.iter().find(|root| !Path::new(root).is_absolute()) {
            return Err(SeamError::new(
                SeamErrorKind::Invalid,
                format!("sandbox_roots: a root must be an absolute path: {relative}"),
            ));
        }
        let mut all = lock(&self.0);
        match roots.is_empty() {
            true => all.remove(session),
            false => all.insert(session.to_owned(), roots),
        };
        Ok(())
    }
}

/// The `sandbox_roots` service object.
pub(crate) struct RootsHandle(pub(crate) Arc<SandboxImpl>);

impl SandboxRoots for RootsHandle {
    fn set_roots(&self, session: RString, roots: RVec<RString>) -> RResult<(), SeamError> {
        let roots = roots.into_iter().map(RString::into_string).collect();
        self.0.roots.set(session.as_str(), roots).into()
    }
}

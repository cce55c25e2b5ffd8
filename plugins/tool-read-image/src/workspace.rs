//! The workspace a call reads in: the session's sandbox policy (readable roots, hidden paths
//! such as the dsh home) when the `sandbox` service runs, as `tool-fs`'s `read` sees it, so
//! `read_image` can read exactly what `read` can; else the working directory under
//! `DSH_PERMISSION_MODE`.

use std::sync::Arc;

use dsh_fs_local::FileSystem;
use dsh_plugin_api::Context;
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_tool_fs_core::{SandboxMode, Workspace};
use dsh_tools_seam::CallView;

pub(crate) fn workspace(ctx: &Context, fs: Arc<dyn FileSystem>, call: &CallView) -> Workspace {
    let base = Workspace::new(call.cwd.as_str()).with_fs(fs);
    let policy = match ctx.get::<SandboxService>(SANDBOX_SERVICE) {
        Ok(Some(sandbox)) => sandbox
            .policy(call.session.clone(), call.cwd.clone(), call.call_id.clone())
            .decode()
            .ok(),
        _ => None,
    };
    let Some(policy) = policy else {
        let mode = std::env::var("DSH_PERMISSION_MODE")
            .ok()
            .and_then(|name| SandboxMode::parse(&name))
            .unwrap_or(SandboxMode::WorkspaceWrite);
        return base.with_mode(mode).with_temp_roots();
    };
    base.with_policy(policy)
}

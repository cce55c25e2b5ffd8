//! The workspace a call reads in: the session's sandbox policy (readable roots, hidden paths
//! such as the dsh home) when the `sandbox` service runs, as `tool-fs`'s `read` sees it, so
//! `read_image` can read exactly what `read` can; else the working directory under
//! `DSH_PERMISSION_MODE`.

use std::sync::Arc;

use dsh_fs_local::FileSystem;
use dsh_plugin_api::Context;
use dsh_sandbox_seam::call_policy;
use dsh_tool_fs_core::Workspace;
use dsh_tools_seam::CallView;

pub(crate) fn workspace(ctx: &Context, fs: Arc<dyn FileSystem>, call: &CallView) -> Workspace {
    let policy = call_policy(ctx, &call.session, &call.cwd, &call.call_id);
    Workspace::new(call.cwd.as_str())
        .with_fs(fs)
        .with_policy_or_env(policy)
}

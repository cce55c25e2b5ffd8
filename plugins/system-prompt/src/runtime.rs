//! The runtime context: what the model should know of the session's standing permissions,
//! one snapshot with a section each for the sandbox (`sandbox:policy`, the session's policy
//! from the `sandbox` service, as the shell and the file tools apply it) and the approval policy
//! (`approval:policy`, from the `approval` service). It changes rarely, so the loop logs it
//! again only when it does.

use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::Context;
use dsh_protocol::{
    ApprovalPolicy, Enforcement, PromptContext, SandboxMode, SandboxPolicy, SnapshotSection,
};
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};

/// The sandbox's text for `policy`.
fn sandbox_text(policy: &SandboxPolicy) -> String {
    let cwd = policy.writable_roots.first().map_or("", String::as_str);
    let enforced = match policy.enforcement {
        Enforcement::Full | Enforcement::Partial => format!(" (enforced by {})", policy.backend),
        Enforcement::None => String::new(),
    };
    let reads = match &policy.readable_roots {
        Some(roots) if policy.mode != SandboxMode::DangerFullAccess => {
            let mut all: Vec<&str> = policy.writable_roots.iter().map(String::as_str).collect();
            all.extend(roots.iter().map(String::as_str));
            format!(
                " Reads are limited to {} and the system's program directories.",
                all.join(", ")
            )
        }
        _ => String::new(),
    };
    let network = match (policy.network, policy.unix_sockets) {
        (true, true) => "Commands may use the network.",
        (true, false) => "Commands may use the network but cannot open Unix sockets.",
        (false, true) => "Commands have no network.",
        (false, false) => "Commands have no network and cannot open Unix sockets.",
    };
    let refused = match (policy.mode, policy.enforcement) {
        (SandboxMode::DangerFullAccess, _) | (_, Enforcement::Full | Enforcement::Partial) => "",
        _ => " No sandbox backend works on this machine, so `bash` refuses every command.",
    };
    match policy.mode {
        SandboxMode::DangerFullAccess => {
            "Sandbox: danger-full-access. Commands and file changes are not restricted.".to_owned()
        }
        SandboxMode::ReadOnly => format!(
            "Sandbox: read-only{enforced}. Commands see the file system read-only (with a \
             private, discarded /tmp); `write` and `edit` refuse every change. {network} When a \
             change is needed, try it anyway and follow the refusal it returns.{reads}{refused}"
        ),
        SandboxMode::WorkspaceWrite => {
            let others: Vec<&str> = policy
                .writable_roots
                .iter()
                .skip(1)
                .map(String::as_str)
                .collect();
            let also = match others.is_empty() {
                true => String::new(),
                false => format!(" and {}", others.join(", ")),
            };
            let protected = " A repository's hooks and config, .dsh, .claude, .codex, .agents \
                 and .mcp.json are protected: a `write` or `edit` of one asks the person.";
            format!(
                "Sandbox: workspace-write{enforced}. Commands, `write` and `edit` may change files \
                 under the working directory \"{cwd}\"{also}; everywhere else the file system is \
                 read-only. {network}{protected}{reads}{refused}"
            )
        }
    }
}

/// The policy of `session` from the `sandbox` service, or the one `DSH_PERMISSION_MODE`
/// names when no sandbox runs (its file fence is then `write`'s and `edit`'s own).
fn policy(ctx: &Context, session: &str, cwd: &str) -> SandboxPolicy {
    if let Ok(Some(sandbox)) = ctx.get::<SandboxService>(SANDBOX_SERVICE)
        && let Ok(policy) = sandbox
            .policy(session.into(), cwd.into(), "".into())
            .decode()
    {
        return policy;
    }
    let mode = std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .and_then(|name| SandboxMode::parse(&name))
        .unwrap_or(SandboxMode::WorkspaceWrite);
    SandboxPolicy {
        mode,
        writable_roots: vec![cwd.to_owned(), "/tmp".to_owned()],
        protected: Vec::new(),
        hidden: Vec::new(),
        exposed: Vec::new(),
        readable_roots: None,
        network: mode == SandboxMode::DangerFullAccess,
        unix_sockets: false,
        enforcement: Enforcement::None,
        backend: "none".to_owned(),
    }
}

fn approval_text(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Never => {
            "Approval policy: never. A call that needs approval is refused without asking; do \
             not ask for wider permissions."
        }
        ApprovalPolicy::Ask => {
            "Approval policy: ask. A call that needs approval is put to whoever can answer; when \
             no one can, it is refused."
        }
    }
}

/// The snapshot as a context, with its named sections.
pub(crate) fn context(ctx: &Context, session: &str, cwd: &str) -> PromptContext {
    let mut sections = vec![("sandbox:policy", sandbox_text(&policy(ctx, session, cwd)))];
    if let Ok(Some(approval)) = ctx.get::<ApprovalService>(APPROVAL_SERVICE) {
        // A policy that does not read is the stricter one.
        let policy = approval
            .session_policy(session.into())
            .decode()
            .unwrap_or(ApprovalPolicy::Never);
        sections.push(("approval:policy", approval_text(policy).to_owned()));
    }
    let mut text = String::from("Runtime context (it replaces any earlier runtime context):");
    for (_, section) in &sections {
        text.push_str("\n\n");
        text.push_str(section);
    }
    PromptContext {
        source: None,
        key: "runtime-context".to_owned(),
        text,
        sections: Some(
            sections
                .into_iter()
                .map(|(name, text)| SnapshotSection {
                    name: name.to_owned(),
                    text,
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_says_what_it_allows() {
        let policy = |mode, enforcement| SandboxPolicy {
            mode,
            writable_roots: vec!["/w".to_owned(), "/tmp".to_owned()],
            protected: Vec::new(),
            hidden: Vec::new(),
            exposed: Vec::new(),
            readable_roots: None,
            network: false,
            unix_sockets: false,
            enforcement,
            backend: "bwrap".to_owned(),
        };
        let write = sandbox_text(&policy(SandboxMode::WorkspaceWrite, Enforcement::Full));
        assert!(
            write.contains("\"/w\" and /tmp") && write.contains("enforced by bwrap"),
            "{write}"
        );
        assert!(write.contains("no network"), "{write}");
        let refused = sandbox_text(&policy(SandboxMode::WorkspaceWrite, Enforcement::None));
        assert!(refused.contains("refuses every command"), "{refused}");
        assert!(
            sandbox_text(&policy(SandboxMode::ReadOnly, Enforcement::Full))
                .contains("refuse every change")
        );
        assert!(
            sandbox_text(&policy(SandboxMode::DangerFullAccess, Enforcement::None))
                .contains("not restricted")
        );
        assert!(approval_text(ApprovalPolicy::Never).contains("without asking"));
    }
}

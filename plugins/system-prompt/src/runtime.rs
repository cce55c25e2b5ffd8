//! The runtime context: what the model should know of the session's standing permissions,
//! one snapshot with a section each for the sandbox (`sandbox:policy`, the session's policy
//! from the `sandbox` service, as the shell and the file tools apply it) and the approval policy
//! (`approval:policy`, from the `approval` service), followed by what other plugins add under
//! the same key (the subagents' `subagent:delegation`). It changes rarely, so the loop logs it
//! again only when it does.

use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::{Context, Json};
use dsh_protocol::{
    ApprovalPolicy, Enforcement, PromptContext, SandboxMode, SandboxPolicy, SnapshotSection,
};
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_system_prompt_seam::RUNTIME_CONTEXT;

use crate::memo::SessionMemo;

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

/// The policy of `session` as the `sandbox` service answers it (its JSON text), if one runs.
fn sandbox_policy(ctx: &Context, session: &str, cwd: &str) -> Option<Json<SandboxPolicy>> {
    let sandbox = ctx.get::<SandboxService>(SANDBOX_SERVICE).ok()??;
    Some(sandbox.policy(session.into(), cwd.into(), "".into()))
}

/// The policy `answered` holds, or, when no sandbox runs or its answer does not read, the one
/// `DSH_PERMISSION_MODE` names (its file fence is then `write`'s and `edit`'s own).
fn policy(answered: Option<&Json<SandboxPolicy>>, cwd: &str) -> SandboxPolicy {
    if let Some(Ok(policy)) = answered.map(Json::decode) {
        return policy;
    }
    let mode = std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .and_then(|name| SandboxMode::parse(&name))
        .unwrap_or(SandboxMode::WorkspaceWrite);
    SandboxPolicy::unenforced(mode, vec![cwd.to_owned(), "/tmp".to_owned()])
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

/// What the runtime context of a session is written from: the answers of the `sandbox` and
/// `approval` services as they came (their JSON texts), and the working directory.
#[derive(Clone, PartialEq, Eq)]
struct Answers {
    cwd: String,
    sandbox: Option<Json<SandboxPolicy>>,
    approval: Option<Json<ApprovalPolicy>>,
}

impl Answers {
    fn of(ctx: &Context, session: &str, cwd: &str) -> Self {
        Self {
            cwd: cwd.to_owned(),
            sandbox: sandbox_policy(ctx, session, cwd),
            approval: ctx
                .get::<ApprovalService>(APPROVAL_SERVICE)
                .ok()
                .flatten()
                .map(|approval| approval.session_policy(session.into())),
        }
    }

    /// The system prompt's own sections of the runtime context (sandbox, then approvals).
    fn render(&self) -> PromptContext {
        let mut sections = vec![(
            "sandbox:policy",
            sandbox_text(&policy(self.sandbox.as_ref(), &self.cwd)),
        )];
        if let Some(answer) = &self.approval {
            // A policy that does not read is the stricter one.
            let policy = answer.decode().unwrap_or(ApprovalPolicy::Never);
            sections.push(("approval:policy", approval_text(policy).to_owned()));
        }
        render(
            sections
                .into_iter()
                .map(|(name, text)| SnapshotSection {
                    name: name.to_owned(),
                    text,
                })
                .collect(),
        )
    }
}

/// Each session's runtime context and the answers it was written from: the services are asked
/// every step (a mode or a root can change between any two), the text is written again only
/// when an answer changed.
#[derive(Default)]
pub(crate) struct RuntimeContexts(SessionMemo<Answers, PromptContext>);

impl RuntimeContexts {
    /// The runtime context of `session` working in `cwd`.
    pub(crate) fn of(&self, ctx: &Context, session: &str, cwd: &str) -> PromptContext {
        self.0
            .get_or_make(session, &Answers::of(ctx, session, cwd), Answers::render)
    }

    /// Forgets a disposed session.
    pub(crate) fn forget(&self, session: &str) {
        self.0.forget(session);
    }
}

/// The runtime context as one snapshot of `sections`.
fn render(sections: Vec<SnapshotSection>) -> PromptContext {
    let mut text = String::from("Runtime context (it replaces any earlier runtime context):");
    for section in &sections {
        text.push_str("\n\n");
        text.push_str(&section.text);
    }
    PromptContext {
        source: None,
        key: RUNTIME_CONTEXT.to_owned(),
        text,
        sections: Some(sections),
    }
}

/// `contexts` with every runtime-context snapshot among them (the system prompt's own and the
/// contributions of other plugins, see [`RUNTIME_CONTEXT`]) made one, where the first of them
/// was: the sections in the order they came, the text rendered again from them.
pub(crate) fn merge(contexts: Vec<PromptContext>) -> Vec<PromptContext> {
    let is_runtime =
        |context: &PromptContext| context.key == RUNTIME_CONTEXT && context.source.is_none();
    let mut sections = Vec::new();
    let mut at = None;
    let mut kept = Vec::with_capacity(contexts.len());
    for context in contexts {
        if is_runtime(&context) {
            at.get_or_insert(kept.len());
            sections.extend(context.sections.unwrap_or_default());
        } else {
            kept.push(context);
        }
    }
    if let Some(at) = at
        && !sections.is_empty()
    {
        kept.insert(at, render(sections));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_says_what_it_allows() {
        let policy = |mode, enforcement| SandboxPolicy {
            network: false,
            enforcement,
            backend: "bwrap".to_owned(),
            ..SandboxPolicy::unenforced(mode, vec!["/w".to_owned(), "/tmp".to_owned()])
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

    fn section(name: &str, text: &str) -> SnapshotSection {
        SnapshotSection {
            name: name.to_owned(),
            text: text.to_owned(),
        }
    }

    fn contribution(sections: Vec<SnapshotSection>) -> PromptContext {
        PromptContext {
            key: RUNTIME_CONTEXT.to_owned(),
            text: "not read".to_owned(),
            sections: Some(sections),
            source: None,
        }
    }

    fn other(key: &str) -> PromptContext {
        PromptContext {
            key: key.to_owned(),
            text: format!("{key} text"),
            sections: None,
            source: None,
        }
    }

    #[test]
    fn contributed_sections_join_the_runtime_context_where_it_was() {
        let own = render(vec![section("sandbox:policy", "Sandbox: s.")]);
        let merged = merge(vec![
            other("agents-md"),
            own,
            other("time"),
            contribution(vec![section("subagent:delegation", "Delegated.")]),
        ]);
        let keys: Vec<&str> = merged.iter().map(|context| context.key.as_str()).collect();
        assert_eq!(keys, ["agents-md", RUNTIME_CONTEXT, "time"]);
        let runtime = &merged[1];
        let names: Vec<&str> = runtime
            .sections
            .iter()
            .flatten()
            .map(|section| section.name.as_str())
            .collect();
        assert_eq!(names, ["sandbox:policy", "subagent:delegation"]);
        assert!(
            runtime.text.ends_with("Sandbox: s.\n\nDelegated."),
            "{}",
            runtime.text
        );
        assert!(!runtime.text.contains("not read"));
    }

    #[test]
    fn a_contribution_alone_is_a_runtime_context_and_none_leaves_the_list_alone() {
        let merged = merge(vec![contribution(vec![section(
            "subagent:delegation",
            "D.",
        )])]);
        assert_eq!(merged.len(), 1);
        assert!(merged[0].text.ends_with("\n\nD."), "{}", merged[0].text);
        let untouched = vec![other("agents-md"), other("time")];
        assert_eq!(merge(untouched.clone()), untouched);
        // A contribution with nothing in it adds no snapshot.
        assert!(merge(vec![contribution(Vec::new())]).is_empty());
    }
}

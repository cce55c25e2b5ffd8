//! The runtime context: what the model should know of the session's standing permissions,
//! one snapshot with a section each for the file policy (`sandbox:policy`, from
//! `DSH_PERMISSION_MODE`, as the file tools apply it) and the approval policy
//! (`approval:policy`, from the `approval` service). It changes rarely, so the loop logs it
//! again only when it does.

use dsh_approval_seam::{APPROVAL, ApprovalService};
use dsh_plugin_api::Context;
use dsh_protocol::{ApprovalPolicy, PromptContext, SnapshotSection};

/// The file policy's text for `mode` in the working directory `cwd`.
fn sandbox_text(mode: &str, cwd: &str) -> String {
    match mode {
        "danger-full-access" => {
            "File policy: danger-full-access. File changes are not restricted.".to_owned()
        }
        "read-only" => "File policy: read-only. `write` and `edit` refuse every change; when a \
                        change is needed, try it anyway and follow the refusal it returns."
            .to_owned(),
        _ => format!(
            "File policy: workspace-write. `write` and `edit` may change files under the working \
             directory \"{cwd}\" and the system's temporary directories; changes elsewhere are \
             refused. `bash` is not confined."
        ),
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
pub(crate) fn context(ctx: &Context, cwd: &str) -> PromptContext {
    let mode = std::env::var("DSH_PERMISSION_MODE").unwrap_or_default();
    let mut sections = vec![("sandbox:policy", sandbox_text(&mode, cwd))];
    if let Ok(Some(approval)) = ctx.get::<ApprovalService>(APPROVAL) {
        // A policy that does not read is the stricter one.
        let policy = approval.policy().decode().unwrap_or(ApprovalPolicy::Never);
        sections.push(("approval:policy", approval_text(policy).to_owned()));
    }
    let mut text = String::from("Runtime context (it replaces any earlier runtime context):");
    for (_, section) in &sections {
        text.push_str("\n\n");
        text.push_str(section);
    }
    PromptContext {
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
        assert!(sandbox_text("workspace-write", "/w").contains("\"/w\""));
        assert!(sandbox_text("", "/w").starts_with("File policy: workspace-write."));
        assert!(sandbox_text("read-only", "/w").contains("refuse every change"));
        assert!(sandbox_text("danger-full-access", "/w").contains("not restricted"));
        assert!(approval_text(ApprovalPolicy::Never).contains("without asking"));
        assert!(approval_text(ApprovalPolicy::Ask).contains("whoever can answer"));
    }
}

//! A row's configuration, and what the child may do: the row's native permission mode,
//! narrowed so that a child is never wider than the parent session it works for.

use std::collections::BTreeMap;

use dsh_plugin_api::prelude::*;
use dsh_protocol::SandboxMode;

use crate::codex::ThreadPolicy;

/// Which product runs as the child.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "kebab-case")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum Product {
    /// OpenAI's Codex CLI, through `codex app-server`.
    Codex,
    /// Anthropic's Claude Code CLI, through `claude -p` and its stream-json wire.
    ClaudeCode,
}

/// Config of `subagent-product`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ProductConfig {
    pub product: Product,
    /// The tool the model calls (default `subagent_codex` / `subagent_claude_code`); each row
    /// needs its own.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The product's executable (default `codex` / `claude`, looked up on PATH).
    #[serde(default)]
    pub command: Option<String>,
    /// Arguments put before the ones the row adds (a wrapper's own, say).
    #[serde(default)]
    pub args: Vec<String>,
    /// The product's own non-interactive mode. Codex: `never` (default), `approve-for-me`,
    /// `dangerously-bypass-approvals-and-sandbox`. Claude Code: `dontAsk` (default),
    /// `acceptEdits`, `auto`, `plan`, `bypassPermissions`. The parent session's sandbox mode
    /// narrows it: a read-only parent gets a read-only (Codex) or planning (Claude Code)
    /// child, and the modes that let the product or a model widen what the child may do
    /// (`approve-for-me`, `auto`, the bypasses) need a parent in danger-full-access.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Variables set for the product. The host's variables that look like secrets are not
    /// passed on unless named here (give the product its API key this way).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Milliseconds between SIGTERM and SIGKILL when a run's process group is ended.
    #[serde(default = "default_grace")]
    pub dispose_grace_ms: u64,
    /// The longest a run may take, in milliseconds; past it the run is stopped and fails
    /// with category `timeout`.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
}

fn default_grace() -> u64 {
    3_000
}

fn default_timeout() -> u64 {
    3_600_000
}

impl ProductConfig {
    pub(crate) fn command(&self) -> &str {
        match (&self.command, self.product) {
            (Some(command), _) => command,
            (None, Product::Codex) => "codex",
            (None, Product::ClaudeCode) => "claude",
        }
    }

    pub(crate) fn tool_name(&self) -> &str {
        match (&self.tool_name, self.product) {
            (Some(name), _) => name,
            (None, Product::Codex) => "subagent_codex",
            (None, Product::ClaudeCode) => "subagent_claude_code",
        }
    }
}

const CODEX_MODES: [&str; 3] = [
    "never",
    "approve-for-me",
    "dangerously-bypass-approvals-and-sandbox",
];
const CLAUDE_MODES: [&str; 5] = [
    "dontAsk",
    "acceptEdits",
    "auto",
    "plan",
    "bypassPermissions",
];

/// A `permissionMode` its product does not have.
#[derive(Debug, thiserror::Error)]
#[error("`permissionMode` `{mode}` is not one of {modes} for product `{product}`")]
pub(crate) struct ModeError {
    mode: String,
    modes: String,
    product: &'static str,
}

/// The row's mode, checked against its product.
#[derive(Debug, Clone)]
pub(crate) struct Permissions {
    product: Product,
    mode: String,
}

impl Permissions {
    /// Checks `permissionMode` against the product's modes.
    pub(crate) fn of(config: &ProductConfig) -> Result<Self, ModeError> {
        let (modes, default): (&[&str], &str) = match config.product {
            Product::Codex => (&CODEX_MODES, "never"),
            Product::ClaudeCode => (&CLAUDE_MODES, "dontAsk"),
        };
        let mode = config.permission_mode.as_deref().unwrap_or(default);
        if !modes.contains(&mode) {
            return Err(ModeError {
                mode: mode.to_owned(),
                modes: modes.join(", "),
                product: match config.product {
                    Product::Codex => "codex",
                    Product::ClaudeCode => "claude-code",
                },
            });
        }
        Ok(Self {
            product: config.product,
            mode: mode.to_owned(),
        })
    }

    /// Codex's `thread/start` fields for a parent under `parent`. Below danger-full-access
    /// nothing a model decides may widen the child: `approve-for-me` (Codex's reviewer model
    /// approving its escalations) becomes `never`, as the parent's own escalations need a
    /// person.
    pub(crate) fn codex(&self, parent: SandboxMode) -> ThreadPolicy {
        debug_assert_eq!(self.product, Product::Codex);
        let full = parent == SandboxMode::DangerFullAccess;
        let (approval_policy, approvals_reviewer, sandbox) = match self.mode.as_str() {
            "approve-for-me" if full => (
                "on-request",
                Some("auto_review"),
                SandboxMode::WorkspaceWrite,
            ),
            "dangerously-bypass-approvals-and-sandbox" => {
                ("never", None, SandboxMode::DangerFullAccess)
            }
            _ => ("never", None, SandboxMode::WorkspaceWrite),
        };
        ThreadPolicy {
            approval_policy,
            approvals_reviewer,
            sandbox: narrower(sandbox, parent).as_str(),
            mode: self.mode.clone(),
        }
    }

    /// Claude Code's `--permission-mode` for a parent under `parent`: planning under a
    /// read-only parent; below danger-full-access neither the bypass nor `auto` (a classifier
    /// allowing what would need a person) but their nearest unattended modes.
    pub(crate) fn claude(&self, parent: SandboxMode) -> String {
        match (parent, self.mode.as_str()) {
            (SandboxMode::ReadOnly, _) => "plan".to_owned(),
            (SandboxMode::WorkspaceWrite, "bypassPermissions") => "acceptEdits".to_owned(),
            (SandboxMode::WorkspaceWrite, "auto") => "dontAsk".to_owned(),
            (_, mode) => mode.to_owned(),
        }
    }
}

/// The narrower of two modes.
fn narrower(a: SandboxMode, b: SandboxMode) -> SandboxMode {
    let rank = |mode: SandboxMode| match mode {
        SandboxMode::ReadOnly => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::DangerFullAccess => 2,
    };
    if rank(a) <= rank(b) { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(product: Product, mode: Option<&str>) -> ProductConfig {
        ProductConfig {
            product,
            tool_name: None,
            command: None,
            args: Vec::new(),
            permission_mode: mode.map(str::to_owned),
            env: BTreeMap::new(),
            dispose_grace_ms: 3_000,
            timeout_ms: 1_000,
        }
    }

    #[test]
    fn a_child_is_never_wider_than_its_parent() -> Result<(), ModeError> {
        let bypass = Permissions::of(&config(
            Product::Codex,
            Some("dangerously-bypass-approvals-and-sandbox"),
        ))?;
        assert_eq!(
            bypass.codex(SandboxMode::DangerFullAccess).sandbox,
            "danger-full-access"
        );
        assert_eq!(
            bypass.codex(SandboxMode::WorkspaceWrite).sandbox,
            "workspace-write"
        );
        assert_eq!(bypass.codex(SandboxMode::ReadOnly).sandbox, "read-only");
        let never = Permissions::of(&config(Product::Codex, None))?;
        assert_eq!(
            never.codex(SandboxMode::DangerFullAccess).sandbox,
            "workspace-write"
        );
        assert_eq!(
            never.codex(SandboxMode::DangerFullAccess).approval_policy,
            "never"
        );
        let reviewed = Permissions::of(&config(Product::Codex, Some("approve-for-me")))?;
        assert_eq!(
            reviewed.codex(SandboxMode::WorkspaceWrite).approval_policy,
            "never"
        );
        assert_eq!(
            reviewed
                .codex(SandboxMode::WorkspaceWrite)
                .approvals_reviewer,
            None
        );
        assert_eq!(
            reviewed
                .codex(SandboxMode::DangerFullAccess)
                .approvals_reviewer,
            Some("auto_review")
        );
        let auto = Permissions::of(&config(Product::ClaudeCode, Some("auto")))?;
        assert_eq!(auto.claude(SandboxMode::WorkspaceWrite), "dontAsk");
        assert_eq!(auto.claude(SandboxMode::DangerFullAccess), "auto");
        let claude = Permissions::of(&config(Product::ClaudeCode, Some("bypassPermissions")))?;
        assert_eq!(
            claude.claude(SandboxMode::DangerFullAccess),
            "bypassPermissions"
        );
        assert_eq!(claude.claude(SandboxMode::WorkspaceWrite), "acceptEdits");
        assert_eq!(claude.claude(SandboxMode::ReadOnly), "plan");
        Ok(())
    }

    #[test]
    fn a_mode_of_the_other_product_is_refused_by_name() {
        let error = Permissions::of(&config(Product::Codex, Some("dontAsk")))
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("`permissionMode` `dontAsk`") && error.contains("codex"),
            "{error}"
        );
    }
}

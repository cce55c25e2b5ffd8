//! The sandbox's vocabulary: the three modes (the reference's names) and the policy a session's
//! processes and file tools run under, with how fully the backend enforces it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a session's commands and file tools may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing may be changed (a fresh, discarded `/tmp` for commands).
    ReadOnly,
    /// Changes under the working directory, the extra writable roots and the temp dir.
    WorkspaceWrite,
    /// Nothing is confined.
    DangerFullAccess,
}

impl SandboxMode {
    /// The wire name (`workspace-write`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }

    /// The mode named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read-only" => Some(Self::ReadOnly),
            "workspace-write" => Some(Self::WorkspaceWrite),
            "danger-full-access" => Some(Self::DangerFullAccess),
            _ => None,
        }
    }

    /// How much a mode allows: read-only < workspace-write < danger-full-access.
    pub fn rank(self) -> u8 {
        match self {
            Self::ReadOnly => 0,
            Self::WorkspaceWrite => 1,
            Self::DangerFullAccess => 2,
        }
    }
}

/// A permission preset: a sandbox mode and an approval policy chosen together (the
/// reference's table). A session's preset is logged as `permission/preset`, with the
/// `sandbox/mode` and `approval/policy` it sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionPreset {
    /// Look, change nothing; wider calls are asked.
    ReadOnly,
    /// Work in the workspace; wider calls are asked (the default).
    WorkspaceWrite,
    /// Everything, and nothing is asked.
    DangerFullAccess,
    /// Work in the workspace, and every shell command is put to a person first (ours: the
    /// reference has no such preset).
    AskEveryCommand,
}

impl PermissionPreset {
    pub const ALL: [Self; 4] = [
        Self::ReadOnly,
        Self::WorkspaceWrite,
        Self::DangerFullAccess,
        Self::AskEveryCommand,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::AskEveryCommand => "ask-every-command",
            other => other.sandbox_mode().as_str(),
        }
    }

    /// Whether every shell command is put to a person, whatever the rules allow.
    pub fn asks_every_command(self) -> bool {
        self == Self::AskEveryCommand
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|preset| preset.as_str() == name)
    }

    pub fn sandbox_mode(self) -> SandboxMode {
        match self {
            Self::ReadOnly => SandboxMode::ReadOnly,
            Self::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            Self::DangerFullAccess => SandboxMode::DangerFullAccess,
            Self::AskEveryCommand => SandboxMode::WorkspaceWrite,
        }
    }

    pub fn approval_policy(self) -> crate::ApprovalPolicy {
        match self {
            Self::DangerFullAccess => crate::ApprovalPolicy::Never,
            _ => crate::ApprovalPolicy::Ask,
        }
    }

    /// The events that set this preset in a session, in the reference's order.
    pub fn events(
        self,
    ) -> (
        crate::PermissionPresetEvent,
        crate::SandboxModeEvent,
        crate::ApprovalPolicyEvent,
    ) {
        (
            crate::PermissionPresetEvent {
                preset: self.as_str().to_owned(),
            },
            crate::SandboxModeEvent {
                mode: self.sandbox_mode().as_str().to_owned(),
            },
            crate::ApprovalPolicyEvent {
                policy: self.approval_policy(),
                source: None,
            },
        )
    }
}

/// How fully the confinement is enforced for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// Files, network and processes are confined as the mode says.
    Full,
    /// Some of it is (the backend names what is not).
    Partial,
    /// Nothing is confined (the mode asks for nothing, or no backend works and commands are
    /// refused).
    None,
}

/// The policy of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Absolute directories writable in `workspace-write`: the working directory first, then
    /// the configured roots and the temp dir.
    pub writable_roots: Vec<String>,
    /// Paths kept read-only under the writable roots (the dsh home); a writable root inside
    /// one stays writable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// Paths neither commands nor the file tools may read (the dsh home); a writable root
    /// inside one stays readable and writable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Paths inside the hidden ones that stay readable (the spilled results and the skills of
    /// the dsh home), never writable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exposed: Vec<String>,
    /// When set, reads are fenced too: commands and the file tools read only these, the
    /// writable roots and (for commands) the system's program directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readable_roots: Option<Vec<String>>,
    /// Whether commands may use the network.
    pub network: bool,
    /// Whether confined commands may open Unix sockets (off by default).
    #[serde(default)]
    pub unix_sockets: bool,
    pub enforcement: Enforcement,
    /// The backend that confines commands (`bwrap`), or why none can.
    pub backend: String,
}

impl SandboxPolicy {
    /// `mode` over `writable_roots` with nothing enforcing it: no lists, no network (unless
    /// `danger-full-access`), no Unix sockets, backend `none`. What applies where no sandbox
    /// runs; a sandbox fills in the rest.
    pub fn unenforced(mode: SandboxMode, writable_roots: Vec<String>) -> Self {
        Self {
            mode,
            writable_roots,
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
}

/// Name fragments that mark an environment variable as a secret (matched case-insensitively).
const SECRET_MARKS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether environment variable `name` looks like it holds a secret: such variables are kept
/// from the processes the harness starts unless a configuration passes them on by name.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKS.iter().any(|mark| upper.contains(mark))
}

/// Whether the person trusts a project: its MCP servers (`.mcp.json`), hooks
/// (`.claude/settings*.json`, `.codex/hooks.json`), settings (`.dsh/settings.yaml`) and skills
/// take effect only in a project the person trusted; until then they wait, and are listed so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrust {
    /// The project: the nearest folder above the working directory that holds `.git`, else
    /// the working directory itself.
    pub root: String,
    pub trusted: bool,
    /// What trusts it: `settings` (a root listed in `settings.yaml`), `home` (remembered in
    /// the dsh home), `run` (`--trust-project` for this run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The project's configuration files present in the working directory: what waits for
    /// trust while it is not given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<String>,
}

//! Plugin `permissions`: rules between "ask every time" and "full access". Before every tool
//! call (`tools/pre-execute`) the call is judged against `allow`, `deny` and `ask` rules (see
//! `rules` for their form): the row's own, which `$DSH_HOME/settings.yaml` tunes under the
//! `permissions` namespace (hot-reloaded with it), and the project's
//! `<workspace>/.dsh/settings.yaml`, read again when it changes, once the person trusts the
//! project (the `trust` service). Deny wins over ask, ask over allow, whichever file a rule
//! comes from, and a project's `allow` rules count for nothing: a project narrows the user's
//! rules and never widens them (a model that writes the file cannot let itself run unasked). A compound shell command runs unasked only when each of its parts is allowed. With
//! `default: ask`, a call no allow rule covers is put to a person. Rules that do not read are
//! refused loudly and fail closed: every call is denied, naming the file, line and rule, until
//! they are fixed. A session whose preset is `ask-every-command` has every shell command put to
//! a person unless a rule denies it.

mod policy;
mod project;
mod rules;
mod shell;

use std::path::Path;
use std::sync::Arc;

use dsh_plugin_api::LogLevel;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{PermissionPreset, PermissionPresetEvent, PreDecision};
use dsh_sessions_seam::{LatestOf, open_live};
use dsh_tools_seam::{TOOLS_PRE_EXECUTE, TOOLS_SERVICE};
use dsh_trust_seam::is_trusted;

use crate::policy::{Rules, Verdict, judge};
use crate::project::{Lists, PROJECT_FILE, ProjectRules, RulesError};

/// Config of `permissions` (and its namespace in `$DSH_HOME/settings.yaml`).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct PermissionsConfig {
    /// Calls that run without asking (under `default: ask`).
    pub allow: Vec<String>,
    /// Calls that are refused.
    pub deny: Vec<String>,
    /// Calls that are put to a person.
    pub ask: Vec<String>,
    /// `allow` (default: a call no rule names goes on) or `ask` (it is put to a person).
    pub default: Option<String>,
}

pub struct PermissionsPlugin;

impl Plugin for PermissionsPlugin {
    const NAME: &'static str = "permissions";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_trust_seam::TRUST_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
    ];
    type Config = PermissionsConfig;

    async fn apply(ctx: Context, config: PermissionsConfig) -> Result<(), PluginError> {
        let default_ask = match config.default.as_deref() {
            None | Some("allow") => false,
            Some("ask") => true,
            Some(other) => {
                return Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: format!("invalid config: default `{other}` (expected allow or ask)")
                        .into(),
                    path: abi_stable::std_types::RSome("$.default".into()),
                });
            }
        };
        let lists = Lists {
            allow: config.allow,
            deny: config.deny,
            ask: config.ask,
        };
        let row = ctx.row_id().to_owned();
        let user = lists.parse(|rule| {
            locate_in_settings(rule).unwrap_or_else(|| format!("the `{row}` row's config"))
        });
        if let Err(error) = &user {
            ctx.log(
                LogLevel::Error,
                &format!("every tool call is refused until this is fixed: {error}"),
            );
        }
        let user: Arc<Result<Rules, RulesError>> = Arc::new(user);
        let projects = Arc::new(ProjectRules::default());
        let presets: Arc<LatestOf<PermissionPresetEvent>> = Arc::default();
        let host = ctx.clone();
        ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |next| {
            let (user, projects, host) = (user.clone(), projects.clone(), host.clone());
            let presets = presets.clone();
            async move {
                let call = next.payload();
                // Only a trusted project's file counts; it is read (and parsed, when it
                // changed) on the blocking pool: a large one must not hold a runtime thread.
                let cwd = std::path::PathBuf::from(call.cwd.as_str());
                let trusted = is_trusted(&host, call.cwd.as_str());
                let project = match trusted {
                    true => host.blocking(move || projects.of(&cwd)).await,
                    false => Ok(None),
                };
                let verdict = match project {
                    Ok(project) => decide(
                        &user,
                        project,
                        call.name.as_str(),
                        call.arguments.as_str(),
                        call.cwd.as_str(),
                        default_ask,
                    ),
                    Err(error) => Verdict::Deny(format!(
                        "the project's permission rules could not be read: {error}"
                    )),
                };
                let verdict = match verdict {
                    Verdict::Pass
                        if call.name.as_str() == "bash"
                            && asks_every_command(&host, &presets, call.session.as_str()) =>
                    {
                        Verdict::Ask("this session asks before every command".to_owned())
                    }
                    other => other,
                };
                match verdict {
                    Verdict::Pass => next.run().await,
                    Verdict::Deny(reason) => Ok(Json::encode(&PreDecision::Deny { reason })),
                    Verdict::Ask(reason) => Ok(Json::encode(&PreDecision::Ask {
                        reason: Some(reason),
                    })),
                }
            }
        })
    }
}

/// Whether `session`'s preset puts every shell command to a person.
fn asks_every_command(
    ctx: &Context,
    presets: &LatestOf<PermissionPresetEvent>,
    session: &str,
) -> bool {
    let Ok(live) = open_live(ctx, session) else {
        return false;
    };
    presets
        .of(&live)
        .and_then(|event| PermissionPreset::parse(&event.preset))
        .is_some_and(PermissionPreset::asks_every_command)
}

/// `<$DSH_HOME/settings.yaml>:<line>` when the user's settings hold `rule` (the namespace the
/// loader lays over this row), so a broken rule is named where the user wrote it.
fn locate_in_settings(rule: &str) -> Option<String> {
    let home = std::env::var_os("DSH_HOME").filter(|home| !home.is_empty())?;
    let path = Path::new(&home).join("settings.yaml");
    let text = std::fs::read_to_string(&path).ok()?;
    let line = text.lines().position(|line| line.contains(rule))?;
    Some(format!("{}:{}", path.display(), line + 1))
}

fn decide(
    user: &Result<Rules, RulesError>,
    project: Option<Arc<Result<Rules, RulesError>>>,
    tool: &str,
    arguments: &str,
    cwd: &str,
    default_ask: bool,
) -> Verdict {
    let user = match user {
        Ok(rules) => rules,
        Err(error) => return Verdict::Deny(format!("the permission rules do not read: {error}")),
    };
    let cwd = Path::new(cwd);
    let project = match project.as_deref() {
        Some(Err(error)) => {
            return Verdict::Deny(format!(
                "the project's permission rules do not read: {error}"
            ));
        }
        Some(Ok(rules)) => Some(rules),
        None => None,
    };
    let arguments = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    let mut sources: Vec<(&str, &Rules)> = vec![("user settings", user)];
    let narrowing;
    if let Some(rules) = project {
        narrowing = rules.narrowing();
        sources.push((PROJECT_FILE, &narrowing));
    }
    judge(&sources, tool, &arguments, cwd, default_ask)
}

dsh_plugin_api::export_plugins!(PermissionsPlugin);

//! Test plugin `session-probe`: drives the `sessions` service through the real boundary and
//! prints what it sees, so the integration tests can check the stored files.
//!
//! Actions: `write` (a complete turn, then a flush), `crash` (a turn cut off while a tool call
//! runs, flushed, then the test kills the host), `reopen` (opens a stored session: the crash
//! repair runs) and `hold` (opens a stored session and keeps it, holding its lock).

use std::io::Write;

use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ROption, RVec};
use dsh_sessions_seam::{CreateSession, NewEventRecord, SessionBox, SessionsService};

/// Row config of `session-probe`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub action: String,
    pub id: String,
    #[serde(default)]
    pub cwd: Option<String>,
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// An event of `kind` whose data is the JSON text `data`, as the store will see it: the probe
/// drives the log's own checks, so it writes the text itself.
fn event(kind: &str, data: &str) -> NewEventRecord {
    NewEventRecord {
        kind: kind.into(),
        data: data.into(),
        surface_op: ROption::RNone,
        source_event_seqs: ROption::RNone,
        time: ROption::RNone,
    }
}

fn surface(kind: &str, data: &str) -> NewEventRecord {
    event(kind, data).with_surface(dsh_protocol::SurfaceOp::append())
}

fn fail(error: impl std::fmt::Display) -> PluginError {
    PluginError::plugin(error.to_string())
}

fn append(session: &SessionBox, batch: Vec<NewEventRecord>) -> Result<(), PluginError> {
    session
        .append(RVec::from(batch))
        .into_result()
        .map(|_| ())
        .map_err(fail)
}

const USER: &str = r#"{"role":"user","id":"u1","source":{"kind":"user"},"content":[{"type":"text","text":"hello"}]}"#;

fn opening_turn(session: &SessionBox) -> Result<(), PluginError> {
    append(session, vec![event("turn/start", r#"{"turn":1}"#)])?;
    append(session, vec![surface("user/message", USER)])?;
    append(session, vec![event("step/start", r#"{"turn":1,"step":1}"#)])
}

pub struct SessionProbe;

impl Plugin for SessionProbe {
    const NAME: &'static str = "session-probe";
    const INJECT: &'static [&'static str] = &["sessions"];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let sessions = ctx.inject::<SessionsService>("sessions")?;
        match config.action.as_str() {
            "write" | "crash" => {
                let request = CreateSession {
                    id: ROption::RSome(config.id.as_str().into()),
                    cwd: config.cwd.as_deref().map(RString::from).into(),
                    ..CreateSession::default()
                };
                let session = sessions.create(request).await.into_result().map_err(fail)?;
                opening_turn(&session)?;
                if config.action == "write" {
                    let answer = r#"{"turn":1,"step":1,"message":{"role":"assistant","id":"a1","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"hi there"}]}}"#;
                    append(&session, vec![surface("assistant/message", answer)])?;
                    append(
                        &session,
                        vec![
                            event("step/end", r#"{"turn":1,"step":1}"#),
                            event("turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
                        ],
                    )?;
                } else {
                    let call = r#"{"turn":1,"step":1,"message":{"role":"assistant","id":"a1","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}]}}"#;
                    append(&session, vec![surface("assistant/message", call)])?;
                    append(
                        &session,
                        vec![event(
                            "tool/call",
                            r#"{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}"#,
                        )],
                    )?;
                }
                session.flush().await.into_result().map_err(fail)?;
                say(&format!(
                    "{} {}: {} events flushed",
                    config.action,
                    config.id,
                    session.event_count()
                ));
            }
            "reopen" | "hold" => match sessions.open(config.id.as_str().into()).await.into_result()
            {
                Ok(session) => {
                    session.flush().await.into_result().map_err(fail)?;
                    let derived = session.derive_messages();
                    let kinds: Vec<String> = session
                        .events(0, session.event_count())
                        .iter()
                        .map(|record| record.kind.to_string())
                        .collect();
                    say(&format!(
                        "{} {}: {} events, {} messages, {}",
                        config.action,
                        config.id,
                        kinds.len(),
                        derived.message_count(),
                        kinds.join(" ")
                    ));
                }
                Err(error) => say(&format!("{} {} refused: {error}", config.action, config.id)),
            },
            "fork" => {
                let request = CreateSession {
                    id: ROption::RSome(config.id.as_str().into()),
                    cwd: config.cwd.as_deref().map(RString::from).into(),
                    ..CreateSession::default()
                };
                let session = sessions.create(request).await.into_result().map_err(fail)?;
                opening_turn(&session)?;
                // Inside the open turn: refused.
                match sessions
                    .fork(
                        config.id.as_str().into(),
                        2,
                        ROption::RSome("child-early".into()),
                    )
                    .await
                    .into_result()
                {
                    Ok(_) => say("fork inside an open turn accepted"),
                    Err(error) => say(&format!("fork inside an open turn refused: {error}")),
                }
                append(
                    &session,
                    vec![
                        event("step/end", r#"{"turn":1,"step":1}"#),
                        event("turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
                    ],
                )?;
                let child = sessions
                    .fork(
                        config.id.as_str().into(),
                        session.event_count(),
                        ROption::RSome("child".into()),
                    )
                    .await
                    .into_result()
                    .map_err(fail)?;
                child.flush().await.into_result().map_err(fail)?;
                let kinds: Vec<String> = child
                    .events(0, child.event_count())
                    .iter()
                    .map(|record| record.kind.to_string())
                    .collect();
                say(&format!("forked child: {}", kinds.join(" ")));
            }
            "plugin-types" => {
                sessions
                    .register_type("probe/metric".into(), false)
                    .into_result()
                    .map_err(fail)?;
                sessions
                    .register_type("probe/vital".into(), true)
                    .into_result()
                    .map_err(fail)?;
                let request = CreateSession {
                    id: ROption::RSome(config.id.as_str().into()),
                    cwd: config.cwd.as_deref().map(RString::from).into(),
                    ..CreateSession::default()
                };
                let session = sessions.create(request).await.into_result().map_err(fail)?;
                append(
                    &session,
                    vec![
                        event("probe/metric", r#"{"value":1}"#),
                        event("probe/vital", r#"{"value":2}"#),
                    ],
                )?;
                match session
                    .append(RVec::from(vec![event("probe/unregistered", "{}")]))
                    .into_result()
                {
                    Ok(_) => say("unregistered type accepted"),
                    Err(error) => say(&format!("unregistered type refused: {error}")),
                }
                sessions
                    .close(config.id.as_str().into())
                    .await
                    .into_result()
                    .map_err(fail)?;
                say(&format!(
                    "plugin-types {}: closed, live sessions: {}",
                    config.id,
                    sessions.live().len()
                ));
            }
            other => return Err(PluginError::plugin(format!("unknown action `{other}`"))),
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(SessionProbe);

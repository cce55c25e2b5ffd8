//! Plugin `time-context`: tells the model what time it is, as the reference's opt-in
//! time-context plugin does. At each step (or, with `refreshIntervalMs`, once that long has
//! passed since the session's last reading) a context row is added through
//! `system-prompt/contexts`, logged as a plugin snapshot (`plugin: time-context`, one
//! `time-context` section) right after the step's input:
//!
//! ```text
//! Time sampled while preparing turn 2, step 1: 2026-12-02T11:40:05+01:00[Europe/Berlin]
//! Browser time zone for this request: unavailable. Ask the user to clarify otherwise-unqualified dates and times.
//! Elapsed since the preceding model-visible message: 3m 12s.
//! ```
//!
//! The time is shown in `timeZone` (an IANA name, read from the system's zone files) or the
//! process's zone. Our clients send no browser zone with a prompt, so that line always says
//! it is unavailable, as the reference says it then. The first step measures from the
//! session's latest user, assistant or tool-result message; later steps from the turn's
//! previous reading. What it remembers is held per session in memory (a resumed session
//! starts without a previous reading: its first elapsed line says `unavailable`).

mod zone;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, lock};
use dsh_protocol::{
    MessageSource, PluginSource, PromptContext, PromptRequest, SnapshotSection, StepStartEvent,
    kinds,
};
use dsh_sessions_seam::{EventRecord, SESSION_DISPOSED, SESSION_EVENT};
use dsh_system_prompt_seam::SYSTEM_PROMPT_CONTEXTS;

use crate::zone::Zone;

/// Config of `time-context`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct TimeConfig {
    /// The zone times are shown in (`Europe/Berlin`); default: the process's (`TZ`, else
    /// `/etc/localtime`, else UTC).
    pub time_zone: Option<String>,
    /// At least this many milliseconds between two readings of a session (0: every step).
    pub refresh_interval_ms: u64,
    /// Where the zone files are (default `/usr/share/zoneinfo`).
    pub zoneinfo: Option<String>,
}

/// What one session's readings depend on.
#[derive(Default)]
struct Session {
    /// The open step `(turn, step)`, from its `step/start`.
    step: (u64, u64),
    /// When the latest user, assistant or tool-result message was logged (ms).
    last_message: Option<i64>,
    /// `last_message` as the open turn's first step started, before its input was logged.
    before_turn: Option<i64>,
    /// The latest reading: its time and its turn.
    last_reading: Option<(i64, u64)>,
}

struct Clock {
    zone: Zone,
    refresh: i64,
    sessions: Mutex<HashMap<String, Session>>,
}

/// `1d 2h 3m 4s`, whole seconds, leading zero units left out.
fn duration(millis: i64) -> String {
    let mut seconds = millis.max(0) / 1000;
    let mut parts = Vec::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if seconds >= size {
            parts.push(format!("{}{unit}", seconds / size));
            seconds %= size;
        }
    }
    parts.push(format!("{seconds}s"));
    parts.join(" ")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

impl Clock {
    fn on_event(&self, record: &EventRecord) {
        let mut sessions = lock(&self.sessions);
        let session = sessions.entry(record.session.to_string()).or_default();
        let kind = record.kind.as_str();
        if kind == kinds::STEP_START {
            if let Some(Ok(start)) = record.decode::<StepStartEvent>() {
                session.step = (start.turn, start.step);
                if start.step == 1 {
                    session.before_turn = session.last_message;
                }
            }
        } else if kind == kinds::USER_MESSAGE && record.json.contains("\"plugin\":\"time-context\"")
        {
            session.last_reading = Some((record.time, session.step.0));
        } else if [
            kinds::USER_MESSAGE,
            kinds::ASSISTANT_MESSAGE,
            kinds::TOOL_RESULT,
        ]
        .contains(&kind)
        {
            session.last_message = Some(record.time);
        }
    }

    /// The reading due for `request`'s session now, if one is.
    fn reading(&self, request: &PromptRequest) -> Option<PromptContext> {
        let now = now_ms();
        let (turn, step, previous) = {
            let sessions = lock(&self.sessions);
            let session = sessions.get(&request.session)?;
            let (turn, step) = session.step;
            if turn == 0 {
                return None;
            }
            if let Some((at, _)) = session.last_reading
                && self.refresh > 0
                && now >= at
                && now - at < self.refresh
            {
                return None;
            }
            let previous = match step {
                1 => session.before_turn,
                _ => session
                    .last_reading
                    .filter(|(_, in_turn)| *in_turn == turn)
                    .map(|(at, _)| at),
            };
            (turn, step, previous)
        };
        let elapsed = previous.map_or_else(|| "unavailable".to_owned(), |at| duration(now - at));
        let since = match step {
            1 => "model-visible message",
            _ => "step context",
        };
        let text = format!(
            "Time sampled while preparing turn {turn}, step {step}: {}\nBrowser time zone for \
             this request: unavailable. Ask the user to clarify otherwise-unqualified dates and \
             times.\nElapsed since the preceding {since}: {elapsed}.",
            self.zone.format(now)
        );
        let sections = vec![SnapshotSection {
            name: "time-context".to_owned(),
            text: text.clone(),
        }];
        Some(PromptContext {
            key: "time-context".to_owned(),
            text,
            sections: Some(sections.clone()),
            source: Some(MessageSource::Plugin(PluginSource {
                plugin: Some("time-context".to_owned()),
                form: Some("snapshot".to_owned()),
                sections: Some(sections),
                ..PluginSource::default()
            })),
        })
    }
}

pub struct TimeContextPlugin;

impl Plugin for TimeContextPlugin {
    const NAME: &'static str = "time-context";
    type Config = TimeConfig;

    async fn apply(ctx: Context, config: TimeConfig) -> Result<(), PluginError> {
        let root = config
            .zoneinfo
            .clone()
            .unwrap_or_else(|| "/usr/share/zoneinfo".to_owned());
        let zone = match &config.time_zone {
            Some(name) => Zone::named(Path::new(&root), name).map_err(|problem| {
                PluginError::new(
                    ErrorKind::Config,
                    format!("invalid config: timeZone: {problem}"),
                )
            })?,
            None => Zone::local(Path::new(&root)),
        };
        let clock = Arc::new(Clock {
            zone,
            refresh: i64::try_from(config.refresh_interval_ms).unwrap_or(i64::MAX),
            sessions: Mutex::new(HashMap::new()),
        });
        let events = clock.clone();
        ctx.on_emit(&SESSION_EVENT, move |record: &EventRecord| {
            events.on_event(record)
        })?;
        let forget = clock.clone();
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            lock(&forget.sessions).remove(id.as_str());
        })?;
        ctx.on_waterfall(&SYSTEM_PROMPT_CONTEXTS, move |next| {
            let clock = clock.clone();
            let request = next.payload().decode();
            async move {
                let downstream = next.run().await?;
                let Some(reading) = request.ok().and_then(|request| clock.reading(&request)) else {
                    return Ok(downstream);
                };
                let mut contexts: Vec<PromptContext> = downstream
                    .decode()
                    .map_err(|error| PluginError::plugin(error.to_string()))?;
                contexts.push(reading);
                Ok(Json::encode(&contexts))
            }
        })
    }
}

dsh_plugin_api::export_plugins!(TimeContextPlugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_reference_writes_them() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(59_999), "59s");
        assert_eq!(duration(3_600_000 + 5_000), "1h 5s");
        assert_eq!(duration(90_061_000), "1d 1h 1m 1s");
        assert_eq!(duration(-5), "0s");
    }
}

//! The status line under the composer: running (with a spinner) or idle, the model, the
//! permission preset, the context meter (tokens of the model's window in use, from
//! `session.context` and the `context` projection), the tokens the session spent, the
//! connection, and a hint for a moment (press Ctrl-C again to quit...). It is cut to the
//! screen's width from the right, so a 60-column terminal keeps the most useful parts.

use std::time::Instant;

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::theme;

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

#[derive(Debug, Default)]
pub(crate) struct Status {
    pub(crate) model: Option<String>,
    pub(crate) preset: Option<String>,
    /// Tokens in the context, and the model's window when known.
    pub(crate) context: Option<(u64, Option<u64>)>,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) running: bool,
    pub(crate) connection: String,
    pub(crate) session: Option<String>,
    pub(crate) hint: Option<(String, Instant)>,
    /// The session's goal (the `goal` projection), shown while it has one.
    pub(crate) goal: Option<dsh_protocol::GoalView>,
    /// Background jobs of the session, oldest first (`/jobs` lists them).
    pub(crate) jobs: Vec<dsh_protocol::JobSummary>,
    pub(crate) queued: usize,
    /// The composer edits a queued message (Alt-Up); set from the app's state at each frame.
    pub(crate) editing_queued: bool,
    /// The session is not followed yet (connecting, opening it).
    pub(crate) opening: bool,
    /// The host confirmed the subscription: the session's frames arrive.
    pub(crate) following: bool,
}

/// `12.3k`, `1.2M`.
pub(crate) fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

impl Status {
    /// Reads a meter (`session.context`'s result or the `context` projection).
    pub(crate) fn set_context(&mut self, meter: &Value) {
        if let Some(tokens) = meter.get("tokens").and_then(Value::as_u64) {
            self.context = Some((tokens, meter.get("window").and_then(Value::as_u64)));
        }
    }

    /// Reads a `controls` projection (`{model}` or `{preset}`).
    pub(crate) fn set_controls(&mut self, controls: &Value) {
        if let Some(model) = controls.get("model").and_then(Value::as_str) {
            self.model = Some(model.to_owned());
        }
        if let Some(preset) = controls.get("preset").and_then(Value::as_str) {
            self.preset = Some(preset.to_owned());
        }
    }

    pub(crate) fn hint(&mut self, text: impl Into<String>) {
        self.hint = Some((text.into(), Instant::now()));
    }

    pub(crate) fn line(&self, now: Instant, started: Instant) -> Line<'static> {
        let mut spans = Vec::new();
        if let Some((hint, _)) = &self.hint {
            spans.push(Span::styled(format!("{hint} · "), theme::warn()));
        }
        if self.editing_queued {
            spans.push(Span::styled(
                "editing a queued message (Enter saves, empty removes, Esc keeps it) · ",
                theme::accent(),
            ));
        }
        if self.running {
            let frame = (now.duration_since(started).as_millis() / 100) as usize % SPINNER.len();
            spans.push(Span::styled(
                format!("{} working (Esc cancels)", SPINNER[frame]),
                theme::accent(),
            ));
        } else if self.opening {
            spans.push(Span::styled("opening the session", theme::dim()));
        } else {
            spans.push(Span::styled("idle", theme::dim()));
        }
        // Most useful first: a narrow screen cuts from the right.
        let mut parts = Vec::new();
        if self.queued > 0 {
            parts.push(format!("{} queued", self.queued));
        }
        if let Some(goal) = &self.goal {
            parts.push(goal_part(goal));
        }
        if let Some((used, window)) = self.context {
            parts.push(match window {
                Some(window) if window > 0 => format!(
                    "ctx {}% {}/{}",
                    used * 100 / window,
                    tokens(used),
                    tokens(window)
                ),
                _ => format!("ctx {}", tokens(used)),
            });
        }
        if let Some(model) = &self.model {
            // `provider/model`: the model says enough on a status line.
            parts.push(
                model
                    .split_once('/')
                    .map_or(model.as_str(), |(_, m)| m)
                    .to_owned(),
            );
        }
        if let Some(preset) = &self.preset {
            parts.push(preset.clone());
        }
        if self.input_tokens + self.output_tokens > 0 {
            parts.push(format!(
                "↑{} ↓{}",
                tokens(self.input_tokens),
                tokens(self.output_tokens)
            ));
        }
        if !self.jobs.is_empty() {
            parts.push(format!("{} jobs", self.jobs.len()));
        }
        parts.push(self.connection.clone());
        for part in parts {
            spans.push(Span::styled(format!(" · {part}"), theme::dim()));
        }
        Line::from(spans)
    }
}

/// `goal active 2/256: the objective` (cut to a few words: `/goal` prints it whole).
fn goal_part(view: &dsh_protocol::GoalView) -> String {
    const SHOWN: usize = 32;
    let goal = &view.goal;
    let objective = goal.objective.lines().next().unwrap_or_default();
    let cut: String = objective.chars().take(SHOWN).collect();
    let more = if objective.chars().count() > SHOWN {
        "…"
    } else {
        ""
    };
    format!(
        "goal {} {}/{}: {cut}{more}",
        goal.phase.as_str(),
        view.rounds_started,
        goal.max_goal_rounds
    )
}

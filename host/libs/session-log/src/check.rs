//! `session check`: every rule a log must satisfy, reported as problems instead of stopping at the
//! first. An open turn at the end is not corruption: it is what a cold load repairs, and the report
//! says which closers that would append.

use dsh_protocol::kinds;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::Violation;
use crate::log::SessionLog;
use crate::probe::{Member, Obj};
use crate::repair::closers_for;
use crate::types::TypeRegistry;
use dsh_protocol::{MessageSource, SessionEvent, ToolResultEvent};

/// Which rule a problem breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    SeqContiguity,
    Envelope,
    UnknownType,
    Lossless,
    Surface,
    MessageShape,
    TurnBracketing,
    StepBracketing,
    /// A turn- or step-scoped event outside its turn/step, or naming another one.
    Placement,
    OpenTurnAtEnd,
}

impl Rule {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SeqContiguity => "seq-contiguity",
            Self::Envelope => "envelope",
            Self::UnknownType => "unknown-type",
            Self::Lossless => "lossless",
            Self::Surface => "surface",
            Self::MessageShape => "message-shape",
            Self::TurnBracketing => "turn-bracketing",
            Self::StepBracketing => "step-bracketing",
            Self::Placement => "placement",
            Self::OpenTurnAtEnd => "open-turn-at-end",
        }
    }

    fn of(violation: &Violation) -> Self {
        match violation {
            Violation::SeqMismatch { .. } => Self::SeqContiguity,
            Violation::IgnorableFalse | Violation::TimeOutOfRange { .. } => Self::Envelope,
            Violation::UnknownType { .. } => Self::UnknownType,
            Violation::Lossless(_) => Self::Lossless,
            Violation::MessageShape { .. } => Self::MessageShape,
            _ => Self::Surface,
        }
    }
}

/// Whether a load refuses the log or repairs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    Corruption,
    /// What a cold load would repair (crash closers); the log itself is fine.
    Repairable,
}

/// One broken rule, located.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Index of the event in the checked list.
    pub position: usize,
    /// The seq the event carries.
    pub seq: u64,
    /// The event type.
    pub kind: String,
    pub rule: Rule,
    pub severity: Severity,
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seq {} ({}) [{}]: {}",
            self.seq,
            self.kind,
            self.rule.as_str(),
            self.detail
        )
    }
}

/// Checks `events` (as stored, packed chunk rows already expanded) against every log rule.
/// An empty result means a load accepts the log unchanged.
pub fn check_log<E: AsRef<SessionEvent>>(events: &[E], registry: &TypeRegistry) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut scratch = SessionLog::new(Arc::new(registry.clone()));
    let mut brackets = Brackets::default();
    let mut contiguous = true;
    for (position, event) in events.iter().map(AsRef::as_ref).enumerate() {
        let mut report = |rule: Rule, detail: String| {
            let severity = Severity::Corruption;
            problems.push(Problem {
                position,
                seq: event.seq,
                kind: event.kind.clone(),
                rule,
                severity,
                detail,
            });
        };
        // Report the first break in contiguity only, then keep checking the rest as if it were
        // renumbered: one gap must not bury every later problem under "seq mismatch".
        let mut shared = Arc::new(event.clone());
        if event.seq != position as u64 {
            if contiguous {
                report(
                    Rule::SeqContiguity,
                    Violation::SeqMismatch {
                        expected: position as u64,
                    }
                    .to_string(),
                );
                contiguous = false;
            }
            Arc::make_mut(&mut shared).seq = position as u64;
        }
        if let Err(v) = scratch.push_checked(shared) {
            report(Rule::of(&v), v.to_string());
        }
        // Readers skip ignorable events of unknown types, so bracketing does too.
        if registry.is_known(&event.kind)
            && let Err((rule, detail)) = brackets.step(event, position)
        {
            report(rule, detail);
        }
    }
    if let Some((turn, start_seq, start_position)) =
        brackets.turn.take().map(|t| (t.number, t.seq, t.position))
    {
        let closers = closers_for(events);
        let names: Vec<String> = closers.iter().map(describe_closer).collect();
        problems.push(Problem {
            position: start_position,
            seq: start_seq,
            kind: kinds::TURN_START.into(),
            rule: Rule::OpenTurnAtEnd,
            severity: Severity::Repairable,
            detail: format!(
                "log ends inside turn {turn}; a load would append {} closer(s): {}",
                names.len(),
                names.join(", ")
            ),
        });
    }
    problems
}

fn describe_closer(closer: &crate::NewEvent) -> String {
    match closer.kind.as_str() {
        kinds::TOOL_RESULT => {
            let result = ToolResultEvent::deserialize(&closer.data).ok();
            let code = result
                .as_ref()
                .and_then(|result| result.error.as_ref())
                .map_or("?", |error| error.code.as_str());
            let call = match result.as_ref().map(|result| &result.message.source) {
                Some(MessageSource::Tool { call_id, .. }) => call_id.as_str(),
                _ => "?",
            };
            format!("tool/result {code} for call {call}")
        }
        kinds::TURN_END => "turn/end interrupted".to_owned(),
        other => other.to_owned(),
    }
}

/// What the bracketing rule reads of a `turn/end`: `reason.kind`, which must be a string.
#[derive(Debug, Default, Deserialize)]
struct TurnEnd<'a> {
    #[serde(default, borrow)]
    reason: Obj<Reason<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Reason<'a> {
    #[serde(default, borrow)]
    kind: Member<'a>,
}

#[derive(Debug)]
struct Open {
    number: u64,
    seq: u64,
    position: usize,
}

/// Turn/step bracketing state.
#[derive(Debug, Default)]
struct Brackets {
    turn: Option<Open>,
    step: Option<Open>,
    last_turn: Option<u64>,
    /// Last step number of the open turn.
    last_step: Option<u64>,
}

type Broken = (Rule, String);

impl Brackets {
    fn step(&mut self, event: &SessionEvent, position: usize) -> Result<(), Broken> {
        let num = |key: &str, rule: Rule| {
            event
                .data_u64(key)
                .ok_or_else(|| (rule, format!("data.{key} must be a non-negative integer")))
        };
        match event.kind.as_str() {
            kinds::TURN_START => {
                let n = num("turn", Rule::TurnBracketing)?;
                let previous = self.turn.replace(Open {
                    number: n,
                    seq: event.seq,
                    position,
                });
                self.step = None;
                let last = self.last_turn.replace(n);
                self.last_step = None;
                if let Some(open) = previous {
                    return Err(nested("turn", n, &open));
                }
                if let Some(last) = last.filter(|l| *l >= n) {
                    return Err((
                        Rule::TurnBracketing,
                        format!("turn numbers must increase: {n} after {last}"),
                    ));
                }
            }
            kinds::TURN_END => {
                let n = num("turn", Rule::TurnBracketing)?;
                let open_step = self.step.take();
                let Some(open) = self.turn.take() else {
                    return Err((
                        Rule::TurnBracketing,
                        format!("turn/end for turn {n} without an open turn"),
                    ));
                };
                if open.number != n {
                    return Err((
                        Rule::TurnBracketing,
                        format!(
                            "turn/end for turn {n} but turn {} is open (seq {})",
                            open.number, open.seq
                        ),
                    ));
                }
                if let Some(step) = open_step {
                    return Err((
                        Rule::StepBracketing,
                        format!(
                            "turn/end while step {} is open (seq {})",
                            step.number, step.seq
                        ),
                    ));
                }
                let data = Obj::<TurnEnd<'_>>::deserialize(&event.data).ok();
                let kind = data
                    .as_ref()
                    .and_then(Obj::found)
                    .and_then(|data| data.reason.found())
                    .and_then(|reason| reason.kind.as_str());
                if kind.is_none() {
                    return Err((Rule::TurnBracketing, "turn/end needs reason.kind".into()));
                }
            }
            kinds::STEP_START => {
                let (t, s) = (
                    num("turn", Rule::StepBracketing)?,
                    num("step", Rule::StepBracketing)?,
                );
                let Some(turn) = &self.turn else {
                    return Err((
                        Rule::StepBracketing,
                        format!("step/start for step {s} outside a turn"),
                    ));
                };
                if turn.number != t {
                    return Err((
                        Rule::StepBracketing,
                        format!("step/start names turn {t} inside turn {}", turn.number),
                    ));
                }
                let previous = self.step.replace(Open {
                    number: s,
                    seq: event.seq,
                    position,
                });
                if let Some(open) = previous {
                    return Err(nested("step", s, &open));
                }
                if let Some(last) = self.last_step.replace(s).filter(|l| *l >= s) {
                    return Err((
                        Rule::StepBracketing,
                        format!("step numbers must increase within a turn: {s} after {last}"),
                    ));
                }
            }
            kinds::STEP_END => {
                let (t, s) = (
                    num("turn", Rule::StepBracketing)?,
                    num("step", Rule::StepBracketing)?,
                );
                let Some(open) = self.step.take() else {
                    return Err((
                        Rule::StepBracketing,
                        format!("step/end for step {s} without an open step"),
                    ));
                };
                let turn = self.turn.as_ref().map(|o| o.number);
                if open.number != s || turn != Some(t) {
                    return Err((
                        Rule::StepBracketing,
                        format!(
                            "step/end for turn {t} step {s} but step {} is open (seq {})",
                            open.number, open.seq
                        ),
                    ));
                }
            }
            kinds::ASSISTANT_CHUNK | kinds::ASSISTANT_MESSAGE | kinds::TOOL_CALL => {
                self.placed(event, true)?
            }
            // A replace rewrites an earlier result in place and keeps its original turn/step.
            kinds::TOOL_RESULT
                if event
                    .surface_op
                    .as_ref()
                    .and_then(|o| o.replace_span())
                    .is_none() =>
            {
                self.placed(event, false)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// A turn/step-scoped event must sit in its turn (and step, when `needs_step`) and name it.
    fn placed(&self, event: &SessionEvent, needs_step: bool) -> Result<(), Broken> {
        let here = |what: &str| Err((Rule::Placement, format!("{} outside {what}", event.kind)));
        let Some(turn) = &self.turn else {
            return here("a turn");
        };
        if event.data_u64("turn") != Some(turn.number) {
            return Err((
                Rule::Placement,
                format!("data.turn must be the open turn {}", turn.number),
            ));
        }
        match &self.step {
            None if needs_step => here("a step"),
            Some(step) if event.data_u64("step") != Some(step.number) => Err((
                Rule::Placement,
                format!("data.step must be the open step {}", step.number),
            )),
            _ => Ok(()),
        }
    }
}

fn nested(what: &str, n: u64, open: &Open) -> Broken {
    let rule = if what == "turn" {
        Rule::TurnBracketing
    } else {
        Rule::StepBracketing
    };
    (
        rule,
        format!(
            "{what}/start for {what} {n} while {what} {} is open (seq {})",
            open.number, open.seq
        ),
    )
}

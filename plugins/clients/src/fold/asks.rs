//! The fold's notices and asks: model retries and human commands as notices, approvals and
//! questions as items answered in the page (an ask's decision updates its item in place).

use dsh_client_protocol::{ChatItem, NoticeLevel};
use dsh_protocol::kinds;
use dsh_protocol::{
    ApprovalAskedEvent, ApprovalDecidedEvent, CommandDoneEvent, CommandKind, CommandRunEvent,
    FailureCode, LlmRetryEvent, QuestionAnsweredEvent, QuestionAskedEvent,
};
use dsh_sessions_seam::EventRecord;

use super::{Change, Fold};

/// Why a model request is retried, in a person's words.
fn retry_cause(code: &FailureCode, provider: &str) -> String {
    match code {
        FailureCode::Transport => format!(
            "The model at `{provider}` could not be reached: is its endpoint right (Settings) and the network up?"
        ),
        FailureCode::Timeout | FailureCode::StreamClosed => {
            format!("The model at `{provider}` stopped answering mid-way.")
        }
        FailureCode::RateLimit => format!("`{provider}` is limiting how fast requests may come."),
        FailureCode::Server | FailureCode::Http(_) => {
            format!("`{provider}` answered with an error of its own.")
        }
        other => format!("The request to `{provider}` failed ({}).", other.as_str()),
    }
}

impl Fold {
    /// `llm/retry`, `command/run` and `command/done`: a notice each.
    pub(super) fn notice(&mut self, record: &EventRecord, change: &mut Change) {
        let seq = record.seq;
        match record.kind.as_str() {
            kinds::LLM_RETRY => {
                if let Some(Ok(retry)) = record.decode::<LlmRetryEvent>() {
                    // One line per step, updated by each retry: the cause in words, the
                    // attempt, and where to look (the provider's text stays in the log).
                    let attempt = match retry.max_retries {
                        Some(max) => format!("attempt {} of {max}", retry.retry),
                        None => format!("attempt {}", retry.retry),
                    };
                    let text = format!(
                        "{} Retrying in {:.1} s ({attempt}).",
                        retry_cause(&retry.failure.code, &retry.provider),
                        retry.delay_ms as f64 / 1000.0,
                    );
                    let item = ChatItem::Notice {
                        id: format!("retry-t{}-s{}", retry.turn, retry.step),
                        seq,
                        level: NoticeLevel::Warning,
                        text,
                    };
                    self.upsert(item, change);
                }
            }
            kinds::COMMAND_RUN => {
                if let Some(Ok(run)) = record.decode::<CommandRunEvent>() {
                    let text = match &run.args {
                        Some(args) => format!("/{} {args}", run.name),
                        None => format!("/{}", run.name),
                    };
                    let item = ChatItem::Notice {
                        id: run.command_id,
                        seq,
                        level: NoticeLevel::Info,
                        text,
                    };
                    self.upsert(item, change);
                }
            }
            kinds::COMMAND_DONE => {
                if let Some(Ok(done)) = record.decode::<CommandDoneEvent>() {
                    let item = ChatItem::Notice {
                        id: format!("{}-done", done.command_id),
                        seq,
                        level: match done.kind {
                            CommandKind::Success => NoticeLevel::Info,
                            CommandKind::Error => NoticeLevel::Error,
                        },
                        text: done.text.unwrap_or_default(),
                    };
                    self.upsert(item, change);
                }
            }
            _ => {}
        }
    }

    /// `approval/asked`, `approval/decided`, `question/asked` and `question/answered`: an
    /// answerable item, and its decision.
    pub(super) fn ask(&mut self, record: &EventRecord, change: &mut Change) {
        let seq = record.seq;
        match record.kind.as_str() {
            kinds::APPROVAL_ASKED => {
                if let Some(Ok(asked)) = record.decode::<ApprovalAskedEvent>() {
                    let item = ChatItem::Approval {
                        id: asked.id,
                        seq,
                        tool_name: asked.tool_name,
                        call_id: asked.call_id,
                        reason: asked.reason,
                        outcome: None,
                        scope: None,
                        note: None,
                    };
                    self.upsert(item, change);
                }
            }
            kinds::APPROVAL_DECIDED => {
                if let Some(Ok(decided)) = record.decode::<ApprovalDecidedEvent>()
                    && let Some(&at) = self.index.get(&decided.id)
                    && let ChatItem::Approval { .. } = &self.items[at]
                {
                    let mut item = self.items[at].clone();
                    if let ChatItem::Approval {
                        outcome,
                        scope,
                        note,
                        seq: at_seq,
                        ..
                    } = &mut item
                    {
                        *outcome = Some(decided.outcome);
                        *scope = decided.scope;
                        *note = decided.note;
                        *at_seq = seq;
                    }
                    self.upsert(item, change);
                }
            }
            kinds::QUESTION_ASKED => {
                if let Some(Ok(asked)) = record.decode::<QuestionAskedEvent>() {
                    let item = ChatItem::Question {
                        id: asked.id,
                        seq,
                        questions: asked.questions,
                        outcome: None,
                    };
                    self.upsert(item, change);
                }
            }
            kinds::QUESTION_ANSWERED => {
                if let Some(Ok(answered)) = record.decode::<QuestionAnsweredEvent>()
                    && let Some(&at) = self.index.get(&answered.id)
                    && let ChatItem::Question { .. } = &self.items[at]
                {
                    let mut item = self.items[at].clone();
                    if let ChatItem::Question {
                        outcome,
                        seq: at_seq,
                        ..
                    } = &mut item
                    {
                        *outcome = Some(answered.verdict);
                        *at_seq = seq;
                    }
                    self.upsert(item, change);
                }
            }
            _ => {}
        }
    }
}

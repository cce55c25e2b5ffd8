//! Questions answered in the browser. The web plugin is an answerer on `questions/request`:
//! while a page is connected, an ask waits for a person's answers (`question.respond`; the
//! first answer wins, and every tab's card then shows it decided, through the logged
//! `question/answered`); with no page connected, or after a bounded wait, it defers to the rest
//! of the chain, whose default is `unavailable`. The card itself is drawn from the logged
//! `question/asked`, so a reload or a reconnect shows a waiting question again.

use std::sync::Arc;
use std::time::Duration;

use dsh_client_protocol::AnswerReceipt;
use dsh_plugin_api::{Context, Json, Next, PluginError};
use dsh_protocol::{
    QuestionAnswer, QuestionRequest, QuestionResponse, QuestionVerdict, UserQuestion,
};
use dsh_user_questions_seam::QUESTIONS_REQUEST;

use crate::live::Hub;
use crate::waiting::Board;

/// How long an ask waits for a person before it is `unavailable`.
const ANSWER_WAIT: Duration = Duration::from_secs(30 * 60);

/// Answers that do not fit the questions asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswersError {
    #[error("no question `{0}` in this ask")]
    NoQuestion(String),
    #[error("question `{0}` is answered twice")]
    Twice(String),
    #[error("question `{0}` takes one choice")]
    OneChoice(String),
    #[error("`{label}` is not a choice of question `{question}`")]
    NotAChoice { label: String, question: String },
    #[error("the answers are empty: answer at least one question, or dismiss")]
    Empty,
}

/// The asks waiting for answers, by ask id, each with its questions.
#[derive(Default)]
pub(crate) struct Pending {
    waiting: Arc<Board<Vec<UserQuestion>, QuestionVerdict>>,
}

impl Pending {
    /// A person's answers (or their dismissal). Answers that do not fit the questions are the
    /// caller's mistake; an ask no longer waiting is not accepted.
    pub(crate) fn answer(&self, response: QuestionResponse) -> Result<AnswerReceipt, AnswersError> {
        let verdict = if response.cancelled {
            QuestionVerdict::Cancelled
        } else {
            let checked = self.waiting.look(&response.question_id, |questions| {
                check(questions, &response.answers)
            });
            match checked {
                None => return Ok(refused()),
                Some(checked) => checked?,
            }
            QuestionVerdict::Answered {
                answers: response.answers,
            }
        };
        match self.waiting.settle(&response.question_id, verdict) {
            Some((_, taken)) => Ok(AnswerReceipt {
                accepted: taken,
                rule: None,
            }),
            None => Ok(refused()),
        }
    }
}

fn refused() -> AnswerReceipt {
    AnswerReceipt {
        accepted: false,
        rule: None,
    }
}

/// Each answer names a question once, picks only offered labels (one, unless the question
/// allows several), and the whole says something.
fn check(questions: &[UserQuestion], answers: &[QuestionAnswer]) -> Result<(), AnswersError> {
    let mut seen = std::collections::HashSet::new();
    for answer in answers {
        let Some(question) = questions.iter().find(|question| question.id == answer.id) else {
            return Err(AnswersError::NoQuestion(answer.id.clone()));
        };
        if !seen.insert(answer.id.as_str()) {
            return Err(AnswersError::Twice(answer.id.clone()));
        }
        if !question.multi_select && answer.selected.len() > 1 {
            return Err(AnswersError::OneChoice(answer.id.clone()));
        }
        if let Some(label) = answer.selected.iter().find(|label| {
            !question
                .options
                .iter()
                .any(|option| &option.label == *label)
        }) {
            return Err(AnswersError::NotAChoice {
                label: label.clone(),
                question: answer.id.clone(),
            });
        }
    }
    let said = answers.iter().any(|answer| {
        !answer.selected.is_empty() || answer.text.as_deref().is_some_and(|t| !t.trim().is_empty())
    });
    if !said {
        return Err(AnswersError::Empty);
    }
    Ok(())
}

/// Listens on `questions/request` as the browser's answerer.
pub(crate) fn answer_questions(
    ctx: &Context,
    hub: Arc<Hub>,
    pending: Arc<Pending>,
) -> Result<(), PluginError> {
    let sleeper = ctx.clone();
    ctx.on_waterfall(
        &QUESTIONS_REQUEST,
        move |next: Next<Json<QuestionRequest>, Json<QuestionVerdict>>| {
            let (hub, pending, ctx) = (hub.clone(), pending.clone(), sleeper.clone());
            async move {
                let Ok(ask) = next.payload().decode() else {
                    return next.run().await;
                };
                if hub.answerer_count() == 0 || ask.id.is_empty() {
                    return next.run().await;
                }
                let waiting = pending.waiting.clone();
                match waiting
                    .wait(
                        &ctx,
                        ask.id.clone(),
                        ask.questions,
                        ANSWER_WAIT,
                        hub.no_answerers(),
                    )
                    .await
                {
                    Some(verdict) => Ok(Json::encode(&verdict)),
                    None => next.run().await,
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::QuestionOption;

    fn question(id: &str, multi: bool) -> UserQuestion {
        UserQuestion {
            id: id.into(),
            question: "?".into(),
            header: None,
            options: vec![
                QuestionOption {
                    label: "A".into(),
                    description: None,
                },
                QuestionOption {
                    label: "B".into(),
                    description: None,
                },
            ],
            multi_select: multi,
        }
    }

    fn answer(id: &str, picked: &[&str], text: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            id: id.into(),
            selected: picked.iter().map(|label| (*label).to_owned()).collect(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn answers_must_fit_their_questions() {
        let questions = [question("one", false), question("many", true)];
        assert!(check(&questions, &[answer("many", &["A", "B"], None)]).is_ok());
        assert!(check(&questions, &[answer("one", &[], Some("my own"))]).is_ok());
        assert!(check(&questions, &[answer("one", &["A", "B"], None)]).is_err());
        assert!(check(&questions, &[answer("one", &["C"], None)]).is_err());
        assert!(check(&questions, &[answer("nope", &["A"], None)]).is_err());
        assert!(check(&questions, &[answer("one", &[], Some(" "))]).is_err());
    }

    #[test]
    fn the_first_answer_wins_and_a_late_one_is_not_accepted() {
        let pending = Pending::default();
        let mut receiver = pending
            .waiting
            .park("q".into(), vec![question("one", false)]);
        let response = |cancelled| QuestionResponse {
            question_id: "q".into(),
            answers: vec![answer("one", &["A"], None)],
            cancelled,
        };
        assert!(pending.answer(response(false)).unwrap().accepted);
        assert!(!pending.answer(response(true)).unwrap().accepted);
        assert!(matches!(
            receiver.try_recv(),
            Ok(QuestionVerdict::Answered { .. })
        ));
    }
}

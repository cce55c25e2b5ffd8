//! Questions a model puts to a person (`ask_user_question`): the questions as the model writes
//! them, an ask as the answerers see it, a person's answers, and the two plugin events that
//! keep what was asked and answered in the session (`question/asked`, `question/answered`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::{EventData, event_data};

/// One choice offered with a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserQuestion {
    /// The model's name for the question; answers refer to it.
    pub id: String,
    pub question: String,
    /// A short label shown above the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Choices; none means the answer is free text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    /// Whether more than one choice may be picked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
}

/// An ask on the answerer chain (`questions/request`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionRequest {
    /// The ask's id (logged in `question/asked` and `question/answered`).
    pub id: String,
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub questions: Vec<UserQuestion>,
}

/// A person's answer to one question: the labels picked and any text of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionAnswer {
    /// The question's id.
    pub id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How an ask ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum QuestionVerdict {
    /// A person answered.
    Answered { answers: Vec<QuestionAnswer> },
    /// A person declined to answer.
    Cancelled,
    /// No one could be asked (headless, no page open, no answer in time).
    Unavailable,
}

/// `question/asked`: questions were put to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAskedEvent {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub questions: Vec<UserQuestion>,
}
event_data!(QuestionAskedEvent, crate::kinds::QUESTION_ASKED);

/// `question/answered`: how an ask ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionAnsweredEvent {
    pub id: String,
    #[serde(flatten)]
    pub verdict: QuestionVerdict,
}
event_data!(QuestionAnsweredEvent, crate::kinds::QUESTION_ANSWERED);

/// `question.respond`'s payload: a person's answers to one ask, or that they declined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionResponse {
    pub question_id: String,
    #[serde(default)]
    pub answers: Vec<QuestionAnswer>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answered_event_keeps_its_outcome_beside_its_id() {
        let event = QuestionAnsweredEvent {
            id: "q-1".into(),
            verdict: QuestionVerdict::Answered {
                answers: vec![QuestionAnswer {
                    id: "a".into(),
                    selected: vec!["Yes".into()],
                    text: None,
                }],
            },
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"id": "q-1", "outcome": "answered", "answers": [{"id": "a", "selected": ["Yes"]}]})
        );
        assert_eq!(
            serde_json::from_value::<QuestionAnsweredEvent>(json).unwrap(),
            event
        );
    }
}

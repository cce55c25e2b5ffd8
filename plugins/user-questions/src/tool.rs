//! `ask_user_question`: its declaration, the reading of its arguments, and the texts the model
//! gets back (the answers, or why no one answered).

use dsh_protocol::{
    QuestionAnswer, QuestionVerdict, ToolDecl, ToolError, ToolErrorInfo, ToolReply, UserQuestion,
};
use serde_json::json;

pub(crate) const NAME: &str = "ask_user_question";

/// The refusal a delegated child gets: its parent, not a person, owns it. The reference's
/// recorded text, so a recorded run replays.
pub(crate) const DELEGATED: &str = "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result";

/// Where no answerer is there (headless, no page open): the model should not wait for one.
pub(crate) const UNAVAILABLE: &str = "no person can be asked in this session (nobody is there to answer); do not ask again: continue with your best judgement and state the open question in your answer";

/// Where the person declined to answer.
pub(crate) const DECLINED: &str = "the person dismissed the questions without answering; continue with your best judgement or ask differently";

/// Why a call's arguments are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ArgsError {
    #[error("the arguments are not a JSON object with a `questions` array: {0}")]
    Shape(String),
    #[error("`questions` is empty: ask at least one question")]
    Empty,
    #[error("question {0}: `id` and `question` must not be empty")]
    Blank(usize),
    #[error("question id `{0}` appears twice: ids must be unique")]
    Duplicate(String),
    #[error("question `{0}`: every option needs a non-empty `label`")]
    BlankOption(String),
}

#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Args {
    questions: Vec<UserQuestion>,
}

/// The questions of a call, checked.
pub(crate) fn parse(arguments: &str) -> Result<Vec<UserQuestion>, ArgsError> {
    let args: Args =
        serde_json::from_str(arguments).map_err(|error| ArgsError::Shape(error.to_string()))?;
    if args.questions.is_empty() {
        return Err(ArgsError::Empty);
    }
    let mut seen = std::collections::HashSet::new();
    for (index, question) in args.questions.iter().enumerate() {
        if question.id.trim().is_empty() || question.question.trim().is_empty() {
            return Err(ArgsError::Blank(index + 1));
        }
        if !seen.insert(question.id.as_str()) {
            return Err(ArgsError::Duplicate(question.id.clone()));
        }
        if question
            .options
            .iter()
            .any(|option| option.label.trim().is_empty())
        {
            return Err(ArgsError::BlankOption(question.id.clone()));
        }
    }
    Ok(args.questions)
}

pub(crate) fn decl() -> ToolDecl {
    let option = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "description": "The choice as the person sees it; the answer names it."},
            "description": {"type": "string", "description": "What picking this choice means, when the label alone does not say."}
        },
        "required": ["label"]
    });
    let question = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "A short name for the question, unique in this call; the answers refer to it."},
            "question": {"type": "string", "description": "The question, complete enough to answer without other context."},
            "header": {"type": "string", "description": "A few words shown above the question as its topic."},
            "options": {"type": "array", "items": option, "description": "Choices to pick from; the person may also write their own answer. Leave out for a free-text question."},
            "multi_select": {"type": "boolean", "description": "Whether several choices may be picked (default: one)."}
        },
        "required": ["id", "question"]
    });
    let mut decl = ToolDecl::new(
        NAME,
        "Puts one or more questions to the person using this session and waits for their answers. Use it when a decision is theirs to make or a requirement is unclear and guessing would waste work; not for things you can find out yourself. Offer choices where the likely answers are known. When no one can answer (an unattended run, a delegated agent), the call fails at once: then go on and state the question in your answer.",
        json!({
            "type": "object",
            "properties": {
                "questions": {"type": "array", "items": question, "description": "The questions, asked together."}
            },
            "required": ["questions"]
        }),
    );
    // A person may take a while; the answerers bound their own wait.
    decl.timeout_ms = Some(ANSWER_LIMIT_MS);
    decl
}

/// The longest a call waits for its answers (the pipeline's cap).
const ANSWER_LIMIT_MS: u64 = 3_600_000;

/// A failed call, classed so routing code can tell the cases apart.
pub(crate) fn failure(message: &str, code: &str) -> ToolReply {
    let info = ToolErrorInfo::new("UserQuestionError", code);
    ToolReply::Error(ToolError {
        name: Some(info.name),
        code: Some(info.code),
        ..ToolError::new(message)
    })
}

/// What the model gets for a verdict.
pub(crate) fn reply(questions: &[UserQuestion], verdict: &QuestionVerdict) -> ToolReply {
    match verdict {
        QuestionVerdict::Answered { answers } => ToolReply::text(answers_text(questions, answers)),
        QuestionVerdict::Cancelled => failure(DECLINED, "DECLINED"),
        QuestionVerdict::Unavailable => failure(UNAVAILABLE, "UNAVAILABLE"),
    }
}

fn answers_text(questions: &[UserQuestion], answers: &[QuestionAnswer]) -> String {
    let mut text = String::from("The person answered:");
    for question in questions {
        text.push_str(&format!("\n\n[{}] {}\n", question.id, question.question));
        let answer = answers.iter().find(|answer| answer.id == question.id);
        let picked = answer.map(|answer| answer.selected.join(", "));
        let own = answer
            .and_then(|answer| answer.text.as_deref())
            .map(str::trim)
            .filter(|own| !own.is_empty());
        match (picked.filter(|picked| !picked.is_empty()), own) {
            (Some(picked), Some(own)) => text.push_str(&format!("Answer: {picked}\nNote: {own}")),
            (Some(picked), None) => text.push_str(&format!("Answer: {picked}")),
            (None, Some(own)) => text.push_str(&format!("Answer: {own}")),
            (None, None) => text.push_str("(not answered)"),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        assert!(matches!(parse("[]"), Err(ArgsError::Shape(_))));
        assert_eq!(parse(r#"{"questions":[]}"#), Err(ArgsError::Empty));
        assert_eq!(
            parse(r#"{"questions":[{"id":"a","question":" "}]}"#),
            Err(ArgsError::Blank(1))
        );
        assert_eq!(
            parse(r#"{"questions":[{"id":"a","question":"x"},{"id":"a","question":"y"}]}"#),
            Err(ArgsError::Duplicate("a".into()))
        );
        let questions = parse(
            r#"{"questions":[{"id":"a","question":"x","options":[{"label":"Yes"}],"multi_select":true}]}"#,
        )
        .unwrap();
        assert!(questions[0].multi_select);
    }

    #[test]
    fn answers_read_as_text_per_question() {
        let questions = parse(
            r#"{"questions":[{"id":"a","question":"Which?"},{"id":"b","question":"Why?"},{"id":"c","question":"Skip?"}]}"#,
        )
        .unwrap();
        let answers = vec![
            QuestionAnswer {
                id: "a".into(),
                selected: vec!["One".into(), "Two".into()],
                text: Some("both".into()),
            },
            QuestionAnswer {
                id: "b".into(),
                selected: vec![],
                text: Some("because".into()),
            },
        ];
        assert_eq!(
            answers_text(&questions, &answers),
            "The person answered:\n\n[a] Which?\nAnswer: One, Two\nNote: both\n\n[b] Why?\nAnswer: because\n\n[c] Skip?\n(not answered)"
        );
    }

    #[test]
    fn the_declaration_names_the_reference_parameters() {
        let decl = decl();
        assert_eq!(decl.parameters["required"], json!(["questions"]));
        let item = &decl.parameters["properties"]["questions"]["items"];
        assert_eq!(item["required"], json!(["id", "question"]));
        for field in ["header", "options", "multi_select"] {
            assert!(item["properties"][field].is_object(), "{field}");
        }
    }
}

//! Reading requests: known methods with their params, unknown methods, params that do not fit.

use super::*;
use serde_json::json;

#[test]
fn a_method_and_its_params_read_as_the_variant() {
    let request =
        ClientRequest::parse("session.prompt", json!({"sessionId": "s1", "text": "hi"})).unwrap();
    assert_eq!(request.method(), "session.prompt");
    assert_eq!(request.session_id(), Some("s1"));
    let ClientRequest::SessionPrompt(prompt) = &request else {
        panic!("{request:?}");
    };
    assert_eq!(prompt.text, "hi");
    assert_eq!(
        serde_json::to_value(&request).unwrap()["params"]["sessionId"],
        "s1"
    );
}

#[test]
fn a_method_without_params_takes_none_or_null_or_an_empty_object() {
    for params in [serde_json::Value::Null, json!({})] {
        assert_eq!(
            ClientRequest::parse("session.list", params).unwrap(),
            ClientRequest::SessionList(NoParams {})
        );
    }
}

#[test]
fn an_unknown_method_is_told_apart_from_params_that_do_not_fit() {
    assert_eq!(
        ClientRequest::parse("session.explode", json!({})),
        Err(RequestError::UnknownMethod("session.explode".to_owned()))
    );
    let Err(RequestError::BadParams { field, method, .. }) =
        ClientRequest::parse("session.prompt", json!({"sessionId": 7, "text": "x"}))
    else {
        panic!("accepted a number as a session id");
    };
    assert_eq!(
        (method.as_str(), field.as_str()),
        ("session.prompt", "sessionId")
    );
    let Err(RequestError::BadParams { message, .. }) =
        ClientRequest::parse("session.rename", json!({"sessionId": "s"}))
    else {
        panic!("accepted a rename without a title");
    };
    assert!(message.contains("title"), "{message}");
}

#[test]
fn every_method_is_listed_once() {
    let mut names = METHODS.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), METHODS.len());
}

#[test]
fn params_text_is_what_parse_reads_back() {
    let request = ClientRequest::CommandsRun(RunCommand {
        session_id: "s".to_owned(),
        line: "/help".to_owned(),
    });
    let text = request.params_text().unwrap();
    let params: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(params, json!({"sessionId": "s", "line": "/help"}));
    assert_eq!(
        ClientRequest::parse(request.method(), params),
        Ok(request.clone())
    );
    assert_eq!(
        ClientRequest::CommandsList(NoParams {})
            .params_text()
            .unwrap(),
        "{}"
    );
}

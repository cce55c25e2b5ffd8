//! `todo_write` validation, text and event data.

use dsh_tool_fs_core::{ErrorCode, TodoStatus, TodoWriteArgs, parse_args, todo_write};
use serde_json::json;

fn args(value: serde_json::Value) -> TodoWriteArgs {
    parse_args(&value).unwrap()
}

#[test]
fn counts_text_and_event_data() {
    let list = args(json!({"todos": [
        {"content": "  plan  ", "status": "completed"},
        {"content": "build", "status": "in_progress"},
        {"content": "test", "status": "pending"},
        {"content": "ship", "status": "pending"}
    ]}));
    let out = todo_write(&list, true).unwrap();
    assert_eq!(
        out.text,
        "Updated todo list: 2 pending, 1 in progress, 1 completed."
    );
    assert_eq!(
        serde_json::to_value(&out.event).unwrap(),
        json!({"todos": [
            {"content": "plan", "status": "completed"},
            {"content": "build", "status": "in_progress"},
            {"content": "test", "status": "pending"},
            {"content": "ship", "status": "pending"}
        ]})
    );
    assert_eq!(out.todos[0].status, TodoStatus::Completed);
    let empty = todo_write(&args(json!({"todos": []})), false).unwrap();
    assert_eq!(
        empty.text,
        "Updated todo list: 0 pending, 0 in progress, 0 completed."
    );
    assert_eq!(
        serde_json::to_value(&empty.event).unwrap(),
        json!({"todos": []})
    );
}

#[test]
fn content_must_be_non_empty_and_unique_after_trimming() {
    let err = todo_write(
        &args(json!({"todos": [{"content": "   ", "status": "pending"}]})),
        true,
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::Unclassified,
            "invalid todo: `content` must be a non-empty string"
        )
    );
    let dup = json!({"todos": [{"content": "a \"q\"", "status": "pending"}, {"content": " a \"q\" ", "status": "completed"}]});
    let err = todo_write(&args(dup), true).unwrap_err();
    assert_eq!(
        err.message(),
        "invalid todos: duplicate content \"a \\\"q\\\"\""
    );
}

#[test]
fn parallel_in_progress_follows_the_deployment_choice() {
    let two = json!({"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]});
    assert!(todo_write(&args(two.clone()), true).is_ok());
    let err = todo_write(&args(two), false).unwrap_err();
    assert_eq!(
        err.message(),
        "invalid todos: at most one task may be in_progress (got 2)"
    );
}

#[test]
fn schema_violations_are_invalid_args() {
    for bad in [
        json!({"todos": [{"content": "a", "status": "done"}]}),
        json!({"todos": [{"content": "a", "status": "pending", "extra": 1}]}),
        json!({"todos": [{"status": "pending"}]}),
    ] {
        let err = parse_args::<TodoWriteArgs>(&bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgs);
        assert_eq!(
            err.info().map(|info| serde_json::to_value(info).unwrap()),
            Some(json!({"name": "ToolArgsError", "code": "INVALID_ARGS"}))
        );
    }
}

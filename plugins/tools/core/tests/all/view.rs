//! What a view projects: scheduling modes and the model-facing schemas.

use std::sync::Arc;

use dsh_tools_core::{
    Concurrency, ConcurrencyClass, Layer, Scope, ToolOrder, ToolRegistry, ToolSpec,
};
use serde_json::json;

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {}}),
    )
}

#[test]
fn execution_mode_is_fail_closed_and_per_call() {
    let mut registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]});
    registry
        .register(Layer::Global, "fs", spec("read").parallel_safe(), ())
        .unwrap();
    registry
        .register(Layer::Global, "fs", spec("write"), ())
        .unwrap();
    let classifier = ConcurrencyClass::PerCall(Arc::new(|args: &serde_json::Value| {
        if args["command"] == "status" {
            Concurrency::Parallel
        } else {
            Concurrency::Exclusive
        }
    }));
    registry
        .register(
            Layer::Global,
            "git",
            ToolSpec::new("git", "Git.", schema).with_concurrency(classifier),
            (),
        )
        .unwrap();
    let view = registry.view(&Scope::global());
    assert_eq!(
        view.execution_mode("read", &json!({})),
        Concurrency::Parallel
    );
    assert_eq!(
        view.execution_mode("write", &json!({})),
        Concurrency::Exclusive
    );
    assert_eq!(
        view.execution_mode("git", &json!({"command": "status"})),
        Concurrency::Parallel
    );
    assert_eq!(
        view.execution_mode("git", &json!({"command": "push"})),
        Concurrency::Exclusive
    );
    // Arguments the schema refuses never reach the classifier.
    assert_eq!(
        view.execution_mode("git", &json!({"command": 1})),
        Concurrency::Exclusive
    );
    assert_eq!(
        view.execution_mode("ghost", &json!({})),
        Concurrency::Exclusive
    );
}

#[test]
fn only_name_description_and_parameters_reach_a_request() {
    let mut registry = ToolRegistry::new();
    let tool = spec("read").parallel_safe().with_timeout_ms(5_000);
    registry.register(Layer::Global, "fs", tool, ()).unwrap();
    let schemas = registry
        .view(&Scope::global())
        .schemas(&ToolOrder::code_unit())
        .unwrap();
    assert_eq!(
        serde_json::to_value(&schemas).unwrap(),
        json!([{"name": "read", "description": "The read tool.", "parameters": {"type": "object", "properties": {}}}])
    );
    assert_eq!(
        registry
            .lookup(&Scope::global(), "read")
            .unwrap()
            .spec()
            .timeout_ms(),
        Some(5_000)
    );
}

/// Guidance comes from the same view as the schemas: a tool a scope cannot see is never
/// mentioned, and the rest come by order, then name.
#[test]
fn guidance_follows_visibility_and_order() {
    let mut registry = ToolRegistry::new();
    registry
        .register(
            Layer::Global,
            "shell",
            spec("bash").with_guidance(105, "Check exit codes."),
            (),
        )
        .unwrap();
    registry
        .register(
            Layer::Global,
            "fs",
            spec("read").with_guidance(100, "Read before editing."),
            (),
        )
        .unwrap();
    registry
        .register(Layer::Global, "fs", spec("glob"), ())
        .unwrap();
    let texts = |registry: &ToolRegistry<()>, scope: &Scope| -> Vec<(i64, String)> {
        registry
            .view(scope)
            .guidance()
            .into_iter()
            .map(|(order, name, _)| (order, name))
            .collect()
    };
    assert_eq!(
        texts(&registry, &Scope::global()),
        [(100, "read".to_owned()), (105, "bash".to_owned())]
    );
    let readonly = Scope::root("readonly");
    registry
        .restrict(
            &readonly,
            "preset",
            dsh_protocol::Restriction {
                allow: None,
                deny: Some(vec!["bash".to_owned()]),
            },
        )
        .unwrap();
    assert_eq!(texts(&registry, &readonly), [(100, "read".to_owned())]);
}

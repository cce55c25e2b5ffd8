//! Deterministic tool order.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use dsh_protocol::{Restriction, ToolSchema};
use dsh_tools_core::{
    Layer, OrderError, Scope, TOOL_ORDER_REST, ToolOrder, ToolRegistry, ToolSpec,
    compare_code_units, order_schemas,
};
use serde_json::json;

fn schemas(names: &[&str]) -> Vec<ToolSchema> {
    names
        .iter()
        .map(|name| ToolSchema::new(*name, "", &json!({})))
        .collect()
}

fn names(tools: &[ToolSchema]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

fn known(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn the_default_is_code_unit_order_not_locale_or_registration_order() {
    let tools = schemas(&["write", "Bash", "read", "_x", "edit"]);
    let all = known(&["write", "Bash", "read", "_x", "edit"]);
    let ordered = order_schemas(tools, &ToolOrder::code_unit(), &all).unwrap();
    assert_eq!(names(&ordered), ["Bash", "_x", "edit", "read", "write"]);
}

#[test]
fn code_units_differ_from_code_points_above_the_bmp() {
    // U+FF5E (one UTF-16 unit 0xFF5E) against U+1F600 (surrogates 0xD83D 0xDE00): JavaScript
    // puts the emoji first, Rust's `str` order puts it last.
    let wide = "\u{FF5E}";
    let emoji = "\u{1F600}";
    assert_eq!(wide.cmp(emoji), Ordering::Less);
    assert_eq!(compare_code_units(wide, emoji), Ordering::Greater);
    let ordered = order_schemas(
        schemas(&[wide, emoji]),
        &ToolOrder::code_unit(),
        &known(&[wide, emoji]),
    )
    .unwrap();
    assert_eq!(names(&ordered), [emoji, wide]);
}

#[test]
fn configured_names_come_first_then_the_rest() {
    let order = ToolOrder::listed_then_rest(strings(&["read", "bash"])).unwrap();
    let tools = schemas(&["write", "bash", "read", "glob", "edit"]);
    let ordered = order_schemas(
        tools,
        &order,
        &known(&["write", "bash", "read", "glob", "edit"]),
    )
    .unwrap();
    assert_eq!(names(&ordered), ["read", "bash", "edit", "glob", "write"]);
}

#[test]
fn the_rest_marker_places_unlisted_tools() {
    let order = ToolOrder::configured(strings(&["read", TOOL_ORDER_REST, "bash"])).unwrap();
    let tools = schemas(&["write", "bash", "read", "edit"]);
    let ordered = order_schemas(tools, &order, &known(&["write", "bash", "read", "edit"])).unwrap();
    assert_eq!(names(&ordered), ["read", "edit", "write", "bash"]);
}

#[test]
fn configuration_errors_are_loud() {
    assert_eq!(
        ToolOrder::configured(strings(&["read", "read", TOOL_ORDER_REST])),
        Err(OrderError::Duplicate("read".into()))
    );
    let missing = ToolOrder::configured(strings(&["read"])).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "toolOrder must contain the \"<unlisted-tools>\" rest entry (where unlisted tools are inserted)"
    );
    let order = ToolOrder::listed_then_rest(strings(&["raed", "bash"])).unwrap();
    let error = order_schemas(
        schemas(&["bash", "read"]),
        &order,
        &known(&["bash", "read"]),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "toolOrder lists unregistered tool \"raed\"; known tools: bash, read"
    );
    assert_eq!(
        order_schemas(
            schemas(&[TOOL_ORDER_REST]),
            &ToolOrder::code_unit(),
            &known(&[])
        ),
        Err(OrderError::ReservedName)
    );
}

#[test]
fn a_configured_name_hidden_in_one_scope_is_skipped_not_an_error() {
    let mut registry = ToolRegistry::new();
    for name in ["bash", "read", "write"] {
        registry
            .register(
                Layer::Global,
                "host",
                ToolSpec::new(name, "", json!({"type": "object"})),
                (),
            )
            .unwrap();
    }
    let agent = Scope::root("reader");
    registry
        .restrict(
            &agent,
            "preset",
            Restriction {
                allow: Some(vec!["read".into()]),
                deny: None,
            },
        )
        .unwrap();
    let order = ToolOrder::listed_then_rest(strings(&["bash", "read"])).unwrap();
    let global = registry.view(&Scope::global()).schemas(&order).unwrap();
    assert_eq!(names(&global), ["bash", "read", "write"]);
    let scoped = registry.view(&agent).schemas(&order).unwrap();
    assert_eq!(names(&scoped), ["read"]);
}

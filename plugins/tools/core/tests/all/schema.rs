//! The enforced schema subset: declaration checks and argument validation texts.

use dsh_tools_core::{
    FailureKind, MAX_SCHEMA_DEPTH, Schema, check_object_schema, check_schema, codes,
    parse_and_validate_arguments, parse_arguments, validate_arguments, validate_tool_output,
    validate_value,
};
use serde_json::{Value, json};

fn violations(schema: Value) -> Vec<String> {
    check_schema(&schema)
        .expect_err("schema should be refused")
        .violations
}

#[test]
fn every_supported_node_is_accepted() {
    for schema in [
        json!({"type": "string"}),
        json!({"type": "number"}),
        json!({"type": "integer"}),
        json!({"type": "boolean"}),
        json!({"type": "null"}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!({
            "type": "object",
            "properties": {
                "nested": {"type": "object", "properties": {}, "additionalProperties": false},
                "free": {}
            },
            "required": ["nested"],
            "additionalProperties": true
        }),
        json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
        json!({"description": "any JSON", "title": "JSON", "default": null, "examples": [1, "x"]}),
        json!({"type": "string", "enum": ["a", "b"], "const": "a"}),
    ] {
        assert!(check_schema(&schema).is_ok(), "{schema}");
    }
}

#[test]
fn unsupported_keywords_are_refused_not_ignored() {
    for keyword in [
        "anyOf",
        "allOf",
        "not",
        "pattern",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "$ref",
    ] {
        let schema = json!({"type": "object", keyword: []});
        assert_eq!(
            violations(schema),
            vec![format!(
                "schema.{keyword} is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
            )]
        );
    }
}

#[test]
fn misplaced_keywords_name_their_path_and_type() {
    assert_eq!(
        violations(json!({"type": "object", "items": {}})),
        ["schema.items is not supported on type \"object\""]
    );
    assert_eq!(
        violations(json!({"type": "array", "properties": {}})),
        ["schema.properties is not supported on type \"array\""]
    );
    assert_eq!(
        violations(json!({"type": "object", "enum": ["x"]})),
        ["schema.enum is not supported on type \"object\""]
    );
    assert_eq!(
        violations(
            json!({"properties": {}, "required": [], "additionalProperties": true, "items": {}, "enum": [], "const": null})
        ),
        [
            "schema.properties requires type or oneOf",
            "schema.required requires type or oneOf",
            "schema.additionalProperties requires type or oneOf",
            "schema.items requires type or oneOf",
            "schema.enum requires type or oneOf",
            "schema.const requires type or oneOf",
        ]
    );
}

#[test]
fn type_and_one_of_rules() {
    assert_eq!(violations(json!(null)), ["schema must be a schema object"]);
    assert_eq!(
        violations(json!({"type": "tuple"})),
        ["schema.type must be one of object/array/string/number/integer/boolean/null"]
    );
    assert_eq!(
        violations(json!({"type": ["string", "null"]})),
        ["schema.type must be a single type string (type arrays are not supported)"]
    );
    assert_eq!(
        violations(json!({"oneOf": [{}]})),
        ["schema.oneOf must be an array of at least two schemas"]
    );
    assert_eq!(
        violations(json!({"type": "string", "oneOf": [{}, {}]})),
        ["schema cannot declare both type and oneOf"]
    );
    assert_eq!(
        violations(json!({"oneOf": [{"type": "string"}, {"type": "number"}], "items": {}})),
        ["schema.items is not supported beside oneOf"]
    );
    assert!(
        violations(json!({"oneOf": [{"type": "string"}, {"type": "weird"}]}))[0]
            .starts_with("schema.oneOf[1].type")
    );
}

#[test]
fn object_and_literal_rules_collect_every_violation() {
    let found = violations(json!({
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": [1]}, "n": {"type": "integer", "const": "x"}},
        "required": ["missing"],
        "additionalProperties": {"type": "string"},
        "description": 5
    }));
    assert_eq!(
        found,
        [
            "schema.description must be a string",
            "schema.properties.mode.enum must be a non-empty array of string values",
            "schema.properties.n.const must be a integer value",
            "schema.required names \"missing\" which is not in properties",
            "schema.additionalProperties must be a boolean",
        ]
    );
    assert_eq!(
        violations(json!({"type": "string", "enum": ["a"], "const": "b"})),
        ["schema.const must be one of schema.enum when both are declared"]
    );
    assert!(check_schema(&json!({"type": "number", "enum": [1, 2.5], "const": 1.0})).is_ok());
}

#[test]
fn tool_parameters_need_an_object_root() {
    assert!(check_object_schema(&json!({"type": "object"})).is_ok());
    let error = check_object_schema(&json!({"type": "string"})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "unsupported JSON schema: schema.type must be \"object\" (tool arguments are an object)"
    );
}

#[test]
fn absurdly_deep_schemas_are_refused_at_declaration() {
    let mut schema = json!({"type": "string"});
    for _ in 0..MAX_SCHEMA_DEPTH + 1 {
        schema = json!({"type": "array", "items": schema});
    }
    let found = violations(schema);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].ends_with(&format!(
            "nests deeper than {MAX_SCHEMA_DEPTH} schema levels"
        )),
        "{found:?}"
    );
}

/// A schema the checker accepts, read for validation.
fn schema(value: Value) -> Schema {
    check_schema(&value).expect("schema should be accepted")
}

fn read_schema() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Path to read."},
            "offset": {"type": "number"},
            "limit": {"type": "integer"},
            "mode": {"type": "string", "enum": ["text", "bytes"]},
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"status": {"type": "string", "enum": ["pending", "completed"]}},
                    "required": ["status"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["file_path"]
    }))
}

#[test]
fn argument_violations_name_path_and_rule_in_reference_wording() {
    let schema = read_schema();
    let failure = validate_arguments(&schema, &json!({"offset": "1", "limit": 1.5, "mode": "x"}))
        .unwrap_err();
    assert_eq!(
        failure.message(),
        "invalid arguments: missing required property \"file_path\"; \"offset\" must be a number; \"limit\" must be an integer; \"mode\" must be one of [\"text\",\"bytes\"]"
    );
    assert_eq!(failure.code(), Some(codes::INVALID_ARGS));
    assert_eq!(failure.info().unwrap().name, "ToolArgsError");
    assert_eq!(failure.kind(), FailureKind::InvalidArgs);
    assert_eq!(
        failure.model_text(),
        format!("Error: {}", failure.message())
    );

    let nested = validate_arguments(
        &schema,
        &json!({"file_path": "a", "todos": [{"status": "pending"}, {"status": "done", "extra": 1}, {}]}),
    )
    .unwrap_err();
    assert_eq!(
        nested.message(),
        "invalid arguments: \"todos[1].status\" must be one of [\"pending\",\"completed\"]; \"todos[1].extra\" is not a declared property (additionalProperties: false); missing required property \"todos[2].status\""
    );
}

#[test]
fn extra_properties_pass_an_open_root_and_integral_floats_are_integers() {
    let schema = read_schema();
    assert_eq!(
        validate_arguments(
            &schema,
            &json!({"file_path": "a", "extra": [1], "limit": 2.0})
        ),
        Ok(())
    );
}

#[test]
fn raw_argument_strings_parse_like_the_reference_loop() {
    assert_eq!(parse_arguments(""), json!({}));
    assert_eq!(parse_arguments("{\"a\":1}"), json!({"a": 1}));
    assert_eq!(parse_arguments("{not json"), json!("{not json"));
    let schema = read_schema();
    let bad_json = parse_and_validate_arguments(&schema, "{\"file_path\": ").unwrap_err();
    assert_eq!(
        bad_json.message(),
        "invalid arguments: \"arguments\" must be an object"
    );
    assert_eq!(bad_json.code(), Some("INVALID_ARGS"));
    let empty = parse_and_validate_arguments(&schema, "").unwrap_err();
    assert_eq!(
        empty.message(),
        "invalid arguments: missing required property \"file_path\""
    );
    assert_eq!(
        parse_and_validate_arguments(&schema, "{\"file_path\":\"x\"}"),
        Ok(json!({"file_path": "x"}))
    );
}

#[test]
fn scalar_literals_and_one_of_counting() {
    let literals = schema(json!({"type": "string", "enum": ["a", "b"], "const": "a"}));
    assert!(validate_value(&literals, &json!("a"), "value").is_empty());
    assert_eq!(
        validate_value(&literals, &json!("c"), "value"),
        ["\"value\" must be one of [\"a\",\"b\"]"]
    );
    assert_eq!(
        validate_value(&literals, &json!("b"), "value"),
        ["\"value\" must be \"a\""]
    );
    assert_eq!(
        validate_value(
            &schema(json!({"type": "integer", "enum": [1.0, 2]})),
            &json!(3),
            "value"
        ),
        ["\"value\" must be one of [1,2]"]
    );
    assert!(
        validate_value(
            &schema(json!({"type": "integer", "enum": [1.0, 2]})),
            &json!(1),
            "value"
        )
        .is_empty()
    );
    assert_eq!(
        validate_value(&schema(json!({"type": "null"})), &json!(0), "value"),
        ["\"value\" must be null"]
    );
    assert_eq!(
        validate_value(&schema(json!({"type": "boolean"})), &json!("true"), "value"),
        ["\"value\" must be a boolean"]
    );
    assert_eq!(
        validate_value(&schema(json!({"type": "number"})), &json!(-0.0), "value"),
        ["\"value\" must be a finite JSON number"]
    );

    let overlap = schema(json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}));
    assert_eq!(
        validate_value(&overlap, &json!(1), "value"),
        ["\"value\" must match exactly one oneOf branch (matched 2)"]
    );
    assert!(validate_value(&overlap, &json!(1.5), "value").is_empty());
    assert_eq!(
        validate_value(&overlap, &json!(null), "value"),
        ["\"value\" must match exactly one oneOf branch (matched 0)"]
    );
    assert!(validate_value(&schema(json!({})), &json!({"anything": [null]}), "value").is_empty());
}

#[test]
fn output_values_fail_as_invalid_tool_output() {
    let schema = schema(
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    );
    assert_eq!(
        validate_tool_output("count", &schema, &json!({"n": 3})),
        Ok(())
    );
    let failure = validate_tool_output("count", &schema, &json!({"n": "3"})).unwrap_err();
    assert_eq!(
        failure.message(),
        "tool \"count\" returned invalid output: \"value.n\" must be an integer"
    );
    assert_eq!(failure.code(), Some(codes::INVALID_TOOL_OUTPUT));
    assert_eq!(failure.info().unwrap().name, "ToolOutputError");
}

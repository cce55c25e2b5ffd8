use std::path::Path;

use super::*;
use crate::{ComposeError, Composed, compose_row_list};

fn rows(file: &str, text: &str) -> Result<Composed, ComposeError> {
    compose_row_list("--config", text, Path::new(file))
}

fn error(file: &str, text: &str) -> String {
    match rows(file, text) {
        Ok(c) => panic!("expected an error, got {:?}", c.rows),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_row_field_is_read() {
    let text = "\
- id: greeter
  name: greeter/hello
  config: {greeting: hi, n: 3}
  disabled: false
  inject: [llm, session]
  isolate:
    llm: true
    tools: agent-a
";
    let c = rows("hello.yml", text).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let row = &c.rows[0];
    assert_eq!(row.id, "greeter");
    assert_eq!(row.name.as_deref(), Some("greeter/hello"));
    let config: Value = serde_norway::from_str("{greeting: hi, n: 3}").unwrap();
    assert_eq!(row.config, Some(config));
    assert_eq!(row.disabled, Some(Value::Bool(false)));
    assert_eq!(
        row.inject,
        Some(vec!["llm".to_owned(), "session".to_owned()])
    );
    let isolate = row.isolate.clone().unwrap();
    assert_eq!(isolate["llm"], IsolateTarget::Private);
    assert_eq!(isolate["tools"], IsolateTarget::Named("agent-a".into()));
    assert!(!row.group);
    assert_eq!(row.layer, "--config");
    assert_eq!(row.file, "hello.yml");
}

#[test]
fn unknown_field_names_file_line_column_and_field() {
    let text = "- id: a\n  name: x\n- id: b\n  nmae: y\n";
    assert_eq!(
        error("hello.yml", text),
        "hello.yml:4:3: unknown row field `nmae` (expected one of id, name, config, disabled, \
         inject, group, isolate)"
    );
    let nested = "- id: a\n  group: true\n  config:\n    -  id: b\n       nmae: y\n";
    assert!(error("hello.yml", nested).starts_with("hello.yml:5:8: unknown row field `nmae`"));
}

#[test]
fn row_without_name_is_an_error_but_group_may_omit_it() {
    assert_eq!(
        error("a.yml", "- id: x\n  config: 1\n"),
        "a.yml:1:3: row `x` has no `name` (the plugin library to mount)"
    );
    let c = rows(
        "a.yml",
        "- id: g\n  group: true\n  config:\n    - {id: c, name: lib}\n",
    )
    .unwrap();
    assert_eq!(c.rows[0].name, None);
    assert_eq!(c.rows[0].effective_name(), "group");
    assert_eq!(c.rows[0].children[0].id, "c");
}

#[test]
fn rows_without_id_get_stable_generated_ids_and_warnings() {
    let text =
        "- id: a\n  name: x\n- name: greeter\n- group: true\n  config:\n    - name: lib/exp\n";
    let first = rows("conf/hello.yml", text).unwrap();
    let second = rows("conf/hello.yml", text).unwrap();
    let ids: Vec<&str> = first.all_rows().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["a", "greeter@hello:3", "group@hello:4", "lib/exp@hello:6"]
    );
    assert_eq!(first, second);
    assert_eq!(
        first.warnings[0],
        "conf/hello.yml:3:3: row without `id`; using the generated id `greeter@hello:3`"
    );
    assert_eq!(first.warnings.len(), 3);
}

#[test]
fn generated_ids_on_one_line_stay_unique() {
    let c = rows("f.yml", "[{name: a}, {name: a}]\n").unwrap();
    let ids: Vec<&str> = c.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a@f:1", "a@f:1.13"]);
}

#[test]
fn duplicate_ids_in_one_file_name_both_lines() {
    let text = "- id: a\n  name: x\n- id: b\n  name: y\n- id: a\n  name: z\n";
    assert_eq!(
        error("dup.yml", text),
        "dup.yml:5:7: duplicate row id `a` (first defined at dup.yml:1:7)"
    );
    let nested = "- id: g\n  group: true\n  config:\n    - id: g\n      name: y\n";
    assert_eq!(
        error("dup.yml", nested),
        "dup.yml:4:11: duplicate row id `g` (first defined at dup.yml:1:7)"
    );
}

#[test]
fn field_types_are_checked_with_positions() {
    let cases = [
        (
            "- id: 3\n  name: x\n",
            "t.yml:1:7: `id` must be a non-empty string without spaces",
        ),
        (
            "- id: a\n  name: a/b/c\n",
            "t.yml:2:9: `name: a/b/c`: expected a library name, optionally `library/export`",
        ),
        (
            "- id: a\n  name: x\n  inject: llm\n",
            "t.yml:3:11: `inject` must be a list of service names",
        ),
        (
            "- id: a\n  name: x\n  group: yes\n",
            "t.yml:3:10: `group` must be true or false",
        ),
        (
            "- id: a\n  name: x\n  isolate: {llm: false}\n",
            "t.yml:3:18: `isolate.llm` must be `true` or a realm label",
        ),
        (
            "- id: a\n  name: x\n  disabled: 3\n",
            "t.yml:3:13: `disabled` must be a boolean, `!platform NAME` or `!env ...`",
        ),
        (
            "- id: a\n  name: x\n  disabled: !home x\n",
            "t.yml:3:13: `disabled` cannot be a `!home` path",
        ),
        (
            "- just a string\n",
            "t.yml:1:3: a row must be a mapping (`id: ...`, `name: ...`)",
        ),
        (
            "- id: g\n  group: true\n  config: {a: 1}\n",
            "t.yml:3:11: the `config` of a group row must be a list of rows",
        ),
        (
            "id: a\n",
            "t.yml:1:1: expected a list of rows (`- id: ...`)",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error("t.yml", text), expected, "for {text:?}");
    }
}

#[test]
fn malformed_yaml_names_file_line_and_column() {
    let err = rows("bad.yml", "- id: a\n  name: x\n - id: b\n").unwrap_err();
    let pos = err.position();
    assert_eq!(
        (pos.file.as_str(), pos.line, pos.column),
        ("bad.yml", Some(3), Some(2))
    );
    assert!(matches!(err, ComposeError::Syntax { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("bad.yml:3:2: malformed YAML: "),
        "{err}"
    );
}

#[test]
fn empty_row_list_file_is_an_error() {
    assert_eq!(
        rows("e.yml", "").unwrap_err(),
        ComposeError::Empty {
            file: "e.yml".into()
        }
    );
    assert!(rows("e.yml", "[]\n").unwrap().rows.is_empty());
}

#[test]
fn group_children_are_rows_with_their_own_checks() {
    let text = "\
- id: g
  group: true
  disabled: true
  config:
    - id: c1
      name: lib
      config: {path: !home sessions}
    - id: c2
      name: lib
      config: !js whatever
";
    assert_eq!(
        error("g.yml", text),
        "g.yml:10:15: unknown tag `!js` (known tags: !env, !home, !platform)"
    );
}

#[test]
fn anchors_and_merge_keys_work_in_rows() {
    let text = "\
- &tool {id: a, name: tool, config: {timeoutMs: 5, mode: x}}
- <<: *tool
  id: b
  config: {timeoutMs: 9}
";
    let c = rows("m.yml", text).unwrap();
    let b = c.find("b").unwrap();
    assert_eq!(b.name.as_deref(), Some("tool"));
    assert_eq!(
        b.config,
        Some(serde_norway::from_str("{timeoutMs: 9}").unwrap())
    );
}

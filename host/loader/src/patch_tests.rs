use super::*;
use crate::test_util::{compose_patches, patch};

const BASE: &str = "\
- insert:
    - id: greeter
      name: greeter
      config: {greeting: hello, nested: {a: 1, b: 2}}
    - id: tools
      group: true
      config:
        - id: tool-bash
          name: tool-bash
          config: {timeoutMs: 60000}
";

fn ids(c: &Composed) -> Vec<&str> {
    c.all_rows().iter().map(|r| r.id.as_str()).collect()
}

fn config(c: &Composed, id: &str) -> Option<Value> {
    c.find(id).and_then(|r| r.config.clone())
}

fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).unwrap()
}

fn compose_err(layers: &[(&str, &str, &str)]) -> ComposeError {
    let layers: Vec<Layer> = layers.iter().map(|(l, f, t)| patch(l, f, t)).collect();
    compose(&layers).unwrap_err()
}

#[test]
fn insert_at_root_and_into_a_group() {
    let extra = "\
- id: tools
  insert:
    - id: tool-fs
      name: tool-fs
- insert:
    - id: web
      name: web
";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("bundle web", "web.yml", extra),
    ]);
    assert_eq!(ids(&c), ["greeter", "tools", "tool-bash", "tool-fs", "web"]);
    let tools = c.find("tools").unwrap();
    assert_eq!(
        tools.layer, "bundle base",
        "inserting into a group does not touch the group"
    );
    assert_eq!(c.find("tool-fs").unwrap().layer, "bundle web");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn inserted_rows_can_be_patched_by_later_entries_and_layers() {
    let layer = "\
- insert:
    - id: fresh
      name: fresh
      config: {v: 1}
- id: fresh
  config: {v: 2}
";
    let later = "- id: fresh\n  disabled: true\n";
    let c = compose_patches(&[
        ("bundle base", "a.yml", layer),
        ("home patch", "p.yml", later),
    ]);
    let row = c.find("fresh").unwrap();
    assert_eq!(row.config, Some(yaml("{v: 2}")));
    assert_eq!(row.disabled, Some(Value::Bool(true)));
    assert_eq!(row.layer, "home patch");
}

#[test]
fn patches_find_rows_nested_in_groups() {
    let p = "- id: tool-bash\n  config: {timeoutMs: 5}\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(config(&c, "tool-bash"), Some(yaml("{timeoutMs: 5}")));
    assert_eq!(c.find("tool-bash").unwrap().layer, "home patch");
    assert_eq!(c.find("tools").unwrap().layer, "bundle base");
}

#[test]
fn config_is_replaced_whole_not_merged() {
    let p = "- id: greeter\n  config: {nested: {a: 9}}\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(config(&c, "greeter"), Some(yaml("{nested: {a: 9}}")));
    let cleared = "- id: greeter\n  config: null\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", cleared),
    ]);
    assert_eq!(config(&c, "greeter"), None);
}

#[test]
fn unknown_id_warns_and_is_skipped() {
    let p = "- id: nope\n  config: {x: 1}\n- id: greeter\n  config: {x: 2}\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(
        c.warnings,
        ["p.yml:1:7: row `nope`: no row has this id; patch skipped"]
    );
    assert_eq!(config(&c, "greeter"), Some(yaml("{x: 2}")));
}

#[test]
fn entry_without_id_warns_and_is_skipped() {
    let p = "- name: greeter\n  config: {x: 1}\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(c.warnings, ["p.yml:1:3: patch entry without `id`; skipped"]);
    assert_eq!(
        config(&c, "greeter"),
        Some(yaml("{greeting: hello, nested: {a: 1, b: 2}}"))
    );
}

#[test]
fn name_mismatch_skips_the_whole_entry() {
    let p = "- id: greeter\n  name: other\n  config: {x: 1}\n  disabled: true\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(
        c.warnings,
        ["p.yml:1:7: row `greeter`: `name: other` differs from the row's `greeter`; patch skipped"]
    );
    let row = c.find("greeter").unwrap();
    assert_eq!(row.disabled, None);
    assert_eq!(row.layer, "bundle base");
    let same = "- id: greeter\n  name: greeter\n  disabled: true\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", same),
    ]);
    assert_eq!(c.find("greeter").unwrap().disabled, Some(Value::Bool(true)));
}

#[test]
fn insert_into_a_non_group_or_unknown_id_warns() {
    let p =
        "- id: greeter\n  insert: [{id: x, name: x}]\n- id: ghost\n  insert: [{id: y, name: y}]\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(
        c.warnings,
        [
            "p.yml:1:7: row `greeter`: not a group (`group: true`); insert skipped",
            "p.yml:3:7: row `ghost`: no row has this id; insert skipped",
        ]
    );
    assert!(c.find("x").is_none() && c.find("y").is_none());
}

#[test]
fn inserting_an_id_of_an_earlier_layer_warns_and_keeps_the_first() {
    let p = "- insert:\n    - id: greeter\n      name: greeter\n      config: {x: 1}\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].contains("row `greeter` already exists (from layer `bundle base`)"));
    assert_eq!(c.find("greeter").unwrap().layer, "bundle base");
    assert_eq!(ids(&c), ["greeter", "tools", "tool-bash"]);
}

#[test]
fn replacing_a_group_config_replaces_its_children() {
    let p = "\
- id: tools
  config:
    - id: tool-fs
      name: tool-fs
- id: tool-fs
  config: {root: /}
";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(ids(&c), ["greeter", "tools", "tool-fs"]);
    assert_eq!(config(&c, "tool-fs"), Some(yaml("{root: /}")));
    assert_eq!(c.find("tools").unwrap().layer, "home patch");
}

#[test]
fn changing_group_without_config_is_skipped() {
    let p = "- id: greeter\n  group: true\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(
        c.warnings,
        ["p.yml:1:7: row `greeter`: changing `group` needs a new `config` too; patch skipped"]
    );
    assert!(!c.find("greeter").unwrap().group);
}

#[test]
fn empty_and_comment_only_patch_files_are_errors() {
    for text in ["", "# nothing here\n\n# still nothing\n"] {
        let err = compose_err(&[("home patch", "p.yml", text)]);
        assert_eq!(
            err,
            ComposeError::Empty {
                file: "p.yml".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "p.yml: the file is empty or has only comments; write `[]` for an empty list"
        );
    }
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", "[]\n"),
    ]);
    assert_eq!(ids(&c), ["greeter", "tools", "tool-bash"]);
}

#[test]
fn malformed_patch_yaml_names_file_line_column() {
    let err = compose_err(&[("home patch", "p.yml", "- id: a\n  config: {x: 1\n")]);
    let pos = err.position();
    assert_eq!(pos.file, "p.yml");
    assert_eq!(pos.line, Some(3));
    assert!(pos.column.is_some());
    assert!(err.to_string().starts_with("p.yml:3:"), "{err}");
}

#[test]
fn a_patch_nested_past_the_limit_is_refused_before_parsing() {
    let deep = format!("- id: a\n  config: {}\n", "[".repeat(100_000));
    let err = compose_err(&[("home patch", "p.yml", &deep)]);
    assert_eq!(err.position().line, Some(2));
    assert_eq!(
        err.to_string(),
        "p.yml:2: nested deeper than 64 levels, the limit for a YAML document"
    );
    let large = format!("- id: a\n  config: {{x: '{}'}}\n", "x".repeat(1 << 20));
    let err = compose_err(&[("home patch", "p.yml", &large)]);
    assert!(
        err.to_string().contains("over the limit of 1048576 bytes"),
        "{err}"
    );
}

#[test]
fn unknown_fields_in_patch_and_insert_entries_are_errors() {
    let err = compose_err(&[("home patch", "p.yml", "- id: greeter\n  confg: {}\n")]);
    assert!(
        err.to_string()
            .starts_with("p.yml:2:3: unknown row field `confg`"),
        "{err}"
    );
    let err = compose_err(&[("home patch", "p.yml", "- insert: []\n  into: x\n")]);
    assert_eq!(
        err.to_string(),
        "p.yml:2:3: unknown field `into` in an insert entry (expected insert, id)"
    );
    let err = compose_err(&[("home patch", "p.yml", "- insert: {id: a}\n")]);
    assert_eq!(
        err.to_string(),
        "p.yml:1:11: `insert` must be a list of rows"
    );
}

#[test]
fn duplicate_ids_within_one_layer_are_errors_across_entries() {
    let p = "- insert: [{id: a, name: a}]\n- insert:\n    - id: a\n      name: b\n";
    let err = compose_err(&[("bundle base", "b.yml", p)]);
    assert_eq!(
        err.to_string(),
        "b.yml:3:11: duplicate row id `a` (first defined at b.yml:1:17)"
    );
}

#[test]
fn layers_apply_in_order_and_record_provenance() {
    let layers = [
        ("bundle base", "base.yml", BASE),
        (
            "profile web patch",
            "prof.yml",
            "- id: greeter\n  config: {v: profile}\n",
        ),
        (
            "home patch",
            "home.yml",
            "- id: greeter\n  config: {v: home}\n- id: tool-bash\n  disabled: true\n",
        ),
        (
            "--patch extra.yml",
            "extra.yml",
            "- id: greeter\n  config: {v: extra}\n",
        ),
    ];
    let c = compose_patches(&layers);
    assert_eq!(config(&c, "greeter"), Some(yaml("{v: extra}")));
    assert_eq!(c.find("greeter").unwrap().layer, "--patch extra.yml");
    assert_eq!(c.find("greeter").unwrap().file, "extra.yml");
    assert_eq!(c.find("tool-bash").unwrap().layer, "home patch");
    assert_eq!(c.find("tools").unwrap().layer, "bundle base");
    let reversed: Vec<_> = [layers[0], layers[3], layers[2], layers[1]].to_vec();
    let c = compose_patches(&reversed);
    assert_eq!(config(&c, "greeter"), Some(yaml("{v: profile}")));
}

#[test]
fn row_list_layer_then_patch_layer() {
    let rows = Layer::row_list("--config rows.yml", "- id: a\n  name: a\n", "rows.yml");
    let p = patch("--patch p.yml", "p.yml", "- id: a\n  config: 5\n");
    let c = compose(&[rows, p]).unwrap();
    assert_eq!(config(&c, "a"), Some(Value::Number(5.into())));
    assert_eq!(c.find("a").unwrap().layer, "--patch p.yml");
}

#[test]
fn js_secondary_tags_are_rejected_but_core_tags_and_text_are_not() {
    let p = "- id: greeter\n  config:\n    port: !!js ctx.webStartup.port\n";
    let err = compose_err(&[("home patch", "p.yml", p)]);
    assert_eq!(
        err.to_string(),
        "p.yml:3:11: unknown tag `!!js` (known tags: !env, !home, !platform; JavaScript \
         expressions are not supported)"
    );
    let fine = "- id: greeter\n  config:\n    n: !!str 42\n    note: \"use !!js here\"\n    b: |\n      x: !!js y\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", fine),
    ]);
    assert_eq!(
        config(&c, "greeter"),
        Some(yaml(
            "{n: '42', note: 'use !!js here', b: \"x: !!js y\\n\"}"
        ))
    );
}

#[test]
fn unknown_local_tag_in_a_patch_is_an_error_naming_it() {
    let p = "- id: greeter\n  config:\n    port: !js ctx.port\n";
    let err = compose_err(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    assert_eq!(
        err.to_string(),
        "p.yml:3:11: unknown tag `!js` (known tags: !env, !home, !platform)"
    );
}

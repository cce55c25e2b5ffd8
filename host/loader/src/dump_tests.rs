use super::*;
use crate::test_util::{compose_patches, env_of, home, no_env};
use crate::{ComposedRow, compose_row_list};

const BASE: &str = "\
- insert:
    - id: greeter
      name: greeter
      config:
        greeting: !env [DEMO_GREETING, Hello]
        key: !env API_KEY
        root: !home sessions
        port: 3080
    - id: pwsh
      name: pwsh
      disabled: !platform windows
    - id: tools
      group: true
      config:
        - id: tool-bash
          name: tool-bash
          inject: [shell-env]
          isolate: {tools: true, llm: agent}
";

fn dump_of(c: &Composed, env: &dyn Fn(&str) -> Option<String>) -> String {
    c.dump_with(&TagContext::new(env, home()).with_platform("linux"))
}

/// Everything but provenance, for comparing a re-read dump with the original.
fn content(rows: &[ComposedRow]) -> Vec<ComposedRow> {
    rows.iter()
        .flat_map(ComposedRow::walk)
        .map(|r| ComposedRow {
            children: vec![],
            layer: String::new(),
            file: String::new(),
            ..r.clone()
        })
        .collect()
}

#[test]
fn dump_shows_layers_tag_sources_and_values() {
    let p = "- id: tool-bash\n  disabled: true\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", BASE),
        ("home patch", "p.yml", p),
    ]);
    let env = env_of(&[("API_KEY", "sk-1")]);
    let text = dump_of(&c, &env);
    let expected = "\
# dsh composed config: each row follows the layer that last touched it
# == bundle base
- id: greeter
  name: greeter
  config:
    greeting: !env [DEMO_GREETING, Hello]  # = Hello
    key: !env API_KEY  # = sk-1
    root: !home sessions  # = /home/u/.dsh-host/sessions
    port: 3080
# == bundle base
- id: pwsh
  name: pwsh
  disabled: !platform windows  # = false
# == bundle base
- id: tools
  group: true
  config:
    # == home patch
    - id: tool-bash
      name: tool-bash
      disabled: true
      inject: [shell-env]
      isolate:
        llm: agent
        tools: true
";
    assert_eq!(text, expected);
}

#[test]
fn dump_reports_unresolvable_tags_in_a_comment() {
    let c = compose_patches(&[("bundle base", "base.yml", BASE)]);
    let text = dump_of(&c, &no_env);
    assert!(
        text.contains(
            "    key: !env API_KEY  # ! `config.key`: environment variable `API_KEY` is not set"
        ),
        "{text}"
    );
}

#[test]
fn dump_is_valid_yaml_and_reads_back_as_the_same_rows() {
    let tricky = "\
- insert:
    - id: strings
      name: lib/export
      config:
        multi: \"line one\\nline two\\n\"
        multi_keep: \"a\\n\\n\"
        multi_strip: \"a\\n  b\"
        lead: \"\\nstarts with newline\"
        spaces: \"  padded  \"
        colon: \"a: b\"
        hash: \"a #b\"
        looks_bool: \"true\"
        looks_num: \"0123\"
        empty: \"\"
        quote: \"say \\\"hi\\\" \\\\ back\"
        unicode: \"héllo ✓ \\u0085 \\u2028 \\t tab\"
        dash: \"- item\"
        nested: {list: [[1, 2], [], {}], map: {\"k:1\": [a, {b: c}]}, 7: seven}
        tagged_list: !env [X, \"a, b\"]
        env_home: [!home data, !platform darwin]
      disabled: !env [OFF, false]
    - id: empty-group
      group: true
";
    let warn_text = "- name: unnamed\n  config: {a: 1}\n";
    let c = crate::compose(&[
        crate::Layer::patch_list("bundle base", tricky, "base.yml"),
        crate::Layer::patch_list(
            "home patch",
            format!("- insert:\n{}", indent(warn_text)),
            "p.yml",
        ),
    ])
    .unwrap();
    assert_eq!(c.warnings.len(), 1);
    let text = dump_of(&c, &no_env);
    let value: Value = serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        matches!(value, Value::Sequence(ref rows) if rows.len() == 3),
        "{text}"
    );
    let again = compose_row_list("dump", &text, std::path::Path::new("dump.yml"))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(content(&again.rows), content(&c.rows), "{text}");
    assert!(
        again.warnings.is_empty(),
        "generated ids are written out: {:?}",
        again.warnings
    );
    assert!(
        text.contains("    multi: |\n      line one\n      line two\n"),
        "{text}"
    );
    assert!(text.contains("      \"k:1\":\n"), "{text}");
}

#[test]
fn empty_tree_dumps_an_empty_list() {
    let c = compose_patches(&[("home patch", "p.yml", "[]")]);
    let text = dump_of(&c, &no_env);
    assert_eq!(
        serde_norway::from_str::<Value>(&text).unwrap(),
        Value::Sequence(vec![])
    );
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_owned()
            } else {
                format!("    {l}\n")
            }
        })
        .collect()
}

#[test]
fn scalars_are_plain_only_when_they_read_back_unchanged() {
    assert_eq!(scalar_str("hello", false), "hello");
    assert_eq!(scalar_str("lib/export", false), "lib/export");
    assert_eq!(scalar_str("true", false), "\"true\"");
    assert_eq!(scalar_str("12", false), "\"12\"");
    assert_eq!(scalar_str("a, b", true), "\"a, b\"");
    assert_eq!(scalar_str("a, b", false), "a, b");
    assert_eq!(scalar_str("", false), "\"\"");
    assert_eq!(scalar_str("x\u{7f}", false), "\"x\\u007F\"");
}

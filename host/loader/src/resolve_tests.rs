use serde_json::json;

use super::*;
use crate::test_util::{compose_patches, env_of, home, no_env};

const TREE: &str = "\
- insert:
    - id: greeter
      name: greeter/hello
      config:
        greeting: !env [DEMO_GREETING, Hello]
        root: !home sessions
        list: [1, 2.5, null, true]
      inject: [llm]
      isolate: {tools: true, llm: shared}
    - id: off
      name: off
      disabled: true
      config: {key: !env MISSING_KEY}
    - id: grp
      group: true
      disabled: true
      config:
        - id: child
          name: child
";

#[test]
fn resolves_rows_to_json_with_every_field() {
    let c = compose_patches(&[("bundle base", "base.yml", TREE)]);
    let rows = c.resolve(&no_env, home()).unwrap();
    let greeter = &rows[0];
    assert_eq!(greeter.id, "greeter");
    assert_eq!(greeter.name, "greeter/hello");
    assert_eq!(
        greeter.config,
        json!({"greeting": "Hello", "root": "/home/u/.dsh-host/sessions", "list": [1, 2.5, null, true]})
    );
    assert!(!greeter.disabled);
    assert_eq!(greeter.inject, ["llm"]);
    assert_eq!(greeter.isolate["tools"], IsolateTarget::Private);
    assert_eq!(
        greeter.isolate["llm"],
        IsolateTarget::Named("shared".into())
    );
    assert_eq!(greeter.children, None);
    assert_eq!(greeter.layer, "bundle base");
}

#[test]
fn env_values_come_from_the_lookup() {
    let c = compose_patches(&[("bundle base", "base.yml", TREE)]);
    let env = env_of(&[("DEMO_GREETING", "Salut")]);
    let rows = c.resolve(&env, home()).unwrap();
    assert_eq!(rows[0].config["greeting"], "Salut");
}

#[test]
fn disabled_rows_are_kept_and_groups_disable_their_rows() {
    let c = compose_patches(&[("bundle base", "base.yml", TREE)]);
    let rows = c.resolve(&no_env, home()).unwrap();
    let off = find_resolved(&rows, "off").unwrap();
    assert!(off.disabled);
    assert_eq!(
        off.config,
        serde_json::Value::Null,
        "unresolvable config of a disabled row"
    );
    let grp = find_resolved(&rows, "grp").unwrap();
    assert_eq!(grp.name, "group");
    assert!(grp.disabled);
    assert_eq!(grp.config, serde_json::Value::Null);
    let child = &grp.children.as_ref().unwrap()[0];
    assert_eq!(child.id, "child");
    assert!(child.disabled);
}

#[test]
fn missing_env_of_an_enabled_row_names_row_field_and_variable() {
    let p = "- id: off\n  disabled: false\n";
    let c = compose_patches(&[
        ("bundle base", "base.yml", TREE),
        ("home patch", "p.yml", p),
    ]);
    let err = c.resolve(&no_env, home()).unwrap_err();
    assert_eq!(err.row, "off");
    assert_eq!(
        err.error,
        crate::TagError::MissingEnv {
            field: "config.key".into(),
            var: "MISSING_KEY".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "row `off`: `config.key`: environment variable `MISSING_KEY` is not set (write \
         `!env [MISSING_KEY, default]` to give a default)"
    );
}

#[test]
fn platform_in_disabled_uses_the_context_platform() {
    let text = "- insert:\n    - id: pwsh\n      name: pwsh\n      disabled: !platform linux\n";
    let c = compose_patches(&[("bundle base", "base.yml", text)]);
    for (platform, disabled) in [("linux", true), ("windows", false), ("darwin", false)] {
        let ctx = TagContext::new(&no_env, home()).with_platform(platform);
        assert_eq!(
            c.resolve_with(&ctx).unwrap()[0].disabled,
            disabled,
            "{platform}"
        );
    }
    let here = c.resolve(&no_env, home()).unwrap()[0].disabled;
    assert_eq!(here, std::env::consts::OS == "linux");
}

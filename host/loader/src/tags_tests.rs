use serde_json::json;

use super::*;
use crate::test_util::{env_of, home, no_env};

fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).unwrap()
}

fn resolve(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<serde_json::Value, TagError> {
    resolve_config(
        &yaml(text),
        &TagContext::new(env, home()).with_platform("linux"),
        "config",
    )
}

#[test]
fn env_name_reads_the_variable_as_a_string() {
    let env = env_of(&[("DEMO", "42")]);
    assert_eq!(resolve("{v: !env DEMO}", &env).unwrap(), json!({"v": "42"}));
}

#[test]
fn env_without_default_and_unset_is_an_error() {
    let err = resolve("{a: [x, !env NOPE]}", &no_env).unwrap_err();
    assert_eq!(
        err,
        TagError::MissingEnv {
            field: "config.a[1]".into(),
            var: "NOPE".into()
        }
    );
}

#[test]
fn env_default_is_used_when_unset_and_types_a_set_value() {
    let text = "{s: !env [S, Hello], n: !env [N, 3080], f: !env [F, 0.5], b: !env [B, false], z: !env [Z, null]}";
    assert_eq!(
        resolve(text, &no_env).unwrap(),
        json!({"s": "Hello", "n": 3080, "f": 0.5, "b": false, "z": null})
    );
    let env = env_of(&[
        ("S", "Hi"),
        ("N", "8080"),
        ("F", "1.5"),
        ("B", "yes"),
        ("Z", "zz"),
    ]);
    assert_eq!(
        resolve(text, &env).unwrap(),
        json!({"s": "Hi", "n": 8080, "f": 1.5, "b": true, "z": "zz"})
    );
    let bad = env_of(&[("N", "eighty")]);
    assert_eq!(
        resolve("{n: !env [N, 3080]}", &bad)
            .unwrap_err()
            .to_string(),
        "`config.n`: environment variable `N`=`eighty` is not a number like its default"
    );
}

#[test]
fn home_joins_under_dsh_home() {
    assert_eq!(
        resolve("!home sessions/x", &no_env).unwrap(),
        json!("/home/u/.dsh-host/sessions/x")
    );
    assert_eq!(
        resolve("!home", &no_env).unwrap(),
        json!("/home/u/.dsh-host")
    );
    let abs = resolve("{p: !home /etc}", &no_env).unwrap_err();
    assert_eq!(
        abs.to_string(),
        "`config.p`: `!home /etc`: the path must be relative"
    );
    let up = resolve("!home ../x", &no_env).unwrap_err();
    assert_eq!(
        up.to_string(),
        "`config`: `!home ../x`: the path must stay under $DSH_HOME"
    );
}

#[test]
fn platform_is_a_boolean_for_the_current_platform() {
    assert_eq!(
        resolve(
            "[!platform linux, !platform windows, !platform macos]",
            &no_env
        )
        .unwrap(),
        json!([true, false, false])
    );
    let mac = TagContext::new(&no_env, home()).with_platform("macos");
    assert_eq!(
        resolve_config(&yaml("!platform darwin"), &mac, "config").unwrap(),
        json!(true)
    );
    let win = TagContext::new(&no_env, home()).with_platform("windows");
    assert_eq!(
        resolve_config(&yaml("!platform win32"), &win, "config").unwrap(),
        json!(true)
    );
    let real = TagContext::new(&no_env, home());
    let here = resolve_config(
        &yaml(&format!("!platform {}", current_platform())),
        &real,
        "c",
    );
    assert_eq!(here.unwrap(), json!(true));
    let err = resolve("!platform linx", &no_env).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`config`: `!platform linx`: unknown platform"),
        "{err}"
    );
}

#[test]
fn unknown_tags_are_errors_naming_the_tag() {
    let err = resolve("{port: !js ctx.port}", &no_env).unwrap_err();
    assert_eq!(
        err,
        TagError::UnknownTag {
            field: "config.port".into(),
            tag: "!js".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "`config.port`: unknown tag `!js` (known tags: !env, !home, !platform)"
    );
}

#[test]
fn bad_tag_arguments_are_errors() {
    assert!(
        resolve("!env [A, [1]]", &no_env)
            .unwrap_err()
            .to_string()
            .contains("the default must be a plain scalar")
    );
    assert!(
        resolve("!env {a: 1}", &no_env)
            .unwrap_err()
            .to_string()
            .contains("`!env` takes a variable name")
    );
    assert!(
        resolve("!platform [linux]", &no_env)
            .unwrap_err()
            .to_string()
            .contains("takes a platform name")
    );
}

#[test]
fn disabled_accepts_booleans_platform_and_env() {
    let ctx = TagContext::new(&no_env, home()).with_platform("windows");
    assert!(!resolve_disabled(None, &ctx).unwrap());
    assert!(resolve_disabled(Some(&yaml("true")), &ctx).unwrap());
    assert!(resolve_disabled(Some(&yaml("!platform win32")), &ctx).unwrap());
    assert!(!resolve_disabled(Some(&yaml("!platform linux")), &ctx).unwrap());
    assert!(!resolve_disabled(Some(&yaml("!env [NO_HMR, false]")), &ctx).unwrap());
    let env = env_of(&[("NO_HMR", "1"), ("WORD", "maybe")]);
    let ctx = TagContext::new(&env, home());
    assert!(resolve_disabled(Some(&yaml("!env [NO_HMR, false]")), &ctx).unwrap());
    assert_eq!(
        resolve_disabled(Some(&yaml("!env WORD")), &ctx)
            .unwrap_err()
            .to_string(),
        "`disabled`: `maybe` is not a boolean"
    );
    assert!(resolve_disabled(Some(&yaml("!home x")), &ctx).is_err());
}

#[test]
fn values_without_json_form_are_errors() {
    let err = resolve("{x: .nan}", &no_env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`config.x`: the number .nan has no JSON form"
    );
    assert_eq!(
        resolve("{1: a, true: b, null: c}", &no_env).unwrap(),
        json!({"1": "a", "true": "b", "null": "c"})
    );
}

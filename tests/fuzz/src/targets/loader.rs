//! The YAML loader and patch composer: the input as a patch layer over the shipped bundles
//! (composed, resolved with `!env`/`!home`/`!platform`, dumped, diffed against the bundles
//! alone), as a settings document over them, and as a `--config` row list.

use std::path::Path;
use std::sync::OnceLock;

use dsh_loader::{
    Composed, Layer, ResolvedRow, apply_layer, apply_settings, compose, compose_row_list, diff,
};

const BUNDLES: &[(&str, &str)] = &[
    ("base", include_str!("../../../../bundles/base.yml")),
    ("agent", include_str!("../../../../bundles/agent.yml")),
    ("headless", include_str!("../../../../bundles/headless.yml")),
];

const PATCHES: &[&str] = &[
    "- id: headless\n  disabled: true\n",
    "- insert:\n  - id: hi\n    name: greeter\n    config: {greeting: !env [G, Hello], home: !home .cache}\n",
    "- id: hi\n  config: {greeting: !platform {linux: a, macos: b}}\n",
    "- insert:\n  - id: g\n    rows:\n      - id: a\n        name: x\n        inject: [svc]\n        isolate: {svc: a}\n",
    "- id: base\n  config:\n    list: [1, 2, {a: b}]\n    anchor: &a {x: 1}\n    alias: *a\n",
    "- delete: headless\n",
    "- id: headless\n  name: other\n  config: !env NAME\n",
];

const SETTINGS: &[&str] = &["headless:\n  model: x\n  limit: 3\n", "base: {a: [1, 2]}\n"];

const ROW_LISTS: &[&str] = &[
    "- id: r\n  name: lib\n  config: {a: 1}\n- id: s\n  name: lib/export\n  disabled: !env [OFF, false]\n",
];

pub(crate) const DICT: &[&[u8]] = &[
    b"- insert:\n",
    b"- id: ",
    b"  - id: ",
    b"    name: ",
    b"  config: ",
    b"  disabled: ",
    b"delete",
    b"rows",
    b"inject",
    b"isolate",
    b"replace",
    b"before",
    b"after",
    b"!env ",
    b"!home ",
    b"!platform ",
    b"!!js ",
    b"!!binary ",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"%YAML 1.2\n",
    b"---\n",
    b"...\n",
    b"? ",
    b": ",
    b"|\n",
    b">-\n",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"'",
    b"#",
    b"\t",
    b"\\u0000",
    b"~",
    b"null",
    b"true",
    b"0o17",
    b".inf",
];

pub(crate) fn seeds() -> Vec<Vec<u8>> {
    BUNDLES
        .iter()
        .map(|(_, text)| *text)
        .chain(PATCHES.iter().copied())
        .chain(SETTINGS.iter().copied())
        .chain(ROW_LISTS.iter().copied())
        .map(|text| text.as_bytes().to_vec())
        .collect()
}

fn env(name: &str) -> Option<String> {
    name.len()
        .is_multiple_of(2)
        .then(|| format!("value of {name}"))
}

/// The bundles composed once; each case lays its layer over a copy.
fn bundles() -> &'static (Composed, Vec<ResolvedRow>) {
    static BASE: OnceLock<(Composed, Vec<ResolvedRow>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let layers: Vec<Layer> = BUNDLES
            .iter()
            .map(|(name, text)| {
                Layer::patch_list(format!("bundle {name}"), *text, format!("{name}.yml"))
            })
            .collect();
        let composed = compose(&layers).unwrap_or_default();
        let rows = composed
            .resolve(&env, Path::new("/home/fuzz"))
            .unwrap_or_default();
        (composed, rows)
    })
}

pub(crate) fn run(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let home = Path::new("/home/fuzz");
    let (base, base_rows) = bundles();
    let mut patched = base.clone();
    if apply_layer(
        &mut patched,
        &Layer::patch_list("fuzz patch", text.as_ref(), "fuzz.yml"),
    )
    .is_ok()
        && let Ok(rows) = patched.resolve(&env, home)
    {
        let _ = patched.dump(&env, home);
        let _ = diff(base_rows, &rows);
    }
    let mut settled = base.clone();
    if apply_settings(&mut settled, &text, Path::new("settings.yml")).is_ok() {
        let _ = settled.resolve(&env, home);
    }
    if let Ok(rows) = compose_row_list("--config fuzz.yml", &text, Path::new("fuzz.yml")) {
        let _ = rows.resolve(&env, home);
    }
}

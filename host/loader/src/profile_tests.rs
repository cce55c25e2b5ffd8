use super::*;
use crate::compose;
use crate::test_util::TempDir;

const BASE: &str = "- insert:\n    - id: greeter\n      name: greeter\n      config: {v: base}\n";
const WEB: &str = "- id: greeter\n  config: {v: web}\n- insert:\n    - id: web\n      name: web\n";

fn builtin(name: &str) -> Option<&'static str> {
    match name {
        "base" => Some(BASE),
        "web-app" => Some(WEB),
        _ => None,
    }
}

fn labels(layers: &[Layer]) -> Vec<&str> {
    layers.iter().map(|l| l.label.as_str()).collect()
}

#[test]
fn layers_are_bundles_then_profile_patch_then_home_patch_then_patch_files() {
    let dir = TempDir::new("order");
    let home = Home::new(&dir.0);
    dir.write("profiles/web/profile.yml", "bundles: [base, web-app]\n");
    dir.write(
        "profiles/web/cordis.patch.yml",
        "- id: greeter\n  config: {v: profile}\n- id: web\n  disabled: true\n",
    );
    dir.write("cordis.patch.yml", "- id: greeter\n  config: {v: home}\n");
    let one = dir.write("one.yml", "- id: greeter\n  config: {v: one}\n");
    let two = dir.write("two.yml", "- id: web\n  config: {v: two}\n");
    let layers = home
        .profile_layers("web", &builtin, &[one.clone(), two.clone()])
        .unwrap();
    let expected_last = format!("--patch {}", two.display());
    assert_eq!(
        labels(&layers),
        [
            "bundle base",
            "bundle web-app",
            "profile web patch",
            "home patch",
            &format!("--patch {}", one.display()),
            &expected_last,
        ]
    );
    assert_eq!(layers[0].path(), std::path::Path::new("builtin:base.yml"));
    assert_eq!(
        layers[2].path(),
        dir.0.join("profiles/web/cordis.patch.yml")
    );
    assert_eq!(layers[3].path(), dir.0.join("cordis.patch.yml"));

    let c = compose(&layers).unwrap();
    let greeter = c.find("greeter").unwrap();
    assert_eq!(
        greeter.config,
        Some(serde_norway::from_str("{v: one}").unwrap())
    );
    assert_eq!(greeter.layer, format!("--patch {}", one.display()));
    let web = c.find("web").unwrap();
    assert_eq!(web.layer, expected_last);
    assert_eq!(
        web.disabled,
        Some(Value::Bool(true)),
        "profile patch survives later layers"
    );
}

#[test]
fn optional_patch_layers_are_left_out_when_absent() {
    let dir = TempDir::new("optional");
    let home = Home::new(&dir.0);
    dir.write("profiles/p/profile.yml", "bundles:\n  - base\n");
    let layers = home.profile_layers("p", &builtin, &[]).unwrap();
    assert_eq!(labels(&layers), ["bundle base"]);
}

#[test]
fn user_bundle_file_overrides_the_builtin() {
    let dir = TempDir::new("override");
    let home = Home::new(&dir.0);
    dir.write("profiles/p/profile.yml", "bundles: [base]\n");
    let path = dir.write(
        "bundles/base.yml",
        "- insert:\n    - id: mine\n      name: mine\n",
    );
    let layers = home.profile_layers("p", &builtin, &[]).unwrap();
    assert_eq!(layers[0].label, "bundle base");
    assert_eq!(layers[0].path(), path);
    let c = compose(&layers).unwrap();
    assert!(c.find("mine").is_some() && c.find("greeter").is_none());
}

#[test]
fn missing_bundle_names_the_profile_file_and_bundle() {
    let dir = TempDir::new("missing-bundle");
    let home = Home::new(&dir.0);
    let profile = dir.write("profiles/p/profile.yml", "bundles: [base, nope]\n");
    let err = home.profile_layers("p", &builtin, &[]).unwrap_err();
    assert!(
        matches!(&err, ProfileError::MissingBundle { bundle, .. } if bundle == "nope"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: bundle `nope` not found", profile.display())),
        "{text}"
    );
}

#[test]
fn missing_patch_file_is_an_error_naming_it() {
    let dir = TempDir::new("missing-patch");
    let home = Home::new(&dir.0);
    dir.write("profiles/p/profile.yml", "bundles: [base]\n");
    let ghost = dir.0.join("ghost.yml");
    let err = home
        .profile_layers("p", &builtin, std::slice::from_ref(&ghost))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("patch file {} does not exist", ghost.display())
    );
}

#[test]
fn profile_file_rejects_unknown_fields_and_empty_files() {
    let dir = TempDir::new("bad-profile");
    let home = Home::new(&dir.0);
    let path = dir.write("profiles/p/profile.yml", "bundles: [base]\nbundle: [web]\n");
    let err = home
        .profile_layers("p", &builtin, &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{}:2:1: unknown field `bundle`", path.display())),
        "{err}"
    );
    dir.write("profiles/p/profile.yml", "# nothing\n");
    let err = home
        .profile_layers("p", &builtin, &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("the profile file is empty; write `bundles: [base]`"),
        "{err}"
    );
    dir.write("profiles/p/profile.yml", "bundles: [../etc]\n");
    assert!(home.profile_layers("p", &builtin, &[]).is_err());
}

#[test]
fn missing_profile_lists_the_available_ones() {
    let dir = TempDir::new("missing-profile");
    let home = Home::new(&dir.0);
    dir.write("profiles/web/profile.yml", "bundles: [base]\n");
    dir.write("profiles/headless/profile.yml", "bundles: [base]\n");
    let err = home.profile_layers("nope", &builtin, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "profile `nope` does not exist (available: headless, web)"
    );
    assert!(matches!(
        home.profile_layers("../x", &builtin, &[]),
        Err(ProfileError::BadName(_))
    ));
}

#[test]
fn ensure_profile_creates_from_a_template_once() {
    let dir = TempDir::new("ensure");
    let home = Home::new(&dir.0);
    assert!(home.ensure_profile("web", &["base", "web-app"]).unwrap());
    assert!(!home.ensure_profile("web", &["base"]).unwrap());
    assert_eq!(home.profile_bundles("web").unwrap(), ["base", "web-app"]);
    let layers = home.profile_layers("web", &builtin, &[]).unwrap();
    assert_eq!(labels(&layers), ["bundle base", "bundle web-app"]);
    let err = home.ensure_profile("custom", &[]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert_eq!(
        err.to_string(),
        "profile `custom` does not exist (available: web)"
    );
    assert_eq!(home.profiles(), ["web"]);
}

#[test]
fn a_profile_file_an_earlier_template_wrote_is_upgraded_and_an_edited_one_is_not() {
    let dir = TempDir::new("upgrade");
    let home = Home::new(&dir.0);
    assert!(home.ensure_profile("web", &["base"]).unwrap());
    assert!(
        home.upgrade_profile("web", &["base"], &["base", "web-app"])
            .unwrap()
    );
    assert_eq!(home.profile_bundles("web").unwrap(), ["base", "web-app"]);
    // Upgraded once: it is now the current template, not the retired one.
    assert!(
        !home
            .upgrade_profile("web", &["base"], &["base", "web-app"])
            .unwrap()
    );
    dir.write("profiles/mine/profile.yml", "bundles: [base]\n");
    assert!(
        !home
            .upgrade_profile("mine", &["base"], &["base", "web-app"])
            .unwrap()
    );
    assert_eq!(home.profile_bundles("mine").unwrap(), ["base"]);
    assert!(
        !home
            .upgrade_profile("absent", &["base"], &["base"])
            .unwrap()
    );
}

#[test]
fn watched_files_cover_every_layer_source() {
    let home = Home::new("/h");
    let files = home.watched_files("web", &["base".to_owned()], &[PathBuf::from("x.yml")]);
    let expected: Vec<PathBuf> = [
        "/h/profiles/web/profile.yml",
        "/h/bundles/base.yml",
        "/h/profiles/web/cordis.patch.yml",
        "/h/cordis.patch.yml",
        "x.yml",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(files, expected);
}

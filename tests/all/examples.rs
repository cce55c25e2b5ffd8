//! The compositions shipped in `examples/`, run as a user would run them.

use dsh_tests::{TestDir, run_host, squash, workspace_root};

fn check_example(name: &str) -> dsh_tests::Output {
    let dir = TestDir::new(&format!("example-{}", name.replace('/', "-")));
    let path = workspace_root().join("examples").join(name);
    run_host(&dir.home(), &["check", "--config", path.to_str().unwrap()])
}

#[test]
fn hello_yml() {
    let out = check_example("hello.yml");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.lines().next(),
        Some("consumer says: Hello, world!")
    );
}

#[test]
fn swapped_order_prints_the_same() {
    let out = check_example("experiments/swapped.yml");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.lines().next(),
        Some("consumer says: Hello, world!")
    );
}

#[test]
fn removed_provider_leaves_the_consumer_pending() {
    let out = check_example("experiments/pending.yml");
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        squash(&out.stdout).contains("consumer consumer PENDING waiting for: service `greeter`"),
        "{}",
        out.stdout
    );
}

#[test]
fn two_providers_fail_the_second_naming_the_service() {
    let out = check_example("experiments/duplicate-service.yml");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        squash(&out.stdout).contains("greeter-again greeter-alt FAILED service `greeter` is already provided by row `greeter` (greeter)"),
        "{}",
        out.stdout
    );
}

#[test]
fn isolated_groups_each_get_their_own_service() {
    let out = check_example("experiments/isolate.yml");
    assert_eq!(out.code, Some(0), "{out:?}");
    let mut said: Vec<&str> = out
        .stdout
        .lines()
        .filter(|line| line.starts_with("consumer says"))
        .collect();
    said.sort_unstable();
    assert_eq!(
        said,
        [
            "consumer says: Hello, world!",
            "consumer says: Howdy, world!"
        ]
    );
}

#[test]
fn groups_sharing_a_named_realm_share_its_services() {
    let dir = TestDir::new("named-realm");
    let yaml = "- id: a\n  group: true\n  isolate:\n    greeter: shared\n  config:\n    - id: a-greeter\n      name: greeter\n- id: b\n  group: true\n  isolate:\n    greeter: shared\n  config:\n    - id: b-consumer\n      name: consumer\n    - id: b-greeter\n      name: greeter-alt\n- id: outside\n  name: consumer\n";
    let config = dir.write("tree.yml", yaml);
    let out = run_host(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
    );
    let table = squash(&out.stdout);
    // b's consumer sees a's greeter through the shared realm; b's own greeter is a duplicate
    // there; the consumer outside both groups sees the root realm, where nobody provides one.
    assert!(table.contains("b-greeter greeter-alt FAILED service `greeter` is already provided by row `a-greeter` (greeter)"), "{table}");
    assert!(table.contains("b-consumer consumer ACTIVE"), "{table}");
    assert!(
        table.contains("outside consumer PENDING waiting for: service `greeter`"),
        "{table}"
    );
    assert_eq!(out.code, Some(1), "{out:?}");
}

#[test]
fn waterfall_example() {
    let out = check_example("experiments/waterfall.yml");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.lines().take(2).collect::<Vec<_>>(),
        ["HELLO", "** BLOCKED **"]
    );
}

#[test]
fn models_yml_registers_both_routes() {
    let out = check_example("models.yml");
    assert_eq!(out.code, Some(0), "{out:?}");
    let table = squash(&out.stdout);
    assert!(
        table.contains("llm-deepseek llm-deepseek ACTIVE"),
        "{table}"
    );
    assert!(table.contains("llm-ollama llm-deepseek ACTIVE"), "{table}");
}

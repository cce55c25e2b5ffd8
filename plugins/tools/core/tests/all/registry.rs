//! Scoped views: shadowing, duplicates, restrictions, guards, removal.

use std::sync::Arc;

use dsh_protocol::Restriction;
use dsh_tools_core::{
    Concurrency, FailureKind, GuardCall, Layer, RUN_CODE_NAME, RegistryError, Removed, Scope,
    ToolOrder, ToolRegistry, ToolSpec, codes,
};
use serde_json::json;

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {}}),
    )
}

fn registry(globals: &[&str]) -> ToolRegistry<&'static str> {
    let mut registry = ToolRegistry::new();
    for name in globals {
        registry
            .register(Layer::Global, "host", spec(name), "global")
            .unwrap();
    }
    registry
}

fn visible(registry: &ToolRegistry<&'static str>, scope: &Scope) -> Vec<String> {
    registry
        .view(scope)
        .schemas(&ToolOrder::code_unit())
        .unwrap()
        .into_iter()
        .map(|schema| schema.name)
        .collect()
}

fn allow(names: &[&str]) -> Restriction {
    Restriction {
        allow: Some(names.iter().map(|n| (*n).to_owned()).collect()),
        deny: None,
    }
}

fn deny(names: &[&str]) -> Restriction {
    Restriction {
        allow: None,
        deny: Some(names.iter().map(|n| (*n).to_owned()).collect()),
    }
}

#[test]
fn a_scoped_tool_shadows_the_global_one_only_in_its_scope() {
    let mut registry = registry(&["bash", "read"]);
    registry
        .register(Layer::scoped("child"), "subagent", spec("bash"), "scoped")
        .unwrap();
    let child = Scope::root("parent").child("child");
    assert_eq!(
        *registry.lookup(&child, "bash").unwrap().payload(),
        "scoped"
    );
    assert_eq!(
        *registry
            .lookup(&Scope::root("parent"), "bash")
            .unwrap()
            .payload(),
        "global"
    );
    assert_eq!(
        *registry.lookup(&Scope::global(), "bash").unwrap().payload(),
        "global"
    );
    // Nested agents inherit their ancestor's variant.
    assert_eq!(
        *registry
            .lookup(&child.child("grandchild"), "bash")
            .unwrap()
            .payload(),
        "scoped"
    );
    assert_eq!(visible(&registry, &child), ["bash", "read"]);
}

#[test]
fn a_duplicate_in_one_layer_is_refused_naming_both_owners() {
    let mut registry = registry(&["read"]);
    let error = registry
        .register(Layer::Global, "fs-alt", spec("read"), "x")
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::DuplicateTool { existing_owner, new_owner, .. } if existing_owner == "host" && new_owner == "fs-alt")
    );
    assert_eq!(
        error.to_string(),
        "tool \"read\" is already registered in the global layer by \"host\" (refused for \"fs-alt\"); for a per-agent variant, register it in that agent's scope instead"
    );
    registry
        .register(Layer::scoped("a"), "one", spec("x"), "x")
        .unwrap();
    let scoped = registry
        .register(Layer::scoped("a"), "two", spec("x"), "x")
        .unwrap_err();
    assert_eq!(
        scoped.to_string(),
        "tool \"x\" is already registered in scope \"a\" by \"one\" (refused for \"two\")"
    );
}

#[test]
fn reserved_names_bad_schemas_and_bad_timeouts_are_refused() {
    let mut registry = ToolRegistry::new();
    assert!(
        registry
            .register(Layer::Global, "p", spec("<unlisted-tools>"), ())
            .is_err()
    );

    let bad = ToolSpec::new(
        "grep",
        "Search.",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
    );
    let error = registry
        .register(Layer::Global, "search", bad, ())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"grep\" declares parameters outside the enforced JSON Schema subset: unsupported JSON schema: schema.properties.n.minimum is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
    );
    let not_object = ToolSpec::new("x", "X.", json!({"type": "string"}));
    assert!(matches!(
        registry.register(Layer::Global, "p", not_object, ()),
        Err(RegistryError::InvalidParameters { .. })
    ));
    // A passthrough schema (an MCP server's) is forwarded, never enforced.
    let raw = ToolSpec::passthrough(
        "mcp__s__t",
        "Remote.",
        json!({"type": "object", "properties": {"n": {"minimum": 0}}}),
    );
    registry.register(Layer::Global, "mcp", raw, ()).unwrap();
    assert_eq!(
        registry
            .lookup(&Scope::global(), "mcp__s__t")
            .unwrap()
            .spec()
            .validate_arguments(&json!("anything")),
        Ok(())
    );
    let zero = spec("slow").with_timeout_ms(0);
    assert_eq!(
        registry
            .register(Layer::Global, "p", zero, ())
            .unwrap_err()
            .to_string(),
        "tool \"slow\" timeoutMs must be a positive finite number"
    );
    assert_eq!(registry.generation(), 1);
}

#[test]
fn a_filtered_tool_is_indistinguishable_from_a_missing_one() {
    let mut registry = registry(&["bash", "read"]);
    let agent = Scope::root("agent");
    registry
        .restrict(&agent, "preset", deny(&["bash"]))
        .unwrap();
    let filtered = registry.lookup(&agent, "bash").unwrap_err();
    let missing = registry.lookup(&agent, "nope").unwrap_err();
    assert_eq!(filtered.message(), "unknown tool \"bash\"");
    assert_eq!(missing.message(), "unknown tool \"nope\"");
    assert_eq!(filtered.info(), missing.info());
    assert_eq!(filtered.code(), Some(codes::UNKNOWN_TOOL));
    assert_eq!(filtered.info().unwrap().name, "ToolNotFoundError");
    assert_eq!(filtered.kind(), FailureKind::UnknownTool);
    // The prompt sees exactly what execution sees.
    assert_eq!(visible(&registry, &agent), ["read"]);
    assert_eq!(
        registry.view(&agent).execution_mode("bash", &json!({})),
        Concurrency::Exclusive
    );
    // Other scopes are unaffected.
    assert_eq!(visible(&registry, &Scope::root("other")), ["bash", "read"]);
}

#[test]
fn restrictions_intersect_down_the_chain_and_spare_own_registrations() {
    let mut registry = registry(&["bash", "edit", "grep", "read"]);
    let parent = Scope::root("parent");
    let child = parent.child("child");
    registry
        .restrict(&parent, "preset", allow(&["read", "grep", "edit"]))
        .unwrap();
    registry
        .restrict(&child, "subagent", deny(&["edit"]))
        .unwrap();
    registry
        .register(Layer::scoped("child"), "subagent", spec("report"), "own")
        .unwrap();
    assert_eq!(visible(&registry, &parent), ["edit", "grep", "read"]);
    assert_eq!(visible(&registry, &child), ["grep", "read", "report"]);
    assert_eq!(
        visible(&registry, &child.child("grandchild")),
        ["grep", "read"]
    );

    // An allow list excludes globals registered later; a deny-only mask lets them through.
    registry
        .register(Layer::Global, "late", spec("web_fetch"), "global")
        .unwrap();
    assert_eq!(visible(&registry, &parent), ["edit", "grep", "read"]);
    let denied_only = Scope::root("deny-only");
    registry
        .restrict(&denied_only, "preset", deny(&["bash"]))
        .unwrap();
    assert_eq!(
        visible(&registry, &denied_only),
        ["edit", "grep", "read", "web_fetch"]
    );
}

#[test]
fn restrict_fails_loudly() {
    let mut registry = registry(&["bash", "read"]);
    let agent = Scope::root("agent");
    assert_eq!(
        registry.restrict(&Scope::global(), "p", deny(&["bash"])),
        Err(RegistryError::RestrictGlobal)
    );
    assert_eq!(
        registry.restrict(&agent, "p", Restriction::default()),
        Err(RegistryError::EmptyRestriction)
    );
    assert_eq!(
        registry.restrict(&agent, "p", deny(&[RUN_CODE_NAME])),
        Err(RegistryError::RestrictReserved)
    );
    let error = registry
        .restrict(&agent, "p", allow(&["raed", "bsh", "read"]))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "restrict() names unknown global tools \"raed\", \"bsh\"; known global tools: bash, read"
    );
    // The agent's own tools are not inherited, so a restriction cannot name them.
    registry
        .register(Layer::scoped("agent"), "p", spec("report"), "own")
        .unwrap();
    let own = registry
        .restrict(&agent, "p", deny(&["report"]))
        .unwrap_err();
    assert_eq!(
        own.to_string(),
        "restrict() names unknown global tool \"report\"; known global tools: bash, read"
    );
    // An empty allow list is a real (total) restriction, not an empty filter.
    registry.restrict(&agent, "p", allow(&[])).unwrap();
    assert_eq!(visible(&registry, &agent), ["report"]);
}

#[test]
fn removal_undoes_exactly_one_registration_or_one_owners_all() {
    let mut registry = registry(&["read"]);
    let bash = registry
        .register(Layer::Global, "shell", spec("bash"), "bash")
        .unwrap();
    let pwsh = registry
        .register(Layer::Global, "shell", spec("pwsh"), "pwsh")
        .unwrap();
    let agent = Scope::root("agent");
    let restriction = registry
        .restrict(&agent, "preset", deny(&["read"]))
        .unwrap();
    let before = registry.generation();
    assert!(
        matches!(registry.remove(bash), Some(Removed::Tool(tool)) if *tool.payload() == "bash")
    );
    assert!(registry.remove(bash).is_none());
    assert!(registry.generation() > before);
    assert_eq!(visible(&registry, &agent), ["pwsh"]);
    assert!(matches!(
        registry.remove(restriction),
        Some(Removed::Restriction)
    ));
    assert_eq!(visible(&registry, &agent), ["pwsh", "read"]);
    registry
        .register(Layer::scoped("agent"), "shell", spec("bash"), "scoped")
        .unwrap();
    assert_eq!(registry.remove_owner("shell"), 2);
    assert_eq!(visible(&registry, &agent), ["read"]);
    assert!(registry.remove(pwsh).is_none());
    // The name is free again.
    registry
        .register(Layer::Global, "other", spec("bash"), "again")
        .unwrap();
    assert_eq!(registry.forget_scope(&"agent".into()), 0);
}

#[test]
fn guards_run_global_first_then_the_chain_and_only_deny() {
    let mut registry = registry(&["bash"]);
    let parent = Scope::root("parent");
    let child = parent.child("child");
    registry.guard(
        Layer::scoped("child"),
        "child-policy",
        Arc::new(|_: &GuardCall<'_>| Some("child says no".to_owned())),
    );
    registry.guard(
        Layer::scoped("parent"),
        "parent-policy",
        Arc::new(|call: &GuardCall<'_>| {
            (call.arguments["command"] == "rm -rf /").then(|| "parent says no".to_owned())
        }),
    );
    let call = |scope, command| GuardCall {
        call_id: "c1",
        name: "bash",
        arguments: command,
        scope,
    };
    let safe = json!({"command": "ls"});
    let unsafe_ = json!({"command": "rm -rf /"});
    assert_eq!(registry.guard_denial(&call(&parent, &safe)), None);
    assert_eq!(
        registry.guard_denial(&call(&parent, &unsafe_)).as_deref(),
        Some("parent says no")
    );
    assert_eq!(
        registry.guard_denial(&call(&child, &unsafe_)).as_deref(),
        Some("parent says no")
    );
    assert_eq!(
        registry.guard_denial(&call(&child, &safe)).as_deref(),
        Some("child says no")
    );
    let global = registry.guard(
        Layer::Global,
        "host",
        Arc::new(|_: &GuardCall<'_>| Some("global says no".to_owned())),
    );
    assert_eq!(
        registry.guard_denial(&call(&child, &unsafe_)).as_deref(),
        Some("global says no")
    );
    let generation = registry.generation();
    assert!(matches!(registry.remove(global), Some(Removed::Guard)));
    // Guards never change what a scope sees.
    assert_eq!(registry.generation(), generation);
}

/// The Code Mode transport registers like any tool, but no restriction masks it: a scope that
/// hides everything it inherits still offers `run_code`, to its children too.
#[test]
fn run_code_is_registered_and_never_masked() {
    let mut registry = registry(&["bash", "read"]);
    registry
        .register(Layer::Global, "code", spec(RUN_CODE_NAME), "run_code")
        .unwrap();
    let preset = Scope::root("preset");
    registry.restrict(&preset, "code", allow(&[])).unwrap();
    let names = |scope: &Scope| -> Vec<String> {
        registry.view(scope).names().map(str::to_owned).collect()
    };
    assert_eq!(names(&preset), vec![RUN_CODE_NAME.to_owned()]);
    assert_eq!(
        names(&preset.child("child")),
        vec![RUN_CODE_NAME.to_owned()]
    );
    assert_eq!(names(&Scope::global()), vec!["bash", "read", RUN_CODE_NAME]);
}

/// `get` resolves one name without building the view; it must agree with the view for every
/// name in every scope: shadowing at each depth, restrictions along the chain, own
/// registrations spared, the Code Mode transport never masked, unknown names.
#[test]
fn resolving_one_name_agrees_with_the_whole_view() {
    let mut registry = registry(&["bash", "edit", "grep", "read", RUN_CODE_NAME]);
    let parent = Scope::root("parent");
    let child = parent.child("child");
    let grandchild = child.child("grandchild");
    registry
        .register(Layer::scoped("parent"), "preset", spec("bash"), "parent")
        .unwrap();
    registry
        .register(Layer::scoped("child"), "subagent", spec("report"), "child")
        .unwrap();
    registry
        .register(
            Layer::scoped("grandchild"),
            "subagent",
            spec("edit"),
            "grandchild",
        )
        .unwrap();
    registry
        .restrict(&parent, "preset", allow(&["bash", "grep", "edit", "read"]))
        .unwrap();
    registry
        .restrict(&child, "subagent", deny(&["edit", "bash"]))
        .unwrap();
    let scopes = [
        Scope::global(),
        parent.clone(),
        child.clone(),
        grandchild.clone(),
        grandchild.child("deeper"),
        Scope::root("other"),
    ];
    let names = [
        "bash",
        "edit",
        "grep",
        "read",
        "report",
        RUN_CODE_NAME,
        "nope",
    ];
    let mut resolved = 0;
    for scope in &scopes {
        for name in names {
            let whole = registry.view(scope).get(name).map(|tool| *tool.payload());
            let one = registry.get(scope, name).map(|tool| *tool.payload());
            assert_eq!(one, whole, "`{name}` in {scope:?}");
            resolved += usize::from(one.is_some());
        }
    }
    // The cases above do resolve something, and the shadowing is seen.
    assert!(resolved > 10, "{resolved}");
    assert_eq!(
        registry.get(&grandchild, "edit").map(|t| *t.payload()),
        Some("grandchild")
    );
    assert_eq!(registry.get(&child, "bash").map(|t| *t.payload()), None);
    assert_eq!(
        registry.get(&parent, "bash").map(|t| *t.payload()),
        Some("parent")
    );
    assert_eq!(
        registry
            .get(&grandchild, RUN_CODE_NAME)
            .map(|t| *t.payload()),
        Some("global")
    );
}

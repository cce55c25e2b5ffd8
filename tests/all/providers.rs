//! Providers added in the settings, through the web profile's client protocol: an
//! OpenAI-compatible endpoint (a second fake server on loopback, speaking the real wire) is
//! added by id, base URL and key; its models are discovered at `GET {base}/models`, stored in
//! the settings document (the key in the owner-only credentials store, shown masked), and
//! offered by `session.models` as soon as the save answers, without a restart; a session
//! chooses one and runs a turn against that endpoint. Bad input is refused by name, nothing
//! written; an edit and a removal take effect the same way. A row is not switched off from the
//! page when the page runs on it or the tree lacks it.

use std::os::unix::fs::PermissionsExt;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::{Web, start, turn_ended};
use serde_json::{Value, json};

const KEY: &str = "sk-local-secret-7f3a9c1e";

fn routes(web: &Web) -> Vec<String> {
    web.call("session.models", &json!({}))["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["route"].as_str().unwrap().to_owned())
        .collect()
}

fn refused(web: &Web, method: &str, params: &Value) -> (String, String) {
    let answer = web.try_call(method, params);
    let error = &answer["error"];
    assert!(
        error.is_object(),
        "{method} {params} was not refused: {answer}"
    );
    (
        error["code"].as_str().unwrap().to_owned(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn a_provider_added_in_the_settings_is_discovered_offered_and_answers_a_turn() {
    let deepseek = FakeDeepSeek::start(Vec::new());
    let local = FakeDeepSeek::start(vec![Reply::text("hello from the local model")]);
    local.serve_models(&["qwen-local", "llama-local"]);
    let dir = TestDir::new("providers");
    let mut web = start(&deepseek, &dir);
    let base = format!("{}/v1", local.url());
    assert_eq!(
        web.call("provider.list", &json!({})),
        json!({"providers": [], "writable": true})
    );

    // Discovery alone writes nothing.
    let found = web.call(
        "provider.discover",
        &json!({"baseUrl": base, "apiKey": KEY}),
    );
    assert_eq!(found["models"], json!(["qwen-local", "llama-local"]));
    assert!(!dir.home().join("settings.yaml").exists());

    // Saved: the answer comes once the host serves the route, so the picker lists it now.
    let saved = web.call(
        "provider.save",
        &json!({"id": "local", "baseUrl": format!("{base}/"), "apiKey": KEY}),
    );
    assert_eq!(saved["models"], json!(["qwen-local", "llama-local"]));
    let listed = routes(&web);
    for route in [
        "local/qwen-local",
        "local/llama-local",
        "deepseek-official/deepseek-v4-flash",
    ] {
        assert!(
            listed.iter().any(|known| known == route),
            "{route}: {listed:?}"
        );
    }
    let asked = local.model_list_requests();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|request| request.path == "/v1/models"),
        "{asked:?}"
    );
    assert_eq!(
        asked[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );

    // The list shows the key masked, never whole; the document holds no key, the store does,
    // readable by its owner only.
    let list = web.call("provider.list", &json!({}));
    assert_eq!(
        list["providers"],
        json!([{"id": "local", "baseUrl": base, "apiKey": "••••9c1e",
                "models": ["qwen-local", "llama-local"], "served": true}])
    );
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    assert!(
        settings.contains("llm-providers:") && settings.contains("qwen-local"),
        "{settings}"
    );
    assert!(
        settings.contains("DSH_PROVIDER_LOCAL_API_KEY") && !settings.contains(KEY),
        "{settings}"
    );
    let credentials = dir.home().join("credentials.json");
    assert!(std::fs::read_to_string(&credentials).unwrap().contains(KEY));
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "credentials readable by others: {mode:o}");
    let described = web.call("credentials.describe", &json!({})).to_string();
    assert!(!described.contains(KEY), "{described}");

    // A session picks a discovered model; its turn goes to the provider's endpoint with its
    // key, in OpenAI's protocol (none of DeepSeek's fields).
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": "local/qwen-local"}),
    );
    web.prompt(&session, "hello");
    let frames = socket.until(300, turn_ended);
    assert!(
        frames
            .iter()
            .any(|frame| frame.to_string().contains("hello from the local model")),
        "the answer streamed"
    );
    let sent = local.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].body["model"], "qwen-local");
    assert_eq!(
        sent[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert!(sent[0].body.get("thinking").is_none(), "{}", sent[0].body);
    assert!(deepseek.requests().is_empty(), "DeepSeek was not asked");
    local.assert_no_violations();

    // An edit: the endpoint now lists another model; the stored key is kept when none is given.
    local.serve_models(&["mistral-local"]);
    let edited = web.call(
        "provider.save",
        &json!({"id": "local", "baseUrl": base, "edit": true}),
    );
    assert_eq!(edited["models"], json!(["mistral-local"]));
    assert!(
        routes(&web)
            .iter()
            .any(|route| route == "local/mistral-local")
    );
    let list = web.call("provider.list", &json!({}));
    assert_eq!(list["providers"][0]["apiKey"], "••••9c1e", "{list}");

    // Removed: the route is no longer offered, and its key is gone from the store.
    web.call("provider.remove", &json!({"id": "local"}));
    assert!(!routes(&web).iter().any(|route| route.starts_with("local/")));
    assert_eq!(
        web.call("provider.list", &json!({}))["providers"],
        json!([])
    );
    assert!(!std::fs::read_to_string(&credentials).unwrap().contains(KEY));
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn bad_provider_input_is_refused_by_name_and_nothing_is_written() {
    let deepseek = FakeDeepSeek::start(Vec::new());
    let local = FakeDeepSeek::start(Vec::new());
    local.serve_models(&["qwen-local"]);
    let dir = TestDir::new("providers-bad");
    let mut web = start(&deepseek, &dir);
    let base = local.url();
    let save = |id: &str, url: &str| json!({"id": id, "baseUrl": url, "apiKey": KEY});

    let (code, message) = refused(&web, "provider.save", &save("local", "localhost:11434/v1"));
    assert_eq!(code, "provider-rejected");
    assert!(
        message.contains("baseUrl `localhost:11434/v1`"),
        "{message}"
    );
    let (code, message) = refused(&web, "provider.save", &save("Local Box", &base));
    assert_eq!(code, "provider-rejected");
    assert!(message.contains("id `Local Box`"), "{message}");
    let (code, message) = refused(
        &web,
        "provider.save",
        &json!({"id": "local", "baseUrl": base, "apiKey": "two words"}),
    );
    assert_eq!(code, "provider-rejected");
    assert!(message.contains("apiKey"), "{message}");
    // Without a key, an endpoint that wants one says so by its status.
    local.models_need_a_key();
    let (code, message) = refused(
        &web,
        "provider.save",
        &json!({"id": "local", "baseUrl": base}),
    );
    assert_eq!(code, "provider-rejected");
    assert!(
        message.contains("apiKey") && message.contains("401") && message.contains("needs one"),
        "{message}"
    );
    // A route another adapter serves is a duplicate.
    let (code, message) = refused(&web, "provider.save", &save("deepseek-official", &base));
    assert_eq!(code, "provider-conflict");
    assert!(message.contains("`deepseek-official`"), "{message}");

    // Discovery failing: the endpoint's status, and an address nothing listens on.
    local.without_models();
    let (code, message) = refused(&web, "provider.save", &save("local", &base));
    assert_eq!(code, "provider-discovery-failed");
    assert!(
        message.contains(&format!("GET {base}/models answered 404")),
        "{message}"
    );
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (code, message) = refused(
        &web,
        "provider.discover",
        &json!({"baseUrl": closed, "apiKey": KEY}),
    );
    assert_eq!(code, "provider-discovery-failed");
    assert!(
        message.contains(&format!("GET {closed}/models")),
        "{message}"
    );
    assert!(
        !dir.home().join("settings.yaml").exists(),
        "nothing written"
    );
    assert!(
        !dir.home().join("credentials.json").exists(),
        "no key stored"
    );

    // Adding an id twice, editing or removing one never added.
    local.serve_models(&["qwen-local"]);
    web.call("provider.save", &save("local", &base));
    let (code, message) = refused(&web, "provider.save", &save("local", &base));
    assert_eq!(code, "provider-conflict");
    assert!(message.contains("id `local`"), "{message}");
    let (code, _) = refused(
        &web,
        "provider.save",
        &json!({"id": "other", "baseUrl": base, "apiKey": KEY, "edit": true}),
    );
    assert_eq!(code, "provider-not-found");
    let (code, message) = refused(&web, "provider.remove", &json!({"id": "other"}));
    assert_eq!(code, "provider-not-found");
    assert!(message.contains("id `other`"), "{message}");
    // The params' shape is checked by field.
    let (code, message) = refused(&web, "provider.save", &json!({"id": "x"}));
    assert_eq!(code, "bad-request");
    assert!(message.contains("baseUrl"), "{message}");
    assert_eq!(web.host.stop(), Some(0));
}

/// An endpoint that takes no key (a local Ollama or vLLM) is added without one: its models
/// are asked for with no authorization header, the entry says `keyRequired: false`, and a
/// turn goes to it with no authorization header either.
#[test]
fn a_provider_that_takes_no_key_is_added_without_one() {
    let deepseek = FakeDeepSeek::start(Vec::new());
    let local = FakeDeepSeek::start(vec![Reply::text("no key needed")]);
    local.serve_models(&["llama-open"]);
    let dir = TestDir::new("providers-keyless");
    let mut web = start(&deepseek, &dir);
    let base = format!("{}/v1", local.url());
    let found = web.call("provider.discover", &json!({"baseUrl": base}));
    assert_eq!(found["models"], json!(["llama-open"]));
    let saved = web.call("provider.save", &json!({"id": "open", "baseUrl": base}));
    assert_eq!(saved["models"], json!(["llama-open"]));
    let asked = local.model_list_requests();
    assert!(
        !asked.is_empty()
            && asked
                .iter()
                .all(|request| request.header("authorization").is_none()),
        "{asked:?}"
    );
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    assert!(settings.contains("keyRequired: false"), "{settings}");
    let list = web.call("provider.list", &json!({}));
    assert!(list["providers"][0]["apiKey"].is_null(), "{list}");
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": "open/llama-open"}),
    );
    web.prompt(&session, "hello");
    let frames = socket.until(300, turn_ended);
    assert!(
        frames
            .iter()
            .any(|frame| frame.to_string().contains("no key needed")),
        "the answer streamed"
    );
    let sent = local.requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].header("authorization").is_none(), "{:?}", sent[0]);
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_provider_added_in_the_page_offers_its_models_in_the_picker_and_answers() {
    let local = FakeDeepSeek::start(vec![Reply::text("hello from the local model")]);
    local.serve_models(&["qwen-local", "llama-local"]);
    let url = local.url();
    let Some((deepseek, dir)) = crate::browser::scenario_in(
        "providers",
        Vec::new(),
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[
            ("DSH_PROVIDER_URL", url.as_str()),
            ("DSH_PROVIDER_KEY", KEY),
        ],
        &[],
    ) else {
        return;
    };
    let sent = local.requests();
    assert_eq!(sent.len(), 1, "one turn went to the provider");
    assert_eq!(sent[0].body["model"], "qwen-local");
    assert_eq!(
        sent[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert!(deepseek.requests().is_empty(), "DeepSeek was not asked");
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    // Removed at the end of the scenario: neither the entry nor its key is left.
    assert!(
        !settings.contains("provider: local") && !settings.contains(KEY),
        "{settings}"
    );
    let credentials = std::fs::read_to_string(dir.home().join("credentials.json")).unwrap();
    assert!(!credentials.contains(KEY), "{credentials}");
}

#[test]
fn a_row_the_page_runs_on_or_one_the_tree_lacks_is_not_switched_from_the_page() {
    let server = FakeDeepSeek::start(Vec::new());
    let dir = TestDir::new("row-switch-refused");
    let web = start(&server, &dir);
    for (row, needle) in [
        ("web", "serves this page"),
        ("clients", "serves this page"),
        ("http", "serves this page"),
        ("no-such-row", "no row `no-such-row` in the tree"),
    ] {
        let refused = web.try_call("host.setRowEnabled", &json!({"row": row, "enabled": false}));
        assert_eq!(
            refused["error"]["code"], "settings-rejected",
            "{row}: {refused}"
        );
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{row}: {message}");
    }
    // Nothing was written, and every row still runs.
    assert!(!dir.home().join("settings.yaml").exists());
    let listed = web.call("host.plugins", &json!({}));
    let row_named = |name: &str| {
        listed["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["row"] == name)
            .cloned()
    };
    assert_eq!(row_named("web").unwrap()["state"], "ACTIVE", "{listed}");
    // The listing says which rows a client may switch: not those its door runs on.
    let switchable = |name: &str| row_named(name).map(|row| row["switchable"].clone());
    assert_eq!(switchable("web"), Some(json!(false)), "{listed}");
    assert_eq!(switchable("clients"), Some(json!(false)), "{listed}");
    assert_eq!(switchable("session-title"), Some(json!(true)), "{listed}");
}

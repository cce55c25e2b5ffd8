//! Choosing any model of a configured provider, through the web profile against the fake
//! DeepSeek server: the adapter lists the models its endpoint serves (`GET /models`, with the
//! chat requests' key) beside the configured ones, at start and again when the key or the
//! endpoint changes; a session may switch to any model id of a served provider, listed or not,
//! and its next request carries that id; a provider no adapter serves is refused by name; and
//! an endpoint without `/models` keeps the configured catalog, warns once, and still answers.

use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, OFFICIAL_MODELS, Reply};
use dsh_tests::web::{Web, WebHost, fake_model_layer, start, turn_ended};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// The routes `session.models` lists.
fn routes(web: &Web) -> Vec<String> {
    web.call("session.models", &json!({}))["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["route"].as_str().unwrap().to_owned())
        .collect()
}

/// Asks `session.models` until it lists `route` (discovery runs beside the host); the listing.
fn wait_listed(web: &Web, route: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let listed = web.call("session.models", &json!({}));
        let found = listed["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|model| model["route"] == route);
        if found {
            return listed;
        }
        assert!(Instant::now() < deadline, "{route} never listed: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn discovered_models_are_listed_and_any_id_of_a_served_provider_can_be_chosen() {
    let server = FakeDeepSeek::start(vec![Reply::text("from an unlisted model")]);
    server.serve_models(&["deepseek-v4-pro", "qwen2.5-coder:7b"]);
    let dir = TestDir::new("model-discovery");
    let mut web = start(&server, &dir);
    let listed = wait_listed(&web, "deepseek-official/qwen2.5-coder:7b");
    let models = listed["models"].as_array().unwrap();
    let entry = |route: &str| {
        models
            .iter()
            .find(|model| model["route"] == route)
            .unwrap_or_else(|| panic!("no {route} in {listed}"))
            .clone()
    };
    // Known models keep their names and windows, and stay listed; a discovered one is its id.
    let flash = entry("deepseek-official/deepseek-v4-flash");
    assert_eq!(flash["label"], "DeepSeek-V4-Flash", "{flash}");
    assert_eq!(flash["contextWindow"], 1_000_000, "{flash}");
    assert_eq!(
        entry("deepseek-official/deepseek-v4-pro")["label"],
        "DeepSeek-V4-Pro"
    );
    let qwen = entry("deepseek-official/qwen2.5-coder:7b");
    assert_eq!(qwen["label"], "qwen2.5-coder:7b", "{qwen}");
    assert_eq!(models.len(), 3, "{listed}");
    // Asked once, with the chat requests' key, at the configured endpoint.
    let asked = server.model_list_requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("GET", "/models")
    );
    assert_eq!(asked[0].header("authorization"), Some("Bearer sk-test"));

    // A model no list names is taken for a served provider, and the next request carries it.
    let (session, mut socket) = web.followed_session();
    let unlisted = "deepseek-official/qwen3:32b-instruct";
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": unlisted}),
    );
    let now = web.call("session.models", &json!({"sessionId": session}));
    assert_eq!(now["current"], unlisted, "{now}");
    web.prompt(&session, "hello");
    socket.until(300, turn_ended);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "qwen3:32b-instruct");

    // A provider no adapter serves is refused, naming it; so is a route without a model.
    let refused = web.try_call(
        "session.selectModel",
        &json!({"sessionId": session, "model": "nowhere/qwen2.5-coder:7b"}),
    );
    assert_eq!(refused["error"]["code"], "model-unavailable", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("`nowhere`"), "{message}");
    assert!(message.contains("deepseek-official"), "{message}");
    let blank = web.try_call(
        "session.selectModel",
        &json!({"sessionId": session, "model": "deepseek-official/ "}),
    );
    assert_eq!(blank["error"]["code"], "bad-request", "{blank}");
    // The same rule for `/model`.
    let command = web.prompt(&session, "/model deepseek-official/llama3.1:8b");
    assert_eq!(command["command"]["kind"], "success", "{command}");
    let command = web.prompt(&session, "/model nowhere/llama3.1:8b");
    assert_eq!(command["command"]["kind"], "error", "{command}");
    assert!(
        command["command"]["text"]
            .as_str()
            .unwrap()
            .contains("`nowhere`"),
        "{command}"
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn an_endpoint_without_a_model_list_keeps_the_configured_catalog_and_answers() {
    let server = FakeDeepSeek::start(vec![Reply::text("still here")]);
    server.without_models();
    let dir = TestDir::new("model-discovery-404");
    let mut web = start(&server, &dir);
    let warning = web.host.wait_stderr("model discovery at", WAIT);
    assert!(
        warning.contains(&format!("{}/models", server.url())) && warning.contains("404"),
        "{warning}"
    );
    let expected: Vec<String> = OFFICIAL_MODELS
        .iter()
        .map(|id| format!("deepseek-official/{id}"))
        .collect();
    assert_eq!(routes(&web), expected);
    // The host is up and a turn goes through as before.
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "hello");
    socket.until(300, turn_ended);
    assert_eq!(server.requests()[0].body["model"], "deepseek-v4-flash");
    assert_eq!(server.model_list_requests().len(), 1, "asked once");
    let warnings = web
        .host
        .stderr()
        .iter()
        .filter(|line| line.contains("model discovery at"))
        .count();
    assert_eq!(warnings, 1, "one warning");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_key_set_later_and_a_new_endpoint_are_discovered_again() {
    let first = FakeDeepSeek::start(Vec::new());
    first.serve_models(&["first-model"]);
    let second = FakeDeepSeek::start(Vec::new());
    second.serve_models(&["second-model"]);
    let dir = TestDir::new("model-discovery-changes");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let mut web = Web::from(WebHost::start(
        &dir,
        &fake_model_layer(&first.url(), ""),
        &[],
        &[("DEEPSEEK_API_KEY", "")],
    ));
    // Without a key no chat request could be sent, so nothing is asked.
    assert!(!routes(&web).contains(&"deepseek-official/first-model".to_owned()));
    assert!(first.model_list_requests().is_empty());
    web.call(
        "credentials.set",
        &json!({"name": "DEEPSEEK_API_KEY", "value": "sk-stored"}),
    );
    wait_listed(&web, "deepseek-official/first-model");
    let asked = first.model_list_requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].header("authorization"), Some("Bearer sk-stored"));
    // A new endpoint remounts the adapter, which asks it.
    web.call("settings.update", &json!({"baseUrl": second.url()}));
    let listed = wait_listed(&web, "deepseek-official/second-model");
    assert!(
        !listed.to_string().contains("first-model"),
        "the old endpoint's list is gone: {listed}"
    );
    assert_eq!(
        second.model_list_requests()[0].header("authorization"),
        Some("Bearer sk-stored")
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn an_endpoint_that_never_answers_the_list_is_given_up_on_without_holding_anything() {
    // A loopback endpoint that takes the connection and never says a word.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline && held.is_empty() {
            match listener.accept() {
                Ok((stream, _)) => held.push(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        // Held until the host gave up (or the test ended).
        std::thread::sleep(Duration::from_secs(8));
        held.len()
    });
    let dir = TestDir::new("model-discovery-silent");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let mut web = Web::from(WebHost::start(
        &dir,
        &fake_model_layer(&url, ""),
        &[],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ));
    // The catalog is answered at once meanwhile: nothing waits for the list.
    let started = Instant::now();
    let expected: Vec<String> = OFFICIAL_MODELS
        .iter()
        .map(|id| format!("deepseek-official/{id}"))
        .collect();
    assert_eq!(routes(&web), expected);
    assert!(started.elapsed() < Duration::from_secs(2));
    let warning = web.host.wait_stderr("model discovery at", WAIT);
    assert!(
        warning.contains(&format!("{url}/models")) && warning.contains("no answer within 5000 ms"),
        "{warning}"
    );
    assert_eq!(routes(&web), expected);
    assert_eq!(web.host.stop(), Some(0));
    assert_eq!(silent.join().unwrap(), 1, "the endpoint was asked");
}

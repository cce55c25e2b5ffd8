//! `dsh-host --profile web` over raw HTTP on loopback: the launch line, the guards in front of
//! every route (token sign-in, cookie or bearer, Host allow-list, JSON only, CSRF, the
//! WebSocket Origin, wrong tokens that never lock the person out), the security headers, and
//! the first methods.

use dsh_tests::http::{Response, envelope, send};
use dsh_tests::recorded::{DEMO_TASK, demo_log};
use dsh_tests::web::{WebHost, fake_model_layer};
use dsh_tests::{HostProcess, TestDir, WAIT, run_host_with_env};
use serde_json::{Value, json};

/// A running web profile: the host, its address and the token of its launch line.
struct Web {
    host: HostProcess,
    address: String,
    token: String,
}

fn start_web(dir: &TestDir, extra: &[&str]) -> Web {
    web_of(WebHost::start(dir, "", extra, &[("DEEPSEEK_API_KEY", "")]))
}

fn web_of(web: WebHost) -> Web {
    Web {
        host: web.host,
        address: web.address,
        token: web.token,
    }
}

impl Web {
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        send(&self.address, "GET", path, headers, "")
    }

    /// Signs in with the token: answers the cookie header and the page's CSRF token.
    fn sign_in(&self) -> (String, String) {
        let signed = self.get(&format!("/auth?token={}", self.token), &[]);
        assert_eq!(signed.status, 303, "{signed:?}");
        let set = signed.header("set-cookie").expect("a cookie").to_owned();
        let port = self.address.rsplit_once(':').unwrap().1;
        assert!(set.starts_with(&format!("dsh_auth_{port}=")), "{set}");
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        let cookie = set.split(';').next().unwrap().to_owned();
        let page = self.get("/", &[("Cookie", &cookie)]);
        assert_eq!(page.status, 200, "{page:?}");
        let csrf = page
            .body
            .split("\"csrf\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("boot data with a CSRF token")
            .to_owned();
        (cookie, csrf)
    }

    fn call(&self, method: &str, headers: &[(&str, &str)]) -> Response {
        send(
            &self.address,
            "POST",
            &format!("/api/{method}"),
            headers,
            &envelope(method, &json!({})),
        )
    }
}

#[test]
fn the_launch_prints_one_url_and_nothing_is_served_before_sign_in() {
    let dir = TestDir::new("web-launch");
    let mut web = start_web(&dir, &[]);
    let page = web.get("/", &[]);
    assert_eq!(page.status, 401);
    assert!(page.body.contains("/auth?token="), "{}", page.body);
    assert!(
        !page.body.contains(&web.token),
        "the token leaked into a page"
    );
    let api = web.call("host.describe", &[("Content-Type", "application/json")]);
    assert_eq!(api.status, 401, "{api:?}");
    // Every response, refusals included, carries the security headers.
    for response in [&page, &api] {
        let csp = response
            .header("content-security-policy")
            .unwrap_or_default();
        assert!(csp.contains("default-src 'self'"), "{response:?}");
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
        assert!(response.header("access-control-allow-origin").is_none());
    }
    // The app's files are kept by the browser but revalidated on every use: a page opened
    // again gets 304s (and reuses its compiled modules); the page and the API are never kept.
    let script = web.get("/assets/app.js", &[]);
    assert_eq!(script.status, 200);
    assert_eq!(script.header("cache-control"), Some("no-cache"));
    let etag = script.header("etag").expect("an entity tag").to_owned();
    let again = web.get("/assets/app.js", &[("If-None-Match", &etag)]);
    assert_eq!((again.status, again.body.as_str()), (304, ""), "{again:?}");
    let other = web.get("/assets/core.js", &[("If-None-Match", &etag)]);
    assert_eq!(other.status, 200, "another file's tag does not match");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    // The signed-in page names its files under its build's version, which are kept for good:
    // a page opened again asks nothing for its modules. Another build's version (a tab opened
    // before a reload) gets the current file, revalidated.
    let (cookie, _) = web.sign_in();
    let app = web.get("/", &[("Cookie", &cookie)]);
    let versioned = app
        .body
        .split('"')
        .find(|part| part.starts_with("/assets/") && part.ends_with("/app.js"))
        .unwrap_or_else(|| panic!("no versioned app.js in {}", app.body))
        .to_owned();
    assert_ne!(versioned, "/assets/app.js");
    let kept = web.get(&versioned, &[]);
    assert_eq!(
        (kept.status, kept.body.as_str()),
        (200, script.body.as_str())
    );
    assert_eq!(
        kept.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    let core = versioned.replace("/app.js", "/core.js");
    assert_eq!(web.get(&core, &[]).status, 200, "{core}");
    let stale = web.get("/assets/00000000000000ff/app.js", &[]);
    assert_eq!(
        (stale.status, stale.header("cache-control")),
        (200, Some("no-cache"))
    );
    assert_eq!(web.host.stop(), Some(0));
    let logged = web.host.stderr().join("\n");
    assert!(!logged.contains(&web.token), "the token reached a log");
}

#[test]
fn a_signed_in_page_calls_the_api_with_its_csrf_header_and_a_script_with_its_bearer() {
    let dir = TestDir::new("web-calls");
    let mut web = start_web(&dir, &[]);
    let (cookie, csrf) = web.sign_in();
    let json = ("Content-Type", "application/json");
    let described = web.call(
        "host.describe",
        &[("Cookie", &cookie), json, ("X-Dsh-Csrf", &csrf)],
    );
    assert_eq!(described.status, 200, "{described:?}");
    let body = described.json();
    assert_eq!(body["type"], "server-response");
    assert_eq!(body["rpcId"], "t1");
    assert_eq!(body["result"]["ok"], true, "{body}");
    assert_eq!(body["result"]["value"]["profile"], "web");
    assert!(
        body["result"]["value"]["providers"]
            .as_array()
            .unwrap()
            .contains(&json!("deepseek-official")),
        "{body}"
    );
    // The cookie alone is not enough for a call: a page on another origin could send it.
    let no_csrf = web.call("host.describe", &[("Cookie", &cookie), json]);
    assert_eq!(no_csrf.status, 403, "{no_csrf:?}");
    let text = web.call(
        "host.describe",
        &[
            ("Cookie", &cookie),
            ("Content-Type", "text/plain"),
            ("X-Dsh-Csrf", &csrf),
        ],
    );
    assert_eq!(text.status, 415, "{text:?}");
    // A page served from another loopback port is another origin, even holding the cookie and
    // the CSRF token.
    let cross = web.call(
        "host.describe",
        &[
            ("Cookie", &cookie),
            json,
            ("X-Dsh-Csrf", &csrf),
            ("Origin", "http://127.0.0.1:1"),
        ],
    );
    assert_eq!(cross.status, 403, "{cross:?}");
    let bearer = format!("Bearer {}", web.token);
    let script = web.call("host.describe", &[("Authorization", &bearer), json]);
    assert_eq!(script.status, 200, "{script:?}");
    let wrong = web.call("host.describe", &[("Authorization", "Bearer 00"), json]);
    assert_eq!(wrong.status, 401);
    // A method that does not exist is a coded error inside a working carrier, told apart from
    // params that do not fit.
    let unknown = web.call("session.nothing", &[("Authorization", &bearer), json]);
    assert_eq!(unknown.status, 200);
    assert_eq!(
        unknown.json()["result"]["error"]["code"],
        "method-not-found"
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_spoofed_host_a_foreign_origin_and_guessed_tokens_are_refused() {
    let dir = TestDir::new("web-guards");
    let mut web = start_web(&dir, &[]);
    let (cookie, _) = web.sign_in();
    // The advisory's attack: the right credentials are not enough under another Host.
    let spoofed = web.get("/", &[("Host", "attacker.example"), ("Cookie", &cookie)]);
    assert_eq!(spoofed.status, 421, "{spoofed:?}");
    let upgrade = |origin: &str| {
        web.get(
            "/api/events",
            &[
                ("Cookie", &cookie),
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Origin", origin),
            ],
        )
    };
    let foreign = upgrade("http://127.0.0.1:1");
    assert_eq!(foreign.status, 403, "{foreign:?}");
    // Any local process can send wrong tokens (all as the one loopback peer): they are
    // refused, and the person's token still signs in at once.
    for _ in 0..50 {
        assert_eq!(web.get("/auth?token=guess", &[]).status, 401);
    }
    let signed = web.get(&format!("/auth?token={}", web.token), &[]);
    assert_eq!(signed.status, 303, "{signed:?}");
    assert!(signed.header("set-cookie").is_some(), "{signed:?}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn beyond_loopback_the_server_refuses_to_start_without_an_access_secret() {
    let dir = TestDir::new("web-remote");
    let out = run_host_with_env(
        &dir.home(),
        &[
            "--profile",
            "web",
            "--",
            "--no-open",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        &[("DSH_ACCESS_SECRET", "short")],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("DSH_ACCESS_SECRET"), "{}", out.stderr);
    assert!(!out.stdout.contains("http://"), "it served: {}", out.stdout);
}

#[test]
fn a_taken_port_moves_to_the_next_and_says_so_unless_the_port_was_asked_for() {
    let blocker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = blocker.local_addr().unwrap().port().to_string();
    let dir = TestDir::new("web-port");
    let out = run_host_with_env(
        &dir.home(),
        &["--profile", "web", "--", "--no-open", "--port", &taken],
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(&format!("127.0.0.1:{taken}")) && out.stderr.contains("taken"),
        "{}",
        out.stderr
    );
    let usage = run_host_with_env(
        &dir.home(),
        &["--profile", "web", "--", "--port", "web"],
        &[],
    );
    assert_eq!(usage.code, Some(2), "{usage:?}");
    assert!(
        usage.stderr.contains("--port: `web` is not a port number"),
        "{}",
        usage.stderr
    );
}

#[test]
fn sessions_recorded_headless_are_listed_newest_first() {
    let dir = TestDir::new("web-sessions");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let demo = demo_log();
    for _ in 0..2 {
        let out = run_host_with_env(
            &dir.home(),
            &[
                "--profile",
                "headless",
                "--",
                "--cwd",
                work.to_str().unwrap(),
                "--replay",
                demo.to_str().unwrap(),
                DEMO_TASK,
            ],
            &[("DEEPSEEK_API_KEY", "")],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    // Logs written before the store kept listing files: read once, then kept.
    let mut removed = 0;
    let mut folders = vec![dir.home()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                folders.push(entry.path());
            } else if entry.file_name() == dsh_session_jsonl::LISTING_FILE {
                std::fs::remove_file(entry.path()).unwrap();
                removed += 1;
            }
        }
    }
    assert_eq!(removed, 2, "the store keeps one listing file per session");
    let mut web = start_web(&dir, &[]);
    let bearer = format!("Bearer {}", web.token);
    let listed = web.call(
        "session.list",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
    );
    let value: Value = listed.json()["result"]["value"].clone();
    let sessions = value["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "{value}");
    assert!(
        sessions.iter().all(|s| s["cwd"] == work.to_str().unwrap()),
        "{value}"
    );
    assert!(sessions[1]["activeAt"].as_i64().is_some(), "{value}");
    assert!(sessions[0]["activeAt"].as_i64() >= sessions[1]["activeAt"].as_i64());
    // Titled from the store's title file, without the logs being read; the task goes on past
    // the title's words, so the title says it was cut.
    assert!(
        sessions
            .iter()
            .all(|s| s["title"] == "What is 6 times 7?…" && s["live"] == false),
        "{value}"
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// A key set through the API is stored for its owner only, never answered back, and used by
/// the next request; removing it leaves the environment (here: none).
#[test]
fn a_key_set_through_the_settings_is_stored_privately_and_used_at_once() {
    use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
    let server = FakeDeepSeek::start(vec![Reply::text("with the stored key")]);
    let dir = TestDir::new("web-credentials");
    let started = WebHost::start(
        &dir,
        &fake_model_layer(&server.url(), ""),
        &[],
        &[("DEEPSEEK_API_KEY", "")],
    );
    let mut web = Web {
        host: started.host,
        address: started.address,
        token: started.token,
    };
    let bearer = format!("Bearer {}", web.token);
    let call = |method: &str, payload: Value| {
        let response = send(
            &web.address,
            "POST",
            &format!("/api/{method}"),
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            &envelope(method, &payload),
        );
        response.json()["result"].clone()
    };
    let before = call("host.describe", json!({}));
    assert!(before["value"].get("defaultModel").is_none(), "{before}");
    let rejected = call(
        "credentials.set",
        json!({"name": "DEEPSEEK_API_KEY", "value": "has spaces"}),
    );
    assert_eq!(
        rejected["error"]["code"], "credential-rejected",
        "{rejected}"
    );
    let set = call(
        "credentials.set",
        json!({"name": "DEEPSEEK_API_KEY", "value": "sk-stored"}),
    );
    assert_eq!(set["ok"], true, "{set}");
    let file = dir.home().join("credentials.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let described = call("credentials.describe", json!({}));
    assert!(
        !described.to_string().contains("sk-stored"),
        "a value was answered: {described}"
    );
    assert_eq!(
        described["value"]["credentials"][0]["stored"], true,
        "{described}"
    );
    let after = call("host.describe", json!({}));
    assert_eq!(
        after["value"]["defaultModel"],
        "deepseek-official/deepseek-v4-flash"
    );
    let session = call("session.create", json!({}))["value"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        "session.prompt",
        json!({"sessionId": session, "text": "hello"}),
    );
    let requests = server.wait_requests(1, WAIT);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-stored")
    );
    let removed = call("credentials.unset", json!({"name": "DEEPSEEK_API_KEY"}));
    assert_eq!(removed["value"]["removed"], true);
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("sk-stored")
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// [`start_web`] on `port` (`0`: any free one).
fn launch_on(dir: &TestDir, port: &str) -> Web {
    web_of(WebHost::start_on(
        dir,
        "",
        port,
        &[],
        &[("DEEPSEEK_API_KEY", "")],
    ))
}

#[test]
fn a_restart_on_the_same_port_keeps_the_sign_in_and_a_replaced_secret_signs_pages_out() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TestDir::new("web-restart");
    let mut first = launch_on(&dir, "0");
    let (cookie, _) = first.sign_in();
    let port = first.address.rsplit_once(':').unwrap().1.to_owned();
    assert_eq!(first.host.stop(), Some(0));
    let kept = dir.home().join("web-secret.json");
    let mode = std::fs::metadata(&kept)
        .expect("the kept sign-in")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "only its owner reads the kept sign-in");
    // The same link and the same cookie work for the next launch; a new CSRF token comes with
    // the page, which reloads on the new boot id.
    let mut second = launch_on(&dir, &port);
    assert_eq!(second.token, first.token, "the printed link is unchanged");
    let page = second.get("/", &[("Cookie", &cookie)]);
    assert_eq!(
        page.status, 200,
        "the signed-in page stays signed in: {page:?}"
    );
    let csrf = page
        .body
        .split("\"csrf\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("boot data with a CSRF token")
        .to_owned();
    let json = ("Content-Type", "application/json");
    let described = second.call(
        "host.describe",
        &[("Cookie", &cookie), json, ("X-Dsh-Csrf", &csrf)],
    );
    assert_eq!(described.status, 200, "{described:?}");
    assert_eq!(second.host.stop(), Some(0));
    // A kept sign-in others could read is not trusted: the next launch draws new secrets, so
    // the old cookie is refused (the page then says how to sign in again).
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut third = launch_on(&dir, &port);
    assert_ne!(third.token, first.token, "an exposed sign-in is replaced");
    let refused = third.call(
        "host.describe",
        &[("Cookie", &cookie), json, ("X-Dsh-Csrf", &csrf)],
    );
    assert_eq!(refused.status, 401, "{refused:?}");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the replacement is owner-only again");
    assert_eq!(third.host.stop(), Some(0));
}

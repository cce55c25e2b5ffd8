//! `web_fetch` and `web_search` through the real `dsh-host` (headless, the fake DeepSeek
//! server as the model) against loopback fixture servers started here: a page comes back as
//! Markdown; redirects are followed within the origin and the hop budget; a redirect loop, a
//! slow answer, a 10 GB answer, an endless stream and a binary answer each get a result that
//! says so, within the call's deadline; loopback is refused unless `allowPrivate` lets it
//! through; a deny rule on a domain holds before any request; SearXNG's JSON API and DeepSeek's
//! search route answer `web_search`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use serde_json::{Value, json};

/// The page of the reference's recorded `web-fetch` case.
pub(crate) const MENU: &str = "<!doctype html>\n<html><head><title>Menu</title><style>.x{color:red}</style><script>ignored()</script></head>\n<body>\n<h1>Caf&eacute; menu</h1>\n<p>Prices include <strong>service &amp; <em>tax</em></strong> &mdash; updated daily.</p>\n<ul><li>Espresso</li><li>Flat white</li></ul>\n<table><thead><tr><th>Drink</th><th>Price</th></tr></thead><tbody><tr><td>Espresso</td><td>&euro;2</td></tr><tr><td>Flat white</td><td>&euro;3</td></tr></tbody></table>\n<p>See <a href=\"https://fixture.invalid/specials\">today&rsquo;s specials</a>.</p>\n</body></html>\n";

/// What the reference's `web_fetch` gave for [`MENU`].
const MENU_MD: &str = "Menu\n\n# Café menu\n\nPrices include **service & _tax_** — updated daily.\n\n-   Espresso\n-   Flat white\n\n| Drink | Price |\n| --- | --- |\n| Espresso | €2  |\n| Flat white | €3  |\n\nSee [today’s specials](https://fixture.invalid/specials).";

/// One request the fixture saw: method, path (with its query), headers, body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

/// A loopback HTTP/1.1 server with the fixture routes; stops when dropped.
pub(crate) struct Fixture {
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Fixture {
    /// On an ephemeral port.
    pub(crate) fn start() -> Self {
        Self::on(0)
    }

    /// On `port` (0: any).
    pub(crate) fn on(port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, halt) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                std::thread::spawn(move || serve(stream, port, &log));
            }
        });
        Self { port, seen, stop }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut stream: TcpStream, port: u16, log: &Mutex<Vec<Seen>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let body = String::from_utf8_lossy(&body).into_owned();
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        headers,
        body: body.clone(),
    });
    let route = path.split('?').next().unwrap_or_default();
    let answer = |stream: &mut TcpStream, status: &str, head: &str, body: &[u8]| {
        let text = format!(
            "HTTP/1.1 {status}\r\n{head}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(text.as_bytes());
        let _ = stream.write_all(body);
    };
    match route {
        "/menu.html" | "/page.html" => answer(
            &mut stream,
            "200 OK",
            "Content-Type: text/html; charset=utf-8\r\n",
            MENU.as_bytes(),
        ),
        "/notes.txt" => answer(
            &mut stream,
            "404 Not Found",
            "Content-Type: text/plain\r\n",
            b"no notes here",
        ),
        "/loop" => answer(&mut stream, "302 Found", "Location: /loop\r\n", b""),
        "/elsewhere" => {
            let head = format!("Location: http://localhost:{port}/page.html\r\n");
            answer(&mut stream, "301 Moved Permanently", &head, b"");
        }
        hop if hop.starts_with("/hop/") => {
            let n: u32 = hop[5..].parse().unwrap_or(0);
            let next = match n {
                0 => "/page.html".to_owned(),
                n => format!("/hop/{}", n - 1),
            };
            answer(
                &mut stream,
                "307 Temporary Redirect",
                &format!("Location: {next}\r\n"),
                b"",
            );
        }
        "/slow" => {
            // Longer than the row's deadline; the client has gone by then.
            std::thread::sleep(Duration::from_secs(6));
            answer(
                &mut stream,
                "200 OK",
                "Content-Type: text/plain\r\n",
                b"late",
            );
        }
        "/huge" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10737418240\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&[b'x'; 65536]);
        }
        "/stream" => {
            // No length: 64 KiB chunks until the reader stops (at most 16 MiB).
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let chunk = [b'y'; 65536];
            for _ in 0..256 {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
            }
        }
        "/image.png" => answer(
            &mut stream,
            "200 OK",
            "Content-Type: image/png\r\n",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01",
        ),
        "/mislabelled" => answer(
            &mut stream,
            "200 OK",
            "Content-Type: text/plain\r\n",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0",
        ),
        "/search" => {
            let query = path.split_once("q=").map_or("", |(_, rest)| rest);
            let query = query.split('&').next().unwrap_or_default();
            let results = json!({
                "query": query,
                "answers": [],
                "results": [
                    {"url": format!("https://{query}.example/one"), "title": format!("{query} one"), "content": format!("about {query}")},
                    {"url": "https://shared.example/", "title": "Shared", "publishedDate": "2026-11-30"},
                    {"url": format!("https://{query}.example/two"), "title": format!("{query} two")}
                ]
            });
            answer(
                &mut stream,
                "200 OK",
                "Content-Type: application/json\r\n",
                results.to_string().as_bytes(),
            );
        }
        "/anthropic/messages" => {
            let results = json!({"content": [
                {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}},
                {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [
                    {"type": "web_search_result", "url": "https://docs.example/a", "title": "Docs A", "page_age": "2 days ago"},
                    {"type": "web_search_result", "url": "https://docs.example/b", "title": "Docs B"}
                ]},
                {"type": "text", "text": "See A.", "citations": [{"url": "https://docs.example/a", "cited_text": "A says so"}]}
            ]});
            answer(
                &mut stream,
                "200 OK",
                "Content-Type: application/json\r\n",
                results.to_string().as_bytes(),
            );
        }
        _ => answer(
            &mut stream,
            "404 Not Found",
            "Content-Type: text/plain\r\n",
            b"not found",
        ),
    }
}

/// The `tool-web` row's config lines (at four spaces) as a patch entry.
fn row(lines: &str) -> String {
    format!("- id: tool-web\n  config:\n{lines}")
}

fn fetch(url: &str) -> Value {
    json!({"url": url})
}

#[test]
fn pages_come_back_as_markdown_and_bad_answers_say_what_they_are() {
    let site = Fixture::start();
    let calls = [
        fetch(&site.url("/page.html")),
        fetch(&site.url("/hop/3")),
        fetch(&site.url("/notes.txt")),
        fetch(&site.url("/loop")),
        fetch(&site.url("/elsewhere")),
        fetch(&site.url("/slow")),
        fetch(&site.url("/huge")),
        fetch(&site.url("/stream")),
        fetch(&site.url("/image.png")),
        fetch(&site.url("/mislabelled")),
        fetch("file:///etc/passwd"),
    ];
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        calls.iter().map(|call| ("web_fetch", call)),
        "done",
    ));
    let dir = TestDir::new("web-fetch-answers");
    let rows = row(
        "    allowPrivate: [127.0.0.1]\n    fetchTimeoutMs: 1500\n    maxResponseBytes: 300000\n    maxBodyChars: 20000\n    maxRedirects: 5\n",
    );
    let started = Instant::now();
    let out = against_patched(&server, &dir, &rows, &["read the pages"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a slow server must not hold the run: {:?}",
        started.elapsed()
    );
    let texts = server.last_tool_texts();
    assert_eq!(texts.len(), calls.len(), "{texts:#?}");
    assert_eq!(
        texts[0],
        format!("Fetched {} (HTTP 200)\n\n{MENU_MD}", site.url("/page.html"))
    );
    assert_eq!(
        texts[1],
        format!("Fetched {} (HTTP 200)\n\n{MENU_MD}", site.url("/page.html")),
        "three same-origin hops are followed to the page"
    );
    assert_eq!(
        texts[2],
        format!(
            "Fetched {} (HTTP 404)\n\nno notes here",
            site.url("/notes.txt")
        ),
        "a 404 is reported, not an error"
    );
    let expect = [
        (3, "redirected more than 5 times"),
        (4, "redirects to another origin"),
        (5, "timed out after 1500 ms"),
        (6, "10737418240 bytes, over the limit of 300000 bytes"),
        (8, "`image/png`, a binary type"),
        (9, "binary data"),
        (10, "the scheme `file` is not fetched"),
    ];
    for (index, fragment) in expect {
        assert!(
            texts[index].starts_with("Error: ") && texts[index].contains(fragment),
            "call {index}: {}",
            texts[index]
        );
    }
    assert!(
        texts[7].starts_with(&format!(
            "Fetched {} (HTTP 200)\n\nyyyy",
            site.url("/stream")
        )) && texts[7].ends_with(
            "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)"
        ) && texts[7].len() < 21_000,
        "an endless body is cut at the caps: {} chars",
        texts[7].len()
    );
    // The loop was followed 5 times and then left; the other origin was never asked.
    let seen = site.seen();
    assert_eq!(seen.iter().filter(|seen| seen.path == "/loop").count(), 6);
    assert!(seen.iter().all(|seen| {
        !seen
            .headers
            .iter()
            .any(|(name, value)| name == "host" && value.starts_with("localhost"))
    }));
}

#[test]
fn loopback_is_refused_unless_allowed_and_a_domain_rule_holds() {
    let site = Fixture::start();
    let port = site.port;
    let calls = [
        fetch(&site.url("/page.html")),
        fetch(&format!("http://localhost:{port}/page.html")),
        fetch(&format!("http://[::ffff:127.0.0.1]:{port}/page.html")),
    ];
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        calls.iter().map(|call| ("web_fetch", call)),
        "done",
    ));
    let dir = TestDir::new("web-fetch-private");
    let out = against_patched(&server, &dir, "", &["read it"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    for text in &texts {
        assert!(
            text.starts_with("Error: refused: ") && text.contains("a loopback address"),
            "{text}"
        );
    }
    assert!(site.seen().is_empty(), "nothing reached the server");

    // Allowed through, but the user's rule denies the host `localhost`: that call never leaves.
    let dir = TestDir::new("web-fetch-domain-rule");
    dir.write(
        "home/settings.yaml",
        "permissions:\n  deny: [\"web_fetch(domain:localhost)\"]\n",
    );
    let calls = [
        fetch(&format!("http://localhost:{port}/page.html?denied")),
        fetch(&site.url("/page.html?allowed")),
    ];
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        calls.iter().map(|call| ("web_fetch", call)),
        "done",
    ));
    let rows = row("    allowPrivate: [127.0.0.1, localhost]\n");
    let out = against_patched(&server, &dir, &rows, &["read it"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    assert!(
        texts[0].contains("denied by the rule `web_fetch(domain:localhost)`"),
        "{}",
        texts[0]
    );
    assert!(texts[1].starts_with("Fetched "), "{}", texts[1]);
    let paths: Vec<String> = site.seen().into_iter().map(|seen| seen.path).collect();
    assert_eq!(paths, ["/page.html?allowed"]);

    // Allowed by range, not by name: the name is resolved and judged, and the request goes to
    // the addresses judged (pinned: not resolved again), still naming the host.
    let site = Fixture::start();
    let port = site.port;
    let dir = TestDir::new("web-fetch-pinned");
    let call = fetch(&format!("http://localhost:{port}/page.html?pinned"));
    let server = FakeDeepSeek::start(Reply::one_call_per_step([("web_fetch", &call)], "done"));
    let rows = row("    allowPrivate: [127.0.0.0/8, \"::1/128\"]\n");
    let out = against_patched(&server, &dir, &rows, &["read it"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    assert!(texts[0].starts_with("Fetched "), "{}", texts[0]);
    let seen = site.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/page.html?pinned");
    let host = seen[0]
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.clone());
    assert_eq!(host, Some(format!("localhost:{port}")));
}

#[test]
fn web_search_asks_searxng_or_deepseeks_search_route() {
    let site = Fixture::start();
    let search = json!({"queries": ["rust", "tokio", "rust"]});
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        [
            ("web_search", &search),
            ("web_search", &json!({"queries": []})),
        ],
        "done",
    ));
    let dir = TestDir::new("web-search-searxng");
    let rows = row(&format!(
        "    searchMaxResults: 4\n    searchProvider:\n      kind: searxng\n      baseUrl: {}\n",
        site.url("")
    ));
    let out = against_patched(&server, &dir, &rows, &["look it up"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    assert_eq!(
        texts[0],
        "Sources:\n- [rust one](https://rust.example/one) — about rust\n- [tokio one](https://tokio.example/one) — about tokio\n- [Shared](https://shared.example/) — (2026-11-30)\n- [rust two](https://rust.example/two)\n\n(Showing the first 4 sources. Refine the query for more.)\n\nCite the relevant URLs above as markdown links in your answer."
    );
    assert_eq!(texts[1], "Error: queries must contain at least one query");
    let asked: Vec<String> = site.seen().into_iter().map(|seen| seen.path).collect();
    assert_eq!(asked.len(), 2, "a repeated query is asked once: {asked:?}");
    assert!(
        asked.iter().all(|path| path.contains("format=json")),
        "{asked:?}"
    );
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(
        tools.contains("\"web_search\"") && tools.contains("\"web_fetch\""),
        "{tools}"
    );

    // The default provider: DeepSeek's Anthropic-compatible route, with the key.
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        [("web_search", &json!({"queries": ["docs"]}))],
        "done",
    ));
    let dir = TestDir::new("web-search-deepseek");
    let rows = row(&format!(
        "    searchProvider:\n      kind: deepseek\n      baseUrl: {}\n",
        site.url("/anthropic")
    ));
    let out = against_patched(&server, &dir, &rows, &["look it up"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        server.last_tool_texts()[0],
        "Sources:\n- [Docs A](https://docs.example/a) — A says so (2 days ago)\n- [Docs B](https://docs.example/b)\n\nCite the relevant URLs above as markdown links in your answer."
    );
    let asked = site
        .seen()
        .into_iter()
        .find(|seen| seen.path == "/anthropic/messages")
        .unwrap();
    let key = asked.headers.iter().find(|(name, _)| name == "x-api-key");
    assert_eq!(key.map(|(_, value)| value.as_str()), Some("sk-test"));
    let body: Value = serde_json::from_str(&asked.body).unwrap();
    assert_eq!(body["tools"][0]["type"], "web_search_20250305");
    assert_eq!(
        body["messages"][0]["content"][0]["text"],
        "Perform a web search for the query: docs"
    );
}

#[test]
fn a_bad_row_is_refused_naming_the_field() {
    let server = FakeDeepSeek::start(vec![Reply::text("unused")]);
    let dir = TestDir::new("web-bad-row");
    let rows = row("    allowPrivate: [\"10.0.0.0/40\"]\n");
    let out = against_patched(&server, &dir, &rows, &["hi"], &[]);
    // A row that fails is reported, naming the row and the field; the host goes on without it.
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "invalid config: allowPrivate: entry `10.0.0.0/40`: the prefix length must be 0 to 32 (at $.allowPrivate) row=tool-web"
        ),
        "{}",
        out.stderr
    );
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(!tools.contains("\"web_fetch\""), "{tools}");
}

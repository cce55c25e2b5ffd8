//! Export from the web profile: `/export` in a session, the page's `GET /export` route, and
//! the session menu's Export in Chromium; each archive imports into another home.

use std::io::{Read, Write};

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::http::send;
use dsh_tests::web::{start_in_workspace, turn_ended};
use serde_json::{Value, json};

use super::{entries, files, host};

#[test]
fn export_in_a_web_session_writes_the_archive() {
    let dir = TestDir::new("export-command");
    let server = FakeDeepSeek::start(vec![Reply::text("The codeword is TANGERINE.")]);
    let web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "Remember TANGERINE.");
    socket.until(300, turn_ended);
    let listed = web.call("commands.list", &json!({}));
    assert!(listed.to_string().contains("\"export\""), "{listed}");
    let done = web.prompt(&session, "/export");
    assert_eq!(done["command"]["kind"], "success", "{done}");
    let text = done["command"]["text"].as_str().unwrap().to_owned();
    let default = dir
        .home()
        .join("exports")
        .join(format!("dsh-session-{session}.tar.zst"));
    assert!(text.contains(default.to_str().unwrap()), "{text}");
    assert!(text.contains("1 session(s)"), "{text}");
    let inside = entries(&std::fs::read(&default).unwrap());
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["session"], session.as_str());
    let log = String::from_utf8(inside[1].1.clone()).unwrap();
    // Written after the store flushed: the turn's answer is in it.
    assert!(log.contains("TANGERINE"), "{log}");
    // A file name is taken from the session's folder.
    let named = web.prompt(&session, "/export shared/this.tar.zst");
    assert_eq!(named["command"]["kind"], "success", "{named}");
    assert!(
        files(&dir.join("work"))
            .iter()
            .any(|(path, _)| path.ends_with("shared/this.tar.zst")),
        "{named}"
    );
}

/// `GET path` with `headers`, the response's head as text and its body as bytes.
pub(crate) fn get_bytes(address: &str, path: &str, headers: &[(&str, &str)]) -> (String, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap();
    (
        String::from_utf8_lossy(&raw[..split]).into_owned(),
        raw[split + 4..].to_vec(),
    )
}

#[test]
fn the_page_downloads_a_session_archive() {
    let dir = TestDir::new("export-download");
    let server = FakeDeepSeek::start(vec![Reply::text("The codeword is QUINCE.")]);
    let web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "Remember QUINCE.");
    socket.until(300, turn_ended);
    let path = format!("/export?session={session}");
    let (head, body) = get_bytes(&web.address, &path, &[("Authorization", &web.bearer)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/zstd"), "{head}");
    assert!(
        head.contains(&format!(
            "content-disposition: attachment; filename=\"dsh-session-{session}.tar.zst\""
        )),
        "{head}"
    );
    let inside = entries(&body);
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["session"], session.as_str());
    assert!(String::from_utf8_lossy(&inside[1].1).contains("QUINCE"));
    // The archive loads into another home.
    let file = dir.join("downloaded.tar.zst");
    std::fs::write(&file, &body).unwrap();
    let out = host(
        &dir.join("other-home"),
        &["session", "import", file.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    // Signed in only; an unknown session is not found.
    let anonymous = send(&web.address, "GET", &path, &[], "");
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let unknown = send(
        &web.address,
        "GET",
        "/export?session=00000000-0000-4000-8000-000000000000",
        &[("Authorization", &web.bearer)],
        "",
    );
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert!(unknown.body.contains("no session"), "{}", unknown.body);
}

#[test]
fn the_session_menu_downloads_the_archive_in_chromium() {
    let Some((_, dir)) = crate::browser::scenario_in(
        "export",
        vec![Reply::text("PERSIMMON noted.")],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[],
    ) else {
        return;
    };
    let file = dir.join("work/downloaded.tar.zst");
    let inside = entries(&std::fs::read(&file).unwrap());
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert!(String::from_utf8_lossy(&inside[1].1).contains("PERSIMMON noted."));
    let out = host(
        &dir.join("other-home"),
        &["session", "import", file.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let id = manifest["session"].as_str().unwrap();
    let shown = host(&dir.join("other-home"), &["session", "show", id]);
    assert_eq!(shown.code, Some(0), "{shown:?}");
}

//! The page's session list follows the store: a session another process records under the
//! same home (a headless run in another terminal) reaches every connected page as
//! `host/session-added`, and one deleted by another process as `host/session-removed`.

use dsh_tests::fake_deepseek::FakeDeepSeek;
use dsh_tests::recorded::{DEMO_TASK, demo_log};
use dsh_tests::web::start;
use dsh_tests::{TestDir, run_host_with_env};
use serde_json::json;

#[test]
fn a_session_recorded_by_another_process_appears_in_the_list_live() {
    let server = FakeDeepSeek::start(Vec::new());
    let dir = TestDir::new("web-live-store");
    let mut web = start(&server, &dir);
    let mut socket = web.events();
    // The page's first frame says the socket is attached before the other process runs.
    socket.until(20, |frame| frame["type"] == "heartbeat");
    let work = dir.join("work");
    let demo = demo_log();
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
    let added = socket.until(50, |frame| frame["type"] == "host/session-added");
    let session = &added.last().unwrap()["session"];
    assert_eq!(session["cwd"], work.to_str().unwrap(), "{session}");
    assert_eq!(session["live"], false, "{session}");
    let listed = web.call("session.list", &json!({}));
    assert_eq!(listed["sessions"][0]["id"], session["id"], "{listed}");
    // Deleted by another process (its folder moved out of the store, as a delete does).
    let id = session["id"].as_str().unwrap().to_owned();
    let folder = std::fs::read_dir(dir.home().join("sessions"))
        .unwrap()
        .flatten()
        .flat_map(|project| std::fs::read_dir(project.path()).unwrap().flatten())
        .map(|entry| entry.path())
        .next()
        .expect("the session's folder");
    std::fs::rename(&folder, dir.join("moved-away")).unwrap();
    let removed = socket.until(50, |frame| frame["type"] == "host/session-removed");
    assert_eq!(removed.last().unwrap()["sessionId"], id.as_str());
    assert_eq!(web.host.stop(), Some(0));
}

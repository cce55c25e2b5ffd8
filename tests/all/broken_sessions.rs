//! Sessions that do not read, and ids that are no session ids, through the real host: one bad
//! session is listed as broken (with its reason) beside all the others, in the CLI and the web
//! API, and a planted header id that would climb out of the sessions folder reaches no path.

use std::path::PathBuf;

use dsh_tests::http::{envelope, send};
use dsh_tests::recorded::{DEMO_TASK, demo_log};
use dsh_tests::sessions::{PLAIN_STORE, session_logs};
use dsh_tests::web::WebHost;
use dsh_tests::{TestDir, run_host, run_host_with_env};
use serde_json::{Value, json};

/// One good session (the demo replayed headless in `dir/work`), then two that do not list: a
/// planted one whose header id is `../x`, and a copy of the good one under another folder.
/// Answers the good session's id and the work folder.
fn a_good_session_and_two_broken(dir: &TestDir) -> (String, PathBuf) {
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
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
    let good = session_logs(&dir.home().join("sessions"));
    assert_eq!(good.len(), 1, "{good:?}");
    let project = good[0].parent().unwrap().parent().unwrap().to_path_buf();
    let id = good[0]
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let planted = project.join("..~002Fx");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(
        planted.join("session.jsonl"),
        format!(
            "{}\n",
            json!({"type": "session", "version": 0, "id": "../x", "createdAt": 0,
                   "cwd": work.to_str().unwrap(), "delegationDepth": 0})
        ),
    )
    .unwrap();
    let copy = project.join("copied");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(&good[0], copy.join("session.jsonl")).unwrap();
    (id, work)
}

#[test]
fn the_cli_lists_a_broken_session_beside_the_others() {
    let dir = TestDir::new("cli-broken-sessions");
    let (good, work) = a_good_session_and_two_broken(&dir);
    let out = run_host(&dir.home(), &["session", "list"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains(&format!("{good}  cwd={}", work.display()))
            && out.stdout.contains("turns=1"),
        "{}",
        out.stdout
    );
    let planted = out
        .stdout
        .lines()
        .find(|line| line.starts_with("..~002Fx  "))
        .unwrap_or_else(|| panic!("the planted session is not listed: {}", out.stdout));
    assert!(
        planted.starts_with(&format!("..~002Fx  cwd={}  broken: ", work.display()))
            && planted.contains("\"../x\" is not a session id"),
        "{planted}"
    );
    assert!(
        out.stdout.contains("copied  cwd=") && out.stdout.contains("identifies"),
        "{}",
        out.stdout
    );
    let json = run_host(&dir.home(), &["session", "list", "--json"]);
    let rows: Value = serde_json::from_str(json.stdout.trim()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let good_row = rows.iter().find(|row| row["id"] == good.as_str()).unwrap();
    assert!(good_row.get("broken").is_none(), "{good_row}");
    let broken: Vec<&Value> = rows
        .iter()
        .filter(|row| row["broken"].is_string())
        .collect();
    assert_eq!(broken.len(), 2, "{rows:?}");
    // An id that is no session id is refused before any path is built from it.
    let show = run_host(&dir.home(), &["session", "show", "../x"]);
    assert_eq!(show.code, Some(1), "{show:?}");
    assert!(
        show.stderr.contains("\"../x\" is not a session id"),
        "{}",
        show.stderr
    );
}

#[test]
fn the_web_lists_a_broken_session_and_delete_cannot_move_a_planted_one() {
    let dir = TestDir::new("web-broken-sessions");
    let (good, _) = a_good_session_and_two_broken(&dir);
    let mut web = WebHost::start(&dir, "", &[], &[("DEEPSEEK_API_KEY", "")]);
    let bearer = web.bearer();
    let call = |method: &str, payload: &Value| {
        let response = send(
            &web.address,
            "POST",
            &format!("/api/{method}"),
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            &envelope(method, payload),
        );
        assert_eq!(response.status, 200, "{response:?}");
        response.json()["result"].clone()
    };
    let listed = call("session.list", &json!({}));
    let sessions = listed["value"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{listed}");
    let planted = sessions.iter().find(|s| s["id"] == "..~002Fx").unwrap();
    assert!(
        planted["broken"]
            .as_str()
            .unwrap()
            .contains("\"../x\" is not a session id"),
        "{planted}"
    );
    assert!(
        sessions
            .iter()
            .any(|s| s["id"] == "copied" && s["broken"].is_string())
    );
    let good_row = sessions.iter().find(|s| s["id"] == good.as_str()).unwrap();
    assert!(good_row.get("broken").is_none(), "{good_row}");
    // The review's move out of the trash: refused, by the id it names or the folder's name.
    for id in ["../x", "..~002Fx", "../../x", "a/b"] {
        let deleted = call("session.delete", &json!({"sessionId": id}));
        assert_eq!(deleted["ok"], false, "{id}: {deleted}");
        assert_eq!(deleted["error"]["code"], "bad-request", "{id}: {deleted}");
        let history = call("session.history", &json!({"sessionId": id}));
        assert_eq!(history["ok"], false, "{id}: {history}");
    }
    let sessions_dir = dir.home().join("sessions");
    assert_eq!(session_logs(&sessions_dir).len(), 3);
    assert!(!dir.home().join("trash").exists());
    let strays: Vec<_> = std::fs::read_dir(dir.home())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("x-"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
    // The good one still goes to the trash.
    let deleted = call("session.delete", &json!({"sessionId": good}));
    assert_eq!(deleted["ok"], true, "{deleted}");
    assert_eq!(session_logs(&dir.home().join("trash")).len(), 1);
    assert_eq!(web.host.stop(), Some(0));
}

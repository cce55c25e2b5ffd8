//! The page across a restart of the host under it: the host is stopped and started again on the
//! same port while the page stays open, and the page goes on (signed in through the kept
//! sign-in, reloaded on the new boot id, the conversation there, the next prompt answered).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::{WebHost, browser, fake_model_layer};
use dsh_tests::{TestDir, workspace_root};

/// Starts the web profile of `dir` on `port` (`0`: any), working in `work`.
fn launch(dir: &TestDir, layer: &str, work: &str, port: &str) -> WebHost {
    WebHost::start_on(
        dir,
        layer,
        port,
        &["--cwd", work],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    )
}

#[test]
fn the_page_goes_on_across_a_restart_of_the_host_under_it() {
    let (scripts, chromium) = match browser() {
        Ok(found) => found,
        Err(reason) => {
            dsh_tests::skip("browser scenario `restart`", &reason);
            return;
        }
    };
    let server = FakeDeepSeek::start(vec![
        Reply::text("The first answer."),
        Reply::text("The answer after the restart."),
    ]);
    let dir = TestDir::new("browser-restart");
    let layer = fake_model_layer(&server.url(), "");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work_dir = work.to_str().unwrap();
    let mut first = launch(&dir, &layer, work_dir, "0");
    let url = first.url();
    let shots = workspace_root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let mut node = Command::new("node")
        .arg(scripts.join("scenarios.mjs"))
        .args(["restart", url.as_str(), shots.to_str().unwrap()])
        .env("DSH_CHROMIUM", &chromium)
        .current_dir(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let stdout = BufReader::new(node.stdout.take().expect("node's stdout"));
    let mut said = Vec::new();
    let mut lines = stdout.lines();
    // The scenario says when its first turn is answered; the host restarts under the page then.
    for line in lines.by_ref() {
        let line = line.expect("a line from node");
        let ready = line.contains("ready for the restart");
        said.push(line);
        if ready {
            break;
        }
    }
    assert!(
        said.iter()
            .any(|line| line.contains("ready for the restart")),
        "the scenario never got to the restart: {said:?}"
    );
    assert_eq!(first.host.stop(), Some(0));
    let mut again = launch(&dir, &layer, work_dir, first.port());
    assert_eq!(again.url(), url, "the same link after the restart");
    std::fs::write(work.join("restarted"), "").unwrap();
    said.extend(lines.map_while(Result::ok));
    let status = node.wait().expect("node ends");
    let mut errors = String::new();
    if let Some(mut stderr) = node.stderr.take() {
        use std::io::Read;
        let _ = stderr.read_to_string(&mut errors);
    }
    assert!(
        status.success() && said.iter().any(|line| line == "scenario restart: ok"),
        "scenario `restart` failed:\n{errors}\n{said:?}\nhost stderr:\n{}",
        again.host.stderr().join("\n")
    );
    assert_eq!(again.host.stop(), Some(0));
}

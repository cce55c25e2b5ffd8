//! Images beside sessions on PostgreSQL: with the attachments row's `url`, an image one host
//! stored (a `read_image` call) is in the database, not in its home, and a second host with a
//! home of its own resumes the session and sends that image to the model.

use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use dsh_tests::{TestDir, run_host_with_env};
use serde_json::json;

use crate::images::png;
use crate::postgres::{cluster, postgres_patch, session_of};

const VISION: &str = "deepseek-v4-flash-vision-exp";

/// A home on `url` for sessions and images.
fn home(name: &str, url: &str) -> TestDir {
    let dir = TestDir::new(name);
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "{}- id: attachments\n  config:\n    url: \"{url}\"\n",
            postgres_patch(url, 10_000)
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    dir
}

/// A headless run in `dir` on the vision model of `server`: its stdout lines.
fn run(dir: &TestDir, server: &FakeDeepSeek, extra: &[&str], task: &str) -> Vec<String> {
    let patch = dir.write(
        "vision.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
             \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n",
            server.url()
        ),
    );
    let work = dir.join("work");
    let model = format!("deepseek-official/{VISION}");
    let mut args = vec![
        "--patch",
        patch.to_str().unwrap(),
        "--profile",
        "headless",
        "--",
        "--cwd",
        work.to_str().unwrap(),
        "--model",
        &model,
        "--output",
        "stream-json",
    ];
    args.extend(extra);
    args.push(task);
    let out = run_host_with_env(
        &dir.home(),
        &args,
        &[
            ("DEEPSEEK_API_KEY", "sk-test"),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.stdout.lines().map(str::to_owned).collect()
}

/// The `image_url` data URLs of a request.
fn images(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "image_url")
        .map(|part| part["image_url"]["url"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_image_stored_on_one_host_is_sent_to_the_model_by_another() {
    let Some(cluster) = cluster("postgres_attachments::an_image_stored_on_one_host") else {
        return;
    };
    let url = cluster.url();
    let first = home("pg-images-a", &url);
    let shot = png(3, 2);
    std::fs::write(first.join("work/shot.png"), &shot).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_img", "read_image", json!({"file_path": "shot.png"})),
        Reply::text("It is red."),
        Reply::text("Still red."),
    ]);
    let lines = run(&first, &server, &[], "What colour is shot.png?");
    let id = session_of(&lines);
    assert!(!id.is_empty(), "{lines:?}");
    let sent = server.requests();
    let shown = images(&sent[1]);
    assert_eq!(shown.len(), 1, "{shown:?}");
    // The image is a row, and nothing was written into the first home.
    assert_eq!(
        cluster
            .psql("SELECT count(*) FROM dsh_attachments")
            .unwrap(),
        "1"
    );
    assert!(!first.home().join("attachments").exists());

    // Another home, the same database: the session resumes with its image.
    let second = home("pg-images-b", &url);
    run(&second, &server, &["--resume", &id], "And now?");
    let resumed = &server.requests()[2];
    assert_eq!(images(resumed), shown, "the resumed request lost the image");
    assert!(!second.home().join("attachments").exists());
}

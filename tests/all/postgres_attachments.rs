//! Images beside sessions on PostgreSQL: with the attachments row's `url`, an image one host
//! stored (a `read_image` call) is in the database, not in its home, and a second host with a
//! home of its own resumes the session and sends that image to the model.

use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use dsh_tests::{TestDir, run_host_with_env};
use serde_json::json;

use crate::images::{png, stored_objects as objects};
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
    let models = format!("    models:\n      - {{id: {VISION}, inputModalities: [text, image]}}\n");
    let mut args = dsh_tests::headless::patched_args_on(
        &server.url(),
        dir,
        &models,
        &format!("deepseek-official/{VISION}"),
    );
    args.extend(["--output", "stream-json"].map(str::to_owned));
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args.push(task.to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
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

    // The archive a page downloads from the second host carries the image from the table.
    let mut web = dsh_tests::web::start(&server, &second);
    let deadline = std::time::Instant::now() + dsh_tests::WAIT;
    let body = loop {
        let (head, body) = crate::export::web::get_bytes(
            &web.address,
            &format!("/export?session={id}"),
            &[("Authorization", &web.bearer)],
        );
        // The store mounts beside the web server (it connects first).
        if head.starts_with("HTTP/1.1 200") || std::time::Instant::now() > deadline {
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            break body;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let inside = crate::export::entries(&body);
    let manifest: serde_json::Value = serde_json::from_slice(&inside[0].1).unwrap();
    // Nothing missing (the field is left out then), the image listed.
    assert!(manifest["missingAttachments"].is_null(), "{manifest}");
    assert_eq!(
        manifest["attachments"].as_array().unwrap().len(),
        1,
        "{manifest}"
    );
    assert!(
        inside
            .iter()
            .any(|(path, bytes)| path.starts_with("attachments/") && *bytes == shot),
        "{:?}",
        inside.iter().map(|(path, _)| path).collect::<Vec<_>>()
    );
    assert_eq!(web.host.stop(), Some(0));
}

fn migrate(dir: &TestDir, to: &str, url: &str) -> String {
    let out = dsh_tests::run_host(&dir.home(), &["session", "migrate", "--to", to, url]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    out.stdout
}

/// `session migrate` takes a home's images along: into the table with the sessions, and out
/// again into another home's store, where the session resumes with its image.
#[test]
fn a_homes_images_migrate_to_postgres_and_back() {
    let Some(cluster) = cluster("postgres_attachments::a_homes_images_migrate") else {
        return;
    };
    let url = cluster.url();
    // A home on the default stores: the session's log and its image in files.
    let first = TestDir::new("pg-images-migrate-a");
    std::fs::create_dir_all(first.join("work")).unwrap();
    std::fs::write(first.join("work/shot.png"), png(3, 2)).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_img", "read_image", json!({"file_path": "shot.png"})),
        Reply::text("It is red."),
        Reply::text("Still red."),
    ]);
    let id = session_of(&run(&first, &server, &[], "What colour is shot.png?"));
    let stored = objects(&first);
    assert_eq!(stored.len(), 1, "the image is in the home's store");
    let (digest, bytes) = &stored[0];

    let out = migrate(&first, "postgres", &url);
    assert!(
        out.contains("images: 1 copied to the database, 0 already there, 0 not copied"),
        "{out}"
    );
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT encode(bytes, 'hex') FROM dsh_attachments WHERE id = 'sha256:{digest}'"
            ))
            .unwrap(),
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    // Again: the session is refused (already stored), the image is already there.
    let again = dsh_tests::run_host(
        &first.home(),
        &["session", "migrate", "--to", "postgres", &url],
    );
    assert!(
        again
            .stdout
            .contains("images: 0 copied to the database, 1 already there"),
        "{}{}",
        again.stdout,
        again.stderr
    );

    // Another home takes the sessions and the images out of the database.
    let second = TestDir::new("pg-images-migrate-b");
    std::fs::create_dir_all(second.join("work")).unwrap();
    let out = migrate(&second, "jsonl", &url);
    assert!(
        out.contains("images: 1 copied to the attachments folder"),
        "{out}"
    );
    assert_eq!(objects(&second), stored);
    run(&second, &server, &["--resume", &id], "And now?");
    let requests = server.requests();
    assert_eq!(
        images(&requests[2]),
        images(&requests[1]),
        "the resumed request lost the image"
    );
}

//! The web page's image paste in a real headless Chromium (`tests/web/images.mjs`): a pasted
//! image waits in the composer's tray, opens in the lightbox, and is sent with the prompt; the
//! model gets it as an `image_url` data URL after the text. Screenshots go to
//! `target/screenshots/images-*.png`.

use std::process::Command;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::browser;
use dsh_tests::{HostProcess, TestDir, WAIT, workspace_root};

use super::{RED_PNG, VISION, base64, image_urls};

#[test]
fn an_image_pasted_in_the_page_is_sent_with_the_prompt() {
    let (scripts, chromium) = match browser() {
        Ok(found) => found,
        Err(reason) => {
            dsh_tests::skip("browser scenario `images`", &reason);
            return;
        }
    };
    let server = FakeDeepSeek::start(vec![Reply::text("A red pixel.")]);
    let dir = TestDir::new("browser-images");
    // New sessions of the page are on the vision model, which the catalog says takes images.
    let patch = dir.write(
        "images.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
             \x20     - {{id: deepseek-v4-flash, inputModalities: [text]}}\n\
             \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n\
             - id: clients\n  config:\n    profile: web\n    demoDir: !home demo\n\
             \x20   settingsFile: !home settings.yaml\n    model: deepseek-official/{VISION}\n",
            server.url()
        ),
    );
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut host = HostProcess::start_with_env(
        &dir.home(),
        &[
            "--patch",
            patch.to_str().unwrap(),
            "--profile",
            "web",
            "--",
            "--no-open",
            "--port",
            "0",
            "--cwd",
            work.to_str().unwrap(),
        ],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    );
    let line = host.wait_stdout("dsh web: open http://", WAIT);
    let url = line.trim_start_matches("dsh web: open ").trim().to_owned();
    let shots = workspace_root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(scripts.join("scenarios.mjs"))
        .args(["images", url.as_str(), shots.to_str().unwrap()])
        .env("DSH_CHROMIUM", &chromium)
        .current_dir(&work)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("scenario images: ok"),
        "scenario `images` failed:\n{}\n{stdout}\nhost stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        host.stderr().join("\n")
    );
    assert_eq!(host.stop(), Some(0));
    let sent = server.requests();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let red = format!("data:image/png;base64,{}", base64(RED_PNG));
    assert_eq!(image_urls(&sent[0]), [("user".to_owned(), red)]);
    for shot in [
        "images-tray-light.png",
        "images-lightbox.png",
        "images-sent.png",
    ] {
        assert!(shots.join(shot).is_file(), "no screenshot {shot}");
    }
}

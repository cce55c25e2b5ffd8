//! Images through the client protocol (`session.attachment`, a prompt's `images`) and from
//! MCP tools' results.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use serde_json::json;

use super::{RED_PNG, VISION, base64, image_urls, stored};

/// `session.attachment` over the client socket of a web host: an image stored answers its
/// reference, a prompt's `images` carry it to the model after the text; a bad image and an
/// image for a text-only session are `attachment-rejected` with the store's code.
#[test]
fn clients_upload_images_and_prompts_carry_them() {
    use dsh_tests::line_client::{LineClient, client_socket};
    use dsh_tests::web::WebHost;

    let server = FakeDeepSeek::start(vec![Reply::text("A red pixel.")]);
    let dir = TestDir::new("images-client");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
         \x20     - {{id: deepseek-v4-flash, inputModalities: [text]}}\n\
         \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n",
        server.url()
    );
    let web = WebHost::start(&dir, &layer, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut client = LineClient::connect(&path);
    client.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "images", "version": "0"}}),
    );
    let vision = client.call(
        "session.create",
        json!({"model": format!("deepseek-official/{VISION}")}),
    );
    let vision = vision["sessionId"].as_str().unwrap().to_owned();
    client.call("session.subscribe", json!({"sessionId": vision}));
    let upload = |name: &str, data: &[u8], media_type: &str, session: &str| json!({"sessionId": session, "mediaType": media_type, "data": base64(data), "name": name});
    let stored_ref = client.call(
        "session.attachment",
        upload("/home/me/red.png", RED_PNG, "image/png", &vision),
    );
    assert_eq!(
        stored_ref,
        json!({
            "attachmentId": "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640",
            "mediaType": "image/png", "bytes": 69, "width": 1, "height": 1, "name": "red.png"
        })
    );
    let id = client.send(
        "session.attachment",
        upload("notes.txt", b"plain words", "image/png", &vision),
    );
    let refused = client.answer(id);
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("INVALID_IMAGE:"), "{refused}");
    assert_eq!(
        refused["error"]["data"]["code"], "attachment-rejected",
        "{refused}"
    );
    client.call(
        "session.prompt",
        json!({"sessionId": vision, "text": "What is this?", "images": [stored_ref]}),
    );
    let sent = server.wait_requests(1, dsh_tests::WAIT);
    let user = sent[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user" && m["content"].is_array())
        .cloned()
        .unwrap_or_else(|| panic!("{}", sent[0].body));
    assert_eq!(user["content"][0]["text"], "What is this?");
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{}", base64(RED_PNG))
    );
    let text_only = client.call(
        "session.create",
        json!({"model": "deepseek-official/deepseek-v4-flash"}),
    );
    let text_only = text_only["sessionId"].as_str().unwrap().to_owned();
    let id = client.send(
        "session.attachment",
        upload("red.png", RED_PNG, "image/png", &text_only),
    );
    let refused = client.answer(id);
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("deepseek-v4-flash\" does not declare image input"),
        "{refused}"
    );
    let id = client.send(
        "session.prompt",
        json!({"sessionId": text_only, "text": "and this?", "images": [stored_ref]}),
    );
    let refused = client.answer(id);
    assert_eq!(
        refused["error"]["data"]["code"], "attachment-rejected",
        "{refused}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the text-only session sent nothing"
    );
}

/// An MCP tool's image (`tests/fixtures/mcp/image-server`) is passed on as an image when the
/// session's model takes images (after the tool message, as `read_image`'s), and described,
/// with the reason, when it does not.
#[test]
fn mcp_image_results_are_passed_on_as_images() {
    let script = dsh_tests::workspace_root().join("tests/fixtures/mcp/image-server");
    if !std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
    {
        eprintln!("skipped: no python3 to run tests/fixtures/mcp/image-server");
        return;
    }
    for (model, passed) in [(VISION, true), ("deepseek-v4-flash", false)] {
        let dir = TestDir::new(&format!("images-mcp-{passed}"));
        let entry = json!({"command": script, "args": []});
        dir.write(
            "home/mcp.json",
            &json!({"mcpServers": {"screen": entry}}).to_string(),
        );
        let server = FakeDeepSeek::start(vec![
            Reply::tool_calls(&[("c1", "mcp__screen__snapshot", "{}")]),
            Reply::text("done"),
        ]);
        let patch = dir.write(
            "images.patch.yml",
            &format!(
                "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
                 \x20     - {{id: deepseek-v4-flash, inputModalities: [text]}}\n\
                 \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n\
                 - id: mcp\n  config:\n    files: [{}]\n    workspace: {}\n",
                server.url(),
                dir.home().join("mcp.json").display(),
                dir.join("work").display()
            ),
        );
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let model = format!("deepseek-official/{model}");
        let out = dsh_tests::run_host_with_env(
            &dir.home(),
            &[
                "--patch",
                patch.to_str().unwrap(),
                "--profile",
                "headless",
                "--",
                "--cwd",
                work.to_str().unwrap(),
                "--model",
                &model,
                "take a snapshot",
            ],
            &[("DEEPSEEK_API_KEY", "sk-test")],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        let sent = server.requests();
        assert_eq!(sent.len(), 2, "{out:?}");
        let tool = sent[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .cloned()
            .unwrap();
        let red = format!("data:image/png;base64,{}", base64(RED_PNG));
        match passed {
            true => {
                assert_eq!(tool["content"], "the screen:");
                assert_eq!(image_urls(&sent[1]), [("user".to_owned(), red)]);
                assert_eq!(stored(&dir).len(), 1);
            }
            false => {
                assert_eq!(
                    tool["content"],
                    "the screen:\n[image: image/png, 69 bytes; not shown: model \"deepseek-v4-flash\" takes no images]"
                );
                assert!(image_urls(&sent[1]).is_empty());
                assert!(stored(&dir).is_empty());
            }
        }
    }
}

/// The benchmark of the issue: a 5 MB image (a 1300x1300 PNG, under the side limit; the row's
/// `maxImageBytes` raised to 8 MiB for it) from `session.attachment` to the model request that
/// carries it. Prints the two times; bounded loosely (a debug build on a shared machine).
#[test]
fn a_five_megabyte_image_goes_from_upload_to_the_model_request() {
    use dsh_tests::line_client::{LineClient, client_socket};
    use dsh_tests::web::WebHost;
    use std::time::Instant;

    let server = FakeDeepSeek::start(vec![Reply::text("A red square.")]);
    let dir = TestDir::new("images-five-mb");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
         \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n\
         - id: attachments\n  config:\n    root: !home attachments\n    maxImageBytes: 8388608\n",
        server.url()
    );
    let web = WebHost::start(&dir, &layer, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let mut client = LineClient::connect(&client_socket(&dir.home(), web.host.pid()));
    client.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "bench", "version": "0"}}),
    );
    let session = client.call(
        "session.create",
        json!({"model": format!("deepseek-official/{VISION}")}),
    );
    let session = session["sessionId"].as_str().unwrap().to_owned();
    let image = super::png(1300, 1300);
    assert!(image.len() > 5_000_000, "{}", image.len());
    let data = base64(&image);
    let started = Instant::now();
    let reference = client.call(
        "session.attachment",
        json!({"sessionId": session, "mediaType": "image/png", "data": data, "name": "big.png"}),
    );
    let stored = started.elapsed();
    client.call(
        "session.prompt",
        json!({"sessionId": session, "text": "What is this?", "images": [reference]}),
    );
    let sent = server.wait_requests(1, dsh_tests::WAIT);
    let total = started.elapsed();
    eprintln!(
        "bench: a {} byte image: stored in {} ms, in the model request {} ms after its upload began",
        image.len(),
        stored.as_millis(),
        total.as_millis()
    );
    let url = format!("data:image/png;base64,{data}");
    assert_eq!(image_urls(&sent[0]), [("user".to_owned(), url)]);
    assert!(total.as_secs() < 60, "{total:?}");
}

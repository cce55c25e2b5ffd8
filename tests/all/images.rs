//! Images through the real host: the attachment store, `read_image`, images in ACP prompts and
//! in the model request, and bad images refused with a code naming the limit; `doors` has the
//! client protocol's uploads and MCP tools' images, `page` the web page's paste.

mod doors;
mod page;

/// A real PNG of `width` x `height` red pixels (8-bit RGB, stored deflate blocks, correct
/// CRCs and Adler-32), so the fixtures are images any decoder reads.
pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    }
    // Each row: filter type 0, then its red pixels.
    let mut row = vec![0u8];
    row.extend([255, 0, 0].repeat(usize::try_from(width).unwrap()));
    let raw = row.repeat(usize::try_from(height).unwrap());
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (index, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(index + 1 == blocks.len()));
        let len = u16::try_from(block.len()).unwrap();
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &header);
    chunk(&mut out, b"IDAT", &zlib);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// The recorded cases' `red.png`: a 1x1 red PNG of 69 bytes
/// (`sha256:b1ff9c8e...`).
pub(crate) const RED_PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0,
    0, 0, 144, 119, 83, 222, 0, 0, 0, 12, 73, 68, 65, 84, 120, 156, 99, 248, 207, 192, 0, 0, 3, 1,
    1, 0, 201, 254, 146, 239, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

use std::time::Duration;

use dsh_tests::TestDir;
use dsh_tests::acp::AcpClient;
use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use serde_json::{Value, json};

const VISION: &str = "deepseek-v4-flash-vision-exp";

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(match i <= group.len() {
                true => char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]),
                false => '=',
            });
        }
    }
    out
}

/// An editor-mode ACP agent on the fake server, its catalog declaring `VISION` as taking
/// images, its sessions on `model`, with `rows` patched in.
fn agent(server: &FakeDeepSeek, dir: &TestDir, model: &str, rows: &str) -> AcpClient {
    let patch = dir.write(
        "images.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n    models:\n\
             \x20     - {{id: deepseek-v4-flash, inputModalities: [text]}}\n\
             \x20     - {{id: {VISION}, inputModalities: [text, image]}}\n{}{rows}",
            server.url(),
            dsh_tests::sessions::PLAIN_STORE
        ),
    );
    let model = format!("deepseek-official/{model}");
    let args = [
        "--patch",
        patch.to_str().unwrap(),
        "--profile",
        "acp",
        "--",
        "--model",
        &model,
    ];
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    AcpClient::start(
        &dir.home(),
        &work,
        &args,
        &[
            ("DEEPSEEK_API_KEY", "sk-test"),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    )
}

/// The image capability `initialize` advertised, and a new session's id.
fn open(agent: &mut AcpClient, dir: &TestDir) -> (bool, String) {
    let init = agent.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let image = init["result"]["agentCapabilities"]["promptCapabilities"]["image"]
        .as_bool()
        .unwrap_or_else(|| panic!("{init}"));
    let opened = agent.call(
        "session/new",
        json!({"cwd": dir.join("work"), "mcpServers": []}),
    );
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    (image, session)
}

fn prompt(agent: &mut AcpClient, session: &str, blocks: Value) -> Value {
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": blocks}),
    );
    agent.response(id, Duration::from_secs(60))
}

fn image_block(data: &[u8], mime_type: &str) -> Value {
    json!({"type": "image", "data": base64(data), "mimeType": mime_type})
}

/// The stored objects under the home's attachment store: (hex name, bytes), by name.
pub(crate) fn stored_objects(dir: &TestDir) -> Vec<(String, Vec<u8>)> {
    let objects = dir.home().join("attachments/v1/objects");
    let mut found = Vec::new();
    for bucket in std::fs::read_dir(objects).into_iter().flatten().flatten() {
        for object in std::fs::read_dir(bucket.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = object.file_name().to_string_lossy().into_owned();
            found.push((name, std::fs::read(object.path()).unwrap()));
        }
    }
    found.sort();
    found
}

/// The names of the stored objects, sorted.
fn stored(dir: &TestDir) -> Vec<String> {
    stored_objects(dir)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The `image_url` parts of a request's messages, in order, with the role of each message.
fn image_urls(request: &RecordedRequest) -> Vec<(String, String)> {
    let mut urls = Vec::new();
    for message in request.body["messages"].as_array().unwrap() {
        for part in message["content"].as_array().into_iter().flatten() {
            if part["type"] == "image_url" {
                let url = part["image_url"]["url"].as_str().unwrap().to_owned();
                urls.push((message["role"].as_str().unwrap().to_owned(), url));
            }
        }
    }
    urls
}

/// A pasted image and one `read_image` read reach the model as `image_url` data URLs: the
/// prompt's in its user message, the tool's in a user message after the tool message; both
/// are in the store by their sha256.
#[test]
fn images_from_an_editor_and_from_read_image_reach_the_model() {
    let dir = TestDir::new("images-to-model");
    let shot = png(3, 2);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/shot.png"), &shot).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_img", "read_image", json!({"file_path": "shot.png"})),
        Reply::text("Both are red."),
    ]);
    let mut agent = agent(&server, &dir, VISION, "");
    let (advertised, session) = open(&mut agent, &dir);
    assert!(advertised, "a store and a vision model: images advertised");
    let answer = prompt(
        &mut agent,
        &session,
        json!([
            {"type": "text", "text": "What colour is "},
            image_block(RED_PNG, "image/png"),
            {"type": "text", "text": " and shot.png?"},
        ]),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let sent = server.requests();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let red = format!("data:image/png;base64,{}", base64(RED_PNG));
    assert_eq!(image_urls(&sent[0]), [("user".to_owned(), red.clone())]);
    let first = &sent[0].body["messages"];
    let user = first
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user" && m["content"].is_array())
        .unwrap();
    assert_eq!(user["content"][0]["text"], "What colour is ");
    assert_eq!(user["content"][2]["text"], " and shot.png?");
    let shot_url = format!("data:image/png;base64,{}", base64(&shot));
    assert_eq!(
        image_urls(&sent[1]),
        [("user".to_owned(), red), ("user".to_owned(), shot_url)]
    );
    let tool = sent[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let envelope = tool["content"].as_str().unwrap();
    assert!(
        envelope.contains("<type>image</type>") && envelope.contains("image/png image, 3x2 px"),
        "{envelope}"
    );
    assert_eq!(stored(&dir).len(), 2, "{:?}", stored(&dir));
    assert!(
        stored(&dir).contains(
            &"b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640".to_owned()
        )
    );
    agent.close();
    assert_eq!(agent.wait_exit(Duration::from_secs(30)), Some(0));
}

/// Bad images are refused before any turn, each with the code and the limit it broke, and
/// nothing of them is stored: not an image, over the byte limit, over the side limit, a type
/// the store does not take, a type the bytes are not, and base64 that is not canonical.
#[test]
fn bad_images_are_refused_with_a_code_naming_the_limit() {
    let dir = TestDir::new("images-refused");
    let server = FakeDeepSeek::start(vec![Reply::text("never asked")]);
    let rows =
        "- id: attachments\n  config:\n    root: !home attachments\n    maxImageBytes: 10000\n";
    let mut agent = agent(&server, &dir, VISION, rows);
    let (_, session) = open(&mut agent, &dir);
    let cases: [(Value, &[&str]); 6] = [
        (
            image_block(b"just some text, not a picture", "image/png"),
            &["INVALID_IMAGE", "not a PNG, JPEG, WebP or GIF image"],
        ),
        (
            image_block(&png(60, 60), "image/png"),
            &["IMAGE_TOO_LARGE", "maxImageBytes", "10000"],
        ),
        (
            image_block(&png(2001, 1), "image/png"),
            &["IMAGE_DIMENSION_TOO_LARGE", "2001x1", "2000px limit"],
        ),
        (
            image_block(RED_PNG, "image/bmp"),
            &["image mimeType must be image/png, image/jpeg, image/webp, or image/gif"],
        ),
        (
            image_block(RED_PNG, "image/jpeg"),
            &["IMAGE_TYPE_MISMATCH", "declared image/jpeg", "image/png"],
        ),
        (
            json!({"type": "image", "data": "iVBORw0K\nGgo=", "mimeType": "image/png"}),
            &["image data must be canonical base64"],
        ),
    ];
    for (block, words) in cases {
        let answer = prompt(
            &mut agent,
            &session,
            json!([{"type": "text", "text": "look"}, block]),
        );
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        for word in words {
            assert!(message.contains(word), "{word:?} not in {message:?}");
        }
    }
    assert_eq!(
        stored(&dir),
        Vec::<String>::new(),
        "a refused image is not kept"
    );
    assert!(server.requests().is_empty(), "no turn ran");
    agent.close();
    assert_eq!(agent.wait_exit(Duration::from_secs(30)), Some(0));
}

/// On a text-only model images are not advertised and a prompt carrying one is refused, as
/// the reference refuses it; the model is never asked.
#[test]
fn a_text_only_model_gets_no_images() {
    let dir = TestDir::new("images-text-route");
    let server = FakeDeepSeek::start(vec![Reply::text("never asked")]);
    let mut agent = agent(&server, &dir, "deepseek-v4-flash", "");
    let (advertised, session) = open(&mut agent, &dir);
    assert!(!advertised, "Flash takes no images");
    let answer = prompt(
        &mut agent,
        &session,
        json!([{"type": "text", "text": "look"}, image_block(RED_PNG, "image/png")]),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inline image prompts were not advertised"),
        "{answer}"
    );
    assert!(server.requests().is_empty());
    agent.close();
    assert_eq!(agent.wait_exit(Duration::from_secs(30)), Some(0));
}

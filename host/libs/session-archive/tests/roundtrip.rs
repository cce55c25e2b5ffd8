//! In-process export and import with an image attachment: a session whose message holds an
//! image block and a subagent child, exported from one pair of stores and imported into
//! another, carries the image's bytes into the attachment store's layout (0600, by sha256) and
//! lists it in the manifest; an image the store lost is named as missing; a second import finds
//! the image present and writes only the copy of the sessions.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use dsh_session_archive::{ImportOptions, Stores, attachment_file, export_session, import_archive};
use dsh_session_jsonl::{Encoding, SessionHeader, SessionWriter, WriterOptions};
use dsh_session_log::SessionEvent;
use serde_json::json;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dsh-archive-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn event(seq: u64, data: serde_json::Value) -> SessionEvent {
    serde_json::from_value(json!({
        "type": "user/message", "seq": seq, "time": 1_000 + seq, "data": data, "surfaceOp": "append"
    }))
    .unwrap()
}

fn image(id: &str) -> serde_json::Value {
    json!({"id": "m1", "role": "user", "source": {"kind": "user"}, "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "attachment": {"attachmentId": id, "mediaType": "image/png",
            "bytes": 4, "width": 1, "height": 1}}
    ]})
}

fn store_session(root: &Path, header: SessionHeader, events: &[SessionEvent]) {
    let mut writer = SessionWriter::create(root, header, WriterOptions::default()).unwrap();
    writer.append(events).unwrap();
}

#[test]
fn an_image_travels_with_its_session_and_its_child() {
    let dir = scratch("image");
    let from = Stores::of_home(&dir.join("from"));
    let bytes = b"\x89PNG-not-really".to_vec();
    let hex = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let kept = format!("sha256:{hex}");
    let lost = format!("sha256:{}", "0".repeat(64));
    let file = attachment_file(&from.attachments, &kept).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let mut parent = SessionHeader::new("p-1", 1);
    parent.cwd = Some("/work".into());
    store_session(
        &from.sessions,
        parent,
        &[event(0, image(&kept)), event(1, image(&lost))],
    );
    let mut child = SessionHeader::new("c-1", 2);
    child.cwd = Some("/work".into());
    child.parent_session = Some("p-1".into());
    child.origin = Some("subagent".into());
    child.delegation_depth = 1;
    store_session(&from.sessions, child, &[event(0, image(&kept))]);

    let exported = export_session(&from, "p-1", 5).unwrap();
    let manifest = &exported.manifest;
    assert_eq!(manifest.sessions.len(), 2);
    assert_eq!(manifest.sessions[1].parent.as_deref(), Some("p-1"));
    assert_eq!(manifest.attachments.len(), 1);
    assert_eq!(manifest.attachments[0].id, kept);
    assert_eq!(manifest.missing_attachments, vec![lost]);

    let to = Stores::of_home(&dir.join("to"));
    let imported = import_archive(&to, "test", &exported.bytes, ImportOptions::default()).unwrap();
    assert_eq!(imported.attachments_written, 1);
    let landed = attachment_file(&to.attachments, &kept).unwrap();
    assert_eq!(std::fs::read(&landed).unwrap(), bytes);
    assert_eq!(
        std::fs::metadata(&landed).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Stored in the store's default encoding, under the header's project folder.
    assert!(
        imported.sessions[0]
            .path
            .join(Encoding::Zstd.file_name())
            .is_file()
    );

    let copy = ImportOptions {
        fresh_ids: true,
        ..ImportOptions::default()
    };
    let again = import_archive(&to, "test", &exported.bytes, copy).unwrap();
    assert_eq!(
        (again.attachments_written, again.attachments_present),
        (0, 1)
    );
    assert_ne!(again.sessions[0].id, "p-1");
    let _ = std::fs::remove_dir_all(&dir);
}

//! The images the sessions refer to, migrated with them: `$DSH_HOME/attachments` (the
//! `attachments` row's store, `<root>/v1/objects/<first two hex>/<sha256 hex>`) and the
//! database's `dsh_attachments` table (the same row with `url`). Content-addressed both sides:
//! an image already there is left as it is, and every image copied is checked against its
//! digest first (one that does not match is named and not copied).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio_postgres::Client;

use super::{MigrateError, db};

/// The image store beside the sessions of `home` (the base bundle's `root: !home
/// attachments`).
pub(super) fn images_root(home: &Path) -> PathBuf {
    home.join("attachments")
}

/// What one direction did.
#[derive(Default)]
pub(super) struct Copied {
    copied: usize,
    present: usize,
    /// Each image not copied, and why.
    failed: Vec<(String, String)>,
}

impl Copied {
    /// Prints the line of the report and each failure; an error when any image failed.
    pub(super) fn report(self, destination: &str) -> Result<(), MigrateError> {
        for (id, why) in &self.failed {
            eprintln!("not migrated: image {id}: {why}");
        }
        println!(
            "images: {} copied to {destination}, {} already there, {} not copied",
            self.copied,
            self.present,
            self.failed.len()
        );
        match self.failed.is_empty() {
            true => Ok(()),
            false => Err(MigrateError::Images {
                ids: self.failed.into_iter().map(|(id, _)| id).collect(),
            }),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn is_digest(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The objects of the store at `root`: (hex digest, file), in no particular order.
fn objects(root: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let buckets = std::fs::read_dir(root.join("v1").join("objects"));
    for bucket in buckets.into_iter().flatten().flatten() {
        for object in std::fs::read_dir(bucket.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = object.file_name().to_string_lossy().into_owned();
            if is_digest(&name) {
                found.push((name, object.path()));
            }
        }
    }
    found
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// Every image of the store at `root` into the table (made when missing).
pub(super) async fn to_postgres(client: &mut Client, root: &Path) -> Result<Copied, MigrateError> {
    let transaction = client.transaction().await.map_err(db("images"))?;
    for statement in dsh_session_pg::ATTACHMENTS_STATEMENTS {
        transaction
            .batch_execute(statement)
            .await
            .map_err(db("images"))?;
    }
    transaction.commit().await.map_err(db("images"))?;
    let mut done = Copied::default();
    for (digest, file) in objects(root) {
        let id = format!("sha256:{digest}");
        let bytes = match std::fs::read(&file) {
            Ok(bytes) if hex(&Sha256::digest(&bytes)) == digest => bytes,
            Ok(_) => {
                done.failed
                    .push((id, "its bytes do not match its digest".to_owned()));
                continue;
            }
            Err(error) => {
                done.failed
                    .push((id, format!("{}: {error}", file.display())));
                continue;
            }
        };
        let now = now_ms();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&id, &bytes, &now];
        let inserted = client
            .execute(dsh_session_pg::PUT_ATTACHMENT, &params)
            .await
            .map_err(db(&id))?;
        match inserted {
            0 => done.present += 1,
            _ => done.copied += 1,
        }
    }
    Ok(done)
}

/// Every image of the table (none when there is no table) into the store at `root`.
pub(super) async fn to_folder(client: &Client, root: &Path) -> Result<Copied, MigrateError> {
    let exists = client
        .query_one("SELECT to_regclass('dsh_attachments') IS NOT NULL", &[])
        .await
        .map_err(db("images"))?;
    let mut done = Copied::default();
    if !exists.try_get::<_, bool>(0).map_err(db("images"))? {
        return Ok(done);
    }
    let rows = client
        .query("SELECT id, bytes FROM dsh_attachments ORDER BY id", &[])
        .await
        .map_err(db("images"))?;
    for row in rows {
        let id: String = row.try_get(0).map_err(db("images"))?;
        let bytes: Vec<u8> = row.try_get(1).map_err(db(&id))?;
        let Some(digest) = id.strip_prefix("sha256:").filter(|hex| is_digest(hex)) else {
            done.failed.push((id, "not an image id".to_owned()));
            continue;
        };
        if hex(&Sha256::digest(&bytes)) != digest {
            done.failed
                .push((id, "its bytes do not match its digest".to_owned()));
            continue;
        }
        let bucket = root.join("v1").join("objects").join(&digest[..2]);
        let file = bucket.join(digest);
        if file.exists() {
            done.present += 1;
            continue;
        }
        match write_object(&root.join("v1").join("tmp"), &bucket, &file, &bytes) {
            Ok(()) => done.copied += 1,
            Err(error) => done
                .failed
                .push((id, format!("{}: {error}", file.display()))),
        }
    }
    Ok(done)
}

/// Writes an object as the store does: staged and synced, then linked into place (never over
/// another), the owner's alone.
fn write_object(staging: &Path, bucket: &Path, file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    for dir in [staging, bucket] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let scratch = staging.join(format!("migrate.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&scratch)
        .and_then(|mut out| {
            out.write_all(bytes)?;
            out.sync_all()
        })
        .and_then(|()| std::fs::hard_link(&scratch, file));
    let _ = std::fs::remove_file(&scratch);
    written
}

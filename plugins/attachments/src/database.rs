//! The store in PostgreSQL (row config `url`), for hosts that share their sessions through a
//! database: an image pasted on one host is then read on every other. One table, an object per
//! id, written once (a second write of the same bytes finds its row and checks it) and never
//! changed; every read is verified against its reference as on disk.

use dsh_attachments_seam::{AttachmentCode, AttachmentFailure};
use dsh_plugin_api::io::postgres::{PgDatabaseBox, PgError, PgStatement, PgValue, PostgresService};
use dsh_protocol::ImageAttachment;
use sha2::{Digest, Sha256};

use crate::sniff::Sniffed;
use crate::store::{Upload, digest_of, hex, not_found, reference, verified};

/// The store in a database.
pub(crate) struct Database {
    db: PgDatabaseBox,
}

fn failed(code: AttachmentCode, what: &str, error: &PgError) -> AttachmentFailure {
    AttachmentFailure::new(code, format!("{what} in the database: {error}"))
}

impl Database {
    /// Connects to `url` with `pool` connections and makes the table when missing.
    pub(crate) async fn connect(
        postgres: &PostgresService,
        url: &str,
        pool: u32,
    ) -> Result<Self, PgError> {
        let db = postgres.connect(url.into(), pool).await.into_result()?;
        let statements = dsh_session_pg::ATTACHMENTS_STATEMENTS
            .iter()
            .map(|sql| PgStatement::new(sql, Vec::new()))
            .collect();
        db.transaction(statements).await.into_result()?;
        Ok(Self { db })
    }

    async fn bytes_of(&self, id: &str) -> Result<Option<Vec<u8>>, PgError> {
        let rows = self
            .db
            .query(PgStatement::new(
                dsh_session_pg::GET_ATTACHMENT,
                vec![PgValue::text(id)],
            ))
            .await
            .into_result()?;
        Ok(rows
            .rows
            .first()
            .and_then(|row| row.first())
            .and_then(PgValue::as_bytes)
            .map(<[u8]>::to_vec))
    }

    /// Writes an admitted image (idempotent: a row already there is verified, not rewritten);
    /// answers its reference.
    pub(crate) async fn write(
        &self,
        upload: &Upload,
        image: Sniffed,
    ) -> Result<ImageAttachment, AttachmentFailure> {
        let digest = hex(&Sha256::digest(&upload.data));
        let id = format!("sha256:{digest}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            });
        let inserted = self
            .db
            .query(PgStatement::new(
                dsh_session_pg::PUT_ATTACHMENT,
                vec![
                    PgValue::text(id.as_str()),
                    PgValue::Bytes(upload.data.clone().into()),
                    PgValue::Int(now),
                ],
            ))
            .await
            .into_result()
            .map_err(|error| {
                failed(
                    AttachmentCode::AttachmentWriteFailed,
                    "cannot store the image",
                    &error,
                )
            })?;
        if inserted.affected == 0 {
            let existing = self.bytes_of(&id).await.map_err(|error| {
                failed(
                    AttachmentCode::AttachmentReadFailed,
                    "cannot read the stored image",
                    &error,
                )
            })?;
            if existing.is_none_or(|bytes| hex(&Sha256::digest(&bytes)) != digest) {
                return Err(AttachmentFailure::new(
                    AttachmentCode::AttachmentCorrupt,
                    format!("the stored object {id} does not match its digest"),
                ));
            }
        }
        Ok(reference(upload, image, &digest))
    }

    /// The bytes of `attachment`, verified against its digest and its metadata.
    pub(crate) async fn read(
        &self,
        attachment: &ImageAttachment,
    ) -> Result<Vec<u8>, AttachmentFailure> {
        let id = attachment.attachment_id.as_str();
        digest_of(id)?;
        match self.bytes_of(id).await {
            Ok(Some(data)) => verified(attachment, data),
            Ok(None) => Err(not_found(id)),
            Err(error) => Err(failed(
                AttachmentCode::AttachmentReadFailed,
                &format!("cannot read the image {id}"),
                &error,
            )),
        }
    }
}

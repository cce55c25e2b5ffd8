//! Plugin `attachments`: provides `attachments`, the content-addressed image store (see
//! `dsh-attachments-seam`). Images are admitted by what their bytes are (`sniff`), within the
//! row's limits (the reference's defaults: 3.5 MiB an image, 20 images and 100 MiB a message,
//! 40 megapixels, 2000 px a side), and kept under `<root>/v1/objects/<aa>/<sha256>` (`store`)
//! for as long as the home is kept: sessions refer to them by id, so nothing here deletes
//! one. Every disk operation runs on the host's blocking pool. With `url`, the images are kept
//! in a PostgreSQL database instead (`database`), so that hosts sharing their sessions there
//! share the images those sessions refer to.

mod database;
mod sniff;
mod store;

pub use sniff::{Sniffed, sniff};
pub use store::{Store, Upload, admit, admit_batch};

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_attachments_seam::{
    ATTACHMENTS_SERVICE, AttachmentCode, AttachmentFailure, Attachments, Attachments_TO,
    IMAGE_MEDIA_TYPES, ImageLimits, NewImage, Saved,
};
use dsh_plugin_api::io::postgres::{POSTGRES_SERVICE, PostgresService};
use dsh_plugin_api::prelude::*;
use dsh_protocol::ImageAttachment;

/// Config of `attachments`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct AttachmentsConfig {
    /// The store's directory (`!home attachments` in the base bundle); unused with `url`.
    #[serde(default)]
    pub root: Option<String>,
    /// A libpq connection string (e.g. `postgresql:///dsh?host=/run/pg`): the images are kept
    /// in that database's `dsh_attachments` table instead of `root`.
    #[serde(default)]
    pub url: Option<String>,
    /// Connections to `url` (default 2).
    #[serde(default = "defaults::pool")]
    pub pool: u32,
    /// Encoded bytes of one image (default 3.5 MiB).
    #[serde(default = "defaults::image_bytes")]
    pub max_image_bytes: u64,
    /// Images in one message (default 20).
    #[serde(default = "defaults::images_per_message")]
    pub max_images_per_message: u64,
    /// Encoded bytes of one message's images together (default 100 MiB).
    #[serde(default = "defaults::message_image_bytes")]
    pub max_message_image_bytes: u64,
    /// Width times height of one image (default 40,000,000).
    #[serde(default = "defaults::image_pixels")]
    pub max_image_pixels: u64,
    /// Width, and height, of one image in pixels (default 2000: model routes refuse larger
    /// sides once a request holds many images, and an admitted image rides every later
    /// request of its session).
    #[serde(default = "defaults::image_dimension")]
    pub max_image_dimension: u32,
}

mod defaults {
    pub(super) fn pool() -> u32 {
        2
    }
    pub(super) fn image_bytes() -> u64 {
        7 * 1024 * 1024 / 2
    }
    pub(super) fn images_per_message() -> u64 {
        20
    }
    pub(super) fn message_image_bytes() -> u64 {
        100 * 1024 * 1024
    }
    pub(super) fn image_pixels() -> u64 {
        40_000_000
    }
    pub(super) fn image_dimension() -> u32 {
        2000
    }
}

/// Where the images are kept.
#[derive(Clone)]
enum Backend {
    Disk(Arc<Store>),
    Database(Arc<database::Database>),
}

struct Service {
    ctx: Context,
    backend: Backend,
    limits: Arc<ImageLimits>,
}

fn pool_gone(error: &PluginError) -> Json<AttachmentFailure> {
    Json::encode(&AttachmentFailure::new(
        AttachmentCode::AttachmentWriteFailed,
        format!("the host's blocking pool is gone: {error}"),
    ))
}

impl Attachments for Service {
    fn limits(&self) -> Json<ImageLimits> {
        Json::encode(&*self.limits)
    }

    fn save(&self, images: RVec<NewImage>) -> FfiFuture<Saved> {
        let (ctx, backend, limits) = (self.ctx.clone(), self.backend.clone(), self.limits.clone());
        let uploads: Vec<Upload> = images
            .into_iter()
            .map(|image| Upload {
                data: image.data.into_vec(),
                media_type: image.media_type.into_string(),
                name: image.name.into_string(),
            })
            .collect();
        async move {
            let saved = match backend {
                Backend::Disk(store) => ctx
                    .blocking(move || {
                        let sniffed = admit_batch(&uploads, &limits)?;
                        uploads
                            .iter()
                            .zip(sniffed)
                            .map(|(upload, image)| store.write(upload, image))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .await
                    .map_err(|error| pool_gone(&error)),
                Backend::Database(db) => Ok(save_in(&db, &uploads, &limits).await),
            };
            match saved {
                Ok(Ok(refs)) => ROk(Json::encode(&refs)),
                Ok(Err(failure)) => RErr(Json::encode(&failure)),
                Err(failure) => RErr(failure),
            }
        }
        .into_ffi()
    }

    fn read(
        &self,
        attachment: Json<ImageAttachment>,
    ) -> FfiFuture<RResult<RVec<u8>, Json<AttachmentFailure>>> {
        let (ctx, backend) = (self.ctx.clone(), self.backend.clone());
        async move {
            let attachment = match attachment.decode() {
                Ok(attachment) => attachment,
                Err(error) => {
                    return RErr(Json::encode(&AttachmentFailure::new(
                        AttachmentCode::InvalidAttachmentRef,
                        format!("not an image reference: {error}"),
                    )));
                }
            };
            let read = match backend {
                Backend::Disk(store) => ctx
                    .blocking(move || store.read(&attachment))
                    .await
                    .map_err(|error| pool_gone(&error)),
                Backend::Database(db) => Ok(db.read(&attachment).await),
            };
            match read {
                Ok(Ok(data)) => ROk(RVec::from(data)),
                Ok(Err(failure)) => RErr(Json::encode(&failure)),
                Err(failure) => RErr(failure),
            }
        }
        .into_ffi()
    }
}

/// Admits a message's images, then writes each to the database.
async fn save_in(
    db: &database::Database,
    uploads: &[Upload],
    limits: &ImageLimits,
) -> Result<Vec<ImageAttachment>, AttachmentFailure> {
    let sniffed = admit_batch(uploads, limits)?;
    let mut refs = Vec::with_capacity(uploads.len());
    for (upload, image) in uploads.iter().zip(sniffed) {
        refs.push(db.write(upload, image).await?);
    }
    Ok(refs)
}

pub struct AttachmentsPlugin;

impl Plugin for AttachmentsPlugin {
    const NAME: &'static str = "attachments";
    const PROVIDES: &'static [&'static str] = &[ATTACHMENTS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[POSTGRES_SERVICE];
    type Config = AttachmentsConfig;

    async fn apply(ctx: Context, config: AttachmentsConfig) -> Result<(), PluginError> {
        let zero = [
            ("maxImageBytes", config.max_image_bytes),
            ("maxImagesPerMessage", config.max_images_per_message),
            ("maxMessageImageBytes", config.max_message_image_bytes),
            ("maxImagePixels", config.max_image_pixels),
            ("maxImageDimension", u64::from(config.max_image_dimension)),
        ]
        .into_iter()
        .find(|(_, value)| *value == 0);
        if let Some((field, _)) = zero {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                format!("{field}: must be at least 1"),
            ));
        }
        let limits = ImageLimits {
            max_image_bytes: config.max_image_bytes,
            max_images_per_message: config.max_images_per_message,
            max_message_image_bytes: config.max_message_image_bytes,
            max_image_pixels: config.max_image_pixels,
            max_image_dimension: config.max_image_dimension,
            media_types: IMAGE_MEDIA_TYPES.iter().map(|t| (*t).to_owned()).collect(),
        };
        let backend = match (&config.url, &config.root) {
            (None, Some(root)) => Backend::Disk(Arc::new(Store::new(root))),
            (None, None) => {
                return Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: "invalid config: root: the store's directory is needed unless url names a database".into(),
                    path: abi_stable::std_types::RSome("$.root".into()),
                });
            }
            (Some(url), _) => {
                let postgres = ctx
                    .get::<PostgresService>(POSTGRES_SERVICE)?
                    .ok_or_else(|| PluginError {
                        kind: dsh_plugin_api::ErrorKind::Config,
                        message: format!(
                            "url: no `{POSTGRES_SERVICE}` service to reach the database (the host's postgres row provides it)"
                        )
                        .into(),
                        path: abi_stable::std_types::RSome("$.url".into()),
                    })?;
                let db = database::Database::connect(&postgres, url, config.pool.max(1))
                    .await
                    .map_err(|error| {
                        PluginError::plugin(format!(
                            "cannot keep images in the database `{url}`: {error}"
                        ))
                    })?;
                Backend::Database(Arc::new(db))
            }
        };
        let service = Service {
            ctx: ctx.clone(),
            backend,
            limits: Arc::new(limits),
        };
        ctx.provide(
            ATTACHMENTS_SERVICE,
            Attachments_TO::from_value(service, TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(AttachmentsPlugin);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::sniff::tests::RED_PNG;

    fn limits() -> ImageLimits {
        ImageLimits {
            max_image_bytes: 1000,
            max_images_per_message: 2,
            max_message_image_bytes: 1500,
            max_image_pixels: 100,
            max_image_dimension: 20,
            media_types: IMAGE_MEDIA_TYPES.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    fn upload(data: &[u8], media_type: &str) -> Upload {
        Upload {
            data: data.to_vec(),
            media_type: media_type.to_owned(),
            name: "C:\\Users\\me\\shot.png".to_owned(),
        }
    }

    #[test]
    fn stores_by_digest_once_and_reads_back_verified() {
        let dir = std::env::temp_dir().join(format!("attachments-{}", std::process::id()));
        let store = Store::new(&dir);
        let image = admit(&upload(RED_PNG, "image/png"), &limits()).unwrap();
        let saved = store.write(&upload(RED_PNG, ""), image).unwrap();
        assert_eq!(
            saved.attachment_id,
            "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640"
        );
        assert_eq!((saved.bytes, saved.width, saved.height), (69, 1, 1));
        assert_eq!(saved.name.as_deref(), Some("shot.png"));
        let again = store.write(&upload(RED_PNG, ""), image).unwrap();
        assert_eq!(again.attachment_id, saved.attachment_id);
        assert_eq!(store.read(&saved).unwrap(), RED_PNG);
        let object = dir.join("v1/objects/b1").join(&saved.attachment_id[7..]);
        assert!(object.is_file());
        std::fs::write(&object, b"tampered").unwrap();
        assert_eq!(
            store.read(&saved).unwrap_err().code,
            AttachmentCode::AttachmentCorrupt
        );
        let mut missing = saved.clone();
        missing.attachment_id = format!("sha256:{}", "0".repeat(64));
        assert_eq!(
            store.read(&missing).unwrap_err().code,
            AttachmentCode::AttachmentNotFound
        );
        missing.attachment_id = "../../etc/passwd".to_owned();
        assert_eq!(
            store.read(&missing).unwrap_err().code,
            AttachmentCode::InvalidAttachmentRef
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refusals_name_their_limit() {
        let code = |upload: &Upload| admit(upload, &limits()).unwrap_err();
        assert_eq!(
            code(&upload(b"not an image", "")).code,
            AttachmentCode::InvalidImage
        );
        assert_eq!(
            code(&upload(RED_PNG, "image/bmp")).code,
            AttachmentCode::UnsupportedImageType
        );
        assert_eq!(
            code(&upload(RED_PNG, "image/gif")).code,
            AttachmentCode::ImageTypeMismatch
        );
        let big = code(&upload(&[0u8; 1001], "")).to_string();
        assert!(
            big.starts_with("IMAGE_TOO_LARGE:") && big.contains("maxImageBytes"),
            "{big}"
        );
        let mut wide = RED_PNG.to_vec();
        wide[16..20].copy_from_slice(&21u32.to_be_bytes());
        let wide = code(&upload(&wide, "")).to_string();
        assert!(wide.contains("20px limit"), "{wide}");
        let three = [
            upload(RED_PNG, ""),
            upload(RED_PNG, ""),
            upload(RED_PNG, ""),
        ];
        assert_eq!(
            admit_batch(&three, &limits()).unwrap_err().code,
            AttachmentCode::TooManyImages
        );
    }
}

//! The store on disk: `<root>/v1/objects/<first two hex digits>/<sha256 hex>`, each object
//! written once (staged in `<root>/v1/tmp`, synced, then hard-linked into place, which never
//! replaces an object) and never changed; directories 0700, objects 0600. Admission checks
//! a whole batch before anything is written, so a refused batch leaves nothing behind.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use dsh_attachments_seam::{AttachmentCode, AttachmentFailure, IMAGE_MEDIA_TYPES, ImageLimits};
use dsh_protocol::ImageAttachment;
use sha2::{Digest, Sha256};

use crate::sniff::{Sniffed, sniff};

/// One image of a batch, as its sender gave it.
pub struct Upload {
    pub data: Vec<u8>,
    /// Declared media type; empty: the sniffed one.
    pub media_type: String,
    pub name: String,
}

fn fail(code: AttachmentCode, message: impl Into<String>) -> AttachmentFailure {
    AttachmentFailure::new(code, message)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A display name without any path: the last segment of either separator style, control
/// characters removed, at most 255 characters.
fn display_name(name: &str) -> Option<String> {
    let leaf = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = leaf.chars().filter(|c| !c.is_control()).take(255).collect();
    let clean = clean.trim();
    (!clean.is_empty()).then(|| clean.to_owned())
}

/// Checks one image against the limits; answers what it is.
pub fn admit(upload: &Upload, limits: &ImageLimits) -> Result<Sniffed, AttachmentFailure> {
    let declared = upload.media_type.as_str();
    if !declared.is_empty() && !IMAGE_MEDIA_TYPES.contains(&declared) {
        return Err(fail(
            AttachmentCode::UnsupportedImageType,
            format!("{declared} is not an accepted image type (PNG, JPEG, WebP or GIF)"),
        ));
    }
    let bytes = upload.data.len() as u64;
    if bytes > limits.max_image_bytes {
        return Err(fail(
            AttachmentCode::ImageTooLarge,
            format!(
                "the image is {} ({bytes} bytes), over the {} limit of one image (maxImageBytes {})",
                mib(bytes),
                mib(limits.max_image_bytes),
                limits.max_image_bytes
            ),
        ));
    }
    let Some(image) = sniff(&upload.data) else {
        return Err(fail(
            AttachmentCode::InvalidImage,
            "the data is not a PNG, JPEG, WebP or GIF image (its bytes were read, not its name)",
        ));
    };
    if !limits.media_types.iter().any(|t| t == image.media_type) {
        return Err(fail(
            AttachmentCode::UnsupportedImageType,
            format!("{} images are not accepted here", image.media_type),
        ));
    }
    if !declared.is_empty() && declared != image.media_type {
        return Err(fail(
            AttachmentCode::ImageTypeMismatch,
            format!(
                "declared {declared}, but the bytes are {}",
                image.media_type
            ),
        ));
    }
    if u64::from(image.width) * u64::from(image.height) > limits.max_image_pixels {
        return Err(fail(
            AttachmentCode::ImageTooManyPixels,
            format!(
                "the image is {}x{} px, over the {}-pixel limit (maxImagePixels)",
                image.width, image.height, limits.max_image_pixels
            ),
        ));
    }
    if image.width.max(image.height) > limits.max_image_dimension {
        return Err(fail(
            AttachmentCode::ImageDimensionTooLarge,
            format!(
                "the image is {}x{} px; at least one side exceeds the {}px limit (maxImageDimension)",
                image.width, image.height, limits.max_image_dimension
            ),
        ));
    }
    Ok(image)
}

/// Checks a message's batch: its count and total size, then each image.
pub fn admit_batch(
    uploads: &[Upload],
    limits: &ImageLimits,
) -> Result<Vec<Sniffed>, AttachmentFailure> {
    if uploads.len() as u64 > limits.max_images_per_message {
        return Err(fail(
            AttachmentCode::TooManyImages,
            format!(
                "{} images in one message, over the limit of {} (maxImagesPerMessage)",
                uploads.len(),
                limits.max_images_per_message
            ),
        ));
    }
    let total: u64 = uploads.iter().map(|u| u.data.len() as u64).sum();
    if total > limits.max_message_image_bytes {
        return Err(fail(
            AttachmentCode::ImagesTooLarge,
            format!(
                "the message's images are {} together, over the {} limit (maxMessageImageBytes)",
                mib(total),
                mib(limits.max_message_image_bytes)
            ),
        ));
    }
    uploads.iter().map(|upload| admit(upload, limits)).collect()
}

/// The store under `root` (`$DSH_HOME/attachments`).
pub struct Store {
    root: PathBuf,
}

fn private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into().join("v1"),
        }
    }

    fn object(&self, digest: &str) -> PathBuf {
        self.root.join("objects").join(&digest[..2]).join(digest)
    }

    /// Writes an admitted image (idempotent: an object already stored is verified, not
    /// rewritten); answers its reference.
    pub fn write(
        &self,
        upload: &Upload,
        image: Sniffed,
    ) -> Result<ImageAttachment, AttachmentFailure> {
        let digest = hex(&Sha256::digest(&upload.data));
        let target = self.object(&digest);
        let failed = |error: std::io::Error| {
            fail(
                AttachmentCode::AttachmentWriteFailed,
                format!(
                    "cannot store the image under {}: {error}",
                    self.root.display()
                ),
            )
        };
        let bucket = target.parent().map(Path::to_path_buf).unwrap_or_default();
        let staging = self.root.join("tmp");
        private_dir(&bucket).map_err(failed)?;
        private_dir(&staging).map_err(failed)?;
        let scratch = staging.join(format!(
            "{digest}.{}.{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        let staged = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&scratch)?;
            file.write_all(&upload.data)?;
            file.sync_all()
        })();
        if let Err(error) = staged {
            let _ = std::fs::remove_file(&scratch);
            return Err(failed(error));
        }
        let linked = std::fs::hard_link(&scratch, &target);
        let _ = std::fs::remove_file(&scratch);
        match linked {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let existing = std::fs::read(&target).map_err(failed)?;
                if hex(&Sha256::digest(&existing)) != digest {
                    return Err(fail(
                        AttachmentCode::AttachmentCorrupt,
                        format!("the stored object sha256:{digest} does not match its digest"),
                    ));
                }
            }
            Err(error) => return Err(failed(error)),
        }
        sync_dir(&bucket).map_err(failed)?;
        Ok(reference(upload, image, &digest))
    }

    /// The bytes of `attachment`, verified against its digest and its metadata.
    pub fn read(&self, attachment: &ImageAttachment) -> Result<Vec<u8>, AttachmentFailure> {
        let id = attachment.attachment_id.as_str();
        let digest = digest_of(id)?;
        let data = match std::fs::read(self.object(digest)) {
            Ok(data) => data,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(id));
            }
            Err(error) => {
                return Err(fail(
                    AttachmentCode::AttachmentReadFailed,
                    format!("cannot read the image {id}: {error}"),
                ));
            }
        };
        verified(attachment, data)
    }
}

/// The failure of an id no store holds.
pub(crate) fn not_found(id: &str) -> AttachmentFailure {
    fail(
        AttachmentCode::AttachmentNotFound,
        format!("the image {id} is not in the store"),
    )
}

/// The hex digest an attachment id names (`sha256:<64 lowercase hex digits>`).
pub(crate) fn digest_of(id: &str) -> Result<&str, AttachmentFailure> {
    id.strip_prefix("sha256:")
        .filter(|hex| {
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .ok_or_else(|| {
            fail(
                AttachmentCode::InvalidAttachmentRef,
                format!("`{id}` is not an attachment id (sha256:<64 lowercase hex digits>)"),
            )
        })
}

/// `data` as read for `attachment`, if it is what the reference says: its digest, its type,
/// its size and its dimensions.
pub(crate) fn verified(
    attachment: &ImageAttachment,
    data: Vec<u8>,
) -> Result<Vec<u8>, AttachmentFailure> {
    let id = attachment.attachment_id.as_str();
    let corrupt = || {
        fail(
            AttachmentCode::AttachmentCorrupt,
            format!("the stored image {id} does not match its reference"),
        )
    };
    if Some(hex(&Sha256::digest(&data)).as_str()) != id.strip_prefix("sha256:") {
        return Err(corrupt());
    }
    let image = sniff(&data).ok_or_else(corrupt)?;
    if image.media_type != attachment.media_type
        || data.len() as u64 != attachment.bytes
        || image.width != attachment.width
        || image.height != attachment.height
    {
        return Err(corrupt());
    }
    Ok(data)
}

/// The reference of an admitted image stored under `digest`.
pub(crate) fn reference(upload: &Upload, image: Sniffed, digest: &str) -> ImageAttachment {
    ImageAttachment {
        attachment_id: format!("sha256:{digest}"),
        media_type: image.media_type.to_owned(),
        bytes: upload.data.len() as u64,
        width: image.width,
        height: image.height,
        name: display_name(&upload.name),
    }
}

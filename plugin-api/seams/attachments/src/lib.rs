//! `dsh-attachments-seam`: the content-addressed image store across the plugin ABI. An image
//! is admitted once (its type sniffed from its bytes, its size and dimensions checked against
//! the store's limits), kept under its sha256, and referred to from then on by a
//! [`dsh_protocol::ImageAttachment`] (`sha256:<hex>` plus its type, size and dimensions), which
//! is what a session log holds. Readers (model adapters, clients) get the bytes back by that
//! reference, verified against the digest.
//!
//! Refusals carry a stable [`AttachmentCode`] and a message naming the limit, so a client, a
//! tool and an editor can route on the code and show the message as it is.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

mod base64;
mod route;

pub use base64::{decode_base64, encode_base64};
pub use route::{ROUTE_SERVICES, Route, accepts_images, session_route};

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString, RVec};
use async_ffi::FfiFuture;
use dsh_plugin_api::Json;
use dsh_protocol::ImageAttachment;
use serde::{Deserialize, Serialize};

/// Service key of the attachment store.
pub const ATTACHMENTS_SERVICE: &str = "attachments";

/// The image types the store admits, as media types.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// Why an attachment was refused or could not be read. The admission codes are the
/// reference's, so a client written against it routes the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AttachmentCode {
    /// More images in one message than `maxImagesPerMessage`.
    TooManyImages,
    /// One message's images together over `maxMessageImageBytes`.
    ImagesTooLarge,
    /// A declared type outside PNG, JPEG, WebP and GIF.
    UnsupportedImageType,
    /// Upload data that is not canonical base64.
    InvalidImageBase64,
    /// Bytes that are not a PNG, JPEG, WebP or GIF image (or are cut short).
    InvalidImage,
    /// A declared type that is not the type of the bytes.
    ImageTypeMismatch,
    /// One image over `maxImageBytes`.
    ImageTooLarge,
    /// One image over `maxImagePixels` (width times height).
    ImageTooManyPixels,
    /// A side over `maxImageDimension`.
    ImageDimensionTooLarge,
    /// A reference that is not `sha256:<64 hex>`.
    InvalidAttachmentRef,
    /// Stored bytes whose digest or metadata differ from the reference.
    AttachmentCorrupt,
    AttachmentWriteFailed,
    AttachmentNotFound,
    AttachmentReadFailed,
}

impl AttachmentCode {
    /// The code as it is written on the wire (`IMAGE_TOO_LARGE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooManyImages => "TOO_MANY_IMAGES",
            Self::ImagesTooLarge => "IMAGES_TOO_LARGE",
            Self::UnsupportedImageType => "UNSUPPORTED_IMAGE_TYPE",
            Self::InvalidImageBase64 => "INVALID_IMAGE_BASE64",
            Self::InvalidImage => "INVALID_IMAGE",
            Self::ImageTypeMismatch => "IMAGE_TYPE_MISMATCH",
            Self::ImageTooLarge => "IMAGE_TOO_LARGE",
            Self::ImageTooManyPixels => "IMAGE_TOO_MANY_PIXELS",
            Self::ImageDimensionTooLarge => "IMAGE_DIMENSION_TOO_LARGE",
            Self::InvalidAttachmentRef => "INVALID_ATTACHMENT_REF",
            Self::AttachmentCorrupt => "ATTACHMENT_CORRUPT",
            Self::AttachmentWriteFailed => "ATTACHMENT_WRITE_FAILED",
            Self::AttachmentNotFound => "ATTACHMENT_NOT_FOUND",
            Self::AttachmentReadFailed => "ATTACHMENT_READ_FAILED",
        }
    }

    /// Whether the caller can correct it (the image or the batch), rather than the store
    /// failing.
    pub fn is_admission(self) -> bool {
        !matches!(
            self,
            Self::InvalidAttachmentRef
                | Self::AttachmentCorrupt
                | Self::AttachmentWriteFailed
                | Self::AttachmentNotFound
                | Self::AttachmentReadFailed
        )
    }
}

/// A refusal: its code and a message for a person that names the limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct AttachmentFailure {
    pub code: AttachmentCode,
    pub message: String,
}

impl AttachmentFailure {
    pub fn new(code: AttachmentCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The limits the store admits images under (the reference's defaults in brackets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageLimits {
    /// Encoded bytes of one image [3.5 MiB].
    pub max_image_bytes: u64,
    /// Images in one message [20].
    pub max_images_per_message: u64,
    /// Encoded bytes of one message's images together [100 MiB].
    pub max_message_image_bytes: u64,
    /// Width times height of one image [40,000,000].
    pub max_image_pixels: u64,
    /// Width, and height, of one image [2000].
    pub max_image_dimension: u32,
    /// The admitted media types.
    pub media_types: Vec<String>,
}

/// One image to admit: its bytes, the type its sender declared (empty: take the sniffed one)
/// and a display name (never read as a path; empty: none).
#[repr(C)]
#[derive(abi_stable::StableAbi, Debug, Clone)]
pub struct NewImage {
    pub data: RVec<u8>,
    pub media_type: RString,
    pub name: RString,
}

/// What [`Attachments::save`] answers: the references in order, or the batch's refusal.
pub type Saved = RResult<Json<Vec<ImageAttachment>>, Json<AttachmentFailure>>;

/// The store.
#[sabi_trait]
pub trait Attachments: Send + Sync {
    /// The limits images are admitted under.
    fn limits(&self) -> Json<ImageLimits>;
    /// Admits `images` as one message's batch (count and total size checked first, then each
    /// image) and stores each under its sha256; answers their references in order. Nothing
    /// of a refused batch is kept.
    fn save(&self, images: RVec<NewImage>) -> FfiFuture<Saved>;
    /// The bytes of a stored image, verified against its digest and its reference.
    fn read(
        &self,
        attachment: Json<ImageAttachment>,
    ) -> FfiFuture<RResult<RVec<u8>, Json<AttachmentFailure>>>;
}
pub type AttachmentsService = Attachments_TO<'static, RBox<()>>;

/// The failure a [`Json<AttachmentFailure>`] holds, or a failure saying it did not decode.
pub fn decode_failure(failure: &Json<AttachmentFailure>) -> AttachmentFailure {
    failure.decode().unwrap_or_else(|error| {
        AttachmentFailure::new(
            AttachmentCode::AttachmentReadFailed,
            format!("the attachment store answered an unreadable failure: {error}"),
        )
    })
}

//! `session.attachment`: an image uploaded ahead of the prompt that carries it. The store
//! answers its reference (`sha256:<hex>` with its type, size and dimensions), which the
//! prompt's `images` name; refusals are `attachment-rejected` with the store's code first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `attachment.read`'s payload: a stored image's reference (as a chat item carries it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadAttachment {
    pub attachment: dsh_protocol::ImageAttachment,
}

/// `attachment.read`'s value: the image's type and its bytes, base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentData {
    pub media_type: String,
    pub data: String,
}

/// `session.attachment`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadImage {
    /// The session the image is for: its model must take images.
    pub session_id: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/gif`, checked against the bytes.
    pub media_type: String,
    /// The bytes, canonical base64.
    pub data: String,
    /// A display name (a file's name; never read as a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

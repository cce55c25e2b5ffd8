//! The bytes of a request's images, from the `attachments` store: only the images that stay
//! in the request once the oldest have given way to the budget (`maxRequestImageBytes`) are
//! read, each once, verified by the store against its digest. A missing store, or an image
//! the store cannot give back, fails the request with the store's code.

use std::collections::HashMap;

use dsh_attachments_seam::{ATTACHMENTS_SERVICE, AttachmentsService, decode_failure};
use dsh_llm_kit::offload_request_images;
use dsh_plugin_api::{Context, Json};
use dsh_protocol::{
    ContentBlock, FailureCode, GenerateRequest, ImageAttachment, LlmFailure, content_has_image,
};

use crate::AdapterConfig;

fn collect<'a>(blocks: &'a [ContentBlock], out: &mut Vec<&'a ImageAttachment>) {
    for block in blocks {
        match block {
            ContentBlock::Image { attachment } => out.push(attachment),
            ContentBlock::ToolResult { content, .. } => collect(content, out),
            _ => {}
        }
    }
}

/// The image bytes `request` needs, by attachment id (empty when it holds no image).
pub(crate) async fn read_images(
    ctx: &Context,
    config: &AdapterConfig,
    request: &GenerateRequest,
) -> Result<HashMap<String, Vec<u8>>, LlmFailure> {
    let mut bytes = HashMap::new();
    if !request
        .messages
        .iter()
        .any(|message| content_has_image(&message.content))
    {
        return Ok(bytes);
    }
    // A text-only model is refused by the serializer before any image is read.
    let takes_images = config
        .catalog_entry(&request.config.model)
        .is_some_and(|entry| entry.accepts(dsh_protocol::Modality::Image));
    if !takes_images {
        return Ok(bytes);
    }
    let kept = offload_request_images(&request.messages, Some(config.max_request_image_bytes));
    let mut wanted = Vec::new();
    for message in kept.iter() {
        collect(&message.content, &mut wanted);
    }
    if wanted.is_empty() {
        return Ok(bytes);
    }
    let Ok(Some(store)) = ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE) else {
        // The serializer answers this case with the reference's wording.
        return Ok(bytes);
    };
    for attachment in wanted {
        if bytes.contains_key(&attachment.attachment_id) {
            continue;
        }
        match store.read(Json::encode(attachment)).await.into_result() {
            Ok(data) => {
                bytes.insert(attachment.attachment_id.clone(), data.into_vec());
            }
            Err(failure) => {
                let failure = decode_failure(&failure);
                return Err(LlmFailure::new(
                    FailureCode::Other(failure.code.as_str().to_owned()),
                    failure.message,
                ));
            }
        }
    }
    Ok(bytes)
}

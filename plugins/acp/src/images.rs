//! Images in prompts: advertised (`promptCapabilities.image`) when an attachment store is
//! mounted and the row's model is catalogued as taking images, and admitted as the reference
//! admits them: each image's `mimeType` one of PNG, JPEG, WebP or GIF and its `data` canonical
//! base64, the session's model able to take them, then the batch stored (its size, type and
//! 2000 px limits are the store's, refused with -32602 and the store's coded message). The
//! prompt's user message then holds the images in their places between its texts.

use std::sync::Arc;

use abi_stable::std_types::{RString, RVec};
use dsh_attachments_seam::{
    ATTACHMENTS_SERVICE, AttachmentsService, IMAGE_MEDIA_TYPES, NewImage, Route, accepts_images,
    decode_base64, decode_failure, session_route,
};
use dsh_plugin_api::lock;
use dsh_protocol::ImageAttachment;

use crate::schema::ContentBlock;
use crate::server::Server;
use crate::wire::RpcError;

/// Whether `prompt` holds an image.
pub(crate) fn has_images(prompt: &[ContentBlock]) -> bool {
    prompt
        .iter()
        .any(|block| matches!(block, ContentBlock::Image { .. }))
}

/// Whether this agent takes images in prompts: a store is mounted and the model of new
/// sessions is catalogued as taking them.
pub(crate) fn advertised(server: &Server) -> bool {
    let (provider, model) = lock(&server.route).clone();
    matches!(
        server.ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE),
        Ok(Some(_))
    ) && !model.is_empty()
        && accepts_images(&server.ctx, &Route { provider, model })
}

/// Checks and stores the images of a prompt to `session`, in order.
pub(crate) async fn store(
    server: &Arc<Server>,
    session: &str,
    prompt: &[ContentBlock],
) -> Result<Vec<ImageAttachment>, RpcError> {
    if !advertised(server) {
        return Err(RpcError::invalid_params(
            "inline image prompts were not advertised by this connection",
        ));
    }
    let mut images = Vec::new();
    for block in prompt {
        let ContentBlock::Image { data, mime_type } = block else {
            continue;
        };
        if !IMAGE_MEDIA_TYPES.contains(&mime_type.as_str()) {
            return Err(RpcError::invalid_params(
                "image mimeType must be image/png, image/jpeg, image/webp, or image/gif",
            ));
        }
        let bytes = decode_base64(data)
            .map_err(|_| RpcError::invalid_params("image data must be canonical base64"))?;
        images.push(NewImage {
            data: RVec::from(bytes),
            media_type: RString::from(mime_type.as_str()),
            name: RString::new(),
        });
    }
    let Ok(Some(attachments)) = server.ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE) else {
        return Err(RpcError::invalid_params("no attachment store is mounted"));
    };
    let route = session_route(&server.ctx, session).ok_or_else(|| {
        RpcError::invalid_params("the current model route could not be resolved for image input")
    })?;
    if !accepts_images(&server.ctx, &route) {
        return Err(RpcError::invalid_params(format!(
            "model \"{}\" does not declare image input",
            route.model
        )));
    }
    let saving = attachments.save(RVec::from(images));
    drop(attachments);
    match saving.await.into_result() {
        Ok(refs) => refs
            .decode()
            .map_err(|error| RpcError::internal(format!("the attachment store answered: {error}"))),
        Err(failure) => {
            let failure = decode_failure(&failure);
            match failure.code.is_admission() {
                true => Err(RpcError::invalid_params(failure)),
                false => Err(RpcError::internal(format!(
                    "unable to persist the prompt image batch: {failure}"
                ))),
            }
        }
    }
}

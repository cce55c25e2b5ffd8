//! Images in MCP tool results, passed on as images: each `image` block of a successful call is
//! admitted to the `attachments` store (the same limits as a pasted image) and follows the
//! result's text as an image block, when the calling session's model takes images. Otherwise,
//! or when the store refuses it, the image is described in the text, saying why it is not
//! shown (the model never gets base64 as text).

use abi_stable::std_types::{RString, RVec};
use dsh_attachments_seam::{
    ATTACHMENTS_SERVICE, AttachmentsService, NewImage, Route, accepts_images, decode_base64,
    decode_failure, session_route,
};
use dsh_plugin_api::Context;
use dsh_protocol::{ContentBlock, ToolReply};

use crate::protocol::{CallResult, Content};
use crate::results;

fn described(mime_type: &str, data: &str, why: &str) -> Content {
    let bytes = (data.trim().len() * 3 / 4)
        .saturating_sub(data.bytes().rev().take_while(|b| *b == b'=').count());
    Content::Text {
        text: format!("[image: {mime_type}, {bytes} bytes; not shown: {why}]"),
    }
}

/// The reply of a call of `tool` of `server` made by `session`, its images stored and passed
/// on where they can be.
pub(crate) async fn reply(
    ctx: &Context,
    session: &str,
    server: &str,
    tool: &str,
    mut result: CallResult,
) -> ToolReply {
    if result.is_error
        || !result
            .content
            .iter()
            .any(|content| matches!(content, Content::Image { .. }))
    {
        return results::reply(server, tool, result);
    }
    let route = session_route(ctx, session);
    let refusal = match (&route, ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE)) {
        (_, Ok(None) | Err(_)) => Some("no attachment store is mounted".to_owned()),
        (None, _) => Some("the session's model route is unknown".to_owned()),
        (Some(route @ Route { model, .. }), Ok(Some(_))) if !accepts_images(ctx, route) => {
            Some(format!("model \"{model}\" takes no images"))
        }
        _ => None,
    };
    let mut images = Vec::new();
    let mut content = Vec::with_capacity(result.content.len());
    for block in std::mem::take(&mut result.content) {
        let Content::Image { data, mime_type } = block else {
            content.push(block);
            continue;
        };
        if let Some(why) = &refusal {
            content.push(described(&mime_type, &data, why));
            continue;
        }
        match store(ctx, &data, &mime_type).await {
            Ok(attachment) => images.push(ContentBlock::Image { attachment }),
            Err(NotStored(why)) => content.push(described(&mime_type, &data, &why)),
        }
    }
    result.content = content;
    let mut reply = results::reply(server, tool, result);
    if let ToolReply::Ok(success) = &mut reply {
        success.content.extend(images);
    }
    reply
}

/// Why an image was not stored, said in the result in its place.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotStored(String);

/// Stores one image; the store's refusal, as a reason.
async fn store(
    ctx: &Context,
    data: &str,
    mime_type: &str,
) -> Result<dsh_protocol::ImageAttachment, NotStored> {
    let bytes = decode_base64(data).map_err(|failure| NotStored(failure.to_string()))?;
    let Ok(Some(store)) = ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE) else {
        return Err(NotStored("no attachment store is mounted".to_owned()));
    };
    let image = NewImage {
        data: RVec::from(bytes),
        media_type: RString::from(mime_type),
        name: RString::new(),
    };
    let saving = store.save(RVec::from(vec![image]));
    drop(store);
    let refs = saving
        .await
        .into_result()
        .map_err(|failure| NotStored(decode_failure(&failure).to_string()))?;
    refs.decode()
        .ok()
        .and_then(|refs| refs.into_iter().next())
        .ok_or_else(|| NotStored("the attachment store answered no reference".to_owned()))
}

//! Images from clients: `session.attachment` stores one (its bytes canonical base64, its type
//! checked against them, within the store's limits) and answers its reference; a prompt's
//! `images` must name stored images, and the session's model must take images (an image in
//! the log rides every later request, so a text-only route refuses it up front). Refusals are
//! `attachment-rejected`, the store's code first (`IMAGE_TOO_LARGE: ...`).

use abi_stable::std_types::{RString, RVec};
use dsh_attachments_seam::{
    ATTACHMENTS_SERVICE, AttachmentFailure, AttachmentsService, NewImage, accepts_images,
    decode_base64, decode_failure, encode_base64, session_route,
};
use dsh_client_protocol::{AttachmentData, ReadAttachment, RpcErrorCode, UploadImage};
use dsh_plugin_api::Json;
use dsh_protocol::ImageAttachment;

use crate::api::{Api, Failure};

fn rejected(failure: &AttachmentFailure) -> Failure {
    match failure.code.is_admission() {
        true => Failure(RpcErrorCode::AttachmentRejected, failure.to_string()),
        false => Failure::internal(failure.to_string()),
    }
}

impl Api {
    fn attachments(&self) -> Result<dsh_plugin_api::Service<AttachmentsService>, Failure> {
        match self.ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE) {
            Ok(Some(store)) => Ok(store),
            _ => Err(Failure(
                RpcErrorCode::AttachmentRejected,
                "images are not taken here: no attachment store is mounted".to_owned(),
            )),
        }
    }

    /// Refuses images for `session` unless its model takes them.
    fn check_route(&self, session: &str) -> Result<(), Failure> {
        let route = session_route(&self.ctx, session).ok_or_else(|| {
            Failure(
                RpcErrorCode::SessionNotFound,
                format!("session {session} has no model route to send images to"),
            )
        })?;
        if !accepts_images(&self.ctx, &route) {
            return Err(Failure(
                RpcErrorCode::AttachmentRejected,
                format!(
                    "UNSUPPORTED_CONTENT: model \"{}/{}\" does not declare image input; choose an image-capable model to send images",
                    route.provider, route.model
                ),
            ));
        }
        Ok(())
    }

    /// `session.attachment`.
    pub(crate) async fn attachment(
        &self,
        request: UploadImage,
    ) -> Result<ImageAttachment, Failure> {
        let store = self.attachments()?;
        self.check_route(&request.session_id)?;
        let data = decode_base64(&request.data).map_err(|failure| rejected(&failure))?;
        let image = NewImage {
            data: RVec::from(data),
            media_type: RString::from(request.media_type),
            name: RString::from(request.name.unwrap_or_default()),
        };
        let saving = store.save(RVec::from(vec![image]));
        drop(store);
        let refs = saving
            .await
            .into_result()
            .map_err(|failure| rejected(&decode_failure(&failure)))?
            .decode()
            .map_err(|error| {
                Failure::internal(format!("the attachment store answered: {error}"))
            })?;
        refs.into_iter()
            .next()
            .ok_or_else(|| Failure::internal("the attachment store answered no reference"))
    }

    /// `attachment.read`: a stored image's bytes, base64 (the page shows a prompt's images).
    pub(crate) async fn read_attachment(
        &self,
        request: ReadAttachment,
    ) -> Result<AttachmentData, Failure> {
        let store = self.attachments()?;
        let reading = store.read(Json::encode(&request.attachment));
        drop(store);
        let bytes = reading
            .await
            .into_result()
            .map_err(|failure| rejected(&decode_failure(&failure)))?;
        Ok(AttachmentData {
            media_type: request.attachment.media_type,
            data: encode_base64(&bytes),
        })
    }

    /// Checks a prompt's images: the session's model takes them and each is in the store as
    /// its reference says (verified against its digest).
    pub(crate) async fn check_prompt_images(
        &self,
        session: &str,
        images: &[ImageAttachment],
    ) -> Result<(), Failure> {
        if images.is_empty() {
            return Ok(());
        }
        let store = self.attachments()?;
        self.check_route(session)?;
        for image in images {
            store
                .read(Json::encode(image))
                .await
                .into_result()
                .map_err(|failure| rejected(&decode_failure(&failure)))?;
        }
        Ok(())
    }
}

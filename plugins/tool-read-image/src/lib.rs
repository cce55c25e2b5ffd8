//! Plugin `tool-read-image`: the `read_image` tool (`file_path`). It reads a PNG, JPEG, WebP
//! or GIF file where `read` could read it, admits it to the `attachments` store (the same
//! admission as a pasted image: type from the bytes, size and the 2000 px side limit) and
//! answers a short envelope and the image block, which the model sees from its next request.
//!
//! Every gate runs before the file is read: the path must name an image type, a store must be
//! mounted and the session's model must be catalogued as taking images (strictly, as the
//! reference: the result enters the log and rides every later request, so an image on a route
//! that cannot carry it would break the session). Refusals are tool errors the model can act
//! on: an oversized image is never stored.

mod workspace;

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_attachments_seam::{
    ATTACHMENTS_SERVICE, AttachmentCode, AttachmentsService, ImageLimits, NewImage, ROUTE_SERVICES,
    accepts_images, decode_failure, session_route,
};
use dsh_fs_local::{FileSystem, Remote, WithStrict};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::io::fs::{FS_SERVICE, FS_STRICT_SERVICE, FsService, FsStrictService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{SeamError, Serialize};
use dsh_protocol::{
    Concurrency, ContentBlock, Guidance, ImageAttachment, OutcomeSummary, ToolDecl, ToolReply,
    ToolSuccess,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};
use serde_json::{Value, json};

const NAME: &str = "read_image";

/// The extensions a path may claim (the bytes decide what it is).
const EXTENSIONS: [(&str, &str); 5] = [
    (".png", "image/png"),
    (".jpg", "image/jpeg"),
    (".jpeg", "image/jpeg"),
    (".webp", "image/webp"),
    (".gif", "image/gif"),
];

/// Why a call is refused: the tool error's text, for the model.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refusal(String);

/// The call's arguments (the registry checked them against the schema).
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Args {
    #[serde(default)]
    file_path: String,
}

/// The result's value: the path read and the stored image.
#[derive(Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct ImageRead {
    path: String,
    image: ImageAttachment,
}

impl ImageRead {
    fn content(&self) -> Vec<ContentBlock> {
        let image = &self.image;
        vec![
            ContentBlock::text(format!(
                "<path>{}</path>\n<type>image</type>\n<content>\n{} image, {}x{} px, {} bytes\n</content>",
                self.path, image.media_type, image.width, image.height, image.bytes
            )),
            ContentBlock::Image {
                attachment: image.clone(),
            },
        ]
    }
}

fn spec() -> ToolDecl {
    let mut decl = ToolDecl::new(
        NAME,
        "Read a PNG/JPEG/WebP/GIF file and return the image itself. Requires the current model to accept image input.",
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path to the image file, resolved against the working directory."},
            },
            "required": ["file_path"],
            "additionalProperties": false,
        }),
    );
    // Storing is idempotent (by digest), so reads may overlap.
    decl.concurrency = Concurrency::Parallel;
    decl.guidance = Some(Guidance {
        order: 105,
        text: "To look at an image file (a screenshot, a diagram), use read_image; read only reads text.".to_owned(),
    });
    decl
}

struct ReadImage {
    ctx: Context,
    fs: Arc<dyn FileSystem>,
}

impl ReadImage {
    async fn run(&self, call: &CallView) -> Result<ImageRead, Refusal> {
        let requested = serde_json::from_str::<Args>(&call.arguments)
            .map(|args| args.file_path)
            .unwrap_or_default();
        if requested.trim().is_empty() {
            return Err(Refusal("file_path must be a non-empty string".to_owned()));
        }
        let lower = requested.to_ascii_lowercase();
        if !EXTENSIONS.iter().any(|(ext, _)| lower.ends_with(ext)) {
            return Err(Refusal(format!(
                "cannot read \"{requested}\": read_image only accepts PNG/JPEG/WebP/GIF paths"
            )));
        }
        let Ok(Some(store)) = self.ctx.get::<AttachmentsService>(ATTACHMENTS_SERVICE) else {
            return Err(Refusal(format!(
                "cannot read \"{requested}\" as an image: no attachment service is mounted"
            )));
        };
        let route = session_route(&self.ctx, &call.session).ok_or_else(|| {
            Refusal(format!(
                "cannot read \"{requested}\" as an image: the current model route could not be resolved"
            ))
        })?;
        if !accepts_images(&self.ctx, &route) {
            return Err(Refusal(format!(
                "cannot read \"{requested}\" as an image: model \"{}\" does not declare image input; switch to an image-capable model to read images",
                route.model
            )));
        }
        let limits: ImageLimits = store.limits().decode().map_err(|error| {
            Refusal(format!(
                "the attachment store's limits do not read: {error}"
            ))
        })?;
        let workspace = workspace::workspace(&self.ctx, self.fs.clone(), call);
        let cap = limits.max_image_bytes.min(limits.max_message_image_bytes);
        let (display, data) = self
            .ctx
            .blocking(move || read_file(&workspace, &requested, cap))
            .await
            .map_err(|error| Refusal(error.to_string()))??;
        let name = display.rsplit('/').next().unwrap_or_default().to_owned();
        let image = NewImage {
            data: RVec::from(data),
            media_type: RString::new(),
            name: name.into(),
        };
        let saved = store.save(RVec::from(vec![image])).await.into_result();
        let refs = match saved {
            Ok(refs) => refs.decode().map_err(|error| Refusal(error.to_string()))?,
            Err(failure) => {
                let failure = decode_failure(&failure);
                return Err(Refusal(match failure.code {
                    AttachmentCode::ImageDimensionTooLarge => format!(
                        "cannot read \"{display}\": at least one image side exceeds the {}px limit; downscale the image and read the smaller copy",
                        limits.max_image_dimension
                    ),
                    AttachmentCode::ImageTooManyPixels => format!(
                        "cannot read \"{display}\": the image exceeds the {}-pixel decoded-size limit; downscale the image and read the smaller copy",
                        limits.max_image_pixels
                    ),
                    _ => format!("cannot read \"{display}\" as an image: {failure}"),
                }));
            }
        };
        let image = refs
            .into_iter()
            .next()
            .ok_or_else(|| Refusal("the attachment store answered no reference".to_owned()))?;
        Ok(ImageRead {
            path: display,
            image,
        })
    }
}

/// Resolves and reads the file within the workspace's read policy, refusing one over `cap`
/// bytes before reading it. Answers the displayed path and the bytes.
fn read_file(
    workspace: &dsh_tool_fs_core::Workspace,
    requested: &str,
    cap: u64,
) -> Result<(String, Vec<u8>), Refusal> {
    let target = workspace
        .resolve(requested)
        .map_err(|error| Refusal(error.message().to_owned()))?;
    workspace
        .check_readable(&target)
        .map_err(|error| Refusal(error.message().to_owned()))?;
    let display = target.display.clone();
    let fs = workspace.fs();
    let stat = fs
        .stat(&target.key)
        .map_err(|error| Refusal(format!("cannot read \"{display}\": {error}")))?;
    let Some(stat) = stat else {
        return Err(Refusal(format!("cannot read \"{display}\": not found")));
    };
    if !stat.is_file() {
        return Err(Refusal(format!(
            "cannot read \"{display}\": not a regular file"
        )));
    }
    if stat.len > cap {
        return Err(Refusal(format!(
            "cannot read \"{display}\" as an image: IMAGE_TOO_LARGE: the file is {} bytes, over the {cap}-byte limit of one image (maxImageBytes)",
            stat.len
        )));
    }
    let data = dsh_fs_local::read_all(fs, &target.key)
        .map_err(|error| Refusal(format!("cannot read \"{display}\": {error}")))?;
    Ok((display, data))
}

impl Tool for ReadImage {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&spec())
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = ReadImage {
            ctx: self.ctx.clone(),
            fs: self.fs.clone(),
        };
        async move {
            let reply = match tool.run(&call).await {
                Ok(read) => ToolReply::Ok(ToolSuccess {
                    value: serde_json::to_value(&read).unwrap_or_default(),
                    content: read.content(),
                    meta: None,
                    concludes_turn: false,
                }),
                Err(Refusal(message)) => ToolReply::error(message),
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }

    fn render(&self, value: Json<Value>) -> ROption<Json<Vec<ContentBlock>>> {
        let read = value
            .decode()
            .ok()
            .and_then(|value| serde_json::from_value::<ImageRead>(value).ok());
        match read {
            Some(read) => RSome(Json::encode(&read.content())),
            None => RNone,
        }
    }
}

pub struct ReadImagePlugin;

impl Plugin for ReadImagePlugin {
    const NAME: &'static str = "tool-read-image";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, FS_SERVICE, ATTACHMENTS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sandbox_seam::SANDBOX_SERVICE,
        FS_STRICT_SERVICE,
        ROUTE_SERVICES[0],
        ROUTE_SERVICES[1],
        ROUTE_SERVICES[2],
    ];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let strict = ctx.get::<FsStrictService>(FS_STRICT_SERVICE).ok().flatten();
        let fs: Arc<dyn FileSystem> = Arc::new(WithStrict {
            fs: Remote(ctx.inject::<FsService>(FS_SERVICE)?),
            strict,
        });
        let tool = ReadImage {
            ctx: ctx.clone(),
            fs,
        };
        let registration = tools
            .register(RString::from(ctx.row_id()), RString::new(), tool_box(tool))
            .into_result()
            .map_err(|error: SeamError| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(ReadImagePlugin);

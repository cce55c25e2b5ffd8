//! The model seam's vocabulary: messages and content blocks, the stream chunks adapters emit,
//! token usage, finish reasons, failures with their stable codes, call configuration, tool
//! schemas, model catalog metadata, the assembled [`GenerateRequest`], and the
//! [`BlockAssembler`] that folds a chunk stream into the assistant message's content. Every type
//! serializes to exactly the JSON the reference writes into its session logs, so logs move
//! between the two implementations unchanged.
//!
//! It owns no adapter, no transport and no registry: provider wire formats live in the adapter
//! crates (`llm-deepseek`), the adapter registry and the `llm/stream` waterfall in the `llm`
//! service plugin, and retry policy in `llm-retry`.

mod assembler;
mod chunk;
mod classify;
mod content;
mod failure;
mod model;

pub use assembler::{AssemblyError, BlockAssembler};
pub use chunk::{FinishReason, ReplayEnvelope, StreamChunk, TokenUsage};
pub use classify::{is_context_window_exceeded, is_quota_exceeded};
pub use content::{
    BlockType, ContentBlock, ImageAttachment, Message, OFFLOADED_IMAGE_TEXT, Role, base64_len,
    content_has_image, offload_request_images,
};
pub use failure::{FailureCode, LlmFailure};
pub use model::{
    CallConfigAdapterDefaults, CatalogModel, GenerateRequest, HistoryRef, LlmCallConfig, Modality,
    ModelContext, ModelInfo, ModelReasoning, Purpose, ReasoningEffortInfo, ResolvedModelInfo,
    ToolSchema,
};

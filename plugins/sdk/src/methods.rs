//! The methods the SDK runtime owns (the reference's three: `initialize`, `session/prompt`,
//! `shutdown`) and their params, each checked field by field so a mistake is answered `-32602`
//! naming the field. A method it does not own goes to the client protocol's service (see
//! `door`).

use serde_json::{Map, Value};

use dsh_protocol::ContentBlock;

use dsh_json_rpc::wire::{RpcError, params_object};

/// The largest `maxTokens` (the reference's `Number.isSafeInteger` bound).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `initialize{cwd, provider, model, maxTokens?}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InitializeParams {
    /// As given; resolved against the runtime's `--cwd` (default: its working directory).
    pub(crate) cwd: Option<String>,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) max_tokens: Option<u64>,
}

/// `session/prompt{sessionId, contentBlocks}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromptParams {
    pub(crate) session_id: String,
    pub(crate) content: Vec<ContentBlock>,
}

/// A request for a method the runtime owns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Method {
    Initialize(InitializeParams),
    Prompt(PromptParams),
    Shutdown,
}

/// The runtime's own methods.
pub(crate) const INITIALIZE: &str = "initialize";
pub(crate) const PROMPT: &str = "session/prompt";
pub(crate) const SHUTDOWN: &str = "shutdown";

/// Reads `method` with `params`; `Ok(None)` when the method is not one of the runtime's own
/// (it goes to the client protocol's service).
pub(crate) fn parse(method: &str, params: Value) -> Result<Option<Method>, RpcError> {
    let parsed = match method {
        INITIALIZE => Method::Initialize(initialize(params_object(params)?)?),
        PROMPT => Method::Prompt(prompt(params_object(params)?)?),
        SHUTDOWN => Method::Shutdown,
        _ => return Ok(None),
    };
    Ok(Some(parsed))
}

fn initialize(mut params: Map<String, Value>) -> Result<InitializeParams, RpcError> {
    let cwd = match params.remove("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(cwd)) if !cwd.is_empty() => Some(cwd),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "cwd",
                "must be a non-empty string",
            ));
        }
    };
    let max_tokens = match params.remove("maxTokens") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(n) if (1..=MAX_SAFE_INTEGER).contains(&n) => Some(n),
            _ => {
                return Err(RpcError::invalid_params(
                    "maxTokens",
                    format!("must be a positive safe integer, not {value}"),
                ));
            }
        },
    };
    Ok(InitializeParams {
        cwd,
        provider: required_text(&mut params, "provider")?,
        model: required_text(&mut params, "model")?,
        max_tokens,
    })
}

fn prompt(mut params: Map<String, Value>) -> Result<PromptParams, RpcError> {
    let session_id = required_text(&mut params, "sessionId")?;
    dsh_protocol::check_session_id(&session_id)
        .map_err(|error| RpcError::invalid_params("sessionId", error))?;
    let blocks = match params.remove("contentBlocks") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => blocks,
        Some(Value::Array(_)) => {
            return Err(RpcError::invalid_params(
                "contentBlocks",
                "needs at least one block",
            ));
        }
        None => return Err(RpcError::invalid_params("contentBlocks", "is required")),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "contentBlocks",
                "must be an array of content blocks",
            ));
        }
    };
    let content = blocks
        .into_iter()
        .enumerate()
        .map(|(index, block)| {
            let field = format!("contentBlocks[{index}]");
            match serde_json::from_value::<ContentBlock>(block) {
                Ok(text @ ContentBlock::Text { .. }) => Ok(text),
                // Images need the attachment store, which is not built yet; the other kinds
                // are the model's and the tools', never a person's prompt.
                Ok(other) => Err(RpcError::invalid_params(
                    &field,
                    format!("only `text` blocks are taken, not `{}`", kind_of(&other)),
                )),
                Err(error) => Err(RpcError::invalid_params(&field, error)),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PromptParams {
        session_id,
        content,
    })
}

/// A block's `type`, as it was written.
fn kind_of(block: &ContentBlock) -> String {
    #[derive(dsh_plugin_api::serde::Deserialize)]
    #[serde(crate = "dsh_plugin_api::serde")]
    struct Tagged {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::to_value(block)
        .ok()
        .and_then(|value| serde_json::from_value::<Tagged>(value).ok())
        .map(|tagged| tagged.kind)
        .unwrap_or_default()
}

fn required_text(params: &mut Map<String, Value>, field: &str) -> Result<String, RpcError> {
    match params.remove(field) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text),
        Some(Value::String(_)) => Err(RpcError::invalid_params(field, "must not be empty")),
        None | Some(Value::Null) => Err(RpcError::invalid_params(field, "is required")),
        Some(other) => Err(RpcError::invalid_params(
            field,
            format!("must be a string, not {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_json_rpc::wire::INVALID_PARAMS;
    use serde_json::json;

    fn field_of(error: RpcError) -> String {
        assert_eq!(error.code, INVALID_PARAMS, "{error}");
        error.data.unwrap()["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn initialize_reads_and_names_its_mistakes() {
        let parsed = parse(
            "initialize",
            json!({"cwd": "/w", "provider": "p", "model": "m", "maxTokens": 64}),
        )
        .unwrap();
        assert_eq!(
            parsed,
            Some(Method::Initialize(InitializeParams {
                cwd: Some("/w".into()),
                provider: "p".into(),
                model: "m".into(),
                max_tokens: Some(64),
            }))
        );
        let missing = parse("initialize", json!({"cwd": "/w", "model": "m"})).unwrap_err();
        assert_eq!(field_of(missing), "provider");
        for bad in [
            json!(0),
            json!(-3),
            json!(1.5),
            json!("9"),
            json!(1_u64 << 60),
        ] {
            let error = parse(
                "initialize",
                json!({"provider": "p", "model": "m", "maxTokens": bad}),
            )
            .unwrap_err();
            assert_eq!(field_of(error), "maxTokens");
        }
        let error = parse("initialize", json!({"provider": 1, "model": "m"})).unwrap_err();
        assert!(error.message.contains("must be a string"));
    }

    #[test]
    fn prompt_reads_and_names_its_mistakes() {
        let parsed = parse(
            "session/prompt",
            json!({"sessionId": "s-1", "contentBlocks": [{"type": "text", "text": "hi"}]}),
        )
        .unwrap();
        assert!(matches!(parsed, Some(Method::Prompt(p)) if p.session_id == "s-1"));
        let cases = [
            (
                json!({"contentBlocks": [{"type": "text", "text": "x"}]}),
                "sessionId",
            ),
            (
                json!({"sessionId": "../up", "contentBlocks": []}),
                "sessionId",
            ),
            (json!({"sessionId": "s"}), "contentBlocks"),
            (
                json!({"sessionId": "s", "contentBlocks": []}),
                "contentBlocks",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": [{"type": "nope"}]}),
                "contentBlocks[0]",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": [{"type": "text"}]}),
                "contentBlocks[0]",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": [
                    {"type": "text", "text": "a"},
                    {"type": "reasoning", "text": "b"},
                ]}),
                "contentBlocks[1]",
            ),
        ];
        for (params, field) in cases {
            assert_eq!(
                field_of(parse("session/prompt", params).unwrap_err()),
                field
            );
        }
        assert_eq!(
            parse("session/prompt", json!([1])).unwrap_err().code,
            INVALID_PARAMS
        );
    }

    #[test]
    fn other_methods_are_not_ours() {
        assert_eq!(parse("session/list", json!({})), Ok(None));
        assert_eq!(parse("shutdown", Value::Null), Ok(Some(Method::Shutdown)));
    }
}

//! Provider and transport failures as serializable facts (`LlmFailure`) and their stable codes.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The stable, provider-neutral machine code of a failure. Route on it, never on the message.
///
/// The set is open on the wire: a provider finish reason the harness has no name for becomes its
/// upper-cased value (`CONTENT_FILTER`), and other packages add their own codes, so anything not
/// listed is kept verbatim in [`FailureCode::Other`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailureCode {
    /// 401/403: the key was refused.
    Auth,
    /// The account's quota or balance is exhausted (terminal, unlike a rate limit).
    Quota,
    RateLimit,
    ContextWindowExceeded,
    InvalidRequest,
    /// 5xx.
    Server,
    /// Any other non-2xx status, kept so `HTTP_<status>` reads back as the same status.
    Http(u16),
    /// The request never got a response (DNS, refused connection, TLS, reset mid-stream).
    Transport,
    /// The caller cancelled.
    Aborted,
    /// The provider went silent past the idle timeout.
    Timeout,
    MissingCredential,
    InvalidCredential,
    /// The stream ended without its `[DONE]` sentinel.
    StreamClosed,
    MalformedResponse,
    /// A normal completion that carried no content at all.
    EmptyResponse,
    /// The answer passed the adapter's size cap. Not retried: a model that ran away once is
    /// likely to again, and each attempt costs the whole cap.
    ResponseTooLarge,
    /// The answer was still streaming at the adapter's overall deadline. Not retried: another
    /// attempt would take as long.
    DeadlineExceeded,
    DuplicateAdapter,
    Unknown,
    /// Any code outside this vocabulary, verbatim.
    Other(String),
}

impl FailureCode {
    /// The wire spelling.
    pub fn as_str(&self) -> Cow<'_, str> {
        Cow::Borrowed(match self {
            Self::Auth => "AUTH",
            Self::Quota => "QUOTA",
            Self::RateLimit => "RATE_LIMIT",
            Self::ContextWindowExceeded => "CONTEXT_WINDOW_EXCEEDED",
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::Server => "SERVER",
            Self::Http(status) => return Cow::Owned(format!("HTTP_{status}")),
            Self::Transport => "TRANSPORT",
            Self::Aborted => "ABORTED",
            Self::Timeout => "TIMEOUT",
            Self::MissingCredential => "MISSING_CREDENTIAL",
            Self::InvalidCredential => "INVALID_CREDENTIAL",
            Self::StreamClosed => "STREAM_CLOSED",
            Self::MalformedResponse => "MALFORMED_RESPONSE",
            Self::EmptyResponse => "EMPTY_RESPONSE",
            Self::ResponseTooLarge => "RESPONSE_TOO_LARGE",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::DuplicateAdapter => "DUPLICATE_ADAPTER",
            Self::Unknown => "UNKNOWN",
            Self::Other(code) => code,
        })
    }

    /// Parses a wire code; unknown codes land in [`FailureCode::Other`].
    pub fn parse(code: &str) -> Self {
        match code {
            "AUTH" => Self::Auth,
            "QUOTA" => Self::Quota,
            "RATE_LIMIT" => Self::RateLimit,
            "CONTEXT_WINDOW_EXCEEDED" => Self::ContextWindowExceeded,
            "INVALID_REQUEST" => Self::InvalidRequest,
            "SERVER" => Self::Server,
            "TRANSPORT" => Self::Transport,
            "ABORTED" => Self::Aborted,
            "TIMEOUT" => Self::Timeout,
            "MISSING_CREDENTIAL" => Self::MissingCredential,
            "INVALID_CREDENTIAL" => Self::InvalidCredential,
            "STREAM_CLOSED" => Self::StreamClosed,
            "MALFORMED_RESPONSE" => Self::MalformedResponse,
            "EMPTY_RESPONSE" => Self::EmptyResponse,
            "RESPONSE_TOO_LARGE" => Self::ResponseTooLarge,
            "DEADLINE_EXCEEDED" => Self::DeadlineExceeded,
            "DUPLICATE_ADAPTER" => Self::DuplicateAdapter,
            "UNKNOWN" => Self::Unknown,
            other => match http_status(other) {
                Some(status) => Self::Http(status),
                None => Self::Other(other.to_owned()),
            },
        }
    }

    /// Whether the default (normal-mode) retry policy retries this code: failures that may
    /// pass on their own. A stream that closed mid-answer is one (the most common failure a
    /// user meets is a dropped connection); what it delivered stays logged as a failed attempt.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::EmptyResponse
                | Self::RateLimit
                | Self::Server
                | Self::Timeout
                | Self::Transport
                | Self::StreamClosed
        )
    }
}

/// `HTTP_<status>` with a canonical three-digit status, so only strings this type would itself
/// write parse as [`FailureCode::Http`] (and `HTTP_0429` stays verbatim).
fn http_status(code: &str) -> Option<u16> {
    let digits = code.strip_prefix("HTTP_")?;
    if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl Serialize for FailureCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::parse(&code))
    }
}

impl JsonSchema for FailureCode {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("FailureCode")
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A stable failure code: AUTH, QUOTA, RATE_LIMIT, CONTEXT_WINDOW_EXCEEDED, INVALID_REQUEST, SERVER, HTTP_<status>, TRANSPORT, ABORTED, TIMEOUT, MISSING_CREDENTIAL, INVALID_CREDENTIAL, STREAM_CLOSED, MALFORMED_RESPONSE, EMPTY_RESPONSE, RESPONSE_TOO_LARGE, DEADLINE_EXCEEDED, DUPLICATE_ADAPTER, UNKNOWN, or any other code verbatim"
        })
    }
}

/// Serializable facts of one failed model call, as the log writes them into error finishes,
/// `turn/end` errors and `llm/retry` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message} ({code})")]
pub struct LlmFailure {
    pub message: String,
    pub code: FailureCode,
    /// HTTP status returned by the provider, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's `Retry-After`, in milliseconds, when valid and positive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<u64>,
    /// The provider's request id, for support tickets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl LlmFailure {
    pub fn new(code: FailureCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
            status: None,
            provider_retry_after_ms: None,
            request_id: None,
        }
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_retry_after_ms(mut self, ms: u64) -> Self {
        self.provider_retry_after_ms = Some(ms);
        self
    }

    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// See [`FailureCode::retryable`].
    pub fn retryable(&self) -> bool {
        self.code.retryable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_named_code_round_trips_through_its_spelling() {
        let codes = [
            FailureCode::Auth,
            FailureCode::Quota,
            FailureCode::RateLimit,
            FailureCode::ContextWindowExceeded,
            FailureCode::InvalidRequest,
            FailureCode::Server,
            FailureCode::Http(418),
            FailureCode::Transport,
            FailureCode::Aborted,
            FailureCode::Timeout,
            FailureCode::MissingCredential,
            FailureCode::InvalidCredential,
            FailureCode::StreamClosed,
            FailureCode::MalformedResponse,
            FailureCode::EmptyResponse,
            FailureCode::ResponseTooLarge,
            FailureCode::DeadlineExceeded,
            FailureCode::DuplicateAdapter,
            FailureCode::Unknown,
            FailureCode::Other("CONTENT_FILTER".into()),
        ];
        for code in codes {
            assert_eq!(FailureCode::parse(&code.as_str()), code);
        }
        assert_eq!(FailureCode::Http(404).as_str(), "HTTP_404");
        assert_eq!(
            FailureCode::parse("HTTP_0429"),
            FailureCode::Other("HTTP_0429".into())
        );
    }

    #[test]
    fn retryable_set_is_the_default_policy_set() {
        let retryable: Vec<_> = [
            "EMPTY_RESPONSE",
            "RATE_LIMIT",
            "SERVER",
            "TIMEOUT",
            "TRANSPORT",
            "AUTH",
            "QUOTA",
            "HTTP_404",
            "INVALID_CREDENTIAL",
            "STREAM_CLOSED",
            "RESPONSE_TOO_LARGE",
            "DEADLINE_EXCEEDED",
        ]
        .iter()
        .filter(|code| FailureCode::parse(code).retryable())
        .copied()
        .collect();
        assert_eq!(
            retryable,
            [
                "EMPTY_RESPONSE",
                "RATE_LIMIT",
                "SERVER",
                "TIMEOUT",
                "TRANSPORT",
                "STREAM_CLOSED"
            ]
        );
    }

    #[test]
    fn failure_json_has_optional_fields_only_when_known() {
        let failure = LlmFailure::new(FailureCode::RateLimit, "slow down")
            .with_status(429)
            .with_retry_after_ms(2000)
            .with_request_id("req-1");
        assert_eq!(
            serde_json::to_value(&failure).unwrap(),
            json!({"message": "slow down", "code": "RATE_LIMIT", "status": 429, "providerRetryAfterMs": 2000, "requestId": "req-1"})
        );
        assert_eq!(
            serde_json::to_value(LlmFailure::new(FailureCode::Unknown, "x")).unwrap(),
            json!({"message": "x", "code": "UNKNOWN"})
        );
        assert_eq!(failure.to_string(), "slow down (RATE_LIMIT)");
    }
}

//! Failures outside the stream: HTTP error responses, transport, timeout and cancellation.

use std::time::{SystemTime, UNIX_EPOCH};

use dsh_llm_kit::{is_context_window_exceeded, is_quota_exceeded};
use dsh_protocol::{FailureCode, LlmFailure};
use serde_json::Value;

use crate::config::AdapterConfig;
use crate::response::WireErrorBody;

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.trim())
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// The failure code for a non-2xx status, given the provider's error code, type and message
/// joined into `detail`. Auth first (a bad key says nothing else reliable); then quota wording
/// at any status (DeepSeek answers an empty balance with 402); then by status.
pub fn http_error_code(status: u16, detail: &str) -> FailureCode {
    match status {
        401 | 403 => FailureCode::Auth,
        413 => FailureCode::InvalidRequest,
        _ if is_quota_exceeded(detail) => FailureCode::Quota,
        429 => FailureCode::RateLimit,
        400 if is_context_window_exceeded(detail) => FailureCode::ContextWindowExceeded,
        400 => FailureCode::InvalidRequest,
        500.. => FailureCode::Server,
        other => FailureCode::Http(other),
    }
}

/// Maps a non-2xx response (its status, headers and body) to a failure.
pub fn map_http_error(status: u16, headers: &[(String, String)], body: &[u8]) -> LlmFailure {
    map_http_error_at(status, headers, body, SystemTime::now())
}

/// [`map_http_error`] with the clock passed in (a `Retry-After` date is relative to now).
pub fn map_http_error_at(
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    now: SystemTime,
) -> LlmFailure {
    // Only the error body is parsed leniently: a gateway's HTML or malformed JSON must not hide
    // the status, which still classifies the failure.
    let error = serde_json::from_slice::<WireErrorBody>(body)
        .ok()
        .and_then(|body| body.error)
        .unwrap_or_default();
    let message = error
        .message
        .as_ref()
        .and_then(Value::as_str)
        .filter(|message| !message.is_empty())
        .map_or_else(
            || format!("DeepSeek API error (HTTP {status})"),
            str::to_owned,
        );
    let detail: Vec<String> = [&error.code, &error.kind, &error.message]
        .into_iter()
        .filter_map(|value| value.as_ref().and_then(scalar))
        .collect();
    let mut failure =
        LlmFailure::new(http_error_code(status, &detail.join(" ")), message).with_status(status);
    failure.provider_retry_after_ms =
        header(headers, "retry-after").and_then(|value| retry_after_ms(value, now));
    failure.request_id = header(headers, "x-request-id")
        .or_else(|| header(headers, "x-deepseek-request-id"))
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    failure
}

/// A `Retry-After` value in milliseconds from `now`: delay-seconds or an HTTP date. Zero, past
/// and unparseable values give `None` (the retry policy's own backoff applies).
pub fn retry_after_ms(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = value.parse().unwrap_or(u64::MAX);
        return Some(seconds.saturating_mul(1000)).filter(|ms| *ms > 0);
    }
    let at_ms = http_date_ms(value)?;
    let now_ms = i128::try_from(now.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()?;
    u64::try_from(at_ms - now_ms).ok().filter(|ms| *ms > 0)
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Milliseconds since the epoch of an HTTP date in any of its three forms: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). All are UTC by definition.
fn http_date_ms(value: &str) -> Option<i128> {
    let mut day = None;
    let mut month = None;
    let mut year = None;
    let mut time = None;
    for token in value
        .split([' ', ',', '-'])
        .filter(|token| !token.is_empty())
    {
        let lower = token.to_ascii_lowercase();
        if token.contains(':') {
            let mut fields = token.split(':').map(|field| field.parse::<i128>().ok());
            let (Some(Some(h)), Some(Some(m)), Some(Some(s)), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return None;
            };
            if h > 23 || m > 59 || s > 60 {
                return None;
            }
            time = Some(h * 3600 + m * 60 + s);
        } else if let Some(at) = MONTHS.iter().position(|name| lower.starts_with(name)) {
            month = Some(i128::try_from(at).ok()? + 1);
        } else if token.bytes().all(|b| b.is_ascii_digit()) {
            let number: i128 = token.parse().ok()?;
            match token.len() {
                1 | 2 if day.is_none() => day = Some(number),
                // RFC 850's two-digit year: read as the nearest century that is not far future.
                2 => {
                    year = Some(if number < 70 {
                        2000 + number
                    } else {
                        1900 + number
                    })
                }
                4 => year = Some(number),
                _ => return None,
            }
        }
        // Weekday names and `GMT` carry nothing.
    }
    let (day, month, year, time) = (day?, month?, year?, time?);
    if !(1..=31).contains(&day) {
        return None;
    }
    Some((days_from_civil(year, month, day) * 86_400 + time) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The request never got a response (DNS, refused connection, TLS, proxy).
pub fn transport_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::Transport,
        format!("DeepSeek API request to {} failed", config.base_url),
    )
}

/// The connection failed while the body was streaming.
pub fn stream_transport_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::Transport,
        format!("DeepSeek API stream from {} failed", config.base_url),
    )
}

/// No byte (nor comment) arrived within the idle timeout while a read was outstanding.
pub fn idle_timeout_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::Timeout,
        format!(
            "DeepSeek stream idle timeout after {}ms",
            config.stream_idle_timeout_ms
        ),
    )
}

/// No chunk of the answer within the progress timeout, though bytes (keep-alive comments) may
/// have come: a provider that holds a request open without answering it.
pub fn no_progress_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::Timeout,
        format!(
            "DeepSeek stream made no progress for {}ms (keep-alive comments are not progress)",
            config.stream_progress_timeout_ms
        ),
    )
}

/// The response passed `maxResponseBytes`.
pub fn too_large_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::ResponseTooLarge,
        format!(
            "DeepSeek response passed {} bytes (the row's maxResponseBytes)",
            config.max_response_bytes
        ),
    )
}

/// The request was still going at `maxResponseMs`.
pub fn deadline_failure(config: &AdapterConfig) -> LlmFailure {
    LlmFailure::new(
        FailureCode::DeadlineExceeded,
        format!(
            "DeepSeek response still streaming after {}ms (the row's maxResponseMs)",
            config.max_response_ms
        ),
    )
}

/// The caller cancelled the call.
pub fn aborted_failure() -> LlmFailure {
    LlmFailure::new(FailureCode::Aborted, "DeepSeek request aborted by caller")
}

/// A 2xx response without a body.
pub fn no_body_failure() -> LlmFailure {
    LlmFailure::new(
        FailureCode::EmptyResponse,
        "DeepSeek API returned no response body",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn error_body(code: &str, kind: &str, message: &str) -> Vec<u8> {
        serde_json::to_vec(
            &serde_json::json!({"error": {"message": message, "type": kind, "code": code}}),
        )
        .unwrap()
    }

    fn code(status: u16, body: &[u8]) -> FailureCode {
        map_http_error(status, &[], body).code
    }

    #[test]
    fn statuses_and_bodies_map_to_codes() {
        let plain = b"<html>Bad gateway</html>";
        assert_eq!(
            code(401, &error_body("invalid_api_key", "", "bad key")),
            FailureCode::Auth
        );
        assert_eq!(code(403, plain), FailureCode::Auth);
        assert_eq!(
            code(429, &error_body("rate_limit", "", "mock rate limit")),
            FailureCode::RateLimit
        );
        assert_eq!(
            code(
                429,
                &error_body("insufficient_quota", "", "mock insufficient quota")
            ),
            FailureCode::Quota
        );
        assert_eq!(
            code(402, &error_body("", "", "Insufficient Balance")),
            FailureCode::Quota
        );
        assert_eq!(
            code(
                400,
                &error_body(
                    "context_length_exceeded",
                    "invalid_request_error",
                    "mock input exceeds the model context window"
                )
            ),
            FailureCode::ContextWindowExceeded
        );
        assert_eq!(
            code(
                400,
                &error_body(
                    "",
                    "invalid_request_error",
                    "This model's maximum context length is 131072 tokens."
                )
            ),
            FailureCode::ContextWindowExceeded
        );
        assert_eq!(
            code(
                400,
                &error_body("invalid_request", "", "mock invalid request")
            ),
            FailureCode::InvalidRequest
        );
        assert_eq!(code(413, plain), FailureCode::InvalidRequest);
        assert_eq!(code(500, plain), FailureCode::Server);
        assert_eq!(
            code(503, &error_body("service_unavailable", "", "busy")),
            FailureCode::Server
        );
        assert_eq!(code(404, plain), FailureCode::Http(404));
        assert_eq!(code(422, b""), FailureCode::Http(422));
    }

    #[test]
    fn message_status_retry_after_and_request_id_are_kept() {
        let failure = map_http_error(
            429,
            &headers(&[("Retry-After", "3"), ("X-DeepSeek-Request-Id", "req-9")]),
            &error_body("rate_limit", "", "slow down"),
        );
        assert_eq!(
            serde_json::to_value(&failure).unwrap(),
            serde_json::json!({"message": "slow down", "code": "RATE_LIMIT", "status": 429, "providerRetryAfterMs": 3000, "requestId": "req-9"})
        );
        let fallback = map_http_error(
            502,
            &headers(&[("x-request-id", "a"), ("x-deepseek-request-id", "b")]),
            b"oops",
        );
        assert_eq!(fallback.message, "DeepSeek API error (HTTP 502)");
        assert_eq!(fallback.request_id.as_deref(), Some("a"));
        assert_eq!(fallback.provider_retry_after_ms, None);
    }

    #[test]
    fn retry_after_reads_seconds_and_all_three_date_forms() {
        // 1994-11-06T08:49:37Z
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(retry_after_ms("120", now), Some(120_000));
        assert_eq!(retry_after_ms("0", now), None);
        assert_eq!(retry_after_ms("1.5", now), None);
        assert_eq!(retry_after_ms("soon", now), None);
        for date in [
            "Sun, 06 Nov 1994 08:49:47 GMT",
            "Sunday, 06-Nov-94 08:49:47 GMT",
            "Sun Nov  6 08:49:47 1994",
        ] {
            assert_eq!(retry_after_ms(date, now), Some(10_000), "{date}");
        }
        assert_eq!(retry_after_ms("Sun, 06 Nov 1994 08:49:00 GMT", now), None);
        assert_eq!(
            retry_after_ms(
                "Thu, 29 Feb 2024 00:00:00 GMT",
                UNIX_EPOCH + Duration::from_secs(1_709_164_799)
            ),
            Some(1000)
        );
    }

    #[test]
    fn outside_failures_name_the_endpoint() {
        let config = AdapterConfig::deepseek(Some("http://gw"));
        assert_eq!(
            transport_failure(&config).message,
            "DeepSeek API request to http://gw failed"
        );
        assert_eq!(
            stream_transport_failure(&config).code,
            FailureCode::Transport
        );
        assert_eq!(
            idle_timeout_failure(&config).message,
            "DeepSeek stream idle timeout after 300000ms"
        );
        assert_eq!(aborted_failure().code, FailureCode::Aborted);
        assert_eq!(no_body_failure().code, FailureCode::EmptyResponse);
    }
}

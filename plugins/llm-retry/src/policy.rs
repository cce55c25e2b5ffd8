//! The retry policy: which failures are transient, how long to wait before each retry.

use dsh_protocol::{FailureCode, LlmFailure};

/// The normal policy's numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Policy {
    pub(crate) max_retries: u32,
    pub(crate) base_delay_ms: u64,
    pub(crate) max_delay_ms: u64,
    pub(crate) jitter: f64,
}

/// Failures worth another attempt: the provider or the path to it was briefly unwell.
pub(crate) fn is_transient(failure: &LlmFailure) -> bool {
    matches!(
        failure.code,
        FailureCode::EmptyResponse
            | FailureCode::RateLimit
            | FailureCode::Server
            | FailureCode::Timeout
            | FailureCode::Transport
            | FailureCode::StreamClosed
    )
}

impl Policy {
    /// The wait before retry number `retry` (1-based): exponential from the base, capped, with
    /// `jitter` spread (`unit` is a number in [0, 1)); the provider's `Retry-After` wins when it
    /// is shorter than the cap.
    pub(crate) fn delay_ms(&self, retry: u32, failure: &LlmFailure, unit: f64) -> u64 {
        if let Some(after) = failure.provider_retry_after_ms
            && after <= self.max_delay_ms
        {
            return after;
        }
        let exponent = retry.saturating_sub(1).min(30);
        let raw = self
            .base_delay_ms
            .saturating_mul(1u64 << exponent)
            .min(self.max_delay_ms);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "milliseconds well inside f64's exact range, clamped to be positive"
        )]
        let jittered = (raw as f64 * (1.0 + self.jitter * (2.0 * unit - 1.0))).max(0.0) as u64;
        jittered.min(self.max_delay_ms)
    }

    /// The `policyKey` in the reference's shape: mode, retries, codes, base, cap, jitter.
    pub(crate) fn key(&self) -> String {
        let codes = [
            "EMPTY_RESPONSE",
            "RATE_LIMIT",
            "SERVER",
            "STREAM_CLOSED",
            "TIMEOUT",
            "TRANSPORT",
        ];
        let key = (
            "normal",
            self.max_retries,
            codes,
            self.base_delay_ms,
            self.max_delay_ms,
            self.jitter,
        );
        serde_json::to_string(&key).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            max_retries: 5,
            base_delay_ms: 500,
            max_delay_ms: 10_000,
            jitter: 0.1,
        }
    }

    #[test]
    fn backoff_doubles_within_the_jitter_and_stops_at_the_cap() {
        let failure = LlmFailure::new(FailureCode::Server, "boom");
        assert_eq!(policy().delay_ms(1, &failure, 0.5), 500);
        assert_eq!(policy().delay_ms(3, &failure, 0.5), 2_000);
        assert_eq!(policy().delay_ms(1, &failure, 0.0), 450);
        assert_eq!(policy().delay_ms(1, &failure, 0.999_999), 549);
        assert_eq!(policy().delay_ms(9, &failure, 0.999_999), 10_000);
    }

    #[test]
    fn a_shorter_retry_after_wins_and_a_longer_one_is_capped_by_backoff() {
        let mut failure = LlmFailure::new(FailureCode::RateLimit, "slow down");
        failure.provider_retry_after_ms = Some(1_000);
        assert_eq!(policy().delay_ms(1, &failure, 0.5), 1_000);
        failure.provider_retry_after_ms = Some(60_000);
        assert_eq!(policy().delay_ms(1, &failure, 0.5), 500);
    }

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(is_transient(&LlmFailure::new(
            FailureCode::Transport,
            "cut"
        )));
        assert!(!is_transient(&LlmFailure::new(FailureCode::Auth, "no")));
        // An answer that ran past the adapter's cap or deadline would only do so again.
        for code in [FailureCode::ResponseTooLarge, FailureCode::DeadlineExceeded] {
            assert!(!is_transient(&LlmFailure::new(code, "bounded")));
        }
    }
}

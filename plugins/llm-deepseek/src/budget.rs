//! The bounds of one request, which a provider (or anything answering at its URL) must not be
//! able to lift: how many bytes its response may take (`maxResponseBytes`), how long the whole
//! request may take (`maxResponseMs`), how long the stream may go without a chunk of the answer
//! (`streamProgressTimeoutMs`: keep-alive comments keep a connection alive, so they re-arm the
//! idle timeout, but they are not an answer) and, within those, how long one read may wait
//! (`streamIdleTimeoutMs`). The caller passes the clock in.

use std::time::Instant;

use dsh_protocol::LlmFailure;

use crate::config::AdapterConfig;
use crate::errors::{
    deadline_failure, idle_timeout_failure, no_progress_failure, too_large_failure,
};

/// Which bound the current wait ends at, to name the failure when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Idle,
    Progress,
    Deadline,
}

#[derive(Debug, Clone)]
pub struct Budget {
    started: Instant,
    last_progress: Instant,
    bytes: u64,
    waiting_for: Bound,
}

/// Milliseconds of `limit_ms` left at `now`, counted from `since`.
fn left(limit_ms: u64, since: Instant, now: Instant) -> u64 {
    let spent = u64::try_from(now.saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX);
    limit_ms.saturating_sub(spent)
}

impl Budget {
    /// A request sent at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            started: now,
            last_progress: now,
            bytes: 0,
            waiting_for: Bound::Idle,
        }
    }

    /// How long the next wait (for the response's head or a read of its body) may take: the
    /// idle timeout, cut to what is left of the deadline and of the progress timeout; the
    /// failure of a bound already passed.
    pub fn next_wait(&mut self, config: &AdapterConfig, now: Instant) -> Result<u64, LlmFailure> {
        let deadline = left(config.max_response_ms, self.started, now);
        if deadline == 0 {
            return Err(deadline_failure(config));
        }
        let progress = left(config.stream_progress_timeout_ms, self.last_progress, now);
        if progress == 0 {
            return Err(no_progress_failure(config));
        }
        let idle = config.stream_idle_timeout_ms;
        let (wait, bound) = if deadline <= progress.min(idle) {
            (deadline, Bound::Deadline)
        } else if progress <= idle {
            (progress, Bound::Progress)
        } else {
            (idle, Bound::Idle)
        };
        self.waiting_for = bound;
        Ok(wait)
    }

    /// The failure of a wait from [`Budget::next_wait`] that ran out.
    pub fn timed_out(&self, config: &AdapterConfig) -> LlmFailure {
        match self.waiting_for {
            Bound::Idle => idle_timeout_failure(config),
            Bound::Progress => no_progress_failure(config),
            Bound::Deadline => deadline_failure(config),
        }
    }

    /// Counts `len` more bytes of the response; the failure once past the cap.
    pub fn count(&mut self, len: usize, config: &AdapterConfig) -> Result<(), LlmFailure> {
        self.bytes = self
            .bytes
            .saturating_add(u64::try_from(len).unwrap_or(u64::MAX));
        if self.bytes > config.max_response_bytes {
            return Err(too_large_failure(config));
        }
        Ok(())
    }

    /// A chunk of the answer arrived at `now`.
    pub fn progressed(&mut self, now: Instant) {
        self.last_progress = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::FailureCode;
    use std::time::Duration;

    fn config() -> AdapterConfig {
        AdapterConfig {
            stream_idle_timeout_ms: 1_000,
            stream_progress_timeout_ms: 5_000,
            max_response_ms: 20_000,
            max_response_bytes: 100,
            ..AdapterConfig::deepseek(None)
        }
    }

    #[test]
    fn a_wait_is_cut_to_the_nearest_bound_and_names_it_when_it_runs_out() {
        let config = config();
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut budget = Budget::new(start);
        assert_eq!(budget.next_wait(&config, at(0)), Ok(1_000));
        assert_eq!(budget.timed_out(&config).code, FailureCode::Timeout);
        // Comments only: the progress timeout comes nearer than the idle one.
        assert_eq!(budget.next_wait(&config, at(4_500)), Ok(500));
        let failure = budget.timed_out(&config);
        assert!(failure.message.contains("no progress"), "{failure}");
        assert_eq!(
            budget.next_wait(&config, at(5_000)).unwrap_err().message,
            failure.message
        );
        // Progress re-arms it; the deadline does not move.
        budget.progressed(at(19_000));
        assert_eq!(budget.next_wait(&config, at(19_500)), Ok(500));
        assert_eq!(
            budget.timed_out(&config).code,
            FailureCode::DeadlineExceeded
        );
        assert_eq!(
            budget.next_wait(&config, at(20_000)).unwrap_err().code,
            FailureCode::DeadlineExceeded
        );
    }

    #[test]
    fn bytes_past_the_cap_are_a_named_failure() {
        let config = config();
        let mut budget = Budget::new(Instant::now());
        assert!(budget.count(60, &config).is_ok());
        assert!(budget.count(40, &config).is_ok());
        let failure = budget.count(1, &config).unwrap_err();
        assert_eq!(failure.code, FailureCode::ResponseTooLarge);
        assert!(!failure.retryable());
        assert!(failure.message.contains("100 bytes"), "{failure}");
    }
}

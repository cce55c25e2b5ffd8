//! The time changes are compared with. The kernel stamps an inode's change time (`ctime`)
//! from a coarse clock, up to one tick (1 to 10 ms) behind the precise one, so a moment is
//! taken [`SLACK`] early: anything stamped after it may have happened after the moment.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// More than the longest kernel tick.
const SLACK: Duration = Duration::from_millis(20);

/// Now less the slack, as `(seconds, nanoseconds)` since the epoch, as `ctime` is compared.
pub(crate) fn now_less_slack() -> (i64, i64) {
    let now = SystemTime::now()
        .checked_sub(SLACK)
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .unwrap_or_default();
    (
        i64::try_from(now.as_secs()).unwrap_or(i64::MAX),
        i64::from(now.subsec_nanos()),
    )
}

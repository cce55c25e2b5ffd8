//! The tables and the lease function, made when missing. Their text is `dsh-session-pg`'s,
//! shared with `dsh-host session migrate`; this side runs it through the host's postgres service.

use dsh_plugin_api::io::postgres::{PgDatabaseBox, PgError, PgStatement};

pub(crate) use dsh_session_pg::{EVENTS_CHANNEL, LEASE_HELD};

/// Makes the schema in one transaction (its first statement is an advisory lock, so two hosts
/// starting at once do not race on `CREATE ... IF NOT EXISTS`).
pub(crate) async fn ensure(db: &PgDatabaseBox) -> Result<(), PgError> {
    let statements = dsh_session_pg::STATEMENTS
        .iter()
        .map(|sql| PgStatement::new(sql, Vec::new()))
        .collect();
    db.transaction(statements).await.into_result().map(|_| ())
}

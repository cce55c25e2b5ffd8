//! The tables and the lease function, made when missing. Every time is the database's clock
//! (`dsh_now_ms()`), so hosts whose clocks disagree still agree on when a lease ends.

use dsh_plugin_api::io::postgres::{PgDatabaseBox, PgError, PgStatement};

/// The channel committed events are announced on; the payload is `<session> <first> <last>`.
pub(crate) const EVENTS_CHANNEL: &str = "dsh_events";

/// The SQLSTATE `dsh_hold_lease` raises when another owner holds the lease.
pub(crate) const LEASE_HELD: &str = "55P03";

/// Made in one transaction under an advisory lock, so two hosts starting at once do not race
/// on `CREATE ... IF NOT EXISTS`.
const STATEMENTS: &[&str] = &[
    "SELECT 1 FROM pg_advisory_xact_lock(7351200)",
    "CREATE OR REPLACE FUNCTION dsh_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
     $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$",
    "CREATE TABLE IF NOT EXISTS dsh_sessions (
        id text PRIMARY KEY,
        header text NOT NULL,
        cwd text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        active_at bigint,
        title text,
        archived boolean NOT NULL DEFAULT false,
        trashed_at bigint
    )",
    // A second writer of the same seq fails on the key: one log, one writer per seq.
    "CREATE TABLE IF NOT EXISTS dsh_events (
        session text NOT NULL REFERENCES dsh_sessions (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        kind text NOT NULL,
        time bigint NOT NULL,
        line text NOT NULL,
        PRIMARY KEY (session, seq)
    )",
    "CREATE TABLE IF NOT EXISTS dsh_leases (
        session text PRIMARY KEY,
        owner text NOT NULL,
        expires_at bigint NOT NULL
    )",
    // Takes the lease of `session` for `owner` for `ms` more, when it is free, expired or
    // already `owner`'s; otherwise raises 55P03 naming who holds it and for how long.
    "CREATE OR REPLACE FUNCTION dsh_hold_lease(s text, who text, ms bigint) RETURNS int
     LANGUAGE plpgsql AS $$
     DECLARE holder text; left_ms bigint;
     BEGIN
        INSERT INTO dsh_leases (session, owner, expires_at) VALUES (s, who, dsh_now_ms() + ms)
        ON CONFLICT (session) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
        WHERE dsh_leases.owner = EXCLUDED.owner OR dsh_leases.expires_at < dsh_now_ms();
        IF NOT FOUND THEN
            SELECT owner, expires_at - dsh_now_ms() INTO holder, left_ms
            FROM dsh_leases WHERE session = s;
            RAISE EXCEPTION 'session `%` is held by host `%` (its lease ends in % ms unless renewed)',
                s, holder, left_ms USING ERRCODE = 'lock_not_available';
        END IF;
        RETURN 1;
     END $$",
];

pub(crate) async fn ensure(db: &PgDatabaseBox) -> Result<(), PgError> {
    let statements = STATEMENTS
        .iter()
        .map(|sql| PgStatement::new(sql, Vec::new()))
        .collect();
    db.transaction(statements).await.into_result().map(|_| ())
}

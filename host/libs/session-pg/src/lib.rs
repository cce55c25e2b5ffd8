//! The PostgreSQL schema of stored sessions, as SQL text: the statements that make the tables
//! and functions when missing, the notification channel, the SQLSTATE of a held lease, and the
//! statements that write and read a session whole. Two programs speak it, the
//! `session-persistence-postgres` plugin (through the host's postgres service) and
//! `dsh-host session migrate` (with the driver directly), so the text lives here once and the
//! two cannot drift apart. Only constants: each side binds the parameters its own way.
//!
//! Every time in the schema is the database's clock (`dsh_now_ms()`), so hosts whose clocks
//! disagree still agree on when a lease ends.

/// The channel committed events are announced on; the payload is `<session> <first> <last>`.
pub const EVENTS_CHANNEL: &str = "dsh_events";

/// Makes the table of images when missing (the `attachments` row's store with `url`, and
/// `session migrate`): an image per id (`sha256:<hex>`), written once. Run in one transaction,
/// behind an advisory lock of its own.
pub const ATTACHMENTS_STATEMENTS: &[&str] = &[
    "SELECT 1 FROM pg_advisory_xact_lock(7351201)",
    "CREATE TABLE IF NOT EXISTS dsh_attachments (
        id text PRIMARY KEY,
        bytes bytea NOT NULL,
        created_at bigint NOT NULL
    )",
];

/// Stores one image unless its id is there: `$1` the id, `$2` the bytes, `$3` the time (ms).
pub const PUT_ATTACHMENT: &str = "INSERT INTO dsh_attachments (id, bytes, created_at) \
     VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING";

/// The bytes of image `$1`.
pub const GET_ATTACHMENT: &str = "SELECT bytes FROM dsh_attachments WHERE id = $1";

/// The SQLSTATE `dsh_hold_lease` raises when another owner holds the lease.
pub const LEASE_HELD: &str = "55P03";

/// Makes the schema when missing. Run in one transaction: the advisory lock first, so two
/// hosts starting at once do not race on `CREATE ... IF NOT EXISTS`.
pub const STATEMENTS: &[&str] = &[
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
    // When the row was committed (the database's clock): against `time`, the log's commit,
    // it tells how long an event waits for its row (batching, the round trip).
    "ALTER TABLE dsh_events ADD COLUMN IF NOT EXISTS stored_at bigint DEFAULT dsh_now_ms()",
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
    // One batch of a session in one statement (so one round trip, and atomic as any single
    // statement is): its row first if `hdr` is given, the lease held (or 55P03), the events,
    // the listing columns, the announcement `<session> <first> <last>` on `dsh_events`.
    "CREATE OR REPLACE FUNCTION dsh_append(s text, who text, ms bigint, seqs bigint[],
        kinds text[], times bigint[], lines text[], new_title text, active bigint,
        hdr text, dir text, created bigint) RETURNS int LANGUAGE plpgsql AS $$
     BEGIN
        IF hdr IS NOT NULL THEN
            INSERT INTO dsh_sessions (id, header, cwd, created_at, updated_at)
            VALUES (s, hdr, dir, created, dsh_now_ms());
        END IF;
        PERFORM dsh_hold_lease(s, who, ms);
        INSERT INTO dsh_events (session, seq, kind, time, line)
        SELECT s, * FROM unnest(seqs, kinds, times, lines);
        UPDATE dsh_sessions SET updated_at = dsh_now_ms(),
            title = coalesce(new_title, title), active_at = coalesce(active, active_at)
        WHERE id = s;
        PERFORM pg_notify('dsh_events',
            s || ' ' || seqs[1] || ' ' || seqs[array_length(seqs, 1)]);
        RETURN array_length(seqs, 1);
     END $$",
];

/// A new session's row, written with its first batch: `$1` id, `$2` header line, `$3` cwd (or
/// null), `$4` created_at; updated now. A second session of the same id fails on the key.
pub const INSERT_SESSION: &str =
    "INSERT INTO dsh_sessions (id, header, cwd, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, dsh_now_ms())";

/// A session's row written whole, with the listing columns another store kept (a migration):
/// `$1` id, `$2` header line, `$3` cwd, `$4` created_at, `$5` updated_at, `$6` active_at,
/// `$7` title, `$8` archived.
pub const INSERT_SESSION_LISTED: &str = "INSERT INTO dsh_sessions
        (id, header, cwd, created_at, updated_at, active_at, title, archived)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// A batch of events of session `$1` in one statement: `$2` seqs, `$3` kinds, `$4` times
/// (epoch ms), `$5` the JSON lines, as arrays of one length.
pub const INSERT_EVENTS: &str = "INSERT INTO dsh_events (session, seq, kind, time, line)
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[])";

/// The header line of session `$1`, when it is stored and not in the trash.
pub const SELECT_HEADER: &str =
    "SELECT header FROM dsh_sessions WHERE id = $1 AND trashed_at IS NULL";

/// Session `$1`'s events in order: seq, then the JSON line.
pub const SELECT_LINES: &str = "SELECT seq, line FROM dsh_events WHERE session = $1 ORDER BY seq";

/// One batch of session `$1` (see `dsh_append` in [`STATEMENTS`]): `$2` the owner, `$3` the
/// lease in ms, `$4`..`$7` seqs, kinds, times and lines, `$8` the listed title (or null), `$9`
/// the last activity (or null), and for a session's first batch `$10` its header line, `$11`
/// its cwd, `$12` its creation time (nulls otherwise).
pub const APPEND_BATCH: &str = "SELECT dsh_append($1, $2, $3, $4::bigint[], $5::text[], \
     $6::bigint[], $7::text[], $8, $9, $10, $11, $12)";

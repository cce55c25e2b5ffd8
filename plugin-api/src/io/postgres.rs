//! The `postgres` service: a PostgreSQL database reached through the host (`dsh-host/postgres`,
//! tokio-postgres on the host runtime). A plugin connects once to a libpq connection string and
//! gets a small pool: statements with typed parameters, a list of statements run as one
//! transaction (all or none), and `LISTEN` on a channel of its own connection. Values cross as
//! [`PgValue`]s, a closed set the stores need; a column of another type is refused by name, so
//! a query casts it (`::text`) rather than losing it.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

/// The service key.
pub const POSTGRES_SERVICE: &str = "postgres";

/// A parameter or a column value.
#[repr(C, u8)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub enum PgValue {
    Null,
    Bool(bool),
    /// Any integer column (`smallint`, `integer`, `bigint`).
    Int(i64),
    Text(RString),
    Bytes(RVec<u8>),
    /// A `bigint[]`.
    Ints(RVec<i64>),
    /// A `text[]`.
    Texts(RVec<RString>),
}

impl PgValue {
    pub fn text(value: impl Into<String>) -> Self {
        Self::Text(RString::from(value.into()))
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(value) => Some(*value),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(value) => Some(value.as_str()),
            _ => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Bytes(value) => Some(value.as_slice()),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(value) => Some(*value),
            _ => None,
        }
    }
}

/// One statement and its parameters (`$1`, `$2`... in order).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PgStatement {
    pub sql: RString,
    pub params: RVec<PgValue>,
}

impl PgStatement {
    pub fn new(sql: &str, params: Vec<PgValue>) -> Self {
        Self {
            sql: RString::from(sql),
            params: RVec::from(params),
        }
    }
}

/// What a statement answered: its rows (none for most writes) and how many rows it touched.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq, Default)]
pub struct PgRows {
    pub rows: RVec<RVec<PgValue>>,
    /// Rows inserted, updated or deleted (or returned, for a query).
    pub affected: u64,
}

#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgErrorKind {
    /// The connection string does not parse.
    InvalidUrl,
    /// The server could not be reached, or the connection broke.
    Connection,
    /// A row with the same key exists (SQLSTATE 23505).
    UniqueViolation,
    /// The server refused the statement (its SQLSTATE in the message).
    Statement,
    /// A column of a type [`PgValue`] does not carry.
    UnsupportedType,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    pub kind: PgErrorKind,
    /// The server's SQLSTATE (`23505`, `55P03`...), empty when the server did not answer.
    pub code: RString,
    pub message: RString,
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PgError {}

/// A notification sent with `NOTIFY` (or `pg_notify`) on a channel being listened to.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PgNotification {
    pub channel: RString,
    pub payload: RString,
}

/// The notifications of one listening connection, in the order the server sent them.
#[sabi_trait]
pub trait PgListener: Send + Sync {
    /// The next notification; `RNone` once the connection is gone (the listener then listens
    /// again and reads what it may have missed).
    fn next(&self) -> FfiFuture<ROption<PgNotification>>;
}
pub type PgListenerBox = PgListener_TO<'static, RBox<()>>;

/// A connected database: a small pool of connections.
#[sabi_trait]
pub trait PgDatabase: Send + Sync {
    fn query(&self, statement: PgStatement) -> FfiFuture<RResult<PgRows, PgError>>;
    /// Runs `statements` in order in one transaction: all commit, or none does.
    fn transaction(
        &self,
        statements: RVec<PgStatement>,
    ) -> FfiFuture<RResult<RVec<PgRows>, PgError>>;
    /// A connection of its own that listens on `channel`.
    fn listen(&self, channel: RString) -> FfiFuture<RResult<PgListenerBox, PgError>>;
}
pub type PgDatabaseBox = PgDatabase_TO<'static, RBox<()>>;

/// The service: connects to databases.
#[sabi_trait]
pub trait Postgres: Send + Sync {
    /// A pool of at most `pool_size` connections to `url` (a libpq connection string, e.g.
    /// `postgresql:///dsh?host=/run/pg`); the first connection is made before it answers, so a
    /// wrong URL or an unreachable server is known at once.
    fn connect(&self, url: RString, pool_size: u32) -> FfiFuture<RResult<PgDatabaseBox, PgError>>;
}
pub type PostgresService = Postgres_TO<'static, RBox<()>>;

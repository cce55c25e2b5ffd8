//! `dsh-host/postgres`: the `postgres` service, tokio-postgres on the host runtime. Each
//! database is a small pool: a connection is taken for one statement or one transaction and
//! given back unless it broke, so a restarted server costs the statements that were in flight
//! and the next ones connect again. A listener has a connection of its own whose driver task
//! forwards notifications into a channel.

use std::str::FromStr;
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::postgres::{
    POSTGRES_SERVICE, PgDatabase, PgDatabase_TO, PgDatabaseBox, PgError, PgErrorKind, PgListener,
    PgListener_TO, PgListenerBox, PgNotification, PgRows, PgStatement, PgValue, Postgres,
    Postgres_TO,
};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};
use futures_util::StreamExt;
use tokio::sync::{Mutex, Semaphore, mpsc};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{AsyncMessage, Client, Config, GenericClient, NoTls, Row};

pub(crate) struct PostgresPlugin;

impl Plugin for PostgresPlugin {
    const NAME: &'static str = "postgres";
    const PROVIDES: &'static [&'static str] = &[POSTGRES_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(
            POSTGRES_SERVICE,
            Postgres_TO::from_value(Service, TD_Opaque),
        )
    }
}

struct Service;

fn failure(kind: PgErrorKind, message: impl std::fmt::Display) -> PgError {
    PgError {
        kind,
        code: RString::new(),
        message: RString::from(message.to_string()),
    }
}

/// A driver error, with the server's SQLSTATE and message when the server answered.
fn from_driver(error: &tokio_postgres::Error) -> PgError {
    match error.as_db_error() {
        Some(db) => {
            let kind = match *db.code() == tokio_postgres::error::SqlState::UNIQUE_VIOLATION {
                true => PgErrorKind::UniqueViolation,
                false => PgErrorKind::Statement,
            };
            let detail = db.detail().map(|d| format!(" ({d})")).unwrap_or_default();
            PgError {
                kind,
                code: RString::from(db.code().code()),
                message: RString::from(format!("{}{detail}", db.message())),
            }
        }
        None => {
            // The driver's Display hides the cause (connection refused, no such file...).
            let mut message = error.to_string();
            let mut cause = std::error::Error::source(error);
            while let Some(inner) = cause {
                message.push_str(": ");
                message.push_str(&inner.to_string());
                cause = inner.source();
            }
            failure(PgErrorKind::Connection, message)
        }
    }
}

impl Postgres for Service {
    fn connect(&self, url: RString, pool_size: u32) -> FfiFuture<RResult<PgDatabaseBox, PgError>> {
        async move {
            let config = match Config::from_str(&url) {
                Ok(config) => config,
                Err(error) => {
                    return RErr(failure(
                        PgErrorKind::InvalidUrl,
                        format!("connection string `{url}`: {error}"),
                    ));
                }
            };
            let pool = Arc::new(Pool {
                config,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(pool_size.max(1) as usize)),
            });
            match pool.open().await {
                Ok(client) => pool.idle.lock().await.push(client),
                Err(error) => return RErr(error),
            }
            ROk(PgDatabase_TO::from_value(Database { pool }, TD_Opaque))
        }
        .into_ffi()
    }
}

struct Pool {
    config: Config,
    idle: Mutex<Vec<Client>>,
    permits: Arc<Semaphore>,
}

impl Pool {
    async fn open(&self) -> Result<Client, PgError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|error| from_driver(&error))?;
        // The connection's own task; it ends when the client is dropped or the server goes.
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("a PostgreSQL connection ended: {error}");
            }
        });
        Ok(client)
    }

    /// A connection of the pool, with the permit that counts it.
    async fn take(&self) -> Result<Pooled, PgError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| failure(PgErrorKind::Connection, "the pool is closed"))?;
        let pooled = self.idle.lock().await.pop();
        let client = match pooled {
            Some(client) if !client.is_closed() => client,
            _ => self.open().await?,
        };
        Ok(Pooled {
            client,
            _permit: permit,
        })
    }

    /// Gives a connection back, unless it broke.
    async fn give(&self, pooled: Pooled) {
        if !pooled.client.is_closed() {
            self.idle.lock().await.push(pooled.client);
        }
    }
}

struct Pooled {
    client: Client,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

struct Database {
    pool: Arc<Pool>,
}

/// Runs one statement; its rows (none for most writes) and how many rows it touched.
async fn run(client: &impl GenericClient, statement: &PgStatement) -> Result<PgRows, PgError> {
    let stream = client
        .query_raw(statement.sql.as_str(), statement.params.iter().map(Param))
        .await
        .map_err(|error| from_driver(&error))?;
    let mut stream = std::pin::pin!(stream);
    let mut rows = RVec::new();
    while let Some(row) = stream.next().await {
        rows.push(values_of(&row.map_err(|error| from_driver(&error))?)?);
    }
    let affected = stream.rows_affected().unwrap_or(rows.len() as u64);
    Ok(PgRows { rows, affected })
}

fn values_of(row: &Row) -> Result<RVec<PgValue>, PgError> {
    let mut values = RVec::with_capacity(row.len());
    for (index, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let read = |error: tokio_postgres::Error| {
            failure(
                PgErrorKind::Statement,
                format!("column `{}`: {error}", column.name()),
            )
        };
        let value = match *ty {
            Type::BOOL => row
                .try_get::<_, Option<bool>>(index)
                .map_err(read)?
                .map(PgValue::Bool),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(index)
                .map_err(read)?
                .map(|v| PgValue::Int(v.into())),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(index)
                .map_err(read)?
                .map(|v| PgValue::Int(v.into())),
            Type::INT8 => row
                .try_get::<_, Option<i64>>(index)
                .map_err(read)?
                .map(PgValue::Int),
            Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => row
                .try_get::<_, Option<String>>(index)
                .map_err(read)?
                .map(PgValue::text),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(index)
                .map_err(read)?
                .map(|v| PgValue::Bytes(v.into())),
            Type::INT8_ARRAY => row
                .try_get::<_, Option<Vec<i64>>>(index)
                .map_err(read)?
                .map(|v| PgValue::Ints(v.into())),
            Type::TEXT_ARRAY => row
                .try_get::<_, Option<Vec<String>>>(index)
                .map_err(read)?
                .map(|v| PgValue::Texts(v.into_iter().map(RString::from).collect())),
            _ => {
                return Err(failure(
                    PgErrorKind::UnsupportedType,
                    format!(
                        "column `{}` is of type {ty}, which the postgres service does not \
                         carry: cast it (`::text`, `::bigint`)",
                        column.name()
                    ),
                ));
            }
        };
        values.push(value.unwrap_or(PgValue::Null));
    }
    Ok(values)
}

impl PgDatabase for Database {
    fn query(&self, statement: PgStatement) -> FfiFuture<RResult<PgRows, PgError>> {
        let pool = self.pool.clone();
        async move {
            let pooled = match pool.take().await {
                Ok(pooled) => pooled,
                Err(error) => return RErr(error),
            };
            let answer = run(&pooled.client, &statement).await;
            pool.give(pooled).await;
            match answer {
                Ok(rows) => ROk(rows),
                Err(error) => RErr(error),
            }
        }
        .into_ffi()
    }

    fn transaction(
        &self,
        statements: RVec<PgStatement>,
    ) -> FfiFuture<RResult<RVec<PgRows>, PgError>> {
        let pool = self.pool.clone();
        async move {
            let mut pooled = match pool.take().await {
                Ok(pooled) => pooled,
                Err(error) => return RErr(error),
            };
            let answer = in_transaction(&mut pooled.client, &statements).await;
            pool.give(pooled).await;
            match answer {
                Ok(answers) => ROk(answers),
                Err(error) => RErr(error),
            }
        }
        .into_ffi()
    }

    fn listen(&self, channel: RString) -> FfiFuture<RResult<PgListenerBox, PgError>> {
        let pool = self.pool.clone();
        async move {
            match listen(&pool.config, channel.as_str()).await {
                Ok(listener) => ROk(PgListener_TO::from_value(listener, TD_Opaque)),
                Err(error) => RErr(error),
            }
        }
        .into_ffi()
    }
}

/// Runs `statements` in one transaction; a failing statement drops it, which rolls it back.
async fn in_transaction(
    client: &mut Client,
    statements: &[PgStatement],
) -> Result<RVec<PgRows>, PgError> {
    let transaction = client
        .transaction()
        .await
        .map_err(|error| from_driver(&error))?;
    let mut answers = RVec::with_capacity(statements.len());
    for statement in statements {
        answers.push(run(&transaction, statement).await?);
    }
    transaction
        .commit()
        .await
        .map_err(|error| from_driver(&error))?;
    Ok(answers)
}

/// One listening connection: the client (kept so the connection stays open) and the
/// notifications its driver task forwards.
struct Listener {
    _client: Client,
    notifications: Arc<Mutex<mpsc::UnboundedReceiver<PgNotification>>>,
}

async fn listen(config: &Config, channel: &str) -> Result<Listener, PgError> {
    let (client, mut connection) = config
        .connect(NoTls)
        .await
        .map_err(|error| from_driver(&error))?;
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(note)) => {
                    let forwarded = PgNotification {
                        channel: RString::from(note.channel()),
                        payload: RString::from(note.payload()),
                    };
                    if sender.send(forwarded).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!("a PostgreSQL listening connection ended: {error}");
                    break;
                }
            }
        }
    });
    let quoted = format!("LISTEN \"{}\"", channel.replace('"', "\"\""));
    client
        .batch_execute(&quoted)
        .await
        .map_err(|error| from_driver(&error))?;
    Ok(Listener {
        _client: client,
        notifications: Arc::new(Mutex::new(receiver)),
    })
}

impl PgListener for Listener {
    fn next(&self) -> FfiFuture<ROption<PgNotification>> {
        let notifications = self.notifications.clone();
        async move {
            match notifications.lock().await.recv().await {
                Some(note) => RSome(note),
                None => RNone,
            }
        }
        .into_ffi()
    }
}

/// A parameter, sent in the type the server expects for it: an integer as `int2`, `int4` or
/// `int8`, text as any text type.
#[derive(Debug)]
struct Param<'a>(&'a PgValue);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            PgValue::Null => Ok(IsNull::Yes),
            PgValue::Bool(value) => value.to_sql(ty, out),
            PgValue::Int(value) => match *ty {
                Type::INT2 => i16::try_from(*value)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*value)?.to_sql(ty, out),
                _ => value.to_sql(ty, out),
            },
            PgValue::Text(value) => value.as_str().to_sql(ty, out),
            PgValue::Bytes(value) => value.as_slice().to_sql(ty, out),
            PgValue::Ints(values) => values.as_slice().to_sql(ty, out),
            PgValue::Texts(values) => values
                .iter()
                .map(RString::as_str)
                .collect::<Vec<&str>>()
                .to_sql(ty, out),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        // Checked per value in `to_sql`, which answers a mismatch as the statement's error.
        true
    }

    to_sql_checked!();
}

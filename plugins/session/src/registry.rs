//! The `sessions` service: the registry of live sessions, creating, loading and forking them.

use dsh_plugin_api::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::Context;
use dsh_session_jsonl::SessionHeader;
use dsh_session_log::{SessionLog, TypeRegistry, TypeRequirement, fork};
use dsh_sessions_seam::{
    CreateSession, SESSION_CREATED, SESSION_DISPOSED, SESSION_EVENT, SESSION_FLUSH,
    SESSION_PERSISTENCE_SERVICE, Session_TO, SessionBox, SessionError, SessionErrorKind,
    SessionStoreService, Sessions,
};

use crate::ids::{new_session_id, now_ms};
use crate::live::{Handle, HeaderFacts, LiveSession, Wiring};

pub(crate) struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Context,
    live: Mutex<HashMap<String, Arc<LiveSession>>>,
    /// Replaced (never mutated) when a plugin registers a type, and handed to every live log.
    types: Mutex<Arc<TypeRegistry>>,
    /// The row's `store: required`: no session is created while no store is mounted.
    store_required: bool,
}

fn error(kind: SessionErrorKind, message: impl Into<String>) -> SessionError {
    SessionError::new(kind, message)
}

fn handle(live: &Arc<LiveSession>) -> SessionBox {
    Session_TO::from_value(Handle(live.clone()), TD_Opaque)
}

impl Registry {
    pub(crate) fn new(ctx: Context, store_required: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                ctx,
                live: Mutex::new(HashMap::new()),
                types: Mutex::new(Arc::new(TypeRegistry::new())),
                store_required,
            }),
        }
    }
}

impl Inner {
    fn types(&self) -> Arc<TypeRegistry> {
        lock(&self.types).clone()
    }

    fn register_type(&self, kind: &str, required: bool) -> Result<(), SessionError> {
        let requirement = if required {
            TypeRequirement::Required
        } else {
            TypeRequirement::Ignorable
        };
        let registry = {
            let mut types = lock(&self.types);
            let mut next = (**types).clone();
            next.register(kind, requirement)
                .map_err(|problem| error(SessionErrorKind::Invalid, problem.to_string()))?;
            *types = Arc::new(next);
            types.clone()
        };
        for live in lock(&self.live).values() {
            live.set_types(registry.clone());
        }
        Ok(())
    }

    async fn close(&self, id: &str) -> Result<(), SessionError> {
        let Some(live) = lock(&self.live).remove(id) else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("session `{id}` is not live"),
            ));
        };
        let wiring = self.wiring()?;
        let closed = match &wiring.store {
            Some(store) => store.close(RString::from(id)).await.into_result(),
            None => Ok(()),
        };
        drop(live);
        let _ = self.ctx.emit(&SESSION_DISPOSED, &RString::from(id));
        closed
    }

    /// Channels and the store as they are now (the store is optional and may come and go).
    fn wiring(&self) -> Result<Arc<Wiring>, SessionError> {
        let setup = |problem: dsh_plugin_api::PluginError| {
            error(SessionErrorKind::Storage, problem.to_string())
        };
        Ok(Arc::new(Wiring {
            on_event: self.ctx.channel(&SESSION_EVENT).map_err(setup)?,
            on_flush: self.ctx.channel(&SESSION_FLUSH).map_err(setup)?,
            store: self
                .ctx
                .get::<SessionStoreService>(SESSION_PERSISTENCE_SERVICE)
                .map_err(setup)?,
        }))
    }

    fn register(&self, live: Arc<LiveSession>) -> Result<SessionBox, SessionError> {
        let id = live.id().to_owned();
        {
            let mut sessions = lock(&self.live);
            if sessions.contains_key(&id) {
                return Err(error(
                    SessionErrorKind::Invalid,
                    format!("session `{id}` is already live"),
                ));
            }
            sessions.insert(id.clone(), live.clone());
        }
        let _ = self.ctx.emit(&SESSION_CREATED, &RString::from(id));
        Ok(handle(&live))
    }

    async fn create(&self, request: CreateSession) -> Result<SessionBox, SessionError> {
        let id = request
            .id
            .into_option()
            .map(RString::into_string)
            .unwrap_or_else(new_session_id);
        if lock(&self.live).contains_key(&id) {
            return Err(error(
                SessionErrorKind::Invalid,
                format!("session `{id}` is already live"),
            ));
        }
        let seed = match request.seed.into_option() {
            Some(seed) => Some(self.seed(&seed.source, seed.prefix_len)?),
            None => None,
        };
        let wiring = self.wiring()?;
        if wiring.store.is_none() && self.store_required {
            // Checked before anything runs: a turn whose events reach no store would look done
            // and exist nowhere afterwards.
            return Err(error(
                SessionErrorKind::Storage,
                format!(
                    "session `{id}` refused: no session store is mounted (row `session` says \
                     `store: required`); see why the profile's `session-persistence-*` row is \
                     not active (`dsh-host check`), or set `store: optional` on `session` to keep \
                     sessions in memory"
                ),
            ));
        }
        let mut header = SessionHeader::new(id.as_str(), now_ms());
        header.cwd = match request.cwd.into_option() {
            Some(cwd) => Some(cwd.into_string()),
            None => seed.as_ref().and_then(|(parent, _)| parent.cwd.clone()),
        };
        header.parent_session = request
            .parent
            .into_option()
            .map(RString::into_string)
            .or_else(|| seed.as_ref().map(|(parent, _)| parent.id().to_owned()));
        header.seed_length = seed.as_ref().map(|(_, log)| log.len() as u64);
        header.delegation_depth = request.delegation_depth;
        if header.delegation_depth > 0 {
            header.origin = Some("subagent".to_owned());
        }
        // A fork runs its source's preset unless the request names another.
        header.agent_preset = request
            .agent_preset
            .into_option()
            .map(RString::into_string)
            .or_else(|| seed.as_ref().and_then(|(parent, _)| parent.agent_preset()));
        if let Some(store) = &wiring.store {
            store
                .create(RString::from(header.to_line()))
                .await
                .into_result()?;
        }
        let facts = HeaderFacts {
            cwd: header.cwd.clone(),
            agent_preset: header.agent_preset.clone(),
        };
        match seed {
            Some((_, log)) => {
                let live = LiveSession::new(id, facts, log, None, wiring)?;
                live.announce_existing()?;
                self.register(live)
            }
            None => {
                let live =
                    LiveSession::new(id, facts, SessionLog::new(self.types()), None, wiring)?;
                self.register(live)
            }
        }
    }

    /// The live session `source` and the log of its first `prefix_len` events.
    fn seed(
        &self,
        source: &str,
        prefix_len: u64,
    ) -> Result<(Arc<LiveSession>, SessionLog), SessionError> {
        let Some(parent) = lock(&self.live).get(source).cloned() else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("session `{source}` is not live"),
            ));
        };
        let seeded = fork(&parent.log_snapshot(), prefix_len, now_ms()).map_err(|problem| {
            error(
                SessionErrorKind::Invalid,
                format!("fork of `{source}`: {problem}"),
            )
        })?;
        Ok((parent, seeded))
    }

    async fn open(&self, id: String) -> Result<SessionBox, SessionError> {
        if let Some(live) = lock(&self.live).get(&id) {
            return Ok(handle(live));
        }
        let wiring = self.wiring()?;
        let Some(store) = &wiring.store else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("session `{id}` is not live and no store is mounted"),
            ));
        };
        let stored = store.load(RString::from(id.as_str())).await.into_result()?;
        // The header names the working directory and the preset; a header that does not parse
        // names neither.
        let facts = SessionHeader::parse(&id, &stored.header)
            .ok()
            .map(|header| HeaderFacts {
                cwd: header.cwd,
                agent_preset: header.agent_preset,
            })
            .unwrap_or_default();
        let opened = match crate::parse::parse_stored(&self.ctx, &id, stored.events).await {
            Ok(parsed) => self.adopt(&id, facts, parsed, wiring.clone()),
            Err(problem) => Err(error(
                SessionErrorKind::Unreadable,
                format!("session `{id}`: {problem}"),
            )),
        };
        if opened.is_err() {
            // Refused after loading: the store lets go of the session without writing to it.
            let _ = store.close(RString::from(id.as_str())).await;
        }
        opened
    }

    /// A read-only copy of stored session `id`, taken without holding it.
    async fn view(&self, id: String) -> Result<SessionBox, SessionError> {
        let wiring = self.wiring()?;
        let Some(store) = &wiring.store else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("session `{id}` is not live and no store is mounted"),
            ));
        };
        let stored = store.view(RString::from(id.as_str())).await.into_result()?;
        let preset = SessionHeader::parse(&id, &stored.header)
            .ok()
            .and_then(|header| header.agent_preset);
        let unreadable = |problem: String| {
            error(
                SessionErrorKind::Unreadable,
                format!("session `{id}`: {problem}"),
            )
        };
        let parsed = crate::parse::parse_stored(&self.ctx, &id, stored.events)
            .await
            .map_err(|problem| unreadable(problem.to_string()))?;
        let log = SessionLog::from_prechecked(parsed.events, self.types())
            .map_err(|problem| unreadable(problem.to_string()))?;
        let snapshot = crate::snapshot::Snapshot::new(id, preset, log, Some(parsed.records))?;
        Ok(dsh_sessions_seam::Session_TO::from_value(
            snapshot,
            abi_stable::sabi_trait::TD_Opaque,
        ))
    }

    /// Makes a loaded log live: checks it, closes an interrupted turn, marks the seed's end.
    fn adopt(
        &self,
        id: &str,
        header: HeaderFacts,
        parsed: crate::parse::Parsed,
        wiring: Arc<Wiring>,
    ) -> Result<SessionBox, SessionError> {
        let unreadable = |problem: String| {
            error(
                SessionErrorKind::Unreadable,
                format!("session `{id}`: {problem}"),
            )
        };
        let log = SessionLog::from_prechecked(parsed.events, self.types())
            .map_err(|problem| unreadable(problem.to_string()))?;
        let live = LiveSession::new(id.to_owned(), header, log, Some(parsed.records), wiring)?;
        live.seal_seed()?;
        self.register(live)
    }

    async fn fork(
        &self,
        source: String,
        prefix_len: u64,
        child: Option<String>,
    ) -> Result<SessionBox, SessionError> {
        self.create(CreateSession {
            id: child.map(RString::from).into(),
            seed: abi_stable::std_types::RSome(dsh_sessions_seam::SessionSeed {
                source: RString::from(source),
                prefix_len,
            }),
            ..CreateSession::default()
        })
        .await
    }
}

fn finish(result: Result<SessionBox, SessionError>) -> RResult<SessionBox, SessionError> {
    match result {
        Ok(session) => ROk(session),
        Err(problem) => RErr(problem),
    }
}

impl Sessions for Registry {
    fn create(&self, request: CreateSession) -> FfiFuture<RResult<SessionBox, SessionError>> {
        let inner = self.inner.clone();
        async move { finish(inner.create(request).await) }.into_ffi()
    }

    fn open(&self, id: RString) -> FfiFuture<RResult<SessionBox, SessionError>> {
        let inner = self.inner.clone();
        async move { finish(inner.open(id.into_string()).await) }.into_ffi()
    }

    fn fork(
        &self,
        source: RString,
        prefix_len: u64,
        child: ROption<RString>,
    ) -> FfiFuture<RResult<SessionBox, SessionError>> {
        let inner = self.inner.clone();
        let child = child.into_option().map(RString::into_string);
        async move { finish(inner.fork(source.into_string(), prefix_len, child).await) }.into_ffi()
    }

    fn live(&self) -> RVec<RString> {
        lock(&self.inner.live)
            .keys()
            .map(|id| RString::from(id.as_str()))
            .collect()
    }

    fn register_type(&self, kind: RString, required: bool) -> RResult<(), SessionError> {
        self.inner.register_type(&kind, required).into()
    }

    fn close(&self, id: RString) -> FfiFuture<RResult<(), SessionError>> {
        let inner = self.inner.clone();
        async move { inner.close(&id).await.into() }.into_ffi()
    }

    fn view(&self, id: RString) -> FfiFuture<RResult<SessionBox, SessionError>> {
        let inner = self.inner.clone();
        async move { finish(inner.view(id.into_string()).await) }.into_ffi()
    }
}

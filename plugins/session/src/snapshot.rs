//! A read-only copy of a stored session that another process holds (`sessions.view`): its
//! events as they were read, derived like a live one's, every append refused. A page shows it
//! and follows the holder's commits through `session/remote-event`; nothing here writes.

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, ROk, ROption, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_session_log::SessionLog;
use dsh_sessions_seam::{
    DerivedView_TO, DerivedViewBox, EventRecord, NewEventRecord, Session, SessionError,
    SessionErrorKind,
};

use crate::live::{View, records_and_preset};

pub(crate) struct Snapshot {
    id: String,
    log: SessionLog,
    records: Vec<RArc<EventRecord>>,
    preset: Option<String>,
}

impl Snapshot {
    pub(crate) fn new(
        id: String,
        header_preset: Option<String>,
        log: SessionLog,
        loaded: Option<Vec<RArc<EventRecord>>>,
    ) -> Result<Self, SessionError> {
        let (records, preset) = records_and_preset(&id, &log, header_preset, loaded)?;
        Ok(Self {
            id,
            log,
            records,
            preset,
        })
    }
}

impl Session for Snapshot {
    fn id(&self) -> RString {
        RString::from(self.id.as_str())
    }

    fn event_count(&self) -> u64 {
        self.records.len() as u64
    }

    fn append(
        &self,
        _batch: RVec<NewEventRecord>,
    ) -> RResult<RVec<RArc<EventRecord>>, SessionError> {
        RErr(SessionError::new(
            SessionErrorKind::Locked,
            format!(
                "session `{}` is held by another host: this one only shows it",
                self.id
            ),
        ))
    }

    fn events(&self, from: u64, to: u64) -> RVec<RArc<EventRecord>> {
        let end = usize::try_from(to)
            .unwrap_or(usize::MAX)
            .min(self.records.len());
        let start = usize::try_from(from).unwrap_or(usize::MAX).min(end);
        self.records[start..end].iter().cloned().collect()
    }

    fn derive_messages(&self) -> DerivedViewBox {
        DerivedView_TO::from_value(View(self.log.derive_messages()), TD_Opaque)
    }

    fn flush(&self) -> FfiFuture<RResult<(), SessionError>> {
        // Nothing of it is this process's to write.
        std::future::ready(ROk(())).into_ffi()
    }

    fn agent_preset(&self) -> ROption<RString> {
        self.preset.clone().map(RString::from).into()
    }
}

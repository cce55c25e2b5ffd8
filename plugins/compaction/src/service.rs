//! The `compaction` service: a live session's token meter, read from the same incremental
//! surface the check before each step keeps, and compaction on demand.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{ROption, RResult, RString};
use dsh_compaction_seam::Compaction;
use dsh_plugin_api::async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::{Context, Json, SeamError};
use dsh_protocol::TokenMeter;
use dsh_sessions_seam::open_live;

use crate::command::compact_now;
use crate::compact::Settings;
use crate::surface::Trackers;

pub(crate) struct Service {
    pub(crate) ctx: Context,
    pub(crate) settings: Settings,
    pub(crate) busy: Arc<Mutex<HashSet<String>>>,
    pub(crate) trackers: Arc<Trackers>,
}

impl Compaction for Service {
    fn meter(&self, session: RString) -> Json<Option<TokenMeter>> {
        let meter = open_live(&self.ctx, &session)
            .ok()
            .map(|live| self.trackers.meter(&live, self.settings.context_window));
        Json::encode(&meter)
    }

    fn compact(
        &self,
        session: RString,
        focus: ROption<RString>,
    ) -> FfiFuture<RResult<(), SeamError>> {
        let (ctx, settings, busy, trackers) = (
            self.ctx.clone(),
            self.settings,
            self.busy.clone(),
            self.trackers.clone(),
        );
        async move {
            let focus = focus.into_option();
            compact_now(&ctx, settings, &busy, &trackers, &session, focus.as_deref())
                .await
                .map_err(SeamError::from)
                .into()
        }
        .into_ffi()
    }
}

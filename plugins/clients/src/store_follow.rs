//! The sidebar follows the store: when the store says a session folder appeared or went away
//! (another process ran `dsh-host` headless, or deleted a session), the store is listed again
//! and the difference is sent to every page as `host/session-added` / `host/session-removed`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use dsh_client_protocol::ServerFrame;
use dsh_plugin_api::{Context, PluginError, lock};
use dsh_protocol::SessionSummary;
use dsh_sessions_seam::{SESSION_PERSISTENCE_SERVICE, SESSION_STORE_CHANGED, SessionStoreService};

use crate::live::Hub;

/// The stored sessions, or nothing when there is no store or it cannot be listed.
async fn stored(ctx: &Context) -> Option<Vec<SessionSummary>> {
    let store = ctx
        .get::<SessionStoreService>(SESSION_PERSISTENCE_SERVICE)
        .ok()??;
    store.list().await.into_result().ok()?.decode().ok()
}

/// Lists the store now (the baseline) and again after each `session/store-changed`.
pub(crate) fn follow_the_store(ctx: &Context, hub: &Arc<Hub>) -> Result<(), PluginError> {
    let known: Arc<Mutex<Option<HashSet<String>>>> = Arc::default();
    let (baseline, first) = (ctx.clone(), known.clone());
    ctx.spawn(async move {
        if let Some(sessions) = stored(&baseline).await {
            lock(&first).get_or_insert_with(|| sessions.into_iter().map(|s| s.id).collect());
        }
    })?;
    let (lister, hub) = (ctx.clone(), hub.clone());
    ctx.on_emit(&SESSION_STORE_CHANGED, move |_folder| {
        let (ctx, hub, known) = (lister.clone(), hub.clone(), known.clone());
        let _ = lister.spawn(async move {
            let Some(sessions) = stored(&ctx).await else {
                return;
            };
            let now: HashSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
            let before = lock(&known).replace(now.clone()).unwrap_or_default();
            for session in sessions.into_iter().filter(|s| !before.contains(&s.id)) {
                hub.broadcast(&ServerFrame::SessionAdded { session });
            }
            for gone in before.difference(&now) {
                hub.broadcast(&ServerFrame::SessionRemoved {
                    session_id: gone.clone(),
                });
            }
        });
    })
}

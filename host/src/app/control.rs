//! The `host` service (`exit`, `rows`) and the `host/stopping` announcement that precedes
//! disposal.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use dsh_plugin_api::abi::ErasedService;
use dsh_plugin_api::io::control::{
    HOST_SERVICE, HOST_STOPPING, HostControl, HostControl_TO, StopRequest,
};
use dsh_plugin_api::{PluginError, RArc, ROption, RString, typed_channel};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use dsh_protocol::PluginRow;

use crate::app::App;
use crate::runtime::{ReportHandle, Runtime};

/// The app, once it is built (the service is provided before it is), for the disabled rows.
pub type AppSlot = Arc<OnceLock<Weak<App>>>;

struct ExitRequests(UnboundedSender<i32>, ReportHandle, AppSlot);

impl HostControl for ExitRequests {
    fn exit(&self, code: i32) {
        // The receiver lives as long as the run; after it, there is nothing left to end.
        let _ = self.0.send(code);
    }

    fn rows(&self) -> RString {
        let rows: Vec<PluginRow> = self
            .1
            .report()
            .unwrap_or_default()
            .into_iter()
            .filter(|fiber| !fiber.plugin.is_empty())
            .map(|fiber| PluginRow {
                row: fiber.row,
                plugin: fiber.plugin,
                state: fiber.state.to_string(),
                waiting_for: fiber.waiting_for,
                error: fiber.error,
                switchable: true,
            })
            .collect();
        // The rows the tree has but does not run, so a page can turn them on.
        let disabled = self
            .2
            .get()
            .and_then(Weak::upgrade)
            .map(|app| app.disabled_row_names())
            .unwrap_or_default();
        let mut rows = rows;
        rows.extend(disabled.into_iter().map(|(row, plugin)| PluginRow {
            row,
            plugin,
            state: dsh_protocol::ROW_DISABLED_STATE.to_owned(),
            waiting_for: Vec::new(),
            error: None,
            switchable: true,
        }));
        RString::from(serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned()))
    }
}

/// Registers the `host` service; the receiver yields every exit code asked for, and the slot
/// takes the app once it is built.
pub fn provide(runtime: &Runtime) -> Result<(UnboundedReceiver<i32>, AppSlot), PluginError> {
    let (sender, receiver) = unbounded_channel();
    let slot = AppSlot::default();
    let service = HostControl_TO::from_value(
        ExitRequests(sender, runtime.report_handle(), slot.clone()),
        TD_Opaque,
    );
    runtime.provide_host(HOST_SERVICE, ErasedService::new(service))?;
    Ok((receiver, slot))
}

/// Emits `host/stopping` and waits for its listeners (at most `grace`); answers the exit code
/// to use: the last one asked for during the announcement, else `code`.
pub async fn announce_stop(
    runtime: &Runtime,
    exits: &mut UnboundedReceiver<i32>,
    code: i32,
    signal: Option<i32>,
    grace: Duration,
) -> i32 {
    let request = StopRequest {
        code,
        signal: ROption::from(signal),
    };
    match runtime.channel(&HOST_STOPPING.decl()) {
        Ok(channel) => {
            // SAFETY: resolved for HOST_STOPPING's declaration, whose type this is.
            #[allow(unsafe_code, reason = "a typed view of a channel the host resolved")]
            let channel = unsafe {
                typed_channel::<dsh_plugin_api::ParallelEvent<StopRequest>>(channel.boxed())
            };
            match tokio::time::timeout(grace, channel.parallel(RArc::new(request))).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::error!("host/stopping: {error}"),
                Err(_) => tracing::warn!(
                    "host/stopping: listeners still busy after {} ms; disposing anyway",
                    grace.as_millis()
                ),
            }
        }
        Err(error) => tracing::error!("host/stopping: {error}"),
    }
    let mut code = code;
    while let Ok(asked) = exits.try_recv() {
        code = asked;
    }
    code
}

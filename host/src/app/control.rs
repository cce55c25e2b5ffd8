//! The `host` service (`exit`) and the `host/stopping` announcement that precedes disposal.

use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use dsh_plugin_api::abi::ErasedService;
use dsh_plugin_api::io::control::{
    HOST_SERVICE, HOST_STOPPING, HostControl, HostControl_TO, StopRequest,
};
use dsh_plugin_api::{PluginError, RArc, ROption, RString, typed_channel};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use dsh_protocol::PluginRow;

use crate::runtime::{ReportHandle, Runtime};

struct ExitRequests(UnboundedSender<i32>, ReportHandle);

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
            })
            .collect();
        RString::from(serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned()))
    }
}

/// Registers the `host` service; the receiver yields every exit code asked for.
pub fn provide(runtime: &Runtime) -> Result<UnboundedReceiver<i32>, PluginError> {
    let (sender, receiver) = unbounded_channel();
    let service =
        HostControl_TO::from_value(ExitRequests(sender, runtime.report_handle()), TD_Opaque);
    runtime.provide_host(HOST_SERVICE, ErasedService::new(service))?;
    Ok(receiver)
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

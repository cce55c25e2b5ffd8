//! How the connection ends. Stdin closed: no new work is taken, every prompt in flight answers
//! `cancelled`, the agents are cancelled and waited for, the children still running under them
//! are cancelled, the agents are disposed (their logs closed) and the host exits 0. A signal
//! does the same before the host disposes the tree; the host then exits with the signal's
//! code. Every wait is bounded.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::io::control::{HOST_STOPPING, HostControlService};
use dsh_plugin_api::{Json, PluginError, Service, lock};
use dsh_protocol::{AbortCause, ChildStatus};
use dsh_subagents_seam::{SUBAGENTS_SERVICE, SubagentsService};

use crate::server::Server;

/// How long cancelled work is given to close its logs.
const SETTLE: Duration = Duration::from_secs(10);

/// Stops everything the connection started, within bounds. With the client still `listening`
/// (a signal, an unload) the wire closes last, so the cancelled work can still tell it what
/// stopped (a command in its terminal is killed and released); after stdin closed, first.
pub(crate) async fn quiesce(server: &Arc<Server>, listening: bool) {
    if server.closed.swap(true, Ordering::AcqRel) {
        return;
    }
    if !listening {
        server.wire.close();
    }
    let sessions: Vec<_> = lock(&server.sessions).values().cloned().collect();
    for session in &sessions {
        server.cancel(&session.id);
    }
    let settle = async {
        for session in &sessions {
            let answered = lock(&session.inflight)
                .as_ref()
                .map(|inflight| inflight.answered.clone());
            if let Some(answered) = answered {
                answered.wait().await;
            }
            if let Ok(agents) = server.agents() {
                let idle = agents.when_idle(session.id.as_str().into());
                drop(agents);
                let _ = idle.await;
            }
        }
    };
    let _ = first_of(settle, server.ctx.sleep(SETTLE)).await;
    stop_children(server, &sessions).await;
    let dispose = async {
        for session in &sessions {
            if let Ok(agents) = server.agents() {
                let disposing = agents.dispose(session.id.as_str().into());
                drop(agents);
                let _ = disposing.await;
            }
        }
    };
    let _ = first_of(dispose, server.ctx.sleep(SETTLE)).await;
    if listening {
        // The cancelled commands' terminals are killed and released before the wire closes.
        let _ = first_of(server.endings.settled(), server.ctx.sleep(SETTLE)).await;
        server.wire.close();
    }
}

/// Children still running under the connection's sessions (a background subagent) are
/// cancelled and given a moment to close their turns.
async fn stop_children(server: &Arc<Server>, sessions: &[Arc<crate::server::AcpSession>]) {
    let Ok(Some(tree)) = server.ctx.get::<SubagentsService>(SUBAGENTS_SERVICE) else {
        return;
    };
    let mut running = Vec::new();
    for session in sessions {
        let children = tree
            .children(session.id.as_str().into(), true)
            .decode()
            .unwrap_or_default();
        running.extend(
            children
                .into_iter()
                .filter(|child| child.status == ChildStatus::Running)
                .map(|child| child.id),
        );
    }
    if running.is_empty() {
        return;
    }
    if let Ok(agents) = server.agents() {
        for child in &running {
            let _ = agents.cancel(
                child.as_str().into(),
                Json::encode(&AbortCause::Parent),
                false,
            );
        }
    }
    let settled = async {
        for session in sessions {
            tree.settled(session.id.as_str().into()).await;
        }
    };
    let _ = first_of(settled, server.ctx.sleep(SETTLE)).await;
}

/// On a signal, the connection stops its work before the host disposes the tree.
pub(crate) fn on_signal(server: &Arc<Server>) -> Result<(), PluginError> {
    let stopping = server.clone();
    server.ctx.on_parallel(&HOST_STOPPING, move |request| {
        let server = stopping.clone();
        async move {
            if request.signal.is_some() {
                quiesce(&server, true).await;
            }
        }
    })
}

/// Stdin closed: the connection ends and so does the host.
pub(crate) async fn stdin_closed(server: &Arc<Server>, host: &Service<HostControlService>) {
    quiesce(server, false).await;
    host.exit(0);
}

//! The request handler the host calls: the guards in order (Host, then credentials, then the
//! call's shape), then the route. Every response, refusals included, carries the security
//! headers.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use abi_stable::sabi_trait::TD_Opaque;
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::http_server::{
    RequestHandler, ServerRequest, ServerResponse, WebSocketSession_TO,
};

use crate::api::{self, Api};
use crate::guard::{Authed, Guard, Refusal};
use crate::live::Hub;
use crate::page::{self, Boot};
use crate::socket::EventSocket;

/// The guard, filled once the port is known (the allow-list and the cookie name carry it).
/// Until then every request is refused: nothing is ever served unguarded.
#[derive(Clone, Default)]
pub(crate) struct GuardSlot(Arc<OnceLock<Guard>>);

impl GuardSlot {
    pub(crate) fn fill(&self, guard: Guard) {
        let _ = self.0.set(guard);
    }
}

/// Methods that change settings or credentials: refused from the network unless the launch
/// allowed it.
fn privileged(method: &str) -> bool {
    method.starts_with("settings.") && method != "settings.describe"
        || method.starts_with("credentials.") && method != "credentials.describe"
}

#[derive(Clone)]
pub(crate) struct Router {
    guard: GuardSlot,
    api: Arc<Api>,
    hub: Arc<Hub>,
    /// A non-loopback launch without `--allow-remote-settings`.
    settings_locked: bool,
}

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

fn secured(response: ServerResponse) -> ServerResponse {
    response
        .with_header("content-security-policy", CSP)
        .with_header("x-content-type-options", "nosniff")
        .with_header("referrer-policy", "no-referrer")
        .with_header("cache-control", "no-store")
}

fn refused(refusal: &Refusal) -> ServerResponse {
    secured(ServerResponse::new(
        refusal.status,
        "text/plain; charset=utf-8",
        refusal.message,
    ))
}

impl Router {
    pub(crate) fn new(api: Api, hub: Arc<Hub>, settings_locked: bool) -> Self {
        Self {
            guard: GuardSlot::default(),
            api: Arc::new(api),
            hub,
            settings_locked,
        }
    }

    pub(crate) fn guard_slot(&self) -> GuardSlot {
        self.guard.clone()
    }

    async fn route(&self, request: ServerRequest) -> ServerResponse {
        let Some(guard) = self.guard.0.get() else {
            return refused(&Refusal {
                status: 503,
                message: "starting",
            });
        };
        let host = match guard.host(&request) {
            Ok(host) => host.to_owned(),
            Err(refusal) => return refused(&refusal),
        };
        let path = request.path().to_owned();
        match (request.method.as_str(), path.as_str()) {
            ("GET", "/auth") => match guard.sign_in(&request, Instant::now()) {
                Ok(()) => secured(
                    ServerResponse::new(303, "text/plain; charset=utf-8", "signed in")
                        .with_header("location", "/")
                        .with_header("set-cookie", &guard.set_cookie()),
                ),
                Err(refusal) => refused(&refusal),
            },
            ("GET", "/") => match guard.authenticate(&request) {
                Ok(_) => {
                    let boot = Boot {
                        csrf: &guard.secrets.csrf,
                        boot_id: &guard.secrets.boot_id,
                        version: env!("CARGO_PKG_VERSION"),
                        host: Some(self.api.describe()),
                    };
                    secured(ServerResponse::new(
                        200,
                        "text/html; charset=utf-8",
                        page::index(&boot),
                    ))
                }
                Err(_) => secured(ServerResponse::new(
                    401,
                    "text/html; charset=utf-8",
                    page::sign_in(),
                )),
            },
            ("GET", asset) if asset.starts_with("/assets/") => match page::asset(asset) {
                Some((kind, text)) => secured(ServerResponse::new(200, kind, text)),
                None => not_found(),
            },
            (method, api) if api.starts_with("/api/") => {
                let authed = match guard.authenticate(&request) {
                    Ok(authed) => authed,
                    Err(refusal) => return refused(&refusal),
                };
                if request.websocket {
                    return match (guard.origin(&request, &host), api) {
                        (Ok(()), "/api/events") => {
                            let socket = EventSocket {
                                ctx: self.api.ctx.clone(),
                                hub: self.hub.clone(),
                                boot_id: guard.secrets.boot_id.clone(),
                            };
                            ServerResponse::websocket(WebSocketSession_TO::from_value(
                                socket, TD_Opaque,
                            ))
                        }
                        (Ok(()), _) => not_found(),
                        (Err(refusal), _) => refused(&refusal),
                    };
                }
                if api == "/api/events" {
                    return refused(&Refusal {
                        status: 426,
                        message: "the event stream is a WebSocket",
                    });
                }
                if method != "POST" {
                    return refused(&Refusal {
                        status: 405,
                        message: "API calls are POST",
                    });
                }
                self.call(&request, authed, &host, &api["/api/".len()..])
                    .await
            }
            _ => not_found(),
        }
    }

    async fn call(
        &self,
        request: &ServerRequest,
        authed: Authed,
        host: &str,
        method: &str,
    ) -> ServerResponse {
        let Some(guard) = self.guard.0.get() else {
            return not_found();
        };
        if let Err(refusal) = guard.call(request, authed, host) {
            return refused(&refusal);
        }
        if self.settings_locked && privileged(method) {
            return refused(&Refusal {
                status: 403,
                message: "settings and credentials cannot be changed over the network in this launch (--allow-remote-settings)",
            });
        }
        let response = self.api.call(method, &request.body).await;
        secured(ServerResponse::new(
            200,
            "application/json",
            api::body(&response),
        ))
    }
}

fn not_found() -> ServerResponse {
    secured(ServerResponse::new(
        404,
        "text/plain; charset=utf-8",
        "not found",
    ))
}

impl RequestHandler for Router {
    fn handle(&self, request: ServerRequest) -> FfiFuture<ServerResponse> {
        let router = self.clone();
        async move { router.route(request).await }.into_ffi()
    }
}

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

use abi_stable::std_types::RString;
use dsh_client_protocol::{HostDescription, RpcErrorCode, RpcRequest, RpcResponse, RpcResult};
use dsh_clients_seam::{ClientsService, ConnectOptions, ConnectionBox};
use dsh_plugin_api::Context;

use crate::guard::{Authed, Guard, Refusal};
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
    ctx: Context,
    clients: Arc<dsh_plugin_api::Service<ClientsService>>,
    /// The connection the unary calls run on (frames go to the event sockets' own).
    unary: Arc<ConnectionBox>,
    /// What every connection of this server tells the service about its client.
    options: ConnectOptions,
    /// A non-loopback launch without `--allow-remote-settings`.
    settings_locked: bool,
}

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

fn secured(response: ServerResponse) -> ServerResponse {
    guarded(response).with_header("cache-control", "no-store")
}

fn guarded(response: ServerResponse) -> ServerResponse {
    response
        .with_header("content-security-policy", CSP)
        .with_header("x-content-type-options", "nosniff")
        .with_header("referrer-policy", "no-referrer")
}

/// An asset. Under this build's version it is kept for good (a page opened again runs its
/// modules without a single request: the 20 revalidations cost some 60 ms on every open);
/// by its plain name, or under another build's version, it is revalidated on every use
/// (`no-cache` with its entity tag), so a new library's assets are never served stale.
fn asset_response(
    request: &ServerRequest,
    asset: page::Asset,
    freshness: page::Freshness,
) -> ServerResponse {
    let etag = format!("\"{:016x}\"", asset.etag);
    let response = match request.header("if-none-match") == Some(etag.as_str()) {
        true => ServerResponse::new(304, asset.kind, ""),
        false => ServerResponse::new(200, asset.kind, asset.text),
    };
    let keep = match freshness {
        page::Freshness::Immutable => "public, max-age=31536000, immutable",
        page::Freshness::Revalidate => "no-cache",
    };
    guarded(response)
        .with_header("cache-control", keep)
        .with_header("etag", &etag)
}

fn refused(refusal: &Refusal) -> ServerResponse {
    secured(ServerResponse::new(
        refusal.status,
        "text/plain; charset=utf-8",
        refusal.message,
    ))
}

impl Router {
    pub(crate) fn new(
        ctx: Context,
        clients: Arc<dsh_plugin_api::Service<ClientsService>>,
        unary: ConnectionBox,
        options: ConnectOptions,
        settings_locked: bool,
    ) -> Self {
        Self {
            guard: GuardSlot::default(),
            ctx,
            clients,
            unary: Arc::new(unary),
            options,
            settings_locked,
        }
    }

    /// What `host.describe` answers, for the page's boot data.
    async fn describe(&self) -> Option<HostDescription> {
        let answer = self
            .unary
            .call(RString::from("host.describe"), RString::new())
            .await;
        let result: RpcResult = serde_json::from_str(&answer).ok()?;
        serde_json::from_value(result.value?).ok()
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
                        host: self.describe().await,
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
            ("GET", "/export") => match guard.authenticate(&request) {
                Ok(_) => secured(crate::download::download(&self.ctx, &request).await),
                Err(refusal) => refused(&refusal),
            },
            ("GET", asset) if asset.starts_with("/assets/") => match page::asset(asset) {
                Some((found, freshness)) => asset_response(&request, found, freshness),
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
                                ctx: self.ctx.clone(),
                                clients: self.clients.clone(),
                                options: ConnectOptions {
                                    answers: true,
                                    ..self.options.clone()
                                },
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
        let response = self.run(method, &request.body).await;
        secured(ServerResponse::new(
            200,
            "application/json",
            serde_json::to_vec(&response).unwrap_or_default(),
        ))
    }

    /// Reads the envelope, checks it names the path's method, and runs the call on the
    /// service; the answer is the reference's response shape.
    async fn run(&self, method: &str, body: &[u8]) -> RpcResponse {
        let request: RpcRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(error) => {
                return RpcResponse::new(
                    String::new(),
                    RpcResult::error(
                        RpcErrorCode::BadRequest,
                        format!("the body is not a client-request envelope: {error}"),
                    ),
                );
            }
        };
        if request.method != method {
            return RpcResponse::new(
                request.rpc_id,
                RpcResult::error(
                    RpcErrorCode::BadRequest,
                    format!(
                        "the envelope names `{}` but the path `{method}`",
                        request.method
                    ),
                ),
            );
        }
        let answer = self
            .unary
            .call(
                RString::from(method),
                RString::from(request.payload.to_string()),
            )
            .await;
        let result = serde_json::from_str(&answer).unwrap_or_else(|error| {
            RpcResult::error(
                RpcErrorCode::Internal,
                format!("the service's answer does not read: {error}"),
            )
        });
        RpcResponse::new(request.rpc_id, result)
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

//! The `http` service: one HTTP exchange per call, the response body read chunk by chunk with
//! an idle timeout per read. Provided by the host (`dsh-host/http`, reqwest on the host runtime).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

/// The service key.
pub const HTTP_SERVICE: &str = "http";

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct HttpHeader {
    pub name: RString,
    pub value: RString,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct HttpRequest {
    pub method: RString,
    pub url: RString,
    pub headers: RVec<HttpHeader>,
    pub body: RVec<u8>,
    /// Time allowed until the response head arrives (0: no limit).
    pub head_timeout_ms: u64,
}

/// Why an exchange failed before or while the body was read.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpErrorKind {
    /// Connecting, sending or receiving failed.
    Transport,
    /// No data within the allowed time.
    Timeout,
    /// The request itself is malformed (bad URL, bad header).
    InvalidRequest,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub kind: HttpErrorKind,
    pub message: RString,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpError {}

/// The response body, read in chunks as they arrive. `RNone` marks its end.
#[sabi_trait]
pub trait HttpBody: Send + Sync {
    fn next_chunk(&self, idle_timeout_ms: u64) -> FfiFuture<RResult<ROption<RVec<u8>>, HttpError>>;
}
pub type HttpBodyBox = HttpBody_TO<'static, RBox<()>>;

#[repr(C)]
#[derive(StableAbi)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: RVec<HttpHeader>,
    pub body: HttpBodyBox,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|header| header.name.eq_ignore_ascii_case(name))
            .map(|header| header.value.as_str())
    }
}

/// The client. Dropping a returned future cancels the exchange.
#[sabi_trait]
pub trait HttpClient: Send + Sync {
    fn send(&self, request: HttpRequest) -> FfiFuture<RResult<HttpResponse, HttpError>>;
    /// [`send`](HttpClient::send), connecting to one of `addresses` (IP addresses, as text)
    /// for the URL's host instead of resolving the name again. A caller that judged where a
    /// name leads (`web_fetch` refuses private addresses) talks to what it judged: a name
    /// whose answers change in between (DNS rebinding) cannot lead elsewhere. The name still
    /// goes in the `Host` header and the TLS handshake. An address that does not read is
    /// refused (`InvalidRequest`) before anything is sent.
    fn send_pinned(
        &self,
        request: HttpRequest,
        addresses: RVec<RString>,
    ) -> FfiFuture<RResult<HttpResponse, HttpError>>;
}

/// The value registered under [`HTTP_SERVICE`].
pub type HttpService = HttpClient_TO<'static, RBox<()>>;

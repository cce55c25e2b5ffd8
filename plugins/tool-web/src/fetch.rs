//! `web_fetch`'s retrieval through the host's `http` service: the URL checked (http or https,
//! no credentials in it, bounded length), its destination judged (see `address`), redirects
//! followed by hand within the origin and a hop budget (a redirect to another origin is not
//! followed: the model fetches that URL in a call of its own, which the permission rules judge
//! afresh), the body read up to a byte cap, classed as HTML or text (anything else is refused as
//! binary) and decoded. Every wait is bounded by the call's deadline.

use std::net::{IpAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use abi_stable::std_types::{RErr, ROk, RSome, RString, RVec};
use dsh_plugin_api::io::http::{HttpErrorKind, HttpHeader, HttpRequest, HttpResponse, HttpService};
use dsh_plugin_api::{Context, Service};
use url::{Host, Url};

use crate::address::{AllowList, non_public};

/// The limits of one fetch (the row's config).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_url_length: usize,
    pub(crate) max_response_bytes: u64,
    pub(crate) max_body_chars: usize,
    pub(crate) timeout_ms: u64,
    pub(crate) max_redirects: u32,
    pub(crate) user_agent: String,
}

/// Why a fetch gave no page, with the code the tool result carries.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum FetchError {
    #[error("{0}")]
    InvalidUrl(String),
    #[error("{0}")]
    Blocked(String),
    #[error("the fetch of {url} timed out after {ms} ms (the server did not answer in time)")]
    Timeout { url: String, ms: u64 },
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Redirect(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("the fetch of {url} failed: {message}")]
    Transport { url: String, message: String },
}

impl FetchError {
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl(_) => "WEB_INVALID_URL",
            Self::Blocked(_) => "WEB_BLOCKED_URL",
            Self::Timeout { .. } => "WEB_FETCH_TIMEOUT",
            Self::TooLarge(_) => "WEB_FETCH_TOO_LARGE",
            Self::Redirect(_) => "WEB_REDIRECT_BLOCKED",
            Self::Unsupported(_) => "WEB_UNSUPPORTED_CONTENT_TYPE",
            Self::Transport { .. } => "WEB_PROVIDER_ERROR",
        }
    }
}

/// What a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Html,
    Text,
}

/// A fetched page.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// The URL finally read (after redirects).
    pub(crate) url: String,
    pub(crate) status: u16,
    pub(crate) kind: Kind,
    pub(crate) body: String,
    /// The byte or character cap cut the body.
    pub(crate) truncated: bool,
}

/// One fetcher per row.
pub(crate) struct Fetcher {
    pub(crate) ctx: Context,
    pub(crate) http: Service<HttpService>,
    pub(crate) allow: AllowList,
    pub(crate) limits: Limits,
}

impl Fetcher {
    /// Reads `raw`, following redirects, within the deadline.
    pub(crate) async fn fetch(&self, raw: &str) -> Result<Fetched, FetchError> {
        let deadline = Instant::now() + Duration::from_millis(self.limits.timeout_ms);
        let mut url = self.validate(raw)?;
        let mut hops = 0;
        loop {
            let pin = self.check_destination(&url).await?;
            let response = self.send(&url, deadline, pin).await?;
            if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
                return self.read(response, url, deadline).await;
            }
            if hops >= self.limits.max_redirects {
                return Err(FetchError::Redirect(format!(
                    "{raw} redirected more than {} times (the last hop was from {url}); it may redirect forever: not followed further",
                    self.limits.max_redirects
                )));
            }
            let Some(location) = response.header("location") else {
                return Err(FetchError::Transport {
                    url: url.to_string(),
                    message: format!("a redirect (HTTP {}) without a Location", response.status),
                });
            };
            let next = url.join(location).map_err(|error| {
                FetchError::InvalidUrl(format!(
                    "the redirect to `{location}` is not a URL: {error}"
                ))
            })?;
            let next = self.validate(next.as_str())?;
            if next.origin() != url.origin() {
                return Err(FetchError::Redirect(format!(
                    "{url} redirects to another origin, {next}: not followed; call web_fetch with that URL to read it"
                )));
            }
            url = next;
            hops += 1;
        }
    }

    fn validate(&self, raw: &str) -> Result<Url, FetchError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(FetchError::InvalidUrl(
                "url must be a non-empty string".into(),
            ));
        }
        if raw.len() > self.limits.max_url_length {
            return Err(FetchError::InvalidUrl(format!(
                "the URL is {} characters long, over the limit of {}",
                raw.len(),
                self.limits.max_url_length
            )));
        }
        let url = Url::parse(raw)
            .map_err(|error| FetchError::InvalidUrl(format!("`{raw}` is not a URL: {error}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::InvalidUrl(format!(
                "the scheme `{}` is not fetched: only http and https are",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(FetchError::Blocked(
                "credentials in URLs are not allowed".into(),
            ));
        }
        if url.host().is_none() {
            return Err(FetchError::InvalidUrl(format!("`{raw}` names no host")));
        }
        Ok(url)
    }

    /// Refuses a destination that is not public, unless `allowPrivate` lets it through;
    /// answers the addresses a host name was judged by, which the request is then pinned to
    /// (`None`: nothing to pin, an address in the URL or a host `allowPrivate` names).
    async fn check_destination(&self, url: &Url) -> Result<Option<Vec<IpAddr>>, FetchError> {
        let host_text = url.host_str().unwrap_or_default().to_owned();
        if self.allow.allows_host(&host_text) {
            return Ok(None);
        }
        let named = matches!(url.host(), Some(Host::Domain(_)));
        let addresses: Vec<IpAddr> = match url.host() {
            Some(Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
            Some(Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
            Some(Host::Domain(name)) => {
                let target = (name.to_owned(), url.port_or_known_default().unwrap_or(80));
                let resolved = self
                    .ctx
                    .blocking(move || {
                        target
                            .to_socket_addrs()
                            .map(|addrs| addrs.collect::<Vec<_>>())
                    })
                    .await
                    .map_err(|error| FetchError::Transport {
                        url: url.to_string(),
                        message: error.to_string(),
                    })?;
                match resolved {
                    Ok(addrs) => addrs.into_iter().map(|addr| addr.ip()).collect(),
                    Err(error) => {
                        return Err(FetchError::Transport {
                            url: url.to_string(),
                            message: format!("cannot resolve `{name}`: {error}"),
                        });
                    }
                }
            }
            None => Vec::new(),
        };
        for address in &addresses {
            if let Some(kind) = non_public(*address)
                && !self.allow.allows_address(*address)
            {
                return Err(FetchError::Blocked(format!(
                    "refused: {host_text} is {address}, a {kind} address; web_fetch reaches public addresses only (an `allowPrivate` entry in the tool-web row lets a host or range through)"
                )));
            }
        }
        Ok(named.then_some(addresses))
    }

    /// Sends the GET; with `pin`, to those addresses only (what the destination was judged by).
    async fn send(
        &self,
        url: &Url,
        deadline: Instant,
        pin: Option<Vec<IpAddr>>,
    ) -> Result<HttpResponse, FetchError> {
        let header = |name: &str, value: &str| HttpHeader {
            name: name.into(),
            value: value.into(),
        };
        let request = HttpRequest {
            method: "GET".into(),
            url: url.as_str().into(),
            headers: RVec::from(vec![
                header("user-agent", &self.limits.user_agent),
                header(
                    "accept",
                    "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.8",
                ),
            ]),
            body: RVec::new(),
            head_timeout_ms: remaining(deadline).max(1),
        };
        let sent = match pin {
            Some(addresses) => {
                let addresses = addresses
                    .iter()
                    .map(|address| RString::from(address.to_string()))
                    .collect();
                self.http.send_pinned(request, addresses).await
            }
            None => self.http.send(request).await,
        };
        match sent {
            ROk(response) => Ok(response),
            RErr(error) if error.kind == HttpErrorKind::Timeout => Err(self.timeout(url)),
            RErr(error) => Err(FetchError::Transport {
                url: url.to_string(),
                message: error.to_string(),
            }),
        }
    }

    fn timeout(&self, url: &Url) -> FetchError {
        FetchError::Timeout {
            url: url.to_string(),
            ms: self.limits.timeout_ms,
        }
    }

    /// Classes, reads (capped) and decodes the final response.
    async fn read(
        &self,
        response: HttpResponse,
        url: Url,
        deadline: Instant,
    ) -> Result<Fetched, FetchError> {
        let content_type = response.header("content-type").map(str::to_owned);
        let kind = match content_type.as_deref().map(classify) {
            Some(Some(kind)) => Some(kind),
            Some(None) => {
                return Err(FetchError::Unsupported(format!(
                    "{url} answered `{}`, a binary type: web_fetch reads HTML and text only",
                    content_type.unwrap_or_default()
                )));
            }
            // No type: judged by its bytes below.
            None => None,
        };
        let cap = self.limits.max_response_bytes;
        if let Some(declared) = response
            .header("content-length")
            .and_then(|length| length.trim().parse::<u64>().ok())
            && declared > cap
        {
            return Err(FetchError::TooLarge(format!(
                "{url} answers {declared} bytes, over the limit of {cap} bytes: fetch a smaller resource or a section of it"
            )));
        }
        let mut bytes = Vec::new();
        let mut truncated = false;
        loop {
            let wait = remaining(deadline);
            if wait == 0 {
                return Err(self.timeout(&url));
            }
            match response.body.next_chunk(wait).await {
                ROk(RSome(chunk)) => {
                    let room = usize::try_from(cap).unwrap_or(usize::MAX) - bytes.len();
                    if chunk.len() > room {
                        bytes.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    bytes.extend_from_slice(&chunk);
                }
                ROk(_) => break,
                RErr(error) if error.kind == HttpErrorKind::Timeout => {
                    return Err(self.timeout(&url));
                }
                RErr(error) => {
                    return Err(FetchError::Transport {
                        url: url.to_string(),
                        message: error.to_string(),
                    });
                }
            }
        }
        if looks_binary(&bytes) {
            return Err(FetchError::Unsupported(format!(
                "{url} answered binary data ({}): web_fetch reads HTML and text only",
                content_type.as_deref().unwrap_or("no content type")
            )));
        }
        let kind = kind.unwrap_or_else(|| sniff(&bytes));
        let mut body = decode(&bytes, content_type.as_deref())?;
        if let Some((cut, _)) = body.char_indices().nth(self.limits.max_body_chars) {
            body.truncate(cut);
            truncated = true;
        }
        Ok(Fetched {
            url: url.to_string(),
            status: response.status,
            kind,
            body,
            truncated,
        })
    }
}

fn remaining(deadline: Instant) -> u64 {
    u64::try_from(
        deadline
            .saturating_duration_since(Instant::now())
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

/// Media types read as HTML.
const HTML_TYPES: [&str; 2] = ["text/html", "application/xhtml+xml"];
/// Media types outside `text/` read as text.
const TEXT_TYPES: [&str; 3] = [
    "application/json",
    "application/xml",
    "application/javascript",
];

/// `html`, `text`, or `None` for a type that is not text.
fn classify(content_type: &str) -> Option<Kind> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if HTML_TYPES.contains(&mime.as_str()) {
        Some(Kind::Html)
    } else if mime.starts_with("text/")
        || TEXT_TYPES.contains(&mime.as_str())
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
    {
        Some(Kind::Text)
    } else {
        None
    }
}

/// Bytes a text never holds: NUL, or more than a few control characters.
fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    head.contains(&0) || latin_control(head)
}

/// Control bytes other than white space: binary, whatever its charset.
fn latin_control(head: &[u8]) -> bool {
    head.iter()
        .filter(|b| **b < 0x20 && !matches!(**b, b'\n' | b'\r' | b'\t' | 0x0c))
        .count()
        > head.len() / 50
}

/// An untyped body that starts like a page is HTML.
fn sniff(bytes: &[u8]) -> Kind {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// The body as text in its declared charset (UTF-8 when none is declared).
fn decode(bytes: &[u8], content_type: Option<&str>) -> Result<String, FetchError> {
    let charset = content_type
        .and_then(|value| {
            value.split(';').skip(1).find_map(|part| {
                let (key, value) = part.split_once('=')?;
                (key.trim().eq_ignore_ascii_case("charset"))
                    .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
            })
        })
        .unwrap_or_else(|| "utf-8".into());
    match charset.as_str() {
        "utf-8" | "utf8" | "us-ascii" | "ascii" => Ok(String::from_utf8_lossy(bytes).into_owned()),
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" => {
            Ok(bytes.iter().map(|b| char::from(*b)).collect())
        }
        other => Err(FetchError::Unsupported(format!(
            "the charset `{other}` is not decoded: web_fetch reads UTF-8 and Latin-1 text"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_classed() {
        assert_eq!(classify("text/html; charset=utf-8"), Some(Kind::Html));
        assert_eq!(classify("application/xhtml+xml"), Some(Kind::Html));
        assert_eq!(classify("text/plain"), Some(Kind::Text));
        assert_eq!(classify("application/ld+json"), Some(Kind::Text));
        assert_eq!(classify("image/png"), None);
        assert_eq!(classify("application/octet-stream"), None);
    }

    #[test]
    fn binary_bytes_are_told_from_text() {
        assert!(looks_binary(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"));
        assert!(!looks_binary("plain text, café".as_bytes()));
        assert!(!looks_binary(b"caf\xe9 latin-1 text"));
    }

    #[test]
    fn charsets_decode_or_are_named() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=ISO-8859-1")).unwrap(),
            "café"
        );
        assert_eq!(decode("é".as_bytes(), None).unwrap(), "é");
        let error = decode(b"x", Some("text/plain; charset=shift_jis")).unwrap_err();
        assert!(error.to_string().contains("shift_jis"), "{error}");
    }

    #[test]
    fn untyped_pages_are_sniffed() {
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(sniff(b"just words"), Kind::Text);
    }
}

//! Who may talk to the server, decided before any route runs. Authentication is the launch's
//! secrets alone: a 256-bit token (printed in the launch URL, or sent as `Authorization:
//! Bearer` by scripts) that `/auth` trades for an HttpOnly, SameSite=Strict cookie. The `Host`
//! allow-list, the WebSocket `Origin` check, the JSON content type and the CSRF header are
//! defence in depth on top of it, never a way in: the reference's critical advisory came from
//! trusting `Host`. Wrong `/auth` attempts never delay the launch token; they limit guesses at
//! the shorter `DSH_ACCESS_SECRET` of a non-loopback launch, per peer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dsh_plugin_api::io::http_server::ServerRequest;
use dsh_plugin_api::lock;

/// Wrong `/auth` attempts a peer may make per window before its guesses at the access secret
/// are refused for the rest of the window.
const MAX_FAILURES: u32 = 5;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Peers whose wrong attempts are remembered; when that many are within their window, a new
/// peer's guesses are refused too (many addresses must not buy unlimited guesses).
const MAX_PEERS: usize = 4096;

/// The secrets of one launch, drawn from the OS random source.
pub(crate) struct Secrets {
    /// Printed once in the launch URL; also the bearer token of scripts.
    pub(crate) token: String,
    /// The value of the auth cookie (not the token: the URL's secret never sits in a cookie).
    pub(crate) cookie: String,
    /// Given to the page in its boot data; required on every state-changing call.
    pub(crate) csrf: String,
    /// Tells a client that the host restarted.
    pub(crate) boot_id: String,
}

/// `bytes` random bytes as lower-case hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)?;
    Ok(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The part of the secrets kept between launches (in the home, owner-only), so a restart on
/// the same port leaves signed-in pages signed in and the printed link unchanged.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    token: String,
    cookie: String,
}

/// Why the kept secrets could not be used or kept.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SecretsError {
    #[error("no OS randomness: {0}")]
    Random(#[from] getrandom::Error),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl Secrets {
    pub(crate) fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self {
            token: random_hex(32)?,
            cookie: random_hex(32)?,
            csrf: random_hex(16)?,
            boot_id: random_hex(8)?,
        })
    }

    /// The secrets of a launch whose sign-in is kept in `file`: its token and cookie when the
    /// file reads and only its owner may read it, else new ones written there (owner-only).
    /// The CSRF token and boot id are new every launch: a page reloads on a new boot id and
    /// reads the new CSRF token from its boot data. Returns whether the kept ones were used.
    pub(crate) fn kept_in(file: &std::path::Path) -> Result<(Self, bool), SecretsError> {
        let mut secrets = Self::generate()?;
        if let Some(kept) = read_kept(file) {
            secrets.token = kept.token;
            secrets.cookie = kept.cookie;
            return Ok((secrets, true));
        }
        write_kept(
            file,
            &Kept {
                token: secrets.token.clone(),
                cookie: secrets.cookie.clone(),
            },
        )?;
        Ok((secrets, false))
    }
}

/// The kept secrets, unless the file is missing, malformed, not a regular file or readable by
/// anyone but its owner (then it is not trusted, and replaced).
fn read_kept(file: &std::path::Path) -> Option<Kept> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(file).ok()?;
    if !meta.is_file() || meta.mode() & 0o077 != 0 || meta.len() > 1024 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let kept: Kept = serde_json::from_str(&text).ok()?;
    let sound = |secret: &str| secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    (sound(&kept.token) && sound(&kept.cookie)).then_some(kept)
}

/// Writes `kept` to `file`, readable by its owner only, replacing what is there.
fn write_kept(file: &std::path::Path, kept: &Kept) -> Result<(), SecretsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| SecretsError::Io {
        path: file.to_owned(),
        source,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    // A new file beside the old one, renamed over it: never a moment with the secret in a
    // file others may read, nor a half-written one.
    let temporary = file.with_extension("new");
    let _ = std::fs::remove_file(&temporary);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io)?;
    let text = serde_json::to_string(kept).unwrap_or_default();
    out.write_all(text.as_bytes()).map_err(io)?;
    out.sync_all().map_err(io)?;
    std::fs::rename(&temporary, file).map_err(io)
}

/// Equality whose time does not depend on where the inputs differ.
pub(crate) fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request is refused before routing: its HTTP status and a message for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) message: &'static str,
}

const fn refuse(status: u16, message: &'static str) -> Refusal {
    Refusal { status, message }
}

/// How a request proved it may use the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Authed {
    /// The browser's cookie: state-changing calls also need the CSRF header.
    Cookie,
    /// A script's bearer token (no ambient credential, so no CSRF risk).
    Bearer,
}

/// The guards of one server.
pub(crate) struct Guard {
    pub(crate) secrets: Secrets,
    /// `host:port` values a request's `Host` may name.
    allowed_hosts: Vec<String>,
    /// The auth cookie's name; it carries the port, so two servers on one host keep theirs.
    pub(crate) cookie_name: String,
    /// The `DSH_ACCESS_SECRET` of a non-loopback launch, also accepted by `/auth`.
    access_secret: Option<String>,
    /// Wrong attempts per peer (an IPv6 peer by its /64), with when its window began.
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl Guard {
    pub(crate) fn new(
        secrets: Secrets,
        bound: &str,
        trusted: &[String],
        access_secret: Option<String>,
    ) -> Self {
        let port = bound.rsplit_once(':').map_or("", |(_, port)| port);
        let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|host| format!("{host}:{port}"))
            .collect();
        allowed_hosts.push(bound.to_owned());
        allowed_hosts.extend(trusted.iter().map(|host| match host.contains(':') {
            true => host.clone(),
            false => format!("{host}:{port}"),
        }));
        Self {
            secrets,
            allowed_hosts,
            cookie_name: format!("dsh_auth_{port}"),
            access_secret,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The `Host` the request names, when it is one this server answers to.
    pub(crate) fn host<'r>(&self, request: &'r ServerRequest) -> Result<&'r str, Refusal> {
        let host = request.header("host").unwrap_or_default();
        match self
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
        {
            true => Ok(host),
            false => Err(refuse(421, "this server does not answer to that Host")),
        }
    }

    /// Whether the request carries the launch's credentials.
    pub(crate) fn authenticate(&self, request: &ServerRequest) -> Result<Authed, Refusal> {
        if let Some(bearer) = request
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
        {
            return match constant_time_eq(bearer.trim(), &self.secrets.token) {
                true => Ok(Authed::Bearer),
                false => Err(refuse(401, "the bearer token is wrong")),
            };
        }
        match self.cookie(request) {
            Some(value) if constant_time_eq(value, &self.secrets.cookie) => Ok(Authed::Cookie),
            _ => Err(refuse(
                401,
                "not signed in: open the URL the server printed when it started",
            )),
        }
    }

    fn cookie<'r>(&self, request: &'r ServerRequest) -> Option<&'r str> {
        request
            .headers
            .iter()
            .filter(|header| header.name.eq_ignore_ascii_case("cookie"))
            .flat_map(|header| header.value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie_name)
            .map(|(_, value)| value)
    }

    /// A WebSocket's `Origin` must be the page this server served.
    pub(crate) fn origin(&self, request: &ServerRequest, host: &str) -> Result<(), Refusal> {
        let expected = format!("http://{host}");
        match request.header("origin") {
            Some(origin) if origin.eq_ignore_ascii_case(&expected) => Ok(()),
            _ => Err(refuse(
                403,
                "a WebSocket must come from this server's own page",
            )),
        }
    }

    /// A call: JSON only, from no other origin than the served page (a browser names the
    /// origin of every cross-site POST), and with the page's CSRF header when the cookie
    /// authenticated it.
    pub(crate) fn call(
        &self,
        request: &ServerRequest,
        authed: Authed,
        host: &str,
    ) -> Result<(), Refusal> {
        let json = request
            .header("content-type")
            .and_then(|value| value.split(';').next())
            .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(refuse(415, "calls are `application/json`"));
        }
        if let Some(origin) = request.header("origin")
            && !origin.eq_ignore_ascii_case(&format!("http://{host}"))
        {
            return Err(refuse(403, "a call must come from this server's own page"));
        }
        let csrf = request.header("x-dsh-csrf").unwrap_or_default();
        match authed == Authed::Bearer || constant_time_eq(csrf, &self.secrets.csrf) {
            true => Ok(()),
            false => Err(refuse(403, "the page's CSRF header is missing or wrong")),
        }
    }

    /// `/auth?token=…`: the cookie for a right token. The launch token is 256 bits, which no
    /// number of guesses finds, so it is always accepted at once: wrong tokens from any local
    /// process (every one of them is the same loopback peer) cannot lock the person out. Only
    /// guesses at `DSH_ACCESS_SECRET` (as short as 16 characters) are limited: a peer that keeps
    /// failing has them refused for the rest of the window.
    pub(crate) fn sign_in(&self, request: &ServerRequest, now: Instant) -> Result<(), Refusal> {
        let offered = query_value(request.query(), "token").unwrap_or_default();
        if constant_time_eq(&offered, &self.secrets.token) {
            return Ok(());
        }
        let wrong = refuse(401, "that token is not this launch's");
        let Some(secret) = self.access_secret.as_deref() else {
            return Err(wrong);
        };
        let peer = peer_ip(&request.peer).map(peer_key);
        let mut failures = lock(&self.failures);
        let limited = match peer.and_then(|ip| failures.get(&ip)) {
            Some((count, since)) => {
                now.duration_since(*since) < FAILURE_WINDOW && *count >= MAX_FAILURES
            }
            None => {
                if failures.len() >= MAX_PEERS {
                    failures.retain(|_, (_, since)| now.duration_since(*since) < FAILURE_WINDOW);
                }
                failures.len() >= MAX_PEERS
            }
        };
        if limited {
            return Err(refuse(429, "too many wrong secrets: wait a minute"));
        }
        if constant_time_eq(&offered, secret) {
            if let Some(ip) = peer {
                failures.remove(&ip);
            }
            return Ok(());
        }
        if let Some(ip) = peer {
            let entry = failures.entry(ip).or_insert((0, now));
            if now.duration_since(entry.1) >= FAILURE_WINDOW {
                *entry = (0, now);
            }
            entry.0 += 1;
        }
        Err(wrong)
    }

    /// The `Set-Cookie` value of a signed-in browser.
    pub(crate) fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.secrets.cookie
        )
    }
}

fn peer_ip(peer: &str) -> Option<IpAddr> {
    peer.parse::<std::net::SocketAddr>()
        .map(|address| address.ip())
        .ok()
}

/// Whose attempts are counted together: an IPv4 address, or an IPv6 /64 (one host commonly
/// holds all of one).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

/// The value of `name` in a URL query (percent-decoding left out: tokens are hex).
pub(crate) fn query_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;

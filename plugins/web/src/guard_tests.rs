//! The guard's decisions on hand-made requests: hosts, the cookie and the bearer, JSON and the
//! CSRF header, limited guesses, and the WebSocket origin.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::io::http_server::HttpHeader;

fn guard() -> Guard {
    let secrets = Secrets {
        token: "t".repeat(64),
        cookie: "c".repeat(64),
        csrf: "x".repeat(32),
        boot_id: "b".into(),
    };
    Guard::new(secrets, "127.0.0.1:3080", &["dev.box".into()], None)
}

fn request(target: &str, headers: &[(&str, &str)]) -> ServerRequest {
    ServerRequest {
        method: "GET".into(),
        target: target.into(),
        headers: headers
            .iter()
            .map(|(name, value)| HttpHeader {
                name: RString::from(*name),
                value: RString::from(*value),
            })
            .collect(),
        body: RVec::new(),
        peer: "127.0.0.1:5000".into(),
        local: "127.0.0.1:3080".into(),
        websocket: false,
    }
}

#[test]
fn hosts_are_the_loopback_names_the_bind_and_the_trusted_ones() {
    let guard = guard();
    for host in [
        "localhost:3080",
        "127.0.0.1:3080",
        "[::1]:3080",
        "dev.box:3080",
    ] {
        assert!(
            guard.host(&request("/", &[("host", host)])).is_ok(),
            "{host}"
        );
    }
    for host in ["evil.example:3080", "127.0.0.1:3081", ""] {
        assert_eq!(
            guard
                .host(&request("/", &[("host", host)]))
                .unwrap_err()
                .status,
            421
        );
    }
}

#[test]
fn the_cookie_or_the_bearer_authenticates_and_nothing_else() {
    let guard = guard();
    let cookie = format!("a=1; dsh_auth_3080={}", "c".repeat(64));
    assert_eq!(
        guard.authenticate(&request("/", &[("cookie", &cookie)])),
        Ok(Authed::Cookie)
    );
    let bearer = format!("Bearer {}", "t".repeat(64));
    assert_eq!(
        guard.authenticate(&request("/", &[("authorization", &bearer)])),
        Ok(Authed::Bearer)
    );
    // The token is no cookie, and another port's cookie is not this one's.
    let wrong = format!("dsh_auth_3080={}", "t".repeat(64));
    let other = format!("dsh_auth_3081={}", "c".repeat(64));
    for headers in [
        vec![("cookie", wrong.as_str())],
        vec![("cookie", other.as_str())],
        vec![],
    ] {
        assert_eq!(
            guard
                .authenticate(&request("/", &headers))
                .unwrap_err()
                .status,
            401
        );
    }
}

#[test]
fn calls_need_json_and_the_csrf_header_when_a_cookie_signed_them() {
    let guard = guard();
    let csrf = "x".repeat(32);
    let json = request(
        "/",
        &[
            ("content-type", "application/json; charset=utf-8"),
            ("x-dsh-csrf", &csrf),
        ],
    );
    let host = "127.0.0.1:3080";
    assert!(guard.call(&json, Authed::Cookie, host).is_ok());
    let text = request(
        "/",
        &[("content-type", "text/plain"), ("x-dsh-csrf", &csrf)],
    );
    assert_eq!(
        guard.call(&text, Authed::Cookie, host).unwrap_err().status,
        415
    );
    let bare = request("/", &[("content-type", "application/json")]);
    assert_eq!(
        guard.call(&bare, Authed::Cookie, host).unwrap_err().status,
        403
    );
    assert!(guard.call(&bare, Authed::Bearer, host).is_ok());
    // Another loopback port is another origin, whatever it carries.
    let from = |origin: &str| {
        request(
            "/",
            &[
                ("content-type", "application/json"),
                ("x-dsh-csrf", &csrf),
                ("origin", origin),
            ],
        )
    };
    let foreign = from("http://127.0.0.1:8000");
    assert_eq!(
        guard
            .call(&foreign, Authed::Cookie, host)
            .unwrap_err()
            .status,
        403
    );
    assert!(
        guard
            .call(&from("http://127.0.0.1:3080"), Authed::Cookie, host)
            .is_ok()
    );
}

#[test]
fn the_launch_token_signs_in_at_once_after_any_number_of_wrong_ones() {
    let guard = guard();
    let now = Instant::now();
    for _ in 0..100 {
        let refused = guard.sign_in(&request("/auth?token=nope", &[]), now);
        assert_eq!(refused.unwrap_err().status, 401);
    }
    let right = format!("/auth?token={}", "t".repeat(64));
    assert!(guard.sign_in(&request(&right, &[]), now).is_ok());
    assert!(guard.set_cookie().contains("HttpOnly; SameSite=Strict"));
}

#[test]
fn guesses_at_the_access_secret_are_limited_per_peer_but_not_the_launch_token() {
    let secrets = Secrets {
        token: "t".repeat(64),
        cookie: "c".repeat(64),
        csrf: "x".repeat(32),
        boot_id: "b".into(),
    };
    let secret = "s".repeat(16);
    let guard = Guard::new(secrets, "0.0.0.0:3080", &[], Some(secret.clone()));
    let from = |target: &str, peer: &str| ServerRequest {
        peer: peer.into(),
        ..request(target, &[])
    };
    let now = Instant::now();
    let remote = "203.0.113.7:5000";
    for _ in 0..MAX_FAILURES {
        let refused = guard.sign_in(&from("/auth?token=guess", remote), now);
        assert_eq!(refused.unwrap_err().status, 401);
    }
    let with_secret = format!("/auth?token={secret}");
    let limited = guard.sign_in(&from(&with_secret, remote), now);
    assert_eq!(limited.unwrap_err().status, 429);
    // The launch token still signs in from there; the secret from another peer, and from
    // the same one once the window passed.
    let launch = format!("/auth?token={}", "t".repeat(64));
    assert!(guard.sign_in(&from(&launch, remote), now).is_ok());
    assert!(
        guard
            .sign_in(&from(&with_secret, "198.51.100.1:1"), now)
            .is_ok()
    );
    let later = now + FAILURE_WINDOW;
    assert!(guard.sign_in(&from(&with_secret, remote), later).is_ok());
    // One IPv6 host's addresses are one peer.
    for last in 0..MAX_FAILURES {
        let peer = format!("[2001:db8::{last}]:1");
        let _ = guard.sign_in(&from("/auth?token=guess", &peer), now);
    }
    let limited = guard.sign_in(&from(&with_secret, "[2001:db8::ff]:1"), now);
    assert_eq!(limited.unwrap_err().status, 429);
}

#[test]
fn a_websocket_must_come_from_the_served_origin() {
    let guard = guard();
    let ok = request("/api/events", &[("origin", "http://127.0.0.1:3080")]);
    assert!(guard.origin(&ok, "127.0.0.1:3080").is_ok());
    for origin in ["http://127.0.0.1:4000", "http://evil.example", ""] {
        let bad = request("/api/events", &[("origin", origin)]);
        assert_eq!(
            guard.origin(&bad, "127.0.0.1:3080").unwrap_err().status,
            403
        );
    }
}

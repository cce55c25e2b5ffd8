//! Which destinations `web_fetch` may reach. Loopback, private, link-local, shared, multicast
//! and other non-public addresses are refused (a model asked to fetch a page must not become a
//! way into the machine's own services or its network) unless the row's `allowPrivate` names
//! the host or a range (CIDR) holding the address. A host name is resolved first and every
//! address it resolves to is judged, so a public name pointing at 127.0.0.1 is refused too.
//!
//! The request then goes to the addresses judged and no other (the `http` service's
//! `send_pinned`: it does not resolve the name again), so a name whose answers change between
//! the judging and the connecting (DNS rebinding) cannot lead to a private address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An `allowPrivate` entry that does not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("entry `{entry}`: {reason}")]
pub(crate) struct AllowError {
    pub(crate) entry: String,
    pub(crate) reason: String,
}

/// One `allowPrivate` entry: a host name (matched exactly, case-insensitively) or a range.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Host(String),
    Range(IpAddr, u8),
}

/// The parsed `allowPrivate` list.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowList(Vec<Allowed>);

impl AllowList {
    /// Reads `entries`: `localhost`, `10.0.0.0/8`, `127.0.0.1`, `::1`, `fd00::/8`.
    pub(crate) fn parse(entries: &[String]) -> Result<Self, AllowError> {
        let mut out = Vec::new();
        for entry in entries {
            let fail = |reason: &str| AllowError {
                entry: entry.clone(),
                reason: reason.to_owned(),
            };
            let text = entry.trim();
            if text.is_empty() {
                return Err(fail("empty"));
            }
            if let Some((address, bits)) = text.split_once('/') {
                let address: IpAddr = address
                    .parse()
                    .map_err(|_| fail("not an IP address before the `/`"))?;
                let max = if address.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits
                    .parse()
                    .ok()
                    .filter(|bits| *bits <= max)
                    .ok_or_else(|| fail(&format!("the prefix length must be 0 to {max}")))?;
                out.push(Allowed::Range(address, bits));
            } else if let Ok(address) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
                let bits = if address.is_ipv4() { 32 } else { 128 };
                out.push(Allowed::Range(address, bits));
            } else if text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
            {
                out.push(Allowed::Host(text.to_ascii_lowercase()));
            } else {
                return Err(fail("neither a host name, an IP address nor a CIDR range"));
            }
        }
        Ok(Self(out))
    }

    /// Whether `host` itself is listed.
    pub(crate) fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        self.0
            .iter()
            .any(|entry| matches!(entry, Allowed::Host(name) if *name == host))
    }

    /// Whether a listed range holds `address`.
    pub(crate) fn allows_address(&self, address: IpAddr) -> bool {
        self.0.iter().any(|entry| match entry {
            Allowed::Range(base, bits) => in_range(address, *base, *bits),
            Allowed::Host(_) => false,
        })
    }
}

fn in_range(address: IpAddr, base: IpAddr, bits: u8) -> bool {
    let address = canonical(address);
    match (address, canonical(base)) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) judged as the IPv4 one.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Why `address` is not public, or `None` when it is.
pub(crate) fn non_public(address: IpAddr) -> Option<&'static str> {
    match canonical(address) {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(a: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = a.octets();
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_private() {
        Some("private")
    } else if a.is_link_local() {
        Some("link-local")
    } else if a.is_unspecified() || first == 0 {
        Some("unspecified")
    } else if first == 100 && (64..128).contains(&second) {
        Some("shared (carrier-grade NAT)")
    } else if a.is_multicast() || a.is_broadcast() || first >= 240 {
        Some("multicast or reserved")
    } else if first == 198 && (second == 18 || second == 19) {
        Some("benchmarking")
    } else {
        None
    }
}

fn v6_kind(a: Ipv6Addr) -> Option<&'static str> {
    let first = a.segments()[0];
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if a.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn non_public_addresses_are_named() {
        for (address, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("192.168.0.1", "private"),
            ("172.16.5.4", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("0.0.0.0", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("fd12::1", "private (unique local)"),
            ("fe80::1", "link-local"),
        ] {
            assert_eq!(non_public(ip(address)), Some(kind), "{address}");
        }
        for address in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert_eq!(non_public(ip(address)), None, "{address}");
        }
    }

    #[test]
    fn the_allow_list_reads_hosts_addresses_and_ranges() {
        let list = AllowList::parse(&[
            "localhost".into(),
            "10.0.0.0/8".into(),
            "::1".into(),
            "127.0.0.1".into(),
        ])
        .unwrap();
        assert!(list.allows_host("LocalHost"));
        assert!(!list.allows_host("example.com"));
        assert!(list.allows_address(ip("10.200.3.4")));
        assert!(list.allows_address(ip("127.0.0.1")));
        assert!(list.allows_address(ip("::ffff:127.0.0.1")));
        assert!(list.allows_address(ip("::1")));
        assert!(!list.allows_address(ip("127.0.0.2")));
        assert!(!list.allows_address(ip("192.168.1.1")));
    }

    #[test]
    fn a_bad_entry_is_named() {
        for (entry, says) in [
            ("10.0.0.0/33", "prefix length"),
            ("nope/8", "not an IP"),
            ("a b", "neither"),
            (" ", "empty"),
        ] {
            let error = AllowList::parse(&[entry.to_owned()]).unwrap_err();
            assert!(error.to_string().contains(says), "{error}");
            assert!(error.to_string().contains(entry.trim()) || entry.trim().is_empty());
        }
    }
}

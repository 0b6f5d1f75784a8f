//! Which hosts and origins may address the relay: its own origin and the
//! loopback names by default, more only when configured.

use std::net::{IpAddr, SocketAddr};

/// Whether a `Host` header names this relay: a loopback name, the address
/// it listens on, or a configured name (`*`: any).
pub fn host_allowed(host: &str, listening: SocketAddr, allowed: &[String]) -> bool {
    let name = hostname(host).to_ascii_lowercase();
    if allowed.iter().any(|a| a == "*" || a.eq_ignore_ascii_case(&name)) {
        return true;
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    match name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || (!listening.ip().is_unspecified() && ip == listening.ip()),
        Err(_) => false,
    }
}

/// The host part of a `Host` value (`name`, `name:port`, `[v6]:port`).
fn hostname(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether a page of `origin` may use the relay: the relay's own origin
/// (the scheme and the very `Host` the request was sent to) or one
/// configured (`*`: any).
pub fn origin_allowed(origin: &str, host: Option<&str>, allowed: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    if allowed.iter().any(|a| a == "*" || a.trim_end_matches('/').eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some(host) = host else { return false };
    ["http://", "https://"].iter().any(|scheme| {
        origin.len() == scheme.len() + host.len()
            && origin[..scheme.len()].eq_ignore_ascii_case(scheme)
            && origin[scheme.len()..].eq_ignore_ascii_case(host)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: &str) -> SocketAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn loopback_names_and_the_listening_address_are_served() {
        let local = at("127.0.0.1:8787");
        for ok in ["127.0.0.1:8787", "localhost:8787", "LOCALHOST", "[::1]:8787", "127.0.0.2"] {
            assert!(host_allowed(ok, local, &[]), "{ok}");
        }
        for no in ["attacker.example", "attacker.example:8787", "10.0.0.1:8787", "127.0.0.1.nip.io"] {
            assert!(!host_allowed(no, local, &[]), "{no}");
        }
        assert!(host_allowed("10.0.0.1:8787", at("10.0.0.1:8787"), &[]));
        assert!(!host_allowed("10.0.0.1:8787", at("0.0.0.0:8787"), &[]));
        assert!(host_allowed("relay.lan:8787", local, &["relay.lan".into()]));
        assert!(host_allowed("anything", local, &["*".into()]));
    }

    #[test]
    fn only_the_own_origin_unless_configured() {
        let host = Some("127.0.0.1:8787");
        assert!(origin_allowed("http://127.0.0.1:8787", host, &[]));
        assert!(origin_allowed("https://127.0.0.1:8787", host, &[]));
        for no in ["http://localhost:8787", "http://127.0.0.1:9999", "null", "http://evil.example", ""] {
            assert!(!origin_allowed(no, host, &[]), "{no}");
        }
        assert!(!origin_allowed("http://127.0.0.1:8787", None, &[]));
        assert!(origin_allowed("http://dash.lan", host, &["http://dash.lan/".into()]));
    }
}

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

    /// Behind a proxy the browser names the public address, never the
    /// loopback one the relay listens on.
    #[test]
    fn a_public_url_is_served_by_its_host_and_origin_only() {
        let mut config = crate::Config::default();
        for url in ["https://laptop.tailnet.ts.net", "https://relay.example:8443/"] {
            config.add_public_url(crate::public_url::PublicUrl::parse(url).unwrap());
        }
        let (local, hosts, origins) = (at("127.0.0.1:8787"), &config.allowed_hosts, &config.allowed_origins);
        for ok in ["laptop.tailnet.ts.net", "LAPTOP.tailnet.ts.net:443", "relay.example:8443"] {
            assert!(host_allowed(ok, local, hosts), "{ok}");
        }
        for no in ["tailnet.ts.net", "evil.laptop.tailnet.ts.net", "relay.example.evil", "attacker.example:8443"] {
            assert!(!host_allowed(no, local, hosts), "{no}");
        }
        // The proxy passes the public Host on, or rewrites it to the loopback one.
        for host in [Some("laptop.tailnet.ts.net"), Some("127.0.0.1:8787")] {
            assert!(origin_allowed("https://laptop.tailnet.ts.net", host, origins));
            assert!(origin_allowed("https://relay.example:8443", host, origins));
            for no in ["https://relay.example", "https://relay.example:9443", "https://evil.example"] {
                assert!(!origin_allowed(no, host, origins), "{no} via {host:?}");
            }
        }
        assert!(!origin_allowed("http://laptop.tailnet.ts.net", Some("127.0.0.1:8787"), origins), "another scheme");
    }
}

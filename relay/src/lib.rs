//! `aep-relay`: an AEP (Agent Event Protocol v0.1) relay.
//!
//! Emitters POST events (or send them over a WebSocket); the relay keeps a
//! bounded per-session replay buffer and fans every event out to SSE and
//! WebSocket subscribers, with attr-match filters, capture ceilings and
//! `(epoch, seq)` resume. Commands from authenticated sockets are routed to
//! the one connection that claims the addressed session. The relay also
//! serves the approval console from the same origin.
//!
//! Started with `--nats`, the relay is one member of a tier: several relay
//! processes sharing history and claims through NATS JetStream (`tier`).
//!
//! Every protocol rule (envelope, filters, frames, capture down-level) is
//! the engine's (`aep-engine`); this crate is IO, buffering and routing.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let relay = aep_relay::serve(aep_relay::Config::default(), listener).await?;
//! println!("relay at {}", relay.base_url());
//! relay.shutdown().await;
//! # Ok(()) }
//! ```

pub mod audit;
pub mod auth;
pub mod buffer;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod discovery;
mod file_watch;
mod files;
pub mod held;
mod http;
pub mod ingest;
pub mod outbox;
pub mod pairing;
pub mod public_url;
pub mod push;
mod recency;
pub mod refusal;
pub mod rules;
pub mod scrub;
pub(crate) mod server;
mod socket;
pub mod sse;
mod state;
pub mod switchboard;
mod sync;
mod tier;
pub mod tls;
mod wire;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use config::{Config, ConfigError};
pub use switchboard::{Counters, Stats};

use switchboard::Switchboard;

/// A running relay. Dropping it leaves the server running; call
/// [`Relay::shutdown`] to stop it in order.
pub struct Relay {
    addr: SocketAddr,
    /// Whether the relay serves HTTPS (its URLs say `https://`).
    secure: bool,
    switchboard: Arc<Switchboard>,
    drain_timeout: Duration,
    server: JoinHandle<std::io::Result<()>>,
}

/// How a shutdown ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// Every stream ended and every socket was closed.
    Drained,
    /// Some connection did not finish within the drain timeout and was cut.
    TimedOut,
}

/// Starts a relay on `listener` (bind port 0 for an ephemeral port).
pub async fn serve(config: Config, listener: TcpListener) -> Result<Relay, ConfigError> {
    config.validate()?;
    let addr = listener.local_addr().map_err(|e| ConfigError(format!("listener has no address: {e}")))?;
    let config = Arc::new(config);
    let switchboard = match &config.nats {
        None => Arc::new(Switchboard::open(&config).map_err(|e| ConfigError(format!("durable history: {e}")))?),
        Some(_) => {
            let tier = tier::Tier::join(&config).await?;
            let switchboard = Arc::new(tier.switchboard(&config));
            tier.run(switchboard.clone()).await?;
            switchboard
        }
    };
    let keyring = config.keyring().map(Arc::new);
    if let (Some(ring), Some(file)) = (&keyring, &config.credentials_file) {
        credentials::load_into(ring, file, &config).map_err(ConfigError)?;
        tokio::spawn(credentials::watch(ring.clone(), file.clone(), config.clone(), switchboard.clone()));
    }
    let tls = match &config.tls {
        Some(files) => Some(tls::start(files, switchboard.shutdown_signal()).map_err(ConfigError)?),
        None => None,
    };
    let mut app = http::router(state::AppState::new(switchboard.clone(), config.clone(), addr, keyring.clone()));
    if config.control_enabled() && config.nats.is_none() {
        let push = push::Push::start(&config, &switchboard, keyring.clone())?;
        app = app.layer(axum::Extension(push));
        let rules = rules::Rules::start(&config, &switchboard, keyring.clone())?;
        app = app.layer(axum::Extension(rules));
    }
    if tls.is_some() {
        app = app.layer(tower_http::set_header::SetResponseHeaderLayer::overriding(
            axum::http::header::STRICT_TRANSPORT_SECURITY,
            axum::http::HeaderValue::from_static(tls::STRICT_TRANSPORT_SECURITY),
        ));
    }
    let limits = server::ConnectionLimits {
        max_connections: config.max_connections,
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.http_idle_timeout,
        per_address: config.max_connections_per_address,
        reserved: config.reserved_connections,
        first_request_timeout: config.first_request_timeout,
    };
    let secure = tls.is_some();
    let server = tokio::spawn(server::serve(listener, app, limits, tls, switchboard.shutdown_signal()));
    Ok(Relay { addr, secure, switchboard, drain_timeout: config.drain_timeout, server })
}

impl Relay {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port` (`https://` with TLS), the base every endpoint
    /// path is relative to.
    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme(), self.addr)
    }

    /// The base URL a process on this host reaches the relay at (the
    /// demonstration agents): [`base_url`](Relay::base_url), with a listener
    /// on the unspecified address reached on loopback.
    pub fn local_url(&self) -> String {
        format!("{}://{}", self.scheme(), reachable(self.addr))
    }

    fn scheme(&self) -> &'static str {
        if self.secure {
            "https"
        } else {
            "http"
        }
    }

    /// What the relay holds and has done so far.
    pub fn stats(&self) -> Stats {
        self.switchboard.stats()
    }

    /// Events currently held in one session's replay buffer.
    pub fn session_len(&self, session: &str) -> usize {
        self.switchboard.session_len(session)
    }

    /// Orderly stop: SSE streams get `: shutting-down` and end, sockets get
    /// `closing` and close with 1001, then the listener stops. Connections
    /// that do not finish within the drain timeout are cut.
    pub async fn shutdown(self) -> ShutdownOutcome {
        self.switchboard.shutdown();
        let switchboard = self.switchboard.clone();
        let mut server = self.server;
        let drained = tokio::time::timeout(self.drain_timeout, async {
            let _ = (&mut server).await;
            while switchboard.running_tasks() > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        // The audit's last group is on disk before the process ends.
        if let Some(audit) = switchboard.audit() {
            let _ = tokio::task::spawn_blocking(move || audit.flush()).await;
        }
        match drained {
            Ok(()) => ShutdownOutcome::Drained,
            Err(_) => {
                server.abort();
                ShutdownOutcome::TimedOut
            }
        }
    }
}

/// A listener on the unspecified address is reached on loopback.
fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port()),
        _ => addr,
    }
}

/// The line printed at start: where the relay listens and its posture,
/// never the token.
pub fn boot_line(config: &Config, addr: SocketAddr) -> String {
    let posture = if config.control_enabled() {
        "control ON: a bearer token is required on every request and commands are routed"
    } else {
        "control OFF (development posture): no token configured, observation is open and every command is refused"
    };
    let (scheme, transport) = transport(config, addr);
    // Links go to the address the relay is reached by, when it is not the
    // one it listens on.
    let root = config.console_url().map_or_else(|| "/".to_owned(), |url| url.to_string());
    let console = match &config.static_dir {
        Some(dir) if dir.join("index.html").is_file() => format!("console from {} at {root}", dir.display()),
        Some(dir) => format!("no console build in {} (built-in status page at {root})", dir.display()),
        None => format!("built-in status page at {root}"),
    };
    let history = match (&config.nats, &config.data_dir) {
        (Some(url), _) => format!("one member of a relay tier: history and claims in JetStream at {url}"),
        (None, Some(dir)) => format!("history kept durably in {}; {}", dir.display(), audit_posture(config)),
        (None, None) => "history in memory only (lost on restart; --data-dir keeps it)".to_owned(),
    };
    let mib = |bytes: usize| bytes.div_ceil(1024 * 1024);
    let push = push::posture(config);
    format!(
        "aep-relay {} listening on {scheme}://{addr} | {transport} | {posture} | {push} | replay buffer {} events or {} KiB/session, {} MiB in all, up to {} sessions | up to {} connections: about {} MiB when idle, at most {} MiB more queued for consumers that fall behind | {history} | {console}",
        env!("CARGO_PKG_VERSION"),
        config.buffer_depth,
        config.buffer_bytes / 1024,
        config.total_buffer_bytes / (1024 * 1024),
        config.max_sessions,
        config.max_connections,
        mib(config.max_connections * socket::IDLE_SOCKET_BYTES),
        mib(config.max_connections.saturating_mul(config.send_queue_bytes)),
    )
}

/// How long and how much of the control trail is kept, and where.
fn audit_posture(config: &Config) -> String {
    if config.audit_retention.is_zero() {
        return "audit trail off (--audit-retention 0)".to_owned();
    }
    format!(
        "audit trail (commands, acks, outcomes) kept {} or {} MiB, whichever ends first",
        humantime::format_duration(config.audit_retention),
        config.audit_bytes / (1024 * 1024)
    )
}

/// The scheme the relay is reached with, and whether what crosses the
/// network is encrypted: a token sent in clear off-host is a token shared
/// with the network.
fn transport(config: &Config, addr: SocketAddr) -> (&'static str, String) {
    if let Some(files) = &config.tls {
        let said =
            format!("TLS ON: traffic encrypted, certificate from {} (reloaded when it changes)", files.cert.display());
        return ("https", said);
    }
    let said = if addr.ip().is_loopback() {
        "no TLS: plain HTTP, unencrypted (this host only)"
    } else if config.control_enabled() {
        "WARNING no TLS: plain HTTP off-host, so tokens and commands cross the network in clear \
         (first look only; serve HTTPS with --tls-cert and --tls-key)"
    } else {
        "no TLS: plain HTTP off-host, events cross the network in clear (serve HTTPS with --tls-cert and --tls-key)"
    };
    ("http", said.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relay listening on every address is reached on loopback by the
    /// processes beside it; one on a named address, there.
    #[test]
    fn an_unspecified_listener_is_reached_on_loopback() {
        let at = |s: &str| reachable(s.parse().unwrap()).to_string();
        assert_eq!(at("0.0.0.0:8787"), "127.0.0.1:8787");
        assert_eq!(at("[::]:8787"), "[::1]:8787");
        assert_eq!(at("192.0.2.7:8787"), "192.0.2.7:8787");
    }
}

//! Everything an operator can tune, with the bounds that keep memory finite.
//!
//! Every queue, buffer and table the relay keeps is sized from here, so the
//! worst case is a product of these numbers and nothing else.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::{Keyring, Principal, Token};
use crate::public_url::PublicUrl;
use crate::push::PushConfig;
use crate::tls::TlsFiles;

/// How the relay runs. [`Config::default`] is the development posture on
/// sensible bounds; the binary fills it from the command line.
#[derive(Clone, Debug)]
pub struct Config {
    /// The bearer token. `None` is the development posture: observation is
    /// open and every command is refused, because control needs an
    /// authenticated binding (AEP-0004 §4.1).
    pub token: Option<Token>,
    /// Further credentials, each naming its principal and role (the
    /// credentials file adds its own to these on start and on reload).
    pub principals: Vec<(Token, Principal)>,
    /// The credentials file (`--credentials`): `name roles sha256` lines,
    /// reloaded when it changes.
    pub credentials_file: Option<PathBuf>,
    /// Origins, besides the relay's own, whose pages may use it
    /// (`--allow-origin`). A request carrying any other `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// Host names, besides the loopback names, a request may address
    /// (`--allow-host`); `*` allows any. Others are refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// The addresses the relay is reached by (`--public-url`), first the
    /// one links point at. Added with [`Config::add_public_url`], which
    /// also lets in each one's host and origin.
    pub public_urls: Vec<PublicUrl>,
    /// Most connections open at once from one address, before any request
    /// is authenticated.
    pub max_connections_per_address: usize,
    /// Connections kept free for clients that authenticated: an address
    /// beyond its share, or any connection once only these are left,
    /// must present a valid credential at once or be closed.
    pub reserved_connections: usize,
    /// How long a new connection may take to send its first request head.
    pub first_request_timeout: Duration,
    /// Events kept per session for replay; the depth advertised as
    /// `replay.buffer`.
    pub buffer_depth: usize,
    /// Bytes kept per session for replay (each event costs about its
    /// size); beyond it the oldest events are evicted, as for the depth.
    pub buffer_bytes: usize,
    /// Bytes kept across all replay buffers; beyond it the least recently
    /// written session loses its oldest events first.
    pub total_buffer_bytes: usize,
    /// Largest single event (or command), in bytes, on every binding
    /// (never more than `max_body`). Buffers always keep a session's newest
    /// event, so this is also the most one session holds past its bound.
    pub max_event: usize,
    /// Sessions buffered at once; beyond it the least recently written
    /// session is evicted whole.
    pub max_sessions: usize,
    /// Largest accepted request body and WebSocket message, in bytes.
    pub max_body: usize,
    /// Most events in one NDJSON batch.
    pub max_batch: usize,
    /// Most resume positions in one `from` (each costs a buffer scan).
    pub max_from: usize,
    /// Most concurrent subscriptions on one WebSocket connection.
    pub max_subscriptions: usize,
    /// Items queued toward one connection before backpressure applies:
    /// `debug`/`info` are dropped beyond it, anything more severe
    /// disconnects the consumer so it resumes exactly. At least
    /// `max_batch`, so one request alone never overflows a consumer that
    /// keeps up.
    pub send_queue: usize,
    /// Bytes queued toward one connection before backpressure applies, as
    /// for `send_queue`: what a consumer that reads nothing can make the
    /// relay hold. At least `max_body`, so one request alone never
    /// overflows a consumer that keeps up.
    pub send_queue_bytes: usize,
    /// Largest `ping`/`pong` frame: a pong echoes `t`, so this is also the
    /// most a peer can make the relay echo per frame.
    pub max_ping: usize,
    /// Largest request frame other than an event (`subscribe`,
    /// `unsubscribe`, `roster_request`, …).
    pub max_request_frame: usize,
    /// Most values one filter compares against (its `type` patterns and
    /// inclusion members): every live event is matched against them.
    pub max_filter_patterns: usize,
    /// Most filter values across all subscriptions of one connection.
    pub max_connection_patterns: usize,
    /// How long a connection being dropped (backpressure, idle) is given
    /// to take its `closing` frame before the socket is simply closed.
    pub close_grace: Duration,
    /// Most open connections (HTTP and WebSocket together); beyond it a
    /// new connection is answered 503 and closed.
    pub max_connections: usize,
    /// A connection waiting for a request head (idle between requests, or
    /// sending one slowly) is closed after this.
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive; then 408.
    pub body_timeout: Duration,
    /// An HTTP connection on which nothing moved either way for this long
    /// is closed (a stalled SSE consumer). Longer than the heartbeat, so a
    /// healthy stream never hits it.
    pub http_idle_timeout: Duration,
    /// Interval of SSE `: ping` comments and WebSocket `ping` frames.
    pub heartbeat: Duration,
    /// A WebSocket peer silent for this long is disconnected.
    pub idle_timeout: Duration,
    /// How long a new WebSocket may take to say `hello`.
    pub hello_timeout: Duration,
    /// How long shutdown waits for streams to drain before giving up.
    pub drain_timeout: Duration,
    /// Directory of the console's build output; `None` serves the
    /// built-in status page only.
    pub static_dir: Option<PathBuf>,
    /// Where session history is kept durably (`--data-dir`). `None`: in
    /// memory only, lost on restart.
    pub data_dir: Option<PathBuf>,
    /// How long the audit trail keeps a command, its ack and its outcomes
    /// (`--audit-retention`); zero keeps none. Only with `data_dir`.
    pub audit_retention: Duration,
    /// The most bytes the audit trail holds; the oldest go first.
    pub audit_bytes: u64,
    /// The NATS server (`--nats nats://HOST:PORT`) whose JetStream holds a
    /// tier's shared history and claims; this relay is then one member of
    /// the tier. `None`: a relay on its own (no NATS code runs).
    pub nats: Option<String>,
    /// Names this member within a tier; unique per process when `None`.
    pub member: Option<String>,
    /// The certificate and key to serve HTTPS with (`--tls-cert`,
    /// `--tls-key`), reread when they change. `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Web Push to registered devices (on whenever credentials are).
    pub push: PushConfig,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            token: None,
            principals: Vec::new(),
            credentials_file: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            public_urls: Vec::new(),
            max_connections_per_address: 64,
            reserved_connections: 16,
            first_request_timeout: Duration::from_secs(2),
            buffer_depth: 1_000,
            buffer_bytes: 8 * 1024 * 1024,
            total_buffer_bytes: 256 * 1024 * 1024,
            max_event: 1024 * 1024,
            max_sessions: 256,
            max_body: 16 * 1024 * 1024,
            max_batch: 10_000,
            max_from: 256,
            max_subscriptions: 64,
            send_queue: 16_384,
            send_queue_bytes: 16 * 1024 * 1024,
            max_ping: 1024,
            max_request_frame: 64 * 1024,
            max_filter_patterns: 256,
            max_connection_patterns: 4_096,
            close_grace: Duration::from_secs(2),
            max_connections: 1_024,
            header_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            http_idle_timeout: Duration::from_secs(120),
            heartbeat: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(90),
            hello_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(5),
            static_dir: None,
            data_dir: None,
            audit_retention: Duration::from_secs(90 * 24 * 3600),
            audit_bytes: 1024 * 1024 * 1024,
            nats: None,
            member: None,
            tls: None,
            push: PushConfig::default(),
        }
    }
}

/// A configuration value outside what the relay can honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Refuses zero-sized bounds: a relay with no buffer or no queue could
    /// not keep any of its promises.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("buffer", self.buffer_depth),
            ("buffer-bytes", self.buffer_bytes),
            ("total-buffer-bytes", self.total_buffer_bytes),
            ("max-event", self.max_event),
            ("max-sessions", self.max_sessions),
            ("max-body", self.max_body),
            ("max-batch", self.max_batch),
            ("max-from", self.max_from),
            ("max-subscriptions", self.max_subscriptions),
            ("send-queue", self.send_queue),
            ("send-queue-bytes", self.send_queue_bytes),
            ("max-ping", self.max_ping),
            ("max-request-frame", self.max_request_frame),
            ("max-filter-patterns", self.max_filter_patterns),
            ("max-connection-patterns", self.max_connection_patterns),
            ("max-connections", self.max_connections),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!("--{name} must be at least 1")));
            }
        }
        if self.send_queue < self.max_batch {
            return Err(ConfigError(format!(
                "the send queue ({}) must hold at least one full batch (max-batch {})",
                self.send_queue, self.max_batch
            )));
        }
        if self.send_queue_bytes < self.max_body {
            return Err(ConfigError(format!(
                "the send queue ({} bytes) must hold at least one full request body (max-body {})",
                self.send_queue_bytes, self.max_body
            )));
        }
        if self.max_connection_patterns < self.max_filter_patterns {
            return Err(ConfigError(format!(
                "max-connection-patterns ({}) must allow one full filter (max-filter-patterns {})",
                self.max_connection_patterns, self.max_filter_patterns
            )));
        }
        if self.nats.is_some() && self.data_dir.is_some() {
            return Err(ConfigError(
                "--nats and --data-dir exclude each other: a tier keeps its history in JetStream".into(),
            ));
        }
        let contact = &self.push.contact;
        if !(contact.starts_with("mailto:") || contact.starts_with("https://")) {
            return Err(ConfigError(format!("--push-contact `{contact}` must be a mailto: or https: URL (RFC 8292)")));
        }
        if self.heartbeat.is_zero() {
            return Err(ConfigError("the heartbeat interval must be positive".into()));
        }
        if self.header_read_timeout.is_zero() || self.body_timeout.is_zero() {
            return Err(ConfigError("the header and body timeouts must be positive".into()));
        }
        if self.http_idle_timeout <= self.heartbeat {
            return Err(ConfigError(format!(
                "the HTTP idle timeout ({:?}) must exceed the heartbeat ({:?}), or healthy streams would be cut",
                self.http_idle_timeout, self.heartbeat
            )));
        }
        Ok(())
    }

    /// The largest event actually taken: `max-event`, within `max-body`.
    pub fn event_limit(&self) -> usize {
        self.max_event.min(self.max_body)
    }

    /// Serves the relay at `url` as at its own address: requests naming
    /// its host and pages from its origin are let in, and links point at
    /// the first one added.
    pub fn add_public_url(&mut self, url: PublicUrl) {
        self.allowed_hosts.push(url.host().to_owned());
        self.allowed_origins.push(url.origin().to_owned());
        self.public_urls.push(url);
    }

    /// Where the console is opened: the first public URL, if any.
    pub fn console_url(&self) -> Option<&PublicUrl> {
        self.public_urls.first()
    }

    /// Whether credentials are configured (commands can be routed).
    pub fn control_enabled(&self) -> bool {
        self.token.is_some() || !self.principals.is_empty() || self.credentials_file.is_some()
    }

    /// The credentials as configured, before any file is read: `None`
    /// when there are none (the development posture).
    pub fn keyring(&self) -> Option<Keyring> {
        if !self.control_enabled() {
            return None;
        }
        let ring = Keyring::default();
        if let Some(token) = &self.token {
            ring.add(token, Principal::owner());
        }
        for (token, principal) in &self.principals {
            ring.add(token, principal.clone());
        }
        Some(ring)
    }
}

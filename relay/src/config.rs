//! Everything an operator can tune, with the bounds that keep memory finite.
//!
//! Every queue, buffer and table the relay keeps is sized from here, so the
//! worst case is a product of these numbers and nothing else.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::Token;

/// How the relay runs. [`Config::default`] is the development posture on
/// sensible bounds; the binary fills it from the command line.
#[derive(Clone, Debug)]
pub struct Config {
    /// The bearer token. `None` is the development posture: observation is
    /// open and every command is refused, because control needs an
    /// authenticated binding (AEP-0004 §4.1).
    pub token: Option<Token>,
    /// Events kept per session for replay; the depth advertised as
    /// `replay.buffer`.
    pub buffer_depth: usize,
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
}

impl Default for Config {
    fn default() -> Config {
        Config {
            token: None,
            buffer_depth: 1_000,
            max_sessions: 256,
            max_body: 16 * 1024 * 1024,
            max_batch: 10_000,
            max_from: 256,
            max_subscriptions: 64,
            send_queue: 16_384,
            heartbeat: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(90),
            hello_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(5),
            static_dir: None,
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
            ("max-sessions", self.max_sessions),
            ("max-body", self.max_body),
            ("max-batch", self.max_batch),
            ("max-from", self.max_from),
            ("max-subscriptions", self.max_subscriptions),
            ("send-queue", self.send_queue),
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
        if self.heartbeat.is_zero() {
            return Err(ConfigError("the heartbeat interval must be positive".into()));
        }
        Ok(())
    }

    /// Whether commands can be routed at all.
    pub fn control_enabled(&self) -> bool {
        self.token.is_some()
    }
}

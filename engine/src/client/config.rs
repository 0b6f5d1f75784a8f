//! What a connection declares and how patient it is.

use super::backoff::Backoff;
use super::positions::DEFAULT_MAX_SESSIONS;
use crate::protocol::frame::{check_declarations, ControlCapability, HelloIdentity, Role};

/// How a subscription resumes after a reconnect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResumePolicy {
    /// Resume each subscription from its own positions, so that history
    /// the relay no longer holds is reported (`replay-exhausted`), and
    /// catch up on sessions first seen during an outage with a companion
    /// `from: "all"` subscription when the relay replays all (`from: "all"`
    /// alone while there are no positions).
    #[default]
    Positions,
    /// Resume with `from: "all"` alone whenever the relay advertises it:
    /// one subscription, but a gap in a known session's history goes
    /// unreported (replay-all never says `replay-exhausted`).
    AllWhenAdvertised,
}

/// Connection settings. Times are in milliseconds.
#[derive(Clone, Debug)]
pub struct Config {
    pub role: Role,
    /// Sent in `hello`; `agent` is required for emitter roles.
    pub identity: Option<HelloIdentity>,
    /// Categories an emitter expects to emit (a routing hint).
    pub emits: Option<Vec<String>>,
    /// The commands an emitter takes and its ack window; declared only by
    /// the `emitter` and `both` roles.
    pub control: Option<ControlCapability>,
    /// How often to ping a live relay; 0 disables pings.
    pub ping_interval_ms: u64,
    /// A ping unanswered this long means the connection is dead.
    pub pong_timeout_ms: u64,
    /// From asking for a socket to the relay's `hello`.
    pub handshake_timeout_ms: u64,
    pub backoff: Backoff,
    /// A connection live at least this long resets the backoff; a relay that
    /// accepts and immediately drops is backed off like a refusal.
    pub stable_after_ms: u64,
    /// Seed for reconnect jitter (pass real randomness in production).
    pub jitter_seed: u64,
    /// Larger inbound text frames are dropped as violations.
    pub max_frame_bytes: usize,
    /// Sessions tracked per subscription for resume.
    pub max_resume_sessions: usize,
    pub resume: ResumePolicy,
}

impl Config {
    /// A watching connection: subscriptions, rosters, commands.
    pub fn consumer() -> Config {
        Config {
            role: Role::Consumer,
            identity: None,
            emits: None,
            control: None,
            ping_interval_ms: 30_000,
            pong_timeout_ms: 90_000,
            handshake_timeout_ms: 10_000,
            backoff: Backoff::default(),
            stable_after_ms: 10_000,
            jitter_seed: 0,
            max_frame_bytes: 1 << 20,
            max_resume_sessions: DEFAULT_MAX_SESSIONS,
            resume: ResumePolicy::default(),
        }
    }

    /// An emitting connection that claims sessions and may take commands.
    pub fn emitter(identity: HelloIdentity, control: Option<ControlCapability>) -> Config {
        Config { role: Role::Emitter, identity: Some(identity), control, ..Config::consumer() }
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        check_declarations(&self.role, self.identity.as_ref())
    }
}

/// A configuration the handshake would be refused for: the declarations
/// a relay refuses in a `hello`.
pub use crate::protocol::frame::DeclarationError as ConfigError;

//! What the sender knows about one command: its exact bytes, its decision
//! state, its outcome and the times needed for latency.

use std::fmt;

use crate::control::ack::NackReason;
use crate::protocol::event::Event;
use crate::protocol::validate::Violation;
use crate::protocol::vocabulary::ErrorCode;
use crate::time::UnixMs;

/// The `code` of a relay `error` frame refusing a command on the target's
/// behalf (AEP-0004 §4.2). Any code refuses; unknown ones are kept as sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RelayCode {
    /// Unauthenticated binding or a policy denial.
    Unauthorized,
    /// The target does not accept this command type.
    Unsupported,
    /// More than one live claimant of the session; no one received it.
    Ambiguous,
    /// No connected emitter owns the session.
    NoRoute,
    Other(String),
}

impl RelayCode {
    pub fn parse(code: &str) -> RelayCode {
        match ErrorCode::parse(code) {
            Some(ErrorCode::Unauthorized) => RelayCode::Unauthorized,
            Some(ErrorCode::Unsupported) => RelayCode::Unsupported,
            Some(ErrorCode::Ambiguous) => RelayCode::Ambiguous,
            Some(ErrorCode::NoRoute) => RelayCode::NoRoute,
            _ => RelayCode::Other(code.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            RelayCode::Unauthorized => ErrorCode::Unauthorized.as_str(),
            RelayCode::Unsupported => ErrorCode::Unsupported.as_str(),
            RelayCode::Ambiguous => ErrorCode::Ambiguous.as_str(),
            RelayCode::NoRoute => ErrorCode::NoRoute.as_str(),
            RelayCode::Other(s) => s,
        }
    }
}

impl fmt::Display for RelayCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a command stands on its way to a decision.
#[derive(Clone, Debug, PartialEq, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "kebab-case")]
pub enum CommandState {
    /// Sent; waiting for an ack until `deadline`.
    Pending { deadline: UnixMs },
    /// The target will try (`control.accepted`).
    Accepted { ack: Event },
    /// The target will not (`control.rejected`). `reason` is `None` when
    /// the wire reason is missing or unregistered; `raw_reason` keeps it.
    Rejected { ack: Event, reason: Option<NackReason>, raw_reason: Option<String>, detail: Option<String> },
    /// A relay refused it on the target's behalf; the target never saw it.
    RelayRefused { code: RelayCode, detail: Option<String> },
    /// No ack within the window: a nack with reason `timeout`, known only
    /// here and never sent anywhere.
    #[strum(serialize = "timeout")]
    TimedOut,
}

impl CommandState {
    pub fn is_pending(&self) -> bool {
        matches!(self, CommandState::Pending { .. })
    }

    /// The target's recorded ack, once one was seen.
    pub fn ack(&self) -> Option<&Event> {
        match self {
            CommandState::Accepted { ack } | CommandState::Rejected { ack, .. } => Some(ack),
            _ => None,
        }
    }

    /// A short stable name (`pending`, `accepted`, `rejected`,
    /// `relay-refused`, `timeout`).
    pub fn name(&self) -> &'static str {
        self.into()
    }
}

/// When things happened, for latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Times {
    pub first_sent: UnixMs,
    /// The latest (re)send; the ack window runs from here.
    pub last_sent: UnixMs,
    /// When the current state was reached (ack, refusal or timeout).
    pub settled: Option<UnixMs>,
    pub outcome: Option<UnixMs>,
}

/// One command the sender follows.
#[derive(Clone, Debug)]
pub struct TrackedCommand {
    pub(super) command: Event,
    pub(super) window_ms: u64,
    pub(super) sends: u32,
    pub(super) state: CommandState,
    pub(super) outcome: Option<Event>,
    pub(super) times: Times,
}

impl TrackedCommand {
    pub fn id(&self) -> &str {
        self.command.id()
    }
    /// The command exactly as sent (every retry sends these bytes).
    pub fn command(&self) -> &Event {
        &self.command
    }
    pub fn state(&self) -> &CommandState {
        &self.state
    }
    /// The first domain event caused by the command or by its ack.
    pub fn outcome(&self) -> Option<&Event> {
        self.outcome.as_ref()
    }
    pub fn times(&self) -> Times {
        self.times
    }
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }
    /// How many times the bytes were handed out for sending.
    pub fn sends(&self) -> u32 {
        self.sends
    }
    /// Latest send → ack, when acked.
    pub fn ack_latency_ms(&self) -> Option<u64> {
        self.state.ack()?;
        Some(self.times.settled?.since(self.times.last_sent))
    }
    /// First send → outcome, when observed.
    pub fn outcome_latency_ms(&self) -> Option<u64> {
        Some(self.times.outcome?.since(self.times.first_sent))
    }
}

/// What changed for a command; read details with `get(id)`.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandUpdate {
    pub id: String,
    pub change: CommandChange,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CommandChange {
    Sent,
    Retried,
    Accepted,
    Rejected,
    RelayRefused,
    TimedOut,
    Outcome,
    /// Something arrived that contradicts the protocol (a second distinct
    /// ack, an ack from another session, a refusal after an ack). The
    /// command's state is unchanged.
    Violation(Violation),
}

//! What a connection tells its driver and its application.

use std::fmt;

use crate::protocol::event::Event;
use crate::protocol::frame::{Closing, ErrorFrame, ReplayExhausted, RosterEntry};
use crate::time::UnixMs;

/// The connection's lifecycle.
#[derive(Clone, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum State {
    /// Never started.
    Idle,
    /// The driver was asked to open a socket.
    Connecting,
    /// The socket is open and our `hello` is sent; waiting for the relay's.
    Handshaking,
    /// Hello exchanged: events, subscriptions and commands flow.
    Live,
    /// Lost; the next attempt opens a socket at `at`.
    Reconnecting { attempt: u32, at: UnixMs },
    /// The relay will not have us as configured; retrying would not help,
    /// so nothing is retried until the application connects again.
    Refused { reason: Refusal },
    /// Closed by the application.
    Closed,
}

impl State {
    /// A one-word name for status lines and the JS API.
    pub fn name(&self) -> &'static str {
        self.into()
    }
}

/// Why a connection was refused for good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The relay answered `hello-required`: it did not take our hello.
    HelloRequired { detail: Option<String> },
    /// The relay's first frame was not `hello`; we answered `hello-required`.
    PeerSkippedHello { frame_type: String },
    /// No version in common: the relay refused ours, or picked one we do
    /// not speak. `peer_versions` is what it offered.
    VersionUnsupported { peer_versions: Vec<String> },
    /// Authentication or authorisation failed.
    Unauthorized { detail: Option<String> },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::HelloRequired { detail } => {
                write!(f, "the relay did not accept our hello{}", suffix(detail.as_deref()))
            }
            Refusal::PeerSkippedHello { frame_type } => {
                write!(f, "the relay spoke before saying hello (first frame `{frame_type}`)")
            }
            Refusal::VersionUnsupported { peer_versions } => {
                write!(f, "no common protocol version (relay speaks {})", peer_versions.join(", "))
            }
            Refusal::Unauthorized { detail } => write!(f, "not authorized{}", suffix(detail.as_deref())),
        }
    }
}

fn suffix(detail: Option<&str>) -> String {
    detail.filter(|d| !d.is_empty()).map(|d| format!(": {d}")).unwrap_or_default()
}

/// Something only the driver can do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketAction {
    /// Open a new socket to the relay and report it with `handle_open`
    /// (or `handle_closed` when it fails).
    Open,
    /// Close the current socket and stop reporting on it: a close report
    /// arriving after this is ignored.
    Close { code: u16, reason: String },
    /// The socket failed before it opened, and the driver may not know
    /// why: browsers hide the HTTP status of a refused upgrade. A driver
    /// that cannot see that status asks the relay's HTTP side whether it
    /// takes the token and reports the answer with
    /// [`Connection::handle_authorization`](super::Connection::handle_authorization);
    /// one that sees it reports a 401/403 as a close with an
    /// [`AUTH_CLOSE_CODES`](super::AUTH_CLOSE_CODES) code and ignores this.
    /// Asked at most once per run of failures.
    CheckAuthorization,
}

/// What happened, for the application.
// Events are the common variant; boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ClientEvent {
    StateChanged(State),
    /// The socket was lost and a reconnect is scheduled.
    Disconnected {
        reason: String,
    },
    /// An event from the relay, exact bytes kept. Delivered at least once:
    /// dedupe on `(source, id)`.
    Event(Event),
    Subscribed {
        id: String,
    },
    Unsubscribed {
        id: String,
    },
    /// A relay `error` frame: `cause` names a refused command, `id` a
    /// refused request.
    Error(ErrorFrame),
    Roster {
        id: String,
        entries: Vec<RosterEntry>,
    },
    /// Resume predated the relay's buffer; older history is in a history
    /// store.
    ReplayExhausted(ReplayExhausted),
    /// The relay announced an orderly close; a reconnect follows.
    Closing(Closing),
    /// The relay sent something this engine could not accept; it was
    /// dropped and the connection goes on.
    Violation(String),
}

/// Why an application request was not carried out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// Only a live connection sends this; the state is attached.
    #[error("the connection is not live ({})", .0.name())]
    NotLive(State),
    /// The transmit queue is full: the driver is not draining it.
    #[error("too many frames waiting to be sent")]
    Backpressure,
    /// [`super::MAX_SUBSCRIPTIONS`] are already open.
    #[error("too many subscriptions")]
    TooManySubscriptions,
    /// The relay did not declare `roster`: a request would wait on silence.
    #[error("the relay does not answer roster requests")]
    RosterNotDeclared,
    /// Rosters are watch-class; an `emitter` connection is refused them.
    #[error("an emitter connection cannot request a roster")]
    RoleCannotWatch,
}

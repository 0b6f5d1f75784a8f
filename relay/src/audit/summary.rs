//! One command as the audit indexes it: who, where, what was asked and
//! answered, how it was acknowledged and what came of it, and which records
//! hold its events. Rewritten as its ack and outcomes arrive.

use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::{ErrorCode, EventType};
use serde::{Deserialize, Serialize};

/// How a command was acknowledged, as the audit keeps it. Written in the
/// index and the rows as `accepted`, `rejected`, `refused:<code>` (the
/// relay's error code), or empty while unacknowledged.
///
/// The audit decides by the ack's kind, and a refusal carries the relay's
/// [`ErrorCode`]:
///
/// ```
/// use aep_engine::protocol::kind::EventKind;
/// use aep_engine::protocol::vocabulary::ErrorCode;
/// use aep_relay::audit::Acked;
/// assert_eq!(Acked::of(EventKind::of("control.rejected")), Some(Acked::Rejected));
/// assert_eq!(Acked::of(EventKind::of("run.cancelled")), None);
/// assert_eq!(Acked::Refused(ErrorCode::NoRoute).to_string(), "refused:no-route");
/// assert_eq!("refused:no-route".parse(), Ok(Acked::Refused(ErrorCode::NoRoute)));
/// ```
///
/// A misspelt ack type or error code does not compile:
///
/// ```compile_fail,E0599
/// use aep_engine::protocol::kind::EventKind;
/// use aep_engine::protocol::vocabulary::EventType;
/// use aep_relay::audit::Acked;
/// let _ = Acked::of(EventKind::Core(EventType::ControlRejectd));
/// ```
///
/// ```compile_fail,E0599
/// use aep_engine::protocol::vocabulary::ErrorCode;
/// use aep_relay::audit::Acked;
/// let _ = Acked::Refused(ErrorCode::NoRout);
/// ```
///
/// Nor does a decision on the ack that forgets one:
///
/// ```compile_fail,E0004
/// use aep_relay::audit::Acked;
/// fn answered(ack: &Acked) -> bool {
///     match ack {
///         Acked::Pending => false,
///         Acked::Accepted | Acked::Rejected => true,
///     }
/// }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Acked {
    /// No ack yet.
    #[default]
    Pending,
    /// `control.accepted`.
    Accepted,
    /// `control.rejected`.
    Rejected,
    /// The relay refused it for the target, with this code.
    Refused(ErrorCode),
    /// A word this relay does not write (kept as read).
    Unrecognized(String),
}

impl Acked {
    const ACCEPTED: &'static str = "accepted";
    const REJECTED: &'static str = "rejected";
    /// Names every relay refusal in a filter, and prefixes its code.
    pub const REFUSED: &'static str = "refused";

    /// The ack an event of `kind` is, if it is one.
    pub fn of(kind: EventKind<'_>) -> Option<Acked> {
        match kind.core()? {
            EventType::ControlAccepted => Some(Acked::Accepted),
            EventType::ControlRejected => Some(Acked::Rejected),
            _ => None,
        }
    }

    pub fn is_pending(&self) -> bool {
        *self == Acked::Pending
    }
}

impl std::fmt::Display for Acked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Acked::Pending => Ok(()),
            Acked::Accepted => f.write_str(Acked::ACCEPTED),
            Acked::Rejected => f.write_str(Acked::REJECTED),
            Acked::Refused(code) => write!(f, "{}:{code}", Acked::REFUSED),
            Acked::Unrecognized(word) => f.write_str(word),
        }
    }
}

impl std::str::FromStr for Acked {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Acked, Self::Err> {
        Ok(match s {
            "" => Acked::Pending,
            Acked::ACCEPTED => Acked::Accepted,
            Acked::REJECTED => Acked::Rejected,
            other => match other.split_once(':') {
                Some((Acked::REFUSED, code)) => match ErrorCode::parse(code) {
                    Some(code) => Acked::Refused(code),
                    None => Acked::Unrecognized(other.to_owned()),
                },
                _ => Acked::Unrecognized(other.to_owned()),
            },
        })
    }
}

impl From<String> for Acked {
    fn from(s: String) -> Acked {
        match s.parse() {
            Ok(acked) => acked,
            Err(never) => match never {},
        }
    }
}

impl From<Acked> for String {
    fn from(a: Acked) -> String {
        a.to_string()
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// When the relay forwarded (or refused) it, ms since the epoch.
    pub at: u64,
    /// Its command record.
    pub seq: u64,
    pub id: String,
    /// Who commanded: the principal of the sending connection.
    pub principal: String,
    /// The agent whose session it was sent to.
    pub agent: String,
    pub session: String,
    /// The session's label (`session.started`).
    pub label: String,
    /// The command's type, e.g. `control.attention.respond`.
    pub verb: String,
    /// The request's prompt, for an answer.
    pub prompt: String,
    /// The answer given (option, text or values).
    pub answer: String,
    pub ack: Acked,
    pub ack_at: Option<u64>,
    /// The type of the latest outcome event, e.g. `attention.resolved`.
    pub outcome: String,
    pub outcome_at: Option<u64>,
    /// Every record of this command, in chain order.
    pub records: Vec<u64>,
    /// The standing rule that sent it on the principal's behalf, when no
    /// person did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<ByRule>,
}

/// A standing rule that answered on its author's behalf (the command's
/// principal).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByRule {
    pub id: String,
    /// When the rule was made, ms since the epoch.
    pub made_at: u64,
}

impl Summary {
    /// What became of it, as a filter names it: the latest outcome, else
    /// the ack, else `pending` (in words: [`super::words::result`]).
    pub fn result(&self) -> String {
        if !self.outcome.is_empty() {
            self.outcome.clone()
        } else if !self.ack.is_pending() {
            self.ack.to_string()
        } else {
            "pending".to_owned()
        }
    }

    /// Whether `wanted` names its result, its ack or its outcome (`refused`
    /// matches every relay refusal).
    pub fn has_outcome(&self, wanted: &str) -> bool {
        self.result() == wanted
            || (!self.ack.is_pending() && self.ack.to_string() == wanted)
            || self.outcome == wanted
            || (wanted == Acked::REFUSED && matches!(self.ack, Acked::Refused(_)))
    }

    /// From the command to its latest outcome (or its ack), in ms.
    pub fn latency(&self) -> Option<u64> {
        self.outcome_at.or(self.ack_at).map(|t| t.saturating_sub(self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_keeps_its_stored_words() {
        for (ack, word) in [
            (Acked::Pending, ""),
            (Acked::Accepted, "accepted"),
            (Acked::Rejected, "rejected"),
            (Acked::Refused(ErrorCode::NoRoute), "refused:no-route"),
            (Acked::Unrecognized("refused:teapot".into()), "refused:teapot"),
        ] {
            assert_eq!(serde_json::to_value(&ack).unwrap(), serde_json::Value::from(word));
            assert_eq!(serde_json::from_value::<Acked>(word.into()).unwrap(), ack, "{word}");
        }
    }

    #[test]
    fn refused_finds_every_relay_refusal() {
        let refused = Summary { ack: Acked::Refused(ErrorCode::Ambiguous), ..Summary::default() };
        assert!(refused.has_outcome("refused"));
        assert!(refused.has_outcome("refused:ambiguous"));
        assert!(!refused.has_outcome("rejected"));
        assert_eq!(refused.result(), "refused:ambiguous");
        let pending = Summary::default();
        assert_eq!(pending.result(), "pending");
        assert!(pending.has_outcome("pending"));
    }
}

//! The cross-event rules the fold checks, each with a stable id.
//!
//! [`validate::stream`](super::validate::stream) is a fold through the store, so a JSONL log checked
//! offline and a live stream watched in the console report the same ids.

use std::fmt;

use super::key::SessionKey;
use crate::protocol::violation::Violation;

/// One cross-event rule of AEP 0.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// One `(source, id)` carried two different events (AEP-0001 §5.1 #2, §7.4).
    IdCollision,
    /// Two different events claimed one `(epoch, seq)` position (AEP-0001 §7.2).
    PositionReused,
    /// A `seq` at or below one already assigned in the same epoch, in a
    /// stream read in emission order (AEP-0001 §7.2).
    PositionRegression,
    /// An `epoch` below one already used by the session, in a stream read in
    /// emission order (AEP-0001 §7.2).
    EpochRegression,
    /// A run reached a second terminal (AEP-0002 §2 convention 5).
    RunTerminalRepeated,
    /// A session carried a second distinct `session.ended` (AEP-0002 §2 convention 5).
    SessionEndRepeated,
    /// `session.ended` while an attention request of the session was still
    /// open (AEP-0002 §7 rule 2).
    PendingAtSessionEnd,
    /// A command received a second distinct ack with the same decision (AEP-0004 §3).
    AckRepeated,
    /// A command received acks with different decisions (AEP-0004 §3).
    AckConflict,
    /// An `attention.answered` whose `answer.values` breaks the request's
    /// form fields (AEP-0006, AEP-0002 §5.3).
    FormValues,
}

impl Rule {
    pub const ALL: [Rule; 10] = [
        Rule::IdCollision,
        Rule::PositionReused,
        Rule::PositionRegression,
        Rule::EpochRegression,
        Rule::RunTerminalRepeated,
        Rule::SessionEndRepeated,
        Rule::PendingAtSessionEnd,
        Rule::AckRepeated,
        Rule::AckConflict,
        Rule::FormValues,
    ];

    /// The stable id (what [`Violation::rule`] carries).
    pub fn id(self) -> &'static str {
        match self {
            Rule::IdCollision => "stream.id-collision",
            Rule::PositionReused => "stream.position.reused",
            Rule::PositionRegression => "stream.position.regression",
            Rule::EpochRegression => "stream.epoch.regression",
            Rule::RunTerminalRepeated => "stream.run.second-terminal",
            Rule::SessionEndRepeated => "stream.session.second-end",
            Rule::PendingAtSessionEnd => "stream.attention.pending-at-end",
            Rule::AckRepeated => "stream.ack.repeated",
            Rule::AckConflict => "stream.ack.conflicting",
            Rule::FormValues => "stream.form.values",
        }
    }

    /// Where the rule is stated.
    pub fn reference(self) -> &'static str {
        match self {
            Rule::IdCollision => "AEP-0001 §5.1 #2, §7.4",
            Rule::PositionReused | Rule::PositionRegression | Rule::EpochRegression => "AEP-0001 §7.2",
            Rule::RunTerminalRepeated | Rule::SessionEndRepeated => "AEP-0002 §2 convention 5",
            Rule::PendingAtSessionEnd => "AEP-0002 §7 rule 2",
            Rule::AckRepeated | Rule::AckConflict => "AEP-0004 §3",
            Rule::FormValues => "AEP-0006, AEP-0002 §5.3",
        }
    }

    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A rule broken by the event being folded, with what went wrong; the
/// caller adds the location.
pub(crate) type Breach = (Rule, String);

/// A broken rule, located: which session and which event broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamViolation {
    pub rule: Rule,
    /// The session the offending event belongs to, when it has one.
    pub session: Option<SessionKey>,
    /// The `id` of the event that completed the breach.
    pub event_id: String,
    pub detail: String,
}

impl StreamViolation {
    /// The plain [`Violation`] form shared with the other validators.
    pub fn to_violation(&self) -> Violation {
        Violation::new(self.rule.id(), format!("{} (event {})", self.detail, self.event_id))
    }
}

impl fmt::Display for StreamViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (event {}; {})", self.rule, self.detail, self.event_id, self.rule.reference())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        for r in Rule::ALL {
            assert_eq!(Rule::from_id(r.id()), Some(r));
            assert_eq!(Rule::ALL.iter().filter(|o| o.id() == r.id()).count(), 1);
            assert!(r.id().starts_with("stream."));
        }
        assert_eq!(Rule::from_id("stream.nope"), None);
    }
}

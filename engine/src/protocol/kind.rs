//! An event's type as a closed set: read once, when the event is parsed,
//! so everything that decides by type matches an enum the compiler checks
//! for spelling and, without a wildcard, for completeness.
//!
//! Core types come from the registry ([`EventType`]); vendor types
//! (`x.{vendor}.…`) are open-ended and stay apart; a well-formed type this
//! engine does not know (registered after it was built) is carried, its
//! name kept, never refused.
//!
//! ```
//! use aep_engine::protocol::kind::EventKind;
//! use aep_engine::protocol::vocabulary::EventType;
//! assert_eq!(EventKind::of("control.pause"), EventKind::Core(EventType::ControlPause));
//! assert_eq!(EventKind::of("x.acme.control.deploy"), EventKind::Vendor("x.acme.control.deploy"));
//! assert_eq!(EventKind::of("agent.rebooted"), EventKind::Unregistered("agent.rebooted"));
//!
//! fn label<'a>(kind: EventKind<'a>) -> &'a str {
//!     match kind {
//!         EventKind::Core(t) => t.as_str(),
//!         EventKind::Vendor(ty) => ty,
//!         EventKind::Unregistered(ty) => ty,
//!     }
//! }
//! assert_eq!(label(EventKind::of("x.acme.ping")), "x.acme.ping");
//! ```
//!
//! A misspelt type is no variant, so it does not compile:
//!
//! ```compile_fail
//! use aep_engine::protocol::kind::EventKind;
//! use aep_engine::protocol::vocabulary::EventType;
//! let paused = matches!(EventKind::of("control.pause"), EventKind::Core(EventType::ControlPaus));
//! ```
//!
//! Nor does a decision that forgets a sort of type (here, the types
//! registered after this engine was built):
//!
//! ```compile_fail
//! use aep_engine::protocol::kind::EventKind;
//! fn label<'a>(kind: EventKind<'a>) -> &'a str {
//!     match kind {
//!         EventKind::Core(t) => t.as_str(),
//!         EventKind::Vendor(ty) => ty,
//!     }
//! }
//! ```

use super::vocabulary::{EventType, TypeScope};

/// What an event's `type` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind<'a> {
    /// A type the registry holds.
    Core(EventType),
    /// A vendor's own type, `x.{vendor}.…` (AEP-0002 §5).
    Vendor(&'a str),
    /// A type outside the registry this engine was built from: carried
    /// untouched, its name kept.
    Unregistered(&'a str),
}

impl<'a> EventKind<'a> {
    /// Reads a type name.
    pub fn of(ty: &'a str) -> EventKind<'a> {
        EventKind::from_parsed(EventType::parse(ty), ty)
    }

    /// The kind of `ty` whose registry lookup gave `core` (an event keeps
    /// the lookup, not the kind, and rebuilds the kind on demand).
    pub(crate) fn from_parsed(core: Option<EventType>, ty: &'a str) -> EventKind<'a> {
        match core {
            Some(t) => EventKind::Core(t),
            None if ty.starts_with("x.") => EventKind::Vendor(ty),
            None => EventKind::Unregistered(ty),
        }
    }

    /// The registered type, when it is one.
    pub fn core(self) -> Option<EventType> {
        match self {
            EventKind::Core(t) => Some(t),
            EventKind::Vendor(_) | EventKind::Unregistered(_) => None,
        }
    }

    /// The type's name.
    pub fn as_str(self) -> &'a str {
        match self {
            EventKind::Core(t) => t.as_str(),
            EventKind::Vendor(ty) | EventKind::Unregistered(ty) => ty,
        }
    }

    /// Agent-scoped events describe the emitter, not a session
    /// (AEP-0001 §5.2): the registry's `agent` scope, and for a type it
    /// does not hold the spec's rule, the `agent` category.
    pub fn is_agent_scoped(self) -> bool {
        match self {
            EventKind::Core(t) => t.scope() == TypeScope::Agent,
            EventKind::Unregistered(ty) => ty.starts_with("agent."),
            EventKind::Vendor(_) => false,
        }
    }

    /// Commands (AEP-0004 §2): the registry's `command`-scoped types and
    /// vendor `x.{vendor}.control.{verb}` commands. Acks are not commands.
    pub fn is_command(self) -> bool {
        match self {
            EventKind::Core(t) => t.scope() == TypeScope::Command,
            EventKind::Vendor(ty) => is_vendor_command_type(ty),
            EventKind::Unregistered(_) => false,
        }
    }

    /// Foreign-emitter session events carry `session` but no `seq`
    /// (AEP-0001 §5.2 exception): commands and `attention.routed`.
    pub fn is_foreign_emitter(self) -> bool {
        self.is_command() || self == EventKind::Core(EventType::AttentionRouted)
    }

    /// Acks (AEP-0004 §3): `control.accepted` and `control.rejected`.
    pub fn is_ack(self) -> bool {
        matches!(self, EventKind::Core(EventType::ControlAccepted | EventType::ControlRejected))
    }

    /// An owner's domain event: not an ack, not another party's seq-less
    /// event, not agent-scoped. Only these can be a command's outcome.
    pub fn is_domain(self) -> bool {
        !self.is_foreign_emitter() && !self.is_ack() && !self.is_agent_scoped()
    }
}

/// `x.{vendor}.control.{verb…}`.
pub fn is_vendor_command_type(ty: &str) -> bool {
    let mut parts = ty.splitn(4, '.');
    matches!((parts.next(), parts.next(), parts.next(), parts.next()), (Some("x"), Some(v), Some("control"), Some(rest)) if !v.is_empty() && !rest.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_scope_agrees_with_the_category_rule() {
        for t in EventType::ALL {
            assert_eq!(
                EventKind::Core(t).is_agent_scoped(),
                t.as_str().starts_with("agent."),
                "{t}: AEP-0001 §5.2 makes exactly the `agent` category agent-scoped"
            );
        }
    }

    #[test]
    fn kinds_of_each_sort() {
        assert!(EventKind::of("control.cancel").is_command());
        assert!(EventKind::of("x.demo.control.instruct").is_command());
        assert!(!EventKind::of("x.demo.tool.ran").is_command());
        assert!(!EventKind::of("control.accepted").is_command());
        assert!(EventKind::of("control.accepted").is_ack());
        assert!(EventKind::of("attention.routed").is_foreign_emitter());
        assert!(EventKind::of("agent.heartbeat").is_agent_scoped());
        assert!(EventKind::of("agent.later").is_agent_scoped(), "an unregistered agent.* is still agent-scoped");
        assert!(!EventKind::of("x.acme.agent.ping").is_agent_scoped());
        assert!(EventKind::of("tool.completed").is_domain());
        assert!(!EventKind::of("control.rejected").is_domain());
        assert_eq!(EventKind::of("x.acme.thing").as_str(), "x.acme.thing");
        assert_eq!(EventKind::of("run.failed").core(), Some(EventType::RunFailed));
    }
}

//! The protocol's names as types, generated at build time from the AEP
//! registry (`schemas/registry/*.json`) and the hand-kept list of error
//! codes (`vocabulary/error-codes.json`): [`EventType`] and its string
//! constants in [`types`], [`CommandVerb`], [`Capture`], [`Severity`],
//! [`NackReason`], and [`ErrorCode`] with its constants in [`codes`].
//!
//! A name the registry does not hold does not compile:
//!
//! ```
//! use aep_engine::protocol::vocabulary::{codes, types, EventType};
//! assert_eq!(types::ATTENTION_REQUESTED, "attention.requested");
//! assert_eq!(EventType::parse("attention.requested"), Some(EventType::AttentionRequested));
//! assert_eq!(codes::NO_ROUTE, "no-route");
//! ```
//!
//! ```compile_fail
//! let _ = aep_engine::protocol::vocabulary::EventType::AttentionRequestd;
//! ```
//!
//! ```compile_fail
//! let _ = aep_engine::protocol::vocabulary::types::TOOL_STARTED;
//! ```
//!
//! ```compile_fail
//! let _ = aep_engine::protocol::vocabulary::codes::NO_ROUT;
//! ```
//!
//! Vendor types (`x.{vendor}.*`) are open-ended: [`EventType::parse`]
//! answers `None` for them. An event's type, read once for deciding by it,
//! is [`EventKind`](super::kind::EventKind): a core type, or a vendor or
//! unregistered one kept apart by name.

/// A name outside a closed set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a registered {set}")]
pub struct UnknownName {
    /// Which set was asked (`EventType`, `ErrorCode`, …).
    pub set: &'static str,
    pub name: String,
}

include!(concat!(env!("OUT_DIR"), "/vocabulary.rs"));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::validate::payload::schema;

    #[test]
    fn every_payload_schema_names_a_registered_type() {
        for ty in schema::types() {
            assert!(EventType::parse(ty).is_some(), "`{ty}` has a payload schema but is not in the registry");
        }
    }

    #[test]
    fn names_round_trip_and_constants_agree() {
        for t in EventType::ALL {
            assert_eq!(t.as_str().parse::<EventType>(), Ok(t));
        }
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(codes::NO_ROUTE, ErrorCode::NoRoute.as_str());
        assert_eq!(types::ATTENTION_REQUESTED, EventType::AttentionRequested.as_str());
        let err = "session.paused".parse::<EventType>().unwrap_err();
        assert_eq!(err.to_string(), "`session.paused` is not a registered EventType");
    }

    #[test]
    fn command_verbs_are_the_command_scoped_types() {
        let scoped: Vec<EventType> = EventType::ALL.into_iter().filter(|t| t.scope() == TypeScope::Command).collect();
        let verbs: Vec<EventType> = CommandVerb::ALL.into_iter().map(CommandVerb::event_type).collect();
        assert_eq!(scoped, verbs);
        assert_eq!(CommandVerb::Pause.as_str(), "control.pause");
    }

    #[test]
    fn levels_keep_the_registry_order_and_defaults() {
        assert!(Capture::None < Capture::Metadata && Capture::Redacted < Capture::Full);
        assert!(Severity::Debug < Severity::Info && Severity::Error < Severity::Critical);
        assert_eq!((Capture::default(), Severity::default()), (Capture::Metadata, Severity::Info));
    }
}

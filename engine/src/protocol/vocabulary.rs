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
//! Vendor types (`x.{vendor}.*`) are open-ended: an event's type stays a
//! string, and [`EventType::parse`] answers `None` for them.

/// A name outside a closed set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a registered {set}")]
pub struct UnknownName {
    /// Which set was asked (`EventType`, `ErrorCode`, …).
    pub set: &'static str,
    pub name: String,
}

include!(concat!(env!("OUT_DIR"), "/vocabulary.rs"));

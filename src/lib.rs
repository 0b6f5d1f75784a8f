//! `aep-client`, the npm package: the AEP engine ([`aep_engine`]) and its
//! browser driver (`aep-browser`) behind a wasm-bindgen JavaScript API.
//!
//! * [`js`]: the exported classes and functions (wasm32, feature `js-api`).
//! * [`view`]: the plain JSON views of engine state handed to JavaScript.
//! * [`error`]: the codes JavaScript reads off its errors.
//! * [`input`]: the arguments JavaScript hands the client's commands.
//!
//! Every closed set of names JavaScript sees (error codes, command changes,
//! states, verbs) is a Rust enum that serializes itself and declares itself
//! to TypeScript, so the names are written once:
//!
//! ```
//! use aep_client::error::AepErrorCode;
//! use aep_client::view::CommandChange;
//! use aep_engine::protocol::vocabulary::CommandVerb;
//!
//! fn retry_later(code: AepErrorCode) -> bool {
//!     matches!(code, AepErrorCode::NotLive | AepErrorCode::Backpressure)
//! }
//! assert!(retry_later(AepErrorCode::NotLive));
//! assert_eq!(serde_json::to_value(CommandChange::TimedOut).unwrap(), "timeout");
//! assert_eq!(CommandVerb::Pause.as_str(), "control.pause");
//! ```
//!
//! A misspelt name is no variant, so it does not compile: an error code,
//!
//! ```compile_fail
//! let _ = aep_client::error::AepErrorCode::NotLiv;
//! ```
//!
//! a change a command's listener is told,
//!
//! ```compile_fail
//! let _ = aep_client::view::CommandChange::Timout;
//! ```
//!
//! or a command verb:
//!
//! ```compile_fail
//! let _ = aep_engine::protocol::vocabulary::CommandVerb::Paus;
//! ```
//!
//! Nor does a view built with a status outside its set:
//!
//! ```compile_fail
//! let _ = aep_client::view::RunState::Paused;
//! ```

pub mod error;
pub mod input;
#[cfg(all(target_arch = "wasm32", feature = "js-api"))]
pub mod js;
pub mod view;

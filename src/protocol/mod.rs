//! The wire: events, their validation, filters, frames and capture levels.

pub mod attention;
pub mod capture;
pub mod envelope;
pub mod event;
pub mod filter;
pub mod form;
pub mod frame;
pub mod ids;
pub mod validate;

/// The protocol version this engine speaks (the `aep` attribute and the
/// `hello` version).
pub const AEP_VERSION: &str = "0.1";

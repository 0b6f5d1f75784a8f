//! The wire: events, their validation, filters, frames and capture levels.

pub mod attention;
pub mod capture;
pub mod envelope;
pub mod event;
pub mod filter;
pub mod form;
pub mod frame;
pub mod ids;
pub mod kind;
pub mod request_context;
pub mod validate;
pub mod violation;
pub mod vocabulary;

/// The protocol version this engine speaks (the `aep` attribute and the
/// `hello` version).
pub const AEP_VERSION: &str = "0.1";

/// The query parameter that carries the bearer token for clients that
/// cannot set headers (browser `EventSource`, the WebSocket constructor;
/// AEP-0003 §8.1).
pub const TOKEN_PARAM: &str = "access_token";

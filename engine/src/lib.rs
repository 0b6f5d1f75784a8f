//! The AEP (Agent Event Protocol, v0.1) engine.
//!
//! Everything that is protocol lives here as pure state machines: no IO, no
//! clock, no randomness that was not passed in, no JavaScript host. Drivers
//! (`aep-browser`'s WebSocket driver, the relay, the demo agents, the
//! adapters) feed bytes and time in and drain frames, notifications and
//! wake-up times out; `aep-client` puts the JavaScript API on top.
//!
//! * [`protocol`]: envelope (exact bytes kept), validation, attr-match
//!   filters, frames, capture levels and down-level, ids and sources.
//! * [`control`]: the command sender (pending table, ack window, retries,
//!   outcomes) and the command target (dedupe, recorded acks, answer checks).
//! * [`store`]: the correlation fold over a stream of events.
//! * [`client`]: the sans-IO relay connection.
//! * [`order`]: the one sort the WebAssembly builds link.
//! * [`rng`]: the one random generator, seeded by the driver.

pub mod client;
pub mod control;
pub mod order;
pub mod protocol;
pub mod rng;
pub mod store;
pub mod text;
pub mod time;

pub use protocol::event::{Capture, Event, EventError, Severity};
pub use time::UnixMs;

//! The JavaScript API (wasm32 only): the browser WebSocket driver around
//! the [`Hub`](crate::client::hub::Hub), and the engine's pure pieces.
//!
//! * [`client`]: `AepClient`, the multi-relay console client.
//! * [`driver`]: sockets and the timer around the hub, for any front end.
//! * [`feed`]: the JavaScript front end: listeners and command promises.
//! * [`socket`]: one WebSocket (global or passed-in constructor).
//! * [`options`]: reading `new AepClient(options)`.
//! * [`helpers`]: `validateEvent`, `validateFilter`, `matches`, `projectState`.
//! * [`target`]: `ControlTarget` for agents written in JavaScript.
//! * [`agent`]: `AepAgent`, such an agent's own relay connection.
//! * [`js`]: conversions, errors (`NackError`, `AepError`), time, randomness.
//!
//! Objects cross the boundary as plain JSON-shaped values; the package's
//! TypeScript declarations describe each one. The exported API is the
//! `js-api` feature (on by default); a Rust front end that only needs the
//! driver (the console) turns it off and ships none of it.

#[cfg(feature = "js-api")]
pub mod agent;
pub mod authorization;
#[cfg(feature = "js-api")]
pub mod client;
pub mod driver;
#[cfg(feature = "js-api")]
pub mod feed;
#[cfg(feature = "js-api")]
pub mod helpers;
pub mod js;
#[cfg(feature = "js-api")]
pub mod options;
pub mod socket;
#[cfg(feature = "js-api")]
pub mod target;

/// Talc instead of the standard library's dlmalloc: the same service in
/// less code, for the npm package and the console alike.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

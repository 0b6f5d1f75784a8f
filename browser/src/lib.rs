//! The browser driver of the AEP engine: what a web front end needs to run
//! the sans-IO [`aep_engine`] client in a page, and nothing of the
//! JavaScript API (that is `aep-client`).
//!
//! * [`driver`]: WebSockets and one timer around a hub or an agent
//!   connection, for any front end that implements [`driver::Handler`].
//! * [`socket`]: one WebSocket (the global one or a passed-in constructor).
//! * [`authorization`]: the HTTP probe that tells a refused token from a
//!   relay that is down.
//! * [`clock`]: the host's time and randomness, handed to the engine.
//! * [`case`]: the host's lower-casing, which the engine's text matching
//!   uses instead of shipping Unicode's tables.
//!
//! Everything here is wasm32 only; on other targets the crate is empty so
//! a workspace build stays whole.
#![cfg(target_arch = "wasm32")]

pub mod authorization;
pub mod case;
pub mod clock;
pub mod driver;
pub mod socket;

/// Talc instead of the standard library's dlmalloc (feature `talc`): the
/// same service in less code.
#[cfg(feature = "talc")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

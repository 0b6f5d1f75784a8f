//! `aep-client`, the npm package: the AEP engine ([`aep_engine`]) and its
//! browser driver (`aep-browser`) behind a wasm-bindgen JavaScript API.
//!
//! * [`js`]: the exported classes and functions (wasm32, feature `js-api`).
//! * [`view`]: the plain JSON views of engine state handed to JavaScript.
//!
//! The engine's modules are re-exported at the root, and the browser driver
//! under `wasm`, for the crates that still import them from here.

pub use aep_engine::*;

#[cfg(all(target_arch = "wasm32", feature = "js-api"))]
pub mod js;
pub mod view;

/// The browser driver, under the path the console imports it from.
#[cfg(target_arch = "wasm32")]
pub mod wasm {
    pub use aep_browser::{authorization, clock, driver, socket};
}

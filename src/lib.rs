//! `aep-client`, the npm package: the AEP engine ([`aep_engine`]) and its
//! browser driver (`aep-browser`) behind a wasm-bindgen JavaScript API.
//!
//! * [`js`]: the exported classes and functions (wasm32, feature `js-api`).
//! * [`view`]: the plain JSON views of engine state handed to JavaScript.
//! * [`input`]: the arguments JavaScript hands the client's commands.

pub mod input;
#[cfg(all(target_arch = "wasm32", feature = "js-api"))]
pub mod js;
pub mod view;

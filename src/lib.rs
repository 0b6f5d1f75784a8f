//! `aep-client`, the npm package: the AEP engine ([`aep_engine`]) and its
//! browser driver (`aep-browser`) behind a wasm-bindgen JavaScript API.
//!
//! * [`js`]: the exported classes and functions (wasm32, feature `js-api`).
//! * [`view`]: the plain JSON views of engine state handed to JavaScript.
//! * [`input`]: the arguments JavaScript hands the client's commands.

#[cfg(all(target_arch = "wasm32", feature = "js-api"))]
pub mod js;
pub mod input;
pub mod view;

/// The module's allocator: talc, in place of the standard library's
/// dlmalloc. A fold allocates and frees per event (its bytes, its entry,
/// its table slots), and with dlmalloc those calls were about a sixth of
/// `projectState`'s time; talc is faster at them and smaller.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

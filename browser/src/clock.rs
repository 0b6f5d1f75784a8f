//! The host's clock and randomness, handed to the sans-IO engine as
//! arguments: the engine never reads either itself.

use aep_engine::UnixMs;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &js_sys::Uint8Array) -> Result<JsValue, JsValue>;
}

/// The wall clock, in milliseconds since the Unix epoch.
pub fn now() -> UnixMs {
    UnixMs(js_sys::Date::now().max(0.0) as u64)
}

/// 128 random bits from `crypto.getRandomValues`, or `Math.random` where
/// there is no Web Crypto (ids need uniqueness, not secrecy).
pub fn random() -> u128 {
    let buf = js_sys::Uint8Array::new_with_length(16);
    let mut bytes = [0u8; 16];
    if get_random_values(&buf).is_ok() {
        buf.copy_to(&mut bytes);
    } else {
        for b in bytes.iter_mut() {
            *b = (js_sys::Math::random() * 256.0) as u8;
        }
    }
    u128::from_le_bytes(bytes)
}

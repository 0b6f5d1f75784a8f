//! Lower-casing by the JavaScript host, for the engine's text matching
//! (its `host-lowercase` feature): `String.prototype.toLowerCase` applies
//! Unicode's default mapping, so the module need not carry the tables.

/// The engine's `text::lowercase` calls this for non-ASCII text.
#[no_mangle]
pub fn __aep_host_lowercase(s: &str) -> String {
    String::from(js_sys::JsString::from(s).to_lower_case())
}

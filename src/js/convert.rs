//! Crossing the boundary: JSON in and out, errors; time and randomness come
//! from the browser driver.
//!
//! Inputs that become events or payloads are read through `JSON.stringify`,
//! so the engine sees exactly the JSON a relay would. Views go out as
//! `JSON.parse` of their JSON text, plain objects with no BigInt; events
//! as `JSON.parse` of their exact bytes.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::{AepErrorCode, NackKind};

#[wasm_bindgen(module = "/src/js/errors.js")]
extern "C" {
    #[wasm_bindgen(js_name = makeAepError)]
    fn make_aep_error(code: &str, message: &str) -> JsValue;
    #[wasm_bindgen(js_name = makeNackError)]
    fn make_nack_error(fields: JsValue) -> JsValue;
}

// Copying a string into the module, the generated binding walks it a
// character at a time; `TextEncoder.encodeInto` encodes it natively,
// straight into the module's memory.
#[wasm_bindgen(inline_js = "const utf8 = new TextEncoder();
export function utf8Into(text, from, memory, at, room) {
  const r = utf8.encodeInto(from === 0 ? text : text.substring(from), new Uint8Array(memory.buffer, at, room));
  return [r.read, r.written];
}
")]
extern "C" {
    /// Encodes `text` from UTF-16 index `from` into `room` bytes at `at`:
    /// `[read, written]`, in UTF-16 units and bytes.
    #[wasm_bindgen(js_name = utf8Into)]
    fn utf8_into(text: &JsValue, from: u32, memory: &JsValue, at: u32, room: u32) -> Vec<u32>;
}

/// The UTF-8 bytes of a JavaScript string, for texts large enough that
/// how they cross matters (a whole stream). Lone surrogates become U+FFFD,
/// as in any string handed to the module.
pub fn string_bytes(text: &JsValue) -> Vec<u8> {
    let units = text.unchecked_ref::<js_sys::JsString>().length() as usize;
    let memory = wasm_bindgen::memory();
    // One byte per UTF-16 unit fits ASCII; the rest gets room as it comes
    // (at most three bytes per unit left).
    let mut bytes = Vec::<u8>::with_capacity(units);
    let mut read = 0;
    while read < units {
        let left = units - read;
        if bytes.capacity() - bytes.len() < left {
            bytes.reserve(if read == 0 { left } else { left * 3 });
        }
        let room = bytes.capacity() - bytes.len();
        // SAFETY: the encoder writes at most `room` bytes into the spare
        // capacity, and reports how many; the memory does not move between
        // the pointer's reading and the write (nothing allocates).
        let at = unsafe { bytes.as_mut_ptr().add(bytes.len()) } as u32;
        let r = utf8_into(text, read as u32, &memory, at, room as u32);
        let (units_read, written) = (r[0] as usize, r[1] as usize);
        unsafe { bytes.set_len(bytes.len() + written) };
        read += units_read;
        if units_read == 0 && written == 0 {
            // No room even for one character: make some.
            bytes.reserve(4);
        }
    }
    bytes
}

/// A JavaScript string as text, for texts large enough that how they cross
/// matters (see [`string_bytes`]).
pub fn string_text(text: &JsValue) -> String {
    // SAFETY: `TextEncoder` writes well-formed UTF-8, and each call starts
    // where the last one stopped reading, on a character's boundary (it
    // never splits a surrogate pair).
    unsafe { String::from_utf8_unchecked(string_bytes(text)) }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str, err: &JsValue);
}

/// An `AepError` with a stable `code` and a message for people.
pub fn aep_error(code: AepErrorCode, message: impl AsRef<str>) -> JsValue {
    make_aep_error(code.as_str(), message.as_ref())
}

/// What a refused command tells its caller.
pub struct Nack<'a> {
    pub kind: NackKind,
    pub reason: &'a str,
    pub detail: Option<&'a str>,
    pub relay_code: Option<&'a str>,
    pub command_id: &'a str,
    pub ack: Option<JsValue>,
    pub message: String,
}

pub fn nack_error(n: Nack<'_>) -> JsValue {
    let o = js_sys::Object::new();
    set(&o, "kind", &n.kind.as_str().into());
    set(&o, "reason", &n.reason.into());
    set(&o, "synthesized", &JsValue::from_bool(n.kind == NackKind::Timeout));
    set(&o, "commandId", &n.command_id.into());
    set(&o, "message", &n.message.into());
    if let Some(d) = n.detail {
        set(&o, "detail", &d.into());
    }
    if let Some(c) = n.relay_code {
        set(&o, "relayCode", &c.into());
    }
    if let Some(a) = n.ack {
        set(&o, "ack", &a);
    }
    make_nack_error(o.into())
}

pub fn set(target: &js_sys::Object, key: &str, value: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(target, &JsValue::from_str(key), value);
}

pub fn get(source: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(source, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// A view (any `Serialize` value) as a plain JavaScript value, through
/// serde-wasm-bindgen: objects, not `Map`s, and numbers, not `BigInt`s, as
/// its declaration says.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap_or(JsValue::NULL)
}

/// An event's exact bytes as a JavaScript object.
pub fn event_to_js(raw: &str) -> JsValue {
    js_sys::JSON::parse(raw).unwrap_or(JsValue::NULL)
}

/// JSON text of a JavaScript value: strings are taken as JSON text
/// already, anything else goes through `JSON.stringify`.
pub fn json_text(value: &JsValue) -> Result<String, String> {
    if let Some(s) = value.as_string() {
        return Ok(s);
    }
    if value.is_undefined() || value.is_function() {
        return Err("expected a JSON value".into());
    }
    match js_sys::JSON::stringify(value) {
        Ok(s) => s.as_string().ok_or_else(|| "value is not JSON-serialisable".into()),
        Err(_) => Err("value is not JSON-serialisable (a cycle or a BigInt?)".into()),
    }
}

/// A JavaScript value read as JSON (objects through `JSON.stringify`).
pub fn to_json(value: &JsValue) -> Result<Value, String> {
    if value.is_undefined() {
        return Err("expected a JSON value, got undefined".into());
    }
    let text = if value.is_string() {
        // A string here is data, not JSON text.
        return Ok(Value::String(value.as_string().unwrap_or_default()));
    } else {
        json_text(value)?
    };
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

pub use aep_browser::clock::{now, random};

/// Reports an exception thrown by a listener without stopping the others.
pub fn report(err: &JsValue) {
    console_error("aep-client: a listener threw", err);
}

/// Whether `value` is a function (a constructor or a callback).
pub fn as_function(value: &JsValue) -> Option<js_sys::Function> {
    value.dyn_ref::<js_sys::Function>().cloned()
}

//! The few browser facts the console needs: time, randomness, timers,
//! visibility, online state.

use aep_engine::UnixMs;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub fn window() -> web_sys::Window {
    web_sys::window().expect("a browser window")
}

pub fn now() -> UnixMs {
    UnixMs(js_sys::Date::now().max(0.0) as u64)
}

/// 128 random bits (command ids need uniqueness, not secrecy).
pub fn random() -> u128 {
    let mut bytes = [0u8; 16];
    let ok = window().crypto().ok().is_some_and(|c| c.get_random_values_with_u8_array(&mut bytes).is_ok());
    if !ok {
        for b in bytes.iter_mut() {
            *b = (js_sys::Math::random() * 256.0) as u8;
        }
    }
    u128::from_le_bytes(bytes)
}

/// Runs `f` once after `ms` milliseconds (timers keep running in a
/// hidden tab, unlike animation frames, so notifications still fire).
pub fn after(ms: i32, f: impl FnOnce() + 'static) {
    let cb = Closure::once_into_js(f);
    let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), ms);
}

/// Runs `f` once when the page is next idle, or after `timeout_ms` at the
/// latest (a flood of socket messages can leave it no idle time). Where
/// the browser has no idle callbacks (Safari), in a task of its own soon
/// after.
pub fn when_idle(timeout_ms: u32, f: impl FnOnce() + 'static) {
    /// Without idle callbacks: long enough for a frame to be drawn first.
    const NO_IDLE_MS: i32 = 50;
    let cb = Closure::once_into_js(f);
    let win = window();
    let options = web_sys::IdleRequestOptions::new();
    options.set_timeout(timeout_ms);
    if win.request_idle_callback_with_options(cb.unchecked_ref(), &options).is_err() {
        let _ = win.set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), NO_IDLE_MS);
    }
}

/// Runs `f` every `ms` milliseconds for the life of the page.
pub fn every(ms: i32, f: impl FnMut() + 'static) {
    let cb = Closure::<dyn FnMut()>::new(f);
    let _ = window().set_interval_with_callback_and_timeout_and_arguments_0(cb.as_ref().unchecked_ref(), ms);
    cb.forget();
}

pub fn hidden() -> bool {
    window().document().is_some_and(|d| d.visibility_state() == web_sys::VisibilityState::Hidden)
}

/// Whether the page is a secure context: served over HTTPS or from this
/// machine. Elsewhere the browser withholds service workers, notifications,
/// installing and the clipboard, and the token crosses the network in clear.
pub fn secure_context() -> bool {
    window().is_secure_context()
}

pub fn online() -> bool {
    window().navigator().on_line()
}

/// This device's time zone, as the browser states it.
pub struct DeviceZone;

impl crate::model::clock::Zone for DeviceZone {
    fn offset_min(&self, at: UnixMs) -> i32 {
        // `getTimezoneOffset` counts minutes west of UTC.
        -(js_sys::Date::new(&JsValue::from_f64(at.0 as f64)).get_timezone_offset() as i32)
    }

    fn name(&self) -> Option<String> {
        let format = js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new());
        js_sys::Reflect::get(&format.resolved_options(), &JsValue::from_str("timeZone")).ok()?.as_string()
    }
}

/// When `at` was on this device's clock ([`crate::model::clock::wall`]).
pub fn wall(at: UnixMs) -> String {
    crate::model::clock::wall(at, now(), &DeviceZone)
}

/// [`wall`] in full, with the zone ([`crate::model::clock::wall_exactly`]).
pub fn wall_exactly(at: UnixMs) -> String {
    crate::model::clock::wall_exactly(at, &DeviceZone)
}

/// `performance.now()`, for measuring the console's own work.
pub fn perf_now() -> f64 {
    window().performance().map_or(0.0, |p| p.now())
}

//! The driver's answer to [`Action::CheckAuthorization`](crate::client::Action::CheckAuthorization).
//! A browser cannot see why a WebSocket upgrade failed (a 401 looks like
//! any network error), so the relay's HTTP binding is asked once, with the
//! token in an `Authorization` header, never in a URL.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::js;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (browsers, Node 18+).
    #[wasm_bindgen(catch, js_name = fetch)]
    fn global_fetch(url: &str, init: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

/// Asks `url` and hands the HTTP status to `answer`, or `None` without an
/// answer (relay down, a cross-origin relay that does not allow the
/// question, no `fetch`). `answer` always runs later, from the event loop,
/// never inside this call.
pub fn check(url: &str, token: Option<&str>, answer: impl FnOnce(Option<u16>) + 'static) {
    let headers = js_sys::Object::new();
    if let Some(t) = token {
        js::set(&headers, "Authorization", &format!("Bearer {t}").into());
    }
    let init = js_sys::Object::new();
    js::set(&init, "method", &"GET".into());
    js::set(&init, "headers", &headers.into());
    let request = global_fetch(url, &init.into());
    wasm_bindgen_futures::spawn_local(async move {
        let status = match request {
            Ok(promise) => match JsFuture::from(promise).await {
                Ok(response) => js::get(&response, "status").as_f64().map(|s| s as u16),
                Err(_) => None,
            },
            Err(_) => None,
        };
        answer(status);
    });
}

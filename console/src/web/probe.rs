//! Whether a relay refuses a token. A browser cannot see why a WebSocket
//! upgrade failed (a 401 looks like any network error), so after a failed
//! attempt the console asks the relay's discovery endpoint once, with the
//! token in an `Authorization` header (never in a URL).

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, Request, RequestInit, Response};

use super::platform::window;

/// `Some(true)`: the relay answered 401; `Some(false)`: it accepted the
/// token; `None`: no answer (down, or another origin that does not allow
/// the question).
pub async fn token_refused(url: &str, token: &str) -> Option<bool> {
    let headers = Headers::new().ok()?;
    if !token.is_empty() {
        headers
            .set("Authorization", &format!("Bearer {token}"))
            .ok()?;
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    init.set_cache(web_sys::RequestCache::NoStore);
    let request = Request::new_with_str_and_init(url, &init).ok()?;
    let response = JsFuture::from(window().fetch_with_request(&request))
        .await
        .ok()?;
    let response: Response = response.dyn_into().ok()?;
    Some(response.status() == 401)
}

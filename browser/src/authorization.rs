//! The driver's answer to [`SocketAction::CheckAuthorization`](aep_engine::client::SocketAction::CheckAuthorization).
//! A browser cannot see why a WebSocket upgrade failed (a 401 looks like
//! any network error), so the relay's HTTP binding is asked once, with the
//! token in an `Authorization` header, never in a URL.

use gloo_net::http::Request;

/// Asks `url` and hands the HTTP status to `answer`, or `None` without an
/// answer (relay down, a cross-origin relay that does not allow the
/// question). `answer` always runs later, from the event loop, never inside
/// this call.
pub fn check(url: &str, token: Option<&str>, answer: impl FnOnce(Option<u16>) + 'static) {
    let mut request = Request::get(url);
    if let Some(t) = token {
        request = request.header("Authorization", &format!("Bearer {t}"));
    }
    wasm_bindgen_futures::spawn_local(async move {
        let status = request.send().await.ok().map(|response| response.status());
        answer(status);
    });
}

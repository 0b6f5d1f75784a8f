//! No web page but the relay's own reaches it, with or without a token: a
//! WebSocket or request from another origin, and one naming a host the
//! relay does not serve (DNS rebinding), are refused before anything else.

use crate::support;

use serde_json::json;
use support::*;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Error as WsError;

/// Opens `/socket` with extra headers; the HTTP status of a refusal.
async fn upgrade(t: &TestRelay, headers: &[(&str, &str)]) -> Result<Ws, u16> {
    let mut url = format!("ws://{}/socket", t.relay.local_addr());
    if t.posture == Posture::Token {
        url.push_str(&format!("?access_token={TOKEN}"));
    }
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    match tokio_tungstenite::connect_async_with_config(request, None, true).await {
        Ok((inner, _)) => Ok(Ws::from_stream(inner)),
        Err(WsError::Http(response)) => Err(response.status().as_u16()),
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_page_on_another_origin_cannot_open_the_socket_in_either_posture() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        for foreign in ["http://evil.example", "null", "http://127.0.0.1:1"] {
            assert_eq!(upgrade(&t, &[("origin", foreign)]).await.err(), Some(403), "{posture:?} {foreign}");
        }
        let own = t.relay.base_url();
        let mut ws = upgrade(&t, &[("origin", &own)]).await.expect("the relay's own console connects");
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
        assert_eq!(ws.recv_json().await["type"], "hello");
        upgrade(&t, &[]).await.expect("a program sends no Origin and connects");
    }
}

#[tokio::test]
async fn a_foreign_host_is_refused_everywhere_in_either_posture() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let host = format!("attacker.example:{}", t.relay.local_addr().port());
        for path in ["/stream?live=0&from=all", "/events", "/", "/healthz"] {
            let response = t.get(path).header("host", &host).send().await.unwrap();
            assert_eq!(response.status(), 403, "{posture:?} {path}");
        }
        assert_eq!(upgrade(&t, &[("host", &host)]).await.err(), Some(403), "{posture:?}");
        let local = format!("localhost:{}", t.relay.local_addr().port());
        assert_eq!(t.get("/healthz").header("host", &local).send().await.unwrap().status(), 200);
    }
}

#[tokio::test]
async fn a_cross_origin_post_stores_nothing() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live-origin");
        let e = event("attention.requested", &s, 0, 0);
        let response = t
            .post("/events")
            .header("origin", "http://evil.example")
            .header("content-type", "application/json")
            .header("aep-version", "0.1")
            .body(e.raw().to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{posture:?}");
        assert_eq!(t.relay.session_len(&s), 0);
    }
}

#[tokio::test]
async fn configured_origins_and_hosts_are_let_in() {
    let t = TestRelay::start_with(Posture::Token, |c| {
        c.allowed_origins = vec!["http://dash.example".into()];
        c.allowed_hosts = vec!["relay.example".into()];
    })
    .await;
    upgrade(&t, &[("origin", "http://dash.example")]).await.expect("a configured origin");
    let host = format!("relay.example:{}", t.relay.local_addr().port());
    assert_eq!(t.get("/healthz").header("host", &host).send().await.unwrap().status(), 200);
}

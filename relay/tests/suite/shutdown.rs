//! Orderly shutdown: SSE streams end with a comment, sockets get `closing`
//! with their delivered positions and close with 1001.

use crate::support;

use serde_json::json;
use support::*;

async fn shutdown_ends_streams_and_closes_sockets_in_order(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live");
        let sse = t.sse("").await;
        let mut ws = t.consumer().await;
        ws.subscribe(json!({"type": "subscribe", "id": "all", "filter": {"session": s}})).await;
        let e = event("session.started", &s, 0, 4);
        t.post_events(std::slice::from_ref(&e)).await;
        assert_eq!(ws.recv_text(PROMPT).await.unwrap(), e.raw());
        let addr = t.relay.local_addr();

        let outcome = tokio::spawn(t.relay.shutdown());
        let closing = ws.recv_json().await;
        assert_eq!(
            closing,
            json!({"type": "closing", "reason": "shutdown", "delivered": [{"sub": "all", "session": s, "epoch": 0, "seq": 4}]})
        );
        assert!(matches!(ws.recv(PROMPT).await, Some(Incoming::Closed(Some(1001)))), "{posture:?}");
        let body = sse.body_until_end(PROMPT).await;
        assert!(body.ends_with(": shutting-down\n\n"), "{body:?}");
        assert_eq!(outcome.await.unwrap(), aep_relay::ShutdownOutcome::Drained);
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the listener is closed");
    }
}

over_both_bindings!(shutdown_ends_streams_and_closes_sockets_in_order,);

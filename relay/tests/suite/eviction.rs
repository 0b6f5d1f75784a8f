//! Bounded replay under real eviction (checks `evict-replay-exhausted` and
//! `evict-byte-identity`) and the session cap, in both postures.

use crate::support;

use serde_json::{json, Value};
use support::*;

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

/// The checker's flood: `buffer + 8` data-less events at epoch 1, posted
/// as NDJSON in chunks of at most 500 lines. Returns the posted lines.
async fn flood(t: &TestRelay, s: &str, buffer: u64) -> Vec<String> {
    let lines: Vec<String> = (0..buffer + 8).map(|i| event("progress.status", s, 1, i).raw().to_owned()).collect();
    for chunk in lines.chunks(500) {
        let r = t.post_lines(chunk).await;
        assert_eq!(r.status(), 202);
    }
    lines
}

async fn evict_checks(posture: Posture, buffer: u64) {
    let t = TestRelay::start_with(posture, |c| c.buffer_depth = buffer as usize).await;
    let doc: Value = t.get("/events").send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["capabilities"]["replay"]["buffer"], buffer);
    let s = session_name("live-evict");
    let posted = flood(&t, &s, buffer).await;
    assert_eq!(t.relay.session_len(&s), buffer as usize);

    // SSE: single pass, no Accept header, marker before any data.
    let from = enc(&json!([{ "session": s, "epoch": 1, "seq": 0 }]));
    let r = t.get(&format!("/stream?live=0&from={from}")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body = tokio::time::timeout(PROMPT, r.text()).await.expect("live=0 ends").unwrap();
    let messages: Vec<SseMessage> = body.split_inclusive("\n\n").map(parse_message).collect();
    assert_eq!(
        messages[0].comments,
        vec![format!("replay-exhausted {s} 1:8")],
        "{posture:?}: marker first, own message"
    );
    assert!(messages[0].data.is_empty());
    let sse_data: Vec<String> = messages[1..].iter().map(|m| m.data[0].clone()).collect();
    assert_eq!(sse_data, posted[8..].to_vec(), "SSE serves the posted bytes verbatim, from the earliest held");

    // WebSocket: subscribed, the replay-exhausted frame, then bare events.
    let mut ws = t.consumer().await;
    let sub = format!("sub-evict-{}", fresh_id());
    ws.send(&json!({"type": "subscribe", "id": sub, "filter": {"session": s}, "from": [{"session": s, "epoch": 1, "seq": 0}]})).await;
    assert_eq!(ws.recv_json().await, json!({"type": "subscribed", "id": sub}));
    let marker = ws.recv_json().await;
    assert_eq!(
        marker,
        json!({"type": "replay-exhausted", "sub": sub, "session": s, "earliest": {"epoch": 1, "seq": 8}})
    );
    let mut ws_frames = Vec::new();
    while ws_frames.len() < posted.len() - 8 {
        ws_frames.push(ws.recv_text(PROMPT).await.expect("replayed event"));
    }
    assert_eq!(ws_frames, sse_data, "both bindings deliver the same bytes");

    // Resuming at or after the last evicted position is not exhausted.
    let from = enc(&json!([{ "session": s, "epoch": 1, "seq": 7 }]));
    let body = t.sse(&format!("live=0&from={from}")).await.body_until_end(PROMPT).await;
    assert!(!body.contains("replay-exhausted"));
    assert_eq!(body.matches("\ndata: ").count() + usize::from(body.starts_with("data: ")), buffer as usize);
}

#[tokio::test]
async fn eviction_markers_and_byte_identity_small_buffer() {
    for posture in POSTURES {
        evict_checks(posture, 16).await;
    }
}

#[tokio::test]
async fn eviction_markers_and_byte_identity_largest_checked_buffer() {
    for posture in POSTURES {
        evict_checks(posture, 512).await;
    }
}

async fn the_session_cap_evicts_the_least_recently_written_and_remembers_it(binding: Binding) {
    let t = TestRelay::start_with(Posture::Token, |c| c.max_sessions = 2).await.over(binding);
    let (a, b, c) = (session_name("a"), session_name("b"), session_name("c"));
    t.post_events(&[event("progress.status", &a, 0, 0), event("progress.status", &a, 0, 1)]).await;
    t.post_events(&[event("progress.status", &b, 0, 0), event("progress.status", &b, 0, 1)]).await;
    t.post_events(&[event("progress.status", &a, 0, 2)]).await;
    t.post_events(&[event("progress.status", &c, 0, 0)]).await;
    let stats = t.relay.stats();
    assert_eq!(stats.sessions, 2);
    assert_eq!(t.relay.session_len(&b), 0, "b was written least recently");
    assert_eq!(t.relay.session_len(&a), 3);

    // b comes back: a resume from before its loss is told about it.
    t.post_events(&[event("progress.status", &b, 0, 2)]).await;
    let from = enc(&json!([{ "session": b, "epoch": 0, "seq": 0 }]));
    let body = t.sse(&format!("live=0&from={from}")).await.body_until_end(PROMPT).await;
    assert!(body.starts_with(&format!(": replay-exhausted {b} 0:2\n\n")), "{body}");
    // A resume from the last position it had lost nothing.
    let from = enc(&json!([{ "session": b, "epoch": 0, "seq": 1 }]));
    let body = t.sse(&format!("live=0&from={from}")).await.body_until_end(PROMPT).await;
    assert!(!body.contains("replay-exhausted"), "{body}");
}

over_both_bindings!(the_session_cap_evicts_the_least_recently_written_and_remembers_it,);

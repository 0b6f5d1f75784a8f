//! A relay that restarted (it keeps nothing on disk) must not answer an
//! old resume position with silence: positions it cannot serve get
//! `replay-exhausted`, on both bindings.

mod support;

use serde_json::{json, Value};
use support::*;

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

async fn ws_replay(t: &TestRelay, session: &str, from: Value) -> Vec<Value> {
    let mut ws = t.consumer().await;
    let reply = ws.subscribe(json!({"type": "subscribe", "id": "r", "filter": {"session": session}, "from": from})).await;
    assert_eq!(reply["type"], "subscribed");
    ws.collect(std::time::Duration::from_millis(400)).await
}

async fn sse_replay(t: &TestRelay, session: &str, from: Value) -> String {
    let query = format!("live=0&filter={}&from={}", enc(&json!({"session": session})), enc(&from));
    t.sse(&query).await.body_until_end(PROMPT).await
}

#[tokio::test]
async fn a_restarted_relay_says_what_it_cannot_replay() {
    let s = session_name("restart");
    let before = TestRelay::start(Posture::Token).await;
    let events: Vec<_> = (0..10).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(before.post_events(&events).await.status(), 202);
    before.relay.shutdown().await;

    // A fresh process: nothing of `s` survived.
    let t = TestRelay::start(Posture::Token).await;
    let from = json!([{"session": s, "epoch": 0, "seq": 9}]);
    let frames = ws_replay(&t, &s, from.clone()).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["type"], "replay-exhausted");
    assert_eq!(frames[0]["sub"], "r");
    assert_eq!(frames[0]["session"], s);
    let body = sse_replay(&t, &s, from).await;
    assert!(body.contains(&format!(": replay-exhausted {s} ")), "{body}");

    // The emitter carries on; a consumer further ahead than anything held
    // is told too, and nothing it already has is sent again.
    let more: Vec<_> = (20..25).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(t.post_events(&more).await.status(), 202);
    let ahead = json!([{"session": s, "epoch": 0, "seq": 40}]);
    let frames = ws_replay(&t, &s, ahead.clone()).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["type"], "replay-exhausted");
    assert!(sse_replay(&t, &s, ahead).await.contains(": replay-exhausted"));

    // A position the relay does cover is served exactly, without a marker.
    let frames = ws_replay(&t, &s, json!([{"session": s, "epoch": 0, "seq": 22}])).await;
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().expect("events only")).collect();
    assert_eq!(seqs, vec![23, 24]);
    let caught_up = sse_replay(&t, &s, json!([{"session": s, "epoch": 0, "seq": 24}])).await;
    assert!(!caught_up.contains("replay-exhausted"), "{caught_up}");
}

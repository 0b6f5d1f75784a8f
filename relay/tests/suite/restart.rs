//! A relay that restarted (it keeps nothing on disk) must not answer an
//! old resume position with silence: positions it cannot serve get
//! `replay-exhausted`, on both bindings.

use crate::support;

use serde_json::{json, Value};
use support::*;

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

async fn ws_replay(t: &TestRelay, session: &str, from: Value) -> Vec<Value> {
    let mut ws = t.consumer().await;
    let reply =
        ws.subscribe(json!({"type": "subscribe", "id": "r", "filter": {"session": session}, "from": from})).await;
    assert_eq!(reply["type"], "subscribed");
    ws.collect(std::time::Duration::from_millis(400)).await
}

async fn sse_replay(t: &TestRelay, session: &str, from: Value) -> String {
    let query = format!("live=0&filter={}&from={}", enc(&json!({"session": session})), enc(&from));
    t.sse(&query).await.body_until_end(PROMPT).await
}

/// The `replay-exhausted` markers of a replay, as `(earliest epoch, seq)`,
/// and the positions of the events after them, from both bindings (which
/// must agree).
async fn replayed(t: &TestRelay, session: &str, from: Value) -> (Vec<(u64, u64)>, Vec<u64>) {
    let mut markers = Vec::new();
    let mut seqs = Vec::new();
    for frame in ws_replay(t, session, from.clone()).await {
        if frame["type"] == "replay-exhausted" {
            assert_eq!((&frame["sub"], &frame["session"]), (&json!("r"), &json!(session)), "{frame}");
            assert!(seqs.is_empty(), "a marker comes before the events it qualifies");
            markers.push((frame["earliest"]["epoch"].as_u64().unwrap(), frame["earliest"]["seq"].as_u64().unwrap()));
        } else {
            seqs.push(frame["seq"].as_u64().expect("an event"));
        }
    }
    let (mut sse_markers, mut sse_seqs) = (Vec::new(), Vec::new());
    for raw in sse_replay(t, session, from).await.split_terminator("\n\n") {
        let m = parse_message(&format!("{raw}\n\n"));
        if let Some(rest) = m.comments.iter().find_map(|c| c.strip_prefix(&format!("replay-exhausted {session} "))) {
            let (epoch, seq) = rest.split_once(':').unwrap();
            sse_markers.push((epoch.parse().unwrap(), seq.parse().unwrap()));
        } else if !m.data.is_empty() {
            sse_seqs.push(m.json()["seq"].as_u64().unwrap());
        }
    }
    assert_eq!((&sse_markers, &sse_seqs), (&markers, &seqs), "both bindings say the same");
    (markers, seqs)
}

/// An in-memory relay restarted in the middle of a session: the emitter
/// re-posts what it was not sure of and carries on, but what came before
/// is gone. A consumer that has only the session's first event is told;
/// one that has everything before what is held is not.
#[tokio::test]
async fn a_restart_that_lost_the_start_of_a_session_says_so() {
    let s = session_name("restart");
    let events: Vec<_> = (0..5).map(|i| event("progress.status", &s, 0, i)).collect();
    let before = TestRelay::start(Posture::Token).await;
    assert_eq!(before.post_events(&events[..3]).await.status(), 202);
    before.relay.shutdown().await;

    let t = TestRelay::start(Posture::Token).await;
    assert_eq!(t.post_events(&events[2..]).await.status(), 202);
    let from = |seq| json!([{"session": s, "epoch": 0, "seq": seq}]);
    assert_eq!(replayed(&t, &s, from(0)).await, (vec![(0, 2)], vec![2, 3, 4]), "seq 1 is not held");
    assert_eq!(replayed(&t, &s, from(1)).await, (vec![], vec![2, 3, 4]));
    // The conformance probe's case stays quiet: a session never held here.
    let never = session_name("never");
    assert_eq!(replayed(&t, &never, json!([{"session": never, "epoch": 0, "seq": 0}])).await, (vec![], vec![]));
    assert_eq!(t.relay.stats().sessions, 1, "asking about a session creates no state");
}

/// `earliest` in `replay-exhausted` is a position the relay holds: a
/// restarted relay that holds nothing of a session, or nothing after the
/// consumer's position, has no loss to name, and one that holds part of it
/// names exactly where its history resumes.
#[tokio::test]
async fn a_restarted_relay_names_only_losses_it_can_see() {
    let s = session_name("restart");
    let before = TestRelay::start(Posture::Token).await;
    let events: Vec<_> = (0..10).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(before.post_events(&events).await.status(), 202);
    before.relay.shutdown().await;

    // A fresh process: nothing of `s` survived, and the caught-up
    // consumer lost nothing.
    let t = TestRelay::start(Posture::Token).await;
    let from = |epoch, seq| json!([{"session": s, "epoch": epoch, "seq": seq}]);
    assert_eq!(replayed(&t, &s, from(0, 9)).await, (vec![], vec![]));
    assert_eq!(replayed(&t, &s, from(0, 5)).await, (vec![], vec![]), "nothing held: no earliest to name");

    // The emitter carries on after a gap the relay missed.
    let more: Vec<_> = (20..25).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(t.post_events(&more).await.status(), 202);
    assert_eq!(replayed(&t, &s, from(0, 9)).await, (vec![(0, 20)], vec![20, 21, 22, 23, 24]));
    // Ahead of everything held: nothing to send and nothing it lacks here.
    assert_eq!(replayed(&t, &s, from(0, 40)).await, (vec![], vec![]));
    assert_eq!(replayed(&t, &s, from(2, 0)).await, (vec![], vec![]));
    // Within what is held: served exactly, without a marker.
    assert_eq!(replayed(&t, &s, from(0, 22)).await, (vec![], vec![23, 24]));
    assert_eq!(replayed(&t, &s, from(0, 24)).await, (vec![], vec![]));
}

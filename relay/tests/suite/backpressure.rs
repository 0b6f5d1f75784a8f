//! Slow consumers (AEP-0003 §8.4): `debug`/`info` may be dropped toward
//! them; `notice`+ is delivered or the consumer is disconnected with
//! `closing` so it resumes exactly.

use crate::support;

use std::time::Duration;

use aep_engine::protocol::ids::Draft;
use aep_engine::Severity;
use serde_json::{json, Value};
use support::*;

/// Events big enough that a few thousand fill the loopback socket buffers.
fn heavy(s: &str, seq: u64, severity: Severity) -> String {
    event_with(Draft::new("progress.status").seq(seq).severity(severity).data(json!({"note": "x".repeat(8_000)})), s)
        .raw()
        .to_owned()
}

/// Posts heavy events until `done` says the relay reacted; returns the
/// number posted.
async fn flood_until(t: &TestRelay, s: &str, severity: Severity, done: impl Fn(&TestRelay) -> bool) -> u64 {
    let mut seq = 0;
    while seq < 20_000 {
        let lines: Vec<String> = (seq..seq + 10).map(|i| heavy(s, i, severity)).collect();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
        seq += 10;
        if done(t) {
            return seq;
        }
    }
    panic!("the relay never reacted to a stalled consumer");
}

#[tokio::test]
async fn a_stalled_socket_losing_notice_events_is_closed_with_its_positions() {
    for posture in POSTURES {
        let t = TestRelay::start_with(posture, |c| {
            c.send_queue = 16;
            c.max_batch = 16;
            c.buffer_depth = 100_000;
        })
        .await;
        let s = session_name("live-slow");
        let mut ws = t.consumer().await;
        assert_eq!(
            ws.subscribe(json!({"type": "subscribe", "id": "slow", "filter": {"session": s}})).await["type"],
            "subscribed"
        );
        let posted =
            flood_until(&t, &s, Severity::Notice, |t| t.relay.stats().counters.disconnected_for_backpressure > 0).await;

        // Now read: events in order without gaps, then `closing`, then 1013.
        let mut last = None;
        let closing = loop {
            let text = ws.recv_text(PROMPT).await.expect("frames, then closing");
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["type"] == "closing" {
                break v;
            }
            let seq = v["seq"].as_u64().unwrap();
            assert_eq!(seq, last.map_or(0, |l| l + 1), "notice events are never skipped");
            last = Some(seq);
        };
        assert_eq!(closing["reason"], "backpressure");
        let last = last.expect("some events were delivered before the disconnect");
        assert_eq!(
            closing["delivered"],
            json!([{"sub": "slow", "session": s, "epoch": 0, "seq": last}]),
            "{posture:?}"
        );
        assert!(matches!(ws.recv(PROMPT).await, Some(Incoming::Closed(Some(1013)))));

        // Resuming from the reported position continues exactly.
        let mut again = t.consumer().await;
        let from = json!([{"session": s, "epoch": 0, "seq": last}]);
        again.subscribe(json!({"type": "subscribe", "id": "resume", "filter": {"session": s}, "from": from})).await;
        let next: Value = serde_json::from_str(&again.recv_text(PROMPT).await.unwrap()).unwrap();
        assert_eq!(next["seq"], last + 1);
        assert!(posted > last);
    }
}

#[tokio::test]
async fn a_stalled_socket_loses_only_info_events_and_stays_connected() {
    let t = TestRelay::start_with(Posture::Open, |c| {
        c.send_queue = 16;
        c.max_batch = 16;
    })
    .await;
    let s = session_name("live-slow");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "slow", "filter": {"session": s}})).await;
    flood_until(&t, &s, Severity::Info, |t| t.relay.stats().counters.dropped_for_backpressure > 100).await;
    assert_eq!(t.relay.stats().counters.disconnected_for_backpressure, 0);

    let mut seqs = Vec::new();
    while let Some(text) = ws.recv_text(Duration::from_millis(500)).await {
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_ne!(v["type"], "closing");
        seqs.push(v["seq"].as_u64().unwrap());
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "what arrives is in order");
    ws.send(&json!({"type": "ping", "t": 1})).await;
    assert_eq!(ws.recv_json().await["type"], "pong", "still connected");
}

#[tokio::test]
async fn a_stalled_event_stream_is_ended_so_it_can_resume() {
    let t = TestRelay::start_with(Posture::Token, |c| {
        c.send_queue = 16;
        c.max_batch = 16;
    })
    .await;
    let s = session_name("live-slow");
    let mut sse = t
        .sse(&format!(
            "filter={}",
            serde_urlencoded::to_string([("f", json!({"session": s}).to_string())]).unwrap()[2..].to_owned()
        ))
        .await;
    flood_until(&t, &s, Severity::Warning, |t| t.relay.stats().counters.disconnected_for_backpressure > 0).await;
    let mut last_comment = None;
    while let Some(m) = sse.next(PROMPT).await {
        if m.is_comment_only() {
            last_comment = m.comments.first().cloned();
        }
    }
    assert!(sse.has_ended(), "the stream ends");
    assert!(last_comment.unwrap().starts_with("disconnected"));
}

/// A consumer that stops reading altogether cannot keep its connection:
/// once its queue overflows, the relay gives `closing` a bounded grace
/// period, then drops the socket and forgets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_never_reads_is_dropped_within_a_bounded_time() {
    let t = TestRelay::start_with(Posture::Token, |c| {
        c.send_queue = 16;
        c.max_batch = 16;
        c.close_grace = Duration::from_millis(500);
        c.drain_timeout = Duration::from_secs(3);
    })
    .await;
    let s = session_name("live-stalled");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "stalled", "filter": {"session": s}})).await;
    flood_until(&t, &s, Severity::Notice, |t| t.relay.stats().counters.disconnected_for_backpressure > 0).await;

    // Still not reading: the relay may not wait for this peer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while t.relay.stats().sockets > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the stalled socket is still registered after 3 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let health: Value = t.get("/healthz").send().await.unwrap().json().await.unwrap();
    assert_eq!(health["connections"], 0, "{health}");
    assert_eq!(health["subscribers"], 0, "{health}");
    // Its task has ended too: an orderly shutdown has nothing to wait for.
    assert_eq!(t.relay.shutdown().await, aep_relay::ShutdownOutcome::Drained);
    drop(ws);
}

/// Posts 100 KB events at `seqs`, `info` and `notice` in turn.
async fn post_alternating(t: &TestRelay, s: &str, seqs: std::ops::Range<u64>) {
    let note = "x".repeat(100_000);
    let lines: Vec<String> = seqs
        .map(|seq| {
            let severity = if seq % 2 == 0 { Severity::Info } else { Severity::Notice };
            event_with(Draft::new("progress.status").seq(seq).severity(severity).data(json!({"note": note})), s)
                .raw()
                .to_owned()
        })
        .collect();
    assert_eq!(t.post_lines(&lines).await.status(), 202);
}

/// Large events toward a consumer that reads nothing: the overflow cuts a
/// write in progress (here in the middle of a replay, where the writer
/// always has the next event at hand). `closing` may name only positions
/// written before it, or a consumer resuming from there silently loses
/// the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_names_only_positions_that_were_written() {
    let t = TestRelay::start_with(Posture::Token, |c| c.buffer_bytes = 32 << 20).await;
    let s = session_name("live-cut");
    // 20 MB to replay: far more than the socket takes.
    for from in (0..200).step_by(20) {
        post_alternating(&t, &s, from..from + 20).await;
    }
    let mut ws = t.consumer().await;
    let from = json!([{"session": s, "epoch": 0, "seq": 0}]);
    ws.subscribe(json!({"type": "subscribe", "id": "cut", "filter": {"session": s}, "from": from})).await;
    let mut next = 200;
    while t.relay.stats().counters.disconnected_for_backpressure == 0 {
        assert!(next < 1_000, "the relay never cut the stalled consumer");
        post_alternating(&t, &s, next..next + 20).await;
        next += 20;
    }

    // Read at once: a cut connection gets `closing` within a short grace.
    let mut last = None;
    let closing = loop {
        let text = ws.recv_text(PROMPT).await.expect("events, then closing");
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["type"] == "closing" {
            break v;
        }
        last = v["seq"].as_u64();
    };
    let last = last.expect("some events were written before the cut");
    assert_eq!(closing["delivered"], json!([{"sub": "cut", "session": s, "epoch": 0, "seq": last}]));
}

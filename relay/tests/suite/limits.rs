//! Per-connection resource limits: inbound frames are capped by type, the
//! queue toward a consumer is capped in bytes, and a filter's size and a
//! connection's subscriptions are bounded and refused in-band.

use crate::support;

use std::time::{Duration, Instant};

use aep_engine::protocol::ids::Draft;
use aep_engine::Severity;
use serde_json::{json, Value};
use support::*;

async fn an_oversized_ping_is_refused_not_echoed(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let mut ws = t.consumer().await;
    let big = "x".repeat(256 * 1024);
    ws.send(&json!({"type": "ping", "t": big})).await;
    let answer = ws.recv_json().await;
    assert_eq!(
        answer["type"],
        "error",
        "a 256 KiB ping is not answered with a 256 KiB pong: {}",
        &answer.to_string()[..80]
    );
    assert_eq!(answer["code"], "limit-exceeded");
    assert!(answer["detail"].as_str().unwrap().contains("ping"), "{answer}");
    // The connection carries on.
    ws.send(&json!({"type": "ping", "t": 7})).await;
    assert_eq!(ws.recv_json().await, json!({"type": "pong", "t": 7}));
}

async fn an_oversized_request_frame_is_refused_in_band(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let mut ws = t.consumer().await;
    let padding = "p".repeat(512 * 1024);
    let refused = ws.subscribe(json!({"type": "subscribe", "id": "big", "filter": {}, "x-pad": padding})).await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "limit-exceeded");
    assert_eq!(refused["id"], "big");
    assert_eq!(ws.subscribe(json!({"type": "subscribe", "id": "ok"})).await["type"], "subscribed");
}

/// A consumer that never reads is disconnected once its queue holds about
/// the configured bytes, not after 16 384 events of any size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_toward_a_stalled_consumer_is_bounded_in_bytes() {
    let t = TestRelay::start_with(Posture::Open, |c| c.buffer_depth = 4).await;
    let s = session_name("bytes");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "b", "filter": {"session": s}})).await;
    // Never read again. 100 KB events, 600 of them: 60 MB in all.
    let note = "y".repeat(100_000);
    let mut posted_bytes = 0usize;
    let mut seq = 0;
    while seq < 600 && t.relay.stats().counters.disconnected_for_backpressure == 0 {
        let lines: Vec<String> = (seq..seq + 10)
            .map(|i| {
                event_with(
                    Draft::new("progress.status").seq(i).severity(Severity::Notice).data(json!({"note": note})),
                    &s,
                )
                .raw()
                .to_owned()
            })
            .collect();
        posted_bytes += lines.iter().map(String::len).sum::<usize>();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
        seq += 10;
    }
    assert_eq!(
        t.relay.stats().counters.disconnected_for_backpressure,
        1,
        "after {posted_bytes} bytes toward a consumer that reads nothing, it is still queued for"
    );
    // The queue's default cap plus what loopback socket buffers absorb.
    assert!(posted_bytes < 40 * 1024 * 1024, "disconnected only after {posted_bytes} bytes");
}

/// The default bound on one filter's patterns.
const PATTERNS: usize = 256;

fn many_types(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("x.kind{i}.*")).collect()
}

async fn a_filter_with_too_many_patterns_is_refused_with_limit_exceeded(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let mut ws = t.consumer().await;
    let refused =
        ws.subscribe(json!({"type": "subscribe", "id": "huge", "filter": {"type": many_types(100_000)}})).await;
    assert_eq!(refused["type"], "error", "{}", &refused.to_string()[..60.min(refused.to_string().len())]);
    assert_eq!(refused["code"], "limit-exceeded");
    assert_eq!(refused["id"], "huge");
    // Under the frame cap, the filter's own bound names itself.
    let refused = ws.subscribe(json!({"type": "subscribe", "id": "wide", "filter": {"type": many_types(1_000)}})).await;
    assert_eq!(refused["code"], "limit-exceeded");
    assert!(refused["detail"].as_str().unwrap().contains("max-filter-patterns"), "{refused}");
    assert_eq!(t.relay.stats().subscriptions, 0);

    // The same bound on the SSE binding, before any stream starts.
    let filter = serde_urlencoded::to_string([("filter", json!({"type": many_types(1_000)}).to_string())]).unwrap();
    let response = t.get(&format!("/stream?{filter}")).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "limit-exceeded");
}

async fn a_connection_holds_a_bounded_number_of_filter_patterns(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let mut ws = t.consumer().await;
    let per_sub = PATTERNS;
    let mut accepted = 0;
    let refused = loop {
        let id = format!("s{accepted}");
        let reply = ws.subscribe(json!({"type": "subscribe", "id": id, "filter": {"type": many_types(per_sub)}})).await;
        if reply["type"] != "subscribed" {
            break reply;
        }
        accepted += 1;
        assert!(accepted < 64, "64 subscriptions of {per_sub} patterns each were all accepted");
    };
    assert_eq!(refused["code"], "limit-exceeded", "{refused}");
    assert!(refused["detail"].as_str().unwrap().contains("max-connection-patterns"), "{refused}");
    assert!(accepted >= 1);
    // Room made by an unsubscribe is usable again.
    assert_eq!(ws.subscribe(json!({"type": "unsubscribe", "id": "s0"})).await["type"], "unsubscribed");
    assert_eq!(
        ws.subscribe(json!({"type": "subscribe", "id": "small", "filter": {"type": ["a.b"]}})).await["type"],
        "subscribed"
    );
}

/// `/healthz` keeps answering while a large fan-out's filter matching
/// runs. How long a probe waits against the ingest is a number, measured
/// by `examples/bench_limits.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_while_a_heavy_fan_out_runs() {
    let t = TestRelay::start(Posture::Open).await;
    let per_sub = PATTERNS;
    let mut consumers = Vec::new();
    for c in 0..8 {
        let mut ws = t.consumer().await;
        for i in 0..8 {
            // Patterns that never match, so every one is tried.
            let types: Vec<String> = (0..per_sub).map(|k| format!("zz{c}x{i}y{k}.*")).collect();
            let reply =
                ws.subscribe(json!({"type": "subscribe", "id": format!("s{i}"), "filter": {"type": types}})).await;
            if reply["type"] != "subscribed" {
                break;
            }
        }
        consumers.push(ws);
    }
    let s = session_name("heavy");
    let lines: Vec<String> = (0..5_000).map(|i| event("progress.status", &s, 0, i).raw().to_owned()).collect();
    let started = Instant::now();
    let post = {
        let http = t.http.clone();
        let url = t.url("/events");
        let mut body = lines.join("\n");
        body.push('\n');
        tokio::spawn(async move {
            let r = post_ndjson(&http, &url, None, body).send().await.unwrap();
            assert_eq!(r.status(), 202);
            Instant::now()
        })
    };
    let (mut probes, mut answered_during) = (0, 0);
    while !post.is_finished() {
        let h = t.get("/healthz").send().await.unwrap();
        assert_eq!(h.status(), 200);
        if !post.is_finished() {
            answered_during += 1;
        }
        probes += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ingest = post.await.unwrap() - started;
    println!("ingest {ingest:?}, {probes} health probes, {answered_during} answered before it ended");
    assert!(
        answered_during >= 1,
        "no health probe was answered during the {ingest:?} ingest: {probes} waited behind it"
    );
    drop(consumers);
}

over_both_bindings!(
    an_oversized_ping_is_refused_not_echoed,
    an_oversized_request_frame_is_refused_in_band,
    a_filter_with_too_many_patterns_is_refused_with_limit_exceeded,
    a_connection_holds_a_bounded_number_of_filter_patterns,
);

//! Replay buffers are bounded in bytes (per session and in total), each
//! held event costs about its size, and an event larger than the
//! configured maximum is refused with a clear answer.

use crate::support;

use aep_engine::protocol::ids::Draft;
use serde_json::{json, Map, Value};
use support::*;

fn sized(s: &str, seq: u64, bytes: usize) -> String {
    event_with(Draft::new("progress.status").seq(seq).data(json!({"note": "n".repeat(bytes)})), s).raw().to_owned()
}

#[tokio::test]
async fn a_session_buffer_is_bounded_in_bytes_by_default() {
    let t = TestRelay::start(Posture::Open).await;
    let s = session_name("bytes");
    // 300 events of 100 KB: 30 MB, far under the default count bound.
    for batch in 0..30u64 {
        let lines: Vec<String> = (batch * 10..batch * 10 + 10).map(|i| sized(&s, i, 100_000)).collect();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
    }
    let held = t.relay.session_len(&s);
    let per_session = aep_relay::Config::default().buffer_bytes;
    assert!(held > 0);
    assert!(held * 100_000 <= per_session, "{held} events of 100 KB held, over {per_session} bytes");
    let stats = t.relay.stats();
    assert!(stats.buffered_bytes <= per_session, "{stats:?}");

    // A resume from before what was dropped says so.
    let from = json!([{"session": s, "epoch": 0, "seq": 0}]);
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "r", "filter": {"session": s}, "from": from})).await;
    let first = ws.recv_json().await;
    assert_eq!(first["type"], "replay-exhausted", "{}", &first.to_string()[..80]);
}

#[tokio::test]
async fn all_buffers_together_are_bounded_in_bytes() {
    let t = TestRelay::start_with(Posture::Open, |c| {
        c.max_event = 100_000;
        c.buffer_bytes = 200_000;
        c.total_buffer_bytes = 500_000;
    })
    .await;
    for n in 0..10 {
        let s = session_name(&format!("total{n}"));
        let lines: Vec<String> = (0..20).map(|i| sized(&s, i, 10_000)).collect();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
    }
    let stats = t.relay.stats();
    assert!(stats.buffered_bytes <= 500_000, "{stats:?}");
    assert!(stats.buffered_events >= 40, "the bound is used, not emptied: {stats:?}");
}

#[tokio::test]
async fn an_event_over_the_size_limit_is_refused_on_both_bindings() {
    let t = TestRelay::start_with(Posture::Open, |c| c.max_event = 64 * 1024).await;
    let s = session_name("big");
    let small = sized(&s, 0, 100);
    let big = sized(&s, 1, 100_000);
    let response = t.post_lines(&[small.clone(), big.clone()]).await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "event-too-large", "{body}");
    assert_eq!(body["line"], 1);
    assert_eq!(t.relay.session_len(&s), 0, "nothing of the batch was ingested");

    let mut ws = t.ws_hello("emitter", json!({"agent": AGENT}), json!({})).await.0;
    ws.send_text(&big).await;
    let refused = ws.recv_json().await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "limit-exceeded");
    assert!(refused["detail"].as_str().unwrap().contains("max-event"), "{refused}");
    ws.send_text(&small).await;
    ws.send(&json!({"type": "ping", "t": 1})).await;
    assert_eq!(ws.recv_json().await["type"], "pong");
    assert_eq!(t.relay.session_len(&s), 1);
}

extern "C" {
    /// glibc: hands freed heap pages back to the system, so RSS shows
    /// what is live rather than what ingest briefly needed.
    fn malloc_trim(pad: usize) -> i32;
}

fn rss_kb() -> u64 {
    // SAFETY: malloc_trim only releases free memory; any thread may call it.
    unsafe {
        malloc_trim(0);
    }
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Events with many small data fields, the shape whose parsed tree costs
/// most next to its text.
fn rich(s: &str, seq: u64) -> String {
    let mut data = Map::new();
    for k in 0..60 {
        data.insert(format!("field{k}"), json!({"v": k, "ok": true}));
    }
    event_with(Draft::new("progress.status").seq(seq).data(Value::Object(data)), s).raw().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_event_costs_about_its_size() {
    let t = TestRelay::start_with(Posture::Open, |c| {
        c.buffer_depth = 40_000;
        c.buffer_bytes = 1 << 30;
        c.total_buffer_bytes = 1 << 30;
    })
    .await;
    let s = session_name("rich");
    // Warm up allocator and connections.
    let lines: Vec<String> = (0..500).map(|i| rich(&s, i)).collect();
    t.post_lines(&lines).await;
    let before = rss_kb();
    let mut raw = 0usize;
    for batch in 0..10u64 {
        let lines: Vec<String> = (1_000 + batch * 1_000..2_000 + batch * 1_000).map(|i| rich(&s, i)).collect();
        raw += lines.iter().map(String::len).sum::<usize>();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
    }
    let grown = (rss_kb() - before) as f64 * 1024.0;
    let ratio = grown / raw as f64;
    println!("held {} events, {raw} bytes of text, RSS grew {grown} bytes: {ratio:.2}x", t.relay.session_len(&s));
    assert!(ratio < 3.0, "each held event costs {ratio:.2}x its size");
}

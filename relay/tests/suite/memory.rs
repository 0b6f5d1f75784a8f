//! Memory stays bounded under unbounded input: 200 000 events into one
//! session with a buffer of 1 000, with a live subscriber reading along.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::*;

const BUFFER: usize = 1_000;
const TOTAL: u64 = 200_000;
const BATCH: u64 = 2_000;
const WARM_UP: u64 = 20_000;
/// Growth allowed between warm-up and the end. Holding every event would
/// cost well over 100 MB; a bounded relay stays within a few.
const GROWTH_LIMIT_KB: u64 = 48 * 1024;

/// One event, formatted directly: building 200 000 through the draft
/// builder would measure the test, not the relay.
fn line(s: &str, seq: u64) -> String {
    format!(
        r#"{{"aep":"0.1","id":"{s}-{seq}","type":"progress.status","time":"2026-07-03T10:00:00.000Z","source":"aep://live-check/agent/aep-live-check/session/{s}","agent":"aep-live-check","session":"{s}","seq":{seq},"data":{{"phase":"working","note":"event number {seq}"}}}}"#
    )
}

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_thousand_events_keep_the_buffer_and_rss_bounded() {
    let t = TestRelay::start_with(Posture::Token, |c| c.buffer_depth = BUFFER).await;
    let s = session_name("live-memory");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "m", "filter": {"session": s}})).await;
    let reader = tokio::spawn(async move {
        let mut received = 0u64;
        while received < TOTAL {
            match ws.recv_text(Duration::from_secs(30)).await {
                Some(_) => received += 1,
                None => break,
            }
        }
        received
    });

    let mut warm_rss = 0;
    let mut seq = 0;
    while seq < TOTAL {
        let lines: Vec<String> = (seq..seq + BATCH).map(|i| line(&s, i)).collect();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
        seq += BATCH;
        assert!(t.relay.session_len(&s) <= BUFFER);
        if seq == WARM_UP {
            warm_rss = rss_kb();
        }
    }
    let received = reader.await.unwrap();
    let end_rss = rss_kb();
    let stats = t.relay.stats();
    assert_eq!(t.relay.session_len(&s), BUFFER);
    assert_eq!(stats.buffered_events, BUFFER);
    assert_eq!(stats.counters.events_stored, TOTAL);
    assert_eq!(received, TOTAL, "an attentive subscriber loses nothing");
    let growth = end_rss.saturating_sub(warm_rss);
    println!("RSS after warm-up {warm_rss} kB, at end {end_rss} kB, growth {growth} kB");
    assert!(growth < GROWTH_LIMIT_KB, "RSS grew by {growth} kB between {WARM_UP} and {TOTAL} events");
}

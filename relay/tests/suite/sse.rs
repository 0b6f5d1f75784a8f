//! The SSE binding (checks `ingest-fanout`, `resume`, `capture-downlevel`,
//! `replay-all`, plus `Last-Event-ID`, heartbeats and refusals), in both
//! postures.

use crate::support;

use std::time::Duration;

use aep_engine::protocol::ids::Draft;
use aep_engine::Capture;
use serde_json::{json, Value};
use support::*;

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

fn filter_session(s: &str) -> String {
    format!("filter={}", enc(&json!({ "session": s })))
}

#[tokio::test]
async fn ingest_fans_out_in_order_with_exact_framing() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let mut sse = t.sse_with(&filter_session(&s), |r| r.header("accept", "text/event-stream")).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let started = event("session.started", &s, 0, 0);
        let tool =
            event_with(Draft::new("tool.completed").seq(1).cause(started.id()).data(json!({"status": "success"})), &s);
        let ended = event("session.ended", &s, 0, 2);
        let other = event("session.started", &session_name("live"), 0, 0);
        let r = t.post_events(&[started.clone(), other, tool.clone(), ended.clone()]).await;
        assert_eq!(r.status(), 202);
        let got = sse.collect_data(Duration::from_millis(800)).await;
        assert_eq!(got.len(), 3, "{posture:?}: only session {s}: {got:?}");
        for (m, sent) in got.iter().zip([&started, &tool, &ended]) {
            assert_eq!(m.data, vec![sent.raw().to_owned()], "stored bytes, verbatim");
            assert_eq!(m.event.as_deref(), Some(sent.ty()));
            assert_eq!(m.id, Some(format!("{s}:0:{}", sent.seq().unwrap())));
            assert_eq!(
                m.raw,
                format!("event: {}\ndata: {}\nid: {s}:0:{}\n\n", sent.ty(), sent.raw(), sent.seq().unwrap())
            );
        }
    }
}

#[tokio::test]
async fn resume_delivers_strictly_after_the_position_then_live() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let events: Vec<_> = (0..3).map(|i| event("progress.status", &s, 0, i)).collect();
        assert_eq!(t.post_events(&events).await.status(), 202);

        let from = enc(&json!([{ "session": s, "epoch": 0, "seq": 0 }]));
        let mut sse = t.sse(&format!("{}&from={from}", filter_session(&s))).await;
        let got = sse.collect_data(Duration::from_millis(1500)).await;
        let ids: Vec<Value> = got.iter().map(|m| m.json()["id"].clone()).collect();
        assert_eq!(ids, vec![json!(events[1].id()), json!(events[2].id())], "{posture:?}");

        // Live continues on the same stream after the replay.
        let next = event("progress.status", &s, 0, 3);
        t.post_events(std::slice::from_ref(&next)).await;
        let m = sse.next_data(PROMPT).await.unwrap();
        assert_eq!(m.data[0], next.raw());
    }
}

#[tokio::test]
async fn last_event_id_resumes_and_from_takes_precedence() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live");
    let events: Vec<_> = (0..3).map(|i| event("progress.status", &s, 0, i)).collect();
    t.post_events(&events).await;

    let mut sse = t.sse_with("", |r| r.header("last-event-id", format!("{s}:0:0"))).await;
    let got = sse.collect_data(Duration::from_millis(500)).await;
    assert_eq!(got.iter().map(|m| m.data[0].clone()).collect::<Vec<_>>(), vec![events[1].raw(), events[2].raw()]);

    let from = enc(&json!([{ "session": s, "epoch": 0, "seq": 1 }]));
    let mut sse = t.sse_with(&format!("from={from}"), |r| r.header("last-event-id", format!("{s}:0:0"))).await;
    let got = sse.collect_data(Duration::from_millis(500)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data[0], events[2].raw());
}

/// A stream's `id:` comes back as `Last-Event-ID` on reconnect. HTTP strips
/// a header value's leading whitespace and carries UTF-8 as raw bytes, so
/// a session named with a leading space, or outside ASCII, must still be
/// found from the header the consumer sends.
#[tokio::test]
async fn last_event_id_resumes_sessions_whose_names_the_header_bends() {
    let t = TestRelay::start(Posture::Open).await;
    for s in [format!(" {}", session_name("live")), format!("\t {}", session_name("live")), session_name("café")] {
        // The name as it is cannot sit in a `source` URI.
        let events: Vec<_> = (0..3)
            .map(|i| Draft::new("progress.status").session(&s).seq(i).build(&sender(), fresh_id(), now()).unwrap())
            .collect();
        assert_eq!(t.post_events(&events).await.status(), 202);
        let mut sse = t.sse(&format!("live=0&from=all&{}", filter_session(&s))).await;
        let first = sse.next_data(PROMPT).await.unwrap();
        let id = first.id.clone().expect("a positioned event has an id");
        assert_eq!(id, format!("{s}:0:0"));
        let header = reqwest::header::HeaderValue::from_bytes(id.as_bytes()).unwrap();
        let mut again = t.sse_with("live=0", |r| r.header("last-event-id", header)).await;
        let got = again.collect_data(Duration::from_millis(500)).await;
        let raws: Vec<&str> = got.iter().map(|m| m.data[0].as_str()).collect();
        assert_eq!(raws, vec![events[1].raw(), events[2].raw()], "{s:?}");
    }
}

#[tokio::test]
async fn capture_ceiling_downlevels_at_fan_out() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let mut sse = t.sse(&format!("{}&capture=metadata", filter_session(&s))).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let canary = format!("LIVE-CHECK-CANARY {}", fresh_id());
        let e = event_with(
            Draft::new("run.started")
                .run("r1")
                .seq(0)
                .capture(Capture::Redacted)
                .data(json!({"trigger": "user", "prompt": canary})),
            &s,
        );
        assert_eq!(t.post_one(&e).await.status(), 202);
        let m = sse.next_data(PROMPT).await.unwrap();
        assert!(!m.raw.contains(&canary), "{posture:?}");
        let v = m.json();
        assert_eq!(v["capture"], "metadata");
        assert!(v["data"].get("prompt").is_none());
        assert_eq!(v["data"]["trigger"], "user");
        assert_eq!(v["id"], e.id());

        // Without a ceiling the stored bytes are served, canary included.
        let all = t.sse("live=0&from=all").await.body_until_end(PROMPT).await;
        assert!(all.contains(&canary));
    }
}

#[tokio::test]
async fn replay_all_ends_and_never_reports_exhaustion() {
    for posture in POSTURES {
        let t = TestRelay::start_with(posture, |c| c.buffer_depth = 2).await;
        let s1 = session_name("live-ra1");
        let s2 = session_name("live-ra2");
        let evicted = session_name("live-evicted");
        let flood: Vec<_> = (0..5).map(|i| event("progress.status", &evicted, 0, i)).collect();
        t.post_events(&flood).await;
        let batch = [
            event("session.started", &s1, 0, 0),
            event("progress.status", &s1, 0, 1),
            event("session.started", &s2, 0, 0),
        ];
        assert_eq!(t.post_events(&batch).await.status(), 202);
        t.post_events(&[Draft::new("agent.heartbeat").build(&sender(), fresh_id(), now()).unwrap()]).await;

        // No filter and no Accept header, as the checker sends it.
        let r = t.get("/stream?live=0&from=all").send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let body = tokio::time::timeout(PROMPT, r.text()).await.expect("live=0 ends").unwrap();
        assert!(!body.contains("replay-exhausted"), "{posture:?}: {body}");
        assert!(!body.contains("agent.heartbeat"), "agent.* is live-only");
        let seqs = |s: &str| -> Vec<u64> {
            body.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str::<Value>(d).unwrap())
                .filter(|v| v["session"] == s)
                .map(|v| v["seq"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(seqs(&s1), vec![0, 1]);
        assert_eq!(seqs(&s2), vec![0]);
        assert_eq!(seqs(&evicted), vec![3, 4], "held events of a partly evicted session");
    }
}

#[tokio::test]
async fn agent_events_are_live_only_and_carry_no_id() {
    let t = TestRelay::start(Posture::Open).await;
    let mut sse = t.sse(&format!("filter={}", enc(&json!({"type": ["agent.*"]})))).await;
    let hb = Draft::new("agent.heartbeat").build(&sender(), fresh_id(), now()).unwrap();
    t.post_events(std::slice::from_ref(&hb)).await;
    let m = sse.next_data(PROMPT).await.unwrap();
    assert_eq!(m.data[0], hb.raw());
    assert_eq!(m.id, None);
    assert_eq!(t.relay.stats().sessions, 0);
}

#[tokio::test]
async fn heartbeats_are_comments() {
    let t = TestRelay::start_with(Posture::Open, |c| c.heartbeat = Duration::from_millis(100)).await;
    let mut sse = t.sse("").await;
    let m = sse.next(PROMPT).await.unwrap();
    assert!(m.is_comment_only());
    assert_eq!(m.comments, vec!["ping"]);
}

#[tokio::test]
async fn bad_subscriptions_get_400_before_any_stream() {
    let t = TestRelay::start_with(Posture::Token, |c| c.max_from = 4).await;
    let many: Vec<Value> = (0..5).map(|i| json!({"session": format!("s{i}"), "seq": 0})).collect();
    for (query, code) in [
        ("filter=%7Bnot".to_owned(), "invalid-filter"),
        (format!("filter={}", enc(&json!({"seq": 1}))), "invalid-filter"),
        (format!("filter={}", enc(&json!({"type": "*"}))), "invalid-filter"),
        (format!("from={}", enc(&json!({}))), "invalid-filter"),
        (format!("from={}", enc(&json!([{"session": "s", "seq": -1}]))), "invalid-filter"),
        ("capture=most".to_owned(), "invalid-filter"),
        (format!("from={}", enc(&json!(many))), "limit-exceeded"),
    ] {
        let r = t.get(&format!("/stream?{query}")).send().await.unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], code, "{query}: {v}");
    }
}

#[tokio::test]
async fn unknown_sessions_replay_nothing_and_create_no_state() {
    let t = TestRelay::start(Posture::Open).await;
    let from = enc(&json!([{ "session": "never-seen", "epoch": 0, "seq": 0 }]));
    let body = t.sse(&format!("live=0&from={from}")).await.body_until_end(PROMPT).await;
    assert_eq!(body, "");
    assert_eq!(t.relay.stats().sessions, 0);
}

#[tokio::test]
async fn the_query_token_works_for_event_source_clients() {
    let t = TestRelay::start(Posture::Token).await;
    let r = t.http.get(t.url(&format!("/stream?live=0&access_token={TOKEN}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = t.http.get(t.url("/stream?live=0&access_token=wrong")).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_stream_that_goes_away_is_forgotten() {
    let t = TestRelay::start(Posture::Open).await;
    let sse = t.sse("").await;
    assert_eq!(t.relay.stats().streams, 1);
    drop(sse);
    // The relay notices on its next write: post something.
    let s = session_name("live");
    for i in 0..50 {
        t.post_events(&[event("progress.status", &s, 0, i)]).await;
        if t.relay.stats().streams == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the dropped stream is still registered");
}

//! Discovery and HTTP ingest (checks `discovery`, `version-gate`,
//! `reject-invalid`, plus 413/415/401, chunked bodies and `/healthz`), in
//! both postures.

use crate::support;

use futures_util::stream;
use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn discovery_document_in_both_postures() {
    for posture in POSTURES {
        let t = TestRelay::start_with(posture, |c| c.buffer_depth = 77).await;
        for path in ["/events", "/.well-known/aep"] {
            let r = t.get(path).send().await.unwrap();
            assert_eq!(r.status(), 200, "{posture:?} {path}");
            assert_eq!(r.headers()["content-type"], "application/json");
            let doc: Value = r.json().await.unwrap();
            assert!(doc["aep"].as_array().unwrap().contains(&json!("0.1")));
            assert!(doc["endpoints"]["events"].is_string() && doc["endpoints"]["stream"].is_string());
            assert_eq!(doc["endpoints"]["socket"], "/socket");
            let caps = &doc["capabilities"];
            assert_eq!(caps["replay"]["buffer"], 77, "the real per-session depth");
            assert_eq!(caps["replay"]["all"], true);
            assert_eq!(caps["roster"], json!({}));
            assert_eq!(caps["control"], json!({"accepts": []}));
            assert!(caps["filters"].as_array().unwrap().contains(&json!("attr-match")));
            assert_eq!(caps["capture"], json!(["none", "metadata", "redacted", "full"]));
        }
    }
}

#[tokio::test]
async fn a_token_relay_refuses_missing_and_wrong_tokens() {
    let t = TestRelay::start(Posture::Token).await;
    let bare = t.http.get(t.url("/events")).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(bare.headers()["www-authenticate"], "Bearer");
    let wrong = t.http.get(t.url("/events")).bearer_auth("not-the-token").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized");
    assert!(!body.to_string().contains(TOKEN));
    let by_query = t.http.get(t.url(&format!("/events?access_token={TOKEN}"))).send().await.unwrap();
    assert_eq!(by_query.status(), 200, "the query token is accepted on HTTP too");
    let post = t
        .http
        .post(t.url("/events"))
        .header("content-type", "application/json")
        .header("aep-version", "0.1")
        .body(event("session.started", "s", 0, 0).raw().to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 401);
    assert_eq!(t.relay.stats().counters.events_received, 0);
}

#[tokio::test]
async fn version_gate_answers_426_and_ingests_nothing() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let body = event("session.started", &s, 0, 0).raw().to_owned();
        for version in [Some("9.9"), None] {
            let mut r = t.post("/events").header("content-type", "application/json").body(body.clone());
            if let Some(v) = version {
                r = r.header("aep-version", v);
            }
            let r = r.send().await.unwrap();
            assert_eq!(r.status(), 426, "{posture:?} {version:?}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["versions"], json!(["0.1"]));
        }
        assert_eq!(t.relay.session_len(&s), 0);
        assert_eq!(t.relay.stats().counters.events_received, 0);
    }
}

#[tokio::test]
async fn invalid_events_are_rejected_whole_with_the_first_bad_line() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let mut missing_id: Value = serde_json::from_str(event("session.started", &s, 0, 0).raw()).unwrap();
        missing_id.as_object_mut().unwrap().remove("id");
        let r = t.post_body("application/json", missing_id.to_string()).await;
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "invalid-event");
        assert_eq!(v["line"], 0);
        assert!(v["detail"].as_str().unwrap().contains("id"), "{v}");

        let good = event("session.started", &s, 0, 0).raw().to_owned();
        let also_good = event("progress.status", &s, 0, 2).raw().to_owned();
        let r = t.post_lines(&[good, missing_id.to_string(), also_good]).await;
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["line"], 1);
        assert_eq!(t.relay.session_len(&s), 0, "nothing of the batch was ingested");
        assert_eq!(t.relay.stats().counters.events_received, 0);

        let not_json = t.post_lines(&["{not json".to_owned()]).await;
        assert_eq!(not_json.status(), 400);
    }
}

#[tokio::test]
async fn wrong_content_type_oversize_bodies_and_too_many_events() {
    let t = TestRelay::start_with(Posture::Token, |c| {
        c.max_body = 4096;
        c.max_batch = 3;
    })
    .await;
    let s = session_name("live");
    let r = t.post_body("text/plain", event("session.started", &s, 0, 0).raw().to_owned()).await;
    assert_eq!(r.status(), 415);

    let big = "x".repeat(5000);
    let r = t.post_body("application/json", big.clone()).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"], "payload-too-large");

    // The same, chunked: no Content-Length to refuse early on.
    let chunks: Vec<Result<String, std::io::Error>> = (0..10).map(|_| Ok("y".repeat(600))).collect();
    let r = t.post_body("application/x-ndjson", reqwest::Body::wrap_stream(stream::iter(chunks))).await;
    assert_eq!(r.status(), 413);

    let lines: Vec<String> = (0..4).map(|i| event("progress.status", &s, 0, i).raw().to_owned()).collect();
    let r = t.post_lines(&lines).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"], "too-many-events");
    assert_eq!(t.relay.session_len(&s), 0);
}

#[tokio::test]
async fn chunked_ndjson_is_accepted_in_order() {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await;
        let s = session_name("live");
        let events: Vec<_> = (0..3).map(|i| event("progress.status", &s, 0, i)).collect();
        let body = events.iter().map(|e| format!("{}\n", e.raw())).collect::<String>();
        // Split mid-line, as a streaming client may.
        let (a, b) = body.split_at(body.len() / 2 + 3);
        let chunks: Vec<Result<String, std::io::Error>> = vec![Ok(a.to_owned()), Ok(b.to_owned())];
        let r = t.post_body("application/x-ndjson", reqwest::Body::wrap_stream(stream::iter(chunks))).await;
        assert_eq!(r.status(), 202);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["accepted"], 3);
        assert_eq!(t.relay.session_len(&s), 3);
    }
}

#[tokio::test]
async fn single_json_posts_answer_exactly_202_and_duplicates_are_counted() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-behalf");
    let e = event("session.started", &s, 0, 0);
    assert_eq!(t.post_one(&e).await.status(), 202);
    let again = t.post_one(&e).await;
    assert_eq!(again.status(), 202);
    let v: Value = again.json().await.unwrap();
    assert_eq!(v["duplicates"], 1);
    assert_eq!(t.relay.session_len(&s), 1, "admission dedupes on (source, id)");
}

#[tokio::test]
async fn commands_are_refused_over_http() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live");
    let c = command("control.pause", &s, json!({}));
    let r = t.post_one(&c).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["detail"].as_str().unwrap().contains("/socket"));
}

#[tokio::test]
async fn responses_are_never_compressed() {
    let t = TestRelay::start(Posture::Open).await;
    let r = t.get("/events").header("accept-encoding", "gzip, br, deflate").send().await.unwrap();
    assert!(r.headers().get("content-encoding").is_none());
    let r = t.get("/stream?live=0").header("accept-encoding", "gzip").send().await.unwrap();
    assert!(r.headers().get("content-encoding").is_none());
}

#[tokio::test]
async fn healthz_shows_counts_only_when_authorized() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live");
    assert_eq!(t.post_events(&[event("session.started", &s, 0, 0)]).await.status(), 202);
    let bare: Value = t.http.get(t.url("/healthz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(bare, json!({"ok": true}));
    let full: Value = t.get("/healthz").send().await.unwrap().json().await.unwrap();
    assert_eq!(full["ok"], true);
    assert_eq!(full["sessions"], 1);
    assert!(full["uptime_s"].is_u64());

    let open = TestRelay::start(Posture::Open).await;
    let v: Value = open.get("/healthz").send().await.unwrap().json().await.unwrap();
    assert_eq!(v["sessions"], 0, "the open posture authorizes observation");
}

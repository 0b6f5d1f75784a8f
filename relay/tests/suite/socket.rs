//! The WebSocket binding (checks `hello-ws`, `subscribe-limits`,
//! `ignore-unknown`, `roster`, plus multiple subscriptions, the replay to
//! live seam, emitting over the socket, ping/pong and refusals), in both
//! postures.

use crate::support;

use std::time::Duration;

use aep_engine::protocol::ids::Draft;
use aep_engine::{Capture, Event};
use serde_json::{json, Value};
use support::*;

async fn expect_error_then_close(ws: &mut Ws, code_contains: &str) -> Value {
    let error = ws.recv_json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert!(error["code"].as_str().unwrap().contains(code_contains), "{error}");
    match ws.recv(PROMPT).await {
        Some(Incoming::Closed(_)) => {}
        other => panic!("expected a close after {error}, got {other:?}"),
    }
    error
}

async fn hello_comes_first_and_selects_one_version(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live");

        let mut ws = t.ws().await;
        ws.send_text(event("session.started", &s, 0, 0).raw()).await;
        expect_error_then_close(&mut ws, "hello").await;

        let mut ws = t.ws().await;
        ws.send(&json!({"type": "hello", "versions": ["9.9"], "role": "consumer"})).await;
        let error = expect_error_then_close(&mut ws, "version").await;
        assert_eq!(error["versions"], json!(["0.1"]));

        let mut ws = t.ws().await;
        assert!(ws.recv(Duration::from_millis(300)).await.is_none(), "{posture:?}: nothing before the client's hello");
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
        let hello = ws.recv_json().await;
        assert_eq!(hello["type"], "hello");
        assert_eq!(hello["versions"], json!(["0.1"]));
        assert!(hello.get("aep").is_none());
        assert_eq!(hello["capabilities"]["roster"], json!({}));
        assert_eq!(t.relay.session_len(&s), 0, "the refused first event was not ingested");
    }
}

async fn a_token_relay_refuses_anonymous_sockets(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let url = format!("ws://{}/socket", t.relay.local_addr());
    assert!(Ws::connect_over(&url, binding).await.is_err());
    assert!(Ws::connect_over(&format!("{url}?access_token=nope"), binding).await.is_err());
}

/// Two connections pipelining hello, a probe subscription and a follow-up.
async fn refused_subscriptions_are_in_band_and_the_connection_survives(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let hello = json!({"type": "hello", "versions": ["0.1"], "role": "consumer",
            "identity": {"agent": AGENT, "instance": "live-check"}, "capabilities": {}});
        let positions: Vec<Value> =
            (0..1024).map(|i| json!({"session": format!("live-sub-cap-x-{i}"), "epoch": 0, "seq": 0})).collect();
        for (id, from, allowed) in [
            ("sub-cap", json!(positions), vec!["limit-exceeded", "subscribed"]),
            ("sub-malformed", json!({}), vec!["invalid-filter"]),
        ] {
            let mut ws = t.ws().await;
            ws.send(&hello).await;
            ws.send(&json!({"type": "subscribe", "id": id, "filter": {"type": ["agent.*"]}, "from": from})).await;
            ws.send(&json!({"type": "subscribe", "id": format!("{id}-follow"), "filter": {"type": ["agent.*"]}})).await;
            assert_eq!(ws.recv_json().await["type"], "hello");
            let answer = ws.recv_json().await;
            assert_eq!(answer["id"], id, "{answer}");
            let code = if answer["type"] == "subscribed" { "subscribed" } else { answer["code"].as_str().unwrap() };
            assert!(allowed.contains(&code), "{posture:?} {id}: {answer}");
            assert!(answer.get("aep").is_none());
            let follow = ws.recv_json().await;
            assert_eq!(follow, json!({"type": "subscribed", "id": format!("{id}-follow")}));
        }
        assert_eq!(t.relay.stats().sessions, 0, "unknown sessions in `from` create no state");
    }
}

async fn unknown_frames_and_capabilities_are_ignored(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let mut ws = t.ws().await;
        let id = format!("sub-ignore-{}", fresh_id());
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer",
            "capabilities": {"futurecap": {"enabled": true}}}))
            .await;
        ws.send(&json!({"type": "zigzag", "note": "from the future"})).await;
        ws.send(&json!({"type": "subscribe", "id": id, "filter": {"type": ["agent.*"]}})).await;
        assert_eq!(ws.recv_json().await["type"], "hello");
        assert_eq!(ws.recv_json().await, json!({"type": "subscribed", "id": id}), "{posture:?}: no error in between");
    }
}

async fn several_subscriptions_share_a_connection_without_duplicates(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live");
    let mut ws = t.consumer().await;
    assert_eq!(
        ws.subscribe(json!({"type": "subscribe", "id": "a", "filter": {"session": s}})).await["type"],
        "subscribed"
    );
    assert_eq!(
        ws.subscribe(json!({"type": "subscribe", "id": "b", "filter": {"type": "progress.*"}})).await["type"],
        "subscribed"
    );
    let dup = ws.subscribe(json!({"type": "subscribe", "id": "a"})).await;
    assert_eq!(
        (dup["type"].as_str(), dup["code"].as_str(), dup["id"].as_str()),
        (Some("error"), Some("invalid-filter"), Some("a"))
    );

    let both = event("progress.status", &s, 0, 0);
    let only_a = event("session.started", &s, 0, 1);
    t.post_events(&[both.clone(), only_a.clone()]).await;
    assert_eq!(ws.recv_text(PROMPT).await.unwrap(), both.raw(), "matched twice, delivered once");
    assert_eq!(ws.recv_text(PROMPT).await.unwrap(), only_a.raw());

    ws.send(&json!({"type": "unsubscribe", "id": "a"})).await;
    assert_eq!(ws.recv_json().await, json!({"type": "unsubscribed", "id": "a"}));
    t.post_events(&[event("session.ended", &s, 0, 2)]).await;
    assert!(ws.recv_json_within(Duration::from_millis(300)).await.is_none());
}

async fn the_subscription_limit_is_in_band(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.max_subscriptions = 2).await.over(binding);
    let mut ws = t.consumer().await;
    for id in ["a", "b"] {
        assert_eq!(ws.subscribe(json!({"type": "subscribe", "id": id})).await["type"], "subscribed");
    }
    let refused = ws.subscribe(json!({"type": "subscribe", "id": "c"})).await;
    assert_eq!(refused["code"], "limit-exceeded");
    assert_eq!(refused["id"], "c");
}

async fn replay_then_live_loses_nothing_and_repeats_nothing(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start_with(posture, |c| c.buffer_depth = 5_000).await.over(binding);
        let s = session_name("live");
        const TOTAL: u64 = 1_500;
        let head: Vec<_> = (0..100).map(|i| event("progress.status", &s, 0, i)).collect();
        t.post_events(&head).await;
        let publisher = {
            let http = t.http.clone();
            let url = t.url("/events");
            let s = s.clone();
            let posture = t.posture;
            tokio::spawn(async move {
                for chunk in (100..TOTAL).collect::<Vec<_>>().chunks(20) {
                    let events: Vec<Event> = chunk.iter().map(|i| event("progress.status", &s, 0, *i)).collect();
                    let token = (posture == Posture::Token).then_some(TOKEN);
                    let r = post_ndjson(&http, &url, token, ndjson(&events));
                    assert_eq!(r.send().await.unwrap().status(), 202);
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut ws = t.consumer().await;
        let ok = ws
            .subscribe(json!({"type": "subscribe", "id": "seam", "filter": {"session": s}, "from": [{"session": s, "epoch": 0, "seq": 49}]}))
            .await;
        assert_eq!(ok["type"], "subscribed");
        let mut seqs = Vec::new();
        while seqs.last() != Some(&(TOTAL - 1)) {
            let v = ws.recv_json().await;
            seqs.push(v["seq"].as_u64().unwrap());
        }
        publisher.await.unwrap();
        assert_eq!(seqs, (50..TOTAL).collect::<Vec<_>>(), "{posture:?}");
    }
}

async fn replay_all_over_the_socket(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.buffer_depth = 2).await.over(binding);
    let s = session_name("live-ra1");
    let events: Vec<_> = (0..4).map(|i| event("progress.status", &s, 0, i)).collect();
    t.post_events(&events).await;
    let mut ws = t.consumer().await;
    assert_eq!(ws.subscribe(json!({"type": "subscribe", "id": "all", "from": "all"})).await["type"], "subscribed");
    let got = ws.collect(Duration::from_millis(400)).await;
    assert!(got.iter().all(|f| f["type"] != "replay-exhausted"), "{got:?}");
    assert_eq!(got.iter().map(|v| v["seq"].as_u64().unwrap()).collect::<Vec<_>>(), vec![2, 3]);
}

/// A run opening at capture `full` whose prompt is `prompt`.
fn full_run(s: &str, prompt: &str) -> Event {
    event_with(
        Draft::new("run.started")
            .run("r")
            .seq(0)
            .capture(Capture::Full)
            .data(json!({"trigger": "user", "prompt": prompt})),
        s,
    )
}

async fn capture_ceiling_per_subscription(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "low", "filter": {"session": s}, "capture": "none"})).await;
    let e = full_run(&s, "SECRET");
    t.post_one(&e).await;
    let v = ws.recv_json().await;
    assert_eq!(v["capture"], "none");
    assert!(v.get("data").is_none());
    assert_eq!(v["id"], e.id());
}

async fn emitters_publish_over_the_socket_and_claim_sessions(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live");
        let mut sse = t.sse("").await;
        let (mut emitter, _) =
            t.ws_hello("emitter", json!({"agent": "some-emitter"}), json!({"emits": ["session"]})).await;
        let started = event("session.started", &s, 0, 0);
        emitter.send_text(started.raw()).await;
        let m = sse.next_data(PROMPT).await.unwrap();
        assert_eq!(m.data[0], started.raw(), "{posture:?}");
        assert_eq!(t.relay.session_len(&s), 1);
        assert_eq!(t.relay.stats().claims, 1);
        // A pretty-printed event is stored on one line, and served so.
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<Value>(event("progress.status", &s, 0, 1).raw()).unwrap(),
        )
        .unwrap();
        emitter.send_text(&pretty).await;
        let m = sse.next_data(PROMPT).await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&m.data[0]).unwrap(), serde_json::from_str::<Value>(&pretty).unwrap());
        emitter.close().await;
        for _ in 0..100 {
            if t.relay.stats().claims == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(t.relay.stats().claims, 0, "claims end with the connection");
    }
}

async fn bad_frames_are_answered_and_the_connection_carries_on(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let mut ws = t.consumer().await;
    ws.send_binary(vec![1, 2, 3]).await;
    assert_eq!(ws.recv_json().await["code"], "binary-unsupported");
    ws.send_text("{not json").await;
    assert_eq!(ws.recv_json().await["code"], "invalid-frame");
    ws.send(&json!({"type": "subscribe", "filter": {}})).await;
    assert_eq!(ws.recv_json().await["type"], "error", "a subscribe without id");
    let mut bad: Value = serde_json::from_str(event("progress.status", "s", 0, 0).raw()).unwrap();
    bad["severity"] = json!("loud");
    ws.send(&bad).await;
    let error = ws.recv_json().await;
    assert_eq!(error["code"], "invalid-event");
    assert_eq!(error["cause"], bad["id"]);
    assert_eq!(t.relay.session_len("s"), 0);
    ws.send(&json!({"type": "ping", "t": 42})).await;
    assert_eq!(ws.recv_json().await, json!({"type": "pong", "t": 42}));
}

/// A refused subscribe is answered from the closed set of AEP-0003 §6.5,
/// even when it has no usable id to echo.
async fn a_subscribe_without_an_id_is_refused_as_an_invalid_filter(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let mut ws = t.consumer().await;
        for frame in [
            json!({"type": "subscribe", "filter": {}}),
            json!({"type": "subscribe", "id": "", "filter": {}}),
            json!({"type": "subscribe", "id": 7, "filter": {}}),
        ] {
            ws.send(&frame).await;
            let error = ws.recv_json().await;
            let answer = (&error["type"], &error["code"]);
            assert_eq!(answer, (&json!("error"), &json!("invalid-filter")), "{frame}: {error}");
            assert!(error.get("id").is_none(), "no id to echo: {error}");
        }
        assert_eq!(ws.subscribe(json!({"type": "subscribe", "id": "after"})).await["type"], "subscribed");
    }
}

async fn the_relay_pings_idle_sockets(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.heartbeat = Duration::from_millis(100)).await.over(binding);
    let mut ws = t.consumer().await;
    let text = ws.recv_text_raw().await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "ping");
    assert!(v["t"].is_u64());
}

async fn roster_lists_each_live_claim_with_verbatim_declarations(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live-roster");
        let control = json!({"accepts": ["control.attention.respond"], "ack_window_ms": 10000});
        let (mut claimant, _) = t
            .ws_hello(
                "emitter",
                json!({"agent": "aep-live-check-roster", "instance": "live-check"}),
                json!({"emits": ["session"], "control": control}),
            )
            .await;
        claimant.send_text(event("session.started", &s, 0, 0).raw()).await;
        let (mut second, _) = t.ws_hello("both", json!({"agent": "other", "instance": "two"}), json!({})).await;
        // Its own position: another event at 0:0 would be refused.
        second.send_text(event("session.started", &s, 1, 0).raw()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;

        let mut consumer = t.consumer().await;
        let id = format!("roster-{}", fresh_id());
        consumer.send(&json!({"type": "roster", "id": id})).await;
        let reply = consumer.recv_json().await;
        assert_eq!(reply["type"], "roster");
        assert_eq!(reply["id"], id);
        let entries: Vec<&Value> = reply["entries"].as_array().unwrap().iter().filter(|e| e["session"] == s).collect();
        assert_eq!(entries.len(), 2, "{posture:?}: one entry per claim, never merged: {reply}");
        let first = entries.iter().find(|e| e["agent"] == "aep-live-check-roster").unwrap();
        assert_eq!(first["control"], control, "declared control, verbatim");
        assert_eq!(first["instance"], "live-check");
        assert_eq!(first["emits"], json!(["session"]));
        let other = entries.iter().find(|e| e["agent"] == "other").unwrap();
        assert!(other.get("control").is_none(), "nothing synthesized");

        let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "aep-live-check-roster-b"}), json!({})).await;
        let deny = format!("roster-deny-{}", fresh_id());
        emitter.send(&json!({"type": "roster", "id": deny})).await;
        let refused = emitter.recv_json().await;
        assert_eq!((refused["type"].as_str(), refused["code"].as_str()), (Some("error"), Some("unauthorized")));
        assert_eq!(refused["id"], deny);
        emitter.send(&json!({"type": "ping"})).await;
        assert_eq!(emitter.recv_json().await["type"], "pong", "the refused connection survives");

        second.close().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        consumer.send(&json!({"type": "roster", "id": "again"})).await;
        let reply = consumer.recv_json().await;
        let left: Vec<&Value> = reply["entries"].as_array().unwrap().iter().filter(|e| e["session"] == s).collect();
        assert_eq!(left.len(), 1, "a closed connection's claims are dropped");
    }
}

async fn a_silent_new_socket_is_told_to_say_hello(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.hello_timeout = Duration::from_millis(200)).await.over(binding);
    let mut ws = t.ws().await;
    let error = expect_error_then_close(&mut ws, "hello").await;
    assert!(error["detail"].as_str().unwrap().contains("no hello"));
}

async fn an_idle_peer_is_closed_in_order(binding: Binding) {
    let t = TestRelay::start_with(Posture::Token, |c| c.idle_timeout = Duration::from_millis(300)).await.over(binding);
    let mut ws = t.consumer().await;
    let closing = ws.recv_json().await;
    assert_eq!(closing["type"], "closing");
    assert_eq!(closing["reason"], "idle-timeout");
    assert!(matches!(ws.recv(PROMPT).await, Some(Incoming::Closed(Some(1001)))));
}

async fn an_oversize_message_ends_the_connection_and_ingests_nothing(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.max_body = 1024).await.over(binding);
    let s = session_name("live");
    let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "big"}), json!({})).await;
    let big = event_with(Draft::new("progress.status").seq(0).data(json!({"note": "x".repeat(4096)})), &s);
    emitter.send_text(big.raw()).await;
    let closing = emitter.recv_json().await;
    assert_eq!(closing["type"], "closing", "positions first, for a peer that also consumed");
    assert_eq!(closing["reason"], "message-too-big");
    assert!(matches!(emitter.recv(PROMPT).await, Some(Incoming::Closed(Some(1009)))));
    assert_eq!(t.relay.session_len(&s), 0);
    // The relay itself carries on.
    assert_eq!(t.get("/events").send().await.unwrap().status(), 200);
}

async fn an_oversize_message_is_closed_with_1009_and_a_reason(binding: Binding) {
    let t = TestRelay::start_with(Posture::Open, |c| c.max_body = 1024).await.over(binding);
    let s = session_name("live");
    let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "big"}), json!({})).await;
    let big = event_with(Draft::new("progress.status").seq(0).data(json!({"note": "x".repeat(4096)})), &s);
    emitter.send_text(big.raw()).await;
    let (code, reason) = emitter.recv_close_frame(PROMPT).await.expect("a close frame, not a reset");
    assert_eq!(code, 1009, "{reason}");
    assert!(reason.contains("1024"), "the reason names the limit: {reason}");
    assert_eq!(t.relay.session_len(&s), 0);
}

/// Two subscriptions on one connection with different ceilings: each
/// ceiling holds for what it receives (AEP-0003 §6.4). The event comes once
/// per distinct form it takes, widest first, so the uncapped subscription
/// still gets the stored bytes and the `metadata` one never gets content;
/// subscriptions whose ceilings yield the same bytes still share one copy.
async fn overlapping_subscriptions_each_keep_their_ceiling(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "uncapped", "filter": {"session": s}})).await;
    ws.subscribe(json!({"type": "subscribe", "id": "meta", "filter": {"session": s}, "capture": "metadata"})).await;
    ws.subscribe(json!({"type": "subscribe", "id": "meta-2", "filter": {"session": s}, "capture": "metadata"})).await;
    let full = full_run(&s, "SECRET-PROMPT");
    let already_metadata = event_with(
        Draft::new("run.started").run("r2").seq(1).capture(Capture::Metadata).data(json!({"trigger": "user"})),
        &s,
    );
    t.post_events(&[full.clone(), already_metadata.clone()]).await;
    let frames: Vec<String> = {
        let mut out = Vec::new();
        while let Some(f) = ws.recv_text(Duration::from_millis(500)).await {
            out.push(f);
        }
        out
    };
    assert_eq!(frames.len(), 3, "the full event once per distinct form, the metadata one once: {frames:#?}");
    assert_eq!(frames[0], full.raw(), "the uncapped subscription gets the stored bytes");
    let low: Value = serde_json::from_str(&frames[1]).unwrap();
    assert_eq!((low["id"].as_str(), low["capture"].as_str()), (Some(full.id()), Some("metadata")));
    assert!(!frames[1].contains("SECRET-PROMPT"), "the metadata ceiling holds");
    assert_eq!(frames[2], already_metadata.raw(), "one copy when every ceiling yields the same bytes");
}

/// A `full` event under a `redacted` ceiling lands on `metadata`
/// (AEP-0001 §8.2(e)): the `metadata` and `redacted` subscriptions of one
/// connection then take the same form, and share one copy of it.
async fn ceilings_landing_on_one_form_share_one_copy(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live");
    let mut ws = t.consumer().await;
    ws.subscribe(json!({"type": "subscribe", "id": "meta", "filter": {"session": s}, "capture": "metadata"})).await;
    ws.subscribe(json!({"type": "subscribe", "id": "red", "filter": {"session": s}, "capture": "redacted"})).await;
    let full = full_run(&s, "SECRET-PROMPT");
    t.post_one(&full).await;
    let frames = ws.collect(Duration::from_millis(500)).await;
    assert_eq!(frames.len(), 1, "one form, one copy: {frames:#?}");
    assert_eq!((frames[0]["id"].as_str(), frames[0]["capture"].as_str()), (Some(full.id()), Some("metadata")));
}

/// A `hello` must declare a defined role, and an emitting one its agent
/// (AEP-0003 §4 rules 2 and 3): anything else is refused and closed, as
/// any first frame that is not an acceptable `hello`.
async fn a_hello_with_an_unknown_role_or_an_emitter_without_agent_is_refused(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        for (role, identity) in [
            ("emitter", json!({"instance": "x"})),
            ("emitter", json!({"agent": ""})),
            ("both", json!(null)),
            ("admin", json!({"agent": AGENT})),
        ] {
            let mut ws = t.ws().await;
            ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": identity})).await;
            let reply = ws.recv_json().await;
            let answer = (&reply["type"], &reply["code"]);
            assert_eq!(answer, (&json!("error"), &json!("hello-required")), "{role} {identity}: {reply}");
            assert!(reply["detail"].is_string());
            assert_eq!(ws.recv_close_frame(PROMPT).await.map(|(code, _)| code), Some(1002), "{role} {identity}");
        }
        let (_, reply) = t.ws_hello("both", json!({"agent": AGENT}), json!({})).await;
        assert_eq!(reply["versions"], json!(["0.1"]));
    }
}

over_both_bindings!(
    hello_comes_first_and_selects_one_version,
    a_token_relay_refuses_anonymous_sockets,
    refused_subscriptions_are_in_band_and_the_connection_survives,
    unknown_frames_and_capabilities_are_ignored,
    several_subscriptions_share_a_connection_without_duplicates,
    the_subscription_limit_is_in_band,
    replay_then_live_loses_nothing_and_repeats_nothing,
    replay_all_over_the_socket,
    capture_ceiling_per_subscription,
    emitters_publish_over_the_socket_and_claim_sessions,
    bad_frames_are_answered_and_the_connection_carries_on,
    a_subscribe_without_an_id_is_refused_as_an_invalid_filter,
    the_relay_pings_idle_sockets,
    roster_lists_each_live_claim_with_verbatim_declarations,
    a_silent_new_socket_is_told_to_say_hello,
    an_idle_peer_is_closed_in_order,
    an_oversize_message_ends_the_connection_and_ingests_nothing,
    an_oversize_message_is_closed_with_1009_and_a_reason,
    overlapping_subscriptions_each_keep_their_ceiling,
    ceilings_landing_on_one_form_share_one_copy,
    a_hello_with_an_unknown_role_or_an_emitter_without_agent_is_refused,
);

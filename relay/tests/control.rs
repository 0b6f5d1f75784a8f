//! Command routing (checks `control-auth-gate`, `control-behalf-refusal`,
//! `control-ack`, `control-nack-unsupported`, `control-dedupe`,
//! `control-cancel`, plus `ambiguous`, claim release and the audit
//! fan-out). The auth gate is posture A; the routed checks are posture B.

mod support;

use std::time::Duration;

use aep_client::protocol::ids::Draft;
use aep_client::Event;
use serde_json::{json, Value};
use support::target::TestTarget;
use support::*;

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

async fn watch(t: &TestRelay, s: &str) -> Sse {
    let sse = t.sse(&format!("filter={}", enc(&json!({ "session": s })))).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    sse
}

/// Acks on the stream whose `cause` is `id`, as delivered (bytes).
fn acks_for(messages: &[SseMessage], id: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| {
            let v = m.json();
            (v["type"] == "control.accepted" || v["type"] == "control.rejected") && v["cause"] == id
        })
        .map(|m| m.data[0].clone())
        .collect()
}

#[tokio::test]
async fn without_a_token_no_command_is_ever_routed() {
    let t = TestRelay::start(Posture::Open).await;
    let s = session_name("live-auth");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.attention.respond")
        .session(&s)
        .subject(fresh_id())
        .capture(aep_client::Capture::Metadata)
        .data(json!({"answer": {"option": "live-check-probe"}}))
        .build(&sender_identity(), fresh_id(), now())
        .unwrap();
    sender.send_text(cmd.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!(
        refusal,
        json!({"type": "error", "cause": cmd.id(), "code": "unauthorized", "detail": refusal["detail"]})
    );
    let seen = sse.collect_data(Duration::from_millis(1000)).await;
    assert!(seen.iter().all(|m| !m.raw.contains(cmd.id())), "not fanned out, not acked: {seen:?}");
    assert!(!target.saw(cmd.id()), "never forwarded");

    // The authentication gate comes before validity.
    let mut broken: Value = serde_json::from_str(cmd.raw()).unwrap();
    broken["id"] = json!("broken-1");
    broken["seq"] = json!(3);
    sender.send(&broken).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("unauthorized"), Some("broken-1")));
    let body = t.sse("live=0&from=all").await.body_until_end(PROMPT).await;
    assert!(!body.contains(cmd.id()), "never stored");
    target.stop().await;
}

fn sender_identity() -> aep_client::protocol::ids::Identity {
    sender()
}

#[tokio::test]
async fn no_claimant_is_refused_on_behalf_and_never_enters_history() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-behalf");
    let started = event("session.started", &s, 0, 0);
    let run = event_with(Draft::new("run.started").run("r-behalf").seq(1), &s);
    assert_eq!(t.post_one(&started).await.status(), 202);
    assert_eq!(t.post_one(&run).await.status(), 202);
    let mut sender = t.consumer().await;
    let cmd = command("control.pause", &s, json!({"reason": "live-check"}));
    sender.send_text(cmd.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!(refusal["type"], "error");
    assert_eq!(refusal["cause"], cmd.id());
    assert_eq!(refusal["code"], "no-route");
    assert!(refusal.get("seq").is_none() && refusal.get("aep").is_none());

    let from = enc(&json!([{ "session": s, "epoch": 0, "seq": 0 }]));
    let mut replay = t.sse(&format!("filter={}&from={from}", enc(&json!({ "session": s })))).await;
    let got = replay.collect_data(Duration::from_millis(1500)).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].data[0], run.raw());
}

#[tokio::test]
async fn a_routed_command_reaches_exactly_one_target_byte_for_byte_and_its_ack_fans_out() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond", "control.cancel"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    // Key order and spacing of the sender's own serialization are kept.
    let cmd = format!(
        r#"{{"type":"control.attention.respond", "aep":"0.1","id":"{}","time":"{}","source":"aep://live-check/agent/aep-live-check","agent":"aep-live-check","session":"{s}","subject":"{}","data":{{"answer":{{"option":"allow"}}}}}}"#,
        fresh_id(),
        now(),
        target.attention
    );
    let cmd_event = Event::parse(&cmd).unwrap();
    sender.send_text(&cmd).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, cmd_event.id());
    assert_eq!(acks.len(), 1, "{messages:?}");
    let ack = Event::parse(&acks[0]).unwrap();
    assert_eq!(ack.ty(), "control.accepted");
    assert!(ack.seq().is_some(), "acks are sequenced events of the target's session");
    let forwarded: Vec<String> = target.frames().into_iter().filter(|f| f.contains(cmd_event.id())).collect();
    assert_eq!(forwarded, vec![cmd.clone()], "forwarded once, byte-identically");
    assert!(messages.iter().any(|m| m.data[0] == cmd), "subscribers see the command (audit)");
    assert!(sender.recv_json_within(Duration::from_millis(200)).await.is_none(), "no refusal");

    // The command is shown but never buffered; the ack is.
    let body = t.sse("live=0&from=all").await.body_until_end(PROMPT).await;
    assert!(!body.contains(&format!("\"id\":\"{}\"", cmd_event.id())));
    assert!(body.contains(ack.raw()));
    assert_eq!(t.relay.stats().counters.commands_routed, 1);
    target.stop().await;
}

#[tokio::test]
async fn an_undeclared_command_is_refused_on_the_targets_behalf() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = command("control.pause", &s, json!({}));
    sender.send_text(cmd.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("unsupported"), Some(cmd.id())));
    let messages = sse.collect_data(Duration::from_millis(800)).await;
    assert!(acks_for(&messages, cmd.id()).is_empty());
    assert!(!target.saw(cmd.id()));
    target.stop().await;
}

#[tokio::test]
async fn a_retransmit_is_forwarded_and_the_byte_identical_re_ack_traverses() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.attention.respond")
        .session(&s)
        .subject(target.attention.clone())
        .data(json!({"answer": {"option": "allow"}}))
        .build(&sender_identity(), fresh_id(), now())
        .unwrap();
    sender.send_text(cmd.raw()).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    sender.send_text(cmd.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, cmd.id());
    assert_eq!(acks.len(), 2, "the re-ack reaches subscribers unchanged: {messages:?}");
    assert_eq!(acks[0], acks[1], "exactly one distinct ack");
    assert_eq!(target.frames().iter().filter(|f| f.contains(cmd.id())).count(), 2);
    let stats = t.relay.stats();
    assert_eq!(stats.counters.duplicates, 1, "buffer admission dedupes the re-ack");
    target.stop().await;
}

#[tokio::test]
async fn cancel_is_acked_once_and_its_outcome_follows() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond", "control.cancel"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.cancel")
        .session(&s)
        .run(target.run.clone())
        .capture(aep_client::Capture::Redacted)
        .data(json!({"scope": "run", "reason": "live-check"}))
        .build(&sender_identity(), fresh_id(), now())
        .unwrap();
    sender.send_text(cmd.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, cmd.id());
    assert_eq!(acks.len(), 1);
    assert_eq!(Event::parse(&acks[0]).unwrap().ty(), "control.accepted");
    let cancelled: Vec<Value> = messages
        .iter()
        .map(SseMessage::json)
        .filter(|v| v["type"] == "run.cancelled" && v["run"] == target.run.as_str() && v["cause"] == cmd.id())
        .collect();
    assert_eq!(cancelled.len(), 1, "{messages:?}");
    target.stop().await;
}

#[tokio::test]
async fn two_claimants_are_ambiguous_until_one_leaves() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let first = TestTarget::start(&t, &s, &["control.pause"]).await;
    let second = TestTarget::start(&t, &s, &["control.pause"]).await;
    let mut sender = t.consumer().await;
    let cmd = command("control.pause", &s, json!({}));
    sender.send_text(cmd.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("ambiguous"), Some(cmd.id())));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!first.saw(cmd.id()) && !second.saw(cmd.id()), "never guess, never broadcast");

    second.stop().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let retry = command("control.pause", &s, json!({}));
    sender.send_text(retry.raw()).await;
    assert!(sender.recv_json_within(Duration::from_millis(500)).await.is_none(), "routed, no refusal");
    assert!(first.saw(retry.id()));
    first.stop().await;
}

/// AEP-0004 §4.5 counts every live connection that claims the session,
/// the sender's own included: a sender that also claims the session makes
/// two claimants, and the relay cannot tell which one is meant.
#[tokio::test]
async fn a_sender_that_claims_the_session_counts_among_its_claimants() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "e"}), json!({})).await;
    emitter.send_text(event("session.started", &s, 7, 0).raw()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cmd = command("control.pause", &s, json!({}));
    emitter.send_text(cmd.raw()).await;
    let refusal = emitter.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("ambiguous"), Some(cmd.id())), "{refusal}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!target.saw(cmd.id()), "never guess: the other claimant is not picked");

    // Once the sender's claim is gone (its connection closed), the target
    // is the one claimant and a new sender is routed to it.
    drop(emitter);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut sender = t.consumer().await;
    let retry = command("control.pause", &s, json!({}));
    sender.send_text(retry.raw()).await;
    assert!(sender.recv_json_within(Duration::from_millis(500)).await.is_none(), "routed, no refusal");
    assert!(target.saw(retry.id()));
    target.stop().await;
}

/// The one live claimant of a session is its target, even when it is the
/// sender itself: it owns the session, so the answer is not `no-route`,
/// and exactly one connection receives the command.
#[tokio::test]
async fn a_sole_claimant_commanding_its_own_session_receives_the_command_and_any_role_may_command() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let other = session_name("live-self");
    let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "e"}), json!({})).await;
    emitter.send_text(event("session.started", &other, 0, 0).raw()).await;
    let own = command("control.pause", &other, json!({}));
    emitter.send_text(own.raw()).await;
    let back = emitter.recv_text(Duration::from_secs(2)).await.expect("the command comes back to its one claimant");
    assert_eq!(back, own.raw(), "forwarded byte-identically, not refused");
    // The same emitter commanding the target's session is routed.
    let cmd = command("control.pause", &s, json!({}));
    emitter.send_text(cmd.raw()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(target.saw(cmd.id()));
    target.stop().await;
}

#[tokio::test]
async fn an_invalid_command_from_an_authenticated_sender_is_refused_as_invalid() {
    let t = TestRelay::start(Posture::Token).await;
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let mut sender = t.consumer().await;
    let mut cmd: Value = serde_json::from_str(command("control.pause", &s, json!({})).raw()).unwrap();
    cmd["seq"] = json!(9);
    sender.send(&cmd).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("invalid-event"), cmd["id"].as_str()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!target.saw(cmd["id"].as_str().unwrap()));
    target.stop().await;
}

//! Command routing (checks `control-auth-gate`, `control-behalf-refusal`,
//! `control-ack`, `control-nack-unsupported`, `control-dedupe`,
//! `control-cancel`, plus `ambiguous`, claim release and the audit
//! fan-out). The auth gate is posture A; the routed checks are posture B.

use crate::support;

use std::time::Duration;

use aep_engine::protocol::ids::Draft;
use aep_engine::Event;
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

async fn without_a_token_no_command_is_ever_routed(binding: Binding) {
    let t = TestRelay::start(Posture::Open).await.over(binding);
    let s = session_name("live-auth");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.attention.respond")
        .session(&s)
        .subject(fresh_id())
        .capture(aep_engine::Capture::Metadata)
        .data(json!({"answer": {"option": "live-check-probe"}}))
        .build(&support::sender(), fresh_id(), now())
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

/// Sends `cmd` on `sock` and returns the relay's refusal, checked to
/// name `cmd` as its cause and to carry `code`.
async fn refused(sock: &mut Ws, cmd: &Event, code: &str) -> Value {
    sock.send_text(cmd.raw()).await;
    let refusal = sock.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some(code), Some(cmd.id())), "{refusal}");
    refusal
}

/// Sends a fresh pause to `s` from `sender` and waits for its one ack on
/// the stream: the command and the ack.
async fn pause_acked(t: &TestRelay, sender: &mut Ws, s: &str) -> (Event, Event) {
    let mut sse = watch(t, s).await;
    let cmd = command("control.pause", s, json!({}));
    sender.send_text(cmd.raw()).await;
    let live = sse.collect_data(Duration::from_millis(1000)).await;
    let acks = acks_for(&live, cmd.id());
    assert_eq!(acks.len(), 1, "{live:?}");
    (cmd, Event::parse(&acks[0]).unwrap())
}

/// A fresh pause to `s` from `sender` is routed to `target`: no refusal
/// comes back, and the target received it.
async fn routed(sender: &mut Ws, target: &TestTarget, s: &str) {
    let cmd = command("control.pause", s, json!({}));
    sender.send_text(cmd.raw()).await;
    assert!(sender.recv_json_within(Duration::from_millis(500)).await.is_none(), "routed, no refusal");
    assert!(target.saw(cmd.id()));
}

async fn no_claimant_is_refused_on_behalf_and_never_enters_history(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
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

    let mut replay = t.sse(&format!("filter={}&from={}", enc(&json!({ "session": s })), after(&s, 0))).await;
    let got = replay.collect_data(Duration::from_millis(1500)).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].data[0], run.raw());
}

async fn a_routed_command_reaches_exactly_one_target_byte_for_byte_and_its_ack_fans_out(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
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

    // The forwarded command is kept, byte for byte, and so is the ack.
    let body = t.sse("live=0&from=all").await.body_until_end(PROMPT).await;
    assert!(body.contains(&format!("data: {cmd}\n")), "{body}");
    assert!(body.contains(ack.raw()));
    assert_eq!(t.relay.stats().counters.commands_routed, 1);
    target.stop().await;
}

/// A pretty-printed command cannot travel on an SSE `data:` line as sent.
/// It is kept on one line with only the whitespace between its tokens
/// removed (its key order, escapes and numbers as the sender wrote them),
/// and those same bytes reach the target, socket subscribers, SSE
/// subscribers and history alike (AEP-0001 §4.2, AEP-0003 §10).
async fn a_pretty_printed_command_has_the_same_bytes_on_every_binding(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut watcher = t.consumer().await;
    watcher.subscribe(json!({"type": "subscribe", "id": "w", "filter": {"session": s}})).await;
    let id = fresh_id();
    let compact = format!(
        r#"{{"type":"control.attention.respond","aep":"0.1","id":"{id}","time":"{}","source":"aep://live-check/agent/aep-live-check","agent":"aep-live-check","session":"{s}","subject":"{}","data":{{"answer":{{"option":"allow","text":"caf\u00e9 \"ok\"\/ 1.50"}},"n":1.50}}}}"#,
        now(),
        target.attention
    );
    let pretty = compact.replace(",\"", ",\n    \"").replace("{\"", "{\n  \"").replace("}}", "\n}\n}\t");
    assert!(pretty.contains('\n'));
    let mut sender = t.consumer().await;
    sender.send_text(&pretty).await;

    let live = sse.collect_data(Duration::from_millis(1000)).await;
    let on_sse: Vec<&String> =
        live.iter().map(|m| &m.data[0]).filter(|d| d.contains(&id) && !d.contains("cause")).collect();
    assert_eq!(on_sse, vec![&compact], "SSE subscribers");
    let forwarded: Vec<String> = target.frames().into_iter().filter(|f| f.contains(&id)).collect();
    assert_eq!(forwarded, vec![compact.clone()], "the target");
    let watched = watcher.recv_text(PROMPT).await.unwrap();
    assert_eq!(watched, compact, "socket subscribers");
    let history = replay(&t, &s, &after(&s, 0)).await;
    assert!(history.contains(&compact), "history: {history:?}");
    target.stop().await;
}

async fn an_undeclared_command_is_refused_on_the_targets_behalf(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = command("control.pause", &s, json!({}));
    refused(&mut sender, &cmd, "unsupported").await;
    let messages = sse.collect_data(Duration::from_millis(800)).await;
    assert!(acks_for(&messages, cmd.id()).is_empty());
    assert!(!target.saw(cmd.id()));
    target.stop().await;
}

async fn a_retransmit_is_forwarded_and_the_byte_identical_re_ack_traverses(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.attention.respond")
        .session(&s)
        .subject(target.attention.clone())
        .data(json!({"answer": {"option": "allow"}}))
        .build(&support::sender(), fresh_id(), now())
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

async fn cancel_is_acked_once_and_its_outcome_follows(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.attention.respond", "control.cancel"]).await;
    let mut sse = watch(&t, &s).await;
    let mut sender = t.consumer().await;
    let cmd = Draft::new("control.cancel")
        .session(&s)
        .run(target.run.clone())
        .capture(aep_engine::Capture::Redacted)
        .data(json!({"scope": "run", "reason": "live-check"}))
        .build(&support::sender(), fresh_id(), now())
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

async fn two_claimants_are_ambiguous_until_one_leaves(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let first = TestTarget::start(&t, &s, &["control.pause"]).await;
    // Its own positions: one position names one event.
    let second = TestTarget::start_as(&t, None, support::target::TARGET_AGENT, &s, &["control.pause"], 1).await;
    let mut sender = t.consumer().await;
    let cmd = command("control.pause", &s, json!({}));
    refused(&mut sender, &cmd, "ambiguous").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!first.saw(cmd.id()) && !second.saw(cmd.id()), "never guess, never broadcast");

    second.stop().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    routed(&mut sender, &first, &s).await;
    first.stop().await;
}

/// AEP-0004 §4.5 counts every live connection that claims the session,
/// the sender's own included: a sender that also claims the session makes
/// two claimants, and the relay cannot tell which one is meant.
async fn a_sender_that_claims_the_session_counts_among_its_claimants(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let (mut emitter, _) = t.ws_hello("emitter", json!({"agent": "e"}), json!({})).await;
    emitter.send_text(event("session.started", &s, 7, 0).raw()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cmd = command("control.pause", &s, json!({}));
    refused(&mut emitter, &cmd, "ambiguous").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!target.saw(cmd.id()), "never guess: the other claimant is not picked");

    // Once the sender's claim is gone (its connection closed), the target
    // is the one claimant and a new sender is routed to it.
    drop(emitter);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut sender = t.consumer().await;
    routed(&mut sender, &target, &s).await;
    target.stop().await;
}

/// The one live claimant of a session is its target, even when it is the
/// sender itself: it owns the session, so the answer is not `no-route`,
/// and exactly one connection receives the command.
async fn a_sole_claimant_commanding_its_own_session_receives_the_command_and_any_role_may_command(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
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

async fn an_invalid_command_from_an_authenticated_sender_is_refused_as_invalid(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
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

/// The data lines of a finished SSE body, in order.
fn data_of(body: &str) -> Vec<String> {
    body.split("\n\n").map(parse_message).filter(|m| !m.data.is_empty()).map(|m| m.data[0].clone()).collect()
}

/// The `from` query value resuming `s` after `(0, seq)`.
fn after(s: &str, seq: u64) -> String {
    enc(&json!([{ "session": s, "epoch": 0, "seq": seq }]))
}

/// Replays `s` from `from` (a query value) to the end: the whole body.
async fn replay_body(t: &TestRelay, s: &str, from: &str) -> String {
    let query = format!("live=0&filter={}&from={from}", enc(&json!({ "session": s })));
    t.sse(&query).await.body_until_end(PROMPT).await
}

/// Replays `s` from `from` (a query value) to the end: the events.
async fn replay(t: &TestRelay, s: &str, from: &str) -> Vec<String> {
    data_of(&replay_body(t, s, from).await)
}

/// AEP-0004 §4.4: a forwarded command is kept in its session's history, so
/// a console connecting later sees command, ack and outcome in order.
/// Commands and `attention.routed` carry no `seq`: each sits right after
/// the positioned event it followed on arrival, and a resume from a
/// position returns the ones that arrived after that event, once. A
/// command refused on the target's behalf is never kept.
async fn forwarded_commands_are_kept_in_history_where_they_arrived(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let mut sender = t.consumer().await;
    let (cmd, ack) = pause_acked(&t, &mut sender, &s).await;
    assert_eq!(ack.seq(), Some(2));

    // Refused on the target's behalf: never history.
    let refused = command("control.cancel", &s, json!({}));
    sender.send_text(refused.raw()).await;
    assert_eq!(sender.recv_json().await["code"], "unsupported");
    // A router's hop, seq-less, over HTTP.
    let routed = Draft::new("attention.routed")
        .session(&s)
        .subject(&target.attention)
        .data(json!({"to": "slack"}))
        .build(&support::sender(), fresh_id(), now())
        .unwrap();
    assert_eq!(t.post_one(&routed).await.status(), 202);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let all = replay(&t, &s, "all").await;
    let types: Vec<String> =
        all.iter().map(|d| serde_json::from_str::<Value>(d).unwrap()["type"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        types,
        ["session.started", "run.started", "control.pause", "control.accepted", "attention.routed"],
        "{all:#?}"
    );
    assert_eq!(all[2], cmd.raw(), "byte-identical");
    assert_eq!(all[3], ack.raw());
    assert_eq!(all[4], routed.raw());
    assert!(all.iter().all(|d| !d.contains(refused.id())));

    assert_eq!(
        replay(&t, &s, &after(&s, 1)).await,
        all[2..].to_vec(),
        "after run.started: the command, its ack, the hop"
    );
    assert_eq!(replay(&t, &s, &after(&s, 2)).await, all[4..].to_vec(), "after the ack: the command is not sent again");
    assert_eq!(replay(&t, &s, &after(&s, 0)).await, all[1..].to_vec());
    target.stop().await;
}

/// Commands count against the session's bounds like events; a resume from
/// before an evicted command is told it lost something.
async fn an_evicted_command_is_reported_as_a_loss(binding: Binding) {
    let t = TestRelay::start_with(Posture::Token, |c| c.buffer_depth = 3).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let mut sender = t.consumer().await;
    pause_acked(&t, &mut sender, &s).await;
    // session.started, run.started, command, ack: depth 3 keeps the last 3.
    let body = replay_body(&t, &s, &after(&s, 1)).await;
    assert!(!body.contains("replay-exhausted"), "nothing after seq 1 was lost: {body}");
    assert_eq!(data_of(&body).len(), 2, "{body}");
    // Two more events push run.started and the command out.
    let more: Vec<Event> = (3..5).map(|seq| event("progress.status", &s, 0, seq)).collect();
    assert_eq!(t.post_events(&more).await.status(), 202);
    let body = replay_body(&t, &s, &after(&s, 1)).await;
    assert!(body.contains(&format!(": replay-exhausted {s} ")), "the command after seq 1 is gone: {body}");
    let body = replay_body(&t, &s, &after(&s, 2)).await;
    assert!(!body.contains("replay-exhausted"), "nothing after the ack was lost: {body}");
    assert_eq!(data_of(&body), more.iter().map(|e| e.raw().to_owned()).collect::<Vec<_>>());
    target.stop().await;
}

/// The engine's console, connecting after a command was answered, sees the
/// command before its ack, as a console that watched it live did.
async fn a_console_connecting_later_sees_the_command_before_its_ack(binding: Binding) {
    let t = TestRelay::start(Posture::Token).await.over(binding);
    let s = session_name("live-control");
    let target = TestTarget::start(&t, &s, &["control.pause"]).await;
    let mut sender = t.consumer().await;
    let (cmd, _) = pause_acked(&t, &mut sender, &s).await;

    let mut late = support::console::Console::connect(&t.relay, TOKEN).await;
    let id = cmd.id().to_owned();
    late.until("the ack", |c| c.seen.iter().any(|e| e.cause() == Some(id.as_str())).then_some(())).await;
    let at = |pred: &dyn Fn(&Event) -> bool| late.seen.iter().position(pred);
    let command_at = at(&|e| e.id() == cmd.id()).expect("the late console sees the command");
    let ack_at = at(&|e| e.cause() == Some(cmd.id())).unwrap();
    assert!(command_at < ack_at, "command, then ack");
    assert_eq!(late.seen[command_at].raw(), cmd.raw());
    target.stop().await;
}

over_both_bindings!(
    without_a_token_no_command_is_ever_routed,
    no_claimant_is_refused_on_behalf_and_never_enters_history,
    a_routed_command_reaches_exactly_one_target_byte_for_byte_and_its_ack_fans_out,
    a_pretty_printed_command_has_the_same_bytes_on_every_binding,
    an_undeclared_command_is_refused_on_the_targets_behalf,
    a_retransmit_is_forwarded_and_the_byte_identical_re_ack_traverses,
    cancel_is_acked_once_and_its_outcome_follows,
    two_claimants_are_ambiguous_until_one_leaves,
    a_sender_that_claims_the_session_counts_among_its_claimants,
    a_sole_claimant_commanding_its_own_session_receives_the_command_and_any_role_may_command,
    an_invalid_command_from_an_authenticated_sender_is_refused_as_invalid,
    forwarded_commands_are_kept_in_history_where_they_arrived,
    an_evicted_command_is_reported_as_a_loss,
    a_console_connecting_later_sees_the_command_before_its_ack,
);

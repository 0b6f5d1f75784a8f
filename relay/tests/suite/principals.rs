//! Who may write a session and who may command: every event is bound to
//! the credential that sent it, every command's `agent` to its sender, and
//! a session to the principal that first wrote it. Tried as an attacker
//! with a valid token of their own would, on real sockets.

use crate::support;

use std::path::Path;
use std::time::Duration;

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::Event;
use aep_relay::auth::{Principal, Roles, Token};
use aep_relay::Config;
use serde_json::{json, Value};
use support::target::TestTarget;
use support::*;

const BOT: &str = "build-bot";
const BOT_TOKEN: &str = "bot-0123456789";
const MALLORY: &str = "mallory";
const MALLORY_TOKEN: &str = "mallory-0123456789";
const ALICE: &str = "alice";
const ALICE_TOKEN: &str = "alice-0123456789";
const VIEWER_TOKEN: &str = "viewer-0123456789";

fn principals(config: &mut Config) {
    let agent = Roles { agent: true, ..Roles::default() };
    let add = |name: &str, token: &str, roles: Roles| (Token::new(token).unwrap(), Principal::named(name, roles));
    config.principals = vec![
        add(BOT, BOT_TOKEN, agent),
        add(MALLORY, MALLORY_TOKEN, agent),
        add(ALICE, ALICE_TOKEN, Roles { operator: true, viewer: true, agent: false }),
        add("val", VIEWER_TOKEN, Roles { viewer: true, ..Roles::default() }),
    ];
}

async fn relay() -> TestRelay {
    TestRelay::start_with(Posture::Token, principals).await
}

fn as_agent(agent: &str, session: &str) -> Identity {
    Identity::new(format!("aep://h/agent/{agent}/session/{session}"), agent)
}

fn event_as(agent: &str, ty: &str, session: &str, seq: u64) -> Event {
    Draft::new(ty).session(session).seq(seq).build(&as_agent(agent, session), fresh_id(), now()).unwrap()
}

fn command_as(agent: &str, ty: &str, session: &str) -> Event {
    let me = Identity::new(format!("aep://h/agent/{agent}"), agent);
    Draft::new(ty).session(session).data(json!({})).build(&me, fresh_id(), now()).unwrap()
}

async fn post_as(t: &TestRelay, token: &str, events: &[&Event]) -> reqwest::Response {
    post_ndjson(&t.http, &t.url("/events"), Some(token), ndjson(events.iter().copied())).send().await.unwrap()
}

async fn emitter_as(t: &TestRelay, token: &str, agent: &str) -> Ws {
    t.ws_hello_with(Some(token), "emitter", json!({"agent": agent}), json!({})).await.0
}

async fn operator(t: &TestRelay) -> Ws {
    t.ws_hello_with(Some(ALICE_TOKEN), "consumer", json!({"agent": ALICE}), json!({})).await.0
}

/// The refusal of the event or command `id` on `ws`.
async fn refusal(ws: &mut Ws, id: &str) -> Value {
    loop {
        let frame = ws.recv_json_within(PROMPT).await.unwrap_or_else(|| panic!("no refusal for {id}"));
        if frame["type"] == "error" && frame["cause"] == id {
            return frame;
        }
    }
}

/// Sends `cmd` and waits until `target` has it; panics if refused.
async fn delivered(sender: &mut Ws, target: &TestTarget, cmd: &Event) {
    sender.send_text(cmd.raw()).await;
    let deadline = tokio::time::Instant::now() + PROMPT;
    while !target.saw(cmd.id()) {
        if let Some(frame) = sender.recv_json_within(Duration::from_millis(50)).await {
            assert!(!(frame["type"] == "error" && frame["cause"] == cmd.id()), "refused: {frame}");
        }
        assert!(tokio::time::Instant::now() < deadline, "the target never received {}", cmd.id());
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

#[tokio::test]
async fn an_event_under_another_agents_name_is_refused_on_both_bindings_and_nothing_is_stored() {
    let t = relay().await;
    let s = session_name("build-bot");
    let forged = event_as(BOT, "run.cancelled", &s, 500);
    let answered = event_as(BOT, "attention.answered", &s, 501);

    let response = post_as(&t, MALLORY_TOKEN, &[&forged]).await;
    assert_eq!(response.status(), 403);
    assert_eq!(response.json::<Value>().await.unwrap()["error"], "unauthorized");

    let mut ws = emitter_as(&t, MALLORY_TOKEN, MALLORY).await;
    for e in [&forged, &answered] {
        ws.send_text(e.raw()).await;
        assert_eq!(refusal(&mut ws, e.id()).await["code"], "unauthorized");
    }
    // Its own name under someone else's source is no better.
    let mixed = Draft::new("session.started")
        .session(&s)
        .seq(0)
        .build(&Identity::new(format!("aep://h/agent/{BOT}/session/{s}"), MALLORY), fresh_id(), now())
        .unwrap();
    ws.send_text(mixed.raw()).await;
    assert_eq!(refusal(&mut ws, mixed.id()).await["code"], "unauthorized");
    // An operator or a viewer emits nothing, whatever name it uses.
    let own = event_as(ALICE, "session.started", &s, 0);
    assert_eq!(post_as(&t, ALICE_TOKEN, &[&own]).await.status(), 403);
    assert_eq!(post_as(&t, VIEWER_TOKEN, &[&own]).await.status(), 403);

    settle().await;
    assert_eq!(t.relay.session_len(&s), 0, "nothing of it was stored");
    let body = t.get("/stream?live=0&from=all").send().await.unwrap().text().await.unwrap();
    assert!(!body.contains(&s), "nothing was fanned out or kept: {body}");
}

async fn a_consumer_connection_emits_commands_only(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live-consumer");
        let mut consumer = t.consumer().await;
        let e = event("session.started", &s, 0, 0);
        consumer.send_text(e.raw()).await;
        assert_eq!(refusal(&mut consumer, e.id()).await["code"], "unauthorized", "{posture:?}");
        settle().await;
        assert_eq!(t.relay.session_len(&s), 0, "{posture:?}");
        assert_eq!(t.relay.stats().claims, 0, "{posture:?}: a consumer claims nothing");
    }
}

/// The squatters of the report: a byte-identical replay of the agent's own
/// `session.started` from a second connection, a consumer, and another
/// principal writing into the session under its own name. None of them
/// claims; the real agent receives the command before and after it
/// reconnects.
#[tokio::test]
async fn nobody_else_can_claim_an_agents_session() {
    let t = relay().await;
    let s = session_name(BOT);
    let target = TestTarget::start_as(&t, Some(BOT_TOKEN), BOT, &s, &["control.pause"], 0).await;
    settle().await;
    let opening = target.frames();
    assert!(opening.is_empty());
    let replayed = t.get("/stream?live=0&from=all").send().await.unwrap().text().await.unwrap();
    let started = replayed
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|l| l.contains(&s) && l.contains("session.started"))
        .expect("the agent's session.started")
        .to_owned();

    // The same principal's second connection replays it byte for byte: a
    // duplicate, which claims nothing.
    let mut twin = emitter_as(&t, BOT_TOKEN, BOT).await;
    twin.send_text(&started).await;
    // The owner's consumer connection, and the single-token owner's.
    let mut consumer = t.ws_hello_with(Some(BOT_TOKEN), "consumer", json!({}), json!({})).await.0;
    consumer.send_text(&started).await;
    let mut owner = t.consumer().await;
    let fresh = event_as(BOT, "progress.status", &s, 90);
    owner.send_text(fresh.raw()).await;
    assert_eq!(refusal(&mut owner, fresh.id()).await["code"], "unauthorized");
    // Another principal, under its own name, in the agent's session.
    let mut mallory = emitter_as(&t, MALLORY_TOKEN, MALLORY).await;
    let squat = event_as(MALLORY, "session.started", &s, 0);
    mallory.send_text(squat.raw()).await;
    assert_eq!(refusal(&mut mallory, squat.id()).await["code"], "unauthorized");
    let over_http = event_as(MALLORY, "progress.status", &s, 91);
    assert_eq!(post_as(&t, MALLORY_TOKEN, &[&over_http]).await.status(), 403);
    settle().await;

    let roster: Vec<String> = {
        let mut c = operator(&t).await;
        c.send(&json!({"type": "roster", "id": "r"})).await;
        let reply = c.recv_json().await;
        reply["entries"].as_array().unwrap().iter().map(|e| e["session"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(roster.iter().filter(|x| **x == s).count(), 1, "one claimant: the agent ({roster:?})");

    let mut alice = operator(&t).await;
    delivered(&mut alice, &target, &command_as(ALICE, "control.pause", &s)).await;

    // The agent reconnects; the squatters are still connected.
    target.stop().await;
    settle().await;
    let back = TestTarget::start_as(&t, Some(BOT_TOKEN), BOT, &s, &["control.pause"], 1).await;
    settle().await;
    delivered(&mut alice, &back, &command_as(ALICE, "control.pause", &s)).await;
    back.stop().await;
    drop((twin, consumer, mallory));
}

#[tokio::test]
async fn a_relay_with_history_keeps_who_owns_a_session_across_a_restart() {
    let dir = std::env::temp_dir().join(format!("aep-owners-{}", fresh_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = session_name(BOT);
    {
        let t = with_history(&dir).await;
        let target = TestTarget::start_as(&t, Some(BOT_TOKEN), BOT, &s, &["control.pause"], 0).await;
        settle().await;
        target.stop().await;
        t.relay.shutdown().await;
    }
    let t = with_history(&dir).await;
    // Before the agent is back, another principal tries to take the name.
    let mut mallory = emitter_as(&t, MALLORY_TOKEN, MALLORY).await;
    let squat = event_as(MALLORY, "session.started", &s, 10);
    mallory.send_text(squat.raw()).await;
    assert_eq!(refusal(&mut mallory, squat.id()).await["code"], "unauthorized");
    // The agent reconnects and carries on after what it wrote.
    let (mut bot, _) = t
        .ws_hello_with(
            Some(BOT_TOKEN),
            "emitter",
            json!({"agent": BOT}),
            json!({"control": {"accepts": ["control.pause"], "ack_window_ms": 10000}}),
        )
        .await;
    bot.send_text(event_as(BOT, "progress.status", &s, 20).raw()).await;
    settle().await;
    let mut alice = operator(&t).await;
    let cmd = command_as(ALICE, "control.pause", &s);
    alice.send_text(cmd.raw()).await;
    let got = bot.recv_text(PROMPT).await.expect("the agent receives the command");
    assert_eq!(got, cmd.raw());
    t.relay.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

async fn with_history(dir: &Path) -> TestRelay {
    let dir = dir.to_owned();
    TestRelay::start_with(Posture::Token, move |c| {
        principals(c);
        c.data_dir = Some(dir);
    })
    .await
}

/// A command's `agent` is its sender's own name: what the target receives
/// and what history keeps name the credential that sent it.
#[tokio::test]
async fn a_command_names_the_principal_that_sent_it() {
    let t = relay().await;
    let s = session_name(BOT);
    let target = TestTarget::start_as(&t, Some(BOT_TOKEN), BOT, &s, &["control.pause", "control.cancel"], 0).await;
    settle().await;

    let mut alice = operator(&t).await;
    let claimed = command_as("root-admin", "control.cancel", &s);
    alice.send_text(claimed.raw()).await;
    assert_eq!(refusal(&mut alice, claimed.id()).await["code"], "unauthorized");
    // Only operators command.
    for token in [VIEWER_TOKEN, MALLORY_TOKEN] {
        let mut ws = t.ws_hello_with(Some(token), "consumer", json!({}), json!({})).await.0;
        let cmd = command_as(MALLORY, "control.pause", &s);
        ws.send_text(cmd.raw()).await;
        assert_eq!(refusal(&mut ws, cmd.id()).await["code"], "unauthorized");
    }
    settle().await;
    assert!(!target.saw(claimed.id()), "never delivered");

    let honest = command_as(ALICE, "control.pause", &s);
    delivered(&mut alice, &target, &honest).await;
    let received: Vec<Value> = target
        .frames()
        .iter()
        .filter_map(|f| serde_json::from_str::<Value>(f).ok())
        .filter(|v| v.get("aep").is_some())
        .collect();
    assert!(received.iter().all(|v| v["agent"] == ALICE), "{received:?}");
    let history = t.get("/stream?live=0&from=all").send().await.unwrap().text().await.unwrap();
    let commands: Vec<Value> = history
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"].as_str().is_some_and(|t| t.starts_with("control.") && v.get("seq").is_none()))
        .collect();
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert_eq!(commands[0]["agent"], ALICE);
    target.stop().await;
}

/// One position names one event: a second event at an `(epoch, seq)`
/// already held, with another id, is refused rather than stored beside it.
async fn a_position_already_held_is_refused(binding: Binding) {
    for posture in POSTURES {
        let t = TestRelay::start(posture).await.over(binding);
        let s = session_name("live-position");
        let first = event("session.started", &s, 0, 5);
        assert_eq!(t.post_one(&first).await.status(), 202);
        let second = event("progress.status", &s, 0, 5);
        let response = t.post_one(&second).await;
        assert_eq!(response.status(), 409, "{posture:?}");
        // Two at one position in the same batch: the batch is refused whole.
        let (a, b) = (event("progress.status", &s, 0, 6), event("progress.status", &s, 0, 6));
        assert_eq!(t.post_events(&[a, b]).await.status(), 409);
        let (mut ws, _) = t.ws_hello("emitter", json!({"agent": AGENT}), json!({})).await;
        let third = event("progress.status", &s, 0, 5);
        ws.send_text(third.raw()).await;
        assert_eq!(refusal(&mut ws, third.id()).await["code"], "invalid-event");
        // The same event again is a duplicate, not a clash.
        assert_eq!(t.post_one(&first).await.status(), 202);
        settle().await;
        assert_eq!(t.relay.session_len(&s), 1, "{posture:?}");
    }
}

/// A principal bound to its name is told it in the relay's `hello`, so a
/// console can send its commands under it; the single-token owner, which
/// may use any name, is told nothing.
#[tokio::test]
async fn the_relays_hello_names_a_named_principal() {
    let t = relay().await;
    let (_, reply) = t.ws_hello_with(Some(ALICE_TOKEN), "consumer", json!({}), json!({})).await;
    let named = &reply["capabilities"]["experimental"]["principal"];
    assert_eq!(named["name"], ALICE, "{reply}");
    assert_eq!(named["roles"], json!(["operator", "viewer"]));
    let (_, owner) = t.ws_hello("consumer", json!({}), json!({})).await;
    assert!(owner["capabilities"].get("experimental").is_none(), "{owner}");
}

over_both_bindings!(a_consumer_connection_emits_commands_only, a_position_already_held_is_refused,);

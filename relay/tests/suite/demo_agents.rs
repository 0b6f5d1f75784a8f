//! The demo agents against a real relay on loopback, in the token posture
//! so control flows. The test console is the engine's `Connection` and
//! `ControlSender` on its own WebSocket: it watches every event, answers
//! requests, and checks each command's decision and cause-linked outcome.

use std::time::Duration;

use crate::support;

use support::console::{Console, PATIENCE_MS};

use aep_demo::agent::ACK_WINDOW_MS;
use aep_demo::cast::INSTRUCT;
use aep_demo::{Demo, DemoOptions, Pace, CAST};
use aep_driver_tokio::now;
use aep_engine::control::ack::NackReason;
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{Address, CancelScope, Command, CommandState, RelayCode};
use aep_engine::protocol::validate;
use aep_engine::{Capture, Event, UnixMs};
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

const TOKEN: &str = "demo-test-token";
/// Ten times real time: a 45 s expiry takes 4.5 s.
const PACE: u64 = 100;

async fn relay_on(listener: TcpListener) -> Relay {
    let config = Config { token: Token::new(TOKEN), ..Config::default() };
    serve(config, listener).await.expect("relay starts")
}

async fn relay_and_demo(seed: u64) -> (Relay, Demo) {
    let relay = relay_on(TcpListener::bind("127.0.0.1:0").await.unwrap()).await;
    let options = DemoOptions { seed: Some(seed), token: Some(TOKEN.into()), pace: Pace::scaled(PACE) };
    let demo = aep_demo::start(&relay.local_url(), &options).expect("demo starts");
    (relay, demo)
}

fn refusal(state: &CommandState) -> Option<NackReason> {
    match state {
        CommandState::Rejected { reason, .. } => *reason,
        other => panic!("expected a nack, got {other:?}"),
    }
}

fn values(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn every_kind_of_attention_appears_from_declared_control_capable_agents() {
    let (relay, demo) = relay_and_demo(1).await;
    let mut console = Console::connect(&relay, TOKEN).await;
    for (agent, kind) in
        [("build-bot", "permission"), ("research-agent", "input"), ("deploy-agent", "form"), ("deploy-agent", "review")]
    {
        console.request(agent, kind).await;
    }
    let form = console.request("deploy-agent", "form").await;
    let fields = form.data_field("fields").unwrap().as_array().unwrap();
    for (ty, extra) in [
        ("string", None),
        ("number", Some("min")),
        ("boolean", None),
        ("select", Some("multi")),
        ("select", Some("other")),
    ] {
        assert!(
            fields.iter().any(|f| f["type"] == ty && extra.is_none_or(|k| f.get(k).is_some())),
            "the form has a {ty} field {extra:?}"
        );
    }
    let oob = console.event("an out-of-band request", |e| e.data_field("respond_via") == Some(&json!(["oob"]))).await;
    assert_eq!(oob.agent(), "ci-watcher");
    console.event("an expiring request", |e| e.data_field("expires_at").is_some()).await;
    let hostile = console
        .event("markup in a prompt", |e| {
            e.data_field("prompt")
                .and_then(Value::as_str)
                .is_some_and(|p| p.contains("<img src=x onerror=alert(1)>") && p.contains("<script>alert(1)</script>"))
        })
        .await;
    assert_eq!(hostile.agent(), "build-bot");
    for ty in ["session.started", "run.started", "tool.requested", "tool.completed", "progress.status"] {
        console.event(ty, |e| e.ty() == ty).await;
    }

    let roster = console.roster().await;
    for persona in CAST {
        let entry =
            roster.iter().find(|e| e.agent.as_deref() == Some(persona.name)).expect("every agent claims a session");
        let control = entry.control.as_ref().expect("declares control");
        let accepts: Vec<&str> = control.accepts.iter().flatten().map(String::as_str).collect();
        assert_eq!(accepts, persona.accepts, "{}", persona.name);
        assert_eq!(control.ack_window_ms, Some(ACK_WINDOW_MS));
    }
    assert!(roster.iter().any(|e| e.control.as_ref().is_some_and(|c| c.accepts(INSTRUCT))));

    for e in &console.seen {
        assert!(validate::event(&e.to_value()).is_empty(), "{}", e.raw());
        assert!(e.check_payload().is_empty(), "{}: {:?}", e.raw(), e.check_payload());
    }
    demo.stop().await;
    relay.shutdown().await;
}

#[tokio::test]
async fn answers_are_acked_and_resolved_refused_or_nacked_as_invalid() {
    let (relay, demo) = relay_and_demo(2).await;
    let mut console = Console::connect(&relay, TOKEN).await;

    let request = console.request("build-bot", "permission").await;
    let to = Address::session(request.session().unwrap());
    let id = console.send(to, Command::Respond { request: request.id().into(), answer: Answer::option("allow") });
    let CommandState::Accepted { ack } = console.decision(&id).await else { panic!("permission answer not accepted") };
    assert_eq!((ack.ty(), ack.cause(), ack.agent()), ("control.accepted", Some(id.as_str()), "build-bot"));
    let answered = console.caused(&id, "attention.answered").await;
    let resolved = console.caused(&id, "attention.resolved").await;
    assert_eq!(answered.subject(), Some(request.id()));
    assert_eq!(resolved.subject(), Some(request.id()));
    assert_eq!(answered.data_field("answer"), Some(&json!({"option": "allow"})));
    assert_eq!(resolved.data_field("resolution"), Some(&json!("answered")));
    assert!(answered.seq() > ack.seq() && resolved.seq() > answered.seq(), "ack, answered, resolved in session order");
    assert_eq!(console.sender.get(&id).unwrap().outcome().map(Event::ty), Some("attention.answered"));

    let guarded = console.request("access-guardian", "permission").await;
    let to = Address::session(guarded.session().unwrap());
    let id = console.send(to, Command::Respond { request: guarded.id().into(), answer: Answer::option("approve") });
    assert_eq!(refusal(&console.decision(&id).await), Some(NackReason::Refused), "the agent stays sovereign");
    let withdrawn = console.caused(&id, "attention.resolved").await;
    assert_eq!(
        (withdrawn.subject(), withdrawn.data_field("resolution")),
        (Some(guarded.id()), Some(&json!("dismissed")))
    );

    let form = console.request("deploy-agent", "form").await;
    let to = Address::session(form.session().unwrap());
    let partial = values(json!({"environment": "staging", "canary": false}));
    let id = console.send(to.clone(), Command::Respond { request: form.id().into(), answer: Answer::values(partial) });
    let state = console.decision(&id).await;
    assert_eq!(refusal(&state), Some(NackReason::Invalid));
    let CommandState::Rejected { detail, .. } = state else { unreachable!() };
    assert!(
        detail.as_deref().is_some_and(|d| d.contains("Release tag") && d.contains("Replicas")),
        "names the missing fields: {detail:?}"
    );

    let complete = values(json!({
        "version": "v2.14.0", "environment": "production", "regions": ["eu-west-1"],
        "replicas": 4, "canary": true, "notify": "#payments-oncall"
    }));
    let id = console.send(to, Command::Respond { request: form.id().into(), answer: Answer::values(complete.clone()) });
    assert!(
        matches!(console.decision(&id).await, CommandState::Accepted { .. }),
        "the request stayed open after the nack"
    );
    let answered = console.caused(&id, "attention.answered").await;
    assert_eq!(answered.data_field("answer"), Some(&json!({ "values": complete })));
    assert_eq!(answered.capture(), Capture::Full, "free text in values is content, as typed");
    console.caused(&id, "attention.resolved").await;

    let oob = console.event("an out-of-band request", |e| e.data_field("respond_via") == Some(&json!(["oob"]))).await;
    let to = Address::session(oob.session().unwrap());
    let id = console.send(to, Command::Respond { request: oob.id().into(), answer: Answer::option("approve") });
    assert_eq!(refusal(&console.decision(&id).await), Some(NackReason::Invalid), "not answerable over control");
    demo.stop().await;
    relay.shutdown().await;
}

#[tokio::test]
async fn runs_cancel_sessions_pause_and_resume_and_verbs_are_gated() {
    let (relay, demo) = relay_and_demo(3).await;
    let mut console = Console::connect(&relay, TOKEN).await;

    let run = console.event("a build-bot run", |e| e.agent() == "build-bot" && e.ty() == "run.started").await;
    let to = Address::session(run.session().unwrap()).with_run(run.run().unwrap());
    let id = console.send(to, Command::Cancel { scope: CancelScope::Run, reason: Some("wrong branch".into()) });
    assert!(matches!(console.decision(&id).await, CommandState::Accepted { .. }));
    let cancelled = console.caused(&id, "run.cancelled").await;
    assert_eq!(cancelled.run(), run.run());
    assert_eq!(cancelled.data_field("by"), Some(&json!("control")));

    console.event("research activity", |e| e.agent() == "research-agent" && e.ty() == "tool.requested").await;
    let session = console.session_of("research-agent");
    let id = console.send(Address::session(&session), Command::Pause);
    assert!(matches!(console.decision(&id).await, CommandState::Accepted { .. }));
    let paused = console.caused(&id, "progress.status").await;
    assert_eq!(paused.data_field("phase"), Some(&json!("paused")));
    // Paused means quiet: no new tool calls for a while (5 s of demo time).
    let mark = console.seen.len();
    let quiet_until = now() + 500;
    while now() < quiet_until {
        console.step(quiet_until).await;
    }
    let busy = console.seen[mark..].iter().any(|e| e.agent() == "research-agent" && e.ty() == "tool.requested");
    assert!(!busy, "a paused agent started a tool call");
    let id = console.send(Address::session(&session), Command::Resume);
    let resumed = console.caused(&id, "progress.status").await;
    assert_eq!(resumed.data_field("phase"), Some(&json!("resumed")));
    let mark = console.seen.len();
    console
        .until("work after resume", |c| {
            c.seen[mark..].iter().any(|e| e.agent() == "research-agent" && e.ty() == "tool.requested").then_some(())
        })
        .await;

    let instruct = Command::Vendor {
        vendor: "demo".into(),
        verb: "instruct".into(),
        data: values(json!({"text": "cite ticket numbers"})),
        capture: Capture::Redacted,
    };
    let id = console.send(Address::session(&session), instruct);
    assert!(
        matches!(console.decision(&id).await, CommandState::Accepted { .. }),
        "the declared vendor verb is accepted"
    );
    let followed = console.caused(&id, "progress.status").await;
    assert_eq!(followed.data_field("phase"), Some(&json!("instructed")));

    let id = console.send(Address::session(&session), Command::Cancel { scope: CancelScope::Session, reason: None });
    let state = console.decision(&id).await;
    assert!(
        matches!(state, CommandState::RelayRefused { code: RelayCode::Unsupported, .. }),
        "an undeclared verb is refused: {state:?}"
    );
    demo.stop().await;
    relay.shutdown().await;
}

#[tokio::test]
async fn an_unanswered_request_times_out_at_its_expiry() {
    let (relay, demo) = relay_and_demo(4).await;
    let mut console = Console::connect(&relay, TOKEN).await;
    let request = console
        .event("an expiring request", |e| e.agent() == "research-agent" && e.data_field("expires_at").is_some())
        .await;
    let expires = UnixMs::parse_rfc3339(request.data_field("expires_at").unwrap().as_str().unwrap()).unwrap();
    let timeout = console
        .event("attention.timeout", |e| e.ty() == "attention.timeout" && e.subject() == Some(request.id()))
        .await;
    let at = UnixMs::parse_rfc3339(timeout.time()).unwrap();
    assert!(at >= expires, "timed out at {at} before its expiry {expires}");
    assert_eq!(timeout.cause(), Some(request.id()));
    assert!(timeout.data_field("after_ms").and_then(Value::as_u64).is_some());

    let id = console.send(
        Address::session(request.session().unwrap()),
        Command::Respond { request: request.id().into(), answer: Answer::option("allow") },
    );
    assert_eq!(refusal(&console.decision(&id).await), Some(NackReason::Invalid), "an expired request takes no answer");
    demo.stop().await;
    relay.shutdown().await;
}

#[tokio::test]
async fn a_stopped_agent_leaves_no_route_and_a_retried_command_is_reacked_not_redone() {
    let (relay, mut demo) = relay_and_demo(5).await;
    let mut console = Console::connect(&relay, TOKEN).await;

    let request = console.request("build-bot", "permission").await;
    let to = Address::session(request.session().unwrap());
    let id = console.send(to, Command::Respond { request: request.id().into(), answer: Answer::text("deny") });
    let CommandState::Accepted { ack } = console.decision(&id).await else { panic!("not accepted") };
    let answered = console.caused(&id, "attention.answered").await;
    assert_eq!(
        answered.data_field("answer"),
        Some(&json!({"option": "deny"})),
        "typed text naming an option is that option"
    );
    let bytes = console.sender.get(&id).unwrap().command().clone();
    console.link.conn().send_event(&bytes).unwrap();
    let mark = console.seen.len();
    console.until("the recorded ack again", |c| c.seen[mark..].iter().any(|e| e.id() == ack.id()).then_some(())).await;
    let again = console.seen[mark..].iter().find(|e| e.id() == ack.id()).unwrap();
    assert_eq!(again.raw(), ack.raw(), "byte-identical");

    let session = console.session_of("ci-watcher");
    assert!(demo.stop_agent("ci-watcher").await);
    assert!(!demo.agents().contains(&"ci-watcher"));
    let deadline = now() + PATIENCE_MS;
    while console.roster().await.iter().any(|e| e.session == session) {
        assert!(now() < deadline, "the relay still routes to a stopped agent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = console.send(Address::session(&session), Command::Pause);
    assert!(matches!(console.decision(&id).await, CommandState::RelayRefused { code: RelayCode::NoRoute, .. }));
    let answers =
        console.seen.iter().filter(|e| e.ty() == "attention.answered" && e.subject() == Some(request.id())).count();
    assert_eq!(answers, 1, "the retried respond was not executed again");
    demo.stop().await;
    relay.shutdown().await;
}

#[tokio::test]
async fn agents_reconnect_to_a_restarted_relay_and_bring_their_open_requests() {
    let (relay, demo) = relay_and_demo(6).await;
    let addr = relay.local_addr();
    let mut console = Console::connect(&relay, TOKEN).await;
    let before = console.request("deploy-agent", "review").await;
    drop(console);
    relay.shutdown().await;

    let relay = relay_on(TcpListener::bind(addr).await.expect("the port is free again")).await;
    let mut console = Console::connect(&relay, TOKEN).await;
    let again = console.event("the open review again", |e| e.id() == before.id()).await;
    assert_eq!(again.raw(), before.raw(), "redelivered unchanged");
    let to = Address::session(before.session().unwrap());
    let id = console.send(to, Command::Respond { request: before.id().into(), answer: Answer::option("approve") });
    assert!(matches!(console.decision(&id).await, CommandState::Accepted { .. }), "routable again after reconnecting");
    console.caused(&id, "attention.resolved").await;
    demo.stop().await;
    relay.shutdown().await;
}

//! The control sender driven with a fake clock: commands, acks, relay
//! refusals, local timeouts, retries and outcomes.

use aep_engine::control::ack::NackReason;
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{
    ack_window, Address, CancelScope, Command, CommandChange, CommandError, CommandState, ControlSender, RelayCode,
    RetryError, SendError, DEFAULT_ACK_WINDOW_MS, MAX_ACK_WINDOW_MS, SETTLED_CAPACITY, UPDATE_QUEUE_CAPACITY,
};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::ids::{source_uri, Draft, Identity};
use aep_engine::rng::Seeded;
use aep_engine::{Event, UnixMs};
use serde_json::{json, Map, Value};

const T0: UnixMs = UnixMs(1_783_073_703_000);
const SESSION: &str = "s_8f2c";
const REQUEST: &str = "01JX9YB4RQ000000000000REQ1";

fn console() -> Identity {
    Identity::new(source_uri("laptop", "approval-console", None), "approval-console")
}

fn agent() -> Identity {
    Identity::new(source_uri("host-a", "demo-agent", Some(SESSION)), "demo-agent")
}

fn to() -> Address {
    Address::session(SESSION)
}

fn allow() -> Command {
    Command::Respond { request: REQUEST.into(), answer: Answer::option("allow") }
}

/// An event the agent emits in its session.
fn agent_event(draft: Draft, id: &str, seq: u64, at: UnixMs) -> Event {
    draft.session(SESSION).seq(seq).build(&agent(), id, at).unwrap()
}

fn accepted(command: &str, id: &str, at: UnixMs) -> Event {
    agent_event(Draft::new("control.accepted").cause(command), id, 5, at)
}

fn rejected(command: &str, reason: &str, detail: Option<&str>, at: UnixMs) -> Event {
    let mut data = json!({ "reason": reason });
    if let Some(d) = detail {
        data["detail"] = d.into();
    }
    agent_event(Draft::new("control.rejected").cause(command).data(data), "ACK-REJ", 5, at)
}

fn updates(s: &mut ControlSender) -> Vec<CommandChange> {
    std::iter::from_fn(|| s.poll_update()).map(|u| u.change).collect()
}

/// Sends `allow` and drains its frame and `Sent` update.
fn sent(s: &mut ControlSender, window: Option<u64>) -> String {
    let id = s.send(&to(), &allow(), window, T0).unwrap();
    assert!(s.poll_transmit().is_some());
    assert_eq!(updates(s), vec![CommandChange::Sent]);
    id
}

#[test]
fn built_commands_parse_carry_no_seq_and_name_sender_and_target() {
    let commands = [
        (allow(), json!({"answer": {"option": "allow"}}), Capture::Metadata),
        (
            Command::Respond { request: REQUEST.into(), answer: Answer::text("use the staging registry") },
            json!({"answer": {"text": "use the staging registry"}}),
            Capture::Full,
        ),
        (
            Command::Respond {
                request: REQUEST.into(),
                answer: Answer::values(json!({"n": 2}).as_object().unwrap().clone()),
            },
            json!({"answer": {"values": {"n": 2}}}),
            Capture::Metadata,
        ),
        (
            Command::Cancel { scope: CancelScope::Run, reason: Some("stuck".into()) },
            json!({"scope": "run", "reason": "stuck"}),
            Capture::Full,
        ),
        (Command::Cancel { scope: CancelScope::Session, reason: None }, json!({"scope": "session"}), Capture::Metadata),
        (Command::Pause, json!({}), Capture::Metadata),
        (Command::Resume, json!({}), Capture::Metadata),
        (
            Command::Vendor {
                vendor: "demo".into(),
                verb: "instruct".into(),
                data: Map::new(),
                capture: Capture::Metadata,
            },
            json!({}),
            Capture::Metadata,
        ),
    ];
    let address = to().with_run("r_0042");
    for (i, (command, data, capture)) in commands.into_iter().enumerate() {
        let ev = command.build(&console(), &address, format!("CMD{i}"), T0).unwrap();
        let reparsed = Event::parse(ev.raw()).unwrap();
        assert!(reparsed.is_command(), "{}", ev.ty());
        assert_eq!(reparsed.seq(), None);
        assert!(!ev.raw().contains("\"seq\""));
        assert_eq!(reparsed.agent(), "approval-console");
        assert_eq!(reparsed.source(), console().source);
        assert_eq!(reparsed.session(), Some(SESSION));
        assert_eq!(reparsed.run(), Some("r_0042"));
        assert_eq!(reparsed.data().cloned().map(Value::Object).unwrap_or(json!({})), data, "{}", ev.ty());
        assert_eq!(reparsed.capture(), capture, "{}", ev.ty());
        assert_eq!(Command::from_event(&reparsed).unwrap(), command, "reads back");
        if let Command::Respond { .. } = command {
            assert_eq!(reparsed.subject(), Some(REQUEST));
            assert_eq!(reparsed.cause(), Some(REQUEST));
        }
        check_against_published_schema(&reparsed);
    }
    let vendor = Command::Vendor {
        vendor: "demo".into(),
        verb: "instruct".into(),
        data: Map::new(),
        capture: Capture::Metadata,
    };
    assert_eq!(vendor.ty(), "x.demo.control.instruct");
}

/// Checks a built command against its type's payload schema (compiled into
/// the engine from the spec's schemas at build time).
fn check_against_published_schema(ev: &Event) {
    let violations = ev.check_payload();
    assert!(violations.is_empty(), "{}: {violations:?}", ev.ty());
}

#[test]
fn refuses_commands_that_cannot_be_honest() {
    let s = console();
    let cancel_run = Command::Cancel { scope: CancelScope::Run, reason: None };
    assert_eq!(cancel_run.build(&s, &to(), "C", T0), Err(CommandError::RunScopeWithoutRun));
    let respond_nothing = Command::Respond { request: String::new(), answer: Answer::option("allow") };
    assert_eq!(respond_nothing.build(&s, &to(), "C", T0), Err(CommandError::MissingRequest));
    let bad_vendor =
        Command::Vendor { vendor: "Demo Co".into(), verb: "go".into(), data: Map::new(), capture: Capture::Metadata };
    assert!(matches!(bad_vendor.build(&s, &to(), "C", T0), Err(CommandError::BadVendorType(_))));

    let mut sender = ControlSender::new(console(), Seeded::new(1));
    let id = sender.send(&to(), &Command::Pause, None, T0).unwrap();
    let again = sender.get(&id).unwrap().command().clone();
    assert_eq!(sender.submit(again, None, T0), Err(SendError::DuplicateId(id)));
    let not_command = agent_event(Draft::new("run.started"), "E1", 0, T0);
    assert!(matches!(sender.submit(not_command, None, T0), Err(SendError::NotACommand { .. })));
}

#[test]
fn accepted_then_outcome() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = s.send(&to(), &allow(), None, T0).unwrap();
    let frame = s.poll_transmit().unwrap();
    assert_eq!(&*frame, s.get(&id).unwrap().command().raw());
    assert_eq!(s.poll_transmit(), None);

    let t_ack = T0 + 150;
    assert!(s.handle_event(&accepted(&id, "ACK1", t_ack), t_ack));
    let c = s.get(&id).unwrap();
    assert!(matches!(c.state(), CommandState::Accepted { ack } if ack.id() == "ACK1"));
    assert_eq!(c.ack_latency_ms(), Some(150));
    assert!(c.outcome().is_none());

    let t_out = T0 + 200;
    let answered = agent_event(
        Draft::new("attention.answered")
            .subject(REQUEST)
            .cause(id.clone())
            .data(json!({"answer": {"option": "allow"}})),
        "ANS1",
        6,
        t_out,
    );
    let resolved = agent_event(
        Draft::new("attention.resolved").subject(REQUEST).cause(id.clone()).data(json!({"resolution": "answered"})),
        "RES1",
        7,
        t_out,
    );
    assert!(s.handle_event(&answered, t_out));
    assert!(s.handle_event(&resolved, t_out + 5));
    let c = s.get(&id).unwrap();
    assert_eq!(c.outcome().map(Event::id), Some("ANS1"), "the first domain event is the outcome");
    assert_eq!(c.outcome_latency_ms(), Some(200));
    assert_eq!(updates(&mut s), vec![CommandChange::Sent, CommandChange::Accepted, CommandChange::Outcome]);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn rejected_with_each_registered_reason() {
    for reason in
        [NackReason::Unsupported, NackReason::Unauthorized, NackReason::Busy, NackReason::Refused, NackReason::Invalid]
    {
        let mut s = ControlSender::new(console(), Seeded::new(1));
        let id = sent(&mut s, None);
        assert!(s.handle_event(&rejected(&id, reason.as_str(), Some("because"), T0 + 10), T0 + 10));
        match s.get(&id).unwrap().state() {
            CommandState::Rejected { reason: got, raw_reason, detail, .. } => {
                assert_eq!(*got, Some(reason));
                assert_eq!(raw_reason.as_deref(), Some(reason.as_str()));
                assert_eq!(detail.as_deref(), Some("because"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(updates(&mut s), vec![CommandChange::Rejected]);
    }
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    s.handle_event(&rejected(&id, "not-today", None, T0 + 10), T0 + 10);
    assert!(
        matches!(s.get(&id).unwrap().state(), CommandState::Rejected { reason: None, raw_reason: Some(r), .. } if r == "not-today")
    );
}

#[test]
fn relay_error_frames_refuse_with_their_code() {
    let cases = [
        ("unauthorized", RelayCode::Unauthorized),
        ("unsupported", RelayCode::Unsupported),
        ("ambiguous", RelayCode::Ambiguous),
        ("no-route", RelayCode::NoRoute),
        ("rate-limited", RelayCode::Other("rate-limited".into())),
    ];
    for (code, expected) in cases {
        let mut s = ControlSender::new(console(), Seeded::new(1));
        let id = sent(&mut s, None);
        assert!(!s.handle_relay_error("SOMEONE-ELSES", code, None, T0 + 5), "not our command");
        assert!(s.handle_relay_error(&id, code, Some("two claimants"), T0 + 5));
        match s.get(&id).unwrap().state() {
            CommandState::RelayRefused { code: got, detail } => {
                assert_eq!(*got, expected);
                assert_eq!(got.as_str(), code);
                assert_eq!(detail.as_deref(), Some("two claimants"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(updates(&mut s), vec![CommandChange::RelayRefused]);
        assert_eq!(s.poll_timeout(), None, "a refused command no longer waits");
        assert_eq!(s.poll_transmit(), None);
    }
}

#[test]
fn timeout_fires_exactly_at_the_window_and_is_never_sent() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, Some(2_500));
    assert_eq!(s.poll_timeout(), Some(T0 + 2_500));
    s.handle_timeout(T0 + 2_499);
    assert!(s.get(&id).unwrap().state().is_pending(), "not one ms early");
    assert_eq!(s.poll_update(), None);
    s.handle_timeout(T0 + 2_500);
    assert_eq!(s.get(&id).unwrap().state(), &CommandState::TimedOut);
    assert_eq!(updates(&mut s), vec![CommandChange::TimedOut]);
    assert_eq!(s.poll_transmit(), None, "a timeout is local, never transmitted");
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(T0 + 9_999);
    assert_eq!(s.poll_update(), None, "times out once");

    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    assert_eq!(s.get(&id).unwrap().window_ms(), DEFAULT_ACK_WINDOW_MS);
    assert_eq!(s.poll_timeout(), Some(T0 + 10_000));
    assert_eq!(ack_window(Some(0)), DEFAULT_ACK_WINDOW_MS);
    assert_eq!(ack_window(Some(u64::MAX)), MAX_ACK_WINDOW_MS);
    assert_eq!(ack_window(Some(750)), 750);
}

#[test]
fn a_late_ack_after_timeout_still_records_the_decision() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, Some(1_000));
    s.handle_timeout(T0 + 1_000);
    assert!(s.handle_event(&accepted(&id, "ACK-LATE", T0 + 1_400), T0 + 1_400));
    assert!(matches!(s.get(&id).unwrap().state(), CommandState::Accepted { .. }));
    assert_eq!(updates(&mut s), vec![CommandChange::TimedOut, CommandChange::Accepted]);
}

#[test]
fn retry_sends_identical_bytes_and_restarts_the_window() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = s.send(&to(), &allow(), Some(1_000), T0).unwrap();
    let first = s.poll_transmit().unwrap();
    s.handle_timeout(T0 + 1_000);
    s.retry(&id, T0 + 3_000).unwrap();
    let second = s.poll_transmit().unwrap();
    assert_eq!(first, second, "same bytes, same id");
    let c = s.get(&id).unwrap();
    assert_eq!(c.state(), &CommandState::Pending { deadline: T0 + 4_000 });
    assert_eq!(c.sends(), 2);
    assert_eq!(c.times().first_sent, T0);
    assert_eq!(c.times().last_sent, T0 + 3_000);
    s.handle_timeout(T0 + 3_999);
    assert!(s.get(&id).unwrap().state().is_pending());

    s.handle_relay_error(&id, "ambiguous", None, T0 + 3_100);
    s.retry(&id, T0 + 5_000).unwrap();
    assert_eq!(s.poll_transmit().unwrap(), first, "a relay-refused command may be retried as is");
    s.handle_event(&accepted(&id, "ACK1", T0 + 5_050), T0 + 5_050);
    assert_eq!(s.get(&id).unwrap().ack_latency_ms(), Some(50), "measured from the latest send");
    assert_eq!(s.retry(&id, T0 + 6_000), Err(RetryError::AlreadyDecided(id.clone())));
    assert_eq!(s.retry("nope", T0), Err(RetryError::Unknown("nope".into())));
    assert_eq!(s.poll_transmit(), None);
    assert_eq!(
        updates(&mut s),
        vec![
            CommandChange::Sent,
            CommandChange::TimedOut,
            CommandChange::Retried,
            CommandChange::RelayRefused,
            CommandChange::Retried,
            CommandChange::Accepted
        ]
    );
}

#[test]
fn a_byte_identical_reack_collapses_silently() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    let ack = accepted(&id, "ACK1", T0 + 10);
    assert!(s.handle_event(&ack, T0 + 10));
    let replay = Event::parse(ack.raw()).unwrap();
    assert!(s.handle_event(&replay, T0 + 900));
    assert_eq!(updates(&mut s), vec![CommandChange::Accepted]);
    assert_eq!(s.get(&id).unwrap().times().settled, Some(T0 + 10));
}

#[test]
fn a_second_distinct_ack_is_a_violation_and_changes_nothing() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    s.handle_event(&accepted(&id, "ACK1", T0 + 10), T0 + 10);
    assert!(s.handle_event(&rejected(&id, "refused", None, T0 + 20), T0 + 20));
    let changes = updates(&mut s);
    assert_eq!(changes.len(), 2);
    assert!(
        matches!(&changes[1], CommandChange::Violation(v) if v.rule == "control.ack.second-decision"),
        "{changes:?}"
    );
    assert!(matches!(s.get(&id).unwrap().state(), CommandState::Accepted { ack } if ack.id() == "ACK1"));

    let same_id_other_bytes = accepted(&id, "ACK1", T0 + 30);
    s.handle_event(&same_id_other_bytes, T0 + 30);
    assert!(
        matches!(updates(&mut s).as_slice(), [CommandChange::Violation(_)]),
        "same id, different bytes is distinct"
    );

    assert!(s.handle_relay_error(&id, "no-route", None, T0 + 40));
    assert!(
        matches!(updates(&mut s).as_slice(), [CommandChange::Violation(v)] if v.rule == "control.relay-error.after-ack")
    );
    assert!(matches!(s.get(&id).unwrap().state(), CommandState::Accepted { .. }));
}

#[test]
fn an_ack_from_another_session_does_not_settle() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    let stray = Draft::new("control.accepted")
        .cause(id.clone())
        .session("s_other")
        .seq(1)
        .build(&agent(), "ACKX", T0 + 5)
        .unwrap();
    assert!(s.handle_event(&stray, T0 + 5));
    assert!(s.get(&id).unwrap().state().is_pending());
    assert!(
        matches!(updates(&mut s).as_slice(), [CommandChange::Violation(v)] if v.rule == "control.ack.wrong-session")
    );
}

#[test]
fn the_outcome_may_cite_the_ack() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id =
        s.send(&to().with_run("r_1"), &Command::Cancel { scope: CancelScope::Run, reason: None }, None, T0).unwrap();
    s.handle_event(&accepted(&id, "ACK-C", T0 + 10), T0 + 10);
    let unrelated = agent_event(Draft::new("run.cancelled").cause("SOMETHING-ELSE"), "RC0", 6, T0 + 20);
    assert!(!s.handle_event(&unrelated, T0 + 20));
    let cancelled = agent_event(
        Draft::new("run.cancelled").run("r_1").cause("ACK-C").data(json!({"by": "control"})),
        "RC1",
        7,
        T0 + 30,
    );
    assert!(s.handle_event(&cancelled, T0 + 30));
    assert_eq!(s.get(&id).unwrap().outcome().map(Event::id), Some("RC1"));
}

#[test]
fn commands_and_acks_are_never_outcomes() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    let echoed = Event::parse(s.get(&id).unwrap().command().raw()).unwrap();
    assert!(!s.handle_event(&echoed, T0 + 1), "our own command echoed back");
    let follow_up =
        Draft::new("control.pause").session(SESSION).cause(id.clone()).build(&console(), "CMD2", T0 + 2).unwrap();
    assert!(!s.handle_event(&follow_up, T0 + 2), "a command citing ours is not its outcome");
    assert!(s.get(&id).unwrap().outcome().is_none());
}

#[test]
fn decided_commands_are_bounded_and_pending_ones_kept() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let keep = s.send(&to(), &Command::Pause, Some(MAX_ACK_WINDOW_MS), T0).unwrap();
    let extra = 5;
    let mut ids = Vec::new();
    for _ in 0..SETTLED_CAPACITY + extra {
        ids.push(s.send(&to(), &Command::Resume, Some(100), T0).unwrap());
    }
    s.handle_timeout(T0 + 100);
    assert_eq!(s.len(), SETTLED_CAPACITY + 1);
    assert!(s.get(&keep).unwrap().state().is_pending(), "pending commands are never forgotten");
    for gone in &ids[..extra] {
        assert!(s.get(gone).is_none(), "oldest decided forgotten first");
    }
    assert!(s.get(&ids[extra]).is_some());
    assert_eq!(s.iter().next().map(|c| c.id().to_owned()), Some(keep));
}

#[test]
fn the_update_queue_is_bounded() {
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let id = sent(&mut s, None);
    s.handle_event(&accepted(&id, "ACK0", T0 + 1), T0 + 1);
    for i in 0..UPDATE_QUEUE_CAPACITY + 10 {
        s.handle_event(&accepted(&id, &format!("ACK-DUP-{i}"), T0 + 2), T0 + 2);
    }
    let all = updates(&mut s);
    assert_eq!(all.len(), UPDATE_QUEUE_CAPACITY);
    assert!(all.iter().all(|c| matches!(c, CommandChange::Violation(_))), "the oldest (Accepted) was dropped");
}

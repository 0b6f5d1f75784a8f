//! The control target as an agent uses it: dedupe with recorded acks,
//! the unsupported/invalid gates, AEP-0008 text answers, AEP-0006 forms,
//! outcome events, and a full round trip with the sender.

use aep_engine::control::ack::{self, Decision, NackReason};
use aep_engine::control::answer::{Answer, AppliedRule};
use aep_engine::control::sender::{Address, CancelScope, Command, CommandState, ControlSender};
use aep_engine::control::target::outcome::PHASE_PAUSED;
use aep_engine::control::target::{
    Action, ControlTarget, Received, RequestState, SeqCounter, TargetError, Verdict, DEDUPE_CAPACITY,
};
use aep_engine::protocol::ids::{source_uri, Draft, Identity};
use aep_engine::rng::Seeded;
use aep_engine::{Capture, Event, UnixMs};
use serde_json::{json, Map, Value};

const T0: UnixMs = UnixMs(1_783_073_703_000);
const SESSION: &str = "s_8f2c";

const ALL_CORE: [&str; 4] = ["control.attention.respond", "control.cancel", "control.pause", "control.resume"];

fn agent() -> Identity {
    Identity::new(source_uri("host-a", "demo-agent", Some(SESSION)), "demo-agent")
}

fn console() -> Identity {
    Identity::new(source_uri("laptop", "approval-console", None), "approval-console")
}

/// A target that keeps people's text in what it emits (most tests read it
/// back); the default ceiling has its own test.
fn target(accepts: &[&str]) -> ControlTarget {
    ControlTarget::new(agent(), accepts.iter().copied(), Seeded::new(2)).unwrap().with_ceiling(Capture::Full)
}

fn command(c: &Command, id: &str) -> Event {
    c.build(&console(), &Address::session(SESSION).with_run("r_1"), id, T0).unwrap()
}

fn respond(request: &str, answer: Answer, id: &str) -> Event {
    command(&Command::Respond { request: request.into(), answer }, id)
}

/// The agent raises a request; `seqs` hands out its position.
fn requested(id: &str, data: Value, seqs: &mut SeqCounter) -> Event {
    use aep_engine::control::target::Sequencer;
    Draft::new("attention.requested")
        .session(SESSION)
        .run("r_1")
        .seq(seqs.next_seq(SESSION))
        .data(data)
        .build(&agent(), id, T0)
        .unwrap()
}

fn permission() -> Value {
    json!({"kind": "permission", "prompt": "Run rm -rf build/?",
           "options": [{"id": "allow", "label": "Allow once"}, {"id": "session", "label": "Allow for session"},
                       {"id": "deny", "label": "Deny"}, {"id": "deny2", "label": "Allow for session"}]})
}

fn nack_reason(r: &Received) -> Option<(NackReason, Option<String>)> {
    match r {
        Received::Nacked { ack, reason } => match ack::parse(ack).unwrap().decision {
            Decision::Rejected { reason: wire, detail, .. } => {
                assert_eq!(wire, Some(*reason));
                Some((*reason, detail))
            }
            Decision::Accepted => panic!("nack carries accepted"),
        },
        _ => None,
    }
}

fn applied(r: &Received) -> (Answer, AppliedRule) {
    match r {
        Received::Fresh { action: Action::Respond { applied, .. }, .. } => (applied.answer.clone(), applied.rule),
        other => panic!("expected an accepted respond, got {other:?}"),
    }
}

#[test]
fn a_redelivered_command_gets_the_recorded_ack_byte_for_byte() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    let pause = command(&Command::Pause, "CMD1");
    let first = t.handle_command(&pause, T0, &mut seqs).unwrap();
    let ack = match &first {
        Received::Fresh { action: Action::Pause, ack, command } => {
            assert_eq!(command, &pause);
            ack.clone()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(ack.ty(), "control.accepted");
    assert_eq!(ack.cause(), Some("CMD1"));
    assert_eq!(ack.session(), Some(SESSION));
    assert_eq!(ack.seq(), Some(0));
    assert_eq!(ack.agent(), "demo-agent");

    let again = t.handle_command(&pause, T0 + 5_000, &mut seqs).unwrap();
    assert_eq!(again, Received::Duplicate { ack: ack.raw_arc() });
    assert_eq!(&*again.ack_bytes(), ack.raw());
    assert_eq!(seqs.peek(SESSION), 1, "a duplicate takes no seq");

    let resume = command(&Command::Resume, "CMD2");
    let mut narrow = target(&["control.pause"]);
    let nacked = narrow.handle_command(&resume, T0, &mut seqs).unwrap();
    let redelivered = narrow.handle_command(&resume, T0 + 1, &mut seqs).unwrap();
    assert_eq!(redelivered.ack_bytes(), nacked.ack_bytes(), "nacks are recorded too");
    assert!(matches!(redelivered, Received::Duplicate { .. }));
}

#[test]
fn dedupe_is_keyed_by_source_and_id() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    let mine = command(&Command::Pause, "CMD1");
    t.handle_command(&mine, T0, &mut seqs).unwrap();
    let other_sender = Identity::new(source_uri("phone", "approval-console", None), "approval-console");
    let theirs = Command::Pause.build(&other_sender, &Address::session(SESSION), "CMD1", T0).unwrap();
    assert!(matches!(t.handle_command(&theirs, T0, &mut seqs).unwrap(), Received::Fresh { .. }));
}

#[test]
fn dedupe_memory_is_bounded_and_forgotten_commands_count_as_new() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    let first = command(&Command::Pause, "CMD-0");
    let first_ack = t.handle_command(&first, T0, &mut seqs).unwrap();
    for i in 1..=DEDUPE_CAPACITY {
        t.handle_command(&command(&Command::Pause, &format!("CMD-{i}")), T0, &mut seqs).unwrap();
    }
    assert_eq!(t.remembered(), DEDUPE_CAPACITY);
    let newest = command(&Command::Pause, &format!("CMD-{DEDUPE_CAPACITY}"));
    assert!(matches!(t.handle_command(&newest, T0, &mut seqs).unwrap(), Received::Duplicate { .. }));
    let second = command(&Command::Pause, "CMD-1");
    assert!(matches!(t.handle_command(&second, T0, &mut seqs).unwrap(), Received::Duplicate { .. }));
    let forgotten = t.handle_command(&first, T0 + 1, &mut seqs).unwrap();
    assert!(matches!(forgotten, Received::Fresh { .. }), "evicted: treated as a new command");
    assert_ne!(forgotten.ack_bytes(), first_ack.ack_bytes());
    assert_eq!(t.remembered(), DEDUPE_CAPACITY);
}

#[test]
fn undeclared_types_are_unsupported_declared_but_unactionable_are_invalid() {
    let mut t = target(&["control.attention.respond", "control.cancel", "control.pause"]);
    let mut seqs = SeqCounter::new();
    let mut nack = |t: &mut ControlTarget, ev: Event| nack_reason(&t.handle_command(&ev, T0, &mut seqs).unwrap());

    assert_eq!(nack(&mut t, command(&Command::Resume, "C1")).map(|n| n.0), Some(NackReason::Unsupported));
    let vendor = Command::Vendor {
        vendor: "demo".into(),
        verb: "instruct".into(),
        data: Map::new(),
        capture: Default::default(),
    };
    assert_eq!(nack(&mut t, command(&vendor, "C2")).map(|n| n.0), Some(NackReason::Unsupported));

    let unknown = nack(&mut t, respond("NO-SUCH-REQUEST", Answer::option("allow"), "C3")).unwrap();
    assert_eq!(unknown.0, NackReason::Invalid, "declared type with nothing to act on is invalid, never unsupported");
    assert!(unknown.1.unwrap().contains("NO-SUCH-REQUEST"));

    let no_scope = Draft::new("control.cancel").session(SESSION).data(json!({})).build(&console(), "C4", T0).unwrap();
    assert_eq!(nack(&mut t, no_scope).map(|n| n.0), Some(NackReason::Invalid));
    let run_scope_no_run = Draft::new("control.cancel")
        .session(SESSION)
        .data(json!({"scope": "run"}))
        .build(&console(), "C5", T0)
        .unwrap();
    assert_eq!(nack(&mut t, run_scope_no_run).map(|n| n.0), Some(NackReason::Invalid));
    let bad_answer = Draft::new("control.attention.respond")
        .session(SESSION)
        .subject("R")
        .data(json!({"answer": {}}))
        .build(&console(), "C6", T0)
        .unwrap();
    assert_eq!(nack(&mut t, bad_answer).map(|n| n.0), Some(NackReason::Invalid));

    assert!(matches!(
        t.handle_command(&Event::parse(&accepted_json()).unwrap(), T0, &mut SeqCounter::new()),
        Err(TargetError::NotACommand { .. })
    ));
    assert!(matches!(
        ControlTarget::new(agent(), ["control.accepted"], Seeded::new(2)),
        Err(TargetError::NotACommandType(_))
    ));
}

fn accepted_json() -> String {
    json!({"aep": "0.1", "id": "A", "type": "control.accepted", "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/x",
           "agent": "x", "session": SESSION, "seq": 1, "cause": "C"})
    .to_string()
}

#[test]
fn answered_closed_foreign_and_oob_requests_are_invalid() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let ok = t.handle_command(&respond("R1", Answer::option("allow"), "C1"), T0, &mut seqs).unwrap();
    assert!(matches!(ok, Received::Fresh { .. }));
    assert_eq!(t.request("R1").unwrap().1, &RequestState::Answered { command: "C1".into() });
    let twice = t.handle_command(&respond("R1", Answer::option("deny"), "C2"), T0, &mut seqs).unwrap();
    assert!(nack_reason(&twice).unwrap().1.unwrap().contains("already answered"));

    t.register_request(&requested("R2", permission(), &mut seqs), None).unwrap();
    assert!(t.close_request("R2"));
    let closed = t.handle_command(&respond("R2", Answer::option("allow"), "C3"), T0, &mut seqs).unwrap();
    assert_eq!(nack_reason(&closed).map(|n| n.0), Some(NackReason::Invalid));

    let oob =
        json!({"kind": "permission", "prompt": "p", "options": [{"id": "ok", "label": "OK"}], "respond_via": ["oob"]});
    t.register_request(&requested("R3", oob, &mut seqs), None).unwrap();
    let r = t.handle_command(&respond("R3", Answer::option("ok"), "C4"), T0, &mut seqs).unwrap();
    assert_eq!(nack_reason(&r).map(|n| n.0), Some(NackReason::Invalid));

    t.register_request(&requested("R4", permission(), &mut seqs), None).unwrap();
    let elsewhere = Command::Respond { request: "R4".into(), answer: Answer::option("allow") }
        .build(&console(), &Address::session("s_other"), "C5", T0)
        .unwrap();
    let r = t.handle_command(&elsewhere, T0, &mut seqs).unwrap();
    assert!(nack_reason(&r).unwrap().1.unwrap().contains("another session"));
    assert_eq!(t.request("R4").unwrap().1, &RequestState::Open);
}

#[test]
fn text_naming_an_option_by_id_or_label_is_that_option() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    for (i, (text, expected)) in [
        ("deny", "deny"),
        ("  DENY\n", "deny"),
        ("allow once", "allow"),
        ("Allow Once ", "allow"),
        ("SESSION", "session"),
    ]
    .into_iter()
    .enumerate()
    {
        let req = format!("R{i}");
        t.register_request(&requested(&req, permission(), &mut seqs), Some("deny")).unwrap();
        let r = t.handle_command(&respond(&req, Answer::text(text), &format!("C{i}")), T0, &mut seqs).unwrap();
        assert_eq!(applied(&r), (Answer::option(expected), AppliedRule::TextNamedOption), "{text:?}");
    }
}

#[test]
fn unmatched_or_ambiguous_text_on_a_permission_request_is_never_permissive() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    let texts = ["yes", "ok go ahead", "allow", "Allow for session", "sure, allow it", ""];
    for (i, text) in texts.into_iter().enumerate() {
        let req = format!("R{i}");
        t.register_request(&requested(&req, permission(), &mut seqs), Some("deny")).unwrap();
        let r = t.handle_command(&respond(&req, Answer::text(text), &format!("C{i}")), T0, &mut seqs).unwrap();
        let (answer, rule) = applied(&r);
        if text == "allow" {
            assert_eq!(answer, Answer::option("allow"), "the option's own id is a match, not a guess");
            continue;
        }
        assert_eq!(answer, Answer::Option { id: "deny".into(), text: Some(text.into()) }, "{text:?}");
        assert_eq!(rule, AppliedRule::UnmatchedTextRefused);
    }

    t.register_request(&requested("RX", permission(), &mut seqs), None).unwrap();
    let r = t.handle_command(&respond("RX", Answer::text("go on then"), "CX"), T0, &mut seqs).unwrap();
    let (reason, detail) = nack_reason(&r).expect("no refusing option declared: nacked, not applied");
    assert_eq!(reason, NackReason::Invalid);
    assert!(detail.is_some());
    assert_eq!(t.request("RX").unwrap().1, &RequestState::Open, "a nacked answer leaves the request open");

    let input = json!({"kind": "input", "prompt": "Which DB?", "options": [{"id": "a", "label": "Same"}, {"id": "b", "label": "same"}]});
    t.register_request(&requested("RI", input, &mut seqs), None).unwrap();
    let r = t.handle_command(&respond("RI", Answer::text("SAME"), "CI"), T0, &mut seqs).unwrap();
    assert_eq!(
        applied(&r),
        (Answer::text("SAME"), AppliedRule::AsSent),
        "ambiguous label on an input request stays free text"
    );
}

#[test]
fn option_answers_must_name_an_offered_option() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let r = t.handle_command(&respond("R1", Answer::option("ALLOW"), "C1"), T0, &mut seqs).unwrap();
    assert_eq!(nack_reason(&r).map(|n| n.0), Some(NackReason::Invalid), "option is the exact channel");
    let with_reason = Answer::Option { id: "deny".into(), text: Some("use staging".into()) };
    let r = t.handle_command(&respond("R1", with_reason.clone(), "C2"), T0, &mut seqs).unwrap();
    assert_eq!(applied(&r), (with_reason, AppliedRule::AsSent));
}

fn deploy_form() -> Value {
    json!({"kind": "form", "prompt": "Configure the deployment", "fields": [
        {"id": "name", "type": "string", "label": "Service name", "required": true},
        {"id": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
        {"id": "staged", "type": "boolean", "label": "Stage first?"},
        {"id": "regions", "type": "select", "label": "Regions", "multi": true,
         "choices": [{"id": "1", "label": "us-east"}, {"id": "2", "label": "eu-west"}]},
        {"id": "db", "type": "select", "label": "Database", "other": true,
         "choices": [{"id": "1", "label": "PostgreSQL"}]},
        {"id": "tier", "type": "select", "label": "Tier", "choices": [{"id": "free", "label": "Free"}]}
    ]})
}

fn values(v: Value) -> Answer {
    Answer::values(v.as_object().unwrap().clone())
}

#[test]
fn form_answers_are_checked_field_by_field() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("F1", deploy_form(), &mut seqs), None).unwrap();
    let cases = [
        (json!({"replicas": 2}), "Service name"),
        (json!({"name": "api", "tier": "gold"}), "gold"),
        (json!({"name": "api", "replicas": 10}), "at most 9"),
        (json!({"name": "api", "replicas": 0}), "at least 1"),
        (json!({"name": "api", "staged": "yes"}), "Stage first?"),
        (json!({"name": "api", "regions": "1"}), "Regions"),
        (json!({"name": "api", "regions": ["1", "9"]}), "\u{201c}9\u{201d}"),
    ];
    for (i, (v, mentions)) in cases.into_iter().enumerate() {
        let r = t.handle_command(&respond("F1", values(v.clone()), &format!("BAD{i}")), T0, &mut seqs).unwrap();
        let (reason, detail) = nack_reason(&r).unwrap_or_else(|| panic!("{v} was accepted"));
        assert_eq!(reason, NackReason::Invalid);
        let detail = detail.unwrap();
        assert!(detail.contains(mentions), "{v}: {detail}");
    }
    let r = t.handle_command(&respond("F1", Answer::text("api"), "TEXT"), T0, &mut seqs).unwrap();
    assert_eq!(nack_reason(&r).map(|n| n.0), Some(NackReason::Invalid), "a form is answered with values");

    let good = values(
        json!({"name": "api", "replicas": 9, "staged": false, "regions": ["1", "2"], "db": "MariaDB", "tier": "free"}),
    );
    let r = t.handle_command(&respond("F1", good.clone(), "GOOD"), T0, &mut seqs).unwrap();
    assert_eq!(
        applied(&r),
        (good, AppliedRule::AsSent),
        "other:true takes free text; the request stayed open after nacks"
    );
}

#[test]
fn values_on_a_non_form_request_are_invalid() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let r = t.handle_command(&respond("R1", values(json!({"x": "allow"})), "C1"), T0, &mut seqs).unwrap();
    assert_eq!(nack_reason(&r).map(|n| n.0), Some(NackReason::Invalid));
}

#[test]
fn the_agent_stays_sovereign() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let cmd = respond("R1", Answer::option("allow"), "C1");
    let mut asked = 0;
    let r = t
        .handle_command_with(&cmd, T0, &mut seqs, |action| {
            asked += 1;
            assert!(matches!(action, Action::Respond { .. }));
            Verdict::Reject { reason: NackReason::Refused, detail: Some("too fast".into()) }
        })
        .unwrap();
    assert_eq!(nack_reason(&r), Some((NackReason::Refused, Some("too fast".into()))));
    let again = t.handle_command_with(&cmd, T0, &mut seqs, |_| panic!("a duplicate is never re-decided")).unwrap();
    assert!(matches!(again, Received::Duplicate { .. }));
    assert_eq!(asked, 1);
    assert_eq!(t.request("R1").unwrap().1, &RequestState::Open);
    let resumed = t.handle_command_with(&command(&Command::Resume, "C2"), T0, &mut seqs, |_| Verdict::Accept).unwrap();
    assert!(matches!(resumed, Received::Fresh { .. }), "declared types reach the verdict");
}

#[test]
fn outcome_events_are_correlated_and_sequenced() {
    let mut t = target(&ALL_CORE);
    let mut seqs = SeqCounter::with_epoch(2);
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let cmd = respond("R1", Answer::text("not on main"), "C1");
    let r = t.handle_command(&cmd, T0 + 4_000, &mut seqs).unwrap();
    let (ack, request, applied) = match r {
        Received::Fresh { ack, action: Action::Respond { request, applied }, .. } => (ack, request, applied),
        other => panic!("{other:?}"),
    };
    assert_eq!(ack.position(), Some((2, 1)));
    let [answered, resolved] = t.answer_outcomes(&cmd, &request, &applied.answer, T0 + 4_250, &mut seqs).unwrap();
    for ev in [&answered, &resolved] {
        Event::parse(ev.raw()).unwrap();
        assert_eq!(ev.subject(), Some("R1"));
        assert_eq!(ev.cause(), Some("C1"));
        assert_eq!(ev.session(), Some(SESSION));
        assert_eq!(ev.run(), Some("r_1"));
    }
    assert_ne!(answered.id(), resolved.id());
    assert_eq!(answered.position(), Some((2, 2)));
    assert_eq!(resolved.position(), Some((2, 3)));
    assert_eq!(answered.data_field("answer"), Some(&json!({"option": "deny", "text": "not on main"})));
    assert_eq!(answered.data_field("via"), Some(&json!("control")));
    assert_eq!(answered.data_field("by"), Some(&json!("approval-console")));
    assert_eq!(answered.capture(), Capture::Full, "the reason is text, as typed");
    assert_eq!(resolved.data_field("resolution"), Some(&json!("answered")));
    assert_eq!(resolved.data_field("latency_ms"), Some(&json!(4_250)));

    let cancel = command(&Command::Cancel { scope: CancelScope::Run, reason: Some("stuck".into()) }, "C2");
    let cancelled = t.run_cancelled(&cancel, Some("stuck"), T0, &mut seqs).unwrap();
    assert_eq!((cancelled.ty(), cancelled.cause(), cancelled.run()), ("run.cancelled", Some("C2"), Some("r_1")));
    assert_eq!(cancelled.data_field("by"), Some(&json!("control")));
    let pause = command(&Command::Pause, "C3");
    let status = t.progress_status(&pause, PHASE_PAUSED, None, T0, &mut seqs).unwrap();
    assert_eq!((status.ty(), status.cause()), ("progress.status", Some("C3")));
    assert_eq!(status.data_field("phase"), Some(&json!("paused")));
    assert_eq!(status.position(), Some((2, 5)));
}

#[test]
fn round_trip_between_sender_and_target() {
    let mut t = target(&ALL_CORE);
    let mut last = 40;
    let mut seqs = move |_: &str| {
        last += 1;
        last
    };
    let mut s = ControlSender::new(console(), Seeded::new(1));
    let mut agent_seqs = SeqCounter::new();
    let req = requested("R1", permission(), &mut agent_seqs);
    t.register_request(&req, Some("deny")).unwrap();

    let id = s
        .send(
            &Address::session(SESSION),
            &Command::Respond { request: "R1".into(), answer: Answer::text("Deny") },
            None,
            T0,
        )
        .unwrap();
    let wire = Event::parse(&s.poll_transmit().unwrap()).unwrap();
    let received = t.handle_command(&wire, T0 + 100, &mut seqs).unwrap();
    assert!(received.ack_bytes().contains("\"seq\":41"), "the closure hands out the seq");
    let Received::Fresh { ack, action: Action::Respond { request, applied }, .. } = received else { panic!() };
    assert_eq!(applied.answer, Answer::option("deny"));
    s.handle_event(&Event::parse(ack.raw()).unwrap(), T0 + 120);
    assert!(matches!(s.get(&id).unwrap().state(), CommandState::Accepted { .. }));

    let [answered, _] = t.answer_outcomes(&wire, &request, &applied.answer, T0 + 130, &mut seqs).unwrap();
    s.handle_event(&answered, T0 + 140);
    assert_eq!(s.get(&id).unwrap().outcome().map(Event::id), Some(answered.id()));

    s.retry(&id, T0 + 200).unwrap_err();
    let redelivered = t.handle_command(&wire, T0 + 300, &mut seqs).unwrap();
    assert_eq!(&*redelivered.ack_bytes(), ack.raw());
}

/// What a person typed is never stamped `redacted` unredacted: it is
/// `full`, and a target at its default `metadata` ceiling keeps it out of
/// everything it emits (AEP-0003 §9.1).
#[test]
fn peoples_text_is_full_and_stays_under_the_default_ceiling() {
    let mut t = ControlTarget::new(agent(), ALL_CORE.iter().copied(), Seeded::new(2)).unwrap();
    assert_eq!(t.ceiling(), Capture::Metadata);
    let mut seqs = SeqCounter::new();
    t.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let cmd = respond("R1", Answer::text("no, the password is hunter2"), "C1");
    assert_eq!(cmd.capture(), Capture::Full, "the command carries the text as typed");
    let Received::Fresh { action: Action::Respond { request, applied }, .. } =
        t.handle_command(&cmd, T0, &mut seqs).unwrap()
    else {
        panic!("a fresh respond")
    };
    let [answered, _] = t.answer_outcomes(&cmd, &request, &applied.answer, T0, &mut seqs).unwrap();
    assert!(!answered.raw().contains("hunter2"), "{}", answered.raw());
    assert!(answered.capture() <= Capture::Metadata, "{}", answered.raw());

    let nack = t.handle_command(&respond("R-unknown", Answer::text("hunter2 again"), "C2"), T0, &mut seqs).unwrap();
    assert!(!nack.ack_bytes().contains("hunter2"));

    let full = target(&ALL_CORE);
    assert_eq!(full.ceiling(), Capture::Full);
    let mut seqs = SeqCounter::new();
    let mut full = full;
    full.register_request(&requested("R1", permission(), &mut seqs), Some("deny")).unwrap();
    let Received::Fresh { action: Action::Respond { request, applied }, .. } =
        full.handle_command(&cmd, T0, &mut seqs).unwrap()
    else {
        panic!("a fresh respond")
    };
    let [answered, _] = full.answer_outcomes(&cmd, &request, &applied.answer, T0, &mut seqs).unwrap();
    assert_eq!(answered.capture(), Capture::Full);
    assert!(answered.raw().contains("hunter2"), "kept in full at a full ceiling");
}

/// A form answered through a target at its default `metadata` ceiling:
/// closed-select choices, numbers and booleans are structure and stay
/// (AEP-0002 §5.3, AEP-0006); only free text goes. The request's fields
/// say which is which, so the answer is gated by them, not by a blunt
/// down-level that cannot tell a choice id from typed text.
#[test]
fn form_answers_keep_their_choices_under_the_default_ceiling() {
    use aep_engine::store::{Store, StoreConfig};
    let form = json!({"kind": "form", "prompt": "Where to?", "fields": [
        {"id": "env", "type": "select", "label": "Environment", "required": true,
         "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
        {"id": "n", "type": "number", "label": "Replicas"},
        {"id": "why", "type": "string", "label": "Why"},
        {"id": "db", "type": "select", "label": "Database", "other": true, "choices": [{"id": "pg", "label": "PostgreSQL"}]}
    ]});
    let answer = json!({"env": "staging", "n": 2, "why": "ship it", "db": "MariaDB"});
    for (ceiling, expected, capture) in [
        (Capture::Metadata, json!({"env": "staging", "n": 2}), Capture::Metadata),
        (Capture::Redacted, json!({"env": "staging", "n": 2}), Capture::Metadata),
        (Capture::Full, answer.clone(), Capture::Full),
    ] {
        let mut t =
            ControlTarget::new(agent(), ALL_CORE.iter().copied(), Seeded::new(2)).unwrap().with_ceiling(ceiling);
        let mut seqs = SeqCounter::new();
        let request = requested("F1", form.clone(), &mut seqs);
        t.register_request(&request, None).unwrap();
        let cmd = respond("F1", values(answer.clone()), "C1");
        let Received::Fresh { action: Action::Respond { request: open, applied }, ack, .. } =
            t.handle_command(&cmd, T0, &mut seqs).unwrap()
        else {
            panic!("a fresh respond")
        };
        let [answered, resolved] = t.answer_outcomes(&cmd, &open, &applied.answer, T0, &mut seqs).unwrap();
        assert_eq!(answered.data().unwrap()["answer"], json!({"values": expected}), "{ceiling:?}: {}", answered.raw());
        assert_eq!(answered.capture(), capture, "{ceiling:?}");

        // The engine's own fold finds the answer honest.
        let mut store = Store::new(StoreConfig::default());
        for e in [request, cmd.clone(), ack, answered, resolved] {
            store.apply(e, None, T0);
        }
        let violations: Vec<String> = store.violations().map(|v| v.detail.clone()).collect();
        assert!(violations.is_empty(), "{ceiling:?}: {violations:?}");
    }
}

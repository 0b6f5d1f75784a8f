//! The multi-relay hub driven by a fake clock and two scripted relays:
//! every frame the hub writes is decoded per relay, every frame a relay
//! "sends" is encoded by the same frame module a relay uses.

use aep_client::view;
use aep_engine::client::hub::{Hub, HubChange, HubConfig, HubError, Recipient, RelaySpec, MAX_CHANGES};
use aep_engine::client::{Config, SocketAction, SocketDriven, State};
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{CancelScope, CommandChange, CommandState, RelayCode};
use aep_engine::protocol::frame::{
    Capabilities, ControlCapability, ErrorFrame, Frame, Hello, HelloIdentity, ReplayCapability, Role, RosterEntry,
};
use aep_engine::protocol::ids::Identity;
use aep_engine::store;
use aep_engine::{Capture, Event, UnixMs};
use serde_json::{json, Map, Value};

const T0: UnixMs = UnixMs(1_783_073_703_000);
const A: usize = 0;
const B: usize = 1;

struct Harness {
    hub: Hub,
    now: UnixMs,
    /// Frames written, per relay.
    sent: Vec<Vec<Frame>>,
    actions: Vec<(usize, SocketAction)>,
    changes: Vec<HubChange>,
}

impl Harness {
    fn new(relays: &[&str], ack_window_ms: Option<u64>) -> Harness {
        let mut config = HubConfig::new(Identity::new("aep://console.test/agent/console", "console"), 7);
        config.ack_window_ms = ack_window_ms;
        let specs = relays.iter().map(|l| RelaySpec { label: (*l).to_owned(), config: Config::consumer() }).collect();
        Harness {
            hub: Hub::new(config, specs).expect("valid hub"),
            now: T0,
            sent: vec![Vec::new(); relays.len()],
            actions: Vec::new(),
            changes: Vec::new(),
        }
    }

    fn flush(&mut self) {
        while let Some((relay, text)) = self.hub.poll_transmit() {
            let frame = Frame::decode(&text).unwrap_or_else(|e| panic!("hub wrote an unreadable frame {text}: {e}"));
            self.sent[relay].push(frame);
        }
        while let Some(a) = self.hub.poll_action() {
            self.actions.push(a);
        }
        while let Some(c) = self.hub.poll_change() {
            self.changes.push(c);
        }
    }

    fn take_sent(&mut self, relay: usize) -> Vec<Frame> {
        self.flush();
        std::mem::take(&mut self.sent[relay])
    }

    fn take_changes(&mut self) -> Vec<HubChange> {
        self.flush();
        std::mem::take(&mut self.changes)
    }

    fn relay(&mut self, relay: usize, frame: Frame) {
        self.hub.handle_text(relay, &frame.encode(), self.now);
        self.flush();
    }

    fn advance(&mut self, ms: u64) {
        self.now = self.now + ms;
        self.hub.handle_timeout(self.now);
        self.flush();
    }

    /// Connects every relay through its handshake and answers the first
    /// roster request with `roster[relay]`.
    fn connect_all(&mut self, rosters: Vec<Vec<RosterEntry>>) {
        self.connect_all_greeted(rosters, |_| relay_hello());
    }

    /// [`Harness::connect_all`], each relay greeting with `hello(relay)`.
    fn connect_all_greeted(&mut self, rosters: Vec<Vec<RosterEntry>>, hello: impl Fn(usize) -> Frame) {
        self.hub.connect(self.now);
        self.flush();
        let opens: Vec<_> = std::mem::take(&mut self.actions);
        assert_eq!(opens.len(), rosters.len());
        assert!(opens.iter().all(|(_, a)| *a == SocketAction::Open), "{opens:?}");
        for (relay, entries) in rosters.into_iter().enumerate() {
            self.hub.handle_open(relay, self.now);
            self.relay(relay, hello(relay));
            let sent = self.take_sent(relay);
            let sub = sent.iter().find_map(|f| if let Frame::Subscribe(s) = f { Some(s.id.clone()) } else { None });
            self.relay(relay, Frame::Subscribed { id: sub.expect("a subscription per relay") });
            let ask = roster_request(&sent).expect("a live relay that declares rosters is asked for one");
            self.relay(relay, Frame::Roster { id: ask, entries });
        }
        self.take_changes();
    }

    fn respond(&mut self, request: &str, answer: Answer) -> Result<String, HubError> {
        let out = self.hub.respond(request, answer, self.now);
        self.flush();
        out
    }

    fn command_updates(&mut self) -> Vec<(String, CommandChange)> {
        self.take_changes()
            .into_iter()
            .filter_map(|c| if let HubChange::Command(u) = c { Some((u.id, u.change)) } else { None })
            .collect()
    }
}

/// A view as the JSON it crosses into JavaScript as.
fn shape(view: impl serde::Serialize) -> Value {
    serde_json::to_value(view).unwrap()
}

fn relay_hello() -> Frame {
    Frame::Hello(Hello {
        versions: vec!["0.1".into()],
        role: Some(Role::Both),
        identity: Some(HelloIdentity { agent: Some("relay".into()), ..HelloIdentity::default() }),
        capabilities: Capabilities {
            replay: Some(ReplayCapability { buffer: Some(512), all: Some(true), other: Map::new() }),
            roster: Some(Map::new()),
            filters: Some(vec!["attr-match".into()]),
            ..Capabilities::default()
        },
    })
}

fn roster_request(frames: &[Frame]) -> Option<String> {
    frames.iter().find_map(|f| if let Frame::RosterRequest { id } = f { Some(id.clone()) } else { None })
}

fn commands_in(frames: &[Frame]) -> Vec<&Event> {
    frames
        .iter()
        .filter_map(|f| if let Frame::Event(e) = f { Some(e) } else { None })
        .filter(|e| e.is_command())
        .collect()
}

fn entry(session: &str, window: Option<u64>) -> RosterEntry {
    RosterEntry {
        session: session.into(),
        agent: Some("demo".into()),
        instance: None,
        control: Some(ControlCapability::new(["control.attention.respond", "control.cancel"], window)),
        emits: None,
    }
}

/// An event of the demo agent in `session`.
fn agent_event(id: &str, ty: &str, session: &str, seq: u64, extra: Value) -> Event {
    let mut v = json!({
        "aep": "0.1", "id": id, "type": ty, "time": "2026-07-03T10:15:04.221Z",
        "source": "aep://h/agent/demo", "agent": "demo", "session": session, "seq": seq,
    });
    if let (Value::Object(m), Value::Object(x)) = (&mut v, extra) {
        m.extend(x);
    }
    Event::from_value(v).unwrap()
}

fn permission(id: &str, session: &str, seq: u64) -> Event {
    agent_event(
        id,
        "attention.requested",
        session,
        seq,
        json!({ "subject": "shell", "severity": "warning", "data": {
            "kind": "permission", "prompt": "Run `rm -rf build`?",
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]
        }}),
    )
}

fn ack(id: &str, ty: &str, session: &str, seq: u64, cause: &str, data: Value) -> Event {
    agent_event(id, ty, session, seq, json!({ "cause": cause, "data": data }))
}

#[test]
fn every_relay_is_opened_greeted_subscribed_and_asked_for_its_roster() {
    let mut h = Harness::new(&["a", "b"], None);
    h.hub.connect(h.now);
    h.flush();
    assert_eq!(h.actions, vec![(A, SocketAction::Open), (B, SocketAction::Open)]);
    h.hub.handle_open(B, h.now);
    let sent = h.take_sent(B);
    assert!(matches!(sent.as_slice(), [Frame::Hello(_)]), "hello first and alone: {sent:?}");
    assert!(h.take_sent(A).is_empty(), "relay a's socket is not open yet");
    h.relay(B, relay_hello());
    let sent = h.take_sent(B);
    assert!(sent.iter().any(|f| matches!(f, Frame::Subscribe(_))), "{sent:?}");
    assert!(roster_request(&sent).is_some(), "{sent:?}");
    let states: Vec<(usize, State)> = h
        .take_changes()
        .into_iter()
        .filter_map(|c| if let HubChange::Status { relay, state } = c { Some((relay, state)) } else { None })
        .collect();
    assert!(states.contains(&(B, State::Live)));
    assert!(states.contains(&(A, State::Connecting)));
    assert!(!states.contains(&(A, State::Live)));
    assert_eq!(h.hub.state(A), Some(&State::Connecting));
}

#[test]
fn an_answer_goes_through_the_relay_the_request_came_from_with_the_declared_window() {
    let mut h = Harness::new(&["a", "b"], Some(4_000));
    h.connect_all(vec![vec![], vec![entry("s1", Some(2_500))]]);
    h.relay(B, Frame::Event(permission("REQ1", "s1", 3)));

    let changes = h.take_changes();
    assert!(changes.iter().any(|c| matches!(c, HubChange::Event { relay: B, event } if event.id() == "REQ1")));
    assert!(changes
        .iter()
        .any(|c| matches!(c, HubChange::Store(store::Change::CardOpened(r)) if &*r.request == "REQ1")));
    let inbox = h.hub.store().inbox();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].request().unwrap().relay.as_deref(), Some("b"), "provenance: the relay label");

    let id = h.respond("REQ1", Answer::option("allow")).expect("sent");
    assert!(commands_in(&h.take_sent(A)).is_empty(), "nothing goes to relay a");
    let sent = h.take_sent(B);
    let cmds = commands_in(&sent);
    assert_eq!(cmds.len(), 1);
    let cmd = cmds[0];
    assert_eq!(cmd.id(), id);
    assert_eq!(cmd.ty(), "control.attention.respond");
    assert_eq!((cmd.subject(), cmd.cause(), cmd.session()), (Some("REQ1"), Some("REQ1"), Some("s1")));
    assert_eq!(cmd.seq(), None, "a sender does not own the target's order");
    assert_eq!(cmd.data_field("answer"), Some(&json!({"option": "allow"})));
    assert_eq!(h.hub.sender().get(&id).unwrap().window_ms(), 2_500, "the roster's declared window wins");
    assert_eq!(h.hub.command_relay(&id), Some(B));
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::Sent)]);
    assert!(
        h.hub
            .store()
            .command(&store::CommandRef {
                session: store::SessionKey::new("aep://h/agent/demo", "s1"),
                id: id.as_str().into()
            })
            .is_some(),
        "our own command starts its audit chain at once"
    );

    h.relay(B, Frame::Event(ack("ACK1", "control.accepted", "s1", 4, &id, json!({}))));
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::Accepted)]);
    let answered = agent_event(
        "ANS1",
        "attention.answered",
        "s1",
        5,
        json!({"subject": "REQ1", "cause": id,
        "data": {"answer": {"option": "allow"}, "by": "console", "via": "control"}}),
    );
    h.relay(B, Frame::Event(answered));
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::Outcome)]);
    let resolved = agent_event(
        "RES1",
        "attention.resolved",
        "s1",
        6,
        json!({"subject": "REQ1", "cause": id, "data": {"resolution": "answered"}}),
    );
    h.relay(B, Frame::Event(resolved));
    let changes = h.take_changes();
    assert!(
        changes.iter().any(|c| matches!(c, HubChange::Store(store::Change::CardClosed(r)) if &*r.request == "REQ1")),
        "{changes:?}"
    );
    assert!(h.hub.store().inbox().is_empty());
    let card = shape(view::card(h.hub.store().cards().next().unwrap()));
    assert_eq!(card["status"], "resolved");
    assert_eq!(card["relay"], "b");
    assert_eq!(card["answer"]["option"], "allow");
    assert_eq!(card["prompt"], "Run `rm -rf build`?");
}

#[test]
fn a_command_is_refused_not_queued_when_its_relay_is_down() {
    let mut h = Harness::new(&["a", "b"], None);
    h.connect_all(vec![vec![], vec![entry("s1", None)]]);
    h.relay(B, Frame::Event(permission("REQ1", "s1", 0)));
    h.hub.handle_closed(B, h.now, 1006, "gone");
    h.flush();
    assert!(matches!(h.hub.state(B), Some(State::Reconnecting { .. })));

    let err = h.respond("REQ1", Answer::option("allow")).unwrap_err();
    assert!(matches!(&err, HubError::NotLive { relay, state: State::Reconnecting { .. } } if relay == "b"), "{err:?}");
    assert!(err.to_string().contains("not sent"), "{err}");
    assert!(commands_in(&h.take_sent(A)).is_empty(), "relay a never saw the session: no detour");
    assert!(h.hub.sender().is_empty(), "nothing is followed that was not sent");

    let err = h.hub.pause(&Recipient::session("s1"), h.now).unwrap_err();
    assert!(matches!(err, HubError::NotLive { .. }));

    // After the reconnect the same answer goes out.
    let at = h.hub.poll_timeout().expect("a reconnect is scheduled");
    h.advance(at.since(h.now));
    h.actions.clear();
    h.hub.handle_open(B, h.now);
    h.relay(B, relay_hello());
    h.take_sent(B);
    h.respond("REQ1", Answer::option("allow")).expect("live again");
    assert_eq!(commands_in(&h.take_sent(B)).len(), 1);
}

#[test]
fn a_live_relay_that_also_carried_the_session_is_used_when_the_latest_one_is_down() {
    let mut h = Harness::new(&["a", "b"], None);
    h.connect_all(vec![vec![], vec![]]);
    h.relay(A, Frame::Event(agent_event("E1", "progress.status", "s2", 0, json!({"data": {"phase": "x"}}))));
    h.relay(B, Frame::Event(agent_event("E2", "progress.status", "s2", 1, json!({"data": {"phase": "y"}}))));
    let id = h.hub.pause(&Recipient::session("s2"), h.now).unwrap();
    h.flush();
    assert_eq!(h.hub.command_relay(&id), Some(B), "most recent sighting first");
    h.hub.handle_closed(B, h.now, 1006, "");
    let id = h.hub.resume(&Recipient::session("s2"), h.now).unwrap();
    h.flush();
    assert_eq!(h.hub.command_relay(&id), Some(A));
    assert_eq!(commands_in(&h.take_sent(A)).len(), 1);
}

#[test]
fn unseen_sessions_need_a_relay_when_there_are_several() {
    let mut h = Harness::new(&["a", "b"], None);
    h.connect_all(vec![vec![], vec![]]);
    let err = h.hub.pause(&Recipient::session("nobody"), h.now).unwrap_err();
    assert_eq!(err, HubError::NoRoute("nobody".into()));
    let id = h.hub.pause(&Recipient::session("nobody").via("a"), h.now).unwrap();
    h.flush();
    assert_eq!(h.hub.command_relay(&id), Some(A));
    let err = h.hub.pause(&Recipient::session("x").via("zzz"), h.now).unwrap_err();
    assert_eq!(err, HubError::UnknownRelay("zzz".into()));

    // With a single relay an unseen session is the relay's to refuse.
    let mut one = Harness::new(&["only"], None);
    one.connect_all(vec![vec![]]);
    let id = one.hub.cancel(&Recipient::session("nobody"), CancelScope::Session, None, one.now).unwrap();
    assert_eq!(one.command_updates(), vec![(id.clone(), CommandChange::Sent)]);
    assert_eq!(commands_in(&one.take_sent(0)).len(), 1);
    one.relay(0, Frame::Error(ErrorFrame::for_command(id.clone(), "no-route", Some("no emitter owns it".into()))));
    assert_eq!(one.command_updates(), vec![(id.clone(), CommandChange::RelayRefused)]);
    let state = one.hub.sender().get(&id).unwrap().state().clone();
    assert_eq!(
        state,
        CommandState::RelayRefused { code: RelayCode::NoRoute, detail: Some("no emitter owns it".into()) }
    );
    let v = shape(view::tracked(one.hub.sender().get(&id).unwrap(), Some("only")));
    assert_eq!(v["state"], "relay-refused");
    assert_eq!(v["relayCode"], "no-route");
}

#[test]
fn a_command_refused_no_route_asks_for_a_fresh_roster() {
    use aep_engine::client::hub::Reach;
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    assert_eq!(h.hub.reach("s1"), Reach::Listed { claims: 1 });
    // Its agent went away; nothing else told this console so.
    let id = h.hub.pause(&Recipient::session("s1"), h.now).unwrap();
    h.flush();
    assert!(roster_request(&h.take_sent(A)).is_none());
    h.relay(A, Frame::Error(ErrorFrame::for_command(id, "no-route", None)));
    let ask = roster_request(&h.take_sent(A)).expect("the refusal says the roster is out of date");
    h.relay(A, Frame::Roster { id: ask, entries: vec![] });
    assert_eq!(
        h.hub.reach("s1"),
        Reach::Unlisted,
        "the other cards of that agent are unreachable before anyone taps them"
    );
}

#[test]
fn relay_errors_about_others_are_reported_not_swallowed() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![]]);
    h.relay(A, Frame::Error(ErrorFrame::for_command("SOMEONE-ELSES", "no-route", None)));
    h.relay(A, Frame::Error(ErrorFrame::new("limit-exceeded", Some("slow down".into()))));
    let errors: Vec<String> = h
        .take_changes()
        .into_iter()
        .filter_map(|c| if let HubChange::RelayError { relay: A, error } = c { Some(error.code) } else { None })
        .collect();
    assert_eq!(errors, vec!["no-route", "limit-exceeded"]);
}

#[test]
fn silence_past_the_window_times_out_locally_and_sends_nothing() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    h.relay(A, Frame::Event(permission("REQ1", "s1", 0)));
    let id = h.respond("REQ1", Answer::option("deny")).unwrap();
    h.take_sent(A);
    h.take_changes();
    let tracked = h.hub.sender().get(&id).unwrap();
    assert_eq!(tracked.window_ms(), 10_000, "no declaration anywhere: the protocol default");
    let deadline = h.now + 10_000;
    assert!(h.hub.poll_timeout().unwrap() <= deadline);

    h.advance(9_999);
    assert!(h.command_updates().is_empty());
    h.advance(1);
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::TimedOut)]);
    assert!(commands_in(&h.take_sent(A)).is_empty(), "a timeout is never sent");

    // A late ack still records what the target decided.
    h.relay(A, Frame::Event(ack("ACK9", "control.rejected", "s1", 1, &id, json!({"reason": "refused"}))));
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::Rejected)]);
}

#[test]
fn the_configured_window_applies_when_the_target_declared_none() {
    let mut h = Harness::new(&["a"], Some(3_000));
    h.connect_all(vec![vec![entry("declared", Some(1_200)), entry("silent", None)]]);
    assert_eq!(h.hub.ack_window_for(A, "declared"), 1_200);
    assert_eq!(h.hub.ack_window_for(A, "silent"), 3_000);
    assert_eq!(h.hub.ack_window_for(A, "unknown"), 3_000);
    let id = h.hub.pause(&Recipient::session("declared"), h.now).unwrap();
    assert_eq!(h.hub.sender().get(&id).unwrap().window_ms(), 1_200);
}

#[test]
fn a_rejected_answer_carries_the_reason_and_detail() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    h.relay(A, Frame::Event(permission("REQ1", "s1", 0)));
    // Text the agent reads as it likes; here it refuses it.
    let id = h.respond("REQ1", Answer::text("maybe")).unwrap();
    h.take_changes();
    h.relay(
        A,
        Frame::Event(ack(
            "N1",
            "control.rejected",
            "s1",
            1,
            &id,
            json!({"reason": "invalid", "detail": "not an option"}),
        )),
    );
    assert_eq!(h.command_updates(), vec![(id.clone(), CommandChange::Rejected)]);
    let v = shape(view::tracked(h.hub.sender().get(&id).unwrap(), Some("a")));
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str(), v["detail"].as_str()),
        (Some("rejected"), Some("invalid"), Some("not an option"))
    );
    assert_eq!(
        shape(view::card(h.hub.store().inbox()[0]))["needsAnswer"],
        true,
        "a rejected answer leaves the card open"
    );
}

#[test]
fn answers_are_refused_for_unknown_requests_and_out_of_band_ones() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![]]);
    assert_eq!(h.respond("NOPE", Answer::option("x")).unwrap_err(), HubError::UnknownRequest("NOPE".into()));
    let oob = agent_event(
        "REQ2",
        "attention.requested",
        "s1",
        0,
        json!({"data": {
        "kind": "auth", "prompt": "Sign in on the laptop", "respond_via": ["oob"]}}),
    );
    h.relay(A, Frame::Event(oob));
    assert_eq!(h.respond("REQ2", Answer::text("ok")).unwrap_err(), HubError::NotOverControl("REQ2".into()));
    assert!(commands_in(&h.take_sent(A)).is_empty());
}

#[test]
fn an_answer_that_cannot_fit_the_request_is_refused_before_sending() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    h.relay(A, Frame::Event(permission("REQ1", "s1", 0)));
    h.take_sent(A);
    let err = h.respond("REQ1", Answer::option("maybe")).unwrap_err();
    assert!(matches!(&err, HubError::InvalidAnswer(m) if m.detail().contains("maybe")), "{err:?}");
    let values = Answer::values(json!({"n": 1}).as_object().unwrap().clone());
    assert!(matches!(h.respond("REQ1", values), Err(HubError::InvalidAnswer(_))), "values answer forms only");
    assert!(commands_in(&h.take_sent(A)).is_empty(), "nothing was sent");
    assert!(h.hub.sender().is_empty(), "nothing is followed");
    h.respond("REQ1", Answer::option("deny")).expect("an offered option goes out");
}

#[test]
fn vendor_commands_keep_their_subject_and_refuse_core_types() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    let mut data = Map::new();
    data.insert("level".into(), json!(3));
    let t = Recipient::session("s1").run("r1");
    let id =
        h.hub.vendor("x.acme.control.throttle", &t, Some("tool-7"), data.clone(), Capture::Metadata, h.now).unwrap();
    let sent = h.take_sent(A);
    let cmd = commands_in(&sent)[0];
    assert_eq!(
        (cmd.id(), cmd.ty(), cmd.subject(), cmd.run()),
        (id.as_str(), "x.acme.control.throttle", Some("tool-7"), Some("r1"))
    );
    assert_eq!(cmd.data_field("level"), Some(&json!(3)));
    for bad in ["control.pause", "x.acme.progress.step", "x.Acme.control.go"] {
        let err = h.hub.vendor(bad, &t, None, data.clone(), Capture::Metadata, h.now).unwrap_err();
        assert_eq!(err, HubError::NotVendorCommand(bad.into()));
    }
    let err = h.hub.cancel(&Recipient::session("s1"), CancelScope::Run, None, h.now).unwrap_err();
    assert!(matches!(err, HubError::Command(_)), "cancelling a run needs the run: {err:?}");
}

#[test]
fn a_new_session_refreshes_the_roster_one_request_at_a_time() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![]]);
    h.relay(A, Frame::Event(agent_event("S1", "session.started", "s1", 0, json!({"data": {}}))));
    let first = roster_request(&h.take_sent(A)).expect("asked after session.started");
    h.relay(A, Frame::Event(agent_event("S2", "session.started", "s2", 0, json!({"data": {}}))));
    assert!(roster_request(&h.take_sent(A)).is_none(), "one request in flight");
    h.relay(A, Frame::Roster { id: first, entries: vec![entry("s1", Some(900))] });
    let again = roster_request(&h.take_sent(A)).expect("asked again: something changed meanwhile");
    h.relay(A, Frame::Roster { id: again, entries: vec![entry("s1", Some(900)), entry("s2", Some(800))] });
    assert!(roster_request(&h.take_sent(A)).is_none());
    assert_eq!(h.hub.ack_window_for(A, "s2"), 800);
    let listed: Vec<String> = h.hub.roster(A).map(|e| e.session.clone()).collect();
    assert_eq!(listed.len(), 2);
    assert_eq!(view::rosters(&h.hub, None).len(), 2);
}

#[test]
fn duplicates_are_folded_once_and_the_change_feed_is_bounded() {
    let mut h = Harness::new(&["a", "b"], None);
    h.connect_all(vec![vec![], vec![]]);
    let e = agent_event("D1", "progress.status", "s1", 0, json!({"data": {"phase": "x"}}));
    h.relay(A, Frame::Event(e.clone()));
    h.relay(B, Frame::Event(e));
    let events = h.take_changes().into_iter().filter(|c| matches!(c, HubChange::Event { .. })).count();
    assert_eq!(events, 1, "the same event through two relays is one event");

    for i in 0..(MAX_CHANGES as u64 + 100) {
        let e = agent_event(&format!("F{i:06}"), "progress.status", "s3", i, json!({"data": {"phase": "x"}}));
        h.hub.handle_text(A, &Frame::Event(e).encode(), h.now);
        while h.hub.poll_transmit().is_some() {}
    }
    assert!(h.hub.dropped_changes() > 0);
    let mut n = 0;
    while h.hub.poll_change().is_some() {
        n += 1;
    }
    assert_eq!(n, MAX_CHANGES);
}

#[test]
fn bad_configurations_are_refused_clearly() {
    let id = Identity::new("aep://c/agent/c", "c");
    assert_eq!(Hub::new(HubConfig::new(id.clone(), 1), vec![]).unwrap_err(), HubError::NoRelays);
    let dup = vec![
        RelaySpec { label: "x".into(), config: Config::consumer() },
        RelaySpec { label: "x".into(), config: Config::consumer() },
    ];
    assert_eq!(Hub::new(HubConfig::new(id, 1), dup).unwrap_err(), HubError::DuplicateLabel("x".into()));
}

#[test]
fn views_carry_provenance_and_status_names() {
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![]]);
    h.relay(
        A,
        Frame::Event(agent_event("S1", "session.started", "s1", 0, json!({"data": {"label": "Fix the build"}}))),
    );
    h.relay(A, Frame::Event(permission("REQ1", "s1", 1)));
    let sessions = shape(view::sessions(h.hub.store()));
    assert_eq!(sessions[0]["label"], "Fix the build");
    assert_eq!(sessions[0]["pending"], 1);
    let s = h.hub.store().session("aep://h/agent/demo", "s1").unwrap();
    let full = shape(view::session(s));
    assert_eq!(full["cards"][0]["agent"], "demo");
    assert_eq!(full["cards"][0]["options"][1]["label"], "Deny");
    assert_eq!(full["position"], json!({"epoch": 0, "seq": 1}));
    assert_eq!(shape(view::status("a", h.hub.state(A).unwrap()))["state"], "live");
    let p = shape(view::projection(h.hub.store()));
    assert_eq!(p["counts"]["pending"], 1);
    assert_eq!(p["inbox"][0]["id"], "REQ1");
}

/// A relay that names the principal of this connection's credential
/// accepts commands only under that name, so the hub sends them as it; a
/// relay that names none gets the hub's own identity.
#[test]
fn commands_go_out_under_the_principal_each_relay_names() {
    let mut h = Harness::new(&["a", "b"], None);
    h.hub.connect(h.now);
    h.flush();
    h.actions.clear();
    for relay in [A, B] {
        h.hub.handle_open(relay, h.now);
        let mut hello = relay_hello();
        if let (A, Frame::Hello(hello)) = (relay, &mut hello) {
            hello.capabilities.set_principal("alice", &["operator", "viewer"]);
        }
        h.relay(relay, hello);
        let sent = h.take_sent(relay);
        let sub = sent.iter().find_map(|f| if let Frame::Subscribe(s) = f { Some(s.id.clone()) } else { None });
        h.relay(relay, Frame::Subscribed { id: sub.unwrap() });
    }
    h.relay(A, Frame::Event(agent_event("E1", "progress.status", "sa", 0, json!({}))));
    h.relay(B, Frame::Event(agent_event("E2", "progress.status", "sb", 0, json!({}))));
    h.hub.pause(&Recipient::session("sa"), h.now).unwrap();
    h.hub.pause(&Recipient::session("sb"), h.now).unwrap();
    h.flush();
    let on_a = h.take_sent(A);
    let a = commands_in(&on_a);
    assert_eq!((a[0].agent(), a[0].source()), ("alice", "aep://console.test/agent/alice"));
    let on_b = h.take_sent(B);
    let b = commands_in(&on_b);
    assert_eq!((b[0].agent(), b[0].source()), ("console", "aep://console.test/agent/console"));
}

/// A relay's hello saying what this connection's credential may do.
fn hello_with_roles(roles: &[&str]) -> Frame {
    let mut hello = relay_hello();
    if let Frame::Hello(h) = &mut hello {
        h.capabilities.set_roles(roles);
    }
    hello
}

#[test]
fn a_viewer_is_told_so_and_its_answers_are_refused_before_anything_is_sent() {
    let mut h = Harness::new(&["a", "b"], None);
    h.connect_all_greeted(vec![vec![entry("s1", None)], vec![entry("s2", None)]], |relay| match relay {
        A => hello_with_roles(&["viewer"]),
        _ => hello_with_roles(&["agent", "operator", "viewer"]),
    });
    assert_eq!((h.hub.may_command(A), h.hub.may_command(B)), (Some(false), Some(true)));
    h.relay(A, Frame::Event(permission("R1", "s1", 1)));
    h.relay(B, Frame::Event(permission("R2", "s2", 1)));
    assert_eq!((h.hub.may_answer("R1"), h.hub.may_answer("R2")), (Some(false), Some(true)));
    let refused = h.respond("R1", Answer::option("allow"));
    assert_eq!(refused, Err(HubError::NotPermitted { relay: "a".into() }));
    assert!(commands_in(&h.take_sent(A)).is_empty(), "nothing left for the relay to refuse");
    assert!(h.respond("R2", Answer::option("deny")).is_ok());
    assert_eq!(commands_in(&h.take_sent(B)).len(), 1);
    // A relay that says nothing of roles is not second-guessed.
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    h.relay(A, Frame::Event(permission("R1", "s1", 1)));
    assert_eq!((h.hub.may_command(A), h.hub.may_answer("R1")), (None, None));
}

#[test]
fn a_session_is_unreachable_only_when_every_live_relay_has_answered_without_it() {
    use aep_engine::client::hub::Reach;
    let mut h = Harness::new(&["a", "b"], None);
    h.hub.connect(h.now);
    h.flush();
    for relay in [A, B] {
        h.hub.handle_open(relay, h.now);
        h.relay(relay, relay_hello());
    }
    let asked: Vec<String> =
        [A, B].iter().map(|r| roster_request(&h.take_sent(*r)).expect("asked once live")).collect();
    h.relay(A, Frame::Roster { id: asked[0].clone(), entries: vec![] });
    assert_eq!(h.hub.reach("far"), Reach::Unknown, "b, which may carry it, has not answered yet");
    h.relay(B, Frame::Roster { id: asked[1].clone(), entries: vec![entry("far", None)] });
    assert_eq!(h.hub.reach("far"), Reach::Listed { claims: 1 });
    assert_eq!(h.hub.reach("gone"), Reach::Unlisted);
}

#[test]
fn a_session_the_live_rosters_leave_out_is_unreachable_until_its_agent_emits_again() {
    use aep_engine::client::hub::Reach;
    let mut h = Harness::new(&["a"], None);
    h.connect_all(vec![vec![entry("s1", None)]]);
    assert_eq!(h.hub.reach("s1"), Reach::Listed { claims: 1 });
    assert_eq!(h.hub.reach("gone"), Reach::Unlisted);
    // The relay goes away: what its roster said is no longer known.
    h.hub.handle_closed(A, h.now, 1012, "restarting");
    h.flush();
    assert_eq!(h.hub.reach("s1"), Reach::Unknown);
    h.advance(30_000);
    h.hub.handle_open(A, h.now);
    h.relay(A, relay_hello());
    let sent = h.take_sent(A);
    let sub = sent.iter().find_map(|f| if let Frame::Subscribe(s) = f { Some(s.id.clone()) } else { None });
    h.relay(A, Frame::Subscribed { id: sub.unwrap() });
    assert_eq!(h.hub.reach("s1"), Reach::Unknown, "live again, not yet answered");
    let ask = roster_request(&sent).expect("asked once live");
    h.relay(A, Frame::Roster { id: ask, entries: vec![] });
    assert_eq!(h.hub.reach("s1"), Reach::Unlisted, "its agent did not come back");
    // It comes back and emits: the roster is asked again, once a second.
    h.relay(A, Frame::Event(agent_event("P1", "progress.status", "s1", 5, json!({}))));
    let again = roster_request(&h.take_sent(A)).expect("an event from an unlisted session asks again");
    h.relay(A, Frame::Event(agent_event("P2", "progress.status", "s3", 1, json!({}))));
    assert!(roster_request(&h.take_sent(A)).is_none(), "one request in flight");
    h.relay(A, Frame::Roster { id: again, entries: vec![entry("s1", None)] });
    assert_eq!(h.hub.reach("s1"), Reach::Listed { claims: 1 });
    h.relay(A, Frame::Event(agent_event("P3", "progress.status", "s3", 2, json!({}))));
    assert!(roster_request(&h.take_sent(A)).is_none(), "not more than once a second");
    h.advance(1_000);
    h.relay(A, Frame::Event(agent_event("P4", "progress.status", "s3", 3, json!({}))));
    assert!(roster_request(&h.take_sent(A)).is_some());
}

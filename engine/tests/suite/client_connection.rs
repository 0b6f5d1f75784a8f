//! The sans-IO relay connection driven by a fake clock and a scripted fake
//! relay: every frame the client writes is decoded and checked, every frame
//! the relay "sends" is encoded by the same frame module a relay uses.

use aep_engine::client::{
    Backoff, ClientError, ClientEvent, Config, Connection, Refusal, ResumePolicy, SocketAction, State, SubState,
    AUTH_CLOSE_CODES, CLOSE_GAVE_UP, MAX_INBOX,
};
use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::{
    codes, Capabilities, Closing, ControlCapability, Delivered, ErrorFrame, Frame, Hello, HelloIdentity,
    ReplayCapability, ReplayExhausted, ResumeFrom, Role, RosterEntry, SessionPosition,
};
use aep_engine::{Capture, Event, UnixMs};
use serde_json::{json, Map};

const T0: UnixMs = UnixMs(1_783_073_703_000);

/// A connection, a clock, and everything the connection has said so far.
struct Harness {
    conn: Connection,
    now: UnixMs,
    sent: Vec<Frame>,
    actions: Vec<SocketAction>,
}

impl Harness {
    fn new(config: Config) -> Harness {
        Harness { conn: Connection::new(config).expect("valid config"), now: T0, sent: Vec::new(), actions: Vec::new() }
    }

    /// Drains frames and socket actions (not notifications: positions only
    /// move when the application takes events, so tests do that explicitly).
    fn flush(&mut self) {
        while let Some(text) = self.conn.poll_transmit() {
            let frame = Frame::decode(&text).unwrap_or_else(|e| panic!("client wrote an unreadable frame {text}: {e}"));
            assert!(!text.contains("\"aep\"") || matches!(frame, Frame::Event(_)), "frames never carry aep: {text}");
            self.sent.push(frame);
        }
        while let Some(a) = self.conn.poll_action() {
            self.actions.push(a);
        }
    }

    fn take_sent(&mut self) -> Vec<Frame> {
        self.flush();
        std::mem::take(&mut self.sent)
    }

    fn take_actions(&mut self) -> Vec<SocketAction> {
        self.flush();
        std::mem::take(&mut self.actions)
    }

    fn events(&mut self) -> Vec<ClientEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.conn.poll_event() {
            out.push(e);
        }
        out
    }

    fn connect(&mut self) {
        self.conn.connect(self.now);
        assert_eq!(self.take_actions(), vec![SocketAction::Open]);
        self.conn.handle_open(self.now);
        self.flush();
    }

    fn relay(&mut self, frame: Frame) {
        self.relay_text(&frame.encode());
    }

    fn relay_text(&mut self, text: &str) {
        self.conn.handle_text(text, self.now);
        self.flush();
    }

    fn closed(&mut self, code: u16, reason: &str) {
        self.conn.handle_closed(self.now, code, reason);
        self.flush();
    }

    fn advance(&mut self, ms: u64) {
        self.now = self.now + ms;
        self.conn.handle_timeout(self.now);
        self.flush();
    }

    /// Runs the clock to the scheduled reconnect and opens the new socket.
    fn reconnect(&mut self) {
        let State::Reconnecting { at, .. } = *self.conn.state() else {
            panic!("not reconnecting: {:?}", self.conn.state())
        };
        assert_eq!(self.conn.poll_timeout(), Some(at));
        self.advance(at.since(self.now));
        assert_eq!(self.take_actions(), vec![SocketAction::Open]);
        self.conn.handle_open(self.now);
        self.flush();
    }
}

fn relay_hello(replay_all: bool, roster: bool) -> Frame {
    Frame::Hello(Hello {
        versions: vec!["0.1".into()],
        role: Some(Role::Both),
        identity: Some(HelloIdentity { agent: Some("relay".into()), ..HelloIdentity::default() }),
        capabilities: Capabilities {
            replay: Some(ReplayCapability { buffer: Some(512), all: Some(replay_all), other: Map::new() }),
            roster: roster.then(Map::new),
            filters: Some(vec!["attr-match".into()]),
            ..Capabilities::default()
        },
    })
}

fn event(ty: &str, session: &str, epoch: u64, seq: u64) -> Event {
    Event::from_value(json!({
        "aep": "0.1", "id": format!("01J{session}{epoch}{seq:05}"), "type": ty,
        "time": "2026-07-03T10:15:04.221Z", "source": format!("aep://h/agent/a/session/{session}"),
        "agent": "a", "session": session, "seq": seq, "epoch": epoch
    }))
    .unwrap()
}

fn attention_filter() -> Filter {
    Filter::parse(&json!({"type": ["attention.*"]})).unwrap()
}

fn subscribes(frames: &[Frame]) -> Vec<&aep_engine::protocol::frame::Subscribe> {
    frames.iter().filter_map(|f| if let Frame::Subscribe(s) = f { Some(s) } else { None }).collect()
}

/// A consumer that is live with one subscription acknowledged.
fn live_consumer(replay_all: bool) -> (Harness, String) {
    let mut h = Harness::new(Config::consumer());
    let id = h.conn.subscribe(attention_filter(), Some(Capture::Metadata)).unwrap();
    h.connect();
    h.relay(relay_hello(replay_all, true));
    h.take_sent();
    h.relay(Frame::Subscribed { id: id.clone() });
    h.events();
    (h, id)
}

#[test]
fn hello_goes_first_and_subscriptions_wait_for_the_relays_hello() {
    let mut h = Harness::new(Config::consumer());
    let id = h.conn.subscribe(attention_filter(), Some(Capture::Redacted)).unwrap();
    assert!(h.take_sent().is_empty(), "nothing is written before a socket exists");

    h.conn.connect(h.now);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    assert!(h.take_sent().is_empty(), "nothing is written before the socket opens");
    h.conn.handle_open(h.now);
    let sent = h.take_sent();
    assert_eq!(sent.len(), 1, "only hello before the relay's hello: {sent:?}");
    let Frame::Hello(hello) = &sent[0] else { panic!("first frame must be hello: {sent:?}") };
    assert_eq!(hello.versions, vec!["0.1".to_string()]);
    assert_eq!(hello.role, Some(Role::Consumer));
    assert_eq!(h.conn.state(), &State::Handshaking);

    h.relay(relay_hello(false, false));
    assert_eq!(h.conn.state(), &State::Live);
    let sent = h.take_sent();
    let subs = subscribes(&sent);
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].id, id);
    assert_eq!(subs[0].filter, attention_filter());
    assert_eq!(subs[0].capture, Some(Capture::Redacted));
    assert_eq!(subs[0].from, None, "cold start without replay-all sends no `from`");
    assert_eq!(h.conn.subscription_state(&id), Some(&SubState::Pending));

    h.relay(Frame::Subscribed { id: id.clone() });
    assert_eq!(h.conn.subscription_state(&id), Some(&SubState::Active));
    let states: Vec<State> = h
        .events()
        .into_iter()
        .filter_map(|e| if let ClientEvent::StateChanged(s) = e { Some(s) } else { None })
        .collect();
    assert_eq!(states, vec![State::Connecting, State::Handshaking, State::Live]);
}

#[test]
fn an_emitter_declares_its_control_block_and_a_consumer_does_not() {
    let control = ControlCapability::new(["control.attention.respond"], Some(1_500));
    let identity = HelloIdentity { agent: Some("demo-agent".into()), instance: Some("h/1".into()), card: None };
    let mut h = Harness::new(Config::emitter(identity.clone(), Some(control.clone())));
    h.connect();
    let Frame::Hello(hello) = &h.take_sent()[0] else { panic!() };
    assert_eq!(hello.role, Some(Role::Emitter));
    assert_eq!(hello.identity.as_ref(), Some(&identity));
    assert_eq!(hello.capabilities.control.as_ref(), Some(&control));

    let mut consumer = Config::consumer();
    consumer.control = Some(control);
    let mut h = Harness::new(consumer);
    h.connect();
    let Frame::Hello(hello) = &h.take_sent()[0] else { panic!() };
    assert_eq!(hello.capabilities.control, None, "only emitters take commands");

    let nameless = Config::emitter(HelloIdentity::default(), None);
    assert!(Connection::new(nameless).is_err(), "an emitter must name its agent");
}

#[test]
fn a_cold_start_asks_for_replay_all_only_when_advertised() {
    let mut h = Harness::new(Config::consumer());
    h.conn.subscribe(Filter::match_all(), None).unwrap();
    h.connect();
    h.relay(relay_hello(true, false));
    let sent = h.take_sent();
    assert_eq!(subscribes(&sent)[0].from, Some(ResumeFrom::All));
}

#[test]
fn a_refused_replay_all_falls_back_to_positions() {
    let mut h = Harness::new(Config::consumer());
    let id = h.conn.subscribe(Filter::match_all(), None).unwrap();
    h.connect();
    h.relay(relay_hello(true, false));
    h.take_sent();
    h.relay(Frame::Error(ErrorFrame::for_request(id.clone(), codes::INVALID_FILTER, None)));
    let sent = h.take_sent();
    let subs = subscribes(&sent);
    assert_eq!(subs.len(), 1, "re-subscribed once: {sent:?}");
    assert_eq!(subs[0].from, None);
    assert_eq!(h.conn.subscription_state(&id), Some(&SubState::Pending));
    // A second refusal is final.
    h.relay(Frame::Error(ErrorFrame::for_request(id.clone(), codes::INVALID_FILTER, None)));
    assert!(h.take_sent().is_empty());
    assert!(matches!(h.conn.subscription_state(&id), Some(SubState::Refused { code, .. }) if code == "invalid-filter"));
    assert!(h.events().iter().any(|e| matches!(e, ClientEvent::Error(f) if f.id.as_deref() == Some(id.as_str()))));
}

#[test]
fn reconnect_resumes_from_the_positions_the_application_took() {
    let (mut h, id) = live_consumer(true);
    for seq in 0..4 {
        h.relay(Frame::Event(event("attention.requested", "s1", 0, seq)));
    }
    h.relay(Frame::Event(event("attention.requested", "s2", 1, 5)));
    h.relay(Frame::Event(event("attention.requested", "s2", 0, 9))); // an older epoch never wins
    let taken = h.events();
    assert_eq!(taken.iter().filter(|e| matches!(e, ClientEvent::Event(_))).count(), 6);
    // Received but not taken by the application: must be asked for again.
    h.relay(Frame::Event(event("attention.requested", "s1", 0, 4)));

    h.closed(1006, "");
    assert!(matches!(h.conn.state(), State::Reconnecting { attempt: 1, .. }));
    h.reconnect();
    let Frame::Hello(_) = &h.take_sent()[0] else { panic!("hello first on every socket") };
    h.relay(relay_hello(true, false));
    let sent = h.take_sent();
    let subs = subscribes(&sent);
    assert_eq!(subs.len(), 2, "the subscription and its catch-up: {sent:?}");
    assert_eq!(subs[0].id, id);
    assert_eq!(subs[0].filter, attention_filter());
    assert_eq!(subs[0].capture, Some(Capture::Metadata));
    assert_eq!(
        subs[0].from,
        Some(ResumeFrom::Positions(vec![SessionPosition::new("s1", 0, 3), SessionPosition::new("s2", 1, 5)])),
        "known sessions resume from their positions, so lost history is reported"
    );
    assert_ne!(subs[1].id, id);
    assert_eq!(
        (&subs[1].filter, subs[1].capture, &subs[1].from),
        (&attention_filter(), Some(Capture::Metadata), &Some(ResumeFrom::All)),
        "sessions that started during the outage come from replay-all under the same filter"
    );
    let companion = subs[1].id.clone();
    // The companion is the connection's own: its answers are not the
    // application's, and a relay refusing replay-all is not asked again.
    h.relay(Frame::Subscribed { id: companion.clone() });
    h.relay(Frame::Error(ErrorFrame::for_request(companion, codes::INVALID_FILTER, None)));
    assert!(h.take_sent().is_empty(), "nothing re-sent for a refused catch-up");
    // The event taken late still counts, for the next reconnect.
    let notices = h.events();
    assert!(
        !notices.iter().any(|n| matches!(n, ClientEvent::Subscribed { .. } | ClientEvent::Error(_))),
        "{notices:?}"
    );
    assert_eq!(h.conn.positions(), vec![SessionPosition::new("s1", 0, 4), SessionPosition::new("s2", 1, 5)]);
}

#[test]
fn positions_are_per_subscription() {
    let mut h = Harness::new(Config::consumer());
    let a = h.conn.subscribe(attention_filter(), None).unwrap();
    let b = h.conn.subscribe(Filter::parse(&json!({"type": "tool.completed"})).unwrap(), None).unwrap();
    h.connect();
    h.relay(relay_hello(false, false));
    h.relay(Frame::Event(event("attention.requested", "s1", 0, 2)));
    h.relay(Frame::Event(event("tool.completed", "s1", 0, 7)));
    h.events();
    assert_eq!(h.conn.subscription_positions(&a), Some(vec![SessionPosition::new("s1", 0, 2)]));
    assert_eq!(h.conn.subscription_positions(&b), Some(vec![SessionPosition::new("s1", 0, 7)]));
}

#[test]
fn restored_positions_seed_new_subscriptions() {
    let mut h = Harness::new(Config::consumer());
    h.conn.restore_positions([SessionPosition::new("s9", 2, 40)]);
    h.conn.subscribe(Filter::match_all(), None).unwrap();
    h.connect();
    h.relay(relay_hello(true, false));
    let sent = h.take_sent();
    assert_eq!(subscribes(&sent)[0].from, Some(ResumeFrom::Positions(vec![SessionPosition::new("s9", 2, 40)])));
}

#[test]
fn a_catch_up_never_delivers_again_what_an_earlier_run_took() {
    let mut h = Harness::new(Config::consumer());
    h.conn.restore_positions([SessionPosition::new("s9", 2, 40)]);
    h.conn.subscribe(Filter::match_all(), None).unwrap();
    h.connect();
    h.relay(relay_hello(true, false));
    h.take_sent();
    h.events();
    // What replay-all holds of s9 up to the saved position, then after it,
    // and a session never seen.
    for seq in [39, 40, 41] {
        h.relay(Frame::Event(event("attention.requested", "s9", 2, seq)));
    }
    h.relay(Frame::Event(event("attention.requested", "s1", 0, 0)));
    let got: Vec<(String, u64)> = h
        .events()
        .into_iter()
        .filter_map(|n| match n {
            ClientEvent::Event(e) => Some((e.session().unwrap().to_owned(), e.seq().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![("s9".into(), 41), ("s1".into(), 0)], "strictly after what was taken");
}

#[test]
fn the_all_when_advertised_policy_resumes_with_all() {
    let mut config = Config::consumer();
    config.resume = ResumePolicy::AllWhenAdvertised;
    let mut h = Harness::new(config);
    h.conn.subscribe(Filter::match_all(), None).unwrap();
    h.connect();
    h.relay(relay_hello(true, false));
    h.relay(Frame::Event(event("run.started", "s1", 0, 3)));
    h.events();
    h.closed(1006, "");
    h.reconnect();
    h.relay(relay_hello(true, false));
    assert_eq!(subscribes(&h.take_sent())[0].from, Some(ResumeFrom::All));
}

/// Fails every connection attempt and returns the reconnect delays.
fn failing_schedule(config: Config, attempts: usize) -> Vec<(u32, u64)> {
    let mut h = Harness::new(config);
    h.conn.connect(h.now);
    h.take_actions();
    let mut delays = Vec::new();
    for _ in 0..attempts {
        h.closed(1006, "connection refused");
        let State::Reconnecting { attempt, at } = *h.conn.state() else { panic!("{:?}", h.conn.state()) };
        delays.push((attempt, at.since(h.now)));
        h.advance(at.since(h.now));
        let socket_actions: Vec<SocketAction> =
            h.take_actions().into_iter().filter(|a| *a != SocketAction::CheckAuthorization).collect();
        assert_eq!(socket_actions, vec![SocketAction::Open]);
    }
    delays
}

#[test]
fn backoff_grows_and_is_capped_with_jitter_in_bounds() {
    let backoff = Backoff { initial_ms: 100, max_ms: 1_000 };
    let ceilings = [100, 200, 400, 800, 1_000, 1_000, 1_000];
    let mut schedules = Vec::new();
    for seed in 0..50 {
        let mut config = Config::consumer();
        config.backoff = backoff;
        config.jitter_seed = seed;
        let delays = failing_schedule(config, ceilings.len());
        for (i, ((attempt, delay), ceiling)) in delays.iter().zip(ceilings).enumerate() {
            assert_eq!(*attempt as usize, i + 1);
            assert!(ceiling / 2 <= *delay && *delay <= ceiling, "seed {seed} attempt {attempt}: {delay} ms");
        }
        schedules.push(delays);
    }
    let mut distinct = schedules.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 40, "jitter spreads clients: only {} distinct schedules", distinct.len());
}

#[test]
fn a_stable_connection_resets_the_backoff() {
    let mut config = Config::consumer();
    config.backoff = Backoff { initial_ms: 100, max_ms: 10_000 };
    config.stable_after_ms = 5_000;
    config.ping_interval_ms = 0;
    let mut h = Harness::new(config);
    h.connect();
    for _ in 0..3 {
        h.closed(1006, "");
        h.reconnect();
    }
    h.relay(relay_hello(false, false));
    h.closed(1006, "");
    assert!(matches!(h.conn.state(), State::Reconnecting { attempt: 4, .. }), "flapping keeps backing off");
    h.reconnect();
    h.relay(relay_hello(false, false));
    h.advance(5_000);
    h.closed(1001, "going away");
    assert!(matches!(h.conn.state(), State::Reconnecting { attempt: 1, .. }), "{:?}", h.conn.state());
}

#[test]
fn a_first_frame_that_is_not_hello_is_refused_without_retry() {
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.take_sent();
    h.relay(Frame::Event(event("session.started", "s1", 0, 0)));
    let sent = h.take_sent();
    assert!(
        matches!(&sent[..], [Frame::Error(e)] if e.code == codes::HELLO_REQUIRED),
        "answered hello-required: {sent:?}"
    );
    assert!(matches!(h.take_actions()[..], [SocketAction::Close { .. }]));
    assert_eq!(
        h.conn.state(),
        &State::Refused { reason: Refusal::PeerSkippedHello { frame_type: "session.started".into() } }
    );
    assert_eq!(h.conn.poll_timeout(), None);
    h.advance(3_600_000);
    assert!(h.take_actions().is_empty(), "no reconnect after a refusal");
    assert!(h.events().iter().all(|e| !matches!(e, ClientEvent::Event(_))), "the early event is not delivered");
}

#[test]
fn version_unsupported_is_refused_without_retry_either_way() {
    // The relay refuses our version.
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.relay(Frame::Error(ErrorFrame {
        versions: Some(vec!["9.9".into()]),
        ..ErrorFrame::new(codes::VERSION_UNSUPPORTED, None)
    }));
    assert_eq!(
        h.conn.state(),
        &State::Refused { reason: Refusal::VersionUnsupported { peer_versions: vec!["9.9".into()] } }
    );
    h.closed(1000, "");
    h.advance(3_600_000);
    assert!(!h.take_actions().contains(&SocketAction::Open));

    // The relay selects a version we do not speak.
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.take_sent();
    h.relay(Frame::Hello(Hello { versions: vec!["9.9".into()], ..Hello::default() }));
    let sent = h.take_sent();
    let [Frame::Error(e)] = &sent[..] else { panic!("{sent:?}") };
    assert_eq!(e.code, codes::VERSION_UNSUPPORTED);
    assert_eq!(e.versions, Some(vec!["0.1".to_string()]));
    assert!(matches!(h.take_actions()[..], [SocketAction::Close { .. }]));
    assert!(matches!(h.conn.state(), State::Refused { reason: Refusal::VersionUnsupported { .. } }));
    h.advance(3_600_000);
    assert!(h.take_actions().is_empty());
}

#[test]
fn hello_required_from_the_relay_is_a_refusal() {
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.relay(Frame::Error(ErrorFrame::new(codes::HELLO_REQUIRED, Some("say hello".into()))));
    assert_eq!(h.conn.state(), &State::Refused { reason: Refusal::HelloRequired { detail: Some("say hello".into()) } });
}

#[test]
fn unauthorized_is_refused_without_retry_but_a_refused_request_is_not() {
    for code in AUTH_CLOSE_CODES {
        let mut h = Harness::new(Config::consumer());
        h.connect();
        h.closed(code, "");
        assert!(matches!(h.conn.state(), State::Refused { reason: Refusal::Unauthorized { .. } }), "close {code}");
        h.advance(3_600_000);
        assert!(h.take_actions().is_empty(), "close {code} must not retry");
    }

    let (mut h, _) = live_consumer(false);
    h.relay(Frame::Error(ErrorFrame::new(codes::UNAUTHORIZED, Some("bad token".into()))));
    assert_eq!(h.conn.state(), &State::Refused { reason: Refusal::Unauthorized { detail: Some("bad token".into()) } });
    assert!(h.take_actions().contains(&SocketAction::Close { code: 1000, reason: "not authorized: bad token".into() }));

    // In-band refusals of one request or one command leave the connection up.
    let (mut h, id) = live_consumer(false);
    h.relay(Frame::Error(ErrorFrame::for_command("01JCMD", codes::UNAUTHORIZED, None)));
    h.relay(Frame::Error(ErrorFrame::for_request("roster-1", codes::UNAUTHORIZED, None)));
    assert_eq!(h.conn.state(), &State::Live);
    assert_eq!(h.conn.subscription_state(&id), Some(&SubState::Active));
    let errors: Vec<ErrorFrame> =
        h.events().into_iter().filter_map(|e| if let ClientEvent::Error(f) = e { Some(f) } else { None }).collect();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0].cause.as_deref(), Some("01JCMD"), "the command sender settles on cause");
}

#[test]
fn pings_are_answered_and_a_missing_pong_drops_the_connection() {
    let mut config = Config::consumer();
    config.ping_interval_ms = 30_000;
    config.pong_timeout_ms = 90_000;
    let mut h = Harness::new(config);
    h.connect();
    h.relay(relay_hello(false, false));
    h.take_sent();

    h.relay_text(r#"{"type":"ping","t":42}"#);
    assert_eq!(h.take_sent(), vec![Frame::Pong { t: Some(json!(42)) }]);

    assert_eq!(h.conn.poll_timeout(), Some(h.now + 30_000));
    h.advance(30_000);
    let sent = h.take_sent();
    assert!(matches!(&sent[..], [Frame::Ping { t: Some(_) }]), "{sent:?}");
    h.relay(Frame::Pong { t: None });
    h.advance(30_000);
    h.advance(30_000);
    h.advance(30_000);
    assert_eq!(h.conn.state(), &State::Live, "pongs keep it alive");
    h.relay(Frame::Pong { t: None });

    // From here the relay stays silent.
    let silent_from = h.now;
    let mut pings = 0;
    while h.conn.state() == &State::Live {
        let next = h.conn.poll_timeout().expect("a live connection always has a timer");
        h.advance(next.since(h.now));
        pings += h.take_sent().iter().filter(|f| matches!(f, Frame::Ping { .. })).count();
    }
    assert_eq!(h.now.since(silent_from), 30_000 + 90_000, "dead one pong-timeout after the first unanswered ping");
    assert!(pings >= 3, "kept pinging while waiting ({pings})");
    assert!(h.take_actions().iter().any(|a| matches!(a, SocketAction::Close { code, .. } if *code == CLOSE_GAVE_UP)));
    assert!(matches!(h.conn.state(), State::Reconnecting { .. }));
    assert!(h.events().iter().any(|e| matches!(e, ClientEvent::Disconnected { reason } if reason.contains("pong"))));
}

#[test]
fn a_handshake_that_never_completes_is_abandoned_and_retried() {
    let mut config = Config::consumer();
    config.handshake_timeout_ms = 2_000;
    let mut h = Harness::new(config);
    h.connect();
    assert_eq!(h.conn.poll_timeout(), Some(h.now + 2_000));
    h.advance(2_000);
    assert!(matches!(h.take_actions()[..], [SocketAction::Close { code: CLOSE_GAVE_UP, .. }]));
    assert!(matches!(h.conn.state(), State::Reconnecting { attempt: 1, .. }));
}

#[test]
fn closing_is_surfaced_and_the_reconnect_resumes_from_own_positions() {
    let (mut h, id) = live_consumer(false);
    for seq in 0..=3 {
        h.relay(Frame::Event(event("attention.requested", "s1", 0, seq)));
    }
    h.events();
    // The relay claims more than the application processed.
    let closing = Closing {
        reason: "restart".into(),
        delivered: vec![Delivered { sub: id.clone(), position: SessionPosition::new("s1", 0, 9) }],
    };
    h.relay(Frame::Closing(closing.clone()));
    assert!(h.events().contains(&ClientEvent::Closing(closing)));
    assert_eq!(h.conn.reported_positions(&id), Some(vec![SessionPosition::new("s1", 0, 9)]));
    h.closed(1000, "restart");
    h.reconnect();
    h.relay(relay_hello(false, false));
    let sent = h.take_sent();
    assert_eq!(subscribes(&sent)[0].from, Some(ResumeFrom::Positions(vec![SessionPosition::new("s1", 0, 3)])));
}

#[test]
fn the_client_says_closing_with_its_positions_before_closing() {
    let (mut h, id) = live_consumer(false);
    h.relay(Frame::Event(event("attention.requested", "s1", 0, 5)));
    h.events();
    h.conn.close(h.now);
    let sent = h.take_sent();
    let [Frame::Closing(c)] = &sent[..] else { panic!("{sent:?}") };
    assert_eq!(c.delivered, vec![Delivered { sub: id, position: SessionPosition::new("s1", 0, 5) }]);
    assert_eq!(h.take_actions(), vec![SocketAction::Close { code: 1000, reason: "client closing".into() }]);
    h.closed(1000, "");
    assert_eq!(h.conn.state(), &State::Closed);
    h.advance(3_600_000);
    assert!(h.take_actions().is_empty());
}

#[test]
fn roster_is_requested_only_when_advertised() {
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.relay(relay_hello(false, false));
    h.take_sent();
    assert_eq!(h.conn.request_roster(), Err(ClientError::RosterNotDeclared));
    assert!(h.take_sent().is_empty(), "no request that would wait on silence");

    let (mut h, _) = live_consumer(false); // advertises roster
    let id = h.conn.request_roster().unwrap();
    assert_eq!(h.take_sent(), vec![Frame::RosterRequest { id: id.clone() }]);
    let entries = vec![RosterEntry {
        session: "s_8f2c".into(),
        agent: Some("claude-code".into()),
        instance: None,
        control: Some(ControlCapability::new(["control.attention.respond"], Some(10_000))),
        emits: None,
    }];
    h.relay(Frame::Roster { id: id.clone(), entries: entries.clone() });
    assert!(h.events().contains(&ClientEvent::Roster { id, entries }));

    let identity = HelloIdentity { agent: Some("a".into()), ..HelloIdentity::default() };
    let mut h = Harness::new(Config::emitter(identity, None));
    h.connect();
    h.relay(relay_hello(false, true));
    assert_eq!(h.conn.request_roster(), Err(ClientError::RoleCannotWatch));
}

#[test]
fn events_and_notices_flow_and_oddities_are_tolerated() {
    let (mut h, id) = live_consumer(false);
    h.relay_text(r#"{"type":"zigzag","note":"from the future"}"#);
    h.conn.handle_binary(&[1, 2, 3], h.now);
    h.relay_text("not json");
    let exhausted = ReplayExhausted { sub: id.clone(), earliest: SessionPosition::new("s1", 1, 8) };
    h.relay(Frame::ReplayExhausted(exhausted.clone()));
    let ev = event("attention.requested", "s1", 1, 8);
    h.relay(Frame::Event(ev.clone()));
    assert_eq!(h.conn.state(), &State::Live);
    let events = h.events();
    assert_eq!(events.iter().filter(|e| matches!(e, ClientEvent::Violation(_))).count(), 2, "{events:?}");
    assert!(events.contains(&ClientEvent::ReplayExhausted(exhausted)));
    let Some(ClientEvent::Event(got)) = events.iter().find(|e| matches!(e, ClientEvent::Event(_))) else { panic!() };
    assert_eq!(got.raw(), ev.raw(), "bytes kept");
}

#[test]
fn sending_needs_a_live_connection_and_keeps_bytes() {
    let cmd = Event::from_value(json!({
        "aep": "0.1", "id": "01JCMD", "type": "control.pause", "time": "2026-07-03T10:15:04.221Z",
        "source": "aep://console/agent/console", "agent": "console", "session": "s1", "data": {}
    }))
    .unwrap();
    let mut h = Harness::new(Config::consumer());
    assert!(matches!(h.conn.send_event(&cmd), Err(ClientError::NotLive(State::Idle))));
    h.connect();
    h.relay(relay_hello(false, false));
    h.take_sent();
    h.conn.send_event(&cmd).unwrap();
    h.flush();
    assert_eq!(h.sent, vec![Frame::Event(cmd.clone())]);
}

#[test]
fn an_application_that_falls_behind_costs_a_reconnect_not_an_event() {
    let (mut h, id) = live_consumer(false);
    h.relay(Frame::Event(event("attention.requested", "s1", 0, 0)));
    // Take exactly the first event, leave the rest queued.
    let first = loop {
        match h.conn.poll_event() {
            Some(ClientEvent::Event(e)) => break e,
            Some(_) => continue,
            None => panic!("no event"),
        }
    };
    assert_eq!(first.seq(), Some(0));
    let mut seq = 1;
    while h.conn.state() == &State::Live {
        h.relay(Frame::Event(event("attention.requested", "s1", 0, seq)));
        seq += 1;
        assert!(seq < 2 * MAX_INBOX as u64, "the inbox is bounded");
    }
    assert!(matches!(h.conn.state(), State::Reconnecting { .. }));
    assert!(h.take_actions().iter().any(|a| matches!(a, SocketAction::Close { code: CLOSE_GAVE_UP, .. })));
    h.reconnect();
    h.relay(relay_hello(false, false));
    let sent = h.take_sent();
    let sub = subscribes(&sent)[0];
    assert_eq!(sub.id, id);
    assert_eq!(sub.from, Some(ResumeFrom::Positions(vec![SessionPosition::new("s1", 0, 0)])), "only what was taken");
}

#[test]
fn a_socket_that_never_opens_asks_once_whether_the_token_is_refused() {
    let mut h = Harness::new(Config::consumer());
    h.conn.connect(h.now);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.closed(1006, "");
    assert_eq!(h.take_actions(), vec![SocketAction::CheckAuthorization]);
    assert!(matches!(h.conn.state(), State::Reconnecting { attempt: 1, .. }));

    // Further failures in the same run do not ask again.
    h.advance(60_000);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.closed(1006, "");
    assert!(h.take_actions().is_empty());

    // No answer (relay down) lets the next failure ask again.
    h.conn.handle_authorization(None, h.now);
    h.advance(60_000);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.closed(1006, "");
    assert_eq!(h.take_actions(), vec![SocketAction::CheckAuthorization]);

    // An answer other than 401/403 leaves the schedule as it was, and
    // settles the question: a later 401 for it is not taken.
    let before = h.conn.state().clone();
    h.conn.handle_authorization(Some(200), h.now);
    h.conn.handle_authorization(Some(401), h.now);
    assert_eq!(h.conn.state(), &before);

    // A new run asks again; 401 refuses for good and nothing is retried.
    h.conn.connect(h.now);
    assert!(h.take_actions().is_empty(), "connect while reconnecting changes nothing");
    h.conn.close(h.now);
    h.take_actions();
    h.conn.connect(h.now);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.closed(1006, "");
    assert_eq!(h.take_actions(), vec![SocketAction::CheckAuthorization]);
    h.conn.handle_authorization(Some(401), h.now);
    match h.conn.state() {
        State::Refused { reason: Refusal::Unauthorized { detail: Some(d) } } => assert!(d.contains("401"), "{d}"),
        other => panic!("expected an unauthorized refusal, got {other:?}"),
    }
    h.advance(3_600_000);
    assert!(h.take_actions().is_empty());

    // Connecting again is a new run: it asks again, and a 403 that lands
    // while the next socket is upgrading closes that socket.
    h.conn.connect(h.now);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.closed(1006, "");
    assert_eq!(h.take_actions(), vec![SocketAction::CheckAuthorization]);
    h.advance(60_000);
    assert_eq!(h.take_actions(), vec![SocketAction::Open]);
    h.conn.handle_authorization(Some(403), h.now);
    assert!(matches!(h.conn.state(), State::Refused { reason: Refusal::Unauthorized { .. } }));
    assert!(matches!(h.take_actions().as_slice(), [SocketAction::Close { .. }]));
}

#[test]
fn a_socket_that_opened_does_not_ask_about_the_token() {
    let mut h = Harness::new(Config::consumer());
    h.connect();
    h.closed(1006, "");
    assert!(h.take_actions().is_empty());
    let (mut h, _) = live_consumer(false);
    h.closed(1001, "going away");
    assert!(h.take_actions().is_empty());
    // An answer nobody asked for changes nothing.
    h.conn.handle_authorization(Some(401), h.now);
    assert!(matches!(h.conn.state(), State::Reconnecting { .. }));
}

//! The demo agents on a fake clock: every event they emit passes the
//! engine's envelope, payload and stream rules, and each command gets the
//! outcome the control profile promises.

use aep_engine::client::{SocketAction, SocketDriven, State, CLOSE_ABNORMAL};
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{Address, CancelScope, Command};
use aep_engine::protocol::frame::{Capabilities, Frame, Hello, Role};
use aep_engine::protocol::ids::{source_uri, ulid, Identity};
use aep_engine::protocol::validate;
use aep_engine::store::validate::stream as stream_violations;
use aep_engine::{Capture, Event, UnixMs};
use serde_json::{json, Map, Value};

use super::agent::{DemoAgent, Pace, Work};
use super::cast::{Persona, BUILD_BOT, CAST, DEPLOY_AGENT, GUARDIAN, INSTRUCT, RESEARCH_AGENT};

const T0: UnixMs = UnixMs(1_790_000_000_000);
/// Steps of one simulated stretch at most, so a bug cannot spin forever.
const MAX_STEPS: usize = 100_000;

/// One agent on a fake clock and a scripted relay (hello, pongs), and
/// everything it has emitted.
struct Sim {
    agent: DemoAgent,
    now: UnixMs,
    log: Vec<Event>,
    commands: u128,
}

impl Sim {
    fn new(persona: &'static Persona, seed: u64) -> Sim {
        let agent = DemoAgent::new(persona, seed, Pace::REAL_TIME, T0);
        let mut sim = Sim { agent, now: T0, log: Vec::new(), commands: 0 };
        sim.agent.connect(T0);
        sim.open();
        sim
    }

    /// Opens the socket the agent asks for and says the relay's hello.
    fn open(&mut self) {
        assert_eq!(self.agent.poll_action(), Some(((), SocketAction::Open)));
        self.agent.handle_open((), self.now);
        let ((), hello) = self.agent.poll_transmit().expect("the agent speaks first");
        assert!(matches!(Frame::decode(&hello), Ok(Frame::Hello(_))), "{hello}");
        let relay = Hello {
            versions: vec!["0.1".into()],
            role: Some(Role::Both),
            identity: None,
            capabilities: Capabilities::default(),
        };
        self.agent.handle_text((), &Frame::Hello(relay).encode(), self.now);
        assert_eq!(self.agent.state(()), Some(&State::Live));
        self.settle();
    }

    /// The socket drops and the agent reconnects at once.
    fn reconnect(&mut self) {
        self.agent.handle_closed((), self.now, CLOSE_ABNORMAL, "gone");
        let State::Reconnecting { at, .. } = *self.agent.state(()).unwrap() else {
            panic!("{:?}", self.agent.state(()))
        };
        self.now = self.now.max(at);
        self.agent.handle_timeout(self.now);
        self.open();
    }

    /// Hands the engine's reports to the script and takes what is written
    /// (pings answered), until nothing moves.
    fn settle(&mut self) -> Vec<Event> {
        let mut fresh = Vec::new();
        for _ in 0..MAX_STEPS {
            let mut busy = false;
            while let Some(change) = self.agent.poll_change() {
                busy = true;
                self.agent.on_change(change, self.now);
            }
            while let Some(((), text)) = self.agent.poll_transmit() {
                busy = true;
                match Frame::decode(&text).unwrap() {
                    Frame::Event(e) => fresh.push(e),
                    Frame::Ping { t } => self.agent.handle_text((), &Frame::Pong { t }.encode(), self.now),
                    other => panic!("the agent wrote {other:?}"),
                }
            }
            if !busy {
                break;
            }
        }
        self.log.extend(fresh.iter().cloned());
        fresh
    }

    /// Runs the agent's timers and the engine's up to `ms` from now.
    fn run_for(&mut self, ms: u64) -> Vec<Event> {
        let end = self.now + ms;
        let mut fresh = Vec::new();
        for _ in 0..MAX_STEPS {
            let wake = self.agent.next_wake();
            let timeout = self.agent.poll_timeout();
            let Some(at) = wake.into_iter().chain(timeout).min().filter(|at| *at <= end) else { break };
            self.now = self.now.max(at);
            if wake.is_some_and(|w| w <= self.now) {
                self.agent.on_wake(self.now);
            }
            if timeout.is_some_and(|t| t <= self.now) {
                self.agent.handle_timeout(self.now);
            }
            fresh.extend(self.settle());
        }
        self.now = end;
        fresh
    }

    /// Runs until an event matches, for at most ten simulated minutes.
    fn run_until(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        for _ in 0..6_000 {
            if let Some(e) = self.run_for(100).into_iter().find(|e| pred(e)) {
                return e;
            }
        }
        panic!("{}: no {what} within ten minutes", self.agent.persona().name);
    }

    /// The first logged event that matches, running on until one does.
    fn find(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        match self.log.iter().find(|e| pred(e)) {
            Some(e) => e.clone(),
            None => self.run_until(what, pred),
        }
    }

    fn session(&self) -> String {
        self.agent.session().expect("session started").to_owned()
    }

    fn command(&mut self, command: Command, run: Option<&str>) -> Event {
        let session = self.session();
        self.command_in(&session, command, run)
    }

    fn command_in(&mut self, session: &str, command: Command, run: Option<&str>) -> Event {
        let mut to = Address::session(session);
        if let Some(r) = run {
            to = to.with_run(r);
        }
        self.commands += 1;
        let event = command.build(&console(), &to, ulid(self.now, self.commands), self.now).unwrap();
        self.deliver(&event);
        event
    }

    /// The relay routes `command` to the agent.
    fn deliver(&mut self, command: &Event) {
        self.agent.handle_text((), &Frame::Event(command.clone()).encode(), self.now);
        self.settle();
    }

    /// The events emitted after `command` whose `cause` is it, waiting out
    /// the agent's thinking time.
    fn caused_by(&mut self, command: &Event) -> Vec<Event> {
        self.run_for(5_000);
        self.log.iter().filter(|e| e.cause() == Some(command.id())).cloned().collect()
    }
}

fn console() -> Identity {
    Identity::new(source_uri("laptop", "approval-console", None), "approval-console")
}

fn types(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::ty).collect()
}

fn is_request(e: &Event, kind: &str) -> bool {
    e.ty() == "attention.requested" && e.data_field("kind").and_then(Value::as_str) == Some(kind)
}

fn assert_valid(log: &[Event]) {
    for e in log {
        let envelope = validate::event(&e.to_value());
        assert!(envelope.is_empty(), "{}: {envelope:?}", e.raw());
        let payload = e.check_payload();
        assert!(payload.is_empty(), "{}: {payload:?}", e.raw());
    }
    let stream = stream_violations(log);
    assert!(stream.is_empty(), "{stream:?}");
}

#[test]
fn every_agent_emits_only_valid_events_and_keeps_requests_coming() {
    for persona in CAST {
        let mut sim = Sim::new(persona, 7);
        sim.run_for(10 * 60_000);
        let log = &sim.log;
        assert_valid(log);
        assert_eq!(log[0].ty(), "session.started");
        assert!(types(log).contains(&"tool.requested") && types(log).contains(&"tool.completed"), "{}", persona.name);
        let raised = log.iter().filter(|e| e.ty() == "attention.requested").count();
        assert!(raised >= persona.keep_open, "{}: {raised} requests", persona.name);
        assert!(sim.agent.open_requests().len() <= persona.keep_open);
    }
}

#[test]
fn a_seed_replays_the_same_events() {
    let run = |seed| {
        let mut sim = Sim::new(&RESEARCH_AGENT, seed);
        sim.run_for(120_000);
        sim.log.iter().map(|e| e.raw().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(run(11), run(11));
    assert_ne!(run(11), run(12));
}

#[test]
fn an_answer_is_acked_then_answered_and_resolved_and_a_retry_is_reacked() {
    let mut sim = Sim::new(&BUILD_BOT, 3);
    let request = sim.run_until("permission", |e| is_request(e, "permission"));
    let command = sim.command(Command::Respond { request: request.id().into(), answer: Answer::option("allow") }, None);
    let outcome = sim.caused_by(&command);
    assert_eq!(types(&outcome), ["control.accepted", "attention.answered", "attention.resolved"]);
    for e in &outcome[1..] {
        assert_eq!(e.subject(), Some(request.id()));
    }
    assert_eq!(outcome[1].data_field("answer"), Some(&json!({"option": "allow"})));
    assert!(!sim.agent.open_requests().contains(&request.id()));

    sim.deliver(&command);
    let again = sim.log.last().unwrap();
    assert_eq!(again.raw(), outcome[0].raw(), "the recorded ack, byte for byte");
    let caused = sim.caused_by(&command);
    assert_eq!(
        types(&caused),
        ["control.accepted", "attention.answered", "attention.resolved", "control.accepted"],
        "re-acked, never executed twice"
    );
}

#[test]
fn text_naming_no_option_denies_a_permission_and_free_text_answers_an_input() {
    let mut sim = Sim::new(&BUILD_BOT, 4);
    let request = sim.run_until("permission", |e| is_request(e, "permission"));
    let command = sim.command(
        Command::Respond { request: request.id().into(), answer: Answer::text("use the staging cache") },
        None,
    );
    let answered = sim.caused_by(&command).into_iter().find(|e| e.ty() == "attention.answered").unwrap();
    assert_eq!(answered.data_field("answer"), Some(&json!({"option": "deny", "text": "use the staging cache"})));

    let mut sim = Sim::new(&RESEARCH_AGENT, 4);
    let input = sim.run_until("input", |e| is_request(e, "input"));
    let command =
        sim.command(Command::Respond { request: input.id().into(), answer: Answer::text("OPS and SEC") }, None);
    let answered = sim.caused_by(&command).into_iter().find(|e| e.ty() == "attention.answered").unwrap();
    assert_eq!(answered.capture(), Capture::Full, "typed text, unredacted");
}

#[test]
fn a_form_answer_is_checked_and_the_agent_thinks_before_deciding() {
    let mut sim = Sim::new(&DEPLOY_AGENT, 5);
    let form = sim
        .run_until("form", |e| is_request(e, "form") && e.data_field("fields").unwrap().as_array().unwrap().len() == 6);
    let values = |v: Value| -> Map<String, Value> { v.as_object().unwrap().clone() };
    let incomplete = sim.command(
        Command::Respond {
            request: form.id().into(),
            answer: Answer::values(values(json!({"environment": "staging"}))),
        },
        None,
    );
    assert!(sim.log.iter().all(|e| e.cause() != Some(incomplete.id())), "no decision before the thinking time");
    let nack = sim.caused_by(&incomplete);
    assert_eq!(types(&nack), ["control.rejected"]);
    assert_eq!(nack[0].data_field("reason"), Some(&json!("invalid")));

    let complete = values(json!({
        "version": "v2.14.0", "environment": "production", "regions": ["us-east-1", "eu-west-1"],
        "replicas": 6, "canary": true, "notify": "#payments-oncall"
    }));
    let command = sim.command(Command::Respond { request: form.id().into(), answer: Answer::values(complete) }, None);
    assert_eq!(types(&sim.caused_by(&command)), ["control.accepted", "attention.answered", "attention.resolved"]);
}

#[test]
fn the_guardian_refuses_answers_and_then_withdraws_the_request() {
    let mut sim = Sim::new(&GUARDIAN, 6);
    let request = sim.run_until("permission", |e| is_request(e, "permission"));
    let command =
        sim.command(Command::Respond { request: request.id().into(), answer: Answer::option("approve") }, None);
    sim.run_for(10_000);
    let caused = sim.caused_by(&command);
    assert_eq!(types(&caused), ["control.rejected", "attention.resolved"]);
    assert_eq!(caused[0].data_field("reason"), Some(&json!("refused")));
    assert_eq!(caused[1].data_field("resolution"), Some(&json!("dismissed")));
    assert_eq!(caused[1].subject(), Some(request.id()));
    assert_valid(&sim.log);
}

#[test]
fn pause_stops_the_work_until_resume() {
    let mut sim = Sim::new(&RESEARCH_AGENT, 8);
    sim.run_until("a tool call", |e| e.ty() == "tool.requested");
    let pause = sim.command(Command::Pause, None);
    let paused = sim.caused_by(&pause);
    assert_eq!(types(&paused), ["control.accepted", "progress.status"]);
    assert_eq!(paused[1].data_field("phase"), Some(&json!("paused")));
    assert_eq!(sim.agent.work(), Work::Paused);
    let idle = sim.run_for(120_000);
    assert!(!types(&idle).contains(&"tool.requested"), "{:?}", types(&idle));

    let resume = sim.command(Command::Resume, None);
    assert_eq!(sim.caused_by(&resume)[1].data_field("phase"), Some(&json!("resumed")));
    sim.run_until("a tool call", |e| e.ty() == "tool.requested");
    assert_valid(&sim.log);
}

#[test]
fn an_instruction_is_followed_and_one_without_words_is_invalid() {
    let mut sim = Sim::new(&RESEARCH_AGENT, 9);
    let instruct = |text: Option<&str>| Command::Vendor {
        vendor: "demo".into(),
        verb: "instruct".into(),
        data: text.map(|t| json!({"text": t}).as_object().unwrap().clone()).unwrap_or_default(),
        capture: Capture::Redacted,
    };
    let command = sim.command(instruct(Some("cite ticket numbers")), None);
    assert_eq!(command.ty(), INSTRUCT);
    let caused = sim.caused_by(&command);
    assert_eq!(types(&caused), ["control.accepted", "progress.status"]);
    assert!(caused[1].data_field("message").unwrap().as_str().unwrap().contains("cite ticket numbers"));
    let empty = sim.command(instruct(None), None);
    assert_eq!(sim.caused_by(&empty)[0].data_field("reason"), Some(&json!("invalid")));
}

#[test]
fn an_expiring_request_times_out_at_its_expiry() {
    let mut sim = Sim::new(&RESEARCH_AGENT, 10);
    let request = sim.run_until("expiring request", |e| e.data_field("expires_at").is_some());
    let expires = UnixMs::parse_rfc3339(request.data_field("expires_at").unwrap().as_str().unwrap()).unwrap();
    let timeout = sim.run_until("timeout", |e| e.ty() == "attention.timeout");
    assert_eq!(timeout.subject(), Some(request.id()));
    assert_eq!(UnixMs::parse_rfc3339(timeout.time()), Some(expires));
    let late = sim.command(Command::Respond { request: request.id().into(), answer: Answer::option("allow") }, None);
    assert_eq!(sim.caused_by(&late)[0].data_field("reason"), Some(&json!("invalid")), "closed by the timeout");
}

#[test]
fn cancelling_a_run_or_the_session_closes_what_was_open() {
    let mut sim = Sim::new(&BUILD_BOT, 12);
    let request = sim.run_until("permission", |e| is_request(e, "permission"));
    let run = request.run().unwrap().to_owned();
    let stale = sim.command(Command::Cancel { scope: CancelScope::Run, reason: None }, Some("run-elsewhere"));
    assert_eq!(sim.caused_by(&stale)[0].data_field("reason"), Some(&json!("invalid")));

    let cancel =
        sim.command(Command::Cancel { scope: CancelScope::Run, reason: Some("wrong branch".into()) }, Some(&run));
    let caused = sim.caused_by(&cancel);
    assert_eq!(types(&caused)[..2], ["control.accepted", "run.cancelled"]);
    assert_eq!(caused[1].run(), Some(run.as_str()));
    assert!(caused[2..].iter().all(|e| e.ty() == "attention.resolved"));
    assert!(sim.agent.open_requests().is_empty());

    sim.find("a new run", |e| e.ty() == "run.started" && e.run() != Some(run.as_str()));
    sim.find("a new request", |e| is_request(e, "permission") && e.run() != Some(run.as_str()));
    let old = sim.session();
    let end = sim.command(Command::Cancel { scope: CancelScope::Session, reason: None }, None);
    let caused = sim.caused_by(&end);
    assert_eq!(caused.last().unwrap().ty(), "session.ended");
    sim.find("a new session", |e| e.ty() == "session.started" && e.session() != Some(old.as_str()));
    assert_ne!(sim.session(), old);
    let stray = sim.command_in(&old, Command::Pause, None);
    assert_eq!(sim.caused_by(&stray)[0].data_field("reason"), Some(&json!("invalid")), "that session has ended");
    assert_valid(&sim.log);
}

#[test]
fn a_reconnect_redelivers_the_session_run_and_open_requests_unchanged() {
    let mut sim = Sim::new(&DEPLOY_AGENT, 13);
    sim.run_until("a request", |e| e.ty() == "attention.requested");
    let open: Vec<String> = sim.agent.open_requests().iter().map(|s| s.to_string()).collect();
    let mark = sim.log.len();
    sim.reconnect();
    let again = sim.log[mark..].to_vec();
    assert_eq!(types(&again[..2]), ["session.started", "run.started"]);
    for e in &again {
        let first = sim.log[..mark].iter().find(|x| x.id() == e.id()).unwrap();
        assert_eq!(first.raw(), e.raw());
    }
    let redelivered: Vec<&str> = again[2..].iter().map(Event::id).collect();
    assert_eq!(redelivered, open);
}

/// The agents' WebSocket is plain: against an HTTPS relay they say so
/// rather than start and fail to connect forever.
#[test]
fn an_https_relay_gets_no_demonstration_agents() {
    let options = super::DemoOptions { token: Some("t".into()), ..super::DemoOptions::default() };
    let refused = super::start("https://127.0.0.1:8787", &options).err().expect("refused");
    assert!(refused.0.contains("plain WebSocket only"), "{refused}");
}

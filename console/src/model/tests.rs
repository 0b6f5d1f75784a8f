//! The view models over a real hub, driven natively: one scripted relay,
//! frames encoded by the engine's own frame module, a fake clock.

use aep_engine::client::hub::{Hub, HubConfig, RelaySpec};
use aep_engine::client::{Config, SocketDriven};
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::RelayCode;
use aep_engine::protocol::frame::{
    Capabilities, ControlCapability, ErrorFrame, Frame, Hello, HelloIdentity, ReplayCapability, Role, RosterEntry,
};
use aep_engine::protocol::ids::Identity;
use aep_engine::protocol::vocabulary::types;
use aep_engine::rng::Seeded;
use aep_engine::store::CardStatus;
use aep_engine::{Event, UnixMs};
use serde_json::{json, Map, Value};

use super::card::{self, Answering, Tone};
use super::command::Phase;
use super::touched::Touched;
use super::{notice, session, timeline};

const T0: UnixMs = UnixMs(1_783_073_703_000);

struct Relay {
    hub: Hub,
    now: UnixMs,
    sent: Vec<Frame>,
    /// What the hub's changes touched (and the relay notices they called
    /// for), as the console's flush reads it.
    touched: Touched,
}

impl Relay {
    fn new() -> Relay {
        Relay::connected_as(None)
    }

    /// A relay whose hello names this console's principal (`as`), as a
    /// relay with a credentials file does.
    fn connected_as(principal: Option<&str>) -> Relay {
        let config = HubConfig::new(Identity::new("aep://console.test/agent/aep-console", "aep-console"), 1);
        let spec = RelaySpec { label: "relay-a".into(), config: Config::consumer() };
        let mut r = Relay {
            hub: Hub::new(config, vec![spec]).unwrap(),
            now: T0,
            sent: Vec::new(),
            touched: Touched::default(),
        };
        r.hub.connect(r.now);
        r.drain();
        r.hub.handle_open(0, r.now);
        let mut capabilities = Capabilities {
            replay: Some(ReplayCapability { buffer: Some(512), all: Some(true), other: Map::new() }),
            roster: Some(Map::new()),
            ..Capabilities::default()
        };
        if let Some(p) = principal {
            capabilities.set_principal(p, &["operator"]);
        }
        r.send(Frame::Hello(Hello {
            versions: vec!["0.1".into()],
            role: Some(Role::Both),
            identity: Some(HelloIdentity { agent: Some("relay".into()), ..HelloIdentity::default() }),
            capabilities,
        }));
        let sub = r.sent.iter().find_map(|f| if let Frame::Subscribe(s) = f { Some(s.id.clone()) } else { None });
        r.send(Frame::Subscribed { id: sub.unwrap() });
        r.roster(&["control.attention.respond", "control.cancel", "control.pause", "x.demo.control.instruct"]);
        r
    }

    fn drain(&mut self) {
        while let Some((_, text)) = self.hub.poll_transmit() {
            self.sent.push(Frame::decode(&text).unwrap());
        }
        while self.hub.poll_action().is_some() {}
        while let Some(c) = self.hub.poll_change() {
            self.touched.note(&self.hub, c);
        }
    }

    fn send(&mut self, f: Frame) {
        self.hub.handle_text(0, &f.encode(), self.now);
        self.drain();
    }

    fn roster(&mut self, accepts: &[&str]) {
        self.roster_of(vec![claim(accepts)]);
    }

    /// Answers the latest roster request with `entries`.
    fn roster_of(&mut self, entries: Vec<RosterEntry>) {
        let ask =
            self.sent.iter().rev().find_map(
                |f| {
                    if let Frame::RosterRequest { id } = f {
                        Some(id.clone())
                    } else {
                        None
                    }
                },
            );
        self.send(Frame::Roster { id: ask.unwrap(), entries });
    }

    fn event(&mut self, v: Value) {
        let mut base = json!({
            "aep": "0.1", "time": "2026-07-03T10:15:04.221Z", "source": "aep://h/agent/demo", "agent": "demo",
            "session": "s1",
        });
        if let (Value::Object(m), Value::Object(x)) = (&mut base, v) {
            m.extend(x);
        }
        self.send(Frame::Event(Event::from_value(base).unwrap()));
    }

    fn respond(&mut self, request: &str, answer: Answer) -> String {
        let id = self.hub.respond(request, answer, self.now).unwrap();
        self.drain();
        id
    }

    fn card(&self, id: &str) -> card::CardView {
        let c = self.hub.store().cards().find(|c| c.id() == id).unwrap();
        card::view(&self.hub, c)
    }
}

/// A live claim of session `s1` by the demo agent.
fn claim(accepts: &[&str]) -> RosterEntry {
    RosterEntry {
        session: "s1".into(),
        agent: Some("demo".into()),
        instance: None,
        control: Some(ControlCapability::new(accepts.iter().copied(), Some(2_000))),
        emits: None,
    }
}

fn with_session() -> Relay {
    let mut r = Relay::new();
    r.event(json!({ "id": "E0", "type": "session.started", "seq": 0, "capture": "redacted", "data": { "label": "Fix the tests" } }));
    r.event(json!({ "id": "E1", "type": "run.started", "seq": 1, "run": "r1", "data": {} }));
    r.event(json!({
        "id": "REQ1", "type": "attention.requested", "seq": 2, "run": "r1", "subject": "Bash", "severity": "warning",
        "capture": "redacted",
        "data": { "kind": "permission", "prompt": "Run <img src=x onerror=alert(1)>?",
                  "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] }
    }));
    r
}

#[test]
fn a_card_names_the_project_that_asks() {
    let mut r = Relay::new();
    r.event(json!({ "id": "E0", "type": "session.started", "seq": 0, "capture": "redacted",
        "data": { "cwd": "/home/dev/payments-api/" } }));
    ask(&mut r, "Q", 1, "warning", json!({}));
    let v = r.card("Q");
    assert_eq!(
        (v.project().as_deref(), v.cwd.as_deref()),
        (Some("payments-api"), Some("/home/dev/payments-api/")),
        "its folder, without a label"
    );
    let r = with_session();
    assert_eq!(r.card("REQ1").project().as_deref(), Some("Fix the tests"), "the label the agent gave it");
}

#[test]
fn a_permission_card_keeps_agent_text_and_its_provenance() {
    let r = with_session();
    let v = r.card("REQ1");
    assert_eq!(v.prompt.as_deref(), Some("Run <img src=x onerror=alert(1)>?"), "kept as data, untouched");
    assert_eq!(v.answering, Answering::Options);
    assert_eq!(
        (v.agent.as_str(), v.relay.as_deref(), v.run.as_deref(), v.subject.as_deref()),
        ("demo", Some("relay-a"), Some("r1"), Some("Bash"))
    );
    assert_eq!(v.session_label.as_deref(), Some("Fix the tests"));
    assert!(v.options[0].permissive && !v.options[1].permissive);
    assert!(!v.synthesized);
}

#[test]
fn an_answer_is_followed_from_sent_to_done_and_the_card_closes() {
    let mut r = with_session();
    let cmd = r.respond("REQ1", Answer::option("allow"));
    let v = r.card("REQ1");
    assert_eq!(v.commands[0].phase, Phase::Sending);
    assert!(v.in_flight());
    assert_eq!(v.commands[0].what, "Allow", "option ids read as their labels");
    r.event(json!({ "id": "A1", "type": "control.accepted", "seq": 3, "cause": cmd, "data": {} }));
    assert_eq!(r.card("REQ1").commands[0].phase, Phase::Accepted);
    r.event(json!({ "id": "A2", "type": "attention.answered", "seq": 4, "subject": "REQ1", "cause": cmd,
                    "data": { "answer": { "option": "allow" }, "by": "aep-console", "via": "control" } }));
    r.event(json!({ "id": "A3", "type": "attention.resolved", "seq": 5, "subject": "REQ1", "cause": cmd,
                    "data": { "resolution": "answered", "latency_ms": 1200 } }));
    let v = r.card("REQ1");
    assert_eq!(v.status, CardStatus::Resolved);
    assert_eq!(v.commands[0].phase, Phase::Done("attention.answered".into()));
    assert_eq!(v.outcome_words(&[]), "Allowed by aep-console \u{2014} it goes ahead");
    assert_eq!(v.outcome_words(&["aep-console".to_owned()]), "Allowed by you (aep-console) \u{2014} it goes ahead");
}

#[test]
fn a_refused_command_followed_by_a_caused_event_still_reads_as_refused() {
    let mut r = with_session();
    // Another operator's answer, refused; then the agent withdraws the
    // request, naming that answer as the cause.
    r.event(json!({ "id": "C9", "type": "control.attention.respond", "source": "aep://elsewhere/agent/ops",
                    "agent": "ops", "subject": "REQ1", "cause": "REQ1", "data": { "answer": { "option": "allow" } } }));
    r.event(json!({ "id": "N9", "type": "control.rejected", "seq": 3, "cause": "C9",
                    "data": { "reason": "invalid" } }));
    r.event(json!({ "id": "W9", "type": "attention.resolved", "seq": 4, "subject": "REQ1", "cause": "C9",
                    "data": { "resolution": "withdrawn" } }));
    let theirs = r.card("REQ1").commands.into_iter().find(|c| c.id == "C9").expect("the chain is shown");
    assert!(matches!(theirs.phase, Phase::Rejected { .. }), "{:?}", theirs.phase);
    assert!(theirs.explanation.as_deref().is_some_and(|e| e.contains("attention.resolved")), "{theirs:?}");
}

#[test]
fn refusals_and_silence_are_told_apart_in_words() {
    let mut r = with_session();
    let cmd = r.respond("REQ1", Answer::text("no"));
    r.send(Frame::Error(ErrorFrame {
        code: "no-route".into(),
        detail: Some("nobody claims s1".into()),
        id: None,
        cause: Some(cmd.clone()),
        versions: None,
    }));
    let c = &r.card("REQ1").commands[0];
    assert_eq!(c.phase, Phase::RelayRefused { code: RelayCode::NoRoute, detail: Some("nobody claims s1".into()) });
    assert!(c.headline.contains("not connected"), "{}", c.headline);

    let cmd = r.respond("REQ1", Answer::option("deny"));
    r.now = r.now + 2_001;
    r.hub.handle_timeout(r.now);
    r.drain();
    let v = r.card("REQ1");
    let c = v.commands.iter().find(|c| c.id == cmd).unwrap();
    assert_eq!(c.phase, Phase::TimedOut, "the roster's 2 s window applies");
    assert!(c.retryable());
    r.hub.retry(&cmd, r.now).unwrap();
    r.drain();
    let again = r.sent.iter().filter(|f| matches!(f, Frame::Event(e) if e.id() == cmd)).count();
    assert_eq!(again, 2, "the retry sends the same command id");

    let cmd = r.respond("REQ1", Answer::option("allow"));
    r.event(json!({ "id": "N1", "type": "control.rejected", "seq": 3, "cause": cmd,
                    "data": { "reason": "refused", "detail": "two approvers needed" } }));
    let v = r.card("REQ1");
    let c = v.commands.iter().find(|c| c.id == cmd).unwrap();
    assert_eq!(c.headline, "Refused by the agent");
    assert!(c.explanation.as_deref().unwrap().contains("not an error"));

    // A reason with no words here is shown as the agent sent it.
    let mut r = with_session();
    let cmd = r.respond("REQ1", Answer::option("allow"));
    r.event(
        json!({ "id": "N2", "type": "control.rejected", "seq": 3, "cause": cmd, "data": { "reason": "x-cooldown" } }),
    );
    let c = r.card("REQ1").commands.into_iter().find(|c| c.id == cmd).unwrap();
    assert_eq!(c.headline, "Rejected by the agent (x-cooldown)");
}

#[test]
fn out_of_band_and_metadata_requests_are_shown_for_what_they_are() {
    let mut r = with_session();
    r.event(json!({
        "id": "REQ2", "type": "attention.requested", "seq": 3, "capture": "metadata",
        "data": { "kind": "review", "prompt": "Review requested", "respond_via": ["oob"],
                  "options": [{"id": "approve", "label": "approve"}] }
    }));
    let v = r.card("REQ2");
    assert_eq!(v.answering, Answering::Elsewhere(vec!["oob".into()]));
    assert!(v.synthesized, "a metadata prompt is synthesized, not the agent's words");
    assert!(v.options[0].label_is_id);
}

#[test]
fn a_session_claimed_twice_offers_no_verbs_and_says_so() {
    let mut r = with_session();
    r.hub.request_roster(0).unwrap();
    r.drain();
    r.roster_of(vec![claim(&["control.cancel", "control.pause"]), claim(&["control.cancel"])]);
    assert_eq!(r.hub.claims(0, "s1").count(), 2, "both claims kept");
    let lane = session::lanes(&r.hub).remove(0);
    assert_eq!(lane.verbs.claims, 2);
    assert!(lane.verbs.listed);
    assert!(!lane.verbs.cancel && !lane.verbs.pause && !lane.verbs.respond, "{:?}", lane.verbs);
    assert_eq!(r.card("REQ1").answering, Answering::Ambiguous { claims: 2 }, "no answer buttons either");
}

#[test]
fn lanes_offer_only_declared_verbs_and_timelines_link_causes() {
    let mut r = with_session();
    let cmd = r.respond("REQ1", Answer::option("allow"));
    r.event(json!({ "id": "A1", "type": "control.accepted", "seq": 3, "cause": cmd, "data": {} }));
    r.event(json!({ "id": "X1", "type": "x.acme.build.cache", "seq": 4, "data": { "hits": 12, "store": "s3" } }));
    let lanes = session::lanes(&r.hub);
    let lane = &lanes[0];
    assert!(lane.verbs.listed && lane.verbs.cancel && lane.verbs.pause && !lane.verbs.resume);
    assert_eq!(lane.verbs.vendor, ["x.demo.control.instruct"]);
    assert_eq!(lane.open_run().map(|r| r.name.as_str()), Some("r1"));
    assert_eq!(lane.pending, 1);
    let s = r.hub.store().sessions().next().unwrap();
    let (items, hidden, dropped) = timeline::items(s, timeline::MAX_ITEMS);
    assert_eq!((hidden, dropped), (0, 0));
    let ack = items.iter().find(|i| i.id == "A1").unwrap();
    assert!(ack.cause.as_ref().unwrap().1.as_deref().unwrap().contains("control.attention.respond"), "{ack:?}");
    let vendor = items.iter().find(|i| i.id == "X1").unwrap();
    assert!(vendor.generic && vendor.summary.contains("hits: 12"), "{vendor:?}");
    let commands = session::commands(&r.hub, s);
    assert_eq!(commands[0].what, "Allow");
}

#[test]
fn a_later_answer_refused_after_an_earlier_one_applied_is_said_plainly() {
    let mut r = with_session();
    r.roster(&["control.attention.respond"]);
    // Deny goes out on a half-dead connection and is not acknowledged in
    // time; the operator then answers Allow.
    let deny = r.respond("REQ1", Answer::option("deny"));
    r.now = r.now + 2_001;
    r.hub.handle_timeout(r.now);
    r.drain();
    let allow = r.respond("REQ1", Answer::option("allow"));
    // Back online: the agent had applied Deny, and refuses Allow.
    r.event(json!({ "id": "K1", "type": "control.accepted", "seq": 3, "cause": deny, "data": {} }));
    r.event(json!({ "id": "K2", "type": "attention.answered", "seq": 4, "subject": "REQ1", "cause": deny,
                    "data": { "answer": { "option": "deny" }, "by": "aep-console", "via": "control" } }));
    r.event(json!({ "id": "K3", "type": "attention.resolved", "seq": 5, "subject": "REQ1", "cause": deny,
                    "data": { "resolution": "answered" } }));
    r.event(json!({ "id": "K4", "type": "control.rejected", "seq": 6, "cause": allow,
                    "data": { "reason": "invalid", "detail": "already answered" } }));
    let v = r.card("REQ1");
    assert_eq!(v.overruled, vec!["Allow".to_owned()], "{:?}", v.commands);
    let words = v.outcome_words(&[]);
    assert!(
        words
            .starts_with("Your later answer \u{201c}Allow\u{201d} was refused: the agent applied \u{201c}Deny\u{201d}"),
        "{words}"
    );
}

#[test]
fn the_inbox_puts_the_most_severe_first_then_the_soonest_to_expire_then_the_oldest() {
    let mut r = with_session();
    let ask = |r: &mut Relay, id: &str, seq: u64, severity: &str, expires: Option<&str>| {
        let mut data = json!({ "kind": "permission", "prompt": id,
                               "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] });
        if let Some(at) = expires {
            data["expires_at"] = json!(at);
        }
        r.event(json!({ "id": id, "type": "attention.requested", "seq": seq, "run": "r1",
                        "severity": severity, "capture": "redacted", "data": data }));
    };
    // REQ1 (warning, no expiry) is already waiting.
    ask(&mut r, "LATER", 3, "warning", Some("2026-07-03T10:30:00Z"));
    ask(&mut r, "SOONER", 4, "warning", Some("2026-07-03T10:20:00Z"));
    ask(&mut r, "CRIT", 5, "critical", None);
    ask(&mut r, "CALM", 6, "info", Some("2026-07-03T10:16:00Z"));
    let order: Vec<String> = r.hub.store().inbox().iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(order, ["CRIT", "SOONER", "LATER", "REQ1", "CALM"]);
}

#[test]
fn form_values_read_as_the_choices_labels_and_other_text_as_typed() {
    let mut r = with_session();
    r.event(json!({
        "id": "FORM1", "type": "attention.requested", "seq": 3, "run": "r1", "capture": "redacted",
        "data": { "kind": "form", "prompt": "Rollout",
                  "fields": [
                      {"id": "env", "type": "select", "label": "Environment",
                       "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
                      {"id": "regions", "type": "select", "label": "Regions", "multi": true,
                       "choices": [{"id": "us-east-1", "label": "US East"}, {"id": "eu-west-1", "label": "EU (Ireland)"}]},
                      {"id": "notify", "type": "select", "label": "Announce in", "other": true,
                       "choices": [{"id": "ops", "label": "#ops"}]},
                      {"id": "canary", "type": "boolean", "label": "Canary"}
                  ] }
    }));
    r.event(json!({ "id": "FA1", "type": "attention.answered", "seq": 4, "subject": "FORM1", "capture": "redacted",
                    "data": { "answer": { "values": { "env": "staging", "regions": ["us-east-1", "eu-west-1"],
                                                      "notify": "#payments-release", "canary": true } },
                              "by": "ops", "via": "control" } }));
    let values = r.card("FORM1").answer.unwrap().values;
    let get = |k: &str| values.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
    assert_eq!(get("Environment"), "Staging");
    assert_eq!(get("Regions"), "US East, EU (Ireland)");
    assert_eq!(get("Announce in"), "#payments-release", "free text is kept as typed");
    assert_eq!(get("Canary"), "yes");
}

#[test]
fn sessions_keep_the_order_they_started_in_while_work_comes_and_goes() {
    let mut r = with_session();
    // A second session starts later, then gets busier than the first.
    r.now = r.now + 5_000;
    r.event(json!({ "id": "F0", "type": "session.started", "session": "s2", "seq": 0, "time": "2026-07-03T10:16:00Z",
                    "data": { "label": "Second" } }));
    let names = |r: &Relay| session::lanes(&r.hub).into_iter().map(|l| l.name).collect::<Vec<_>>();
    assert_eq!(names(&r), ["s1", "s2"], "the order they started in");
    r.now = r.now + 5_000;
    r.event(json!({ "id": "F1", "type": "attention.requested", "session": "s2", "seq": 1, "severity": "critical",
                    "data": { "kind": "permission", "prompt": "Drop it?",
                              "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
    r.event(json!({ "id": "F2", "type": "attention.requested", "session": "s2", "seq": 2,
                    "data": { "kind": "input", "prompt": "Name?" } }));
    assert_eq!(names(&r), ["s1", "s2"], "more waiting does not move a session up");
    r.now = r.now + 5_000;
    r.event(json!({ "id": "E9", "type": "progress.status", "seq": 3, "data": { "phase": "working" } }));
    assert_eq!(names(&r), ["s1", "s2"], "recent activity does not move a session");
    r.event(json!({ "id": "E10", "type": "session.ended", "seq": 4, "data": { "reason": "done" } }));
    let lanes = session::lanes(&r.hub);
    assert_eq!(lanes[0].name, "s1", "an ended session keeps its place");
    assert_eq!(lanes[0].state, session::LaneState::Ended);
    assert_eq!(lanes[1].state, session::LaneState::Active);
}

#[test]
fn this_consoles_commands_read_as_its_own_after_a_reload() {
    let mut r = with_session();
    // A fresh page (an empty sender) replays what an earlier page sent:
    // the command as the relay forwarded it, its ack and its outcome.
    r.event(json!({ "id": "CMD1", "type": "control.cancel", "time": "2026-07-03T10:15:10Z",
                    "source": "aep://console.test/agent/aep-console", "agent": "aep-console",
                    "run": "r1", "data": { "scope": "run", "reason": "stuck" } }));
    r.event(json!({ "id": "K1", "type": "control.accepted", "seq": 3, "cause": "CMD1", "data": {} }));
    r.event(json!({ "id": "K2", "type": "run.cancelled", "seq": 4, "run": "r1", "cause": "CMD1", "data": { "reason": "stuck" } }));
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).remove(0);
    assert!(c.by_this_console, "sent as this console: {c:?}");
    // The name the timeline gives the sender ("aep-console asked to
    // cancel"), marked as the person's own.
    assert_eq!(c.who(&[]), "You (aep-console)");
    assert_eq!(c.sent_at, UnixMs::parse_rfc3339("2026-07-03T10:15:10Z"));
    assert_eq!(c.phase, Phase::Done("run.cancelled".into()));
    assert_eq!(c.what, "run r1 \u{2014} \u{201c}stuck\u{201d}");
}

#[test]
fn a_command_known_only_by_its_ack_is_named_by_what_the_ack_says() {
    let mut r = with_session();
    r.event(json!({ "id": "K1", "type": "control.accepted", "seq": 3, "cause": "GONE1", "time": "2026-07-03T10:15:20Z", "data": {} }));
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).remove(0);
    let line = format!("{}: {}", c.who(&[]), c.verb);
    assert!(!line.contains("Someone") && !line.contains("command not seen"), "{line}");
    assert!(c.sent_at.is_some(), "a time to show: {c:?}");
}

#[test]
fn a_timeline_reads_newest_first_with_each_tool_call_folded_with_its_result() {
    let mut r = with_session();
    r.event(json!({ "id": "T1", "type": "tool.requested", "seq": 3, "run": "r1",
                    "data": { "tool": { "name": "Bash", "call_id": "c1" }, "args_redacted": { "input": "ls" } } }));
    r.event(json!({ "id": "P1", "type": "progress.status", "seq": 4, "run": "r1", "data": { "phase": "listing" } }));
    r.event(json!({ "id": "T2", "type": "tool.completed", "seq": 5, "run": "r1",
                    "data": { "tool": { "name": "Bash", "call_id": "c1" }, "status": "ok" } }));
    r.event(json!({ "id": "T3", "type": "tool.requested", "seq": 6, "run": "r1",
                    "data": { "tool": { "name": "Read", "call_id": "c2" } } }));
    let s = r.hub.store().sessions().next().unwrap();
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let ids = |rows: &[timeline::Row]| rows.iter().map(|r| r.id().to_owned()).collect::<Vec<_>>();
    let all = timeline::rows(&items, timeline::Filter::All);
    assert_eq!(ids(&all), ["T3", "T2", "P1", "REQ1", "E1", "E0"], "newest first, the pair where its result is");
    match &all[1] {
        timeline::Row::ToolCall { call, result } => {
            assert_eq!((call.id.as_str(), result.as_ref().map(|i| i.id.as_str())), ("T1", Some("T2")));
            assert_eq!(call.call.as_deref(), Some("c1"));
        }
        other => panic!("the call and its result are one row: {other:?}"),
    }
    assert!(
        matches!(&all[0], timeline::Row::Event(i) if i.category == timeline::Category::Tool),
        "a call still running stands alone"
    );
    let tools = timeline::rows(&items, timeline::Filter::Only(timeline::Category::Tool));
    assert_eq!(ids(&tools), ["T3", "T2"]);
    let asks = timeline::rows(&items, timeline::Filter::Only(timeline::Category::Attention));
    assert_eq!(ids(&asks), ["REQ1"]);
    assert_eq!(timeline::Category::of("x.acme.build.cache"), timeline::Category::Other);
    assert_eq!(timeline::Category::of("control.accepted"), timeline::Category::Control);
}

#[test]
fn the_inbox_is_filtered_and_grouped_by_agent_session_and_kind() {
    use super::inbox::{self, Filter, Grouping, Row};
    let mut r = with_session();
    r.event(json!({ "id": "REQ3", "type": "attention.requested", "seq": 3, "run": "r1",
                    "data": { "kind": "input", "prompt": "Which branch?" } }));
    r.event(json!({ "id": "G0", "type": "session.started", "session": "s2", "seq": 0, "source": "aep://h/agent/ops", "agent": "ops",
                    "data": { "label": "Night shift" } }));
    r.event(json!({ "id": "REQ2", "type": "attention.requested", "session": "s2", "seq": 1, "severity": "critical",
                    "source": "aep://h/agent/ops", "agent": "ops", "data": { "kind": "input", "prompt": "Page someone?" } }));
    let rows: Vec<Row> = r.hub.store().inbox().iter().map(|c| Row::Waiting(inbox::waiting(&r.hub, c))).collect();
    let ids = |groups: &[inbox::Group]| -> Vec<Vec<String>> {
        groups.iter().map(|g| g.rows.iter().map(|r| r.request().to_owned()).collect()).collect()
    };
    assert_eq!(ids(&inbox::arrange(&rows, &Filter::default(), Grouping::None)), [["REQ2", "REQ1", "REQ3"]]);

    let f = inbox::facets(&rows, &Filter::default());
    let pairs = |v: &[inbox::Facet]| v.iter().map(|x| (x.label.clone(), x.count)).collect::<Vec<_>>();
    assert_eq!(pairs(&f.agents), [("demo".to_owned(), 2), ("ops".to_owned(), 1)]);
    assert_eq!(pairs(&f.kinds), [("input".to_owned(), 2), ("permission".to_owned(), 1)]);
    assert_eq!(pairs(&f.sessions), [("Fix the tests".to_owned(), 2), ("Night shift".to_owned(), 1)]);

    let demo = Filter { agent: Some("demo".into()), ..Filter::default() };
    assert_eq!(ids(&inbox::arrange(&rows, &demo, Grouping::None)), [["REQ1", "REQ3"]]);
    let demo_input = Filter { kind: Some("input".into()), ..demo.clone() };
    assert_eq!(ids(&inbox::arrange(&rows, &demo_input, Grouping::None)), [["REQ3"]]);
    let night = Filter { session: Some(f.sessions[1].value.clone()), ..Filter::default() };
    assert_eq!(ids(&inbox::arrange(&rows, &night, Grouping::None)), [["REQ2"]]);
    assert!(demo.is_active() && !Filter::default().is_active());

    // Groups come in the order of their most urgent request.
    let by_session = inbox::arrange(&rows, &Filter::default(), Grouping::Session);
    assert_eq!(ids(&by_session), [vec!["REQ2"], vec!["REQ1", "REQ3"]]);
    assert_eq!(by_session[0].title, "Night shift");
    let by_kind = inbox::arrange(&rows, &Filter::default(), Grouping::Kind);
    assert_eq!(ids(&by_kind), [vec!["REQ2", "REQ3"], vec!["REQ1"]]);
    assert_eq!(Grouping::from_token("agent"), Grouping::Agent);
    assert_eq!(Grouping::from_token("nonsense"), Grouping::None);

    // A chosen value whose last request went stays offered, with 0 and
    // the words it had (a session's title, not its source and name).
    let only_demo: Vec<Row> = rows.iter().filter(|r| r.request() != "REQ2").cloned().collect();
    let chosen = Filter { session: Some(f.sessions[1].value.clone()), agent: Some("ops".into()), kind: None };
    let kept = inbox::facets(&only_demo, &chosen);
    assert_eq!(pairs(&kept.sessions), [("Fix the tests".to_owned(), 2), ("s2".to_owned(), 0)]);
    assert_eq!(pairs(&kept.agents), [("demo".to_owned(), 2), ("ops".to_owned(), 0)]);
}

#[test]
fn the_inbox_list_keeps_a_row_where_a_seen_or_answered_card_settled() {
    use super::inbox::{Row, Tracker};
    use super::slots::ROW_MS;
    let ask = |r: &mut Relay, id: &str, seq: u64| {
        r.event(json!({ "id": id, "type": "attention.requested", "seq": seq, "run": "r1",
                        "data": { "kind": "permission", "prompt": id,
                                  "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
    };
    let resolve = |r: &mut Relay, id: &str, seq: u64| {
        r.event(json!({ "id": format!("R{seq}"), "type": "attention.resolved", "seq": seq, "subject": id,
                        "time": format!("2026-07-03T10:16:{seq:02}Z"), "data": { "resolution": "withdrawn" } }));
    };
    let lines = |rows: &[Row]| {
        rows.iter()
            .map(|r| match r {
                Row::Waiting(w) => format!("w {}", w.key.request),
                Row::Settled(c) => format!("s {}", c.id),
            })
            .collect::<Vec<_>>()
    };
    let mut r = with_session();
    ask(&mut r, "REQ2", 3);
    let mut t = Tracker::default();
    let first = t.refresh(&r.hub, r.now);
    assert_eq!(lines(&first.rows), ["w REQ1", "w REQ2"]);
    assert_eq!(first.fresh.len(), 2, "both are new to the list");
    assert!(t.pending(&first.order[0]));

    // Opened and closed within one catch-up: nobody saw it, no row.
    ask(&mut r, "FLASH", 4);
    resolve(&mut r, "FLASH", 5);
    // Seen for 3 s, then withdrawn: a row where it was.
    r.now = r.now + 3_000;
    resolve(&mut r, "REQ1", 6);
    let next = t.refresh(&r.hub, r.now);
    assert_eq!(lines(&next.rows), ["s REQ1", "w REQ2"]);
    assert_eq!(next.gone.len(), 1);
    assert!(next.fresh.is_empty());
    assert!(t.card_for_request("REQ2").is_some() && t.card_for_request("REQ1").is_none());

    // Answered here at once still leaves a row: the person acted on it.
    let cmd = r.respond("REQ2", Answer::option("deny"));
    r.event(json!({ "id": "Z1", "type": "attention.resolved", "seq": 7, "subject": "REQ2", "cause": cmd,
                    "time": "2026-07-03T10:16:07Z", "data": { "resolution": "answered" } }));
    let after = t.refresh(&r.hub, r.now);
    assert_eq!(lines(&after.rows), ["s REQ1", "s REQ2"]);
    assert!(!t.rows_expire(r.now));
    r.now = r.now + ROW_MS;
    assert!(t.rows_expire(r.now));
    assert!(lines(&t.refresh(&r.hub, r.now).rows).is_empty(), "rows leave after a while");

    let history = super::inbox::history(&r.hub);
    let ids: Vec<&str> = history.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["REQ2", "REQ1", "FLASH"], "settled cards, the latest first");
}

#[test]
fn arrivals_and_settled_answers_are_said_in_words_named_up_to_three_then_counted() {
    use super::announce::News;
    use super::inbox::Tracker;
    let mut r = with_session();
    let mut t = Tracker::default();
    let say = |t: &mut Tracker, r: &Relay| {
        let list = t.refresh(&r.hub, r.now);
        News::gather(&r.hub, &list.fresh, &list.settled).words(&["aep-console".to_owned()])
    };
    assert_eq!(
        say(&mut t, &r).as_deref(),
        Some("New permission request from demo: Run <img src=x onerror=alert(1)>?"),
        "the agent's words as they are, to be read out as text"
    );
    assert_eq!(say(&mut t, &r), None, "nothing changed, nothing said");

    ask(&mut r, "CRIT", 3, "critical", json!({}));
    r.event(json!({ "id": "OOB", "type": "attention.requested", "seq": 4, "run": "r1",
                    "data": { "kind": "review", "prompt": "Approve on GitHub", "respond_via": ["oob"] } }));
    assert_eq!(
        say(&mut t, &r).as_deref(),
        Some("New critical permission request from demo: CRIT?"),
        "severe ones say so; one answered elsewhere is not news here"
    );

    r.now = r.now + 3_000;
    let cmd = r.respond("REQ1", Answer::option("deny"));
    r.event(json!({ "id": "A1", "type": "attention.answered", "seq": 5, "subject": "REQ1", "cause": cmd,
                    "data": { "answer": { "option": "deny" }, "by": "aep-console", "via": "control" } }));
    r.event(json!({ "id": "A2", "type": "attention.resolved", "seq": 6, "subject": "REQ1", "cause": cmd,
                    "data": { "resolution": "answered" } }));
    ask(&mut r, "NEXT", 7, "info", json!({ "prompt": "Go on" }));
    assert_eq!(
        say(&mut t, &r).as_deref(),
        Some(
            "New permission request from demo: Go on. Settled: permission request from demo. \
              Denied by you (aep-console) \u{2014} it will not happen."
        ),
    );

    for (i, id) in ["M1", "M2", "M3", "M4"].into_iter().enumerate() {
        ask(&mut r, id, 8 + i as u64, "info", json!({}));
    }
    assert_eq!(say(&mut t, &r).as_deref(), Some("4 new requests are waiting."));
}

#[test]
fn a_relay_error_becomes_one_notice_naming_the_relay() {
    let mut r = with_session();
    r.send(Frame::Error(ErrorFrame {
        code: "rate-limited".into(),
        detail: Some("slow down".into()),
        id: None,
        cause: None,
        versions: None,
    }));
    let said = r.touched.notices.last().expect("a notice");
    assert_eq!(said.kind, notice::NoticeKind::Error);
    assert_eq!(said.relay, "relay-a");
    assert_eq!(said.text, "Relay relay-a reported an error (rate-limited): slow down");
}

#[test]
fn a_request_that_names_no_kind_is_offered_as_having_none() {
    use super::inbox::{self, Row};
    let mut r = with_session();
    r.event(json!({ "id": "NK", "type": "attention.requested", "seq": 3, "data": { "prompt": "Anything?" } }));
    let rows: Vec<Row> = r.hub.store().inbox().iter().map(|c| Row::Waiting(inbox::waiting(&r.hub, c))).collect();
    let kinds: Vec<(String, usize)> =
        inbox::facets(&rows, &inbox::Filter::default()).kinds.into_iter().map(|f| (f.label, f.count)).collect();
    assert_eq!(kinds, [("(no kind)".to_owned(), 1), ("permission".to_owned(), 1)]);
}

/// A permission request `id` at `severity`, with extra `data`.
fn ask(r: &mut Relay, id: &str, seq: u64, severity: &str, extra: Value) {
    let mut data = json!({ "kind": "permission", "prompt": format!("{id}?"),
        "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] });
    if let (Value::Object(d), Value::Object(x)) = (&mut data, extra) {
        d.extend(x);
    }
    r.event(json!({ "id": id, "type": "attention.requested", "seq": seq, "run": "r1", "severity": severity,
        "capture": "redacted", "data": data }));
}

#[test]
fn approving_a_severe_or_destructive_request_takes_a_second_step_and_denying_does_not() {
    let mut r = with_session();
    ask(&mut r, "CRIT", 3, "critical", json!({}));
    ask(&mut r, "ERR", 4, "error", json!({}));
    ask(&mut r, "DESTR", 5, "warning", json!({ "destructive": true }));
    ask(&mut r, "INFO", 6, "info", json!({}));
    for (id, allow_confirms) in [("CRIT", true), ("ERR", true), ("DESTR", true), ("INFO", false), ("REQ1", false)] {
        let v = r.card(id);
        assert_eq!(v.needs_confirm(&v.options[0]), allow_confirms, "{id}: Allow");
        assert!(!v.needs_confirm(&v.options[1]), "{id}: Deny stays one tap");
    }
    let v = r.card("DESTR");
    assert!(v.destructive);
    assert_eq!(super::hold::confirm_words(v.severity, v.destructive, "Allow"), "Tap again to Allow (destructive)");
    let v = r.card("CRIT");
    assert_eq!(super::hold::confirm_words(v.severity, false, "Allow"), "Tap again to Allow (critical)");
}

#[test]
fn a_card_carries_the_adapter_s_reason_and_what_the_request_is_about() {
    use super::detail::Mark;
    let mut r = with_session();
    let context = json!({ "tool": "Edit", "description": "Retry twice more",
        "changes": [{ "path": "src/retry.rs", "old": "let n = 3;", "new": "let n = 5;" }] });
    r.event(json!({ "id": "EDIT", "type": "attention.requested", "seq": 3, "run": "r1", "severity": "warning",
        "capture": "full", "data": { "kind": "permission", "prompt": "Edit: src/retry.rs", "destructive": true,
        "destructive_because": "writes outside the project", "context": context,
        "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
    let v = r.card("EDIT");
    assert_eq!(v.destructive_because.as_deref(), Some("writes outside the project"));
    assert_eq!(v.detail.description.as_deref(), Some("Retry twice more"));
    let change = &v.detail.changes[0];
    assert_eq!(change.path, "src/retry.rs");
    assert_eq!(change.lines.iter().map(|l| l.mark).collect::<Vec<_>>(), [Mark::Removed, Mark::Added]);
    // Any other agent: no context, no reason; the prompt is all there is.
    let plain = r.card("REQ1");
    assert!(plain.detail.is_empty() && plain.destructive_because.is_none() && plain.detail_error.is_none());
    // Details in another shape are said to be unreadable, not dropped unsaid.
    r.event(json!({ "id": "ODD", "type": "attention.requested", "seq": 4, "run": "r1", "capture": "full",
        "data": { "kind": "permission", "prompt": "ODD?", "context": { "changes": "everything" } } }));
    let odd = r.card("ODD");
    assert!(odd.detail.is_empty() && odd.detail_error.is_some(), "{:?}", odd.detail_error);
}

#[test]
fn a_held_answer_says_what_it_sends_and_when() {
    use super::hold::{self, Held};
    let r = with_session();
    let v = r.card("REQ1");
    let what = hold::what(&Answer::option("deny"), &v.options);
    assert_eq!(what, "\u{201c}Deny\u{201d}");
    assert_eq!(hold::what(&Answer::text("not now"), &v.options), "\u{201c}not now\u{201d}");
    let h = Held { seq: 1, request: "REQ1".into(), what, until: UnixMs(T0.0 + hold::UNDO_MS) };
    assert_eq!(h.words(T0), "Sending \u{201c}Deny\u{201d} in 5 s");
    assert_eq!(h.words(UnixMs(T0.0 + 4_200)), "Sending \u{201c}Deny\u{201d} in 1 s");
    assert_eq!(h.words(UnixMs(T0.0 + 5_000)), "Sending \u{201c}Deny\u{201d} in 1 s", "never 0 s while it waits");
}

#[test]
fn requests_arriving_above_what_is_shown_wait_behind_n_new_and_those_below_are_shown() {
    use super::inbox::{Arrivals, Row, Tracker, LOAD_QUIET_MS};
    let mut r = with_session();
    let mut list = Tracker::default();
    let mut arrivals = Arrivals::default();
    let ids = |rows: &[Row]| rows.iter().map(|r| r.request().to_owned()).collect::<Vec<_>>();
    let placed = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, 0);
    assert_eq!((ids(&placed.rows), placed.held), (vec!["REQ1".to_owned()], 0), "a first request is shown");
    // Caught up: the list has been still for a while.
    let later = LOAD_QUIET_MS + 1;
    assert_eq!(arrivals.place(&list.refresh(&r.hub, r.now).rows, true, later).held, 0);
    ask(&mut r, "CRIT", 3, "critical", json!({}));
    ask(&mut r, "LOW", 4, "info", json!({}));
    let rows = list.refresh(&r.hub, r.now).rows;
    assert_eq!(ids(&rows), ["CRIT", "REQ1", "LOW"], "the inbox order");
    let placed = arrivals.place(&rows, true, later + 10);
    assert_eq!(
        ids(&placed.rows),
        ["REQ1", "LOW"],
        "nothing shown moves: the critical one waits, the low one goes below"
    );
    assert_eq!(placed.held, 1);
    // Still held on the next refresh, until brought in.
    assert_eq!(arrivals.place(&rows, true, later + 20).held, 1);
    arrivals.show_all(&rows);
    let placed = arrivals.place(&rows, true, later + 30);
    assert_eq!((ids(&placed.rows), placed.held), (vec!["CRIT".to_owned(), "REQ1".into(), "LOW".into()], 0));
}

#[test]
fn a_first_catch_up_is_the_list_most_urgent_first_not_arrivals_above_the_reader() {
    use super::inbox::{Arrivals, Row, Tracker, LOAD_MAX_MS, LOAD_QUIET_MS};
    let ids = |rows: &[Row]| rows.iter().map(|r| r.request().to_owned()).collect::<Vec<_>>();
    let mut r = with_session();
    let mut list = Tracker::default();
    let mut arrivals = Arrivals::default();
    // Before any relay is live nothing has been caught up: the clock does
    // not run out while the console connects.
    assert_eq!(arrivals.place(&[], false, 0).held, 0);
    // Live at 10 s; the catch-up comes in bursts, a flush apart, the low
    // one first.
    let placed = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, 10_000);
    assert_eq!(ids(&placed.rows), ["REQ1"]);
    ask(&mut r, "CRIT", 3, "critical", json!({}));
    let placed = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, 10_000 + LOAD_QUIET_MS - 1);
    assert_eq!(
        (ids(&placed.rows), placed.held),
        (vec!["CRIT".to_owned(), "REQ1".into()], 0),
        "in place, most urgent first"
    );
    ask(&mut r, "ERR", 4, "error", json!({}));
    let at = 10_000 + 2 * LOAD_QUIET_MS - 2;
    let placed = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, at);
    assert_eq!((ids(&placed.rows), placed.held), (vec!["CRIT".to_owned(), "ERR".into(), "REQ1".into()], 0));
    // Once the list has been still, a request arriving above the reader waits.
    ask(&mut r, "CRIT2", 5, "critical", json!({}));
    let placed = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, at + LOAD_QUIET_MS);
    assert_eq!((ids(&placed.rows), placed.held), (vec!["CRIT".to_owned(), "ERR".into(), "REQ1".into()], 1));

    // A catch-up that never pauses still ends.
    let mut r = with_session();
    let mut list = Tracker::default();
    let mut arrivals = Arrivals::default();
    arrivals.place(&list.refresh(&r.hub, r.now).rows, true, 0);
    let mut t = 0;
    for seq in 3..40 {
        t += LOAD_QUIET_MS / 2;
        ask(&mut r, &format!("Q{seq}"), seq, "critical", json!({}));
        let held = arrivals.place(&list.refresh(&r.hub, r.now).rows, true, t).held;
        assert_eq!(held > 0, t >= LOAD_MAX_MS, "at {t} ms");
    }
}

#[test]
fn a_request_whose_agent_no_relay_lists_is_marked_unreachable_and_not_counted() {
    use super::inbox::{Row, Tracker};
    let mut r = with_session();
    let mut list = Tracker::default();
    assert_eq!(list.refresh(&r.hub, r.now).order.len(), 1, "its agent is listed: it waits for you");
    // A fresh roster leaves the session out: its agent is not connected.
    r.hub.request_roster(0).unwrap();
    r.drain();
    r.roster_of(vec![]);
    let refresh = list.refresh(&r.hub, r.now);
    assert!(refresh.order.is_empty(), "not counted as waiting");
    assert!(matches!(&refresh.rows[..], [Row::Waiting(w)] if w.unreachable && w.answerable));
    assert_eq!(r.card("REQ1").answering, Answering::Unreachable, "no answer offered");
    // Its agent is back: the roster lists it again.
    r.hub.request_roster(0).unwrap();
    r.drain();
    r.roster(&["control.attention.respond"]);
    assert_eq!(list.refresh(&r.hub, r.now).order.len(), 1);
    assert_eq!(r.card("REQ1").answering, Answering::Options);
}

#[test]
fn a_request_answered_here_stays_a_card_when_its_agent_is_found_gone() {
    use super::inbox::{Row, Tracker};
    let mut r = with_session();
    let mut list = Tracker::default();
    r.respond("REQ1", Answer::option("allow"));
    // The answer found nobody (no-route) and a fresh roster leaves it out.
    r.hub.request_roster(0).unwrap();
    r.drain();
    r.roster_of(vec![]);
    let refresh = list.refresh(&r.hub, r.now);
    assert!(refresh.order.is_empty(), "not counted as waiting");
    assert!(
        matches!(&refresh.rows[..], [Row::Waiting(w)] if !w.unreachable),
        "the card stays where it was tapped, with what came of the answer"
    );
    assert_eq!(r.card("REQ1").answering, Answering::Unreachable, "and says its agent is not connected");
}

#[test]
fn information_only_requests_are_not_counted_and_come_after_what_can_be_answered() {
    use super::inbox::{Row, Tracker};
    let mut r = with_session();
    ask(&mut r, "OOB", 3, "critical", json!({ "respond_via": ["oob"] }));
    let list = Tracker::default().refresh(&r.hub, r.now);
    let order: Vec<&str> = list.order.iter().map(|c| &*c.request).collect();
    assert_eq!(order, ["REQ1"], "only what this console can answer is counted");
    let rows: Vec<(String, bool)> = list
        .rows
        .iter()
        .map(|row| match row {
            Row::Waiting(w) => (w.key.request.to_string(), w.answerable),
            Row::Settled(c) => (c.id.clone(), true),
        })
        .collect();
    assert_eq!(
        rows,
        [("REQ1".to_owned(), true), ("OOB".to_owned(), false)],
        "the critical one answered elsewhere comes last"
    );
}

#[test]
fn settled_cards_say_whether_the_thing_will_happen_and_colour_only_what_went_as_asked() {
    let mut r = with_session();
    ask(&mut r, "GONE", 3, "warning", json!({}));
    ask(&mut r, "REF", 4, "critical", json!({}));
    ask(&mut r, "LATE", 5, "warning", json!({}));
    // Withdrawn: its run was cancelled, the agent dismissed it.
    r.event(json!({ "id": "W1", "type": "attention.resolved", "seq": 6, "subject": "GONE", "data": { "resolution": "dismissed" } }));
    // Refused: the agent rejects this console's approval, then dismisses.
    let cmd = r.respond("REF", Answer::option("allow"));
    r.event(json!({ "id": "W2", "type": "control.rejected", "seq": 7, "cause": cmd, "data": { "reason": "policy", "detail": "two approvers" } }));
    r.event(json!({ "id": "W3", "type": "attention.resolved", "seq": 8, "subject": "REF", "data": { "resolution": "dismissed" } }));
    r.event(json!({ "id": "W4", "type": "attention.timeout", "seq": 9, "subject": "LATE", "data": {} }));
    let gone = r.card("GONE");
    assert_eq!(gone.verdict(), ("Withdrawn by the agent \u{2014} it will not happen".to_owned(), Tone::Trouble));
    assert_eq!(gone.outcome_words(&[]), "Withdrawn by the agent \u{2014} it will not happen");
    let refused = r.card("REF");
    assert!(refused.in_flight(), "a card whose answer the agent refused takes no other answer");
    assert_eq!(refused.verdict(), ("Refused by the agent \u{2014} it will not happen".to_owned(), Tone::Trouble));
    let late = r.card("LATE");
    assert_eq!(late.verdict().1, Tone::Trouble, "a timeout is not coloured as success");
    assert!(late.verdict().0.starts_with("Timed out \u{2014} the agent went on without an answer"));
}

#[test]
fn a_settled_card_names_the_decision_who_made_it_and_what_came_of_it() {
    let mut r = with_session();
    let me = ["ops-alice".to_owned()];
    let answered = |r: &mut Relay, id: &str, seq: u64, answer: Value| {
        r.event(json!({ "id": format!("{id}-A"), "type": "attention.answered", "seq": seq, "subject": id,
            "data": { "answer": answer, "by": "ops-alice", "via": "control" } }));
        r.event(json!({ "id": format!("{id}-R"), "type": "attention.resolved", "seq": seq + 1, "subject": id,
            "data": { "resolution": "answered" } }));
    };
    // Denied: not in the colour of success.
    answered(&mut r, "REQ1", 3, json!({ "option": "deny" }));
    let v = r.card("REQ1");
    assert_eq!(v.outcome_words(&me), "Denied by you (ops-alice) \u{2014} it will not happen");
    assert_eq!(v.verdict().1, Tone::Denied);
    // A review's "Request changes" is not a denial.
    r.event(json!({ "id": "REV", "type": "attention.requested", "seq": 5, "run": "r1", "severity": "notice",
        "data": { "kind": "review", "prompt": "Review the plan",
                  "options": [{"id": "approve", "label": "Approve"}, {"id": "request_changes", "label": "Request changes"}] } }));
    answered(&mut r, "REV", 6, json!({ "option": "request_changes" }));
    let v = r.card("REV");
    assert_eq!(
        v.outcome_words(&me),
        "\u{201c}Request changes\u{201d} by you (ops-alice) \u{2014} the agent goes on with this answer"
    );
    assert_eq!(v.verdict().1, Tone::Answered);
    // Allowed, then the tool it asked about ran: how it ended is said.
    for (id, seq, call, end, data, words, tone) in [
        (
            "RUN1",
            8,
            "call-1",
            "tool.completed",
            json!({}),
            "Allowed by you (ops-alice) \u{2014} Bash ran and completed",
            Tone::Allowed,
        ),
        (
            "RUN2",
            12,
            "call-2",
            "tool.failed",
            json!({ "error": { "message": "exit status 1" } }),
            "Allowed by you (ops-alice) \u{2014} Bash ran and failed: exit status 1",
            Tone::Trouble,
        ),
    ] {
        r.event(json!({ "id": id, "type": "attention.requested", "seq": seq, "run": "r1", "subject": call,
            "data": { "kind": "permission", "prompt": "rm -rf build/?",
                      "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
        answered(&mut r, id, seq + 1, json!({ "option": "allow" }));
        assert_eq!(
            r.card(id).outcome_words(&me),
            "Allowed by you (ops-alice) \u{2014} it goes ahead",
            "before the tool ends"
        );
        let mut d = json!({ "tool": { "name": "Bash", "call_id": call } });
        if let (Value::Object(m), Value::Object(x)) = (&mut d, data) {
            m.extend(x);
        }
        r.event(json!({ "id": format!("{id}-T"), "type": end, "seq": seq + 3, "run": "r1", "data": d }));
        assert_eq!((r.card(id).outcome_words(&me).as_str(), r.card(id).verdict().1), (words, tone));
    }
    // A typed refusal keeps its words; an answer given elsewhere says so.
    r.event(json!({ "id": "WHY", "type": "attention.requested", "seq": 20, "run": "r1",
        "data": { "kind": "permission", "prompt": "Push?", "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
    answered(&mut r, "WHY", 21, json!({ "option": "deny", "text": "not now" }));
    assert_eq!(
        r.card("WHY").outcome_words(&me),
        "Denied by you (ops-alice): \u{201c}not now\u{201d} \u{2014} it will not happen"
    );
    r.event(json!({ "id": "OOB", "type": "attention.requested", "seq": 23, "run": "r1",
        "data": { "kind": "review", "prompt": "Merge?", "respond_via": ["oob"], "options": [{"id": "approve", "label": "Approve"}] } }));
    r.event(json!({ "id": "OOB-A", "type": "attention.answered", "seq": 24, "subject": "OOB",
        "data": { "answer": { "option": "approve" }, "by": "octocat", "via": "oob" } }));
    assert_eq!(
        r.card("OOB").outcome_words(&me),
        "Allowed by octocat in the agent's own interface \u{2014} it goes ahead"
    );
}

#[test]
fn repeated_progress_is_folded_into_one_row() {
    let mut r = with_session();
    for n in 0..5 {
        r.event(json!({ "id": format!("P{n}"), "type": "progress.status", "seq": 3 + n, "run": "r1",
                        "data": { "status": "working", "percent": 100 } }));
    }
    r.event(json!({ "id": "P9", "type": "progress.status", "seq": 8, "run": "r1", "data": { "status": "done" } }));
    let s = r.hub.store().sessions().next().unwrap();
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let rows = timeline::rows(&items, timeline::Filter::All);
    let progress: Vec<String> = rows
        .iter()
        .filter_map(|row| match row {
            timeline::Row::Event(i) if i.ty == "progress.status" => Some(i.summary.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 2, "{progress:?}");
    assert!(progress[1].ends_with("(and 4 more the same)"), "{progress:?}");
    // Words that only begin alike are not the same: 1% then 10%.
    for (n, p) in [(10u64, 1), (11, 10)] {
        r.event(json!({ "id": format!("Q{n}"), "type": "progress.status", "seq": n, "data": { "phase": "copying", "percent": p } }));
    }
    let s = r.hub.store().sessions().next().unwrap();
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let newest: Vec<String> =
        timeline::rows(&items, timeline::Filter::All).iter().take(2).map(|row| row.id().to_owned()).collect();
    assert_eq!(newest, ["Q11", "Q10"], "two rows");
}

#[test]
fn each_decision_names_its_person_and_its_request_by_one_rule() {
    let mut r = Relay::connected_as(Some("ops-alice"));
    r.event(json!({ "id": "E0", "type": "session.started", "seq": 0, "data": { "label": "Two operators" } }));
    for (n, prompt) in [(1, "Drop the cache?"), (2, "Rotate the keys?")] {
        r.event(json!({ "id": format!("REQ{n}"), "type": "attention.requested", "seq": n, "run": "r1",
                        "data": { "kind": "permission", "prompt": prompt,
                                  "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}] } }));
    }
    // Who the relay says this console is connected as: its chip, and the
    // names marked as the person's own, also once the relay is gone.
    let mut relays = super::status::relays(&r.hub);
    assert_eq!(relays[0].principal.as_deref(), Some("ops-alice"));
    let mut known = Vec::new();
    super::status::remember(&mut relays, &mut known);
    let me = super::status::me(&relays);
    assert_eq!(me, ["ops-alice"]);
    let mut gone = vec![super::status::RelayView {
        principal: None,
        link: super::status::Link::Reconnecting,
        ..relays[0].clone()
    }];
    super::status::remember(&mut gone, &mut known);
    assert_eq!(super::status::me(&gone), ["ops-alice"], "kept while away");
    assert_eq!(
        super::status::me(&super::status::relays(&Relay::new().hub)),
        ["aep-console"],
        "no principal named: the console's own name"
    );
    // Two answers as the relay replays them after a reload: each by its
    // operator's principal, each followed by the agent's `by`.
    for (n, who, option) in [(1, "ops-alice", "allow"), (2, "ops-bob", "deny")] {
        r.event(json!({ "id": format!("CMD{n}"), "type": "control.attention.respond", "subject": format!("REQ{n}"),
                        "source": format!("aep://console.test/agent/{who}"), "agent": who,
                        "data": { "answer": { "option": option } } }));
        r.event(json!({ "id": format!("ANS{n}"), "type": "attention.answered", "seq": 2 + n, "subject": format!("REQ{n}"),
                        "cause": format!("CMD{n}"), "data": { "answer": { "option": option }, "by": who, "via": "control" } }));
    }
    let s = r.hub.store().sessions().next().unwrap();
    let audit: Vec<String> = session::commands(&r.hub, s)
        .iter()
        .map(|c| format!("{}: {} \u{2014} {} to {}", c.who(&me), c.verb, c.what, c.request.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        audit,
        [
            "You (ops-alice): Answer \u{2014} Allow to \u{201c}Drop the cache?\u{201d} from demo",
            "ops-bob: Answer \u{2014} Deny to \u{201c}Rotate the keys?\u{201d} from demo",
        ]
    );
    // The timeline says the same, in the same words.
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let said: Vec<String> = items
        .iter()
        .filter_map(|i| Some(format!("{} {}", super::words::person_first(i.by.as_deref()?, &me), i.summary)))
        .collect();
    assert_eq!(
        said,
        [
            "You (ops-alice) answered Allow to \u{201c}Drop the cache?\u{201d} from demo",
            "You (ops-alice) answered Allow to \u{201c}Drop the cache?\u{201d} from demo via control",
            "ops-bob answered Deny to \u{201c}Rotate the keys?\u{201d} from demo",
            "ops-bob answered Deny to \u{201c}Rotate the keys?\u{201d} from demo via control",
        ]
    );
    // The history: what was answered, and by whom.
    assert!(r.card("REQ2").outcome_words(&me).contains("Denied by ops-bob"), "{}", r.card("REQ2").outcome_words(&me));
    assert!(r.card("REQ1").outcome_words(&me).contains("Allowed by you (ops-alice)"));
    // A console connected as someone else marks neither as its own.
    let other = ["ops-carol".to_owned()];
    assert!(session::commands(&r.hub, s).iter().all(|c| !c.who(&other).contains("you")));
}

#[test]
fn a_paused_session_reads_paused_and_its_pause_reads_as_a_pause() {
    let mut r = with_session();
    // A pause from an earlier page, honoured the way AEP-0004 agents say it.
    r.event(json!({ "id": "CMD1", "type": "control.pause", "source": "aep://console.test/agent/aep-console",
                    "agent": "aep-console", "data": {} }));
    r.event(json!({ "id": "K1", "type": "control.accepted", "seq": 3, "cause": "CMD1", "data": {} }));
    r.event(json!({ "id": "P1", "type": "progress.status", "seq": 4, "cause": "CMD1",
                    "data": { "phase": "paused", "message": "Paused by an operator" } }));
    let lane = session::lanes(&r.hub).remove(0);
    assert_eq!(lane.state, session::LaneState::Paused);
    assert_eq!(lane.doing(), "Paused in r1", "not \"Running r1\" beside PAUSED");
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).remove(0);
    assert_eq!(c.headline, "Done \u{2014} the agent paused");
    // The timeline names the person as the audit does.
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let pause = items.iter().find(|i| i.id == "CMD1").unwrap();
    let me = ["aep-console".to_owned()];
    assert_eq!(
        format!("{} {}", super::words::person_first(pause.by.as_deref().unwrap(), &me), pause.summary),
        "You (aep-console) asked to pause"
    );
    assert_eq!(c.who(&me), "You (aep-console)");
    // This page's own resume, followed by its sender.
    let id = r.hub.resume(&aep_engine::client::hub::Recipient::session("s1"), r.now).unwrap();
    r.drain();
    r.event(json!({ "id": "K2", "type": "control.accepted", "seq": 6, "cause": id, "data": {} }));
    r.event(json!({ "id": "P2", "type": "progress.status", "seq": 7, "cause": id, "data": { "phase": "resumed" } }));
    let s = r.hub.store().sessions().next().unwrap();
    let mine = session::commands(&r.hub, s).into_iter().find(|c| c.id == id).unwrap();
    assert_eq!(mine.headline, "Done \u{2014} the agent resumed");
}

#[test]
fn a_long_session_pages_in_earlier_events_and_lists_its_latest_runs() {
    let mut r = with_session();
    for n in 0..8u64 {
        r.event(json!({ "id": format!("R{n}"), "type": "run.started", "seq": 3 + n, "run": format!("run-{n}"), "data": {} }));
    }
    let lane = session::lanes(&r.hub).remove(0);
    assert_eq!(lane.runs.len(), 9);
    let (shown, more) = lane.runs_shown(false);
    assert_eq!(more, 6);
    assert_eq!(
        shown.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["run-5", "run-6", "run-7"],
        "the latest runs"
    );
    assert_eq!(lane.runs_shown(true), (lane.runs.as_slice(), 0));
    let s = r.hub.store().sessions().next().unwrap();
    let (items, earlier, dropped) = timeline::items(s, 4);
    assert_eq!((items.len(), earlier, dropped), (4, 7, 0));
    assert_eq!(items.last().unwrap().id, "R7", "the newest");
    let (items, earlier, _) = timeline::items(s, 8);
    assert_eq!((items.len(), earlier), (8, 3), "another page in");
}

#[test]
fn a_form_says_it_is_answered_only_by_filling_it_in() {
    let mut r = with_session();
    let fields = json!([{"id": "env", "type": "string", "label": "Environment", "required": true}]);
    r.event(json!({ "id": "FORM1", "type": "attention.requested", "seq": 3, "run": "r1", "capture": "redacted",
                    "data": { "kind": "form", "prompt": "Where to?", "fields": fields.clone(),
                              "options": [{"id": "decline", "label": "Decline"}] } }));
    let form = r.card("FORM1");
    assert_eq!(form.answering, Answering::Form, "answered by its form, options or not");
    let only = form.form_only(r.now, &super::clock::Utc).expect("said plainly");
    assert!(only.contains("only be answered by filling it in") && only.contains("leave it waiting"), "{only}");
    // The engine refuses anything else, which is why none is offered.
    assert!(r.hub.respond("FORM1", Answer::option("decline"), r.now).is_err());
    assert!(r.hub.respond("FORM1", Answer::text("no"), r.now).is_err());
    assert_eq!(r.card("REQ1").form_only(r.now, &super::clock::Utc), None);
}

#[test]
fn a_session_says_whose_connection_is_missing_when_it_takes_no_commands() {
    let r = with_session();
    let lane = session::lanes(&r.hub).remove(0);
    assert_eq!(lane.no_commands(true, true), None, "listed, one claim: its controls");
    let (token, words) = lane.no_commands(false, true).unwrap();
    assert_eq!(token, session::NoCommands::Offline);
    assert!(words.starts_with("This device is not connected"), "not its agent's fault: {words}");
    assert!(lane.no_commands(false, false).unwrap().1.starts_with("This device is offline"));
    let gone = session::Lane { verbs: session::Verbs::default(), ..lane.clone() };
    assert!(gone.no_commands(true, true).unwrap().1.starts_with("Its agent is not connected"));
    let ended = session::Lane { state: session::LaneState::Ended, ..lane };
    assert_eq!(ended.no_commands(false, false).unwrap().0, session::NoCommands::Ended);
}

/// The demo agents' side of a session, built with the engine calls they
/// make (`adapters/demo/src/agent.rs`): the target acks a command and reports
/// a pause or resume as `progress.status` with its phase; a tool call is
/// `tool.requested` then `tool.completed`, tied by `tool.call_id`.
struct DemoSide {
    target: aep_engine::control::target::ControlTarget,
    seqs: aep_engine::control::target::SeqCounter,
}

impl DemoSide {
    fn new() -> DemoSide {
        let identity = Identity::new("aep://h/agent/demo", "demo");
        let accepts =
            [types::CONTROL_ATTENTION_RESPOND, types::CONTROL_CANCEL, types::CONTROL_PAUSE, types::CONTROL_RESUME];
        let target = aep_engine::control::target::ControlTarget::new(identity, accepts, Seeded::new(2)).unwrap();
        let mut seqs = aep_engine::control::target::SeqCounter::new();
        seqs.set_next("s1", 3);
        DemoSide { target, seqs }
    }

    /// Takes the console's command, acks it and reports `phase`, as a demo
    /// agent does on `Action::Pause` / `Action::Resume`.
    fn honour(&mut self, r: &mut Relay, command: &str, phase: &str, message: &str) {
        let command = r
            .sent
            .iter()
            .find_map(|f| match f {
                Frame::Event(e) if e.id() == command => Some(e.clone()),
                _ => None,
            })
            .unwrap();
        let now = r.now;
        let received = self.target.handle_command(&command, now, &mut self.seqs).unwrap();
        let aep_engine::control::target::Received::Fresh { ack, .. } = received else { panic!("{received:?}") };
        r.send(Frame::Event(ack));
        let status = self.target.progress_status(&command, phase, Some(message), now, &mut self.seqs).unwrap();
        r.send(Frame::Event(status));
    }

    /// One of the agent's own session events, as `Agent::emit` builds it.
    fn emit(&mut self, r: &mut Relay, draft: aep_engine::protocol::ids::Draft) -> Event {
        let seq = self.seqs.take("s1", None).unwrap();
        let id = self.target.event_id(r.now);
        let event = draft.session("s1").seq(seq).build(self.target.identity(), id, r.now).unwrap();
        r.send(Frame::Event(event.clone()));
        event
    }
}

#[test]
fn pause_resume_and_a_tool_call_read_right_as_the_demo_agents_emit_them() {
    use aep_engine::control::target::outcome::{PHASE_PAUSED, PHASE_RESUMED};
    use aep_engine::protocol::ids::Draft;
    use aep_engine::Capture;

    let mut r = with_session();
    let mut demo = DemoSide::new();
    let session = aep_engine::client::hub::Recipient::session("s1");
    let pause = r.hub.pause(&session, r.now).unwrap();
    r.drain();
    demo.honour(&mut r, &pause, PHASE_PAUSED, "Paused by an operator");
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).into_iter().find(|c| c.id == pause).unwrap();
    assert_eq!(c.phase, Phase::Done(types::PROGRESS_STATUS.into()));
    assert_eq!(c.headline, "Done \u{2014} the agent paused");
    assert_eq!(session::lanes(&r.hub).remove(0).state, session::LaneState::Paused);

    let resume = r.hub.resume(&session, r.now).unwrap();
    r.drain();
    demo.honour(&mut r, &resume, PHASE_RESUMED, "Resuming where I left off");
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).into_iter().find(|c| c.id == resume).unwrap();
    assert_eq!(c.headline, "Done \u{2014} the agent resumed");
    assert_ne!(session::lanes(&r.hub).remove(0).state, session::LaneState::Paused);

    // The demo agent's tool call, its shapes as `activity` and `tool_done` write them.
    let tool = json!({ "name": "Bash", "call_id": "call-7f3k2m9q" });
    let requested = Draft::new(types::TOOL_REQUESTED)
        .run("r1")
        .capture(Capture::Redacted)
        .data(json!({ "tool": tool, "args_redacted": { "input": "cargo test" } }));
    let requested = demo.emit(&mut r, requested);
    let completed =
        Draft::new(types::TOOL_COMPLETED).run("r1").data(json!({ "tool": tool, "duration_ms": 840, "status": "ok" }));
    let completed = demo.emit(&mut r, completed);
    let s = r.hub.store().sessions().next().unwrap();
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let rows = timeline::rows(&items, timeline::Filter::Only(timeline::Category::Tool));
    let [timeline::Row::ToolCall { call, result: Some(result) }] = rows.as_slice() else { panic!("{rows:#?}") };
    assert_eq!((call.id.as_str(), result.id.as_str()), (requested.id(), completed.id()), "one row, folded");
    assert_eq!((call.summary.as_str(), call.generic), ("Tool Bash cargo test", false));
    assert_eq!(result.summary, "Tool Bash done (ok)");

    // A type the registry does not have is given no meaning of its own: it
    // reads as itself, neither as a pause nor as the start of a tool call.
    let pause = r.hub.pause(&session, r.now).unwrap();
    r.drain();
    r.event(json!({ "id": "K9", "type": types::CONTROL_ACCEPTED, "seq": 20, "cause": pause, "data": {} }));
    r.event(json!({ "id": "S9", "type": "session.paused", "seq": 21, "cause": pause, "data": {} }));
    r.event(json!({ "id": "T1", "type": "tool.started", "seq": 22, "run": "r1", "data": { "tool": tool } }));
    r.event(json!({ "id": "T2", "type": types::TOOL_FAILED, "seq": 23, "run": "r1", "data": { "tool": tool } }));
    let s = r.hub.store().sessions().next().unwrap();
    let c = session::commands(&r.hub, s).into_iter().find(|c| c.id == pause).unwrap();
    assert_eq!(c.headline, "Done \u{2014} session.paused");
    let (items, ..) = timeline::items(s, timeline::MAX_ITEMS);
    let started = items.iter().find(|i| i.id == "T1").unwrap();
    assert!(started.generic, "{started:?}");
    let rows = timeline::rows(&items, timeline::Filter::All);
    assert!(rows.iter().any(|row| matches!(row, timeline::Row::Event(i) if i.id == "T2")), "not folded into T1");
}

#[test]
fn a_flush_redraws_only_the_sessions_on_screen_its_changes_touched() {
    use aep_engine::store::SessionKey;
    let mut r = with_session();
    r.event(json!({ "id": "F0", "type": "session.started", "seq": 0, "session": "s2", "data": {} }));
    let on_screen = [SessionKey::new("aep://h/agent/demo", "s1"), SessionKey::new("aep://h/agent/demo", "s2")];
    // What the next flush would redraw, from a fresh tally of what `step` caused.
    let redrawn = |r: &mut Relay, step: &dyn Fn(&mut Relay)| -> Vec<String> {
        r.touched = Touched::default();
        step(r);
        on_screen.iter().filter(|k| r.touched.redraws(k, false)).map(|k| k.name.to_string()).collect()
    };

    let s2_event = |r: &mut Relay| {
        r.event(json!({ "id": "F1", "type": "run.started", "seq": 1, "session": "s2", "run": "r9", "data": {} }))
    };
    assert_eq!(redrawn(&mut r, &s2_event), ["s2"], "an event of s2 leaves s1's view alone");
    let s1_request = |r: &mut Relay| ask(r, "Q2", 3, "info", json!({}));
    assert_eq!(redrawn(&mut r, &s1_request), ["s1"], "a request in s1 leaves s2's view alone");

    // This console's own command, from sent to acknowledged, then one that
    // times out with nothing in the stream to say so.
    let answer = |r: &mut Relay| {
        let cmd = r.respond("REQ1", Answer::option("allow"));
        r.event(json!({ "id": "A1", "type": "control.accepted", "seq": 4, "cause": cmd, "data": {} }));
    };
    assert_eq!(redrawn(&mut r, &answer), ["s1"]);
    let id = r.respond("Q2", Answer::option("deny"));
    let silence = |r: &mut Relay| {
        r.now = r.now + 2_001;
        r.hub.handle_timeout(r.now);
        r.drain();
    };
    assert_eq!(redrawn(&mut r, &silence), ["s1"], "the command timed out: {:?}", r.touched.commands);
    assert!(r.touched.commands.iter().any(|c| **c == *id));

    // A roster may change what every agent takes: every view is redrawn.
    let roster = |r: &mut Relay| {
        r.hub.request_roster(0).unwrap();
        r.drain();
        r.roster(&["control.attention.respond"]);
    };
    assert_eq!(redrawn(&mut r, &roster), ["s1", "s2"]);
    assert!(on_screen.iter().all(|k| Touched::default().redraws(k, true)), "a full redraw reads every session again");
}

/// An undo window of a few seconds, checked where it is compiled.
const _: () = assert!(super::hold::UNDO_MS >= 3_000 && super::hold::UNDO_MS <= 8_000, "a few seconds");

//! The view models over a real hub, driven natively: one scripted relay,
//! frames encoded by the engine's own frame module, a fake clock.

use aep_client::client::hub::{Hub, HubConfig, RelaySpec};
use aep_client::client::Config;
use aep_client::control::answer::Answer;
use aep_client::protocol::frame::{
    Capabilities, ControlCapability, ErrorFrame, Frame, Hello, HelloIdentity, ReplayCapability,
    Role, RosterEntry,
};
use aep_client::protocol::ids::Identity;
use aep_client::store::CardStatus;
use aep_client::{Event, UnixMs};
use serde_json::{json, Map, Value};

use super::card::{self, Answering};
use super::command::Phase;
use super::{session, timeline};

const T0: UnixMs = UnixMs(1_783_073_703_000);

struct Relay {
    hub: Hub,
    now: UnixMs,
    sent: Vec<Frame>,
    random: u128,
}

impl Relay {
    fn new() -> Relay {
        let config = HubConfig::new(Identity::new(
            "aep://console.test/agent/aep-console",
            "aep-console",
        ));
        let spec = RelaySpec {
            label: "relay-a".into(),
            config: Config::consumer(),
        };
        let mut r = Relay {
            hub: Hub::new(config, vec![spec]).unwrap(),
            now: T0,
            sent: Vec::new(),
            random: 1,
        };
        r.hub.connect(r.now);
        r.drain();
        r.hub.handle_open(0, r.now);
        r.send(Frame::Hello(Hello {
            versions: vec!["0.1".into()],
            role: Some(Role::Both),
            identity: Some(HelloIdentity {
                agent: Some("relay".into()),
                ..HelloIdentity::default()
            }),
            capabilities: Capabilities {
                replay: Some(ReplayCapability {
                    buffer: Some(512),
                    all: Some(true),
                    other: Map::new(),
                }),
                roster: Some(Map::new()),
                ..Capabilities::default()
            },
        }));
        let sub = r.sent.iter().find_map(|f| {
            if let Frame::Subscribe(s) = f {
                Some(s.id.clone())
            } else {
                None
            }
        });
        r.send(Frame::Subscribed { id: sub.unwrap() });
        r.roster(&[
            "control.attention.respond",
            "control.cancel",
            "control.pause",
            "x.demo.control.instruct",
        ]);
        r
    }

    fn drain(&mut self) {
        while let Some((_, text)) = self.hub.poll_transmit() {
            self.sent.push(Frame::decode(&text).unwrap());
        }
        while self.hub.poll_action().is_some() {}
        while self.hub.poll_change().is_some() {}
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
        let ask = self.sent.iter().rev().find_map(|f| {
            if let Frame::RosterRequest { id } = f {
                Some(id.clone())
            } else {
                None
            }
        });
        self.send(Frame::Roster {
            id: ask.unwrap(),
            entries,
        });
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
        self.random += 1;
        let id = self
            .hub
            .respond(request, answer, self.random, self.now)
            .unwrap();
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
fn a_permission_card_keeps_agent_text_and_its_provenance() {
    let r = with_session();
    let v = r.card("REQ1");
    assert_eq!(
        v.prompt.as_deref(),
        Some("Run <img src=x onerror=alert(1)>?"),
        "kept as data, untouched"
    );
    assert_eq!(v.answering, Answering::Options);
    assert_eq!(
        (
            v.agent.as_str(),
            v.relay.as_deref(),
            v.run.as_deref(),
            v.subject.as_deref()
        ),
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
    assert_eq!(
        v.commands[0].what, "Allow",
        "option ids read as their labels"
    );
    r.event(json!({ "id": "A1", "type": "control.accepted", "seq": 3, "cause": cmd, "data": {} }));
    assert_eq!(r.card("REQ1").commands[0].phase, Phase::Accepted);
    r.event(json!({ "id": "A2", "type": "attention.answered", "seq": 4, "subject": "REQ1", "cause": cmd,
                    "data": { "answer": { "option": "allow" }, "by": "aep-console", "via": "control" } }));
    r.event(
        json!({ "id": "A3", "type": "attention.resolved", "seq": 5, "subject": "REQ1", "cause": cmd,
                    "data": { "resolution": "answered", "latency_ms": 1200 } }),
    );
    let v = r.card("REQ1");
    assert_eq!(v.status, CardStatus::Resolved);
    assert_eq!(
        v.commands[0].phase,
        Phase::Done("attention.answered".into())
    );
    assert_eq!(
        v.outcome_words(),
        "Answered: Allow by aep-console via control \u{b7} Resolved (answered) after 1.2 s"
    );
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
    assert_eq!(
        c.phase,
        Phase::RelayRefused {
            code: "no-route".into(),
            detail: Some("nobody claims s1".into())
        }
    );
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
    let again = r
        .sent
        .iter()
        .filter(|f| matches!(f, Frame::Event(e) if e.id() == cmd))
        .count();
    assert_eq!(again, 2, "the retry sends the same command id");

    let cmd = r.respond("REQ1", Answer::option("allow"));
    r.event(
        json!({ "id": "N1", "type": "control.rejected", "seq": 3, "cause": cmd,
                    "data": { "reason": "refused", "detail": "two approvers needed" } }),
    );
    let v = r.card("REQ1");
    let c = v.commands.iter().find(|c| c.id == cmd).unwrap();
    assert_eq!(c.headline, "Refused by the agent");
    assert!(c.explanation.as_deref().unwrap().contains("not an error"));
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
    assert!(
        v.synthesized,
        "a metadata prompt is synthesized, not the agent's words"
    );
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
    let (items, hidden) = timeline::items(s);
    assert_eq!(hidden, 0);
    let ack = items.iter().find(|i| i.id == "A1").unwrap();
    assert!(
        ack.cause
            .as_ref()
            .unwrap()
            .1
            .as_deref()
            .unwrap()
            .contains("control.attention.respond"),
        "{ack:?}"
    );
    let vendor = items.iter().find(|i| i.id == "X1").unwrap();
    assert!(
        vendor.generic && vendor.summary.contains("hits: 12"),
        "{vendor:?}"
    );
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
    let words = v.outcome_words();
    assert!(
        words.starts_with("Your later answer \u{201c}Allow\u{201d} was refused: the agent applied \u{201c}Deny\u{201d}"),
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

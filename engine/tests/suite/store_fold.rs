//! Store scenarios: out-of-order delivery, missed hops, the inbox, the
//! bounds, and the command audit chain for commands from any sender.

use aep_engine::control::ack::{Decision, NackReason};
use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::store::{
    Arrival, CardStatus, Change, ChangeFeed, CommandStatus, Counts, Folded, OutcomeLink, Rule, SessionKey,
    SessionState, Store, StoreConfig,
};
use aep_engine::{Event, Severity, UnixMs};
use serde_json::json;

const T0: u64 = 1_783_000_000_000;

fn owner(n: u32) -> Identity {
    Identity::new(format!("aep://h/agent/a{n}/session/s"), format!("a{n}"))
}

fn console(name: &str) -> Identity {
    Identity::new(format!("aep://c/agent/{name}"), name)
}

/// An owner event of session `s` at `seq`.
fn at(ty: &str, seq: u64) -> Draft {
    Draft::new(ty).session("s").seq(seq)
}

/// Stamps `d` as emitted by `who`, `t` ms after T0.
fn build(d: Draft, who: &Identity, id: &str, t: u64) -> Event {
    d.build(who, id, UnixMs(T0 + t)).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn put(store: &mut Store, e: Event) -> Folded {
    store.apply(e, Some("relay-1"), UnixMs(T0 + 100_000))
}

fn rules(store: &mut Store) -> Vec<Rule> {
    std::iter::from_fn(|| store.poll_change())
        .filter_map(|c| match c {
            Change::Violation(v) => Some(v.rule),
            _ => None,
        })
        .collect()
}

fn lane(store: &Store, who: &Identity) -> Vec<String> {
    store.session(&who.source, "s").unwrap().timeline().iter().map(|e| e.id().to_owned()).collect()
}

fn request(who: &Identity, id: &str, s: u64, t: u64, severity: Severity) -> Event {
    let d = at("attention.requested", s).severity(severity).data(
        json!({"kind": "permission", "prompt": format!("may I {id}?"), "options": [{"id": "allow", "label": "Allow"}]}),
    );
    build(d, who, id, t)
}

#[test]
fn backfill_is_ordered_in_and_only_a_fault_in_emission_order() {
    let a = owner(1);
    let events: Vec<Event> =
        [5, 1, 3].iter().map(|&s| build(at("progress.status", s), &a, &format!("E{s}"), s)).collect();
    let mut store = Store::default();
    for e in events.clone() {
        assert_eq!(put(&mut store, e), Folded::New);
    }
    assert_eq!(lane(&store, &a), ["E1", "E3", "E5"]);
    assert_eq!(rules(&mut store), vec![], "backfill is legal for a consumer");
    assert_eq!(store.session(&a.source, "s").unwrap().position(), Some((0, 5)));

    let mut log = Store::new(StoreConfig { arrival: Arrival::EmissionOrder, ..StoreConfig::default() });
    for e in events {
        log.apply(e, None, UnixMs(T0));
    }
    assert_eq!(rules(&mut log), vec![Rule::PositionRegression, Rule::PositionRegression]);
}

#[test]
fn a_second_event_at_one_position_is_surfaced_and_kept() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, build(at("progress.status", 1), &a, "X", 0));
    put(&mut store, build(at("progress.status", 1), &a, "Y", 1));
    assert_eq!(rules(&mut store), vec![Rule::PositionReused]);
    assert_eq!(lane(&store, &a), ["X", "Y"]);
}

#[test]
fn redelivery_is_a_no_op_and_a_reused_id_is_a_collision() {
    let a = owner(1);
    let e = build(at("run.started", 0).run("r"), &a, "R", 0);
    let mut store = Store::default();
    assert_eq!(put(&mut store, e.clone()), Folded::New);
    let v = store.version();
    assert_eq!(store.apply(e.clone(), Some("relay-2"), UnixMs(T0 + 1)), Folded::Duplicate);
    assert_eq!(store.version(), v);
    let other = build(at("run.started", 1).run("r2"), &a, "R", 5);
    assert_eq!(put(&mut store, other), Folded::Collision);
    assert_eq!(rules(&mut store), vec![Rule::IdCollision]);
    assert_eq!(lane(&store, &a), ["R"], "the colliding event is not folded");
    // Same id from another emitter is a different event.
    let b = owner(2);
    assert_eq!(put(&mut store, build(at("run.started", 0).run("r"), &b, "R", 0)), Folded::New);
}

#[test]
fn cards_survive_missed_and_reordered_hops() {
    let a = owner(1);
    let mut store = Store::default();
    // answered arrives before its request.
    let answered = at("attention.answered", 2)
        .subject("Q1")
        .cause("CMD")
        .data(json!({"answer": {"option": "allow"}, "by": "ops", "via": "control"}));
    put(&mut store, build(answered, &a, "ANS", 20));
    let key = SessionKey::new(&a.source, "s");
    let card = store.session_by_key(&key).unwrap().card("Q1").unwrap();
    assert_eq!(card.status(), CardStatus::Answered);
    assert!(card.request().is_none());
    put(&mut store, request(&a, "Q1", 1, 10, Severity::Notice));
    let card = store.session_by_key(&key).unwrap().card("Q1").unwrap();
    assert_eq!(card.prompt(), Some("may I Q1?"));
    assert_eq!(card.answer().unwrap().by.as_deref(), Some("ops"));
    assert_eq!(card.answer_latency_ms(), Some(10));
    assert_eq!(card.request().unwrap().relay.as_deref(), Some("relay-1"));

    // resolved with no answered.
    put(&mut store, request(&a, "Q2", 3, 30, Severity::Notice));
    let resolved = at("attention.resolved", 4).subject("Q2").data(json!({"resolution": "dismissed"}));
    put(&mut store, build(resolved, &a, "RES2", 95));
    let q2 = store.session_by_key(&key).unwrap().card("Q2").unwrap();
    assert_eq!(q2.status(), CardStatus::Resolved);
    assert_eq!(q2.latency_ms(), Some(65), "measured from event times when not stated");
    assert!(q2.answer().is_none());

    // A router's hop for a request never seen opens a card that is not in
    // the inbox: there is nothing to show a person.
    let routed = Draft::new("attention.routed").session("s").subject("Q3");
    put(&mut store, build(routed, &console("router"), "RT3", 40));
    let q3 = store.session_by_key(&key).unwrap().card("Q3").unwrap();
    assert_eq!(q3.status(), CardStatus::Pending);
    assert_eq!(q3.routed()[0].agent, "router");
    assert!(store.inbox().is_empty());
    assert_eq!(rules(&mut store), vec![]);
}

#[test]
fn an_allowed_request_learns_how_the_tool_it_asked_about_ended() {
    use aep_engine::store::ToolEnd;
    let a = owner(1);
    let mut store = Store::default();
    let ask = |id: &str, seq: u64, call: &str| {
        let d = at("attention.requested", seq)
            .subject(call)
            .data(json!({"kind": "permission", "prompt": "rm -rf build/?"}));
        build(d, &a, id, seq)
    };
    let tool = |ty: &str, seq: u64, call: &str, data: serde_json::Value| {
        let mut d = json!({"tool": {"name": "Bash", "call_id": call}});
        if let (Some(m), serde_json::Value::Object(x)) = (d.as_object_mut(), data) {
            m.extend(x);
        }
        build(at(ty, seq).data(d), &a, &format!("T{seq}"), seq)
    };
    put(&mut store, ask("Q1", 1, "call-1"));
    put(&mut store, ask("Q2", 2, "call-2"));
    put(&mut store, tool("tool.completed", 3, "call-other", json!({})));
    put(&mut store, tool("tool.failed", 4, "call-2", json!({"error": {"message": "exit 1"}})));
    put(&mut store, tool("tool.completed", 5, "call-1", json!({"status": "ok"})));
    put(&mut store, tool("tool.failed", 6, "call-1", json!({"error": {"message": "second terminal"}})));
    let key = SessionKey::new(&a.source, "s");
    let s = store.session_by_key(&key).unwrap();
    let q1 = s.card("Q1").unwrap().tool().unwrap();
    assert_eq!(
        (q1.end, q1.tool.as_deref(), q1.event_id.as_str()),
        (ToolEnd::Completed, Some("Bash"), "T5"),
        "the first one counts"
    );
    let q2 = s.card("Q2").unwrap().tool().unwrap();
    assert_eq!((q2.end, q2.error.as_deref()), (ToolEnd::Failed, Some("exit 1")));
    let updated: Vec<String> = std::iter::from_fn(|| store.poll_change())
        .filter_map(|c| if let Change::CardUpdated(r) = c { Some(r.request.to_string()) } else { None })
        .collect();
    assert_eq!(updated, ["Q2", "Q1"], "each card redrawn once, when its tool ended");
}

#[test]
fn card_changes_are_reported_in_order() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, request(&a, "Q", 0, 0, Severity::Warning));
    put(&mut store, build(at("attention.timeout", 1).subject("Q"), &a, "TO", 9));
    let cards: Vec<Change> = std::iter::from_fn(|| store.poll_change())
        .filter(|c| matches!(c, Change::CardOpened(_) | Change::CardUpdated(_) | Change::CardClosed(_)))
        .collect();
    assert!(
        matches!(&cards[..], [Change::CardOpened(r1), Change::CardClosed(r2)] if &*r1.request == "Q" && r1 == r2),
        "{cards:?}"
    );
}

#[test]
fn inbox_is_most_severe_first_then_oldest_first() {
    let a = owner(1);
    let b = owner(2);
    let mut store = Store::default();
    put(&mut store, request(&a, "warn-old", 0, 0, Severity::Warning));
    put(&mut store, request(&b, "crit-new", 0, 50, Severity::Critical));
    put(&mut store, request(&a, "warn-new", 1, 40, Severity::Warning));
    put(&mut store, request(&b, "notice", 1, 1, Severity::Notice));
    put(&mut store, request(&a, "done", 2, 2, Severity::Critical));
    put(&mut store, build(at("attention.timeout", 3).subject("done"), &a, "TO", 3));
    put(&mut store, request(&b, "answered", 2, 2, Severity::Critical));
    let answered = at("attention.answered", 3).subject("answered").data(json!({"answer": {"option": "allow"}}));
    put(&mut store, build(answered, &b, "ANS", 4));
    let inbox: Vec<&str> = store.inbox().iter().map(|c| c.id()).collect();
    assert_eq!(inbox, ["crit-new", "warn-old", "warn-new", "notice"]);
    assert_eq!(store.session(&a.source, "s").unwrap().pending_count(), 2);
    assert_eq!(store.counts().pending, 4);
}

#[test]
fn a_session_ending_with_an_open_request_abandons_it() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, request(&a, "Q", 0, 0, Severity::Notice));
    put(&mut store, build(at("session.ended", 5).data(json!({"reason": "normal"})), &a, "END", 5));
    assert_eq!(rules(&mut store), vec![Rule::PendingAtSessionEnd]);
    let s = store.session(&a.source, "s").unwrap();
    assert_eq!(s.state(), SessionState::Ended);
    assert_eq!(s.card("Q").unwrap().status(), CardStatus::Abandoned);
    assert!(store.inbox().is_empty());
    // A second distinct end is its own violation.
    put(&mut store, build(at("session.ended", 6), &a, "END2", 6));
    assert_eq!(rules(&mut store), vec![Rule::SessionEndRepeated]);
}

#[test]
fn the_audit_chain_follows_a_foreign_senders_command() {
    let a = owner(1);
    let other = console("someone-elses-console");
    let mut store = Store::default();
    put(&mut store, build(at("run.started", 0).run("r1"), &a, "RUN", 0));
    let cancel = Draft::new("control.cancel").session("s").run("r1").cause("RUN").data(json!({"scope": "run"}));
    put(&mut store, build(cancel, &other, "CMD", 10));
    put(&mut store, build(at("control.accepted", 1).cause("CMD"), &a, "ACK", 12));
    // The outcome names the ack, not the command: one hop either way.
    put(&mut store, build(at("run.cancelled", 2).run("r1").cause("ACK").data(json!({"by": "control"})), &a, "OUT", 40));
    let s = store.session(&a.source, "s").unwrap();
    let chain = s.command("CMD").unwrap();
    let issued = chain.issued().unwrap();
    assert_eq!(
        (issued.sender_agent.as_str(), issued.sender_source.as_str()),
        ("someone-elses-console", "aep://c/agent/someone-elses-console")
    );
    assert_eq!(chain.ack().unwrap().decision, Decision::Accepted);
    assert_eq!(chain.outcome().unwrap().event_id, "OUT");
    assert_eq!(chain.outcome().unwrap().link, OutcomeLink::Ack);
    assert_eq!(chain.status(), CommandStatus::Completed);
    assert_eq!((chain.ack_latency_ms(), chain.outcome_latency_ms()), (Some(2), Some(30)));
    assert_eq!(lane(&store, &a), ["RUN", "CMD", "ACK", "OUT"]);
    assert_eq!(rules(&mut store), vec![]);
}

#[test]
fn a_chain_completes_whatever_order_its_parts_arrive_in() {
    let a = owner(1);
    let sender = console("mc");
    let mut store = Store::default();
    put(&mut store, build(at("progress.status", 3).cause("CMD"), &a, "OUT", 30));
    put(&mut store, build(at("control.rejected", 2).cause("CMD").data(json!({"reason": "busy"})), &a, "NACK", 20));
    put(&mut store, build(Draft::new("control.pause").session("s"), &sender, "CMD", 10));
    let chain = store.session(&a.source, "s").unwrap().command("CMD").unwrap();
    assert!(matches!(chain.ack().unwrap().decision, Decision::Rejected { reason: Some(NackReason::Busy), .. }));
    assert_eq!(chain.outcome().unwrap().event_id, "OUT");
    assert_eq!(chain.issued().unwrap().ty, "control.pause");
    // A rejected pause never pauses the session.
    assert_eq!(store.session(&a.source, "s").unwrap().state(), SessionState::Active);
}

#[test]
fn second_and_conflicting_acks_are_violations() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, build(Draft::new("control.pause").session("s"), &console("mc"), "CMD", 0));
    put(&mut store, build(at("control.accepted", 0).cause("CMD"), &a, "ACK1", 1));
    put(&mut store, build(at("control.accepted", 1).cause("CMD"), &a, "ACK2", 2));
    put(&mut store, build(at("control.rejected", 2).cause("CMD").data(json!({"reason": "refused"})), &a, "ACK3", 3));
    assert_eq!(rules(&mut store), vec![Rule::AckRepeated, Rule::AckConflict]);
    assert_eq!(store.session(&a.source, "s").unwrap().command("CMD").unwrap().ack().unwrap().event_id, "ACK1");
}

#[test]
fn pause_and_resume_outcomes_drive_the_session_state() {
    let a = owner(1);
    let mc = console("mc");
    let mut store = Store::default();
    put(&mut store, build(at("session.started", 0), &a, "S0", 0));
    put(&mut store, build(Draft::new("control.pause").session("s"), &mc, "P", 1));
    put(&mut store, build(at("control.accepted", 1).cause("P"), &a, "PA", 2));
    let state = |s: &Store| s.session(&a.source, "s").unwrap().state();
    assert_eq!(state(&store), SessionState::Active, "an ack is not the outcome");
    put(&mut store, build(at("progress.status", 2).cause("P").data(json!({"phase": "paused"})), &a, "PO", 3));
    assert_eq!(state(&store), SessionState::Paused);
    put(&mut store, build(Draft::new("control.resume").session("s"), &mc, "R", 4));
    put(&mut store, build(at("control.accepted", 3).cause("R"), &a, "RA", 5));
    put(&mut store, build(at("progress.status", 4).cause("RA"), &a, "RO", 6));
    assert_eq!(state(&store), SessionState::Active);
}

#[test]
fn foreign_events_wait_for_their_session_and_are_adopted_in_arrival_order() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, build(Draft::new("control.pause").session("s"), &console("mc"), "CMD", 0));
    assert_eq!(store.unattached().count(), 1);
    put(&mut store, build(at("progress.status", 0), &a, "E0", 1));
    assert_eq!(store.unattached().count(), 0);
    assert_eq!(lane(&store, &a), ["CMD", "E0"]);
    assert!(store.session(&a.source, "s").unwrap().command("CMD").is_some());
}

#[test]
fn a_shared_session_name_attaches_by_reference_or_waits_for_the_ack() {
    let a = owner(1);
    let b = owner(2);
    let mut store = Store::default();
    put(&mut store, request(&a, "QA", 0, 0, Severity::Notice));
    put(&mut store, build(at("run.started", 0).run("rb"), &b, "RB", 0));
    // subject names a card only `a` holds.
    let respond = Draft::new("control.attention.respond")
        .session("s")
        .subject("QA")
        .cause("QA")
        .data(json!({"answer": {"option": "allow"}}));
    put(&mut store, build(respond, &console("mc"), "C1", 5));
    assert!(store.session(&a.source, "s").unwrap().command("C1").is_some());
    assert_eq!(&*store.session(&a.source, "s").unwrap().card("QA").unwrap().commands()[0], "C1");
    // run names a run only `b` holds.
    put(
        &mut store,
        build(
            Draft::new("control.cancel").session("s").run("rb").data(json!({"scope": "run"})),
            &console("mc"),
            "C2",
            6,
        ),
    );
    assert!(store.session(&b.source, "s").unwrap().command("C2").is_some());
    // Nothing to go on: it waits, and the ack from its target adopts it.
    put(&mut store, build(Draft::new("control.pause").session("s"), &console("mc"), "C3", 7));
    assert_eq!(store.unattached().count(), 1);
    put(&mut store, build(at("control.accepted", 1).cause("C3"), &b, "ACK3", 8));
    assert_eq!(store.unattached().count(), 0);
    let chain = store.session(&b.source, "s").unwrap().command("C3").unwrap();
    assert_eq!(chain.status(), CommandStatus::Accepted);
    assert_eq!(lane(&store, &b), ["RB", "C2", "C3", "ACK3"]);
}

#[test]
fn form_answers_are_checked_and_capture_gating_is_not_a_fault() {
    let a = owner(1);
    let form = json!({"kind": "form", "prompt": "Deploy", "fields": [
        {"id": "name", "type": "string", "label": "Name", "required": true},
        {"id": "tier", "type": "select", "label": "Tier", "required": true, "choices": [{"id": "1", "label": "Free"}]}
    ]});
    let mut store = Store::default();
    put(&mut store, build(at("attention.requested", 0).capture(aep_engine::Capture::Redacted).data(form), &a, "F", 0));
    // At metadata capture the free-text `name` is dropped at the source.
    let gated = at("attention.answered", 1).subject("F").data(json!({"answer": {"values": {"tier": "1"}}}));
    put(&mut store, build(gated, &a, "A1", 1));
    assert_eq!(rules(&mut store), vec![]);

    let b = owner(2);
    let form = json!({"kind": "form", "prompt": "Deploy", "fields": [{"id": "tier", "type": "select", "label": "Tier", "choices": [{"id": "1", "label": "Free"}]}]});
    // The answer arrives first; the check runs once the form is known.
    let forged = at("attention.answered", 1).subject("G").data(json!({"answer": {"values": {"tier": "Gold"}}}));
    put(&mut store, build(forged, &b, "A2", 1));
    assert_eq!(rules(&mut store), vec![]);
    put(&mut store, build(at("attention.requested", 0).data(form), &b, "G", 0));
    assert_eq!(rules(&mut store), vec![Rule::FormValues]);
}

#[test]
fn run_terminals_are_exclusive() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, build(at("run.failed", 0).run("r").data(json!({"reason": "error"})), &a, "F1", 0));
    put(&mut store, build(at("run.finished", 1).run("r"), &a, "F2", 1));
    assert_eq!(rules(&mut store), vec![Rule::RunTerminalRepeated]);
    let run = store.session(&a.source, "s").unwrap().run("r").unwrap();
    assert_eq!(run.end().unwrap().event_id, "F1", "the first terminal stands");
}

// --- bounds ---

fn small() -> StoreConfig {
    StoreConfig {
        max_seen_ids: 4,
        max_sessions: 3,
        max_timeline_per_session: 5,
        max_runs_per_session: 2,
        max_cards_per_session: 2,
        max_commands_per_session: 2,
        max_agents: 2,
        max_agent_events: 2,
        max_unattached: 2,
        max_changes: 8,
        max_violations: 2,
        ..StoreConfig::default()
    }
}

#[test]
fn sessions_are_bounded_and_pending_attention_is_kept() {
    let mut store = Store::new(small());
    put(&mut store, request(&owner(1), "Q", 0, 0, Severity::Notice));
    for n in 2..=5 {
        put(&mut store, build(at("progress.status", 0), &owner(n), "E", n as u64));
    }
    assert_eq!(store.counts().sessions, 3);
    assert!(store.session(&owner(1).source, "s").is_some(), "the session with a pending card survives");
    assert!(store.session(&owner(2).source, "s").is_none() && store.session(&owner(3).source, "s").is_none());
    let evicted: Vec<String> = std::iter::from_fn(|| store.poll_change())
        .filter_map(|c| match c {
            Change::SessionEvicted(k) => Some(k.source.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, [owner(2).source, owner(3).source]);
}

#[test]
fn dedupe_memory_is_bounded_and_backed_by_the_lane() {
    let a = owner(1);
    let mut store = Store::new(small());
    let events: Vec<Event> = (0..6).map(|s| build(at("progress.status", s), &a, &format!("E{s}"), s)).collect();
    for e in events.clone() {
        put(&mut store, e);
    }
    assert_eq!(store.counts().seen_ids, 4);
    // E0 is out of the dedupe memory and out of the 5-event lane: it folds again.
    // E1 is out of the dedupe memory but still in the lane: a duplicate.
    assert_eq!(put(&mut store, events[1].clone()), Folded::Duplicate);
    assert_eq!(put(&mut store, events[0].clone()), Folded::New);
    assert_eq!(store.session(&a.source, "s").unwrap().timeline().len(), 5);
    assert_eq!(store.session(&a.source, "s").unwrap().timeline().dropped(), 2);
}

#[test]
fn cards_commands_runs_agents_and_waiting_events_are_bounded() {
    let a = owner(1);
    let mut store = Store::new(small());
    for (i, id) in ["Q1", "Q2", "Q3"].iter().enumerate() {
        put(&mut store, request(&a, id, i as u64, i as u64, Severity::Notice));
    }
    put(&mut store, build(at("attention.timeout", 3).subject("Q2"), &a, "T2", 3));
    put(&mut store, request(&a, "Q4", 4, 4, Severity::Notice));
    let s = store.session(&a.source, "s").unwrap();
    let mut cards: Vec<&str> = s.cards().map(|c| c.id()).collect();
    cards.sort();
    assert_eq!(cards, ["Q3", "Q4"], "closed Q2 went first, then the oldest pending");
    for (i, r) in ["r1", "r2", "r3"].iter().enumerate() {
        put(&mut store, build(at("run.started", 10 + i as u64).run(*r), &a, &format!("RS{i}"), 10));
    }
    assert_eq!(store.session(&a.source, "s").unwrap().runs().count(), 2);
    for i in 0..3 {
        put(&mut store, build(Draft::new("control.pause").session("s"), &console("mc"), &format!("C{i}"), 20));
    }
    assert_eq!(store.session(&a.source, "s").unwrap().commands().count(), 2);
    for i in 0..3 {
        put(&mut store, build(Draft::new("control.pause").session("nobody"), &console("mc"), &format!("W{i}"), 30));
    }
    let waiting: Vec<&str> = store.unattached().map(|e| e.event.id()).collect();
    assert_eq!(waiting, ["W1", "W2"]);
    for n in 0..3 {
        let who = Identity::new(format!("aep://h/agent/g{n}"), format!("g{n}"));
        for k in 0..3 {
            put(
                &mut store,
                build(Draft::new("agent.heartbeat").data(json!({"tick": k})), &who, &format!("H{k}"), 40 + k),
            );
        }
    }
    assert_eq!(store.agents().count(), 2);
    assert!(store.agents().all(|g| g.recent().count() == 2));
}

#[test]
fn the_change_queue_is_bounded_and_counts_what_it_dropped() {
    let mut store = Store::new(small());
    for n in 0..20 {
        let who = owner(n);
        put(&mut store, build(at("progress.status", 0), &who, "E", 0));
    }
    assert_eq!(store.pending_changes(), 8);
    assert!(store.dropped_changes() > 0);
    assert_eq!(store.counts().dropped_changes, store.dropped_changes());
}

#[test]
fn recent_violations_are_bounded() {
    let a = owner(1);
    let mut store = Store::new(small());
    for s in 0..4 {
        put(&mut store, build(at("run.finished", s).run("r"), &a, &format!("F{s}"), s));
    }
    assert_eq!(store.counts().violations, 3);
    let kept: Vec<&str> = store.violations().map(|v| v.event_id.as_str()).collect();
    assert_eq!(kept, ["F2", "F3"]);
}

#[test]
fn an_outcome_naming_the_ack_may_arrive_before_the_ack() {
    let a = owner(1);
    let mut store = Store::default();
    put(&mut store, build(Draft::new("control.resume").session("s"), &console("mc"), "CMD", 0));
    // Relay A delivers the outcome; the ack arrives later from relay B.
    put(&mut store, build(at("progress.status", 2).cause("ACK"), &a, "OUT", 20));
    put(&mut store, build(at("control.accepted", 1).cause("CMD"), &a, "ACK", 10));
    let chain = store.session(&a.source, "s").unwrap().command("CMD").unwrap();
    assert_eq!(chain.outcome().map(|o| (o.event_id.as_str(), o.link)), Some(("OUT", OutcomeLink::Ack)));
    assert_eq!(chain.outcome().unwrap().time, UnixMs(T0 + 20).to_rfc3339(), "time read back from the kept bytes");
}

// --- evictions: what a bounded fold let go of ---

/// `n` sessions of two events each, from `n` emitters.
fn many_sessions(n: u32) -> Vec<Event> {
    (0..n)
        .flat_map(|k| {
            let who = owner(k);
            [build(at("session.started", 0), &who, "S", 0), build(at("progress.status", 1), &who, "P", 1)]
        })
        .collect()
}

#[test]
fn an_unbounded_store_holds_more_sessions_than_the_default_bound_and_evicts_nothing() {
    let n = StoreConfig::default().max_sessions as u32 + 88;
    let mut store = Store::new(StoreConfig::unbounded());
    for e in many_sessions(n) {
        assert_eq!(put(&mut store, e), Folded::New);
    }
    let counts = store.counts();
    assert_eq!((counts.sessions, counts.events), (n as usize, 2 * n as usize));
    assert!(!store.evictions().any(), "{:?}", store.evictions());
}

#[test]
fn the_default_bounds_report_the_sessions_they_drop() {
    let n = StoreConfig::default().max_sessions as u32 + 88;
    let mut store = Store::default();
    for e in many_sessions(n) {
        put(&mut store, e);
    }
    let evicted = store.evictions();
    assert_eq!(evicted.sessions, 88);
    assert_eq!(evicted.events, 2 * 88);
    assert_eq!(store.counts().sessions + evicted.sessions as usize, n as usize);
}

#[test]
fn every_bound_counts_what_it_drops() {
    let mut store = Store::new(small());
    let a = owner(1);
    // Lane of 5: two of seven events dropped. The dedupe memory of 4 forgets all but the last 4 keys.
    for s in 0..7 {
        put(&mut store, build(at("progress.status", s), &a, &format!("E{s}"), s));
    }
    // Two more sessions fill the bound of 3; a fourth drops the oldest idle one (a1, holding 5 events).
    for n in 2..=4 {
        put(&mut store, build(at("progress.status", 0), &owner(n), "E", n as u64));
    }
    // Three agents with three heartbeats each: one agent forgotten, and each keeps two events.
    for n in 0..3 {
        for k in 0..3 {
            let d = Draft::new("agent.heartbeat");
            put(
                &mut store,
                build(d, &Identity::new(format!("aep://h/agent/g{n}"), format!("g{n}")), &format!("H{n}{k}"), 50 + k),
            );
        }
    }
    let e = store.evictions();
    assert_eq!(e.sessions, 1);
    assert_eq!(e.events, 2 + 5);
    assert_eq!(e.seen_ids, 7 + 3 + 9 - 4);
    assert_eq!(e.agents, 1);
    assert_eq!(e.agent_events, 3 + 2);
    assert!(e.any());
}

// --- the change feed ---

#[test]
fn a_store_without_a_change_feed_folds_to_the_same_state_and_violations() {
    let a = owner(1);
    let mc = console("mc");
    let stream = vec![
        request(&a, "Q", 0, 0, Severity::Warning),
        build(Draft::new("control.pause").session("s"), &mc, "CMD", 1),
        build(at("control.accepted", 1).cause("CMD"), &a, "ACK1", 2),
        build(at("control.rejected", 2).cause("CMD").data(json!({"reason": "refused"})), &a, "ACK2", 3),
        build(at("progress.status", 3).cause("ACK1"), &a, "OUT", 4),
        build(at("run.failed", 4).run("r").data(json!({"reason": "error"})), &a, "F1", 5),
        build(at("run.finished", 5).run("r"), &a, "F2", 6),
        build(at("session.ended", 6), &a, "END", 7),
    ];
    let fold = |changes: ChangeFeed| {
        let mut store = Store::new(StoreConfig { changes, ..StoreConfig::unbounded() });
        for e in &stream {
            put(&mut store, e.clone());
        }
        store
    };
    let (mut queued, mut off) = (fold(ChangeFeed::Queued), fold(ChangeFeed::Off));
    let listed = |s: &Store| s.violations().map(|v| (v.rule, v.event_id.clone(), v.detail.clone())).collect::<Vec<_>>();
    assert_eq!(listed(&off), listed(&queued));
    assert_eq!(
        listed(&off).into_iter().map(|v| v.0).collect::<Vec<_>>(),
        [Rule::AckConflict, Rule::RunTerminalRepeated, Rule::PendingAtSessionEnd]
    );
    assert_eq!(off.counts(), Counts { dropped_changes: 0, ..queued.counts() });
    assert_eq!(off.evictions(), queued.evictions());
    let chain = |s: &Store| s.session(&a.source, "s").unwrap().command("CMD").unwrap().status();
    assert_eq!((chain(&off), chain(&queued)), (CommandStatus::Completed, CommandStatus::Completed));
    let card = |s: &Store| s.session(&a.source, "s").unwrap().card("Q").unwrap().status();
    assert_eq!((card(&off), card(&queued)), (CardStatus::Abandoned, CardStatus::Abandoned));
    assert!(queued.poll_change().is_some());
    assert_eq!((off.poll_change(), off.pending_changes(), off.dropped_changes()), (None, 0, 0));
}

#[test]
fn a_session_opened_in_an_evicted_ones_place_starts_as_new() {
    let config = StoreConfig { max_sessions: 1, ..small() };
    // The first session fills every part of a session: start, runs, a
    // waiting card, a command chain, a pause, a violation, a full lane.
    let a = owner(1);
    let mc = console("mc");
    let mut store = Store::new(config.clone());
    put(&mut store, build(at("session.started", 0).data(json!({"label": "first"})), &a, "S0", 0));
    put(&mut store, build(at("run.started", 1).run("r1"), &a, "R1", 1));
    put(&mut store, build(at("run.finished", 2).run("r1"), &a, "F1", 2));
    put(&mut store, build(at("run.failed", 3).run("r1"), &a, "F2", 3));
    put(&mut store, request(&a, "Q", 4, 4, Severity::Warning));
    put(&mut store, build(Draft::new("control.pause").session("s"), &mc, "P", 5));
    put(&mut store, build(at("control.accepted", 5).cause("P"), &a, "PA", 6));
    put(&mut store, build(at("progress.status", 6).cause("P"), &a, "PO", 7));
    let first = store.session(&a.source, "s").unwrap();
    assert!(first.pending_count() == 1 && first.commands().count() == 1 && first.runs().count() == 1);
    assert!(first.state() == SessionState::Paused && first.timeline().dropped() > 0);

    // The second takes its place, and is what it would be in a new store.
    let b = owner(2);
    let only = build(at("progress.status", 9).run("r2"), &b, "B1", 50);
    put(&mut store, only.clone());
    assert!(store.session(&a.source, "s").is_none());
    let mut fresh = Store::new(config);
    put(&mut fresh, only);
    // Arrival numbers count the store's arrivals, which differ between the two.
    let shown = |s: &Store| {
        let mut text = format!("{:?}", s.session(&b.source, "s").unwrap());
        for counter in ["touched: ", "arrival: "] {
            let parts = text.split(counter).enumerate();
            text = parts
                .map(|(i, part)| if i == 0 { part } else { part.trim_start_matches(|c: char| c.is_ascii_digit()) })
                .collect();
        }
        text
    };
    assert_eq!(shown(&store), shown(&fresh));
    assert_eq!(store.inbox().len(), 0, "the first session's card went with it");
}

#[test]
fn a_busy_relays_many_small_sessions_are_all_held_by_default() {
    // 2 000 sessions of a few events each, interleaved as on a shared relay.
    let mut store = Store::default();
    for round in 0..4u64 {
        for n in 0..2_000u32 {
            put(&mut store, build(at("progress.status", round), &owner(n), &format!("E{n}-{round}"), round));
            while store.poll_change().is_some() {}
        }
    }
    assert_eq!(store.counts().sessions, 2_000);
    assert_eq!(store.counts().events, 8_000);
    assert!(!store.evictions().any(), "{:?}", store.evictions());
}

#[test]
fn what_all_sessions_hold_together_is_bounded_and_the_least_recent_go() {
    let config = StoreConfig { max_held: 10, max_sessions: 100, ..StoreConfig::default() };
    let mut store = Store::new(config);
    // Session 1 asks a person something: it is kept over idle ones.
    put(&mut store, request(&owner(1), "Q", 0, 0, Severity::Notice));
    for n in 2..=5 {
        for s in 0..3 {
            put(&mut store, build(at("progress.status", s), &owner(n), &format!("E{n}-{s}"), s));
        }
    }
    // 2 held by session 1 (its event and its card), 3 by each other: the
    // budget of 10 leaves room for session 1 and two of the others.
    let held: Vec<bool> = (1..=5).map(|n| store.session(&owner(n).source, "s").is_some()).collect();
    assert_eq!(held, [true, false, false, true, true]);
    let c = store.counts();
    assert!(c.events + c.runs + c.cards + c.commands <= 10, "{c:?}");
    assert_eq!(store.evictions().sessions, 2);
    // A session over the budget on its own is not dropped for it: its own
    // bounds apply.
    for s in 0..12 {
        put(&mut store, build(at("progress.status", s), &owner(9), &format!("L{s}"), 10 + s));
    }
    assert_eq!(store.session(&owner(9).source, "s").unwrap().timeline().len(), 12);
    assert_eq!(store.counts().sessions, 1);
}

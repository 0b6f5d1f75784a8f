//! The consumer class obligations ("Certify it", docs/write-a-consumer.md),
//! driven by the AEP golden corpus read in place through the real store:
//!
//! 1. every event applies (unknown type, extension attributes, the
//!    sessionless event are kept);
//! 2. a full duplicate replay changes nothing;
//! 3. the fourteen mandatory types derive the full story;
//! 4. seq-less foreign-emitter events keep arrival order among the
//!    `(epoch, seq)`-ordered events;
//! 5. cause edges resolve across the control boundary.

use std::collections::BTreeMap;
use std::fs;

use aep_engine::control::ack::Decision;
use aep_engine::store::validate;
use aep_engine::store::{
    AttentionKind, CardStatus, Closure, CommandStatus, Folded, OutcomeLink, Resolution, RunEnding, RunStatus,
    SessionState, Store,
};
use aep_engine::{Event, UnixMs};
use serde_json::{json, Value};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/golden/golden.jsonl");
const TYPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/schemas/registry/types.json");

const MAIN: &str = "aep://host-a/agent/claude-code/session/s_8f2c";
const FORM: &str = "aep://host-a/agent/claude-code/session/s_form";

fn read(path: &str) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e} (the AEP spec must be checked out at ../../shared/aep)"))
}

fn golden() -> Vec<Event> {
    read(GOLDEN)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, l)| Event::parse(l).unwrap_or_else(|e| panic!("{GOLDEN} line {}: {e}", n + 1)))
        .collect()
}

fn fold(events: &[Event]) -> Store {
    let mut store = Store::default();
    for (i, e) in events.iter().enumerate() {
        let applied = store.apply(e.clone(), Some("relay-a"), UnixMs(1_000 + i as u64));
        assert_eq!(applied, Folded::New, "{} ({}) did not apply", e.id(), e.ty());
    }
    store
}

fn drain(store: &mut Store) -> usize {
    std::iter::from_fn(|| store.poll_change()).count()
}

/// Everything a consumer would render, in a comparable form.
fn snapshot(store: &Store) -> String {
    let mut lanes = BTreeMap::new();
    for s in store.sessions() {
        let lane: Vec<&str> = s.timeline().iter().map(|e| e.id()).collect();
        let runs: BTreeMap<&str, String> = s.runs().map(|r| (r.name(), format!("{:?}", r.status()))).collect();
        let cards: BTreeMap<&str, String> =
            s.cards().map(|c| (c.id(), format!("{:?} {:?}", c.status(), c.answer()))).collect();
        let chains: BTreeMap<&str, String> =
            s.commands().map(|c| (c.id(), format!("{:?} {:?}", c.status(), c.outcome()))).collect();
        lanes.insert(
            format!("{} {}", s.source(), s.name()),
            format!("{lane:?} {runs:?} {cards:?} {chains:?} {:?}", s.state()),
        );
    }
    let agents: Vec<String> =
        store.agents().map(|a| format!("{} {:?} {}", a.source(), a.presence(), a.recent().count())).collect();
    let inbox: Vec<&str> = store.inbox().iter().map(|c| c.id()).collect();
    format!("{lanes:#?}\n{agents:?}\n{inbox:?}\n{:?}\n{:?}", store.resume_positions(), store.counts())
}

#[test]
fn obligation_1_every_event_applies_and_is_kept() {
    let events = golden();
    assert_eq!(events.len(), 64, "golden corpus size");
    let store = fold(&events);
    assert_eq!(store.unattached().count(), 0, "every foreign event found its session");
    let kept: Vec<_> =
        store.sessions().flat_map(|s| s.timeline().iter()).chain(store.agents().flat_map(|a| a.recent())).collect();
    for e in &events {
        let held = kept
            .iter()
            .find(|k| k.raw() == e.raw())
            .unwrap_or_else(|| panic!("{} ({}) was dropped or lost its bytes", e.id(), e.ty()));
        assert_eq!(held.id(), e.id());
        assert_eq!(held.relay.as_deref(), Some("relay-a"));
        assert_eq!(held.event().unwrap(), *e, "re-reads to the same event");
    }
    assert_eq!(kept.len(), events.len(), "nothing kept twice");
    let main = store.session(MAIN, "s_8f2c").expect("main session");
    let vendor = main.timeline().iter().find(|k| k.ty() == "x.claude-code.session.config_change");
    assert!(vendor.is_some(), "unknown vendor type kept in its session");
    let started = main.timeline().iter().next().unwrap();
    assert_eq!(
        started.event().unwrap().extensions().get("acmeregion"),
        Some(&json!("eu-1")),
        "extension attribute carried"
    );
    let agent = store.agent("aep://host-a/agent/claude-code").expect("sessionless agent-scoped events kept");
    assert_eq!(agent.presence(), Some("online"));
    assert_eq!(agent.health(), Some("degraded"));
    assert!(agent.last_heartbeat().is_some());
    // Same id from two emitters: two sessions, nothing deduped away.
    assert!(store.session("aep://host-c/agent/alpha-agent/session/s_dup_a", "s_dup_a").is_some());
    assert!(store.session("aep://host-d/agent/beta-agent/session/s_dup_b", "s_dup_b").is_some());
    // One name, two owners: two sessions.
    assert_eq!(store.sessions_named("s_shared").count(), 2);
}

#[test]
fn obligation_2_duplicate_replay_changes_nothing() {
    let events = golden();
    let mut store = fold(&events);
    drain(&mut store);
    let before = snapshot(&store);
    let version = store.version();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(store.apply(e.clone(), Some("relay-b"), UnixMs(9_000 + i as u64)), Folded::Duplicate, "{}", e.id());
    }
    assert_eq!(store.version(), version, "state version moved on replay");
    assert_eq!(drain(&mut store), 0, "replay queued changes");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn obligation_3_mandatory_types_derive_the_full_story() {
    let events = golden();
    let store = fold(&events);
    let registry: Value = serde_json::from_str(&read(TYPES)).unwrap_or_else(|e| panic!("{TYPES}: {e}"));
    let mandatory: Vec<&str> = registry["types"]
        .as_array()
        .unwrap_or_else(|| panic!("{TYPES}: no `types`"))
        .iter()
        .filter(|t| t["status"] == "mandatory")
        .filter_map(|t| t["type"].as_str())
        .collect();
    assert_eq!(mandatory.len(), 14);
    for ty in &mandatory {
        let held = store.sessions().flat_map(|s| s.timeline().iter()).filter(|k| k.ty() == *ty).count();
        assert!(held > 0, "mandatory type {ty} not in any session lane");
    }

    let main = store.session(MAIN, "s_8f2c").unwrap();
    assert_eq!(main.state(), SessionState::Ended);
    assert_eq!(main.end().unwrap().reason.as_deref(), Some("normal"));
    assert_eq!(main.started().unwrap().parent.as_deref(), Some("s_root"));
    let ending = |run: &str| main.run(run).unwrap_or_else(|| panic!("run {run}")).status();
    assert_eq!(ending("r_0042"), RunStatus::Ended(RunEnding::Finished));
    assert_eq!(ending("r_0043"), RunStatus::Ended(RunEnding::Failed));
    assert_eq!(main.run("r_0043").unwrap().end().unwrap().reason.as_deref(), Some("tool_error"));
    assert_eq!(ending("r_0044"), RunStatus::Ended(RunEnding::Cancelled));
    assert_eq!(main.run("r_0044").unwrap().end().unwrap().by.as_deref(), Some("control"));

    // Answered arc: requested → routed → respond → answered → resolved.
    let answered = main.card("01JX9YB4RQ000000000000GOLD").unwrap();
    assert_eq!(answered.status(), CardStatus::Resolved);
    assert_eq!(answered.kind(), Some(&AttentionKind::Permission));
    assert_eq!(answered.prompt(), Some("Permission requested: Bash — rm -rf build/"));
    assert!(answered.request().unwrap().accepts_control());
    assert_eq!(answered.request().unwrap().subject.as_deref(), Some("Bash"));
    assert_eq!(answered.answer().unwrap().option.as_deref(), Some("allow"));
    assert_eq!(answered.routed().len(), 1);
    assert_eq!(answered.routed()[0].agent, "telegram-sink");
    assert_eq!(answered.commands().len(), 1);
    assert_eq!(&*answered.commands()[0], "01JX9YB6CMD00000000000GOLD");
    assert_eq!(answered.latency_ms(), Some(4250));
    assert_eq!(answered.answer_latency_ms(), Some(4200));
    match &answered.close().unwrap().how {
        Closure::Resolved { resolution, .. } => assert_eq!(resolution, &Some(Resolution::Answered)),
        other => panic!("{other:?}"),
    }

    // Timed-out arc.
    let timed_out = main.card("01JX9YBQARQ20000000000GOLD").unwrap();
    assert_eq!(timed_out.status(), CardStatus::TimedOut);
    assert_eq!(timed_out.latency_ms(), Some(30_000));

    // The form loop keeps its free-text answer.
    let form = store.session(FORM, "s_form").unwrap().card("01JX9YBEFRQ0000000000GOLD3").unwrap();
    assert_eq!(form.kind(), Some(&AttentionKind::Form));
    assert_eq!(form.request().unwrap().fields.len(), 4);
    assert_eq!(form.status(), CardStatus::Resolved);
    let values = form.answer().unwrap().values.as_ref().unwrap();
    assert_eq!(values["db"], json!("MariaDB"), "free-text `other` answer kept");
    assert_eq!(values["regions"], json!(["1", "3"]));

    // Nothing is left waiting on a person.
    assert!(store.inbox().is_empty());
}

#[test]
fn obligation_4_seqless_events_keep_arrival_order() {
    let events = golden();
    let store = fold(&events);
    // Within each session, the lane equals the corpus order of the events
    // filed under it (the corpus is in emission order).
    for s in store.sessions() {
        let lane: Vec<&str> = s.timeline().iter().map(|k| k.id()).collect();
        let filed: Vec<&str> =
            events.iter().filter(|e| lane.contains(&e.id()) && e.session() == Some(s.name())).map(|e| e.id()).collect();
        assert_eq!(lane, filed, "session {} {}", s.source(), s.name());
    }
    let main = store.session(MAIN, "s_8f2c").unwrap();
    let lane: Vec<&str> = main.timeline().iter().map(|k| k.id()).collect();
    let at = |id: &str| lane.iter().position(|e| *e == id).unwrap();
    assert!(at("01JX9YB4RQ000000000000GOLD") < at("01JX9YB5RT000000000000GOLD"));
    assert!(at("01JX9YB5RT000000000000GOLD") < at("01JX9YB6CMD00000000000GOLD"));
    assert!(at("01JX9YB6CMD00000000000GOLD") < at("01JX9YB7ACK00000000000GOLD"));
    assert!(at("01JX9YBRATO00000000000GOLD") < at("01JX9YBSCCL00000000000GOLD"));
    assert!(at("01JX9YBSCCL00000000000GOLD") < at("01JX9YBTACK20000000000GOLD"));
}

#[test]
fn obligation_4_backfill_lands_by_position_and_seqless_stay_put() {
    // The first four sequenced events of the main session arrive last (a
    // second relay backfilling): they sort in by position, and the seq-less
    // events stay right after the sequenced event that preceded them.
    let events = golden();
    let (late, rest): (Vec<Event>, Vec<Event>) =
        events.iter().cloned().partition(|e| e.source() == MAIN && e.seq().is_some_and(|s| s < 4));
    assert_eq!(late.len(), 4);
    let in_order = fold(&events);
    let mut store = fold(&rest);
    for e in late {
        assert_eq!(store.apply(e, Some("relay-b"), UnixMs(50_000)), Folded::New);
    }
    let lane = |s: &Store| -> Vec<String> {
        s.session(MAIN, "s_8f2c").unwrap().timeline().iter().map(|k| k.id().to_owned()).collect()
    };
    assert_eq!(lane(&store), lane(&in_order));
    let violations: Vec<_> = store.violations().collect();
    assert!(violations.is_empty(), "backfill is not a fault: {violations:?}");
}

#[test]
fn obligation_5_cause_edges_resolve_across_the_control_boundary() {
    let events = golden();
    let store = fold(&events);
    let main = store.session(MAIN, "s_8f2c").unwrap();

    let cancel = main.command("01JX9YBSCCL00000000000GOLD").expect("control.cancel chain");
    let issued = cancel.issued().unwrap();
    assert_eq!(issued.ty, "control.cancel");
    assert_eq!(issued.sender_agent, "mission-control");
    assert_eq!(issued.sender_source, "aep://host-b/agent/mission-control");
    assert_eq!(issued.run.as_deref(), Some("r_0044"));
    let ack = cancel.ack().unwrap();
    assert_eq!(ack.event_id, "01JX9YBTACK20000000000GOLD");
    assert_eq!(ack.decision, Decision::Accepted);
    let outcome = cancel.outcome().unwrap();
    assert_eq!((outcome.event_id.as_str(), outcome.ty.as_str()), ("01JX9YBVRCN00000000000GOLD", "run.cancelled"));
    assert_eq!(outcome.link, OutcomeLink::Command);
    assert_eq!(cancel.status(), CommandStatus::Completed);
    assert_eq!(cancel.ack_latency_ms(), Some(150));
    assert_eq!(cancel.outcome_latency_ms(), Some(300));
    assert_eq!(main.run("r_0044").unwrap().end().unwrap().cause.as_deref(), Some("01JX9YBSCCL00000000000GOLD"));

    let respond = main.command("01JX9YB6CMD00000000000GOLD").expect("respond chain");
    assert_eq!(respond.issued().unwrap().sender_agent, "telegram-sink");
    assert_eq!(respond.ack().unwrap().event_id, "01JX9YB7ACK00000000000GOLD");
    assert_eq!(respond.outcome().unwrap().ty, "attention.answered");
    assert_eq!(store.commands().count(), 2);
}

#[test]
fn golden_corpus_has_no_violations() {
    let events = golden();
    let mut store = fold(&events);
    let flagged: Vec<_> = std::iter::from_fn(|| store.poll_change())
        .filter_map(|c| match c {
            aep_engine::store::Change::Violation(v) => Some(v),
            _ => None,
        })
        .collect();
    assert!(flagged.is_empty(), "{flagged:?}");
    assert_eq!(store.counts().violations, 0);
    assert_eq!(validate::stream(&events), vec![]);
}

#[test]
fn resume_positions_follow_the_high_water_mark() {
    let store = fold(&golden());
    let pos: BTreeMap<(String, String), (u64, u64)> = store
        .resume_positions()
        .into_iter()
        .map(|p| ((p.session.to_string(), p.source.to_string()), (p.epoch, p.seq)))
        .collect();
    assert_eq!(pos[&("s_8f2c".into(), MAIN.into())], (0, 20));
    assert_eq!(pos[&("s_epoch".into(), "aep://host-a/agent/claude-code/session/s_epoch".into())], (1, 0));
    assert_eq!(pos[&("s_opt".into(), "aep://host-a/agent/claude-code/session/s_opt".into())], (0, 15));
    assert_eq!(pos.len(), store.sessions().count());
}

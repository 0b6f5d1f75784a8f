//! Hostile input never panics: random bytes, truncated and bit-flipped
//! golden lines, and streams of valid events whose references point
//! everywhere, fed to `Event::parse`, `Frame::decode`, the store and the
//! stream validator. A deterministic PRNG keeps every run reproducible.

use std::fs;

use aep_engine::protocol::frame::Frame;
use aep_engine::store::validate;
use aep_engine::store::{Store, StoreConfig};
use aep_engine::{Event, UnixMs};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng as _, SeedableRng};
use serde_json::{json, Map, Value};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/golden/golden.jsonl");

fn golden_lines() -> Vec<String> {
    let text = fs::read_to_string(GOLDEN)
        .unwrap_or_else(|e| panic!("cannot read {GOLDEN}: {e} (the AEP spec must be checked out at ../../shared/aep)"));
    let lines: Vec<String> = text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    assert!(lines.len() >= 60, "{GOLDEN}: only {} lines", lines.len());
    lines
}

/// Deterministic inputs: a seeded generator, so a failure replays.
struct Rng(StdRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(StdRng::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.random()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n.max(1))
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        items.choose(&mut self.0).expect("something to pick from")
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

fn small_store() -> Store {
    Store::new(StoreConfig {
        max_seen_ids: 64,
        max_sessions: 6,
        max_timeline_per_session: 16,
        max_runs_per_session: 4,
        max_cards_per_session: 4,
        max_commands_per_session: 4,
        max_agents: 3,
        max_agent_events: 3,
        max_unattached: 5,
        max_changes: 32,
        max_violations: 8,
        ..StoreConfig::default()
    })
}

/// Feeds `bytes` to every reader; events that come out go to the store.
fn feed(bytes: &[u8], store: &mut Store, now: u64) -> usize {
    let mut accepted = 0;
    if let Ok(e) = Event::parse_bytes(bytes) {
        store.apply(e, Some("fuzz"), UnixMs(now));
        accepted += 1;
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        if let Ok(Frame::Event(e)) = Frame::decode(text) {
            store.apply(e, None, UnixMs(now));
        }
    }
    accepted
}

fn check_bounds(store: &Store) {
    let c = store.counts();
    let cfg = store.config();
    assert!(c.sessions <= cfg.max_sessions, "{c:?}");
    assert!(c.seen_ids <= cfg.max_seen_ids, "{c:?}");
    assert!(c.unattached <= cfg.max_unattached, "{c:?}");
    assert!(c.agents <= cfg.max_agents, "{c:?}");
    assert!(store.pending_changes() <= cfg.max_changes);
    assert!(store.violations().count() <= cfg.max_violations);
    for s in store.sessions() {
        assert!(s.timeline().len() <= cfg.max_timeline_per_session);
        assert!(s.cards().count() <= cfg.max_cards_per_session);
        assert!(s.commands().count() <= cfg.max_commands_per_session);
        assert!(s.runs().count() <= cfg.max_runs_per_session);
    }
    // Every query walks cleanly.
    let _ = store.inbox();
    let _ = store.resume_positions();
    let _ = store.commands().count();
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::seeded(0x5EED_0001);
    let mut store = small_store();
    let alphabet: Vec<u8> = br#"{}[]":,.-+eE0123456789 truefalsnl\u"aeptypeidsessionseq"#.to_vec();
    for i in 0..6_000 {
        let len = rng.below(200);
        let bytes: Vec<u8> = if i % 2 == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            (0..len).map(|_| *rng.pick(&alphabet)).collect()
        };
        feed(&bytes, &mut store, i);
    }
    check_bounds(&store);
}

#[test]
fn truncated_golden_lines_never_panic() {
    let lines = golden_lines();
    let mut store = small_store();
    let mut fed = 0;
    for line in &lines {
        let bytes = line.as_bytes();
        for cut in 0..bytes.len() {
            feed(&bytes[..cut], &mut store, fed);
            fed += 1;
        }
    }
    assert!(fed > 10_000, "{fed} prefixes");
    check_bounds(&store);
}

#[test]
fn mutated_golden_lines_never_panic() {
    let lines = golden_lines();
    let mut rng = Rng::seeded(0x5EED_0002);
    let mut store = small_store();
    let mut accepted = 0;
    for i in 0..12_000u64 {
        let mut bytes = rng.pick(&lines).as_bytes().to_vec();
        for _ in 0..=rng.below(3) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] = rng.next() as u8,
                1 => bytes[at] ^= 1 << rng.below(8),
                2 => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, *rng.pick(b"{}[]\",:0\\")),
            }
        }
        accepted += feed(&bytes, &mut store, i);
    }
    // Some mutations land in string values and stay valid events.
    assert!(accepted > 100, "only {accepted} mutated lines parsed");
    check_bounds(&store);
}

/// Valid events whose ids, sessions, positions and references are drawn
/// from small pools, so they collide, dangle and contradict each other.
fn chaotic_event(rng: &mut Rng, templates: &[Map<String, Value>]) -> Option<Event> {
    let mut m = rng.pick(templates).clone();
    let ids = ["A", "B", "C", "D", "E", "F", "G", "H"];
    let sessions = ["s1", "s2", "s3"];
    let sources = ["aep://h/agent/a", "aep://h/agent/b", "aep://h/agent/c", "aep://h/agent/d"];
    let types = [
        "attention.requested",
        "attention.routed",
        "attention.answered",
        "attention.resolved",
        "attention.timeout",
        "control.attention.respond",
        "control.cancel",
        "control.pause",
        "control.resume",
        "control.accepted",
        "control.rejected",
        "run.started",
        "run.finished",
        "run.failed",
        "run.cancelled",
        "session.started",
        "session.ended",
        "progress.status",
        "agent.heartbeat",
        "x.acme.tool.ran",
    ];
    let ty = *rng.pick(&types);
    m.insert("type".into(), json!(ty));
    m.insert("id".into(), json!(rng.pick(&ids)));
    m.insert("source".into(), json!(rng.pick(&sources)));
    for key in ["session", "run", "step", "seq", "epoch", "subject", "cause"] {
        m.remove(key);
    }
    let scoped = !ty.starts_with("agent.");
    let foreign = ty.starts_with("control.") && !ty.ends_with("accepted") && !ty.ends_with("rejected")
        || ty == "attention.routed";
    if scoped {
        m.insert("session".into(), json!(rng.pick(&sessions)));
        if !foreign {
            m.insert("seq".into(), json!(rng.below(12)));
            if rng.chance(3) {
                m.insert("epoch".into(), json!(rng.below(3)));
            }
        }
        if rng.chance(2) {
            m.insert("run".into(), json!(rng.pick(&["r1", "r2", "r3"])));
        }
    }
    if rng.chance(2) {
        m.insert("subject".into(), json!(rng.pick(&ids)));
    }
    if rng.chance(2) {
        m.insert("cause".into(), json!(rng.pick(&ids)));
    }
    let data = match rng.below(8) {
        0 => {
            json!({"kind": "form", "prompt": "p", "fields": [{"id": "x", "type": "select", "label": "X", "choices": [{"id": "1", "label": "one"}]}]})
        }
        1 => json!({"kind": "form", "prompt": "p", "fields": "not a list"}),
        2 => json!({"answer": {"values": {"x": rng.pick(&["1", "2"]), "y": [1, {"z": null}]}}}),
        3 => json!({"answer": "not an object", "resolution": 7, "after_ms": -1}),
        4 => json!({"reason": rng.pick(&["busy", "mystery"]), "options": [{"id": 1}], "respond_via": "control"}),
        5 => json!({"expires_at": "not a time", "latency_ms": 1e300}),
        6 => json!({}),
        _ => Value::Null,
    };
    if data.is_null() {
        m.remove("data");
    } else {
        m.insert("data".into(), data);
    }
    Event::from_value(Value::Object(m)).ok()
}

#[test]
fn contradictory_valid_streams_never_panic_and_stay_bounded() {
    let templates: Vec<Map<String, Value>> = golden_lines()
        .iter()
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect();
    let mut rng = Rng::seeded(0x5EED_0003);
    let mut store = small_store();
    let mut stream = Vec::new();
    let mut built = 0;
    for i in 0..8_000u64 {
        let Some(e) = chaotic_event(&mut rng, &templates) else { continue };
        built += 1;
        if stream.len() < 2_000 {
            stream.push(e.clone());
        }
        store.apply(e, Some(["r1", "r2"][rng.below(2)]), UnixMs(i));
        if rng.chance(50) {
            while store.poll_change().is_some() {}
        }
        if i % 500 == 0 {
            check_bounds(&store);
        }
    }
    assert!(built > 7_000, "only {built} chaotic events were valid");
    check_bounds(&store);
    assert!(store.counts().violations > 0, "chaos should break rules");
    // The offline validator folds the same way and survives too.
    let found = validate::stream(&stream);
    assert!(!found.is_empty());
}

//! The AEP conformance corpora for single-event validation, read in place
//! from the spec checked out beside this crate: every golden event is valid,
//! every single-event invalid case is rejected.

use std::fs;

use aep_engine::protocol::validate::{self, payload};
use aep_engine::Event;
use serde_json::Value;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/golden/golden.jsonl");
const INVALID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/invalid/cases.json");

fn read(path: &str) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e} (the AEP spec must be checked out at ../../shared/aep)"))
}

fn invalid_cases() -> Vec<Value> {
    let doc: Value = serde_json::from_str(&read(INVALID)).unwrap_or_else(|e| panic!("{INVALID}: {e}"));
    doc["cases"].as_array().unwrap_or_else(|| panic!("{INVALID}: no `cases` array")).clone()
}

#[test]
fn every_golden_event_is_valid() {
    let text = read(GOLDEN);
    let mut count = 0;
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        count += 1;
        let event = Event::parse(line).unwrap_or_else(|e| panic!("golden line {}: {e}", n + 1));
        assert_eq!(event.raw(), line, "golden line {} lost its bytes", n + 1);
        let violations = event.check_payload();
        assert!(violations.is_empty(), "golden line {} ({}): {violations:?}", n + 1, event.ty());
        let value: Value = serde_json::from_str(line).unwrap();
        let violations = validate::event(&value);
        assert!(violations.is_empty(), "golden line {} ({}): {violations:?}", n + 1, event.ty());
    }
    assert_eq!(count, 64, "golden corpus size");
}

#[test]
fn golden_covers_payload_schemas() {
    // The corpus exercises the schema checks, not just the unknown-type path.
    let text = read(GOLDEN);
    let checked = text
        .lines()
        .filter_map(|l| Event::parse(l).ok())
        .filter(|e| e.data().is_some() && payload::schema::lookup(e.ty()).is_some())
        .count();
    assert!(checked >= 50, "only {checked} golden events carry a payload with a schema");
}

#[test]
fn every_single_event_invalid_case_fails() {
    let cases = invalid_cases();
    let mut failed = 0;
    for case in cases.iter().filter(|c| c.get("event").is_some()) {
        let name = case["name"].as_str().unwrap_or("?");
        let violations = validate::event(&case["event"]);
        println!("{name}:");
        for v in &violations {
            println!("    {v}");
        }
        assert!(!violations.is_empty(), "invalid case `{name}` passed validation");
        failed += 1;
    }
    assert_eq!(failed, 25, "single-event invalid cases");
}

#[test]
fn payload_cases_fail_on_a_payload_rule() {
    // Cases whose named rule is a payload schema must be caught by the
    // payload checks, not by an accident of the envelope.
    let mut payload_cases = 0;
    for case in invalid_cases().iter().filter(|c| c.get("event").is_some()) {
        let rule = case["rule"].as_str().unwrap_or("");
        if !(rule.contains("payload schema") || rule.contains("field_spec")) {
            continue;
        }
        payload_cases += 1;
        let name = case["name"].as_str().unwrap_or("?");
        let event = &case["event"];
        assert!(validate::envelope(event.as_object().unwrap()).is_empty(), "`{name}`: envelope should be valid");
        let violations = validate::event(event);
        assert!(violations.iter().any(|v| v.rule.starts_with("payload.")), "`{name}`: {violations:?}");
    }
    assert_eq!(payload_cases, 8, "payload-rule invalid cases");
}

#[test]
fn stream_cases_are_accounted_for() {
    let cases = invalid_cases();
    let streams = cases.iter().filter(|c| c.get("events").is_some()).count();
    let singles = cases.iter().filter(|c| c.get("event").is_some()).count();
    assert_eq!(streams, 10, "stream invalid cases (checked by the stream validator)");
    assert_eq!(singles + streams, cases.len(), "every case is either a single event or a stream");
    assert_eq!(cases.len(), 35);
}

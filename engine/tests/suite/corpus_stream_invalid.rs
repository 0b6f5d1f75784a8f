//! The stream cases of the AEP invalid corpus (cases carrying `events`),
//! read in place from the spec checked out beside this crate: each must
//! fail `store::validate::stream` with the rule the case names, and nothing else.

use std::collections::BTreeSet;
use std::fs;

use aep_engine::store::validate;
use aep_engine::store::Rule;
use aep_engine::Event;
use serde_json::Value;

const INVALID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/invalid/cases.json");

fn read(path: &str) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e} (the AEP spec must be checked out at ../../shared/aep)"))
}

/// The store rule a fixture's `rule` text names. The fixture states rules
/// as prose with section references; these phrases pick them out, most
/// specific first. An unmatched text fails the test: a new kind of case
/// needs a rule before it can pass.
fn expected_rule(text: &str) -> Rule {
    const PHRASES: [(&str, Rule); 9] = [
        ("values rule", Rule::FormValues),
        ("terminal exclusivity \u{2014} sessions", Rule::SessionEndRepeated),
        ("terminal exclusivity", Rule::RunTerminalRepeated),
        ("terminal before session.ended", Rule::PendingAtSessionEnd),
        ("id unique per emitter", Rule::IdCollision),
        ("position uniqueness", Rule::PositionRegression),
        ("epoch never reused", Rule::EpochRegression),
        ("never re-decided", Rule::AckConflict),
        ("one ack decision", Rule::AckRepeated),
    ];
    PHRASES
        .iter()
        .find(|(phrase, _)| text.contains(phrase))
        .map(|(_, rule)| *rule)
        .unwrap_or_else(|| panic!("no store rule is mapped for the fixture rule text {text:?}"))
}

#[test]
fn every_stream_case_fails_with_its_rule() {
    let doc: Value = serde_json::from_str(&read(INVALID)).unwrap_or_else(|e| panic!("{INVALID}: {e}"));
    let cases = doc["cases"].as_array().unwrap_or_else(|| panic!("{INVALID}: no `cases` array"));
    let mut checked = 0;
    let mut rules_seen = BTreeSet::new();
    for case in cases.iter().filter(|c| c.get("events").is_some()) {
        let name = case["name"].as_str().unwrap_or("?");
        let text = case["rule"].as_str().unwrap_or_else(|| panic!("{name}: no `rule`"));
        let expected = expected_rule(text);
        let events: Vec<Event> = case["events"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: `events` is not an array"))
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Event::parse(&v.to_string()).unwrap_or_else(|e| panic!("{name}: event {i} does not parse: {e}"))
            })
            .collect();
        let violations = validate::stream(&events);
        println!("{name}\n    expects {expected} ({text})");
        for v in &violations {
            println!("    got {v}");
        }
        let got: BTreeSet<&str> = violations.iter().map(|v| v.rule).collect();
        assert_eq!(got, BTreeSet::from([expected.id()]), "{name}: wrong verdict");
        // Every prefix short of the breaking event is clean: the violation
        // is tied to the event that completes it.
        let clean = validate::stream(&events[..events.len() - 1]);
        assert!(clean.is_empty(), "{name}: flagged before its last event: {clean:?}");
        rules_seen.insert(expected);
        checked += 1;
    }
    println!("{checked} stream cases, {} distinct rules", rules_seen.len());
    assert_eq!(checked, 10, "stream cases in {INVALID}");
    assert_eq!(rules_seen.len(), 9, "distinct rules exercised by the stream cases");
}

#[test]
fn a_clean_stream_from_the_same_cases_passes() {
    // The first event of every stream case is a valid stream on its own.
    let doc: Value = serde_json::from_str(&read(INVALID)).unwrap_or_else(|e| panic!("{INVALID}: {e}"));
    let cases = doc["cases"].as_array().unwrap_or_else(|| panic!("{INVALID}: no `cases` array"));
    let firsts: Vec<Event> = cases
        .iter()
        .filter_map(|c| c.get("events")?.as_array()?.first().cloned())
        .map(|v| Event::parse(&v.to_string()).unwrap())
        .collect();
    assert!(firsts.len() >= 10);
    assert_eq!(validate::stream(&firsts), vec![]);
}

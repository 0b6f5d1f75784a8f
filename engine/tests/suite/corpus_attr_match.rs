//! The attr-match golden corpus (AEP-0003 §6, conformance/fixtures/attr-match),
//! read in place: every match verdict holds and every invalid filter is
//! refused.

use aep_engine::protocol::filter::Filter;
use aep_engine::Event;
use serde_json::{json, Map, Value};

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/attr-match/cases.json");

fn corpus() -> Map<String, Value> {
    let text = std::fs::read_to_string(CASES)
        .unwrap_or_else(|e| panic!("the attr-match corpus must be present at {CASES}: {e}"));
    match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => m,
        other => panic!("{CASES} is not a JSON object: {other:?}"),
    }
}

fn cases<'a>(corpus: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    corpus.get(key).and_then(Value::as_array).unwrap_or_else(|| panic!("{CASES} has no `{key}` array"))
}

fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap_or("<unnamed>")
}

/// Completes a partial corpus event into a valid envelope without touching
/// any attribute the case sets, so the verdict can also be checked on a
/// real [`Event`].
fn as_event(partial: &Map<String, Value>) -> Option<Event> {
    let mut v = json!({
        "aep": "0.1", "id": "01JCORPUS0000000000000000", "time": "2026-07-03T10:15:04.221Z",
        "source": "aep://corpus/agent/a", "agent": "a"
    });
    let obj = v.as_object_mut()?;
    for (k, val) in partial {
        obj.insert(k.clone(), val.clone());
    }
    let ty = obj.get("type")?.as_str()?.to_owned();
    if !ty.starts_with("agent.") {
        obj.entry("session").or_insert(json!("s_corpus"));
        obj.entry("seq").or_insert(json!(1));
    }
    Event::from_value(v).ok()
}

#[test]
fn every_match_verdict_holds() {
    let corpus = corpus();
    let cases = cases(&corpus, "match");
    assert_eq!(cases.len(), 14, "match case count in {CASES}");
    let mut checked_as_events = 0;
    for case in cases {
        let filter = Filter::parse(&case["filter"]).unwrap_or_else(|e| panic!("{}: filter refused: {e}", name(case)));
        let event = case["event"].as_object().unwrap_or_else(|| panic!("{}: event is not an object", name(case)));
        let want = case["match"].as_bool().unwrap_or_else(|| panic!("{}: no boolean verdict", name(case)));
        println!("match: {} => {want}", name(case));
        assert_eq!(filter.matches_value(event), want, "{}", name(case));
        if let Some(ev) = as_event(event) {
            assert_eq!(filter.matches(&ev), want, "{} (as a full event)", name(case));
            checked_as_events += 1;
        }
    }
    assert_eq!(checked_as_events, cases.len(), "every corpus event completes into a valid envelope");
}

#[test]
fn every_invalid_filter_is_refused() {
    let corpus = corpus();
    let cases = cases(&corpus, "invalid");
    assert_eq!(cases.len(), 10, "invalid case count in {CASES}");
    for case in cases {
        let err = Filter::parse(&case["filter"]).expect_err(name(case));
        println!("invalid: {} => {err}", name(case));
        if let Some(Value::Object(f)) = case.get("filter") {
            if f.len() == 1 {
                let key = f.keys().next().cloned();
                assert_eq!(err.key, key, "{}: the error names the offending key", name(case));
            }
        }
    }
}

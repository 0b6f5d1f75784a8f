//! The AEP capture corpora, read in place from the spec checked out beside
//! this crate: hop down-leveling (AEP-0001 §8.2) and form-answer gating
//! (AEP-0006), plus the compiled capture annotations against the schema
//! files they were compiled from.

use std::fs;

use aep_engine::protocol::capture::{self, downlevel, gate_form_values};
use aep_engine::protocol::validate::payload;
use aep_engine::{Capture, Event};
use serde_json::{Map, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures");
const SCHEMAS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/schemas/types");

fn read(path: &str) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e} (the AEP spec must be checked out at ../../shared/aep)"))
}

fn cases(file: &str) -> Vec<Value> {
    let path = format!("{FIXTURES}/{file}");
    let doc: Value = serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    doc["cases"].as_array().unwrap_or_else(|| panic!("{path}: no `cases` array")).clone()
}

fn level(v: &Value, what: &str) -> Capture {
    v.as_str().and_then(Capture::parse).unwrap_or_else(|| panic!("{what}: not a capture level: {v}"))
}

#[test]
fn downlevel_corpus() {
    let all = cases("downlevel/cases.json");
    for case in &all {
        let name = case["name"].as_str().unwrap_or("?");
        let input = Event::from_value(case["event"].clone()).unwrap_or_else(|e| panic!("`{name}`: input: {e}"));
        let out = downlevel(&input, level(&case["ceiling"], name));

        // The expected event: the input with `capture` and `data` replaced.
        let mut expected = case["event"].as_object().unwrap().clone();
        expected.insert("capture".into(), case["expect_capture"].clone());
        match &case["expect_data"] {
            Value::Null => {
                expected.remove("data");
            }
            data => {
                expected.insert("data".into(), data.clone());
            }
        }
        assert_eq!(out.to_value(), Value::Object(expected), "`{name}`");

        let again = Event::parse(out.raw()).unwrap_or_else(|e| panic!("`{name}`: output does not re-parse: {e}"));
        assert_eq!(again.check_payload(), vec![], "`{name}`: output is not a valid event");
        if out.capture() == input.capture() {
            assert_eq!(out.raw(), input.raw(), "`{name}`: unchanged event was re-serialised");
        }
    }
    assert_eq!(all.len(), 18, "downlevel corpus size");
}

#[test]
fn capture_gating_corpus() {
    let all = cases("capture-gating/cases.json");
    for case in &all {
        let name = case["name"].as_str().unwrap_or("?");
        let fields = case["fields"].as_array().unwrap_or_else(|| panic!("`{name}`: no fields"));
        let values = case["values"].as_object().unwrap_or_else(|| panic!("`{name}`: no values"));
        let gated = gate_form_values(fields, values, level(&case["ceiling"], name));
        assert_eq!(Value::Object(gated), case["expect"], "`{name}`");
    }
    assert_eq!(all.len(), 6, "capture-gating corpus size");
}

/// Walks a schema file the way `capture::annotations` reports it.
fn walk(schema: &Value, prefix: &str, out: &mut Vec<(String, Capture)>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, sub) in props {
        let path = format!("{prefix}{name}");
        if let Some(l) = sub.get("x-aep-capture") {
            out.push((path.clone(), level(l, &path)));
        }
        walk(sub, &format!("{path}."), out);
        if let Some(items) = sub.get("items") {
            let items_path = format!("{path}[]");
            if let Some(l) = items.get("x-aep-capture") {
                out.push((items_path.clone(), level(l, &items_path)));
            }
            walk(items, &format!("{items_path}."), out);
        }
    }
}

#[test]
fn compiled_annotations_match_the_schema_files() {
    let entries = fs::read_dir(SCHEMAS).unwrap_or_else(|e| {
        panic!("cannot list {SCHEMAS}: {e} (the AEP spec must be checked out at ../../shared/aep)")
    });
    let mut types = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ty) = file.strip_suffix(".schema.json") else { continue };
        let schema: Value = serde_json::from_str(&read(&path.to_string_lossy())).unwrap();
        let mut want = Vec::new();
        walk(&schema, "", &mut want);
        let mut got = capture::annotations(ty).unwrap_or_else(|| panic!("{ty}: not compiled into the engine"));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "{ty}");
        for (dotted, l) in &want {
            let segments: Vec<&str> =
                dotted.split('.').filter(|s| !s.is_empty()).map(|s| s.trim_end_matches("[]")).collect();
            // Field names containing dots (gen_ai.*) only resolve whole.
            if let Some(found) = capture::field_level(ty, &segments) {
                assert_eq!(found, *l, "{ty} {dotted}");
            } else {
                assert!(dotted.starts_with("gen_ai."), "{ty} {dotted} does not resolve");
                assert_eq!(capture::field_level(ty, &[dotted.as_str()]), Some(*l), "{ty} {dotted}");
            }
        }
        types += 1;
    }
    assert_eq!(types, payload::schema::types().count(), "every schema file is compiled, and nothing else");
}

#[test]
fn gating_agrees_with_downlevel_on_the_golden_form() {
    // The golden form pair: gating the answer with the request's fields at
    // metadata keeps the closed-select ids a field-blind hop must drop.
    let golden = read(&format!("{FIXTURES}/golden/golden.jsonl"));
    let events: Vec<Event> =
        golden.lines().map(|l| Event::parse(l).unwrap()).filter(|e| e.session() == Some("s_form")).collect();
    let request = events.iter().find(|e| e.ty() == "attention.requested").expect("golden form request");
    let answer = events.iter().find(|e| e.ty() == "attention.answered").expect("golden form answer");
    let fields = request.data_field("fields").and_then(Value::as_array).unwrap();
    let values = answer.data_field("answer").and_then(|a| a.get("values")).and_then(Value::as_object).unwrap();

    let gated = gate_form_values(fields, values, Capture::Metadata);
    let hop = downlevel(answer, Capture::Metadata);
    let hop_values: Map<String, Value> =
        hop.data_field("answer").and_then(|a| a.get("values")).and_then(Value::as_object).cloned().unwrap_or_default();
    for (k, v) in &hop_values {
        assert_eq!(gated.get(k), Some(v), "the hop kept `{k}`, which gating with field specs would drop");
    }
    assert!(gated.contains_key("regions"), "closed multi-select ids are structural");
    assert!(!hop_values.contains_key("regions"), "a field-blind hop cannot prove ids are ids");
    assert!(!gated.contains_key("name") && !gated.contains_key("db"), "free text never survives metadata");
}

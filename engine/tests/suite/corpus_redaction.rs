//! The AEP-0003 §9.4 redaction corpus, read in place from the spec checked
//! out beside this crate: every text case through the text pipeline, every
//! value case through the JSON one. All failing cases are reported by name
//! at once.

use std::fs;

use aep_engine::protocol::capture::{RedactOptions, Redactor};
use serde_json::Value;

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/aep/conformance/fixtures/redaction/cases.json");

fn corpus() -> Value {
    let text = fs::read_to_string(CASES)
        .unwrap_or_else(|e| panic!("cannot read {CASES}: {e} (the AEP spec must be checked out at ../../shared/aep)"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{CASES}: {e}"))
}

fn list<'a>(doc: &'a Value, name: &str) -> &'a [Value] {
    doc[name].as_array().unwrap_or_else(|| panic!("{CASES}: no `{name}` array"))
}

fn strings<'a>(case: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    case[key].as_array().into_iter().flatten().filter_map(Value::as_str)
}

/// The case's `opts`, as the corpus names them.
fn redactor(case: &Value) -> Redactor {
    let opts = &case["opts"];
    let known = ["secretValues", "home", "pii"];
    if let Some(unknown) = opts.as_object().and_then(|o| o.keys().find(|k| !known.contains(&k.as_str()))) {
        panic!("`{}`: unknown option `{unknown}`", case["name"]);
    }
    let defaults = RedactOptions::default();
    Redactor::new(RedactOptions {
        secret_values: strings(opts, "secretValues").map(str::to_owned).collect(),
        home: opts["home"].as_str().map(str::to_owned),
        pii: opts["pii"].as_bool().unwrap_or(defaults.pii),
        ..defaults
    })
}

/// What is wrong with `output` by the case's expectations, if anything.
fn check(case: &Value, output: &str) -> Option<String> {
    let missing: Vec<&str> = strings(case, "must_contain").filter(|s| !output.contains(s)).collect();
    let leaked: Vec<&str> = strings(case, "must_not_contain").filter(|s| output.contains(s)).collect();
    if missing.is_empty() && leaked.is_empty() {
        return None;
    }
    let name = case["name"].as_str().unwrap_or("?");
    Some(format!("`{name}`: output {output:?}, missing {missing:?}, must not contain {leaked:?}"))
}

fn run(kind: &str, expected: usize, redact: impl Fn(&Redactor, &Value) -> String) {
    let doc = corpus();
    let cases = list(&doc, kind);
    let failures: Vec<String> =
        cases.iter().filter_map(|case| check(case, &redact(&redactor(case), &case["input"]))).collect();
    assert!(failures.is_empty(), "{} of {} {kind} fail:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(cases.len(), expected, "{kind} corpus size");
}

#[test]
fn text_cases() {
    run("text_cases", 28, |r, input| {
        r.redact_text(input.as_str().unwrap_or_else(|| panic!("a text case's input is a string: {input}")))
    });
}

#[test]
fn value_cases() {
    run("value_cases", 5, |r, input| r.redact_value(input).to_string());
}

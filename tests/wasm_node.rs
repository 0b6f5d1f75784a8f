//! The JavaScript API in Node (wasm-bindgen-test): the pure helpers, the
//! control target, option checks, and a real relay over Node's WebSocket.
//! Run through `scripts/test-npm` (it starts the relay).

#![cfg(target_arch = "wasm32")]

#[path = "wasm_support/mod.rs"]
mod support;

use aep_client::js::client::AepClient;
use aep_client::js::convert as js;
use aep_client::js::helpers::{matches, project_state, validate_event, validate_filter};
use aep_client::js::target::JsControlTarget;
use serde_json::json;
use support::{js_value, json};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

fn ev(id: &str, ty: &str, seq: u64, extra: serde_json::Value) -> serde_json::Value {
    let mut v = json!({"aep": "0.1", "id": id, "type": ty, "time": "2026-07-03T10:00:00Z",
        "source": "aep://h/agent/a", "agent": "a", "session": "s1", "seq": seq});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

#[wasm_bindgen_test]
fn validate_event_reports_rule_ids() {
    let ok = json(&validate_event(js_value(&ev("E1", "progress.status", 0, json!({"data": {"phase": "x"}})))));
    assert_eq!(ok, json!({"valid": true, "violations": []}));
    let bad = json(&validate_event(js_value(&json!({"aep": "0.1", "id": "E2", "type": "Nope"}))));
    assert_eq!(bad["valid"], false);
    assert!(
        bad["violations"].as_array().unwrap().iter().any(|v| v["rule"].as_str().unwrap().starts_with("envelope.")),
        "{bad}"
    );
    let text = json(&validate_event(JsValue::from_str("{not json")));
    assert_eq!(text["violations"][0]["rule"], "json.syntax");
}

#[wasm_bindgen_test]
fn filters_validate_and_match() {
    assert_eq!(json(&validate_filter(js_value(&json!({"type": ["attention.*"]})))), json!({"valid": true}));
    let bad = json(&validate_filter(js_value(&json!({"seq": 3}))));
    assert_eq!(bad["valid"], false);
    assert_eq!(bad["error"]["code"], "filter.unfilterable-key");
    let f = js_value(&json!({"type": ["attention.*"], "severity": {"gte": "warning"}}));
    let warn = js_value(&ev("E1", "attention.requested", 0, json!({"severity": "warning"})));
    let info = js_value(&ev("E2", "attention.requested", 1, json!({})));
    assert!(matches(f.clone(), warn).unwrap());
    assert!(!matches(f, info.clone()).unwrap());
    let err = matches(js_value(&json!({"seq": 1})), info).unwrap_err();
    assert_eq!(js::get(&err, "code").as_string().as_deref(), Some("invalid-filter"));
}

#[wasm_bindgen_test]
fn project_state_folds_arrays_and_jsonl_alike() {
    let stream = vec![
        ev(
            "R1",
            "attention.requested",
            0,
            json!({"data": {"kind": "permission", "prompt": "ok?",
            "options": [{"id": "y", "label": "Yes"}]}}),
        ),
        ev("P1", "progress.status", 1, json!({"data": {"phase": "x"}})),
        ev("P1", "progress.status", 1, json!({"data": {"phase": "x"}})),
    ];
    let array = json(&project_state(js_value(&json!(stream)), JsValue::UNDEFINED).unwrap());
    assert_eq!(array["counts"]["events"], 2, "the redelivery is folded once: {array}");
    assert_eq!(array["counts"]["pending"], 1);
    assert_eq!(array["inbox"][0]["prompt"], "ok?");
    assert_eq!(array["rejected"]["count"], 0);
    let jsonl: String = stream.iter().map(|e| format!("{e}\n")).collect::<String>() + "{\"aep\":\"0.1\"}\n";
    let lines = json(&project_state(JsValue::from_str(&jsonl), JsValue::UNDEFINED).unwrap());
    assert_eq!(lines["counts"], array["counts"]);
    assert_eq!(lines["rejected"]["count"], 1);
    assert_eq!(lines["rejected"]["first"][0]["index"], 3);

    // Elements may be JSON texts; one that cannot be stringified (a BigInt)
    // is rejected alone, at its index.
    let mixed = js_sys::Array::new();
    mixed.push(&JsValue::from_str(&stream[0].to_string()));
    mixed.push(&js_value(&stream[1]));
    mixed.push(&js_sys::BigInt::from(7u32).into());
    mixed.push(&JsValue::from_str(&stream[2].to_string()));
    let mixed = json(&project_state(mixed.into(), JsValue::UNDEFINED).unwrap());
    assert_eq!(mixed["counts"], array["counts"]);
    assert_eq!(mixed["rejected"]["count"], 1);
    assert_eq!(mixed["rejected"]["first"][0]["index"], 2);
    let texts = js_sys::Array::new();
    for e in &stream {
        texts.push(&JsValue::from_str(&e.to_string()));
    }
    assert_eq!(json(&project_state(texts.into(), JsValue::UNDEFINED).unwrap())["counts"], array["counts"]);
    assert!(project_state(JsValue::from_f64(3.0), JsValue::UNDEFINED).is_err());
}

#[wasm_bindgen_test]
fn project_state_reads_jsonl_bytes_as_it_reads_the_string() {
    let stream = [
        ev("S1", "session.started", 0, json!({})),
        ev("P1", "progress.status", 1, json!({"data": {"phase": "\u{e9}t\u{e9}"}})),
        ev("P1", "progress.status", 1, json!({"data": {"phase": "\u{e9}t\u{e9}"}})),
    ];
    let jsonl: String = stream.iter().map(|e| format!("{e}\r\n")).collect();
    let text = json(&project_state(JsValue::from_str(&jsonl), JsValue::UNDEFINED).unwrap());
    let bytes = json(&project_state(js_sys::Uint8Array::from(jsonl.as_bytes()).into(), JsValue::UNDEFINED).unwrap());
    // Receipt times are the clock's; everything else is the same.
    let unclocked = |mut v: serde_json::Value| {
        for s in v["sessions"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().retain(|k, _| k != "firstSeen" && k != "updatedAt");
        }
        v
    };
    assert_eq!(unclocked(bytes.clone()), unclocked(text));
    assert_eq!(bytes["counts"]["events"], 2);

    // A line that is not UTF-8 is rejected alone, by its line number.
    let mut broken = jsonl.clone().into_bytes();
    let second = jsonl.find("\r\n").unwrap() + 2;
    let at = second + jsonl[second..].find('\u{e9}').unwrap();
    broken[at] = 0xff;
    let out = json(&project_state(js_sys::Uint8Array::from(&broken[..]).into(), JsValue::UNDEFINED).unwrap());
    assert_eq!(out["rejected"]["count"], 1, "{out}");
    assert_eq!(out["rejected"]["first"][0]["index"], 1);
    assert!(out["rejected"]["first"][0]["error"].as_str().unwrap().contains("UTF-8"));
    assert_eq!(out["counts"]["events"], 2, "the redelivery on the next line stands in: {out}");
}

/// More sessions than the store's default bound, from as many emitters.
fn sessions_stream(n: usize) -> String {
    (0..n)
        .map(|k| {
            let mut e = ev(&format!("E{k}"), "session.started", 0, json!({}));
            e["source"] = json!(format!("aep://h/agent/a{k}"));
            format!("{e}\n")
        })
        .collect()
}

#[wasm_bindgen_test]
fn project_state_holds_every_session_unless_limited_and_reports_evictions() {
    let n = aep_engine::store::StoreConfig::default().max_sessions + 40;
    let all = json(&project_state(JsValue::from_str(&sessions_stream(n)), JsValue::UNDEFINED).unwrap());
    assert_eq!(all["counts"]["sessions"], n);
    assert_eq!(all["sessions"].as_array().unwrap().len(), n);
    assert_eq!(all["evicted"]["sessions"], 0);

    let limited = js_value(&json!({"limits": {"maxSessions": 10}}));
    let some = json(&project_state(JsValue::from_str(&sessions_stream(n)), limited).unwrap());
    assert_eq!(some["counts"]["sessions"], 10);
    assert_eq!(some["evicted"]["sessions"], n - 10);
    assert_eq!(some["evicted"]["events"], n - 10);

    // One event each: a budget of 20 held keeps 20 sessions.
    let held = js_value(&json!({"limits": {"maxHeld": 20}}));
    let some = json(&project_state(JsValue::from_str(&sessions_stream(n)), held).unwrap());
    assert_eq!(some["counts"]["sessions"], 20);
    assert_eq!(some["evicted"]["sessions"], n - 20);

    let unknown = js_value(&json!({"limits": {"maxSesions": 10}}));
    assert!(project_state(JsValue::from_str(""), unknown).is_err(), "a misspelt bound is refused");
}

#[wasm_bindgen_test]
fn the_control_target_sequences_dedupes_and_refuses() {
    let options = js_value(&json!({"agent": "js-agent", "host": "h", "accepts": ["control.pause"]}));
    let mut t = JsControlTarget::new(options).unwrap();
    assert_eq!(t.source(), "aep://h/agent/js-agent");
    let a = json(&t.event(js_value(&json!({"type": "session.started", "session": "s"}))).unwrap());
    let b =
        json(&t.event(js_value(&json!({"type": "progress.status", "session": "s", "data": {"phase": "x"}}))).unwrap());
    assert_eq!((a["seq"].as_u64(), b["seq"].as_u64()), (Some(0), Some(1)));
    assert_eq!(t.peek_seq("s"), 2.0);

    let pause = js_value(&json!({"aep": "0.1", "id": "C1", "type": "control.pause", "time": "2026-07-03T10:00:00Z",
        "source": "aep://c/agent/console", "agent": "console", "session": "s", "data": {}}));
    let first = json(&t.handle_command(pause.clone(), None).unwrap());
    assert_eq!(first["kind"], "fresh");
    assert_eq!(first["ack"]["type"], "control.accepted");
    assert_eq!(first["ack"]["seq"], 2);
    let again = json(&t.handle_command(pause, None).unwrap());
    assert_eq!(again["kind"], "duplicate");
    assert_eq!(again["ack"], first["ack"], "the recorded ack, unchanged");

    let cancel = js_value(&json!({"aep": "0.1", "id": "C2", "type": "control.cancel", "time": "2026-07-03T10:00:00Z",
        "source": "aep://c/agent/console", "agent": "console", "session": "s", "data": {"scope": "session"}}));
    let nack = json(&t.handle_command(cancel, None).unwrap());
    assert_eq!((nack["kind"].as_str(), nack["reason"].as_str()), (Some("nacked"), Some("unsupported")));

    assert!(JsControlTarget::new(js_value(&json!({"agent": "x", "accepts": ["progress.status"]}))).is_err());
}

/// Every member of a target's options and of a draft is read for what it
/// is: a wrong kind is refused by name, never dropped or passed over.
#[wasm_bindgen_test]
fn target_options_and_drafts_refuse_a_member_of_the_wrong_kind() {
    let refused = |options: serde_json::Value, member: &str| {
        let err = JsControlTarget::new(js_value(&options)).err().unwrap_or_else(|| panic!("{options} is refused"));
        let message = js::get(&err, "message").as_string().unwrap();
        assert_eq!(js::get(&err, "code").as_string().as_deref(), Some("invalid-argument"), "{message}");
        assert!(message.contains(member) && !message.contains("s3cret"), "{options}: {message}");
    };
    refused(json!({"agent": "a", "accepts": ["control.pause", 7]}), "`accepts[1]`");
    refused(json!({"agent": "a", "accepts": "control.pause"}), "`accepts`");
    refused(json!({"agent": "a", "accepts": ["control.pause"], "epoch": "s3cret"}), "`epoch`");
    refused(json!({"agent": "a", "accepts": ["control.pause"], "capture": "most"}), "`capture`");
    refused(json!({"agent": "", "accepts": ["control.pause"]}), "`agent`");

    let mut t = JsControlTarget::new(js_value(&json!({"agent": "a", "accepts": ["control.pause"]}))).unwrap();
    for (draft, member) in [
        (json!({"session": "s"}), "`type`"),
        (json!({"type": "progress.status", "session": 7}), "`session`"),
        (json!({"type": "progress.status", "session": "s", "seq": -1}), "`seq`"),
        (json!({"type": "progress.status", "session": "s", "data": ["s3cret"]}), "`data`"),
        (json!({"type": "progress.status", "severity": "dire"}), "`severity`"),
    ] {
        let err = t.event(js_value(&draft)).err().unwrap_or_else(|| panic!("{draft} is refused"));
        let message = js::get(&err, "message").as_string().unwrap();
        assert!(message.starts_with("draft: ") && message.contains(member), "{draft}: {message}");
        assert!(!message.contains("s3cret"), "{draft}: {message}");
    }
}

#[wasm_bindgen_test]
fn the_control_target_never_repeats_a_position() {
    let options = json!({"agent": "js-agent", "accepts": ["control.pause"]});
    let mut t = JsControlTarget::new(js_value(&options)).unwrap();
    let named = json(&t.event(js_value(&json!({"type": "session.started", "session": "s", "seq": 5}))).unwrap());
    let next = json(&t.event(js_value(&json!({"type": "progress.status", "session": "s", "data": {}}))).unwrap());
    assert_eq!((named["seq"].as_u64(), next["seq"].as_u64()), (Some(5), Some(6)), "continues after a named seq");
    let again = t.event(js_value(&json!({"type": "progress.status", "session": "s", "seq": 6, "data": {}})));
    assert!(again.is_err(), "a seq already assigned is refused");

    // Without an explicit epoch, a restarted target (a new instance) is a
    // new, later epoch: its (epoch, seq) positions never repeat the old ones.
    let epoch = named["epoch"].as_u64().expect("an epoch is stamped");
    assert!(epoch > 0);
    let mut restarted = JsControlTarget::new(js_value(&options)).unwrap();
    let first = json(&restarted.event(js_value(&json!({"type": "session.started", "session": "s"}))).unwrap());
    assert!(first["epoch"].as_u64().unwrap() >= epoch, "seeded from the start-up clock, never earlier: {first}");
}

#[wasm_bindgen_test]
fn bad_options_are_refused_without_echoing_the_token() {
    let cases = [
        json!({"agent": "c"}),
        json!({"relays": [], "agent": "c"}),
        json!({"relays": [{"url": "ftp://h/?access_token=s3cret-value", "token": "s3cret-value"}], "agent": "c"}),
        json!({"relays": [{"url": "ws://h", "token": 12345}], "agent": "c"}),
        json!({"relays": [{"url": "ws://h"}], "agent": ""}),
        json!({"relays": [{"url": "ws://h"}], "agent": "c", "filter": {"seq": 1}}),
    ];
    for (i, case) in cases.iter().enumerate() {
        let err = AepClient::new(js_value(case)).err().unwrap_or_else(|| panic!("case {i} must be refused"));
        let code = js::get(&err, "code").as_string().unwrap();
        let message = js::get(&err, "message").as_string().unwrap();
        assert!(code == "invalid-options" || code == "invalid-filter", "case {i}: {code}");
        assert!(!message.contains("s3cret") && !message.contains("12345"), "case {i}: {message}");
    }
}

#[wasm_bindgen_test]
async fn answers_a_permission_request_through_the_relay() {
    support::answer_a_permission_request("node-answer").await;
}

#[wasm_bindgen_test]
async fn a_rejected_answer_and_an_unrouted_command_reject() {
    support::a_rejected_answer_is_a_nack_error("node-reject").await;
}

#[wasm_bindgen_test]
fn text_answers_fold_case_with_the_hosts_unicode_tables() {
    use aep_engine::control::answer::text::{match_text, TextMatch};
    use aep_engine::protocol::form::Choice;
    assert_eq!(aep_engine::text::lowercase("ÄRGER Σ"), "ärger σ");
    let options = vec![
        Choice { id: "ok".into(), label: "Übernehmen".into() },
        Choice { id: "no".into(), label: "Ablehnen".into() },
    ];
    match match_text("  übernehmen ", &options) {
        TextMatch::Option(c) => assert_eq!(c.id, "ok"),
        other => panic!("expected the Übernehmen option, got {other:?}"),
    }
    assert_eq!(match_text("ärger", &options), TextMatch::Unmatched);
}

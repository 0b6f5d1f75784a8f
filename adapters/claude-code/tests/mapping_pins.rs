//! The Claude Code mapping pins of the spec (AEP-0002 Annex A.1,
//! `conformance/fixtures/mappings/claude-code.json`) that apply to the
//! hooks this adapter maps: MCP elicitation as a form, at `redacted` and
//! at `metadata`. Read in place from `../shared/aep`.

use aep_claude_code::form::{elicitation_data, structural_prompt, ElicitationSchema};
use aep_engine::protocol::capture::{emit_at_ceiling, CaptureCeiling, Redactor};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::protocol::validate;
use aep_engine::UnixMs;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

const PINS: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/aep/conformance/fixtures/mappings/claude-code.json");

#[derive(Deserialize)]
struct Pins {
    elicitation: Pin,
}

#[derive(Deserialize)]
struct Pin {
    /// Kept as written: the form's fields follow the schema's order.
    input: Box<RawValue>,
    expected_data: Value,
    expected_data_metadata: Value,
}

#[derive(Deserialize)]
struct ElicitationInput {
    message: String,
    #[serde(rename = "requestedSchema")]
    schema: ElicitationSchema,
}

fn pin() -> (ElicitationInput, Pin) {
    let text = std::fs::read_to_string(PINS)
        .unwrap_or_else(|e| panic!("cannot read {PINS}: {e} (the AEP spec must be checked out at ../shared/aep)"));
    let pins: Pins = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{PINS}: {e}"));
    let input = serde_json::from_str(pins.elicitation.input.get()).expect("the pinned elicitation input");
    (input, pins.elicitation)
}

/// The request as the adapter emits it under `ceiling`.
fn emitted(data: Value, ceiling: &CaptureCeiling) -> aep_engine::Event {
    let who = Identity::new("aep://host/agent/claude-code", "claude-code");
    let draft = Draft::new("attention.requested").session("s-1").seq(0).capture(Capture::Full).data(data);
    let event = draft.build(&who, "01J00000000000000000000000", UnixMs(1_700_000_000_000)).unwrap();
    structural_prompt(&emit_at_ceiling(&event, ceiling, &Redactor::default()))
}

#[test]
fn an_elicitation_is_the_pinned_form_at_redacted() {
    let (input, pin) = pin();
    let data = elicitation_data(&input.message, &input.schema);
    assert_eq!(data, pin.expected_data, "the form payload the adapter builds");
    let event = emitted(data, &CaptureCeiling::default());
    assert_eq!(event.capture(), Capture::Redacted);
    assert_eq!(Value::Object(event.data().unwrap().clone()), pin.expected_data);
    let violations = validate::event(&event.to_value());
    assert!(violations.is_empty(), "{violations:?}");
}

#[test]
fn an_elicitation_at_metadata_is_the_pinned_structural_form() {
    let (input, pin) = pin();
    let event = emitted(elicitation_data(&input.message, &input.schema), &CaptureCeiling::uniform(Capture::Metadata));
    assert_eq!(event.capture(), Capture::Metadata);
    assert_eq!(Value::Object(event.data().unwrap().clone()), pin.expected_data_metadata);
    let violations = validate::event(&event.to_value());
    assert!(violations.is_empty(), "{violations:?}");
}

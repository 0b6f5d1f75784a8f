//! The Codex mapping pins of the spec (AEP-0002 Annex A.2,
//! `conformance/fixtures/mappings/codex.json`): each hook's event at the
//! adapter's default capture posture (`metadata`, `attention.*` at
//! `redacted`), the fallback for an unknown hook, and the identity rules
//! (thread → session, turn → run). Read in place from `../shared/aep`.

use aep_adapter_kit::mapping::Plan;
use aep_codex::hook::HookInput;
use aep_codex::mapping::Mapper;
use aep_engine::protocol::capture::{emit_at_ceiling, CaptureCeiling, Redactor};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::protocol::validate;
use aep_engine::UnixMs;
use serde_json::Value;

const PINS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/aep/conformance/fixtures/mappings/codex.json");

fn pins() -> Value {
    let text = std::fs::read_to_string(PINS)
        .unwrap_or_else(|e| panic!("cannot read {PINS}: {e} (the AEP spec must be checked out at ../shared/aep)"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{PINS}: {e}"))
}

/// The event `input` maps to last, as the adapter emits it by default;
/// `None` when the hook maps to nothing of its own.
fn mapped(input: &Value) -> Option<aep_engine::Event> {
    let hook: HookInput = serde_json::from_value(input.clone()).unwrap();
    let mut mapper = Mapper::new();
    let (session, draft): (String, Draft) = match mapper.plan(&hook) {
        Plan::Observe(emissions) => {
            let fresh = emissions.len();
            let last = emissions.into_iter().last()?;
            // A thread's first hook opens its session first: that is not
            // the hook's own event, unless the hook is `SessionStart`.
            if fresh == 1 && last.draft.ty() == "session.started" && hook.hook_event_name != "SessionStart" {
                return None;
            }
            (last.session.unwrap(), last.draft)
        }
        Plan::Ask { session, request, .. } => (session, request),
        Plan::Unreadable(why) => panic!("{why}"),
    };
    let who = Identity::new("aep://host/agent/codex", "codex");
    let event = draft
        .session(session)
        .seq(1)
        .capture(Capture::Full)
        .build(&who, "01J00000000000000000000000", UnixMs(1_700_000_000_000))
        .unwrap();
    Some(emit_at_ceiling(&event, &CaptureCeiling::default(), &Redactor::default()))
}

#[test]
fn every_pinned_hook_maps_to_its_pinned_event() {
    let pins = pins();
    let hooks = pins["hooks"].as_object().unwrap();
    assert_eq!(hooks.len(), 10, "the annex's ten hooks");
    let mut cases: Vec<(&str, &Value)> = hooks.iter().map(|(k, v)| (k.as_str(), v)).collect();
    cases.push(("fallback", &pins["fallback"]));
    for (name, pin) in cases {
        let event = mapped(&pin["input"]);
        let expected = &pin["expected"];
        if expected.is_null() {
            assert!(event.is_none(), "{name}: maps to nothing, got {:?}", event.map(|e| e.to_value()));
            continue;
        }
        let event = event.unwrap_or_else(|| panic!("{name}: mapped to nothing"));
        assert_eq!(event.ty(), expected["type"], "{name}: type");
        assert_eq!(Value::Object(event.data().cloned().unwrap_or_default()), expected["data"], "{name}: data");
        assert_eq!(event.subject(), expected["subject"].as_str(), "{name}: subject");
        assert_eq!(event.session(), pin["input"]["session_id"].as_str(), "{name}: the thread is the session");
        if let Some(turn) = pin["input"]["turn_id"].as_str() {
            assert_eq!(event.run(), Some(turn), "{name}: the turn is the run");
        }
        let violations = validate::event(&event.to_value());
        assert!(violations.is_empty(), "{name}: {violations:?}");
    }
}

//! The hop down-level (AEP-0001 §8.2(b), AEP-0002 §5.1 rule 3): drop every
//! field above the new level and rewrite `capture`. Never up: a hop does not
//! have the content it would need.

use serde_json::{Map, Value};

use super::exception;
use crate::protocol::event::{Capture, Event};
use crate::protocol::validate::payload::schema::{self, Schema};

/// Rewrites `event` so it honours `ceiling`.
///
/// * At or under the ceiling the event is returned unchanged, same bytes.
/// * A `full` event under a `redacted` ceiling lands on `metadata`: the
///   `redacted` provenance claim (text passed the AEP-0003 §9.4 pipeline)
///   cannot be minted by dropping fields (AEP-0001 §8.2(e)).
/// * At `none` the payload goes entirely.
/// * A type without a schema has no annotations to keep anything by, so
///   its payload goes entirely too (dropping more is always legal).
/// * Below `redacted` the `[metadata*]` fields degrade structurally:
///   prompts are synthesized, labels become ids, form answers keep only
///   structural values.
pub fn downlevel(event: &Event, ceiling: Capture) -> Event {
    let declared = event.capture();
    if ceiling >= declared {
        return event.clone();
    }
    let level = landing_level(declared, ceiling);
    let data = match (level, schema::lookup(event.ty()), event.data()) {
        (Capture::None, _, _) | (_, _, None) | (_, None, _) => None,
        (_, Some(schema), Some(data)) => {
            let mut kept = prune(schema, data, level);
            if level < Capture::Redacted {
                exception::degrade(event, &mut kept);
            }
            Some(kept)
        }
    };
    event.with_payload(data, level)
}

/// The level a mechanical hop may declare under `ceiling` (AEP-0001 §8.2(e)),
/// for an event declared above it: what [`downlevel`] rewrites `capture`
/// to. Two ceilings with the same landing level yield the same event.
pub fn landing_level(declared: Capture, ceiling: Capture) -> Capture {
    if declared == Capture::Full && ceiling == Capture::Redacted {
        Capture::Metadata
    } else {
        ceiling
    }
}

/// Keeps the members whose level is at most `level`; members the schema
/// does not name count as `metadata` (AEP-0002 §5.1 rule 4).
pub(super) fn prune(schema: &Schema, members: &Map<String, Value>, level: Capture) -> Map<String, Value> {
    let mut kept = Map::new();
    for (name, value) in members {
        let field = schema.property(name);
        if field.and_then(|f| f.capture).unwrap_or_default() > level {
            continue;
        }
        let value = match field {
            Some(field) => prune_value(field, value, level),
            None => value.clone(),
        };
        kept.insert(name.clone(), value);
    }
    kept
}

fn prune_value(schema: &Schema, value: &Value, level: Capture) -> Value {
    match value {
        Value::Object(members) => Value::Object(prune(schema, members, level)),
        Value::Array(list) => match schema.items {
            Some(items) if items.capture.unwrap_or_default() > level => Value::Array(Vec::new()),
            Some(items) => Value::Array(list.iter().map(|item| prune_value(items, item, level)).collect()),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL: &str = r#"{"aep": "0.1", "id": "T1", "type": "tool.completed", "subject": "Bash", "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a", "agent": "a", "session": "s1", "seq": 4, "capture": "full", "acmeregion": "eu-1", "data": {"tool": {"name": "Bash"}, "status": "success", "result": "verbatim", "result_redacted": "[REDACTED:secret]", "result_digest": "ab12", "acme": {"rows": 3}}}"#;

    /// The sample honestly emitted at `level`: nothing above it present.
    fn at(level: Capture) -> Event {
        let mut v: Value = serde_json::from_str(TOOL).unwrap();
        let obj = v.as_object_mut().unwrap();
        obj.insert("capture".into(), Value::from(level.as_str()));
        if level == Capture::None {
            obj.remove("data");
        } else if let Some(Value::Object(data)) = obj.get_mut("data") {
            if level < Capture::Full {
                data.remove("result");
            }
            if level < Capture::Redacted {
                data.remove("result_redacted");
            }
        }
        Event::from_value(v).unwrap()
    }

    #[test]
    fn never_up_levels() {
        for declared in Capture::ALL {
            for ceiling in Capture::ALL {
                let input = at(declared);
                let out = downlevel(&input, ceiling);
                assert!(out.capture() <= declared, "{declared:?} under {ceiling:?} rose to {:?}", out.capture());
                assert!(out.capture() <= ceiling, "{declared:?} under {ceiling:?} landed on {:?}", out.capture());
                if ceiling >= declared {
                    assert_eq!(out.raw(), input.raw(), "{declared:?} under {ceiling:?} was rewritten");
                }
            }
        }
    }

    #[test]
    fn unchanged_events_keep_their_exact_bytes() {
        let spaced = TOOL.replace(", \"", ",   \"");
        let event = Event::parse(&spaced).unwrap();
        assert_eq!(downlevel(&event, Capture::Full).raw(), spaced);
        let unmarked = Event::parse(&spaced.replace(r#""capture": "full","#, "")).unwrap();
        assert_eq!(unmarked.capture_declared(), None);
        assert_eq!(downlevel(&unmarked, Capture::Metadata).raw(), unmarked.raw());
    }

    #[test]
    fn output_reparses_as_a_valid_event() {
        for declared in Capture::ALL {
            for ceiling in Capture::ALL {
                let out = downlevel(&at(declared), ceiling);
                let again = Event::parse(out.raw()).unwrap_or_else(|e| panic!("{declared:?}/{ceiling:?}: {e}"));
                assert_eq!(again.capture(), out.capture());
                assert_eq!(again.check_payload(), vec![], "{declared:?}/{ceiling:?}: {}", out.raw());
            }
        }
    }

    #[test]
    fn full_under_redacted_lands_on_metadata() {
        let out = downlevel(&Event::parse(TOOL).unwrap(), Capture::Redacted);
        assert_eq!(out.capture(), Capture::Metadata);
        let data = out.data().unwrap();
        assert!(data.get("result").is_none());
        assert!(data.get("result_redacted").is_none());
        assert_eq!(data.get("result_digest"), Some(&Value::from("ab12")));
        // Unnamed vendor members default to metadata and stay.
        assert_eq!(data.get("acme"), Some(&serde_json::json!({"rows": 3})));
        // Everything outside the payload is kept.
        assert_eq!(out.extensions().get("acmeregion"), Some(&Value::from("eu-1")));
        assert_eq!((out.id(), out.seq(), out.subject()), ("T1", Some(4), Some("Bash")));
    }

    #[test]
    fn none_and_unknown_types_drop_the_payload() {
        let out = downlevel(&Event::parse(TOOL).unwrap(), Capture::None);
        assert_eq!(out.capture(), Capture::None);
        assert!(out.data().is_none());
        let vendor = Event::parse(&TOOL.replace("tool.completed", "x.acme.tool.ran")).unwrap();
        let out = downlevel(&vendor, Capture::Metadata);
        assert_eq!(out.capture(), Capture::Metadata);
        assert!(out.data().is_none());
    }
}

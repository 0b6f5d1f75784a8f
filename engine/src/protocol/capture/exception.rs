//! The `[metadata*]` fields (AEP-0002 §5.3, AEP-0006): annotated `metadata`
//! by exception, because at `metadata` they carry structural stand-ins
//! while at `redacted`+ they may carry real text. A hop lowering an event
//! below `redacted` has no source context to tell which it holds, so it
//! replaces them with stand-ins built from structure alone.

use serde_json::{Map, Value};

use crate::protocol::event::Event;
use crate::protocol::vocabulary::EventType;

/// How a `[metadata*]` field degrades below `redacted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Degrade {
    /// The prompt is synthesized from the envelope (AEP-0003 §9 rule 2).
    SynthesizedPrompt,
    /// A label becomes its sibling `id`, a structural placeholder.
    IdAsLabel,
    /// A form answer keeps only booleans and numbers: without the request's
    /// field specs a string may be free text, never provably a choice id.
    StructuralValues,
}

/// One `[metadata*]` field: its type, its path from the payload root
/// (arrays looked through) and how it degrades.
struct Exception {
    ty: EventType,
    path: &'static [&'static str],
    degrade: Degrade,
}

const EXCEPTIONS: [Exception; 6] = [
    Exception { ty: EventType::AttentionRequested, path: &["prompt"], degrade: Degrade::SynthesizedPrompt },
    Exception { ty: EventType::AttentionRequested, path: &["options", "label"], degrade: Degrade::IdAsLabel },
    Exception { ty: EventType::AttentionRequested, path: &["fields", "label"], degrade: Degrade::IdAsLabel },
    Exception { ty: EventType::AttentionRequested, path: &["fields", "choices", "label"], degrade: Degrade::IdAsLabel },
    Exception { ty: EventType::AttentionAnswered, path: &["answer", "values"], degrade: Degrade::StructuralValues },
    Exception {
        ty: EventType::ControlAttentionRespond,
        path: &["answer", "values"],
        degrade: Degrade::StructuralValues,
    },
];

/// The prompt an `attention.requested` carries at `metadata`:
/// `"{agent} requests {kind}: {subject}"` (AEP-0003 §9 rule 2), without the
/// `: {subject}` part when there is no subject.
pub fn synthesized_prompt(agent: &str, kind: &str, subject: Option<&str>) -> String {
    match subject {
        Some(subject) => format!("{agent} requests {kind}: {subject}"),
        None => format!("{agent} requests {kind}"),
    }
}

/// Whether the field at `path` of a `ty` payload is a `[metadata*]` field:
/// at `redacted` and above it may hold real text, which must then pass the
/// redaction pipeline like any `redacted` field.
#[cfg(feature = "redact")]
pub(super) fn is_exception(ty: &str, path: &[&str]) -> bool {
    let ty = EventType::parse(ty);
    EXCEPTIONS.iter().any(|x| Some(x.ty) == ty && x.path == path)
}

/// Degrades every `[metadata*]` field of `data` (the payload of `event`).
pub(super) fn degrade(event: &Event, data: &mut Map<String, Value>) {
    let kind = data.get("kind").and_then(Value::as_str).unwrap_or("attention").to_owned();
    let prompt = synthesized_prompt(event.agent(), &kind, event.subject());
    let ty = event.kind().core();
    for exception in EXCEPTIONS.iter().filter(|x| Some(x.ty) == ty) {
        let Some((field, parents)) = exception.path.split_last() else { continue };
        for_each_parent(data, parents, &mut |parent| match exception.degrade {
            Degrade::SynthesizedPrompt => {
                if parent.contains_key(*field) {
                    parent.insert((*field).to_owned(), Value::String(prompt.clone()));
                }
            }
            Degrade::IdAsLabel => {
                if parent.contains_key(*field) {
                    match parent.get("id").cloned() {
                        Some(id @ Value::String(_)) => {
                            parent.insert((*field).to_owned(), id);
                        }
                        _ => {
                            parent.remove(*field);
                        }
                    }
                }
            }
            Degrade::StructuralValues => match parent.get_mut(*field) {
                Some(Value::Object(values)) => values.retain(|_, v| v.is_boolean() || v.is_number()),
                Some(_) => {
                    parent.remove(*field);
                }
                None => {}
            },
        });
    }
}

/// Calls `f` on every object reached by `path`, looking through arrays.
fn for_each_parent(map: &mut Map<String, Value>, path: &[&str], f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Some((first, rest)) = path.split_first() else {
        f(map);
        return;
    };
    match map.get_mut(*first) {
        Some(Value::Object(inner)) => for_each_parent(inner, rest, f),
        Some(Value::Array(list)) => {
            for item in list {
                if let Value::Object(inner) = item {
                    for_each_parent(inner, rest, f);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::capture::{downlevel, field_level};
    use crate::protocol::event::Capture;
    use serde_json::json;

    #[test]
    fn every_exception_is_a_metadata_field_of_its_schema() {
        for x in &EXCEPTIONS {
            assert_eq!(field_level(x.ty.as_str(), x.path), Some(Capture::Metadata), "{} {:?}", x.ty, x.path);
        }
    }

    fn requested(subject: Option<&str>, data: Value) -> Event {
        let mut v = json!({"aep": "0.1", "id": "R1", "type": "attention.requested", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a", "agent": "bot", "session": "s1", "seq": 1, "capture": "redacted", "data": data});
        if let Some(s) = subject {
            v["subject"] = Value::from(s);
        }
        Event::from_value(v).unwrap()
    }

    #[test]
    fn prompt_without_subject_and_labels_without_ids() {
        let e = requested(
            None,
            json!({"kind": "input", "prompt": "Which secret?", "options": [{"label": "no id"}, {"id": "b", "label": "B"}]}),
        );
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(
            Value::Object(out.data().unwrap().clone()),
            json!({"kind": "input", "prompt": "bot requests input", "options": [{}, {"id": "b", "label": "b"}]})
        );
    }

    #[test]
    fn values_that_are_not_an_object_are_dropped() {
        let e = Event::from_value(
            json!({"aep": "0.1", "id": "A1", "type": "attention.answered", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a", "agent": "a", "session": "s1", "seq": 2, "capture": "redacted",
            "data": {"answer": {"option": "1", "values": "free text"}}}),
        )
        .unwrap();
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(Value::Object(out.data().unwrap().clone()), json!({"answer": {"option": "1"}}));
    }

    #[test]
    fn other_types_are_left_alone() {
        let e = Event::from_value(
            json!({"aep": "0.1", "id": "S1", "type": "session.started", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a", "agent": "a", "session": "s1", "seq": 0, "capture": "redacted",
            "data": {"client": {"name": "cli"}, "prompt": "vendor member"}}),
        )
        .unwrap();
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(out.data_field("prompt"), Some(&Value::from("vendor member")));
    }
}

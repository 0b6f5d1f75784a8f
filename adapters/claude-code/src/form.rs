//! MCP elicitation as an AEP-0006 form (AEP-0002 Annex A.1, pinned in the
//! spec's `mappings/claude-code.json`): field ids are the schema's property
//! keys and choice ids its enum values, so accepted values go back to the
//! MCP server as they are; enums are closed (no `other`).

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use aep_engine::protocol::attention::AttentionKind;
use aep_engine::protocol::event::{Capture, Event};
use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::EventType;

use crate::hook::HookInput;

/// The restricted flat schema an MCP server asks with.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ElicitationSchema {
    #[serde(default)]
    pub properties: IndexMap<String, Property>,
    #[serde(default)]
    pub required: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Property {
    #[serde(rename = "type", default)]
    pub ty: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(rename = "enum", default)]
    pub choices: Option<Vec<Value>>,
    #[serde(rename = "enumNames", default)]
    pub choice_names: Option<Vec<String>>,
}

/// The `attention.requested` payload for an elicitation (at `redacted`+;
/// the capture ceiling degrades labels below that).
pub fn elicitation_data(message: &str, schema: &ElicitationSchema) -> Value {
    let fields: Vec<Value> = schema
        .properties
        .iter()
        .map(|(key, p)| {
            let label = p.title.clone().unwrap_or_else(|| key.clone());
            let required = schema.required.iter().any(|r| r == key);
            match &p.choices {
                Some(values) => {
                    let choices: Vec<Value> = values
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let id = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                            let label =
                                p.choice_names.as_ref().and_then(|n| n.get(i)).cloned().unwrap_or_else(|| id.clone());
                            json!({ "id": id, "label": label })
                        })
                        .collect();
                    json!({ "id": key, "type": "select", "label": label, "required": required, "choices": choices })
                }
                None => {
                    let ty = match p.ty.as_deref() {
                        Some("integer" | "number") => "number",
                        Some("boolean") => "boolean",
                        _ => "string",
                    };
                    json!({ "id": key, "type": ty, "label": label, "required": required })
                }
            }
        })
        .collect();
    json!({ "kind": "form", "prompt": message, "fields": fields, "respond_via": ["control"] })
}

/// The request an `Elicitation` hook raises.
pub fn elicitation_request(hook: &HookInput) -> Result<Value, String> {
    let schema = hook.requested_schema.as_ref().ok_or("the elicitation has no requested_schema")?;
    let message = hook.text("message").unwrap_or("an MCP server asks for input");
    Ok(elicitation_data(message, schema))
}

/// The hook's answer for accepted form values.
pub fn elicitation_output(values: Option<&Map<String, Value>>) -> Value {
    match values {
        Some(values) => {
            json!({ "hookSpecificOutput": { "hookEventName": "Elicitation", "action": "accept", "content": values } })
        }
        None => json!({}),
    }
}

/// A form's prompt below `redacted`, from its structure alone (the hop
/// rule would say only "requests form"): the pinned
/// `{agent} requests input ({n} fields)`.
pub fn structural_prompt(event: &Event) -> Event {
    let Some(data) = event.data() else { return event.clone() };
    let is_form = data.get("kind").and_then(Value::as_str).map(AttentionKind::parse) == Some(AttentionKind::Form);
    let Some(fields) = data.get("fields").and_then(Value::as_array) else { return event.clone() };
    if event.kind() != EventKind::Core(EventType::AttentionRequested)
        || !is_form
        || event.capture() >= Capture::Redacted
    {
        return event.clone();
    }
    let mut data = data.clone();
    data.insert("prompt".into(), format!("{} requests input ({} fields)", event.agent(), fields.len()).into());
    event.with_payload(Some(data), event.capture())
}

//! `roster` (AEP-0003 §4.1): one entry per live claim.

use serde_json::{Map, Value};

use super::hello::ControlCapability;
use super::members::{opt_string, string_list, strings};

/// One live (connection, claimed session) pair in a roster (§4.1 rule 4).
#[derive(Clone, Debug, PartialEq)]
pub struct RosterEntry {
    pub session: String,
    pub agent: Option<String>,
    pub instance: Option<String>,
    /// The claimant's declared `capabilities.control`, as declared.
    pub control: Option<ControlCapability>,
    pub emits: Option<Vec<String>>,
}

impl RosterEntry {
    pub(super) fn decode(v: &Value) -> Option<RosterEntry> {
        let o = v.as_object()?;
        Some(RosterEntry {
            session: o.get("session")?.as_str()?.to_owned(),
            agent: opt_string(o, "agent"),
            instance: opt_string(o, "instance"),
            control: o.get("control").and_then(Value::as_object).cloned().map(ControlCapability::from_map),
            emits: o.get("emits").and_then(string_list),
        })
    }

    pub(super) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("session".into(), self.session.as_str().into());
        if let Some(a) = &self.agent {
            m.insert("agent".into(), a.as_str().into());
        }
        if let Some(i) = &self.instance {
            m.insert("instance".into(), i.as_str().into());
        }
        if let Some(c) = &self.control {
            m.insert("control".into(), Value::Object(c.to_map()));
        }
        if let Some(e) = &self.emits {
            m.insert("emits".into(), strings(e));
        }
        Value::Object(m)
    }
}

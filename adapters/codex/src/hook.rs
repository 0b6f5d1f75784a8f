//! What Codex sends a command hook on stdin. Only what the mapping reads
//! is named; everything else is kept in `rest`.

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Clone, Debug, Deserialize)]
pub struct HookInput {
    pub hook_event_name: String,
    /// The thread: an AEP session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The turn: an AEP run.
    #[serde(default)]
    pub turn_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// On the tool hooks; `PermissionRequest` has none.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub tool_response: Option<Value>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl HookInput {
    /// A string member not named above (`source`, `agent_id`, ...).
    pub fn text(&self, name: &str) -> Option<&str> {
        self.rest.get(name).and_then(Value::as_str)
    }
}

//! What Claude Code sends a hook (its JSON input) and what a hook answers.

use serde::Deserialize;
use serde_json::{Map, Value};

pub use aep_adapter_kit::decision::Decision;

/// One hook firing, as Claude Code posts it. Only what the mapping reads
/// is named; everything else is kept in `rest`.
#[derive(Clone, Debug, Deserialize)]
pub struct HookInput {
    pub hook_event_name: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// One per prompt: the turn, which is an AEP run.
    #[serde(default)]
    pub prompt_id: Option<String>,
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
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// What an MCP server asks with (`Elicitation`), read in its own
    /// order: the form's fields follow it.
    #[serde(default, alias = "requestedSchema")]
    pub requested_schema: Option<crate::form::ElicitationSchema>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl HookInput {
    pub fn parse(bytes: &[u8]) -> Result<HookInput, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// A string member not named above (`message`, `reason`, ...).
    pub fn text(&self, name: &str) -> Option<&str> {
        self.rest.get(name).and_then(Value::as_str)
    }
}

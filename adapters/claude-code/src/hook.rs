//! What Claude Code sends a hook (its JSON input) and what a hook answers.

use serde::Deserialize;
use serde_json::{json, Map, Value};

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

/// What the adapter tells Claude Code about a held permission request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Not run; the model reads `message` as the tool's result.
    Deny { message: String },
    /// No decision: Claude Code falls back to its own prompt (in `-p`
    /// mode, that denies).
    Undecided,
}

impl Decision {
    /// The hook's JSON answer to a `PermissionRequest`.
    pub fn to_hook_output(&self) -> Value {
        let decision = match self {
            Decision::Allow => json!({ "behavior": "allow" }),
            Decision::Deny { message } => json!({ "behavior": "deny", "message": message }),
            Decision::Undecided => return json!({}),
        };
        json!({ "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision } })
    }
}

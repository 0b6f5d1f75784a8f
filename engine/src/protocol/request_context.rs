//! What a request is about beyond its prompt, in one shape every adapter
//! writes and every console reads: `data.context` of an
//! `attention.requested` (AEP-0002 §5: captured at `full` only). The
//! agent's own explanation, a shell command whole, the files a tool would
//! change. An agent that sends none of it is still shown by its prompt.
//!
//! Beside it, the reason a request is `destructive` travels as
//! `data.destructive_because`: a few words from the adapter's own closed
//! list (never agent text), so it is kept at every capture level, as
//! `destructive` itself is.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The payload member holding the context.
pub const CONTEXT: &str = "context";
/// The payload member saying why a request is destructive.
pub const DESTRUCTIVE_BECAUSE: &str = "destructive_because";

/// What a request is about. Every text in it is agent-authored: shown as
/// text, never as markup.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestContext {
    /// The tool asked about (`Bash`, `Edit`, `apply_patch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Why, in the agent's own words (Claude Code's `description`, Codex's
    /// justification).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The shell command, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The files the tool would change, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<FileChange>,
}

/// One file a tool would change. An edit names `old` and `new`; a whole
/// file written names `new` only; a patch names its hunks in `diff`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    /// The text replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text put in its place, or the file's whole new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// Patch hunks: `@@` headers (with line numbers when the agent gives
    /// them) and lines marked ` `, `-` or `+`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The file is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Where the file is moved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
}

impl RequestContext {
    /// The context of a request's payload: `Ok(None)` when it sends none,
    /// an error naming what did not fit when it is not in this shape.
    pub fn of(data: &Map<String, Value>) -> Result<Option<RequestContext>, String> {
        match data.get(CONTEXT) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| e.to_string()),
        }
    }

    /// Nothing a console shows beyond the prompt.
    pub fn is_empty(&self) -> bool {
        self.description.is_none() && self.command.is_none() && self.changes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn reads_a_command_and_changes_and_keeps_other_members_aside() {
        let c = RequestContext::of(&data(json!({"context": {
            "tool": "Edit", "tool_input": {"x": 1}, "cwd": "/w",
            "changes": [{"path": "a.rs", "old": "x", "new": "y"}, {"path": "b.rs", "deleted": true}]
        }})))
        .unwrap()
        .unwrap();
        assert_eq!(c.tool.as_deref(), Some("Edit"));
        assert_eq!(c.changes.len(), 2);
        assert!(c.changes[1].deleted && c.changes[1].new.is_none());
        assert!(!c.is_empty());
    }

    #[test]
    fn no_context_is_none_and_a_misshapen_one_says_why() {
        assert_eq!(RequestContext::of(&data(json!({"prompt": "p"}))), Ok(None));
        let err = RequestContext::of(&data(json!({"context": {"changes": [{"old": "x"}]}}))).unwrap_err();
        assert!(err.contains("path"), "{err}");
    }

    #[test]
    fn writes_only_what_it_holds() {
        let c = RequestContext { command: Some("ls".into()), ..Default::default() };
        assert_eq!(serde_json::to_value(&c).unwrap(), json!({"command": "ls"}));
    }
}

//! What a held permission hook is told. Claude Code and Codex read the
//! same `hookSpecificOutput` for a `PermissionRequest`.

use aep_engine::control::answer::Answer;
use serde_json::{json, Value};

/// What the adapter tells the agent about a held permission request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Allowed, and the agent keeps `update` (one of Claude Code's
    /// permission updates: a rule, a mode, a directory) so that it does not
    /// ask again.
    AllowAndRemember {
        update: Value,
    },
    /// Not run; the model reads `message` as the tool's result.
    Deny {
        message: String,
    },
    /// No decision: the agent falls back to its own way of deciding.
    Undecided,
}

impl Decision {
    /// The decision an applied answer makes: the `allow` option allows;
    /// anything else denies, with the person's words (AEP-0008's refusing
    /// text) as what the model reads, or a plain statement of who refused.
    pub fn of(answer: &Answer, by: &str, allow: &str) -> Decision {
        match answer {
            Answer::Option { id, .. } if id == allow => Decision::Allow,
            Answer::Option { text: Some(text), .. } | Answer::Text { text } if !text.trim().is_empty() => {
                Decision::Deny { message: text.clone() }
            }
            _ => Decision::Deny { message: format!("Denied by {by} from an AEP console.") },
        }
    }

    /// Whether `answer` refuses what the `allow` option would allow.
    pub fn refuses(answer: &Answer, allow: &str) -> bool {
        Decision::of(answer, "", allow) != Decision::Allow
    }

    /// The hook's JSON answer to a `PermissionRequest`.
    pub fn to_hook_output(&self) -> Value {
        let decision = match self {
            Decision::Allow => json!({ "behavior": "allow" }),
            Decision::AllowAndRemember { update } => json!({ "behavior": "allow", "updatedPermissions": [update] }),
            Decision::Deny { message } => json!({ "behavior": "deny", "message": message }),
            Decision::Undecided => return json!({}),
        };
        json!({ "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision } })
    }
}

//! One command as the audit indexes it: who, where, what was asked and
//! answered, how it was acknowledged and what came of it, and which records
//! hold its events. Rewritten as its ack and outcomes arrive.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// When the relay forwarded (or refused) it, ms since the epoch.
    pub at: u64,
    /// Its command record.
    pub seq: u64,
    pub id: String,
    /// Who commanded: the principal of the sending connection.
    pub principal: String,
    /// The agent whose session it was sent to.
    pub agent: String,
    pub session: String,
    /// The session's label (`session.started`).
    pub label: String,
    /// The command's type, e.g. `control.attention.respond`.
    pub verb: String,
    /// The request's prompt, for an answer.
    pub prompt: String,
    /// The answer given (option, text or values).
    pub answer: String,
    /// `accepted`, `rejected`, `refused:<code>`, or empty while unacknowledged.
    pub ack: String,
    pub ack_at: Option<u64>,
    /// The type of the latest outcome event, e.g. `attention.resolved`.
    pub outcome: String,
    pub outcome_at: Option<u64>,
    /// Every record of this command, in chain order.
    pub records: Vec<u64>,
}

impl Summary {
    /// What became of it: the latest outcome, else the ack, else `pending`.
    pub fn result(&self) -> &str {
        if !self.outcome.is_empty() {
            &self.outcome
        } else if !self.ack.is_empty() {
            &self.ack
        } else {
            "pending"
        }
    }

    /// Whether `wanted` names its result, its ack or its outcome (`refused`
    /// matches every relay refusal).
    pub fn has_outcome(&self, wanted: &str) -> bool {
        self.result() == wanted
            || self.ack == wanted
            || self.outcome == wanted
            || (wanted == "refused" && self.ack.starts_with("refused"))
    }

    /// The row the CSV and the console show, as an object.
    pub fn row(&self) -> serde_json::Value {
        serde_json::json!({
            "at": self.at,
            "who": self.principal,
            "agent": self.agent,
            "session": self.session,
            "label": self.label,
            "verb": self.verb,
            "command": self.id,
            "prompt": self.prompt,
            "answer": self.answer,
            "ack": self.ack,
            "outcome": self.outcome,
            "latency_ms": self.latency(),
            "result": self.result(),
        })
    }

    /// From the command to its latest outcome (or its ack), in ms.
    pub fn latency(&self) -> Option<u64> {
        self.outcome_at.or(self.ack_at).map(|t| t.saturating_sub(self.at))
    }
}

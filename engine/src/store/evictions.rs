//! What the store's bounds made it let go of.
//!
//! A bounded fold is still a fold of part of the stream; callers that
//! present the result as the state of the whole stream must be able to
//! say what is missing, so every bound counts what it drops.

use serde::Serialize;

/// Counts of what was dropped to stay within the [`StoreConfig`](super::StoreConfig)
/// bounds. All zero means the store holds everything it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evictions {
    /// Sessions dropped whole (`max_sessions`, `max_held`).
    pub sessions: u64,
    /// Timeline events no longer held: dropped from a full lane
    /// (`max_timeline_per_session`) or with their session.
    pub events: u64,
    /// Runs forgotten (`max_runs_per_session`, or with their session).
    pub runs: u64,
    /// Attention cards dropped (`max_cards_per_session`, or with their session).
    pub cards: u64,
    /// Command chains forgotten (`max_commands_per_session`, or with their session).
    pub commands: u64,
    /// Emitters whose agent-scoped state was forgotten (`max_agents`).
    pub agents: u64,
    /// Agent-scoped events not kept (`max_agent_events`, or with their emitter).
    pub agent_events: u64,
    /// Foreign-emitter events dropped while waiting for their session (`max_unattached`).
    pub unattached: u64,
    /// `(source, id)` keys forgotten by the dedupe memory (`max_seen_ids`):
    /// a redelivery older than the memory folds again.
    pub seen_ids: u64,
    /// Changes dropped from a full queue (`max_changes`).
    pub changes: u64,
    /// Violations counted but no longer listed (`max_violations`).
    pub violations: u64,
}

impl Evictions {
    /// Whether any bound dropped anything.
    pub fn any(&self) -> bool {
        *self != Evictions::default()
    }
}

impl std::ops::AddAssign for Evictions {
    fn add_assign(&mut self, o: Evictions) {
        self.sessions += o.sessions;
        self.events += o.events;
        self.runs += o.runs;
        self.cards += o.cards;
        self.commands += o.commands;
        self.agents += o.agents;
        self.agent_events += o.agent_events;
        self.unattached += o.unattached;
        self.seen_ids += o.seen_ids;
        self.changes += o.changes;
        self.violations += o.violations;
    }
}

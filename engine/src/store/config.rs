//! The store's bounds and its reading of arrival order.
//!
//! Input is unbounded (a relay can stream forever), so every collection
//! the store keeps has a named bound here. Defaults suit a browser tab.

/// How the stream reaches the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Arrival {
    /// Replays, resumes and several relays may deliver a session's events
    /// late: a new position below the high-water mark is backfill, ordered
    /// in and never a fault (AEP-0001 §7.2, consumer side).
    #[default]
    MayBackfill,
    /// The stream is one emitter's output in emission order (a JSONL log):
    /// a new position at or below the high-water mark, or an older epoch,
    /// is the emitter's fault (AEP-0001 §7.2, emitter side).
    EmissionOrder,
}

/// Whether the store queues [`Change`](super::Change)s for a driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChangeFeed {
    /// Queued for [`Store::poll_change`](super::Store::poll_change).
    #[default]
    Queued,
    /// Nobody polls (a one-shot fold, `projectState`): changes are not
    /// built at all. Violations are still counted and listed.
    Off,
}

/// Bounds and mode of a [`Store`](super::Store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    pub arrival: Arrival,
    /// `(source, id)` keys remembered for dedupe; the oldest are forgotten.
    pub max_seen_ids: usize,
    /// Sessions kept; the least recently updated is dropped, preferring
    /// one with no card waiting on a person.
    pub max_sessions: usize,
    /// Events, runs, cards and command chains held by all sessions
    /// together. Past it, sessions are dropped whole as for
    /// `max_sessions`: memory is bounded by what is held, so many small
    /// sessions (a busy shared relay) fit where a few large ones would.
    pub max_held: usize,
    /// Events kept per session lane; the oldest in lane order are dropped.
    pub max_timeline_per_session: usize,
    /// Runs remembered per session; ended runs are forgotten first.
    pub max_runs_per_session: usize,
    /// Attention cards per session; closed cards are dropped first.
    pub max_cards_per_session: usize,
    /// Command chains per session; settled chains are dropped first.
    pub max_commands_per_session: usize,
    /// Emitters whose agent-scoped events are kept.
    pub max_agents: usize,
    /// Agent-scoped events kept per emitter.
    pub max_agent_events: usize,
    /// Foreign-emitter events waiting for the session they address.
    pub max_unattached: usize,
    /// Undrained changes queued before the oldest are dropped.
    pub max_changes: usize,
    /// Most recent violations kept for [`Store::violations`](super::Store::violations).
    pub max_violations: usize,
    pub changes: ChangeFeed,
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig {
            arrival: Arrival::MayBackfill,
            max_seen_ids: 65_536,
            max_sessions: 4_096,
            max_held: 131_072,
            max_timeline_per_session: 256,
            max_runs_per_session: 256,
            max_cards_per_session: 64,
            max_commands_per_session: 128,
            max_agents: 256,
            max_agent_events: 32,
            max_unattached: 256,
            max_changes: 4_096,
            max_violations: 256,
            changes: ChangeFeed::Queued,
        }
    }
}

impl StoreConfig {
    /// No bounds at all: a fold of everything it is given, for a finite
    /// stream whose state must be complete (`projectState`). Memory grows
    /// with the stream.
    pub fn unbounded() -> StoreConfig {
        StoreConfig {
            arrival: Arrival::MayBackfill,
            max_seen_ids: usize::MAX,
            max_sessions: usize::MAX,
            max_held: usize::MAX,
            max_timeline_per_session: usize::MAX,
            max_runs_per_session: usize::MAX,
            max_cards_per_session: usize::MAX,
            max_commands_per_session: usize::MAX,
            max_agents: usize::MAX,
            max_agent_events: usize::MAX,
            max_unattached: usize::MAX,
            max_changes: usize::MAX,
            max_violations: usize::MAX,
            changes: ChangeFeed::Queued,
        }
    }

    /// For checking one emitter's log offline: emission order, and bounds
    /// wide enough that rules spanning a whole log are still checked.
    pub fn validator() -> StoreConfig {
        StoreConfig {
            arrival: Arrival::EmissionOrder,
            max_seen_ids: 1 << 20,
            max_sessions: 1 << 16,
            max_held: usize::MAX,
            max_timeline_per_session: 1 << 12,
            max_runs_per_session: 1 << 16,
            max_cards_per_session: 1 << 12,
            max_commands_per_session: 1 << 12,
            max_agents: 1 << 12,
            max_agent_events: 0,
            max_unattached: 1 << 12,
            max_changes: 1 << 16,
            max_violations: 0,
            changes: ChangeFeed::Queued,
        }
    }
}

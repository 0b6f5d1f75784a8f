//! Introspection: what the relay holds right now and what it has done.
//! Read by `/healthz` (when authorized), tests and operators.

use std::sync::atomic::Ordering;

use serde::Serialize;

use super::{Binding, Switchboard};
use crate::sync::lock;

/// A snapshot of the relay's state and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Sessions with a replay buffer.
    pub sessions: usize,
    /// Events held across all replay buffers.
    pub buffered_events: usize,
    /// What those events cost in memory (bytes and keys).
    pub buffered_bytes: usize,
    /// Evicted sessions remembered for their high-water position.
    pub tombstones: usize,
    /// Live SSE streams.
    pub streams: usize,
    /// Live WebSocket connections past `hello`.
    pub sockets: usize,
    /// Subscriptions across all connections (an SSE stream is one).
    pub subscriptions: usize,
    /// Live (connection, session) claims.
    pub claims: usize,
    /// Counters since start.
    pub counters: Counters,
}

/// Monotonic counters since start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Events accepted on any binding (commands excluded).
    pub events_received: u64,
    /// Events admitted to a replay buffer.
    pub events_stored: u64,
    /// Events refused for who sent them or for a position already held.
    pub events_refused: u64,
    /// Events whose `(source, id)` was already buffered (still fanned out).
    pub duplicates: u64,
    /// Commands forwarded to a target.
    pub commands_routed: u64,
    /// Commands refused with an `error` frame.
    pub commands_refused: u64,
    /// `debug`/`info` events dropped toward slow consumers.
    pub dropped_for_backpressure: u64,
    /// Consumers disconnected because they fell behind on `notice`+.
    pub disconnected_for_backpressure: u64,
}

impl Switchboard {
    pub fn stats(&self) -> Stats {
        let state = lock(&self.state);
        let count = |b: Binding| state.conns.values().filter(|c| c.binding == b).count();
        Stats {
            sessions: state.store.session_count(),
            buffered_events: state.store.buffered(),
            buffered_bytes: state.store.buffered_bytes(),
            tombstones: state.store.tombstone_count(),
            streams: count(Binding::Stream),
            sockets: count(Binding::Socket),
            subscriptions: self.subscriptions.load(Ordering::Relaxed),
            claims: state.claims.len(),
            counters: state.counters.clone(),
        }
    }

    /// Events held for one session.
    pub fn session_len(&self, session: &str) -> usize {
        lock(&self.state).store.session_len(session)
    }
}

//! The connection registry: sockets join it after `hello`, and leave it
//! when they close, are revoked or fall too far behind.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::fanout::Tally;
use super::{Binding, Conn, ConnId, Fanout, Listener, Peer, State, Switchboard};
use crate::auth::Access;
use crate::outbox::{CloseReason, Outbox, Outgoing};
use crate::sync::lock;

impl Switchboard {
    /// Registers a socket whose `hello` was accepted; the reply goes out
    /// first, before anything else can be queued toward it.
    pub fn attach_socket(&self, access: Access, peer: Peer, hello_reply: String) -> (ConnId, Arc<Outbox>) {
        let outbox = self.outbox();
        outbox.push(Outgoing::Frame(hello_reply));
        let mut fanout = lock(&self.fanout);
        let conn = Conn { outbox: outbox.clone(), binding: Binding::Socket, access, peer: Some(peer) };
        let id = lock(&self.state).add_conn(conn);
        fanout.listeners.insert(id, Listener { outbox: outbox.clone(), subs: Vec::new() });
        (id, outbox)
    }

    /// Forgets a connection, its subscriptions and its claims.
    pub fn detach(&self, conn: ConnId) {
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        self.forget(&mut fanout, &mut state, conn);
    }

    /// Closes the sockets and streams of principals no longer configured
    /// (a credentials file reloaded without them).
    pub fn close_revoked(&self, still_held: impl Fn(&str) -> bool) {
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        let revoked: Vec<ConnId> = state
            .conns
            .iter()
            .filter(|(_, c)| c.access.is_authenticated() && !still_held(&c.access.principal().name))
            .map(|(id, _)| *id)
            .collect();
        for conn in revoked {
            if let Some(c) = state.conns.get(&conn) {
                c.outbox.close(CloseReason::Revoked);
            }
            self.forget(&mut fanout, &mut state, conn);
        }
    }

    /// Books a fan-out's backpressure outcome. A consumer that overflowed
    /// leaves the registry at once (its writer is told to close), so it
    /// costs no more matching and no longer counts as connected.
    pub(super) fn settle(&self, fanout: &mut Fanout, tally: Tally) {
        if tally.dropped == 0 && tally.overflowed.is_empty() {
            return;
        }
        let mut state = lock(&self.state);
        state.counters.dropped_for_backpressure += tally.dropped;
        state.counters.disconnected_for_backpressure += tally.overflowed.len() as u64;
        for conn in tally.overflowed {
            self.forget(fanout, &mut state, conn);
        }
    }

    fn forget(&self, fanout: &mut Fanout, state: &mut State, conn: ConnId) {
        if let Some(listener) = fanout.listeners.remove(&conn) {
            self.subscriptions.fetch_sub(listener.subs.len(), Ordering::Relaxed);
        }
        if let Some(c) = state.conns.remove(&conn) {
            c.outbox.close(CloseReason::PeerGone);
        }
        let released = state.claims.release(conn);
        if !released.is_empty() {
            self.routing.released(conn, &released);
        }
    }
}

//! Session claims: which live connections emitted sequenced events in which
//! session. A command is routed to the one claimant of its session
//! (AEP-0004 §4.5); the roster lists every claim (AEP-0003 §4.1).
//!
//! Claims live exactly as long as the connection: a reconnecting target
//! must not collide with its own ghost and turn routing `ambiguous`.

use std::collections::HashMap;
use std::sync::Arc;

use super::ConnId;
use crate::recency::Recency;

/// What one [`Claims::claim`] changed.
#[derive(Default)]
pub struct Claimed {
    /// The session newly claimed.
    pub new: Option<Arc<str>>,
    /// A session the connection no longer claims.
    pub released: Option<Arc<str>>,
}

pub struct Claims {
    by_session: HashMap<Arc<str>, Vec<ConnId>>,
    by_conn: HashMap<ConnId, Recency<Arc<str>>>,
    /// Sessions one connection may claim at once; beyond it the session it
    /// wrote least recently is released.
    per_conn: usize,
}

impl Claims {
    pub fn new(per_conn: usize) -> Claims {
        Claims { by_session: HashMap::new(), by_conn: HashMap::new(), per_conn: per_conn.max(1) }
    }

    /// Records that `conn` emitted a sequenced event in `session`. Says
    /// what changed: whether the claim is new, and the session released to
    /// keep the connection within its bound.
    pub fn claim(&mut self, conn: ConnId, session: &str) -> Claimed {
        let claimed = self.by_conn.entry(conn).or_default();
        let key: Arc<str> = match self.by_session.get_key_value(session) {
            Some((k, holders)) if holders.contains(&conn) => {
                let k = k.clone();
                claimed.touch(&k);
                return Claimed::default();
            }
            Some((k, _)) => k.clone(),
            None => Arc::from(session),
        };
        claimed.touch(&key);
        self.by_session.entry(key.clone()).or_default().push(conn);
        let mut released = None;
        if claimed.len() > self.per_conn {
            if let Some(oldest) = claimed.oldest().cloned() {
                claimed.remove(&oldest);
                self.unlink(conn, &oldest);
                released = Some(oldest);
            }
        }
        Claimed { new: Some(key), released }
    }

    /// Drops every claim of a connection that went away; the sessions it
    /// claimed.
    pub fn release(&mut self, conn: ConnId) -> Vec<Arc<str>> {
        let Some(claimed) = self.by_conn.remove(&conn) else { return Vec::new() };
        let sessions: Vec<Arc<str>> = claimed.iter_oldest_first().cloned().collect();
        for session in &sessions {
            self.unlink(conn, session);
        }
        sessions
    }

    fn unlink(&mut self, conn: ConnId, session: &Arc<str>) {
        if let Some(holders) = self.by_session.get_mut(session) {
            holders.retain(|c| *c != conn);
            if holders.is_empty() {
                self.by_session.remove(session);
            }
        }
    }

    /// The live claimants of a session.
    pub fn claimants(&self, session: &str) -> &[ConnId] {
        self.by_session.get(session).map_or(&[], Vec::as_slice)
    }

    /// Every (connection, session) claim, by connection, each connection's
    /// sessions in the order it last wrote them.
    pub fn pairs(&self) -> Vec<(ConnId, Arc<str>)> {
        let mut conns: Vec<_> = self.by_conn.iter().collect();
        conns.sort_by_key(|(c, _)| **c);
        conns.into_iter().flat_map(|(c, sessions)| sessions.iter_oldest_first().map(move |s| (*c, s.clone()))).collect()
    }

    /// Number of live claims.
    pub fn len(&self) -> usize {
        self.by_conn.values().map(Recency::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_follow_connections() {
        let mut c = Claims::new(8);
        c.claim(ConnId(1), "s");
        c.claim(ConnId(1), "s");
        c.claim(ConnId(2), "s");
        assert_eq!(c.claimants("s"), &[ConnId(1), ConnId(2)]);
        c.release(ConnId(1));
        assert_eq!(c.claimants("s"), &[ConnId(2)]);
        c.release(ConnId(2));
        assert!(c.claimants("s").is_empty());
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn one_connection_claims_a_bounded_number_of_sessions() {
        let mut c = Claims::new(2);
        for s in ["a", "b", "a", "c"] {
            c.claim(ConnId(1), s);
        }
        assert!(c.claimants("b").is_empty(), "least recently written is released");
        assert_eq!(c.claimants("a"), &[ConnId(1)]);
        assert_eq!(c.len(), 2);
        let sessions: Vec<_> = c.pairs().into_iter().map(|(_, s)| s.to_string()).collect();
        assert_eq!(sessions, vec!["a", "c"]);
    }
}

//! What each socket declared in its `hello`, and the roster built from it:
//! one entry per live claim (AEP-0003 §4.1), here and on other members.

use aep_engine::protocol::frame::{ControlCapability, Hello, Role, RosterEntry};

use super::Switchboard;
use crate::sync::lock;

/// What a socket declared in its `hello`, repeated verbatim in rosters
/// and consulted for the `unsupported` gate.
#[derive(Clone, Debug)]
pub struct Peer {
    pub role: Option<Role>,
    pub agent: Option<String>,
    pub instance: Option<String>,
    pub control: Option<ControlCapability>,
    pub emits: Option<Vec<String>>,
}

impl Peer {
    pub fn from_hello(hello: &Hello) -> Peer {
        let identity = hello.identity.clone().unwrap_or_default();
        Peer {
            role: hello.role.clone(),
            agent: identity.agent,
            instance: identity.instance,
            control: hello.capabilities.control.clone(),
            emits: hello.capabilities.emits.clone(),
        }
    }

    /// Watch-class requests (roster) are refused to emitter-only
    /// connections (AEP-0003 §4.1 rule 2); an absent role watches.
    pub fn may_watch(&self) -> bool {
        self.role.as_ref().is_none_or(Role::is_consumer)
    }

    /// Events other than commands come from emitters (`emitter`, `both`);
    /// a consumer, or a connection that declared no role, sends commands
    /// only (AEP-0003 §3.5 rule 3).
    pub fn may_emit(&self) -> bool {
        self.role.as_ref().is_some_and(Role::is_emitter)
    }
}

impl Switchboard {
    /// One entry per live (connection, claimed session), with what that
    /// connection declared in its `hello` (AEP-0003 §4.1).
    pub fn roster(&self) -> Vec<RosterEntry> {
        let state = lock(&self.state);
        let mut entries: Vec<RosterEntry> = state
            .claims
            .pairs()
            .into_iter()
            .filter_map(|(conn, session)| {
                let peer = state.conns.get(&conn)?.peer.as_ref()?;
                Some(RosterEntry {
                    session: session.to_string(),
                    agent: peer.agent.clone(),
                    instance: peer.instance.clone(),
                    control: peer.control.clone(),
                    emits: peer.emits.clone(),
                })
            })
            .collect();
        drop(state);
        entries.extend(self.routing.remote_roster());
        entries
    }
}

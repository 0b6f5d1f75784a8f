//! Claims beyond this process and the way to reach them: one interface,
//! with [`Alone`] for a single relay and a tier-wide implementation
//! (`crate::tier`) that shares claims with the other members and forwards
//! commands to the member whose connection holds the claim.
//!
//! The switchboard keeps its own connections' claims ([`super::claims`]) and tells
//! its [`Routing`] of every change; routing decisions count both.

use std::sync::Arc;

use aep_engine::protocol::frame::{ErrorFrame, RosterEntry};
use aep_engine::Event;

use super::{ConnId, Peer};

/// A claim held by a connection on another member of the tier.
#[derive(Clone, Debug)]
pub struct RemoteClaim {
    pub member: Arc<str>,
    pub conn: ConnId,
    /// The principal the claiming connection authenticated as.
    pub principal: Arc<str>,
    pub entry: RosterEntry,
}

/// Where a refused forward is reported: to the sender, as an `error`.
pub type Refused = Box<dyn FnOnce(ErrorFrame) + Send>;

pub trait Routing: Send + Sync {
    /// A connection of this process claimed `session`.
    fn claimed(&self, conn: ConnId, session: &Arc<str>, principal: &Arc<str>, peer: Option<&Peer>);

    /// A connection of this process no longer claims these sessions.
    fn released(&self, conn: ConnId, sessions: &[Arc<str>]);

    /// Live claims of `session` held on other members.
    fn remote_claimants(&self, session: &str) -> Vec<RemoteClaim>;

    /// Every live claim held on other members, for rosters.
    fn remote_roster(&self) -> Vec<RosterEntry>;

    /// Hands `command` to the member holding `to`, which delivers it to its
    /// connection (and keeps it in history); a refusal comes to `refused`.
    fn forward(&self, to: RemoteClaim, command: Arc<Event>, sender: Arc<str>, refused: Refused);
}

/// A relay on its own: every claim is local.
pub struct Alone;

impl Routing for Alone {
    fn claimed(&self, _: ConnId, _: &Arc<str>, _: &Arc<str>, _: Option<&Peer>) {}

    fn released(&self, _: ConnId, _: &[Arc<str>]) {}

    fn remote_claimants(&self, _: &str) -> Vec<RemoteClaim> {
        Vec::new()
    }

    fn remote_roster(&self) -> Vec<RosterEntry> {
        Vec::new()
    }

    fn forward(&self, to: RemoteClaim, command: Arc<Event>, _: Arc<str>, refused: Refused) {
        let detail = format!("session `{}` is claimed on another relay", to.entry.session);
        refused(ErrorFrame::for_command(command.id(), aep_engine::protocol::frame::codes::NO_ROUTE, Some(detail)));
    }
}

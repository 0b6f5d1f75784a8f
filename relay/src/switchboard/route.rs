//! Command routing (AEP-0004 §4): the gates, in order, and the forward.
//!
//! 1. the sender's binding must be authenticated, its principal an
//!    operator, and the command's `agent` that principal's own name
//!    (`unauthorized`): who commanded is who holds the credential;
//! 2. (an invalid envelope never gets here: the socket refuses it);
//! 3. exactly one live connection must claim the session (`no-route`,
//!    `ambiguous`: never guess, never broadcast), counted over every
//!    member of a tier. Every claimant counts,
//!    the sender's own connection included (AEP-0004 §4.5): a sender that
//!    claims the session beside another connection makes it ambiguous, and
//!    a sender that is its one claimant is its target (it owns the session,
//!    so `no-route` would be false) and gets the command back;
//!    A claim held on another member is forwarded there, and that member
//!    takes the remaining steps for its connection;
//! 4. a target that declared `control.accepts` without this type is
//!    refused on its behalf (`unsupported`);
//! 5. the exact bytes go to that one target (subscribers other than the
//!    target then see it, fanned out by the switchboard). They are the bytes every
//!    binding serves: a pretty-printed command was put on one line on
//!    arrival, only the whitespace between its tokens removed.
//!
//! Refusals are connection-scoped `error` frames for the sender only and
//! never enter any session's history.

use std::sync::Arc;

use aep_engine::protocol::frame::{codes, ErrorFrame, Frame};
use aep_engine::Event;

use super::routing::{RemoteClaim, Routing};
use super::storage::{Batch, Kind};
use super::{ConnId, Fanout, Origin, State, Switchboard};
use crate::held::HeldEvent;
use crate::outbox::{Outgoing, Pushed};
use crate::sync::lock;

/// The one claimant of a command's session: a connection of this process,
/// or one on another member of the tier.
pub(super) enum Claimant {
    Here(ConnId),
    Elsewhere(RemoteClaim),
}

fn refusal(command: &Event, code: &str, detail: String) -> ErrorFrame {
    ErrorFrame::for_command(command.id(), code, Some(detail))
}

/// Who sends a command: a connection (a person's console, an agent), or
/// one of the relay's standing rules on its author's behalf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    Connection,
    Rule,
}

/// Only the relay's own rules name a rule: a command from a connection
/// that does is refused, so the audit's "answered by rule" is never forged.
fn names_a_rule_falsely(command: &Event, sender: Sender) -> Result<(), ErrorFrame> {
    if sender == Sender::Connection && command.extensions().contains_key(crate::rules::RULE_ATTRIBUTE) {
        return Err(refusal(
            command,
            codes::UNAUTHORIZED,
            format!("`{}` is set only by the relay's standing rules", crate::rules::RULE_ATTRIBUTE),
        ));
    }
    Ok(())
}

/// Steps 1 and 3: who may command, and who claims the session.
pub(super) fn claimant(
    state: &State,
    routing: &dyn Routing,
    sender: ConnId,
    command: &Event,
) -> Result<Claimant, ErrorFrame> {
    let refuse = |code: &str, detail: String| refusal(command, code, detail);
    let Some(access) = state.conns.get(&sender).map(|c| &c.access).filter(|a| a.is_authenticated()) else {
        return Err(refuse(
            codes::UNAUTHORIZED,
            "control needs an authenticated connection; this relay routes commands only when started with a token"
                .into(),
        ));
    };
    let principal = access.principal();
    if !access.may_command() {
        return Err(refuse(
            codes::UNAUTHORIZED,
            format!("`{}` is not an operator and may not send commands", principal.name),
        ));
    }
    if !principal.may_be(command.agent()) {
        return Err(refuse(
            codes::UNAUTHORIZED,
            format!(
                "a command's `agent` names its sender: `{}` may not command as `{}`",
                principal.name,
                command.agent()
            ),
        ));
    }
    let session = command.session().unwrap_or_default();
    let here = state.claims.claimants(session);
    let mut elsewhere = routing.remote_claimants(session);
    match (here, elsewhere.len()) {
        ([], 0) => Err(refuse(codes::NO_ROUTE, format!("no connected emitter claims session `{session}`"))),
        ([one], 0) => Ok(Claimant::Here(*one)),
        ([], 1) => Ok(Claimant::Elsewhere(elsewhere.remove(0))),
        (here, remote) => Err(refuse(
            codes::AMBIGUOUS,
            format!("{} live connections claim session `{session}`; refusing to pick one", here.len() + remote),
        )),
    }
}

/// Steps 4 and 5, for a connection of this process.
pub(super) fn deliver(state: &State, target: ConnId, command: &Arc<Event>) -> Result<(), ErrorFrame> {
    let refuse = |code: &str, detail: String| refusal(command, code, detail);
    let session = command.session().unwrap_or_default();
    let Some(conn) = state.conns.get(&target) else {
        return Err(refuse(codes::NO_ROUTE, format!("the target of session `{session}` is disconnecting")));
    };
    let declared = conn.peer.as_ref().and_then(|p| p.control.as_ref()).filter(|c| c.accepts.is_some());
    if let Some(control) = declared {
        if !control.accepts(command.ty()) {
            return Err(refuse(
                codes::UNSUPPORTED,
                format!("the target of session `{session}` does not accept `{}`", command.ty()),
            ));
        }
    }
    match conn.outbox.push(Outgoing::Verbatim(command.raw_arc())) {
        Pushed::Queued => Ok(()),
        Pushed::Overflowed | Pushed::Closed | Pushed::Dropped => {
            Err(refuse(codes::NO_ROUTE, format!("the target of session `{session}` is disconnecting")))
        }
    }
}

/// Where a routed command went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed {
    /// To a connection of this process.
    Here(ConnId),
    /// To another member of the tier, which delivers it.
    Forwarded,
}

impl Switchboard {
    /// Routes a command from `sender` to the one claimant of its session,
    /// or says why not (see [the gates](self)). A forwarded command
    /// joins its session's history (AEP-0004 §4.4) and subscribers other
    /// than the target see it (the audit trail); a refused one does neither.
    /// A claimant on another member of a tier gets it through that member;
    /// a refusal from there reaches the sender as an `error` later.
    pub fn route(&self, sender: ConnId, command: Event) -> Result<Routed, ErrorFrame> {
        self.route_from(sender, command, Sender::Connection)
    }

    /// Routes a command a standing rule sends through `sender`, a
    /// connection holding its author's access: the same gates as
    /// [`route`](Switchboard::route).
    pub fn route_for_rule(&self, sender: ConnId, command: Event) -> Result<Routed, ErrorFrame> {
        self.route_from(sender, command, Sender::Rule)
    }

    fn route_from(&self, sender: ConnId, command: Event, from: Sender) -> Result<Routed, ErrorFrame> {
        let command = Arc::new(command);
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        let routed = names_a_rule_falsely(&command, from)
            .and_then(|()| claimant(&state, &*self.routing, sender, &command))
            .and_then(|claimant| match claimant {
                Claimant::Here(conn) => deliver(&state, conn, &command).map(|()| Claimant::Here(conn)),
                elsewhere => Ok(elsewhere),
            });
        let claimant = match routed {
            Ok(claimant) => claimant,
            Err(refusal) => {
                state.counters.commands_refused += 1;
                // Refusals of credentialed senders only: anyone else could
                // fill the trail and push real decisions out of it.
                let sender = state.conns.get(&sender).map(|c| &c.access).filter(|a| a.is_authenticated());
                if let (Some(audit), Some(access)) = (&self.audit, sender) {
                    audit.refused(&command, &access.principal().name, &Frame::Error(refusal.clone()).encode());
                }
                return Err(refusal);
            }
        };
        state.counters.commands_routed += 1;
        let principal = state.conns.get(&sender).map(|c| c.access.principal().name.clone()).unwrap_or_default();
        match claimant {
            Claimant::Here(conn) => {
                drop(state);
                self.keep_command(&mut fanout, command, principal, conn);
                Ok(Routed::Here(conn))
            }
            Claimant::Elsewhere(claim) => {
                let outbox = state.conns.get(&sender).map(|c| c.outbox.clone());
                drop(state);
                drop(fanout);
                let refused = Box::new(move |refusal: ErrorFrame| {
                    if let Some(outbox) = outbox {
                        outbox.push(Outgoing::Frame(Frame::Error(refusal).encode()));
                    }
                });
                self.routing.forward(claim, command, principal, refused);
                Ok(Routed::Forwarded)
            }
        }
    }

    /// Delivers a command another member of the tier routed here to its
    /// target, a connection of this process (steps 4 and 5 of
    /// [`route`](self::route)), and keeps it in history.
    pub(crate) fn deliver_forwarded(
        &self,
        target: ConnId,
        command: Event,
        principal: Arc<str>,
    ) -> Result<(), ErrorFrame> {
        let command = Arc::new(command);
        let mut fanout = lock(&self.fanout);
        deliver(&lock(&self.state), target, &command)?;
        self.keep_command(&mut fanout, command, principal, target);
        Ok(())
    }

    /// A delivered command joins history; everyone but its target sees it.
    fn keep_command(&self, fanout: &mut Fanout, command: Arc<Event>, principal: Arc<str>, target: ConnId) {
        let held = Arc::new(HeldEvent::new(&command));
        let event = Arc::unwrap_or_clone(command);
        let batch = Batch {
            origin: Origin::Http,
            principal,
            events: vec![(event, held)],
            kind: Kind::Command { target: Some(target) },
        };
        let receipt = self.storage.append(batch, &mut |batch| self.admit(fanout, batch));
        if !receipt.is_ready() {
            tokio::spawn(async move {
                if receipt.await.unsaved {
                    tracing::error!("a forwarded command was delivered but is not kept in history");
                }
            });
        }
    }

    /// Counts a command refused before it reached routing (for example an
    /// unauthenticated sender whose command was also malformed).
    pub fn count_refused_command(&self) {
        lock(&self.state).counters.commands_refused += 1;
    }
}

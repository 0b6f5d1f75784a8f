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
//!    target then see it, fanned out by the hub). They are the bytes every
//!    binding serves: a pretty-printed command was put on one line on
//!    arrival, only the whitespace between its tokens removed.
//!
//! Refusals are connection-scoped `error` frames for the sender only and
//! never enter any session's history.

use std::sync::Arc;

use aep_engine::protocol::frame::{codes, ErrorFrame};
use aep_engine::Event;

use super::routing::{RemoteClaim, Routing};
use super::{ConnId, State};
use crate::outbox::{Outgoing, Pushed};

/// The one claimant of a command's session.
pub(super) enum Target {
    Here(ConnId),
    Elsewhere(RemoteClaim),
}

fn refusal(command: &Event, code: &str, detail: String) -> ErrorFrame {
    ErrorFrame::for_command(command.id(), code, Some(detail))
}

/// Steps 1 and 3: who may command, and who claims the session.
pub(super) fn target(
    state: &State,
    routing: &dyn Routing,
    sender: ConnId,
    command: &Event,
) -> Result<Target, ErrorFrame> {
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
        ([one], 0) => Ok(Target::Here(*one)),
        ([], 1) => Ok(Target::Elsewhere(elsewhere.remove(0))),
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

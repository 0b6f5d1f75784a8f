//! Ingest: a batch checked against its sender, handed to history, then
//! admitted into the buffers and fanned out.

use std::collections::HashMap;
use std::sync::Arc;

use aep_engine::protocol::vocabulary::ErrorCode;
use aep_engine::Event;

use super::fanout::{fan_out, Tally};
use super::storage::{Admitted, Batch, Kind, Receipt};
use super::{ConnId, Fanout, Origin, State, Switchboard};
use crate::auth::Principal;
use crate::buffer::{Admission, SessionStore};
use crate::held::HeldEvent;
use crate::outbox::CloseReason;
use crate::sync::lock;

/// What ingest did with a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    pub accepted: usize,
    pub stored: usize,
    pub duplicates: usize,
    /// Durable history could not be written: what was stored is held in
    /// memory only and would not survive a restart.
    pub unsaved: bool,
}

/// Why an event (and, over HTTP, its whole batch) was refused: nothing of
/// it was stored or fanned out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Which event of the batch.
    pub index: usize,
    pub id: String,
    /// `unauthorized` (not the sender's to emit) or `invalid-event` (its
    /// position is another event's).
    pub code: ErrorCode,
    pub detail: String,
}

/// Whether an emitted event is news to this relay. Decided once, in
/// [`Switchboard::admit`], from what the replay buffer did with it, before
/// any feature (push, the audit) sees it: only news reaches them. Live
/// fan-out still forwards every event as received (AEP-0003 §5: a
/// redelivery must be able to traverse the relay).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Novelty {
    /// First seen: now held for replay, or live-only (nothing held to
    /// compare it with).
    New,
    /// Seen before: its `(source, id)` is held, or its position is behind
    /// what the buffer already let go (history has moved past it).
    Repeat,
    /// Another event holds its position: it is not history, so nothing
    /// acts on it.
    Conflict,
}

impl Novelty {
    fn of(admission: Option<Admission>) -> Novelty {
        match admission {
            None | Some(Admission::Stored) => Novelty::New,
            Some(Admission::Duplicate | Admission::BeforeEvicted) => Novelty::Repeat,
            Some(Admission::PositionTaken) => Novelty::Conflict,
        }
    }
}

impl Switchboard {
    /// Admits events to their session buffers and fans each one out, in
    /// order, under the fan-out lock so a batch is never interleaved.
    /// Agent-scoped and unpositioned events are live-only.
    ///
    /// Every event is first checked against `who` sent it, all before any
    /// is admitted: its `agent` and `source` must be the sender's own, its
    /// session not another principal's, and its position not another
    /// event's. One failure refuses the whole batch. A session's first
    /// stored positioned event makes the sender its owner; a stored one
    /// from a socket claims the session for that connection (a duplicate
    /// claims nothing).
    ///
    /// The receipt resolves once the batch is history
    /// ([`Storage`](super::storage::Storage)): at once in memory, once
    /// synced with `--data-dir`, once the shared stream holds it in a tier.
    /// A socket is not answered per event: if its events cannot be kept,
    /// the socket is closed so its emitter reconnects (in a tier, to
    /// another member) and resends.
    pub fn ingest(&self, origin: Origin, who: &Principal, events: Vec<Event>) -> Result<Receipt, Refusal> {
        let held: Vec<Arc<HeldEvent>> = events.iter().map(|e| Arc::new(HeldEvent::new(e))).collect();
        let mut fanout = lock(&self.fanout);
        {
            let mut state = lock(&self.state);
            if let Err(refusal) = check_batch(&state.store, who, &events, &held) {
                state.counters.events_refused += events.len() as u64;
                return Err(refusal);
            }
        }
        let batch = Batch {
            origin,
            principal: who.name.clone(),
            events: events.into_iter().zip(held).collect(),
            kind: Kind::Events,
        };
        let receipt = self.storage.append(batch, &mut |batch| self.admit(&mut fanout, batch));
        drop(fanout);
        match origin {
            Origin::Socket(conn) if !receipt.is_ready() => {
                let outbox = lock(&self.state).conns.get(&conn).map(|c| c.outbox.clone());
                tokio::spawn(async move {
                    if receipt.await.unsaved {
                        if let Some(outbox) = outbox {
                            outbox.close(CloseReason::Shutdown);
                        }
                    }
                });
                Ok(Receipt::ready(IngestReport::default()))
            }
            _ => Ok(receipt),
        }
    }

    /// Admits a batch into this process's buffers and fans it out (every
    /// home of history ends here, the shared one once per member).
    pub(super) fn admit(&self, fanout: &mut Fanout, batch: Batch) -> Admitted {
        let mut report = IngestReport::default();
        let mut novelty = Vec::with_capacity(batch.events.len());
        let journal = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            match batch.kind {
                Kind::Events => {
                    for (event, held) in &batch.events {
                        report.accepted += 1;
                        let admission = self.keep(state, &batch, event, held);
                        match admission {
                            Some(Admission::Stored) => report.stored += 1,
                            Some(Admission::Duplicate) => report.duplicates += 1,
                            Some(Admission::BeforeEvicted | Admission::PositionTaken) | None => {}
                        }
                        novelty.push(Novelty::of(admission));
                    }
                    state.counters.events_received += report.accepted as u64;
                    state.counters.events_stored += report.stored as u64;
                    state.counters.duplicates += report.duplicates as u64;
                }
                Kind::Command { .. } => {
                    for (command, held) in &batch.events {
                        if let Some(session) = command.session() {
                            state.store.admit_unpositioned(session, held.clone());
                        }
                    }
                }
            }
            state.store.take_journal()
        };
        let skip = match batch.kind {
            Kind::Command { target } => target,
            Kind::Events => None,
        };
        let mut tally = Tally::default();
        for (event, held) in &batch.events {
            fan_out(&fanout.listeners, event, held, skip, &mut tally);
        }
        self.settle(fanout, tally);
        match batch.kind {
            Kind::Events => {
                // Push and the audit act on news only: a redelivery they
                // acted on before must change nothing (AEP-0001 §7.4).
                let news = batch.events.iter().zip(&novelty).filter(|(_, n)| **n == Novelty::New).map(|((e, _), _)| e);
                for event in news {
                    for observe in [self.observer.get(), self.stored_observer.get()].into_iter().flatten() {
                        observe(event);
                    }
                    if let Some(audit) = &self.audit {
                        audit.saw(event);
                    }
                }
            }
            Kind::Command { .. } => {
                if let Some(audit) = &self.audit {
                    batch.events.iter().for_each(|(command, _)| audit.forwarded(command, &batch.principal));
                }
            }
        }
        Admitted { report, journal }
    }

    /// Offers one emitted event to its session's buffer: what the buffer
    /// did with it, `None` for a live-only event (agent-scoped, or a
    /// session event with no position that no buffer keeps).
    fn keep(&self, state: &mut State, batch: &Batch, event: &Event, held: &Arc<HeldEvent>) -> Option<Admission> {
        let session = event.session().filter(|_| !event.is_agent_scoped())?;
        if event.seq().is_some() {
            let admission = state.store.admit(session, held.clone());
            if admission == Admission::Stored {
                state.store.set_owner(session, &batch.principal);
                if let Origin::Socket(conn) = batch.origin {
                    self.claim(state, conn, session, &batch.principal);
                }
            }
            Some(admission)
        } else if event.is_foreign_emitter() {
            // `attention.routed`: a router's hop belongs to the session's
            // history though it has no position.
            Some(state.store.admit_unpositioned(session, held.clone()))
        } else {
            None
        }
    }

    /// A connection of this process claims `session`: only while it is
    /// connected (a batch can become history after its socket closed).
    fn claim(&self, state: &mut State, conn: ConnId, session: &str, principal: &Arc<str>) {
        let Some(peer) = state.conns.get(&conn).map(|c| c.peer.as_ref()) else { return };
        let peer = peer.cloned();
        let claimed = state.claims.claim(conn, session);
        if let Some(released) = claimed.released {
            self.routing.released(conn, &[released]);
        }
        if let Some(session) = claimed.new {
            self.routing.claimed(conn, &session, principal, peer.as_ref());
        }
    }

    /// Admits batches the shared history delivered (a tier member's own or
    /// another's), in history order.
    pub(crate) fn apply_all(&self, batches: Vec<Batch>) -> Vec<IngestReport> {
        let mut fanout = lock(&self.fanout);
        batches.into_iter().map(|batch| self.admit(&mut fanout, batch).report).collect()
    }

    /// Counts an event refused before it reached ingest.
    pub fn count_refused_event(&self) {
        lock(&self.state).counters.events_refused += 1;
    }
}

/// Whether `who` may emit every event of a batch (see [`Switchboard::ingest`]).
fn check_batch(
    store: &SessionStore,
    who: &Principal,
    events: &[Event],
    held: &[Arc<HeldEvent>],
) -> Result<(), Refusal> {
    let mut positions: HashMap<(&str, crate::buffer::Position), &Arc<HeldEvent>> = HashMap::new();
    for (index, (event, held)) in events.iter().zip(held).enumerate() {
        let refuse = |code: ErrorCode, detail: String| Refusal { index, id: event.id().to_owned(), code, detail };
        who.check_emitter(event.agent(), event.source()).map_err(|detail| refuse(ErrorCode::Unauthorized, detail))?;
        let Some(session) = event.session().filter(|_| !event.is_agent_scoped()) else { continue };
        let Some(position) = event.position() else { continue };
        if let Some(owner) = store.owner(session).filter(|owner| ***owner != *who.name) {
            return Err(refuse(
                ErrorCode::Unauthorized,
                format!("session `{session}` belongs to `{owner}`; `{}` may not write in it", who.name),
            ));
        }
        let earlier = positions.insert((session, position), held);
        let clash = earlier.is_some_and(|e| e.source() != held.source() || e.id() != held.id());
        if clash || store.position_taken(session, held) {
            return Err(refuse(
                ErrorCode::InvalidEvent,
                format!("session `{session}` already has another event at epoch {} seq {}", position.0, position.1),
            ));
        }
    }
    Ok(())
}

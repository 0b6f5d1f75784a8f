//! The audit chain of every command seen on the stream, whoever sent it:
//! command → ack → outcome (AEP-0004 §1, §3, §6).
//!
//! The ack names the command in `cause`; the outcome is the first domain
//! event (in lane order) whose `cause` is the command's id or the ack's id,
//! one hop either way (AEP-0004 §6). Any link may arrive before the one it
//! points at, so a chain opens on whichever part is seen first.

use std::sync::Arc;

use super::hash::FastMap;
use super::rules::{Breach, Rule};
use super::timeline::{Delivery, Entry, Position, Timeline};
use crate::control::ack::{self, Decision};
use crate::protocol::event::Event;
use crate::time::UnixMs;

/// The command event itself: what was asked, by whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    /// The command type, e.g. `control.cancel`.
    pub ty: String,
    /// The sender's identity (`agent` and `source` of a command name the
    /// sender, AEP-0004 §2.2).
    pub sender_agent: String,
    pub sender_source: String,
    pub run: Option<String>,
    pub subject: Option<String>,
    pub cause: Option<String>,
    pub time: String,
    pub at: Option<UnixMs>,
    pub relay: Option<Arc<str>>,
    pub received_at: UnixMs,
}

/// The target's one ack decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckRecord {
    pub event_id: String,
    pub decision: Decision,
    pub time: String,
    pub at: Option<UnixMs>,
    pub position: Option<Position>,
    pub received_at: UnixMs,
}

/// Which link the outcome's `cause` followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeLink {
    Command,
    Ack,
}

/// The domain event that settled the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub event_id: String,
    pub ty: String,
    pub link: OutcomeLink,
    pub time: String,
    pub at: Option<UnixMs>,
    pub position: Option<Position>,
    pub received_at: UnixMs,
}

impl Outcome {
    fn of_delivery(d: &Delivery, link: OutcomeLink) -> Outcome {
        let e = &d.event;
        Outcome {
            event_id: e.id().to_owned(),
            ty: e.ty().to_owned(),
            link,
            time: e.time().to_owned(),
            at: e.at(),
            position: e.position(),
            received_at: d.received_at,
        }
    }

    /// From a held entry: an outcome that arrived before its command. The
    /// entry keeps no `time` text, so it is read back from the bytes.
    fn of_entry(e: &Entry, link: OutcomeLink) -> Outcome {
        Outcome {
            event_id: e.id().to_owned(),
            ty: e.ty().to_owned(),
            link,
            time: e.event().map(|ev| ev.time().to_owned()).unwrap_or_default(),
            at: e.at(),
            position: e.position(),
            received_at: e.received_at,
        }
    }
}

/// How far a command got. The target's decision is final: an event that
/// names a rejected command as its cause (an agent withdrawing the request,
/// say) is what followed the refusal, kept as [`Command::outcome`], never
/// its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommandStatus {
    /// No ack seen (yet).
    AwaitingAck,
    Accepted,
    Rejected,
    /// An outcome event was observed, and no rejection.
    Completed,
}

/// One command's chain. Any part may be missing: an ack for a command this
/// stream never carried still opens a chain.
///
/// The parts are boxed: a chain sits in its session's table, which moves
/// every chain when it grows, and is read far more often than its parts.
#[derive(Clone, Debug)]
pub struct CommandChain {
    id: Arc<str>,
    issued: Option<Box<Issued>>,
    ack: Option<Box<AckRecord>>,
    outcome: Option<Box<Outcome>>,
    arrival: u64,
}

impl CommandChain {
    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn issued(&self) -> Option<&Issued> {
        self.issued.as_deref()
    }
    pub fn ack(&self) -> Option<&AckRecord> {
        self.ack.as_deref()
    }
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_deref()
    }
    /// The command type, when the command itself was seen.
    pub fn ty(&self) -> Option<&str> {
        self.issued.as_ref().map(|i| i.ty.as_str())
    }

    pub fn status(&self) -> CommandStatus {
        match (self.ack.as_deref(), &self.outcome) {
            (Some(AckRecord { decision: Decision::Rejected { .. }, .. }), _) => CommandStatus::Rejected,
            (_, Some(_)) => CommandStatus::Completed,
            (None, None) => CommandStatus::AwaitingAck,
            (Some(_), None) => CommandStatus::Accepted,
        }
    }

    /// Command to ack, between the two events' times.
    pub fn ack_latency_ms(&self) -> Option<u64> {
        Some(self.ack.as_ref()?.at?.since(self.issued.as_ref()?.at?))
    }

    /// Command to outcome, between the two events' times.
    pub fn outcome_latency_ms(&self) -> Option<u64> {
        Some(self.outcome.as_ref()?.at?.since(self.issued.as_ref()?.at?))
    }

    fn settled(&self) -> bool {
        self.outcome.is_some()
            || matches!(self.ack.as_deref(), Some(AckRecord { decision: Decision::Rejected { .. }, .. }))
    }

    /// Takes `candidate` as the outcome when it is earlier in the lane
    /// than the one held. Returns whether it did.
    fn offer_outcome(&mut self, candidate: Outcome) -> bool {
        let earlier = match (&self.outcome, candidate.position) {
            (None, _) => true,
            (Some(held), Some(p)) => held.position.is_none_or(|h| h > p),
            (Some(_), None) => false,
        };
        if earlier {
            self.outcome = Some(Box::new(candidate));
        }
        earlier
    }
}

/// Whether `e` can be an outcome (see [`Entry::is_domain`]).
pub(crate) fn is_domain(e: &Event) -> bool {
    e.kind().is_domain()
}

/// The chains of one session, at most `capacity`.
#[derive(Debug)]
pub(crate) struct Control {
    chains: FastMap<Arc<str>, CommandChain>,
    /// ack id → command id, so an outcome caused by the ack finds its chain.
    ack_of: FastMap<Arc<str>, Arc<str>>,
    capacity: usize,
    /// Chains forgotten to stay within the capacity.
    pub(crate) dropped: u64,
}

impl Control {
    pub(crate) fn new(capacity: usize) -> Control {
        Control { chains: FastMap::default(), ack_of: FastMap::default(), capacity, dropped: 0 }
    }

    /// New, empty control state in this one's memory.
    pub(crate) fn emptied(mut self, capacity: usize) -> Control {
        self.chains.clear();
        self.ack_of.clear();
        Control { chains: self.chains, ack_of: self.ack_of, ..Control::new(capacity) }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&CommandChain> {
        self.chains.get(id)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.chains.contains_key(id)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &CommandChain> + '_ {
        self.chains.values()
    }

    pub(crate) fn len(&self) -> usize {
        self.chains.len()
    }

    /// Folds a command event. Returns the chain id and whether an outcome
    /// already in the lane was linked to it.
    pub(crate) fn fold_command(&mut self, entry: &Delivery, lane: &Timeline) -> (Arc<str>, bool) {
        let e = &entry.event;
        let id = self.chain(e.id(), entry.arrival);
        let chain = self.chains.get_mut(&*id).expect("chain present: opened above");
        if chain.issued.is_none() {
            chain.issued = Some(Box::new(Issued {
                ty: e.ty().to_owned(),
                sender_agent: e.agent().to_owned(),
                sender_source: e.source().to_owned(),
                run: e.run().map(str::to_owned),
                subject: e.subject().map(str::to_owned),
                cause: e.cause().map(str::to_owned),
                time: e.time().to_owned(),
                at: e.at(),
                relay: entry.relay.clone(),
                received_at: entry.received_at,
            }));
        }
        let mut linked = false;
        for earlier in lane.caused_by(e.id()).filter(|x| x.is_domain()) {
            linked |= chain.offer_outcome(Outcome::of_entry(earlier, OutcomeLink::Command));
        }
        (id, linked)
    }

    /// Folds an ack. Returns the chain id and, when this is a second
    /// distinct ack, the rule it breaks with a description. Only a `late`
    /// ack (below the session's high-water mark) can have an outcome that
    /// arrived before it, so only then is the lane searched.
    pub(crate) fn fold_ack(
        &mut self,
        entry: &Delivery,
        lane: &Timeline,
        late: bool,
    ) -> Option<(Arc<str>, Option<Breach>)> {
        let e = &entry.event;
        let parsed = ack::parse(e)?;
        let id = self.chain(parsed.command_id, entry.arrival);
        self.ack_of.insert(Arc::from(e.id()), id.clone());
        let chain = self.chains.get_mut(&*id).expect("chain present: opened above");
        let broken = match &chain.ack {
            Some(first) if first.event_id != e.id() => {
                let (rule, how) = if first.decision == parsed.decision {
                    (Rule::AckRepeated, "a second ack")
                } else {
                    (Rule::AckConflict, "a conflicting ack")
                };
                Some((rule, format!("command {id} was already acked by {}; {} is {how}", first.event_id, e.id())))
            }
            Some(_) => None,
            None => {
                chain.ack = Some(Box::new(AckRecord {
                    event_id: e.id().to_owned(),
                    decision: parsed.decision,
                    time: e.time().to_owned(),
                    at: e.at(),
                    position: e.position(),
                    received_at: entry.received_at,
                }));
                None
            }
        };
        if late {
            for earlier in lane.caused_by(e.id()).filter(|x| x.is_domain()) {
                chain.offer_outcome(Outcome::of_entry(earlier, OutcomeLink::Ack));
            }
        }
        Some((id, broken))
    }

    /// Offers a domain event as the outcome of the chain its `cause`
    /// names. Returns the chain id when it became that chain's outcome.
    pub(crate) fn offer_outcome(&mut self, entry: &Delivery) -> Option<Arc<str>> {
        if self.chains.is_empty() {
            return None;
        }
        let e = &entry.event;
        let cause = e.cause()?;
        let (id, link) = match self.chains.get_key_value(cause) {
            Some((id, _)) => (id.clone(), OutcomeLink::Command),
            None => (self.ack_of.get(cause)?.clone(), OutcomeLink::Ack),
        };
        let chain = self.chains.get_mut(&*id)?;
        chain.offer_outcome(Outcome::of_delivery(entry, link)).then_some(id)
    }

    fn chain(&mut self, id: &str, arrival: u64) -> Arc<str> {
        if let Some((key, _)) = self.chains.get_key_value(id) {
            return key.clone();
        }
        self.make_room();
        let key: Arc<str> = Arc::from(id);
        self.chains
            .insert(key.clone(), CommandChain { id: key.clone(), issued: None, ack: None, outcome: None, arrival });
        key
    }

    /// Forgets the oldest settled chain, else the oldest chain.
    fn make_room(&mut self) {
        if self.chains.len() < self.capacity.max(1) {
            return;
        }
        let victim = self.chains.values().min_by_key(|c| (!c.settled(), c.arrival)).map(|c| c.id.clone());
        if let Some(id) = victim {
            if let Some(gone) = self.chains.remove(&id) {
                self.dropped += 1;
                if let Some(a) = gone.ack {
                    self.ack_of.remove(a.event_id.as_str());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(raw: &str, arrival: u64) -> Delivery {
        Delivery { event: Event::parse(raw).unwrap(), relay: None, received_at: UnixMs(arrival), arrival }
    }

    fn keep(d: Delivery) -> Entry {
        Entry::keep(d)
    }

    fn owner(id: &str, ty: &str, seq: u64, cause: &str) -> Delivery {
        entry(
            &format!(
                r#"{{"aep":"0.1","id":"{id}","type":"{ty}","time":"2026-07-03T10:00:0{seq}Z","source":"aep://h/agent/t/session/s","agent":"t","session":"s","seq":{seq},"cause":"{cause}"}}"#
            ),
            seq + 10,
        )
    }

    fn command(id: &str) -> Delivery {
        entry(
            &format!(
                r#"{{"aep":"0.1","id":"{id}","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/mc","agent":"mc","session":"s"}}"#
            ),
            1,
        )
    }

    #[test]
    fn outcome_via_ack_id_and_out_of_order_parts() {
        let mut lane = Timeline::new(16);
        let mut c = Control::new(8);
        // The outcome (caused by the ack) and the ack arrive before the command.
        let outcome = owner("O", "progress.status", 2, "A");
        assert_eq!(c.offer_outcome(&outcome), None);
        lane.insert_at((0, 2), keep(outcome));
        let ack = owner("A", "control.accepted", 1, "C");
        let (id, broken) = c.fold_ack(&ack, &lane, true).unwrap();
        assert!(broken.is_none());
        lane.insert_at((0, 1), keep(ack));
        let cmd = command("C");
        c.fold_command(&cmd, &lane);
        let chain = c.get(&id).unwrap();
        assert_eq!(chain.status(), CommandStatus::Completed);
        assert_eq!(chain.outcome().unwrap().link, OutcomeLink::Ack);
        assert_eq!(chain.issued().unwrap().sender_agent, "mc");
        assert_eq!(chain.ack_latency_ms(), Some(1000));
        assert_eq!(chain.outcome_latency_ms(), Some(2000));
    }

    #[test]
    fn an_event_caused_by_a_rejected_command_does_not_complete_it() {
        let mut lane = Timeline::new(16);
        let mut c = Control::new(8);
        c.fold_command(&command("C"), &lane);
        let nack = owner("R", "control.rejected", 1, "C");
        c.fold_ack(&nack, &lane, false);
        lane.insert_at((0, 1), keep(nack));
        let withdrawn = owner("W", "attention.resolved", 2, "C");
        c.offer_outcome(&withdrawn);
        let chain = c.get("C").unwrap();
        assert_eq!(chain.outcome().map(|o| o.ty.as_str()), Some("attention.resolved"), "kept as what followed");
        assert_eq!(chain.status(), CommandStatus::Rejected, "the refusal stands");
    }

    #[test]
    fn bounded_forgetting_prefers_settled_chains() {
        let lane = Timeline::new(4);
        let mut c = Control::new(2);
        c.fold_command(&command("C1"), &lane);
        c.fold_ack(&owner("R1", "control.rejected", 1, "C1"), &lane, false);
        c.fold_command(&command("C2"), &lane);
        c.fold_command(&command("C3"), &lane);
        assert_eq!(c.len(), 2);
        assert!(!c.contains("C1"), "the settled chain goes first");
        assert!(c.contains("C2") && c.contains("C3"));
    }
}

//! All session buffers, capped in number.
//!
//! At the cap the least recently *written* session is evicted whole, so an
//! active long-lived session outlives an idle newer one. An evicted
//! session's high-water position is kept in a bounded tombstone table: if
//! the session comes back, resumes from before the loss still get their
//! `replay-exhausted` marker instead of a silent gap.

use std::collections::HashMap;
use std::sync::Arc;

use super::disk::{DiskError, Loaded, Op};
use super::session::{Admission, Change, SessionBuffer};
use super::Position;
use crate::held::HeldEvent;
use crate::recency::Recency;

/// What one session contributes to a replay: an optional exhaustion notice
/// (the earliest position still held) and the events to send, in order.
pub struct Replay {
    pub session: Arc<str>,
    pub exhausted_from: Option<Position>,
    pub events: Vec<Arc<HeldEvent>>,
}

pub struct SessionStore {
    sessions: HashMap<Arc<str>, SessionBuffer>,
    written: Recency<Arc<str>>,
    tombstones: HashMap<Arc<str>, Position>,
    tombstone_order: Recency<Arc<str>>,
    depth: usize,
    max_sessions: usize,
    session_bytes: usize,
    total_bytes: usize,
    buffered: usize,
    bytes: usize,
    /// Changes not yet handed to durable history (`--data-dir`), recorded
    /// only when history is durable; the switchboard's storage takes them after
    /// every admission.
    journal: Option<Vec<Op>>,
    /// Write order across sessions, kept on disk so a restart evicts the
    /// same session first.
    tick: u64,
    /// Which principal owns each session name: the first to write a
    /// positioned event in it. Kept for more sessions than are buffered,
    /// so an evicted session's name is not free for another to take.
    owners: HashMap<Arc<str>, Arc<str>>,
    owner_order: Recency<Arc<str>>,
}

/// Session owners remembered per buffered session.
const OWNERS_PER_SESSION: usize = 4;

/// How much a [`SessionStore`] may hold.
#[derive(Clone, Copy, Debug)]
pub struct StoreLimits {
    /// Events per session.
    pub depth: usize,
    pub max_sessions: usize,
    /// Bytes per session ([`HeldEvent::size`]).
    pub session_bytes: usize,
    /// Bytes across all sessions.
    pub total_bytes: usize,
}

impl SessionStore {
    pub fn new(limits: StoreLimits) -> SessionStore {
        let StoreLimits { depth, max_sessions, session_bytes, total_bytes } = limits;
        SessionStore {
            sessions: HashMap::new(),
            written: Recency::default(),
            tombstones: HashMap::new(),
            tombstone_order: Recency::default(),
            depth: depth.max(1),
            max_sessions: max_sessions.max(1),
            session_bytes,
            total_bytes,
            buffered: 0,
            bytes: 0,
            journal: None,
            tick: 0,
            owners: HashMap::new(),
            owner_order: Recency::default(),
        }
    }

    /// A store that records its changes for durable history, holding again
    /// what `loaded` (read back from it) held: the same replay order and
    /// the same eviction marks. The changes restoring makes (bounds that
    /// shrank since) are in its journal.
    pub fn restore(limits: StoreLimits, loaded: Loaded) -> Result<SessionStore, DiskError> {
        let mut store = SessionStore::new(limits);
        store.journal = Some(Vec::new());
        let mut sessions = loaded.sessions;
        sessions.sort_by_key(|s| s.written);
        for (session, owner) in loaded.owners {
            store.owner_order.touch(&session);
            store.owners.insert(session, owner);
        }
        for (session, high) in loaded.tombstones {
            store.tombstone_order.touch(&session);
            store.tombstones.insert(session, high);
        }
        for loaded in sessions {
            let mut entries = Vec::with_capacity(loaded.entries.len());
            for (slot, raw) in loaded.entries {
                let event = aep_engine::Event::parse(&raw)
                    .map_err(|e| DiskError(format!("a stored event of `{}` no longer parses: {e}", loaded.session)))?;
                entries.push((slot, Arc::new(HeldEvent::new(&event))));
            }
            let key = store.create(&loaded.session);
            let buffer = SessionBuffer::restore(store.depth, store.session_bytes, loaded.last_evicted, entries);
            store.tick = store.tick.max(loaded.written);
            store.buffered += buffer.len();
            store.bytes += buffer.bytes();
            store.sessions.insert(key.clone(), buffer);
            store.mirror(&key);
            store.trim_to_total();
        }
        Ok(store)
    }

    /// The changes made since the last call, in order, for durable
    /// history to write (empty when history is not durable).
    pub fn take_journal(&mut self) -> Vec<Op> {
        self.journal.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Hands a session buffer's changes to durable history (or drops them).
    fn mirror(&mut self, key: &Arc<str>) {
        let Some(buffer) = self.sessions.get_mut(key) else { return };
        let changes = buffer.take_changes();
        let Some(journal) = &mut self.journal else { return };
        if changes.is_empty() {
            return;
        }
        self.tick += 1;
        for change in changes {
            // Evictions are always the oldest entries: the session row's
            // eviction mark below records them.
            if let Change::Added(slot, event) = change {
                journal.push(Op::Put { session: key.clone(), slot, raw: event.raw_arc().clone() });
            }
        }
        journal.push(Op::Session {
            session: key.clone(),
            last_evicted: buffer.last_evicted_slot(),
            written: self.tick,
        });
    }

    fn record(&mut self, op: Op) {
        if let Some(journal) = &mut self.journal {
            journal.push(op);
        }
    }

    /// The principal that owns `session`, if one wrote in it.
    pub fn owner(&self, session: &str) -> Option<&Arc<str>> {
        self.owners.get(session)
    }

    /// Records that `principal` owns `session` (it wrote there first).
    pub fn set_owner(&mut self, session: &str, principal: &Arc<str>) {
        if self.owners.contains_key(session) {
            return;
        }
        let key: Arc<str> = Arc::from(session);
        while self.owners.len() >= self.max_sessions.saturating_mul(OWNERS_PER_SESSION) {
            let Some(oldest) = self.owner_order.oldest().cloned() else { break };
            self.owner_order.remove(&oldest);
            self.owners.remove(&oldest);
            self.record(Op::Disown { session: oldest });
        }
        self.owner_order.touch(&key);
        self.owners.insert(key.clone(), principal.clone());
        self.record(Op::Owner { session: key, principal: principal.clone() });
    }

    /// Whether a different event than `event` holds its position in
    /// `session` (one position names one event).
    pub fn position_taken(&self, session: &str, event: &Arc<HeldEvent>) -> bool {
        let (Some(buffer), Some(position)) = (self.sessions.get(session), event.position()) else { return false };
        !buffer.holds(event) && buffer.holds_position(position)
    }

    /// Offers a positioned session event to its session's buffer.
    pub fn admit(&mut self, session: &str, event: Arc<HeldEvent>) -> Admission {
        self.admit_with(session, |buffer| buffer.admit(event))
    }

    /// Keeps an event without a position (a forwarded command, an
    /// `attention.routed` hop) in its session's history, after the newest
    /// event there ([`SessionBuffer::admit_unpositioned`]).
    pub fn admit_unpositioned(&mut self, session: &str, event: Arc<HeldEvent>) -> Admission {
        self.admit_with(session, |buffer| buffer.admit_unpositioned(event))
    }

    fn admit_with(&mut self, session: &str, admit: impl FnOnce(&mut SessionBuffer) -> Admission) -> Admission {
        let key: Arc<str> = match self.sessions.get_key_value(session) {
            Some((k, _)) => k.clone(),
            None => self.create(session),
        };
        let Some(buffer) = self.sessions.get_mut(&key) else {
            // `create` just inserted it; refusing is the safe answer anyway.
            return Admission::BeforeEvicted;
        };
        let (len, bytes) = (buffer.len(), buffer.bytes());
        let admission = admit(buffer);
        self.buffered = self.buffered + buffer.len() - len;
        self.bytes = self.bytes + buffer.bytes() - bytes;
        if admission == Admission::Stored {
            self.written.touch(&key);
        }
        self.mirror(&key);
        self.trim_to_total();
        admission
    }

    /// Evicts the oldest events of the least recently written sessions
    /// until the total fits. A session emptied this way is evicted whole,
    /// leaving its tombstone.
    fn trim_to_total(&mut self) {
        while self.bytes > self.total_bytes {
            let Some(oldest) = self.written.oldest().cloned() else { break };
            let Some(buffer) = self.sessions.get_mut(&oldest) else {
                self.written.remove(&oldest);
                continue;
            };
            let (len, bytes) = (buffer.len(), buffer.bytes());
            let evicted = buffer.len() > 1 && buffer.evict_oldest();
            self.buffered -= len - buffer.len();
            self.bytes -= bytes - buffer.bytes();
            self.mirror(&oldest);
            if !evicted {
                self.evict_session(&oldest);
            }
        }
    }

    fn create(&mut self, session: &str) -> Arc<str> {
        let key: Arc<str> = Arc::from(session);
        let history = self.tombstones.remove(&key);
        self.tombstone_order.remove(&key);
        if history.is_some() {
            self.record(Op::Untomb { session: key.clone() });
        }
        while self.sessions.len() >= self.max_sessions {
            let Some(oldest) = self.written.oldest().cloned() else { break };
            self.evict_session(&oldest);
        }
        self.sessions.insert(key.clone(), SessionBuffer::new(self.depth, self.session_bytes, history));
        self.written.touch(&key);
        key
    }

    fn evict_session(&mut self, session: &Arc<str>) {
        self.written.remove(session);
        let Some(buffer) = self.sessions.remove(session) else { return };
        self.buffered -= buffer.len();
        self.bytes -= buffer.bytes();
        self.record(Op::DropSession { session: session.clone() });
        if let Some(high) = buffer.high_water() {
            while self.tombstones.len() >= self.max_sessions {
                let Some(oldest) = self.tombstone_order.oldest().cloned() else { break };
                self.tombstone_order.remove(&oldest);
                self.tombstones.remove(&oldest);
                self.record(Op::Untomb { session: oldest });
            }
            self.tombstones.insert(session.clone(), high);
            self.tombstone_order.touch(session);
            self.record(Op::Tombstone { session: session.clone(), high });
        }
    }

    /// Held events of `session` strictly after `after`, with an
    /// exhaustion notice whenever the requested position predates what is
    /// held (AEP-0003 §5): something after it was evicted, or the held
    /// history begins later than the position right after it (this relay
    /// restarted, or first saw the session mid-way). Delivery then resumes
    /// at the earliest held position, which the notice names.
    ///
    /// A position beyond everything held has nothing to replay and no loss
    /// to name: the consumer has all this relay could give it. So
    /// has a session this relay holds nothing of (a restart forgot it, or
    /// it never existed, as a conformance probe's sessions: replay nothing
    /// and create no state). A session evicted whole is remembered by its
    /// high water: behind it is a loss, announced at the position delivery
    /// resumes from. `None` when there is nothing to say.
    pub fn replay_after(&self, session: &str, after: Position) -> Option<Replay> {
        let Some((key, buffer)) = self.sessions.get_key_value(session) else {
            let (key, high) = self.tombstones.get_key_value(session)?;
            let exhausted_from = Some((high.0, high.1.saturating_add(1)));
            return (after < *high).then(|| Replay { session: key.clone(), exhausted_from, events: Vec::new() });
        };
        if buffer.high_water().is_none_or(|high| after > high) {
            return None;
        }
        let exhausted_from = if buffer.is_exhausted_for(after) { buffer.earliest() } else { None };
        let events = buffer.after(after).cloned().collect();
        Some(Replay { session: key.clone(), exhausted_from, events })
    }

    /// The session a `Last-Event-ID` header names. HTTP strips leading
    /// whitespace from a header value, so a session whose name begins
    /// with spaces or tabs arrives without them: when `named` is no session
    /// known here, the one known session it is the stripped name of is
    /// meant. `named` itself when there is none, or more than one.
    pub fn named_in_header<'a>(&'a self, named: &'a str) -> &'a str {
        if self.sessions.contains_key(named) || self.tombstones.contains_key(named) {
            return named;
        }
        let mut stripped_to_named = self
            .sessions
            .keys()
            .chain(self.tombstones.keys())
            .filter(|k| k.len() > named.len() && k.trim_start_matches([' ', '\t']) == named);
        match (stripped_to_named.next(), stripped_to_named.next()) {
            (Some(one), None) => one,
            _ => named,
        }
    }

    /// Every held session from its earliest held event (replay-all, which
    /// never reports exhaustion), least recently written first.
    pub fn replay_all(&self) -> Vec<Replay> {
        self.written
            .iter_oldest_first()
            .filter_map(|key| {
                let buffer = self.sessions.get(key)?;
                let events: Vec<_> = buffer.all().cloned().collect();
                (!events.is_empty()).then(|| Replay { session: key.clone(), exhausted_from: None, events })
            })
            .collect()
    }

    /// Every held event: each session's in replay order, least recently
    /// written session first (as [`SessionStore::replay_all`]).
    pub fn held(&self) -> impl Iterator<Item = &Arc<HeldEvent>> {
        self.written.iter_oldest_first().filter_map(|key| self.sessions.get(key)).flat_map(SessionBuffer::all)
    }

    /// Number of sessions held.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Events held across all sessions.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Bytes held across all sessions ([`HeldEvent::size`]).
    pub fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    /// Events held for one session (0 when absent).
    pub fn session_len(&self, session: &str) -> usize {
        self.sessions.get(session).map_or(0, SessionBuffer::len)
    }

    /// Evicted sessions remembered for their high-water position.
    pub fn tombstone_count(&self) -> usize {
        self.tombstones.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use aep_engine::Event;

    fn store(depth: usize, max_sessions: usize) -> SessionStore {
        SessionStore::new(StoreLimits { depth, max_sessions, session_bytes: usize::MAX, total_bytes: usize::MAX })
    }

    fn ev(session: &str, seq: u64) -> Arc<HeldEvent> {
        Arc::new(HeldEvent::new(
            &Event::parse(&format!(
                r#"{{"aep":"0.1","id":"{session}-{seq}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a/session/{session}","agent":"a","session":"{session}","seq":{seq}}}"#
            ))
            .unwrap(),
        ))
    }

    #[test]
    fn evicts_the_least_recently_written_session() {
        let mut s = store(10, 2);
        s.admit("a", ev("a", 0));
        s.admit("b", ev("b", 0));
        s.admit("a", ev("a", 1));
        s.admit("c", ev("c", 0));
        assert_eq!(s.session_count(), 2);
        assert_eq!(s.session_len("b"), 0);
        assert_eq!(s.session_len("a"), 2);
        assert_eq!(s.buffered(), 3);
        assert_eq!(s.tombstone_count(), 1);
    }

    #[test]
    fn a_returning_session_reports_what_it_lost() {
        let mut s = store(10, 1);
        s.admit("a", ev("a", 0));
        s.admit("a", ev("a", 1));
        s.admit("b", ev("b", 0));
        s.admit("a", ev("a", 2));
        let r = s.replay_after("a", (0, 0)).unwrap();
        assert_eq!(r.exhausted_from, Some((0, 2)));
        assert_eq!(r.events.len(), 1);
        assert_eq!(s.admit("a", ev("a", 1)), Admission::BeforeEvicted);
    }

    #[test]
    fn only_losses_of_held_history_are_exhausted() {
        let mut s = store(10, 1);
        for seq in 2..5 {
            s.admit("a", ev("a", seq));
        }
        assert!(s.replay_after("never-seen", (0, 9)).is_none(), "nothing held: nothing to name");
        assert!(s.replay_after("never-seen", (0, 0)).is_none(), "the conformance probe's origin");
        assert!(s.replay_after("a", (0, 7)).is_none(), "ahead of everything held");
        let caught_up = s.replay_after("a", (0, 4)).unwrap();
        assert_eq!((caught_up.exhausted_from, caught_up.events.len()), (None, 0));
        let before_start = s.replay_after("a", (0, 0)).unwrap();
        assert_eq!((before_start.exhausted_from, before_start.events.len()), (Some((0, 2)), 3));
        let at_start = s.replay_after("a", (0, 1)).unwrap();
        assert_eq!((at_start.exhausted_from, at_start.events.len()), (None, 3));
        // Evicted whole: behind its high water is a loss, at or beyond it is not.
        s.admit("b", ev("b", 0));
        assert_eq!(s.replay_after("a", (0, 2)).unwrap().exhausted_from, Some((0, 5)));
        assert!(s.replay_after("a", (0, 4)).is_none());
        assert!(s.replay_after("a", (0, 9)).is_none());
    }

    #[test]
    fn a_header_names_a_session_without_its_leading_whitespace() {
        let mut s = store(10, 4);
        s.admit(" a", ev("a", 0));
        s.admit("b", ev("b", 0));
        s.admit(" b", ev("b", 0));
        s.admit("\tc", ev("c", 0));
        s.admit(" \tc", ev("c", 0));
        assert_eq!(s.named_in_header("a"), " a");
        assert_eq!(s.named_in_header("b"), "b", "a session of that very name");
        assert_eq!(s.named_in_header("c"), "c", "two candidates: no guess");
        assert_eq!(s.named_in_header("d"), "d");
    }

    #[test]
    fn replay_all_never_reports_exhaustion() {
        let mut s = store(2, 4);
        for seq in 0..5 {
            s.admit("a", ev("a", seq));
        }
        let all = s.replay_all();
        assert_eq!(all.len(), 1);
        assert!(all[0].exhausted_from.is_none());
        assert_eq!(all[0].events.iter().map(|e| e.position().unwrap().1).collect::<Vec<_>>(), vec![3, 4]);
    }

    #[test]
    fn the_total_is_bounded_by_trimming_the_least_recently_written() {
        let one = ev("a", 0).size();
        let mut s = SessionStore::new(StoreLimits {
            depth: 100,
            max_sessions: 10,
            session_bytes: usize::MAX,
            total_bytes: one * 5,
        });
        for seq in 0..4 {
            s.admit("a", ev("a", seq));
        }
        for seq in 0..3 {
            s.admit("b", ev("b", seq));
        }
        assert!(s.buffered_bytes() <= one * 5);
        assert_eq!(s.session_len("b"), 3, "the recently written session keeps its events");
        assert_eq!(s.session_len("a"), 2);
        assert!(s.replay_after("a", (0, 0)).unwrap().exhausted_from.is_some());
        for seq in 3..8 {
            s.admit("b", ev("b", seq));
        }
        assert_eq!(s.session_len("a"), 0, "an emptied session is evicted whole");
        assert_eq!(s.tombstone_count(), 1);
        assert_eq!(s.buffered(), s.session_len("b"));
    }

    #[test]
    fn tombstones_are_bounded() {
        let mut s = store(1, 2);
        for i in 0..50 {
            s.admit(&format!("s{i}"), ev(&format!("s{i}"), 0));
        }
        assert_eq!(s.session_count(), 2);
        assert!(s.tombstone_count() <= 2);
    }

    fn command(session: &str, id: &str) -> Arc<HeldEvent> {
        Arc::new(HeldEvent::new(
            &Event::parse(&format!(
                r#"{{"aep":"0.1","id":"{id}","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/c","agent":"c","session":"{session}"}}"#
            ))
            .unwrap(),
        ))
    }

    fn open(limits: StoreLimits, dir: &std::path::Path) -> (SessionStore, super::super::disk::Disk) {
        let disk = super::super::disk::Disk::open(dir).unwrap();
        let mut store = SessionStore::restore(limits, disk.load().unwrap()).unwrap();
        disk.write(&store.take_journal()).unwrap();
        (store, disk)
    }

    fn replayed(r: &Replay) -> Vec<String> {
        r.events.iter().map(|e| e.raw().to_owned()).collect()
    }

    /// Reopening the same directory gives back the same history: order,
    /// unpositioned slots, eviction marks and whole-session tombstones.
    #[test]
    fn a_reopened_store_holds_what_it_held() {
        let dir =
            std::env::temp_dir().join(format!("aep-store-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&dir);
        let limits = StoreLimits { depth: 4, max_sessions: 2, session_bytes: usize::MAX, total_bytes: usize::MAX };
        let (all_a, after_a, gone) = {
            let (mut s, disk) = open(limits, &dir);
            s.admit("gone", ev("gone", 0));
            for seq in 0..3 {
                s.admit("a", ev("a", seq));
            }
            s.admit_unpositioned("a", command("a", "c1"));
            s.admit("a", ev("a", 3));
            s.admit("a", ev("a", 4)); // evicts a-0
            s.admit("b", ev("b", 0)); // evicts session `gone` whole
            disk.write(&s.take_journal()).unwrap();
            let all_a = replayed(&s.replay_all().into_iter().find(|r| &*r.session == "a").unwrap());
            let after = s.replay_after("a", (0, 2)).unwrap();
            (all_a, (replayed(&after), after.exhausted_from), s.replay_after("gone", (0, 0)).map(|r| r.exhausted_from))
        };
        let (s, _disk) = open(limits, &dir);
        let reopened = replayed(&s.replay_all().into_iter().find(|r| &*r.session == "a").unwrap());
        assert_eq!(reopened, all_a);
        assert_eq!(all_a.len(), 4);
        let after = s.replay_after("a", (0, 2)).unwrap();
        assert_eq!((replayed(&after), after.exhausted_from), after_a);
        assert_eq!(after_a.0.len(), 3, "the command after seq 2, then seq 3 and 4");
        assert!(s.replay_after("a", (0, 0)).unwrap().exhausted_from.is_some(), "a-0 was evicted");
        assert_eq!(s.replay_after("gone", (0, 0)).map(|r| r.exhausted_from), gone);
        assert!(gone.is_none(), "evicted whole after its high water: nothing lost from there");
        assert_eq!(s.tombstone_count(), 1);
        assert_eq!(s.buffered(), 5);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! Runs within a session and their single terminal (AEP-0002 §2).

use std::borrow::Cow;
use std::sync::Arc;

use super::hash::FastMap;
use super::rules::{Breach, Rule};
use super::timeline::Position;
use crate::protocol::event::Event;
use crate::protocol::kind::EventKind;
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

/// Which terminal a run reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEnding {
    Finished,
    Failed,
    Cancelled,
}

impl RunEnding {
    /// The terminal an event of this kind is, if any.
    pub fn of(kind: EventKind<'_>) -> Option<RunEnding> {
        match kind.core()? {
            EventType::RunFinished => Some(RunEnding::Finished),
            EventType::RunFailed => Some(RunEnding::Failed),
            EventType::RunCancelled => Some(RunEnding::Cancelled),
            _ => None,
        }
    }

    /// The event type of this terminal.
    pub fn event_type(self) -> EventType {
        match self {
            RunEnding::Finished => EventType::RunFinished,
            RunEnding::Failed => EventType::RunFailed,
            RunEnding::Cancelled => EventType::RunCancelled,
        }
    }
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// No terminal seen (which may stay so forever: arrival is never
    /// guaranteed, AEP-0002 §4.1).
    Open,
    Ended(RunEnding),
}

/// The terminal event of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEnd {
    pub ending: RunEnding,
    pub event_id: String,
    pub cause: Option<String>,
    pub time: String,
    pub position: Option<Position>,
    /// `run.failed` `reason` (a machine token) or `run.cancelled` `reason`.
    pub reason: Option<String>,
    /// `run.cancelled` `by` (user, control, policy, shutdown).
    pub by: Option<String>,
}

/// One run (one `run` value within a session, across all epochs).
///
/// Its terminal is boxed: nearly every event of a session updates a run
/// in the session's table, and reads only the counters beside the name.
#[derive(Clone, Debug)]
pub struct Run {
    name: Arc<str>,
    started_event: Option<String>,
    started_time: Option<String>,
    end: Option<Box<RunEnd>>,
    events: u64,
    first_seen: UnixMs,
    touched: u64,
}

impl Run {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn status(&self) -> RunStatus {
        self.end.as_ref().map_or(RunStatus::Open, |e| RunStatus::Ended(e.ending))
    }
    pub fn end(&self) -> Option<&RunEnd> {
        self.end.as_deref()
    }
    /// The `run.started` event id, when seen.
    pub fn started_event(&self) -> Option<&str> {
        self.started_event.as_deref()
    }
    pub fn started_time(&self) -> Option<&str> {
        self.started_time.as_deref()
    }
    /// How many events carrying this run were folded.
    pub fn events(&self) -> u64 {
        self.events
    }
    pub fn first_seen(&self) -> UnixMs {
        self.first_seen
    }
}

/// The runs of one session, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct Runs {
    map: FastMap<Arc<str>, Run>,
    capacity: usize,
    /// Runs forgotten to stay within the capacity.
    pub(crate) dropped: u64,
}

impl Runs {
    pub(crate) fn new(capacity: usize) -> Runs {
        Runs { map: FastMap::default(), capacity, dropped: 0 }
    }

    /// New, empty runs in this table's memory.
    pub(crate) fn emptied(mut self, capacity: usize) -> Runs {
        self.map.clear();
        Runs { map: self.map, ..Runs::new(capacity) }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Run> {
        self.map.get(name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Run> + '_ {
        self.map.values()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Folds an event that carries `run`. Returns the rule broken, with a
    /// description, when this is a second distinct terminal.
    pub(crate) fn fold(&mut self, run: &str, event: &Event, arrival: u64, now: UnixMs) -> Option<Breach> {
        // One lookup for a run already known (nearly every event).
        if let Some(r) = self.map.get_mut(run) {
            return r.fold(event, arrival);
        }
        self.make_room();
        let name: Arc<str> = Arc::from(run);
        let fresh = Run {
            name: name.clone(),
            started_event: None,
            started_time: None,
            end: None,
            events: 0,
            first_seen: now,
            touched: arrival,
        };
        self.map.entry(name).or_insert(fresh).fold(event, arrival)
    }
}

impl Run {
    /// Counts `event` in, and takes it as the terminal when it is the first.
    fn fold(&mut self, event: &Event, arrival: u64) -> Option<Breach> {
        let r = self;
        r.events += 1;
        r.touched = arrival;
        let kind = event.kind();
        if kind == EventKind::Core(EventType::RunStarted) && r.started_event.is_none() {
            r.started_event = Some(event.id().to_owned());
            r.started_time = Some(event.time().to_owned());
        }
        let ending = RunEnding::of(kind)?;
        if let Some(first) = &r.end {
            if first.event_id != event.id() {
                return Some((
                    Rule::RunTerminalRepeated,
                    format!(
                        "run `{}` already ended with {} ({}); {} is a second terminal",
                        r.name,
                        first.ending.event_type(),
                        first.event_id,
                        event.ty()
                    ),
                ));
            }
            return None;
        }
        let text = |k: &str| event.data_str(k).map(Cow::into_owned);
        r.end = Some(Box::new(RunEnd {
            ending,
            event_id: event.id().to_owned(),
            cause: event.cause().map(str::to_owned),
            time: event.time().to_owned(),
            position: event.position(),
            reason: text("reason"),
            by: text("by"),
        }));
        None
    }
}

impl Runs {
    /// Forgets the least recently active ended run, else the least
    /// recently active run, when full. A forgotten run's terminal can no
    /// longer be checked for exclusivity; that is the price of the bound.
    fn make_room(&mut self) {
        if self.map.len() < self.capacity.max(1) {
            return;
        }
        let victim = self.map.values().min_by_key(|r| (r.end.is_none(), r.touched)).map(|r| r.name.clone());
        if let Some(name) = victim {
            self.map.remove(&name);
            self.dropped += 1;
        }
    }
}

//! An event as the relay keeps it once ingest has matched it: the exact
//! bytes, and the few envelope facts that ordering, deduplication,
//! backpressure and framing need. The parsed tree (payload and all) is
//! dropped after live fan-out, so a buffered or queued event costs about
//! its size. The rare consumer that needs the tree again (a replay filter,
//! a capture down-level) gets it re-read from the bytes.

use std::sync::Arc;

use aep_engine::{Capture, Event, Severity};

use crate::buffer::Position;

pub struct HeldEvent {
    raw: Arc<str>,
    ty: Box<str>,
    source: Box<str>,
    id: Box<str>,
    session: Option<Box<str>>,
    position: Option<Position>,
    severity: Severity,
    capture: Capture,
    agent_scoped: bool,
}

impl HeldEvent {
    /// Keeps what delivery needs of `event`; the bytes are shared, not copied.
    pub fn new(event: &Event) -> HeldEvent {
        HeldEvent {
            raw: event.raw_arc(),
            ty: event.ty().into(),
            source: event.source().into(),
            id: event.id().into(),
            session: event.session().map(Into::into),
            position: event.position(),
            severity: event.severity(),
            capture: event.capture(),
            agent_scoped: event.is_agent_scoped(),
        }
    }

    /// The engine's full view of the event, re-read from its bytes. `None`
    /// cannot happen for bytes that were valid at ingest; callers treat it
    /// as "skip", never as a reason to stop.
    pub fn parse(&self) -> Option<Event> {
        Event::parse(&self.raw).ok()
    }

    /// Memory this event holds: its bytes, its keys and the record itself.
    pub fn size(&self) -> usize {
        std::mem::size_of::<HeldEvent>()
            + self.raw.len()
            + self.ty.len()
            + self.source.len()
            + self.id.len()
            + self.session.as_ref().map_or(0, |s| s.len())
    }

    pub fn raw(&self) -> &str {
        &self.raw
    }

    pub fn raw_arc(&self) -> &Arc<str> {
        &self.raw
    }

    pub fn ty(&self) -> &str {
        &self.ty
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn position(&self) -> Option<Position> {
        self.position
    }

    pub fn severity(&self) -> Severity {
        self.severity
    }

    pub fn capture(&self) -> Capture {
        self.capture
    }

    pub fn is_agent_scoped(&self) -> bool {
        self.agent_scoped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_bytes_and_the_facts() {
        let e = Event::parse(r#"{"aep":"0.1","id":"a","type":"tool.completed","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":4,"epoch":2,"severity":"warning","data":{"x":1}}"#).unwrap();
        let h = HeldEvent::new(&e);
        assert!(Arc::ptr_eq(h.raw_arc(), &e.raw_arc()));
        assert_eq!(
            (h.ty(), h.session(), h.position(), h.severity()),
            ("tool.completed", Some("s"), Some((2, 4)), Severity::Warning)
        );
        assert_eq!(h.parse().unwrap(), e);
        assert!(h.size() > e.raw().len());
    }
}

//! What a connection has to write. Protocol frames (hello, subscriptions,
//! pongs) belong to one socket and go with it; events outlive sockets, so
//! an agent's `attention.resolved` queued as its socket dies is written on
//! the next one instead of being lost (AEP-0003 §8.4).

use std::collections::VecDeque;

use super::output::ClientError;
use crate::protocol::event::{Event, Severity};

/// Events kept for the next live socket, by count…
pub const MAX_QUEUED_EVENTS: usize = 1024;
/// …and by bytes.
pub const MAX_QUEUED_EVENT_BYTES: usize = 8 << 20;

/// Socket frames waiting to be written; beyond this, liveness frames are
/// skipped and requests refused (the driver is not draining).
pub const MAX_SOCKET_FRAMES: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct Outbox {
    frames: VecDeque<String>,
    events: VecDeque<Queued>,
    event_bytes: usize,
    dropped: u64,
}

#[derive(Debug)]
struct Queued {
    text: String,
    /// `debug` and `info` events make room for more severe ones.
    expendable: bool,
}

impl Outbox {
    pub fn push_frame(&mut self, text: String) {
        self.frames.push_back(text);
    }

    pub fn has_room_for_frames(&self) -> bool {
        self.frames.len() < MAX_SOCKET_FRAMES
    }

    /// Queues an event. When the queue is full, the oldest `debug`/`info`
    /// event makes room (or the new one is dropped, if it is one itself);
    /// a full queue of more severe events refuses it. Drops are counted.
    pub fn push_event(&mut self, event: &Event) -> Result<(), ClientError> {
        let text = event.raw();
        if text.len() > MAX_QUEUED_EVENT_BYTES {
            return Err(ClientError::Backpressure);
        }
        let expendable = event.severity() <= Severity::Info;
        while self.events.len() >= MAX_QUEUED_EVENTS || self.event_bytes + text.len() > MAX_QUEUED_EVENT_BYTES {
            match self.events.iter().position(|q| q.expendable) {
                Some(i) => {
                    let gone = self.events.remove(i).map_or(0, |q| q.text.len());
                    self.event_bytes -= gone;
                    self.dropped += 1;
                }
                None if expendable => {
                    self.dropped += 1;
                    return Ok(());
                }
                None => return Err(ClientError::Backpressure),
            }
        }
        self.event_bytes += text.len();
        self.events.push_back(Queued { text: text.to_owned(), expendable });
        Ok(())
    }

    /// The next text to write: socket frames first (hello before anything,
    /// a subscription before the command that relies on it), then events
    /// once the socket is live.
    pub fn pop(&mut self, live: bool) -> Option<String> {
        if let Some(frame) = self.frames.pop_front() {
            return Some(frame);
        }
        if !live {
            return None;
        }
        let queued = self.events.pop_front()?;
        self.event_bytes -= queued.text.len();
        Some(queued.text)
    }

    /// The socket is gone: its frames go with it; events stay when
    /// `keep_events` (an emitter's), else they go too and are counted.
    pub fn drop_socket(&mut self, keep_events: bool) {
        self.frames.clear();
        if !keep_events {
            self.dropped += self.events.len() as u64;
            self.events.clear();
            self.event_bytes = 0;
        }
    }

    pub fn queued_events(&self) -> usize {
        self.events.len()
    }

    pub fn dropped_events(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ids::{Draft, Identity};
    use crate::time::UnixMs;

    fn event(n: usize, severity: Severity) -> Event {
        let me = Identity::new("aep://test/agent/a", "a");
        let seq = u64::try_from(n).unwrap();
        Draft::new("progress.status")
            .session("s")
            .seq(seq)
            .severity(severity)
            .build(&me, format!("E{n}"), UnixMs(0))
            .unwrap()
    }

    #[test]
    fn a_full_queue_drops_debug_and_info_first_and_counts() {
        let mut out = Outbox::default();
        out.push_event(&event(0, Severity::Info)).unwrap();
        for n in 1..MAX_QUEUED_EVENTS {
            out.push_event(&event(n, Severity::Warning)).unwrap();
        }
        out.push_event(&event(9999, Severity::Error)).unwrap();
        assert_eq!(out.dropped_events(), 1, "the info event made room");
        assert_eq!(out.queued_events(), MAX_QUEUED_EVENTS);
        out.push_event(&event(10_000, Severity::Debug)).unwrap();
        assert_eq!(out.dropped_events(), 2, "a new debug event finds no room and is dropped");
        assert_eq!(out.push_event(&event(10_001, Severity::Critical)), Err(ClientError::Backpressure));
        let first = out.pop(true).unwrap();
        assert!(first.contains("\"E1\""), "oldest kept first: {first}");
    }

    #[test]
    fn events_wait_for_a_live_socket_and_survive_losing_one() {
        let mut out = Outbox::default();
        out.push_event(&event(1, Severity::Notice)).unwrap();
        out.push_frame("hello".into());
        assert_eq!(out.pop(false).as_deref(), Some("hello"));
        assert_eq!(out.pop(false), None, "no events before the socket is live");
        out.push_frame("subscribe".into());
        out.drop_socket(true);
        assert_eq!(out.pop(true).map(|t| t.contains("\"E1\"")), Some(true), "the event outlived the socket");
        assert_eq!(out.pop(true), None);

        out.push_event(&event(2, Severity::Notice)).unwrap();
        out.drop_socket(false);
        assert_eq!((out.pop(true), out.dropped_events()), (None, 1), "a consumer's commands go with the socket");
    }
}

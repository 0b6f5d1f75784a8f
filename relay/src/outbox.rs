//! The bounded queue in front of every consumer connection (AEP-0003 §8.4).
//!
//! Fan-out never waits on a slow consumer: it pushes into this queue and
//! moves on. When the queue is full, `debug`/`info` events are dropped (and
//! counted); anything more severe cannot be dropped silently, so the
//! consumer is disconnected instead: its queue is discarded and the
//! connection is told to close (WebSocket: `closing` with the positions it
//! did get; SSE: the stream ends), and it resumes exactly from there.
//!
//! The queue is bounded in items and in bytes: a consumer that reads
//! nothing costs at most `capacity_bytes` of queued output, whatever the
//! size of each item.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

use aep_engine::protocol::filter::Filter;
use aep_engine::{Capture, Severity};
use tokio::sync::Notify;

use crate::buffer::{Position, Replay};
use crate::held::HeldEvent;

/// Why a connection is being closed by the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The relay is shutting down: what is queued is still sent.
    Shutdown,
    /// A single-pass stream (`live=0`) has sent its replay.
    Finished,
    /// The peer said nothing for longer than the idle timeout.
    IdleTimeout,
    /// The consumer fell behind on events it may not lose.
    Overflow,
    /// The peer sent a message larger than the relay takes.
    TooBig { limit: usize },
    /// The peer went away; nothing more can be sent.
    PeerGone,
    /// The connection's credential was revoked.
    Revoked,
}

impl CloseReason {
    /// The `reason` of a `closing` frame.
    /// Whether items queued before the close are still sent.
    pub fn drains_queue(self) -> bool {
        matches!(self, CloseReason::Shutdown | CloseReason::Finished)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Shutdown => "shutdown",
            CloseReason::Finished => "finished",
            CloseReason::IdleTimeout => "idle-timeout",
            CloseReason::Overflow => "backpressure",
            CloseReason::TooBig { .. } => "message-too-big",
            CloseReason::PeerGone => "peer-gone",
            CloseReason::Revoked => "revoked",
        }
    }
}

/// A live event for one connection: the subscriptions it matched (for the
/// delivered positions of `closing`) and the capture ceiling to apply.
pub struct Delivery {
    pub event: Arc<HeldEvent>,
    /// The event's compressed form, made once for every compressed
    /// socket it goes to as stored.
    pub shared: Arc<crate::socket::Shared>,
    /// `None` sends the event as stored.
    pub ceiling: Option<Capture>,
    pub subs: Arc<[Arc<str>]>,
}

/// A subscription's replay: sent whole, before anything queued after it,
/// which is what makes the replay-to-live seam lossless and duplicate-free.
pub struct ReplayBatch {
    pub sub: Arc<str>,
    pub ceiling: Option<Capture>,
    /// Applied as the batch is written, off every lock (`None`: all).
    pub filter: Option<Filter>,
    pub sessions: Vec<Replay>,
}

/// One unit of a replay on the wire.
pub enum ReplayPiece {
    /// The requested position predates an eviction; delivery resumes at
    /// `earliest` (AEP-0003 §5).
    Exhausted {
        session: Arc<str>,
        earliest: Position,
    },
    Event(Arc<HeldEvent>),
}

impl ReplayBatch {
    /// Every exhaustion notice first, then the events session by session,
    /// so no marker ever follows data it qualifies.
    pub fn into_pieces(self) -> Box<dyn Iterator<Item = ReplayPiece> + Send> {
        let notices: Vec<ReplayPiece> = self
            .sessions
            .iter()
            .filter_map(|r| {
                r.exhausted_from.map(|earliest| ReplayPiece::Exhausted { session: r.session.clone(), earliest })
            })
            .collect();
        let filter = self.filter;
        let events = self
            .sessions
            .into_iter()
            .flat_map(|r| r.events.into_iter())
            .filter(move |held| filter.as_ref().is_none_or(|f| held.parse().is_some_and(|e| f.matches(&e))))
            .map(ReplayPiece::Event);
        Box::new(notices.into_iter().chain(events))
    }
}

/// One item on its way to a connection.
pub enum Outgoing {
    /// An encoded connection-scoped frame (hello, subscribed, error, …).
    Frame(String),
    /// Event bytes sent exactly as received (a routed command).
    Verbatim(Arc<str>),
    Live(Delivery),
    /// Boxed: every queue slot is as large as the largest variant, and a
    /// replay (with its filter) is rare next to live events.
    Replay(Box<ReplayBatch>),
}

/// Bookkeeping bytes charged per queued item on top of its payload.
const ITEM_OVERHEAD: usize = 64;

impl Outgoing {
    /// What this item costs the queue. Frames, commands and live events
    /// are charged their wire size: a consumer that stops reading holds
    /// them all. A replay batch is charged only its references, because
    /// its events are the replay buffer's own (already bounded there).
    fn cost(&self) -> usize {
        ITEM_OVERHEAD
            + match self {
                Outgoing::Frame(text) => text.len(),
                Outgoing::Verbatim(bytes) => bytes.len(),
                Outgoing::Live(d) => d.event.raw().len() + d.subs.len() * std::mem::size_of::<Arc<str>>(),
                Outgoing::Replay(batch) => {
                    batch.sessions.iter().map(|r| r.events.len() * std::mem::size_of::<Arc<HeldEvent>>()).sum::<usize>()
                }
            }
    }

    /// Only `debug`/`info` live events may be dropped under backpressure.
    fn is_droppable(&self) -> bool {
        matches!(self, Outgoing::Live(d) if d.event.severity() < Severity::Notice)
    }
}

/// What became of a pushed item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// Dropped under backpressure (a `debug`/`info` event).
    Dropped,
    /// The queue was full for an item that may not be dropped: the
    /// connection is now closing.
    Overflowed,
    /// The connection is already closing.
    Closed,
}

/// What the connection's writer should do next.
pub enum Next {
    Send(Outgoing),
    Close(CloseReason),
}

impl Next {
    pub fn is_send(&self) -> bool {
        matches!(self, Next::Send(_))
    }
}

struct Inner {
    queue: VecDeque<(Outgoing, usize)>,
    /// Sum of the queued items' costs.
    bytes: usize,
    closing: Option<CloseReason>,
}

impl Inner {
    fn pop(&mut self) -> Option<Outgoing> {
        let (item, cost) = self.queue.pop_front()?;
        self.bytes -= cost;
        Some(item)
    }

    fn clear(&mut self) {
        self.queue = VecDeque::new();
        self.bytes = 0;
    }
}

/// A bounded single-consumer queue toward one connection.
pub struct Outbox {
    inner: Mutex<Inner>,
    ready: Notify,
    /// Wakes a writer stuck on a full socket when the connection is cut.
    cut: Notify,
    capacity: usize,
    capacity_bytes: usize,
    dropped: AtomicU64,
}

impl Outbox {
    /// A queue of at most `capacity` items and about `capacity_bytes`
    /// bytes (one item larger than that is still taken into an empty
    /// queue, so nothing legitimate is unsendable).
    pub fn new(capacity: usize, capacity_bytes: usize) -> Outbox {
        Outbox {
            inner: Mutex::new(Inner { queue: VecDeque::new(), bytes: 0, closing: None }),
            ready: Notify::new(),
            cut: Notify::new(),
            capacity: capacity.max(1),
            capacity_bytes: capacity_bytes.max(1),
            dropped: AtomicU64::new(0),
        }
    }

    pub fn push(&self, item: Outgoing) -> Pushed {
        let mut inner = lock(&self.inner);
        if inner.closing.is_some() {
            return Pushed::Closed;
        }
        let cost = item.cost();
        let fits =
            inner.queue.len() < self.capacity && (inner.queue.is_empty() || inner.bytes + cost <= self.capacity_bytes);
        if fits {
            inner.queue.push_back((item, cost));
            inner.bytes += cost;
            drop(inner);
            self.ready.notify_one();
            return Pushed::Queued;
        }
        if item.is_droppable() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Pushed::Dropped;
        }
        inner.clear();
        inner.closing = Some(CloseReason::Overflow);
        drop(inner);
        self.ready.notify_one();
        self.cut.notify_waiters();
        Pushed::Overflowed
    }

    /// Asks the writer to close. Reasons that drain the queue let queued
    /// items out first; the others discard them and cut short a write in
    /// progress. The first reason wins.
    pub fn close(&self, reason: CloseReason) {
        let mut inner = lock(&self.inner);
        if inner.closing.is_none() {
            inner.closing = Some(reason);
            if !reason.drains_queue() {
                inner.clear();
            }
        }
        drop(inner);
        self.ready.notify_one();
        if !reason.drains_queue() {
            self.cut.notify_waiters();
        }
    }

    /// Resolves once the connection is being closed for a reason that
    /// does not drain the queue: a writer blocked on a peer that stopped
    /// reading must give up instead of waiting for it forever.
    pub async fn cut(&self) -> CloseReason {
        loop {
            let notified = self.cut.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(reason) = lock(&self.inner).closing.filter(|r| !r.drains_queue()) {
                return reason;
            }
            notified.await;
        }
    }

    /// Bytes currently queued.
    pub fn queued_bytes(&self) -> usize {
        lock(&self.inner).bytes
    }

    /// Waits for the next item, or for the close once the queue is empty.
    pub async fn next(&self) -> Next {
        loop {
            {
                let mut inner = lock(&self.inner);
                if let Some(item) = inner.pop() {
                    return Next::Send(item);
                }
                if let Some(reason) = inner.closing {
                    return Next::Close(reason);
                }
            }
            self.ready.notified().await;
        }
    }

    /// The next item if one is ready now, for batching writes.
    pub fn try_next(&self) -> Option<Next> {
        let mut inner = lock(&self.inner);
        match inner.pop() {
            Some(item) => Some(Next::Send(item)),
            None => inner.closing.map(Next::Close),
        }
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        lock(&self.inner).queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `debug`/`info` events dropped so far under backpressure.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(severity: &str) -> Outgoing {
        let e = aep_engine::Event::parse(&format!(
            r#"{{"aep":"0.1","id":"x","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":1,"severity":"{severity}"}}"#
        ))
        .unwrap();
        Outgoing::Live(Delivery {
            event: Arc::new(HeldEvent::new(&e)),
            shared: crate::socket::Shared::new(),
            ceiling: None,
            subs: Arc::from([]),
        })
    }

    #[test]
    fn a_queue_slot_stays_small() {
        // Multiplied by every queued item of every connection.
        assert!(std::mem::size_of::<(Outgoing, usize)>() <= 48, "{}", std::mem::size_of::<(Outgoing, usize)>());
    }

    #[tokio::test]
    async fn drops_info_but_closes_on_notice_when_full() {
        let o = Outbox::new(2, usize::MAX);
        assert_eq!(o.push(live("info")), Pushed::Queued);
        assert_eq!(o.push(live("notice")), Pushed::Queued);
        assert_eq!(o.push(live("debug")), Pushed::Dropped);
        assert_eq!(o.push(live("info")), Pushed::Dropped);
        assert_eq!(o.dropped(), 2);
        assert_eq!(o.len(), 2);
        assert_eq!(o.push(live("warning")), Pushed::Overflowed);
        assert!(o.is_empty(), "an overflowed queue is discarded");
        assert!(matches!(o.next().await, Next::Close(CloseReason::Overflow)));
        assert_eq!(o.push(Outgoing::Frame("{}".into())), Pushed::Closed);
    }

    #[tokio::test]
    async fn bytes_bound_the_queue_and_cutting_wakes_the_writer() {
        let o = Arc::new(Outbox::new(1_000, 1_000));
        assert_eq!(o.push(Outgoing::Frame("a".repeat(5_000))), Pushed::Queued, "one big item fits an empty queue");
        assert_eq!(o.push(live("info")), Pushed::Dropped);
        assert!(o.next().await.is_send());
        for _ in 0..2 {
            assert_eq!(o.push(Outgoing::Frame("b".repeat(300))), Pushed::Queued);
        }
        assert!(o.queued_bytes() <= 1_000);
        let cut = tokio::spawn({
            let o = o.clone();
            async move { o.cut().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(o.push(Outgoing::Frame("c".repeat(600))), Pushed::Overflowed);
        assert_eq!(cut.await.unwrap(), CloseReason::Overflow);
        assert_eq!(o.queued_bytes(), 0);
    }

    #[tokio::test]
    async fn shutdown_drains_then_closes() {
        let o = Outbox::new(4, usize::MAX);
        o.push(Outgoing::Frame("a".into()));
        o.close(CloseReason::Shutdown);
        assert!(matches!(o.next().await, Next::Send(Outgoing::Frame(f)) if f == "a"));
        assert!(matches!(o.next().await, Next::Close(CloseReason::Shutdown)));
    }

    #[tokio::test]
    async fn a_waiting_writer_is_woken() {
        let o = Arc::new(Outbox::new(4, usize::MAX));
        let waiter = tokio::spawn({
            let o = o.clone();
            async move { matches!(o.next().await, Next::Send(_)) }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        o.push(Outgoing::Frame("x".into()));
        assert!(waiter.await.unwrap());
    }
}

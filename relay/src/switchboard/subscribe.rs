//! Subscriptions and replay: an SSE stream's one, a socket's many, each
//! replayed from its `from` and then live, with nothing between them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::{codes, ErrorFrame, Frame, ResumeFrom, SessionPosition, Subscribe};
use aep_engine::Capture;

use super::{Binding, Conn, ConnId, Listener, Subscription, Switchboard};
use crate::auth::Access;
use crate::buffer::{Replay, SessionStore};
use crate::outbox::{CloseReason, Outbox, Outgoing, ReplayBatch};
use crate::sync::lock;

/// An SSE request: one subscription spelled in the query.
pub struct StreamRequest {
    pub filter: Filter,
    pub ceiling: Option<Capture>,
    pub from: Option<ResumeFrom>,
    /// Without `from`: the position a `Last-Event-ID` header names, its
    /// session as HTTP delivered it ([`SessionStore::named_in_header`]).
    pub last_event_id: Option<SessionPosition>,
    /// `false` (`live=0`): end after the replay.
    pub live: bool,
}

impl Switchboard {
    /// Opens an SSE stream: its replay is queued and, unless `live=0`, it
    /// receives live events from the same instant. `None` from `conn` for
    /// a single-pass stream, which is never registered.
    pub fn open_stream(&self, request: StreamRequest) -> Result<(Option<ConnId>, Arc<Outbox>), ErrorFrame> {
        self.check_from(request.from.as_ref(), "stream")?;
        self.check_filter(&request.filter, "stream")?;
        let outbox = self.outbox();
        let sub: Arc<str> = Arc::from("stream");
        let mut fanout = lock(&self.fanout);
        let sessions = {
            let state = lock(&self.state);
            let header = request.last_event_id.map(|p| {
                let session = state.store.named_in_header(&p.session).to_owned();
                ResumeFrom::Positions(vec![SessionPosition { session, ..p }])
            });
            replay(&state.store, request.from.as_ref().or(header.as_ref()))
        };
        if !sessions.is_empty() {
            let filter = (!request.filter.is_match_all()).then(|| request.filter.clone());
            outbox.push(Outgoing::Replay(Box::new(ReplayBatch {
                sub: sub.clone(),
                ceiling: request.ceiling,
                filter,
                sessions,
            })));
        }
        if !request.live {
            outbox.close(CloseReason::Finished);
            return Ok((None, outbox));
        }
        let conn = Conn { outbox: outbox.clone(), binding: Binding::Stream, access: Access::anonymous(), peer: None };
        let id = lock(&self.state).add_conn(conn);
        let subs = vec![Subscription::new(sub, request.filter, request.ceiling)];
        fanout.listeners.insert(id, Listener { outbox: outbox.clone(), subs });
        self.subscriptions.fetch_add(1, Ordering::Relaxed);
        Ok((Some(id), outbox))
    }

    fn check_from(&self, from: Option<&ResumeFrom>, id: &str) -> Result<(), ErrorFrame> {
        match from {
            Some(ResumeFrom::Positions(p)) if p.len() > self.limits.max_from => Err(ErrorFrame::for_request(
                id,
                codes::LIMIT_EXCEEDED,
                Some(format!(
                    "`from` lists {} positions; this relay replays at most {} (max-from)",
                    p.len(),
                    self.limits.max_from
                )),
            )),
            _ => Ok(()),
        }
    }

    /// Every live event is matched against every filter value, so one
    /// filter's size is bounded.
    fn check_filter(&self, filter: &Filter, id: &str) -> Result<(), ErrorFrame> {
        let weight = filter.weight();
        if weight > self.limits.max_filter_patterns {
            return Err(ErrorFrame::for_request(
                id,
                codes::LIMIT_EXCEEDED,
                Some(format!(
                    "the filter compares against {weight} values; this relay allows at most {} per filter (max-filter-patterns)",
                    self.limits.max_filter_patterns
                )),
            ));
        }
        Ok(())
    }

    /// The held events a subscription's `from` names. Its filter is
    /// applied later, by the connection's writer, off every lock.
    fn replay(&self, from: Option<&ResumeFrom>) -> Vec<Replay> {
        let state = lock(&self.state);
        replay(&state.store, from)
    }

    /// Adds a subscription to a socket: `subscribed`, then its replay,
    /// then live events, in that order on the wire. Refusals are in-band
    /// and leave the connection and its other subscriptions untouched.
    pub fn subscribe(&self, conn: ConnId, request: Subscribe) -> Result<(), ErrorFrame> {
        self.check_from(request.from.as_ref(), &request.id)?;
        self.check_filter(&request.filter, &request.id)?;
        let mut fanout = lock(&self.fanout);
        let Some(listener) = fanout.listeners.get(&conn) else {
            return Err(ErrorFrame::for_request(request.id, codes::UNAUTHORIZED, Some("connection is closing".into())));
        };
        if listener.subs.iter().any(|s| *s.id == *request.id) {
            return Err(ErrorFrame::for_request(
                request.id,
                codes::INVALID_FILTER,
                Some("this connection already has a subscription with that id".into()),
            ));
        }
        if listener.subs.len() >= self.limits.max_subscriptions {
            return Err(ErrorFrame::for_request(
                request.id,
                codes::LIMIT_EXCEEDED,
                Some(format!(
                    "at most {} subscriptions per connection (max-subscriptions)",
                    self.limits.max_subscriptions
                )),
            ));
        }
        let held = listener.weight();
        if held + request.filter.weight() > self.limits.max_connection_patterns {
            return Err(ErrorFrame::for_request(
                request.id,
                codes::LIMIT_EXCEEDED,
                Some(format!(
                    "this connection's filters already compare against {held} values; at most {} per connection (max-connection-patterns)",
                    self.limits.max_connection_patterns
                )),
            ));
        }
        let sessions = self.replay(request.from.as_ref());
        let Some(listener) = fanout.listeners.get_mut(&conn) else {
            return Err(ErrorFrame::for_request(request.id, codes::UNAUTHORIZED, Some("connection is closing".into())));
        };
        let id: Arc<str> = Arc::from(request.id.as_str());
        listener.outbox.push(Outgoing::Frame(Frame::Subscribed { id: request.id }.encode()));
        if !sessions.is_empty() {
            let filter = (!request.filter.is_match_all()).then(|| request.filter.clone());
            let batch = ReplayBatch { sub: id.clone(), ceiling: request.capture, filter, sessions };
            listener.outbox.push(Outgoing::Replay(Box::new(batch)));
        }
        listener.subs.push(Subscription::new(id, request.filter, request.capture));
        self.subscriptions.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Removes a subscription; `false` when there was none by that id.
    pub fn unsubscribe(&self, conn: ConnId, id: &str) -> bool {
        let mut fanout = lock(&self.fanout);
        let Some(listener) = fanout.listeners.get_mut(&conn) else { return false };
        let before = listener.subs.len();
        listener.subs.retain(|s| &*s.id != id);
        let removed = before - listener.subs.len();
        self.subscriptions.fetch_sub(removed, Ordering::Relaxed);
        removed > 0
    }
}

/// The held events a resume asks for, unfiltered.
fn replay(store: &SessionStore, from: Option<&ResumeFrom>) -> Vec<Replay> {
    match from {
        None => Vec::new(),
        Some(ResumeFrom::All) => store.replay_all(),
        Some(ResumeFrom::Positions(positions)) => positions
            .iter()
            .filter_map(|p| store.replay_after(&p.session, p.at()))
            .filter(|r| r.exhausted_from.is_some() || !r.events.is_empty())
            .collect(),
    }
}

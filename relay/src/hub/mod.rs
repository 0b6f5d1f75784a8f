//! The relay's shared state and every operation on it.
//!
//! One lock guards the replay buffers, the connections with their
//! subscriptions, and the session claims. Ingest admits and fans out under
//! it, and a subscription snapshots its replay and starts receiving live
//! events under it, so nothing falls between replay and live and nothing
//! is sent twice. Nothing under the lock waits: sends go into each
//! connection's bounded [`Outbox`].

mod claims;
mod fanout;
mod route;
mod stats;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use aep_client::protocol::filter::Filter;
use aep_client::protocol::frame::{
    codes, ControlCapability, ErrorFrame, Frame, Hello, ResumeFrom, Role, RosterEntry, Subscribe,
};
use aep_client::{Capture, Event};
use tokio::sync::watch;

use crate::auth::Access;
use crate::buffer::{Admission, Replay, SessionStore};
use crate::config::Config;
use crate::outbox::{CloseReason, Outbox, Outgoing, ReplayBatch};
use claims::Claims;
use fanout::fan_out;
pub use stats::{Counters, Stats};

/// Identifies one connection (an SSE stream or a WebSocket) for the
/// lifetime of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// Where events came from: only a socket can claim a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Http,
    Socket(ConnId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    Stream,
    Socket,
}

/// What a socket declared in its `hello`, repeated verbatim in rosters
/// and consulted for the `unsupported` gate.
#[derive(Clone, Debug)]
pub struct Peer {
    pub role: Option<Role>,
    pub agent: Option<String>,
    pub instance: Option<String>,
    pub control: Option<ControlCapability>,
    pub emits: Option<Vec<String>>,
}

impl Peer {
    pub fn from_hello(hello: &Hello) -> Peer {
        let identity = hello.identity.clone().unwrap_or_default();
        Peer {
            role: hello.role.clone(),
            agent: identity.agent,
            instance: identity.instance,
            control: hello.capabilities.control.clone(),
            emits: hello.capabilities.emits.clone(),
        }
    }

    /// Watch-class requests (roster) are refused to emitter-only
    /// connections (AEP-0003 §4.1 rule 2); an absent role watches.
    pub fn may_watch(&self) -> bool {
        self.role.as_ref().is_none_or(Role::is_consumer)
    }
}

struct Subscription {
    id: Arc<str>,
    filter: Filter,
    ceiling: Option<Capture>,
}

struct Conn {
    outbox: Arc<Outbox>,
    binding: Binding,
    access: Access,
    peer: Option<Peer>,
    subs: Vec<Subscription>,
}

struct State {
    store: SessionStore,
    conns: HashMap<ConnId, Conn>,
    claims: Claims,
    next_id: u64,
    counters: Counters,
}

impl State {
    fn add_conn(&mut self, conn: Conn) -> ConnId {
        self.next_id += 1;
        let id = ConnId(self.next_id);
        self.conns.insert(id, conn);
        id
    }
}

/// An SSE request: one subscription spelled in the query.
pub struct StreamRequest {
    pub filter: Filter,
    pub ceiling: Option<Capture>,
    pub from: Option<ResumeFrom>,
    /// `false` (`live=0`): end after the replay.
    pub live: bool,
}

/// What ingest did with a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    pub accepted: usize,
    pub stored: usize,
    pub duplicates: usize,
}

/// Bounds applied to requests, copied from [`Config`].
#[derive(Clone, Copy, Debug)]
struct Limits {
    send_queue: usize,
    max_from: usize,
    max_subscriptions: usize,
}

pub struct Hub {
    state: Mutex<State>,
    limits: Limits,
    shutdown: watch::Sender<bool>,
    /// Connection tasks still running (sockets before and after `hello`,
    /// SSE bodies), so shutdown can wait for them to drain.
    tasks: AtomicUsize,
}

impl Hub {
    pub fn new(config: &Config) -> Hub {
        Hub {
            state: Mutex::new(State {
                store: SessionStore::new(config.buffer_depth, config.max_sessions),
                conns: HashMap::new(),
                claims: Claims::new(config.max_sessions),
                next_id: 0,
                counters: Counters::default(),
            }),
            limits: Limits {
                send_queue: config.send_queue,
                max_from: config.max_from,
                max_subscriptions: config.max_subscriptions,
            },
            shutdown: watch::channel(false).0,
            tasks: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("hub lock poisoned")
    }

    /// Registers a socket whose `hello` was accepted; the reply goes out
    /// first, before anything else can be queued toward it.
    pub fn attach_socket(&self, access: Access, peer: Peer, hello_reply: String) -> (ConnId, Arc<Outbox>) {
        let outbox = Arc::new(Outbox::new(self.limits.send_queue));
        outbox.push(Outgoing::Frame(hello_reply));
        let conn =
            Conn { outbox: outbox.clone(), binding: Binding::Socket, access, peer: Some(peer), subs: Vec::new() };
        let id = self.lock().add_conn(conn);
        (id, outbox)
    }

    /// Opens an SSE stream: its replay is queued and, unless `live=0`, it
    /// receives live events from the same instant. `None` from `conn` for
    /// a single-pass stream, which is never registered.
    pub fn open_stream(&self, request: StreamRequest) -> Result<(Option<ConnId>, Arc<Outbox>), ErrorFrame> {
        self.check_from(request.from.as_ref(), "stream")?;
        let outbox = Arc::new(Outbox::new(self.limits.send_queue));
        let sub: Arc<str> = Arc::from("stream");
        let mut state = self.lock();
        let sessions = replay(&state.store, request.from.as_ref(), &request.filter);
        if !sessions.is_empty() {
            outbox.push(Outgoing::Replay(ReplayBatch { sub: sub.clone(), ceiling: request.ceiling, sessions }));
        }
        if !request.live {
            outbox.close(CloseReason::Finished);
            return Ok((None, outbox));
        }
        let subs = vec![Subscription { id: sub, filter: request.filter, ceiling: request.ceiling }];
        let conn =
            Conn { outbox: outbox.clone(), binding: Binding::Stream, access: Access::Anonymous, peer: None, subs };
        let id = state.add_conn(conn);
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

    /// Adds a subscription to a socket: `subscribed`, then its replay,
    /// then live events, in that order on the wire. Refusals are in-band
    /// and leave the connection and its other subscriptions untouched.
    pub fn subscribe(&self, conn: ConnId, request: Subscribe) -> Result<(), ErrorFrame> {
        self.check_from(request.from.as_ref(), &request.id)?;
        let mut state = self.lock();
        let state = &mut *state;
        let Some(c) = state.conns.get_mut(&conn) else {
            return Err(ErrorFrame::for_request(request.id, codes::UNAUTHORIZED, Some("connection is closing".into())));
        };
        if c.subs.iter().any(|s| *s.id == *request.id) {
            return Err(ErrorFrame::for_request(
                request.id,
                codes::INVALID_FILTER,
                Some("this connection already has a subscription with that id".into()),
            ));
        }
        if c.subs.len() >= self.limits.max_subscriptions {
            return Err(ErrorFrame::for_request(
                request.id,
                codes::LIMIT_EXCEEDED,
                Some(format!(
                    "at most {} subscriptions per connection (max-subscriptions)",
                    self.limits.max_subscriptions
                )),
            ));
        }
        let id: Arc<str> = Arc::from(request.id.as_str());
        c.outbox.push(Outgoing::Frame(Frame::Subscribed { id: request.id }.encode()));
        let sessions = replay(&state.store, request.from.as_ref(), &request.filter);
        if !sessions.is_empty() {
            c.outbox.push(Outgoing::Replay(ReplayBatch { sub: id.clone(), ceiling: request.capture, sessions }));
        }
        c.subs.push(Subscription { id, filter: request.filter, ceiling: request.capture });
        Ok(())
    }

    /// Removes a subscription; `false` when there was none by that id.
    pub fn unsubscribe(&self, conn: ConnId, id: &str) -> bool {
        let mut state = self.lock();
        let Some(c) = state.conns.get_mut(&conn) else { return false };
        let before = c.subs.len();
        c.subs.retain(|s| &*s.id != id);
        c.subs.len() != before
    }

    /// Admits events to their session buffers and fans each one out, in
    /// order, under one lock so a batch is never interleaved. Agent-scoped
    /// and unpositioned events are live-only. Events from a socket claim
    /// their session for that connection.
    pub fn ingest(&self, origin: Origin, events: Vec<Event>) -> IngestReport {
        let mut report = IngestReport::default();
        let mut state = self.lock();
        let state = &mut *state;
        for event in events {
            let event = Arc::new(event);
            report.accepted += 1;
            state.counters.events_received += 1;
            if let (Some(session), Some(_), false) = (event.session(), event.seq(), event.is_agent_scoped()) {
                match state.store.admit(session, event.clone()) {
                    Admission::Stored => report.stored += 1,
                    Admission::Duplicate => report.duplicates += 1,
                    Admission::BeforeEvicted => {}
                }
                if let Origin::Socket(conn) = origin {
                    state.claims.claim(conn, session);
                }
            }
            fan_out(&state.conns, &event, None, &mut state.counters);
        }
        state.counters.events_stored += report.stored as u64;
        state.counters.duplicates += report.duplicates as u64;
        report
    }

    /// Routes a command from `sender` to the one claimant of its session,
    /// or says why not (see [`route`](self::route)).
    pub fn route(&self, sender: ConnId, command: Event) -> Result<ConnId, ErrorFrame> {
        let mut state = self.lock();
        let routed = route::route(&mut state, sender, Arc::new(command));
        match routed {
            Ok(_) => state.counters.commands_routed += 1,
            Err(_) => state.counters.commands_refused += 1,
        }
        routed
    }

    /// Counts a command refused before it reached routing (for example an
    /// unauthenticated sender whose command was also malformed).
    pub fn count_refused_command(&self) {
        self.lock().counters.commands_refused += 1;
    }

    /// One entry per live (connection, claimed session), with what that
    /// connection declared in its `hello` (AEP-0003 §4.1).
    pub fn roster(&self) -> Vec<RosterEntry> {
        let state = self.lock();
        state
            .claims
            .pairs()
            .into_iter()
            .filter_map(|(conn, session)| {
                let peer = state.conns.get(&conn)?.peer.as_ref()?;
                Some(RosterEntry {
                    session: session.to_string(),
                    agent: peer.agent.clone(),
                    instance: peer.instance.clone(),
                    control: peer.control.clone(),
                    emits: peer.emits.clone(),
                })
            })
            .collect()
    }

    /// Forgets a connection, its subscriptions and its claims.
    pub fn detach(&self, conn: ConnId) {
        let mut state = self.lock();
        if let Some(c) = state.conns.remove(&conn) {
            c.outbox.close(CloseReason::PeerGone);
        }
        state.claims.release(conn);
    }

    /// Starts an orderly shutdown: every connection is told to close after
    /// what is already queued.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
        for conn in self.lock().conns.values() {
            conn.outbox.close(CloseReason::Shutdown);
        }
    }

    /// Resolves when shutdown has begun.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Marks a connection task as running until the guard drops.
    pub fn task_guard(self: &Arc<Self>) -> TaskGuard {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    /// Connection tasks still running.
    pub fn running_tasks(&self) -> usize {
        self.tasks.load(Ordering::SeqCst)
    }

    pub fn stats(&self) -> Stats {
        let state = self.lock();
        let count = |b: Binding| state.conns.values().filter(|c| c.binding == b).count();
        Stats {
            sessions: state.store.session_count(),
            buffered_events: state.store.buffered(),
            tombstones: state.store.tombstone_count(),
            streams: count(Binding::Stream),
            sockets: count(Binding::Socket),
            subscriptions: state.conns.values().map(|c| c.subs.len()).sum(),
            claims: state.claims.len(),
            counters: state.counters.clone(),
        }
    }

    /// Events held for one session.
    pub fn session_len(&self, session: &str) -> usize {
        self.lock().store.session_len(session)
    }
}

/// Keeps [`Hub::running_tasks`] counting a connection task until dropped.
pub struct TaskGuard(Arc<Hub>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The replay a subscription asked for, filtered.
fn replay(store: &SessionStore, from: Option<&ResumeFrom>, filter: &Filter) -> Vec<Replay> {
    let keep = |e: &Event| filter.matches(e);
    match from {
        None => Vec::new(),
        Some(ResumeFrom::All) => store.replay_all(keep),
        Some(ResumeFrom::Positions(positions)) => positions
            .iter()
            .filter_map(|p| store.replay_after(&p.session, p.at(), keep))
            .filter(|r| r.exhausted_from.is_some() || !r.events.is_empty())
            .collect(),
    }
}

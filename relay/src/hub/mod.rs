//! The relay's shared state and every operation on it.
//!
//! Two locks, always taken in this order:
//!
//! - `fanout` holds each connection's subscriptions. Ingest matches and
//!   queues every event under it, so a batch is never interleaved with
//!   another, and a subscription snapshots its replay and starts receiving
//!   live events under it, so nothing falls between replay and live and
//!   nothing is sent twice. Filter matching (bounded per filter and per
//!   connection) happens here and only here.
//! - `state` holds the replay buffers, the connection registry and the
//!   session claims. It is held only for bookkeeping, never while filters
//!   run, so `/healthz`, the roster and new connections never wait behind a
//!   large fan-out.
//!
//! Nothing under either lock waits on the network or the disk: sends go
//! into each connection's bounded [`Outbox`], and history is handed to its
//! [`Storage`] (memory, a data directory written by group commit, or a
//! tier's JetStream stream), whose receipt is awaited after the locks are
//! released. Claims held on other members of a tier are the [`Routing`]'s.

mod claims;
mod fanout;
mod route;
pub mod routing;
mod stats;
pub mod storage;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::{
    codes, ControlCapability, ErrorFrame, Frame, Hello, ResumeFrom, Role, RosterEntry, SessionPosition, Subscribe,
};
use aep_engine::{Capture, Event};
use tokio::sync::watch;

use crate::audit::{Audit, Bounds};
use crate::auth::{Access, Principal};
use crate::buffer::{Admission, Committer, Disk, DiskError, Replay, SessionStore, StoreLimits};
use crate::config::Config;
use crate::held::Held;
use crate::outbox::{CloseReason, Outbox, Outgoing, ReplayBatch};
use crate::sync::lock;
use claims::Claims;
use fanout::{fan_out, Tally};
use route::Target;
use routing::{Alone, Routing};
pub use stats::{Counters, Stats};
use storage::{Admitted, Batch, DataDir, Kind, Memory, Receipt, Storage};

/// Identifies one connection (an SSE stream or a WebSocket) for the
/// lifetime of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// Where events came from: only a socket can claim a session. Events
/// another member of a tier accepted arrive as `Http`: they claim nothing
/// here.
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

    /// Events other than commands come from emitters (`emitter`, `both`);
    /// a consumer, or a connection that declared no role, sends commands
    /// only (AEP-0003 §3.5 rule 3).
    pub fn may_emit(&self) -> bool {
        self.role.as_ref().is_some_and(Role::is_emitter)
    }
}

struct Subscription {
    id: Arc<str>,
    /// `[id]`, shared by every delivery this subscription alone matches.
    as_list: Arc<[Arc<str>]>,
    filter: Filter,
    ceiling: Option<Capture>,
}

impl Subscription {
    fn new(id: Arc<str>, filter: Filter, ceiling: Option<Capture>) -> Subscription {
        Subscription { as_list: Arc::from([id.clone()]), id, filter, ceiling }
    }
}

/// A connection as fan-out sees it: where to queue, and what it asked for.
struct Listener {
    outbox: Arc<Outbox>,
    subs: Vec<Subscription>,
}

impl Listener {
    /// Filter values across all subscriptions: the matching cost of one
    /// event for this connection.
    fn weight(&self) -> usize {
        self.subs.iter().map(|s| s.filter.weight()).sum()
    }
}

/// What the `fanout` lock guards.
#[derive(Default)]
struct Fanout {
    listeners: HashMap<ConnId, Listener>,
}

/// A connection as the registry sees it.
struct Conn {
    outbox: Arc<Outbox>,
    binding: Binding,
    access: Access,
    peer: Option<Peer>,
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
    /// Without `from`: the position a `Last-Event-ID` header names, its
    /// session as HTTP delivered it ([`SessionStore::named_in_header`]).
    pub last_event_id: Option<SessionPosition>,
    /// `false` (`live=0`): end after the replay.
    pub live: bool,
}

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
    pub code: &'static str,
    pub detail: String,
}

/// Where a routed command went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed {
    /// To a connection of this process.
    Here(ConnId),
    /// To another member of the tier, which delivers it.
    Forwarded,
}

/// Bounds applied to requests, copied from [`Config`].
#[derive(Clone, Copy, Debug)]
struct Limits {
    send_queue: usize,
    send_queue_bytes: usize,
    max_from: usize,
    max_subscriptions: usize,
    max_filter_patterns: usize,
    max_connection_patterns: usize,
}

pub struct Hub {
    fanout: Mutex<Fanout>,
    state: Mutex<State>,
    /// Subscriptions across all connections, readable without waiting for
    /// a fan-out in progress.
    subscriptions: AtomicUsize,
    limits: Limits,
    shutdown: watch::Sender<bool>,
    /// Where accepted events become history.
    storage: Box<dyn Storage>,
    /// Claims held beyond this process, and how to reach them.
    routing: Arc<dyn Routing>,
    /// Connection tasks still running (sockets before and after `hello`,
    /// SSE bodies), so shutdown can wait for them to drain.
    tasks: AtomicUsize,
    /// Sees every event admitted (Web Push): it must only enqueue.
    observer: OnceLock<Observer>,
    /// The control trail (`--data-dir`): commands, acks, outcomes.
    audit: Option<Arc<Audit>>,
}

/// Called with each admitted event, under the hub's locks.
pub type Observer = Box<dyn Fn(&Event) + Send + Sync>;

impl Hub {
    /// A hub whose history lives in memory only.
    pub fn new(config: &Config) -> Hub {
        Hub::with(config, SessionStore::new(store_limits(config)), Box::new(Memory), Arc::new(Alone))
    }

    /// A hub whose history is durable when `config.data_dir` names a
    /// directory, restored from it.
    pub fn open(config: &Config) -> Result<Hub, DiskError> {
        let Some(dir) = &config.data_dir else { return Ok(Hub::new(config)) };
        let disk = Disk::open(dir)?;
        let mut store = SessionStore::restore(store_limits(config), disk.load()?)?;
        disk.write(&store.take_journal())?;
        let storage = DataDir { dir: dir.clone(), committer: Committer::start(disk) };
        let mut hub = Hub::with(config, store, Box::new(storage), Arc::new(Alone));
        if !config.audit_retention.is_zero() {
            let bounds = Bounds { retention: config.audit_retention, max_bytes: config.audit_bytes };
            hub.audit = Some(Arc::new(Audit::open(dir, bounds).map_err(|e| DiskError(format!("audit trail: {e}")))?));
        }
        Ok(hub)
    }

    /// A hub over any home of history and any reach of claims.
    pub fn with(config: &Config, store: SessionStore, storage: Box<dyn Storage>, routing: Arc<dyn Routing>) -> Hub {
        Hub {
            storage,
            routing,
            fanout: Mutex::new(Fanout::default()),
            subscriptions: AtomicUsize::new(0),
            state: Mutex::new(State {
                store,
                conns: HashMap::new(),
                claims: Claims::new(config.max_sessions),
                next_id: 0,
                counters: Counters::default(),
            }),
            limits: Limits {
                send_queue: config.send_queue,
                send_queue_bytes: config.send_queue_bytes,
                max_from: config.max_from,
                max_subscriptions: config.max_subscriptions,
                max_filter_patterns: config.max_filter_patterns,
                max_connection_patterns: config.max_connection_patterns,
            },
            shutdown: watch::channel(false).0,
            tasks: AtomicUsize::new(0),
            observer: OnceLock::new(),
            audit: None,
        }
    }

    fn outbox(&self) -> Arc<Outbox> {
        Arc::new(Outbox::new(self.limits.send_queue, self.limits.send_queue_bytes))
    }

    /// Registers a socket whose `hello` was accepted; the reply goes out
    /// first, before anything else can be queued toward it.
    pub fn attach_socket(&self, access: Access, peer: Peer, hello_reply: String) -> (ConnId, Arc<Outbox>) {
        let outbox = self.outbox();
        outbox.push(Outgoing::Frame(hello_reply));
        let mut fanout = lock(&self.fanout);
        let conn = Conn { outbox: outbox.clone(), binding: Binding::Socket, access, peer: Some(peer) };
        let id = lock(&self.state).add_conn(conn);
        fanout.listeners.insert(id, Listener { outbox: outbox.clone(), subs: Vec::new() });
        (id, outbox)
    }

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
    /// The receipt resolves once the batch is history ([`Storage`]): at
    /// once in memory, once synced with `--data-dir`, once the shared
    /// stream holds it in a tier. A socket is not answered per event: if
    /// its events cannot be kept, the socket is closed so its emitter
    /// reconnects (in a tier, to another member) and resends.
    pub fn ingest(&self, origin: Origin, who: &Principal, events: Vec<Event>) -> Result<Receipt, Refusal> {
        let held: Vec<Arc<Held>> = events.iter().map(|e| Arc::new(Held::new(e))).collect();
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
    fn admit(&self, fanout: &mut Fanout, batch: Batch) -> Admitted {
        let mut report = IngestReport::default();
        let journal = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            match batch.kind {
                Kind::Events => {
                    for (event, held) in &batch.events {
                        report.accepted += 1;
                        let Some(session) = event.session().filter(|_| !event.is_agent_scoped()) else { continue };
                        let admission = if event.seq().is_some() {
                            let admission = state.store.admit(session, held.clone());
                            if admission == Admission::Stored {
                                state.store.set_owner(session, &batch.principal);
                                if let Origin::Socket(conn) = batch.origin {
                                    self.claim(state, conn, session, &batch.principal);
                                }
                            }
                            admission
                        } else if event.is_foreign_emitter() {
                            // `attention.routed`: a router's hop belongs to the
                            // session's history though it has no position.
                            state.store.admit_unpositioned(session, held.clone())
                        } else {
                            continue;
                        };
                        match admission {
                            Admission::Stored => report.stored += 1,
                            Admission::Duplicate => report.duplicates += 1,
                            Admission::BeforeEvicted | Admission::PositionTaken => {}
                        }
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
        if let (Some(observe), Kind::Events) = (self.observer.get(), batch.kind) {
            batch.events.iter().for_each(|(event, _)| observe(event));
        }
        if let Some(audit) = &self.audit {
            match batch.kind {
                Kind::Events => batch.events.iter().for_each(|(event, _)| audit.saw(event)),
                Kind::Command { .. } => batch.events.iter().for_each(|(command, _)| audit.forwarded(command, &batch.principal)),
            }
        }
        Admitted { report, journal }
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

    /// Closes the sockets and streams of principals no longer configured
    /// (a credentials file reloaded without them).
    pub fn close_revoked(&self, still_held: impl Fn(&str) -> bool) {
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        let revoked: Vec<ConnId> = state
            .conns
            .iter()
            .filter(|(_, c)| c.access.is_authenticated() && !still_held(&c.access.principal().name))
            .map(|(id, _)| *id)
            .collect();
        for conn in revoked {
            if let Some(c) = state.conns.get(&conn) {
                c.outbox.close(CloseReason::Revoked);
            }
            self.forget(&mut fanout, &mut state, conn);
        }
    }

    /// Books a fan-out's backpressure outcome. A consumer that overflowed
    /// leaves the registry at once (its writer is told to close), so it
    /// costs no more matching and no longer counts as connected.
    fn settle(&self, fanout: &mut Fanout, tally: Tally) {
        if tally.dropped == 0 && tally.overflowed.is_empty() {
            return;
        }
        let mut state = lock(&self.state);
        state.counters.dropped_for_backpressure += tally.dropped;
        state.counters.disconnected_for_backpressure += tally.overflowed.len() as u64;
        for conn in tally.overflowed {
            self.forget(fanout, &mut state, conn);
        }
    }

    fn forget(&self, fanout: &mut Fanout, state: &mut State, conn: ConnId) {
        if let Some(listener) = fanout.listeners.remove(&conn) {
            self.subscriptions.fetch_sub(listener.subs.len(), Ordering::Relaxed);
        }
        if let Some(c) = state.conns.remove(&conn) {
            c.outbox.close(CloseReason::PeerGone);
        }
        let released = state.claims.release(conn);
        if !released.is_empty() {
            self.routing.released(conn, &released);
        }
    }

    /// Routes a command from `sender` to the one claimant of its session,
    /// or says why not (see [`route`](self::route)). A forwarded command
    /// joins its session's history (AEP-0004 §4.4) and subscribers other
    /// than the target see it (the audit trail); a refused one does neither.
    /// A claimant on another member of a tier gets it through that member;
    /// a refusal from there reaches the sender as an `error` later.
    pub fn route(&self, sender: ConnId, command: Event) -> Result<Routed, ErrorFrame> {
        let command = Arc::new(command);
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        let routed = route::target(&state, &*self.routing, sender, &command).and_then(|target| match target {
            Target::Here(conn) => route::deliver(&state, conn, &command).map(|()| Target::Here(conn)),
            elsewhere => Ok(elsewhere),
        });
        let target = match routed {
            Ok(target) => target,
            Err(refusal) => {
                state.counters.commands_refused += 1;
                // Refusals of credentialed senders only: anyone else could
                // fill the trail and push real decisions out of it.
                let sender = state.conns.get(&sender).map(|c| &c.access).filter(|a| a.is_authenticated());
                if let (Some(audit), Some(access)) = (&self.audit, sender) {
                    audit.refused(&command, &access.principal().name, &Frame::Error(refusal.clone()).encode());
                }
                return Err(refusal);
            }
        };
        state.counters.commands_routed += 1;
        let principal = state.conns.get(&sender).map(|c| c.access.principal().name.clone()).unwrap_or_default();
        match target {
            Target::Here(conn) => {
                drop(state);
                self.keep_command(&mut fanout, command, principal, conn);
                Ok(Routed::Here(conn))
            }
            Target::Elsewhere(claim) => {
                let outbox = state.conns.get(&sender).map(|c| c.outbox.clone());
                drop(state);
                drop(fanout);
                let refused = Box::new(move |refusal: ErrorFrame| {
                    if let Some(outbox) = outbox {
                        outbox.push(Outgoing::Frame(Frame::Error(refusal).encode()));
                    }
                });
                self.routing.forward(claim, command, principal, refused);
                Ok(Routed::Forwarded)
            }
        }
    }

    /// Delivers a command another member of the tier routed here to its
    /// target, a connection of this process (steps 4 and 5 of
    /// [`route`](self::route)), and keeps it in history.
    pub(crate) fn deliver_forwarded(
        &self,
        target: ConnId,
        command: Event,
        principal: Arc<str>,
    ) -> Result<(), ErrorFrame> {
        let command = Arc::new(command);
        let mut fanout = lock(&self.fanout);
        route::deliver(&lock(&self.state), target, &command)?;
        self.keep_command(&mut fanout, command, principal, target);
        Ok(())
    }

    /// A delivered command joins history; everyone but its target sees it.
    fn keep_command(&self, fanout: &mut Fanout, command: Arc<Event>, principal: Arc<str>, target: ConnId) {
        let held = Arc::new(Held::new(&command));
        let event = Arc::unwrap_or_clone(command);
        let batch = Batch {
            origin: Origin::Http,
            principal,
            events: vec![(event, held)],
            kind: Kind::Command { target: Some(target) },
        };
        let receipt = self.storage.append(batch, &mut |batch| self.admit(fanout, batch));
        if !receipt.is_ready() {
            tokio::spawn(async move {
                if receipt.await.unsaved {
                    tracing::error!("a forwarded command was delivered but is not kept in history");
                }
            });
        }
    }

    /// Hands every event admitted from now on to `observer` as well (set
    /// once; a second observer is ignored).
    pub fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    /// Counts a command refused before it reached routing (for example an
    /// unauthenticated sender whose command was also malformed).
    pub fn count_refused_command(&self) {
        lock(&self.state).counters.commands_refused += 1;
    }

    /// Counts an event refused before it reached ingest.
    pub fn count_refused_event(&self) {
        lock(&self.state).counters.events_refused += 1;
    }

    /// One entry per live (connection, claimed session), with what that
    /// connection declared in its `hello` (AEP-0003 §4.1).
    pub fn roster(&self) -> Vec<RosterEntry> {
        let state = lock(&self.state);
        let mut entries: Vec<RosterEntry> = state
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
            .collect();
        drop(state);
        entries.extend(self.routing.remote_roster());
        entries
    }

    /// Forgets a connection, its subscriptions and its claims.
    pub fn detach(&self, conn: ConnId) {
        let mut fanout = lock(&self.fanout);
        let mut state = lock(&self.state);
        self.forget(&mut fanout, &mut state, conn);
    }

    /// Starts an orderly shutdown: every connection is told to close after
    /// what is already queued.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
        for conn in lock(&self.state).conns.values() {
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
        let state = lock(&self.state);
        let count = |b: Binding| state.conns.values().filter(|c| c.binding == b).count();
        Stats {
            sessions: state.store.session_count(),
            buffered_events: state.store.buffered(),
            buffered_bytes: state.store.buffered_bytes(),
            tombstones: state.store.tombstone_count(),
            streams: count(Binding::Stream),
            sockets: count(Binding::Socket),
            subscriptions: self.subscriptions.load(Ordering::Relaxed),
            claims: state.claims.len(),
            counters: state.counters.clone(),
        }
    }

    /// The control trail, when this relay keeps one.
    pub fn audit(&self) -> Option<Arc<Audit>> {
        self.audit.clone()
    }

    /// Events held for one session.
    pub fn session_len(&self, session: &str) -> usize {
        lock(&self.state).store.session_len(session)
    }
}

pub(crate) fn store_limits(config: &Config) -> StoreLimits {
    StoreLimits {
        depth: config.buffer_depth,
        max_sessions: config.max_sessions,
        session_bytes: config.buffer_bytes,
        total_bytes: config.total_buffer_bytes,
    }
}

/// Keeps [`Hub::running_tasks`] counting a connection task until dropped.
pub struct TaskGuard(Arc<Hub>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether `who` may emit every event of a batch (see [`Hub::ingest`]).
fn check_batch(store: &SessionStore, who: &Principal, events: &[Event], held: &[Arc<Held>]) -> Result<(), Refusal> {
    let mut positions: HashMap<(&str, crate::buffer::Position), &Arc<Held>> = HashMap::new();
    for (index, (event, held)) in events.iter().zip(held).enumerate() {
        let refuse = |code: &'static str, detail: String| Refusal { index, id: event.id().to_owned(), code, detail };
        who.check_emitter(event.agent(), event.source()).map_err(|detail| refuse(codes::UNAUTHORIZED, detail))?;
        let Some(session) = event.session().filter(|_| !event.is_agent_scoped()) else { continue };
        let Some(position) = event.position() else { continue };
        if let Some(owner) = store.owner(session).filter(|owner| ***owner != *who.name) {
            return Err(refuse(
                codes::UNAUTHORIZED,
                format!("session `{session}` belongs to `{owner}`; `{}` may not write in it", who.name),
            ));
        }
        let earlier = positions.insert((session, position), held);
        let clash = earlier.is_some_and(|e| e.source() != held.source() || e.id() != held.id());
        if clash || store.position_taken(session, held) {
            return Err(refuse(
                codes::INVALID_EVENT,
                format!("session `{session}` already has another event at epoch {} seq {}", position.0, position.1),
            ));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::future::IntoFuture;

    use super::*;

    fn event(seq: u64) -> Event {
        Event::parse(&format!(
            r#"{{"aep":"0.1","id":"e{seq}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":{seq}}}"#
        ))
        .unwrap()
    }

    fn subscribe(id: &str) -> Subscribe {
        match Frame::decode(&format!(r#"{{"type":"subscribe","id":"{id}","from":"all"}}"#)).unwrap() {
            Frame::Subscribe(s) => s,
            _ => unreachable!(),
        }
    }

    /// A panic while a hub lock is held must not turn every later request
    /// into a panic: the hub keeps answering.
    #[test]
    fn a_panic_under_a_lock_does_not_take_the_hub_down() {
        let hub = Hub::new(&Config::default());
        let _ = hub.ingest(Origin::Http, &Principal::anonymous(), vec![event(0)]).unwrap();
        for poison in [0, 1] {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _fanout = hub.fanout.lock();
                let _state = hub.state.lock();
                panic!("a bug while holding the locks ({poison})");
            }));
        }
        assert!(hub.state.is_poisoned());
        assert_eq!(hub.stats().buffered_events, 1);
        let report = futures_util::FutureExt::now_or_never(
            hub.ingest(Origin::Http, &Principal::anonymous(), vec![event(1)]).unwrap().into_future(),
        );
        assert_eq!(report.map(|r| r.stored), Some(1), "memory answers at once");
        let hello = match Frame::decode(r#"{"type":"hello","versions":["0.1"]}"#).unwrap() {
            Frame::Hello(h) => h,
            _ => unreachable!(),
        };
        let peer = Peer::from_hello(&hello);
        let (conn, outbox) = hub.attach_socket(Access::anonymous(), peer, "{}".into());
        assert!(hub.subscribe(conn, subscribe("a")).is_ok());
        assert!(outbox.len() >= 2, "hello reply, subscribed and the replay are queued");
        assert!(hub.roster().is_empty());
        hub.detach(conn);
        assert_eq!(hub.stats().sockets, 0);
    }
}

//! The switchboard: the relay's shared state (who is connected, what each
//! subscribes to, which sessions each claims, what is kept for replay), its
//! locks and its construction. What is done with it is in files by job: [`ingest`](self::ingest), subscribe
//! and replay ([`subscribe`](self::subscribe)), command routing
//! ([`route`](self::route)), the connection registry
//! ([`connections`](self::connections)), the [`roster`](self::roster),
//! history read back at start ([`recall`](self::recall)),
//! [`shutdown`](self::shutdown) and [`stats`](self::stats).
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
mod connections;
mod fanout;
mod ingest;
mod recall;
mod roster;
mod route;
pub mod routing;
mod shutdown;
mod stats;
pub mod storage;
mod subscribe;

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock};

use aep_engine::protocol::filter::Filter;
use aep_engine::{Capture, Event};
use tokio::sync::watch;

use crate::audit::{Audit, Bounds};
use crate::auth::Access;
use crate::buffer::{Committer, Disk, DiskError, SessionStore, StoreLimits};
use crate::config::Config;
use crate::outbox::Outbox;
use claims::Claims;
pub use ingest::{IngestReport, Refusal};
pub use roster::Peer;
pub use route::Routed;
use routing::{Alone, Routing};
pub use shutdown::TaskGuard;
pub use stats::{Counters, Stats};
use storage::{DataDir, Memory, Storage};
pub use subscribe::StreamRequest;

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

pub struct Switchboard {
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
    /// Sees every new event admitted, never a redelivery (Web Push): it
    /// must only enqueue.
    observer: OnceLock<Observer>,
    /// Sees every new event admitted too, never a redelivery (standing
    /// rules): it must only enqueue.
    stored_observer: OnceLock<Observer>,
    /// The control trail (`--data-dir`): commands, acks, outcomes.
    audit: Option<Arc<Audit>>,
}

/// Called with each new event admitted, under the switchboard's locks.
pub type Observer = Box<dyn Fn(&Event) + Send + Sync>;

impl Switchboard {
    /// A switchboard whose history lives in memory only.
    pub fn new(config: &Config) -> Switchboard {
        Switchboard::with(config, SessionStore::new(store_limits(config)), Box::new(Memory), Arc::new(Alone))
    }

    /// A switchboard whose history is durable when `config.data_dir` names a
    /// directory, restored from it.
    pub fn open(config: &Config) -> Result<Switchboard, DiskError> {
        let Some(dir) = &config.data_dir else { return Ok(Switchboard::new(config)) };
        let disk = Disk::open(dir)?;
        let mut store = SessionStore::restore(store_limits(config), disk.load()?)?;
        disk.write(&store.take_journal())?;
        let storage = DataDir { dir: dir.clone(), committer: Committer::start(disk) };
        let mut switchboard = Switchboard::with(config, store, Box::new(storage), Arc::new(Alone));
        if !config.audit_retention.is_zero() {
            let bounds = Bounds { retention: config.audit_retention, max_bytes: config.audit_bytes };
            let audit = Audit::open(dir, bounds).map_err(|e| DiskError(format!("audit trail: {e}")))?;
            audit.recall(&switchboard.recall(Audit::remembers));
            switchboard.audit = Some(Arc::new(audit));
        }
        Ok(switchboard)
    }

    /// A switchboard over any home of history and any reach of claims.
    pub fn with(
        config: &Config,
        store: SessionStore,
        storage: Box<dyn Storage>,
        routing: Arc<dyn Routing>,
    ) -> Switchboard {
        Switchboard {
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
            stored_observer: OnceLock::new(),
            audit: None,
        }
    }

    fn outbox(&self) -> Arc<Outbox> {
        Arc::new(Outbox::new(self.limits.send_queue, self.limits.send_queue_bytes))
    }

    /// Hands every new event admitted from now on to `observer` as well
    /// (set once; a second observer is ignored).
    pub fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    /// Hands every new event admitted from now on (never a redelivery) to
    /// a second `observer` as well (set once; a second one is ignored).
    pub fn observe_stored(&self, observer: Observer) {
        let _ = self.stored_observer.set(observer);
    }

    /// The control trail, when this relay keeps one.
    pub fn audit(&self) -> Option<Arc<Audit>> {
        self.audit.clone()
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

#[cfg(test)]
mod tests {
    use std::future::IntoFuture;

    use aep_engine::protocol::frame::{Frame, Subscribe};

    use super::*;
    use crate::auth::Principal;

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

    /// A redelivered event (same `(source, id)`) reaches no feature again,
    /// however often it comes and in whatever batch.
    #[test]
    fn features_see_each_event_once() {
        let switchboard = Switchboard::new(&Config::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let observed = seen.clone();
        switchboard.observe(Box::new(move |e| observed.lock().unwrap().push(e.id().to_owned())));
        for _ in 0..3 {
            let _ = switchboard.ingest(Origin::Http, &Principal::anonymous(), vec![event(0), event(1)]).unwrap();
        }
        let _ = switchboard.ingest(Origin::Http, &Principal::anonymous(), vec![event(1), event(2)]).unwrap();
        assert_eq!(*seen.lock().unwrap(), ["e0", "e1", "e2"]);
        assert_eq!(switchboard.stats().buffered_events, 3);
    }

    /// A panic while a switchboard lock is held must not turn every later request
    /// into a panic: the switchboard keeps answering.
    #[test]
    fn a_panic_under_a_lock_does_not_take_the_hub_down() {
        let switchboard = Switchboard::new(&Config::default());
        let _ = switchboard.ingest(Origin::Http, &Principal::anonymous(), vec![event(0)]).unwrap();
        for poison in [0, 1] {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _fanout = switchboard.fanout.lock();
                let _state = switchboard.state.lock();
                panic!("a bug while holding the locks ({poison})");
            }));
        }
        assert!(switchboard.state.is_poisoned());
        assert_eq!(switchboard.stats().buffered_events, 1);
        let report = futures_util::FutureExt::now_or_never(
            switchboard.ingest(Origin::Http, &Principal::anonymous(), vec![event(1)]).unwrap().into_future(),
        );
        assert_eq!(report.map(|r| r.stored), Some(1), "memory answers at once");
        let hello = match Frame::decode(r#"{"type":"hello","versions":["0.1"]}"#).unwrap() {
            Frame::Hello(h) => h,
            _ => unreachable!(),
        };
        let peer = Peer::from_hello(&hello);
        let (conn, outbox) = switchboard.attach_socket(Access::anonymous(), peer, "{}".into());
        assert!(switchboard.subscribe(conn, subscribe("a")).is_ok());
        assert!(outbox.len() >= 2, "hello reply, subscribed and the replay are queued");
        assert!(switchboard.roster().is_empty());
        switchboard.detach(conn);
        assert_eq!(switchboard.stats().sockets, 0);
    }
}

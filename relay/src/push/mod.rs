//! Web Push (RFC 8030): a phone buzzes when an agent needs its person.
//!
//! Each new `attention.requested` that may be answered through control
//! becomes an encrypted push (RFC 8291 `aes128gcm`, VAPID RFC 8292) to
//! every device an operator registered, and a `closed` push follows once
//! the request is settled so the notification goes away. Each request push
//! carries a [`capability`] the notification can answer with at
//! `POST /push/answer`, without a bearer token.
//!
//! The switchboard hands events over through a bounded, drop-oldest queue
//! ([`queue`]); encryption and the network happen on the push thread, at
//! a lower scheduling priority, never under the switchboard's locks.

pub mod answer;
pub mod capability;
pub(crate) mod files;
pub mod http;
pub mod keys;
pub mod message;
mod queue;
pub mod requests;
mod sender;
pub mod subscriptions;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_engine::Event;
use tokio::sync::oneshot;

use crate::auth::{Keyring, Principal};
use crate::config::{Config, ConfigError};
use crate::switchboard::Switchboard;
use crate::sync::lock;

use capability::{Capabilities, Secret};
use keys::VapidKey;
use queue::Queue;
use requests::Requests;
use subscriptions::Subscriptions;

/// How pushes are made and sent.
#[derive(Clone, Debug)]
pub struct PushConfig {
    /// The VAPID private key (PEM) to sign with (`--vapid-key`); else
    /// `vapid.pem` in the data directory, made on first start; else a
    /// fresh key per run.
    pub vapid_key: Option<PathBuf>,
    /// Who push services may contact about this relay (VAPID `sub`).
    pub contact: String,
    /// Certificate authorities trusted for push services besides the
    /// system's (`--push-ca`): a private push service, a test one.
    pub extra_roots: Vec<PathBuf>,
    /// Request pushes one device gets within `burst_window` before the
    /// rest collapse into one summary.
    pub burst: usize,
    pub burst_window: Duration,
    /// Lifetime of a push whose request names no expiry.
    pub default_ttl: Duration,
    /// How long a notification may answer its request.
    pub capability_ttl: Duration,
    /// Sends tried per push when the service answers 429 or 5xx.
    pub max_attempts: u32,
    /// First wait between attempts (doubled each time) when the service
    /// names none in `Retry-After`.
    pub retry_base: Duration,
    /// Events waiting for the push task; beyond it the oldest are dropped.
    pub queue: usize,
    /// How long `POST /push/answer` waits for the agent's ack.
    pub ack_timeout: Duration,
}

impl Default for PushConfig {
    fn default() -> PushConfig {
        PushConfig {
            vapid_key: None,
            contact: "mailto:relay@localhost".into(),
            extra_roots: Vec::new(),
            burst: 3,
            burst_window: Duration::from_secs(10),
            default_ttl: Duration::from_secs(3600),
            capability_ttl: Duration::from_secs(600),
            max_attempts: 4,
            retry_base: Duration::from_millis(500),
            queue: 4096,
            ack_timeout: Duration::from_secs(10),
        }
    }
}

/// What the push task has done, reported by `/healthz` to a caller with
/// a credential.
#[derive(Debug, Default)]
pub struct PushCounters {
    pub sent: AtomicU64,
    pub failed: AtomicU64,
    pub retried: AtomicU64,
    pub removed: AtomicU64,
    pub collapsed: AtomicU64,
    /// Events dropped because the push queue was full.
    pub dropped: AtomicU64,
}

impl PushCounters {
    /// The counts now, for `/healthz`.
    pub fn snapshot(&self) -> serde_json::Value {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "sent": n(&self.sent),
            "failed": n(&self.failed),
            "retried": n(&self.retried),
            "removed": n(&self.removed),
            "collapsed": n(&self.collapsed),
            "dropped": n(&self.dropped),
        })
    }
}

/// The relay's Web Push: keys, registered devices, open requests and the
/// queue toward the push task.
pub struct Push {
    pub config: PushConfig,
    pub vapid: VapidKey,
    pub subscriptions: Subscriptions,
    pub requests: Requests,
    pub capabilities: Capabilities,
    pub counters: PushCounters,
    keyring: Option<Arc<Keyring>>,
    queue: Queue<Arc<Event>>,
    /// Commands sent from a notification, waiting for their ack.
    acks: Mutex<HashMap<String, oneshot::Sender<Event>>>,
}

impl Push {
    /// Loads (or makes) the keys and the registered devices and starts the
    /// push task, which then sees every event the switchboard admits.
    pub fn start(
        config: &Config,
        switchboard: &Arc<Switchboard>,
        keyring: Option<Arc<Keyring>>,
    ) -> Result<Arc<Push>, ConfigError> {
        let settings = config.push.clone();
        let dir = config.data_dir.as_deref();
        let vapid = VapidKey::load(settings.vapid_key.as_deref(), dir).map_err(ConfigError)?;
        let capabilities = Capabilities::open(Secret::load(dir).map_err(ConfigError)?, settings.capability_ttl, dir)
            .map_err(ConfigError)?;
        let subscriptions = Subscriptions::open(dir).map_err(ConfigError)?;
        let client = sender::client(&settings.extra_roots).map_err(ConfigError)?;
        let push = Arc::new(Push {
            queue: Queue::new(settings.queue),
            capabilities,
            config: settings,
            vapid,
            subscriptions,
            requests: Requests::default(),
            counters: PushCounters::default(),
            keyring,
            acks: Mutex::new(HashMap::new()),
        });
        let observer = push.clone();
        switchboard.observe(Box::new(move |event| observer.observe(event)));
        sender::spawn(push.clone(), client, switchboard.shutdown_signal()).map_err(ConfigError)?;
        Ok(push)
    }

    /// Called by the switchboard for every admitted event, under its locks: only
    /// a type check, an ack hand-over and a non-blocking enqueue.
    fn observe(&self, event: &Event) {
        let kind = event.kind();
        if kind.is_ack() {
            if let Some(cause) = event.cause() {
                if let Some(waiter) = lock(&self.acks).remove(cause) {
                    let _ = waiter.send(event.clone());
                }
            }
            return;
        }
        if requests::concerns(kind) && self.queue.push(Arc::new(event.clone())) {
            let dropped = self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            if dropped.is_multiple_of(1000) {
                tracing::warn!("the push queue is full: {} attention events dropped so far", dropped + 1);
            }
        }
    }

    /// The principal of this name as now configured: `None` once revoked.
    pub fn principal(&self, name: &str) -> Option<Arc<Principal>> {
        self.keyring.as_ref()?.named(name)
    }

    /// The principals that may answer requests now (configured, and
    /// operators): only their devices get request pushes.
    pub fn answering(&self) -> HashSet<Arc<str>> {
        let Some(ring) = &self.keyring else { return HashSet::new() };
        ring.principals().into_iter().filter(|p| p.roles.operator).map(|p| p.name.clone()).collect()
    }

    /// Registers a waiter for the ack of command `id`.
    fn await_ack(&self, id: &str) -> oneshot::Receiver<Event> {
        let (tx, rx) = oneshot::channel();
        lock(&self.acks).insert(id.to_owned(), tx);
        rx
    }

    fn forget_ack(&self, id: &str) {
        lock(&self.acks).remove(id);
    }
}

/// The boot line's words about push.
pub fn posture(config: &Config) -> String {
    if !config.control_enabled() {
        return "Web Push off (no credentials: nobody to notify)".into();
    }
    if config.nats.is_some() {
        return "Web Push off (not yet in a relay tier)".into();
    }
    let key = match (&config.push.vapid_key, &config.data_dir) {
        (Some(file), _) => format!("VAPID key from {}", file.display()),
        (None, Some(dir)) => format!("VAPID key kept in {}", dir.join(keys::VAPID_FILE).display()),
        (None, None) => "VAPID key made for this run only (devices must subscribe again after a restart; \
                         --data-dir keeps it)"
            .into(),
    };
    format!("Web Push on: {key}")
}

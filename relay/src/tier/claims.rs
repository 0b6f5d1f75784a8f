//! The tier's claims: every member's claims in one JetStream key-value
//! bucket, one key per (session, member, connection), each value what a
//! roster says of the claimant and the principal it authenticated as.
//!
//! Entries expire (the bucket's age limit) unless their member refreshes
//! them, so a member that dies takes its claims with it after [`TTL`]; a
//! member forgets entries it has not seen refreshed within [`TTL`] too. A
//! command for a claim held elsewhere is a request on the holding member's
//! subject; the reply is empty when delivered, or the refusal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aep_engine::protocol::frame::{codes, ControlCapability, ErrorFrame, Frame, RosterEntry};
use aep_engine::Event;
use async_nats::jetstream::{self, kv};
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{session_token, CLAIMS};
use crate::config::ConfigError;
use crate::switchboard::routing::{Refused, RemoteClaim, Routing};
use crate::switchboard::{ConnId, Peer, Switchboard};
use crate::sync::lock;

/// How long a claim outlives its member's last refresh.
pub const TTL: Duration = Duration::from_secs(10);
const REFRESH: Duration = Duration::from_secs(3);
/// The target connection of a forwarded command, and who sent it.
const CONN: &str = "Aep-Conn";
const PRINCIPAL: &str = "Aep-Principal";

/// Makes sure the claims bucket exists. Its stream is made here, as the
/// client's own bucket creation would (one value per key, rollups, direct
/// gets), because that path first reads account details NATS 2.9 does not
/// report in the shape the client expects.
pub async fn ensure_bucket(js: &jetstream::Context) -> Result<kv::Store, ConfigError> {
    if let Ok(bucket) = js.get_key_value(CLAIMS).await {
        return Ok(bucket);
    }
    let config = jetstream::stream::Config {
        name: format!("KV_{CLAIMS}"),
        subjects: vec![format!("$KV.{CLAIMS}.>")],
        max_messages_per_subject: 1,
        max_age: TTL,
        storage: jetstream::stream::StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: jetstream::stream::DiscardPolicy::New,
        duplicate_window: TTL,
        num_replicas: 1,
        ..Default::default()
    };
    // Another member may make it meanwhile: either way it exists after.
    let made = js.get_or_create_stream(config).await;
    js.get_key_value(CLAIMS).await.map_err(|e| {
        let made = made.err().map(|m| format!(" ({m})")).unwrap_or_default();
        ConfigError(format!("cannot open the tier's claims: {e}{made}"))
    })
}

/// One claim as the bucket holds it.
#[derive(Serialize, Deserialize)]
struct Claim {
    session: String,
    member: String,
    conn: u64,
    principal: String,
    agent: Option<String>,
    instance: Option<String>,
    control: Option<Map<String, Value>>,
    emits: Option<Vec<String>>,
}

impl Claim {
    fn remote(self) -> (Arc<str>, RemoteClaim) {
        let control = self.control.map(|mut map| ControlCapability {
            accepts: map.remove("accepts").and_then(|v| serde_json::from_value(v).ok()),
            ack_window_ms: map.remove("ack_window_ms").and_then(|v| v.as_u64()),
            other: map,
        });
        let session: Arc<str> = Arc::from(self.session.as_str());
        let entry = RosterEntry {
            session: self.session,
            agent: self.agent,
            instance: self.instance,
            control,
            emits: self.emits,
        };
        let claim = RemoteClaim {
            member: Arc::from(self.member),
            conn: ConnId(self.conn),
            principal: Arc::from(self.principal),
            entry,
        };
        (session, claim)
    }
}

fn control_map(control: &ControlCapability) -> Map<String, Value> {
    let mut map = control.other.clone();
    if let Some(accepts) = &control.accepts {
        map.insert("accepts".into(), accepts.clone().into());
    }
    if let Some(window) = control.ack_window_ms {
        map.insert("ack_window_ms".into(), window.into());
    }
    map
}

enum Write {
    Put(String, Bytes),
    Delete(String),
}

struct Seen {
    session: Arc<str>,
    claim: RemoteClaim,
    at: Instant,
}

pub struct TierClaims {
    client: async_nats::Client,
    bucket: kv::Store,
    member: Arc<str>,
    /// This member's claims, by key, refreshed while held.
    held: Mutex<HashMap<String, Bytes>>,
    writes: mpsc::UnboundedSender<Write>,
    /// Other members' claims, by key.
    remote: Mutex<HashMap<String, Seen>>,
}

impl TierClaims {
    pub fn new(client: async_nats::Client, bucket: kv::Store, member: Arc<str>) -> TierClaims {
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(bucket.clone(), queue));
        TierClaims {
            client,
            bucket,
            member,
            held: Mutex::new(HashMap::new()),
            writes,
            remote: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self, session: &str, conn: ConnId) -> String {
        format!("{}.{}.{}", session_token(session), self.member, conn.0)
    }

    /// Follows the other members' claims, refreshes this member's, and
    /// delivers commands other members forward here.
    pub async fn start(self: &Arc<Self>, switchboard: Arc<Switchboard>) -> Result<(), ConfigError> {
        let subject = format!("aep.m.{}.cmd", self.member);
        let requests = self
            .client
            .subscribe(subject)
            .await
            .map_err(|e| ConfigError(format!("cannot listen for commands: {e}")))?;
        tokio::spawn(deliver(self.client.clone(), switchboard.clone(), requests));
        tokio::spawn(watch(self.clone(), switchboard.clone()));
        tokio::spawn(refresh(self.clone(), switchboard));
        Ok(())
    }
}

impl Routing for TierClaims {
    fn claimed(&self, conn: ConnId, session: &Arc<str>, principal: &Arc<str>, peer: Option<&Peer>) {
        let claim = Claim {
            session: session.to_string(),
            member: self.member.to_string(),
            conn: conn.0,
            principal: principal.to_string(),
            agent: peer.and_then(|p| p.agent.clone()),
            instance: peer.and_then(|p| p.instance.clone()),
            control: peer.and_then(|p| p.control.as_ref()).map(control_map),
            emits: peer.and_then(|p| p.emits.clone()),
        };
        let Ok(value) = serde_json::to_vec(&claim) else { return };
        let key = self.key(session, conn);
        let value = Bytes::from(value);
        let mut held = lock(&self.held);
        held.insert(key.clone(), value.clone());
        let _ = self.writes.send(Write::Put(key, value));
    }

    fn released(&self, conn: ConnId, sessions: &[Arc<str>]) {
        let mut held = lock(&self.held);
        for session in sessions {
            let key = self.key(session, conn);
            held.remove(&key);
            let _ = self.writes.send(Write::Delete(key));
        }
    }

    fn remote_claimants(&self, session: &str) -> Vec<RemoteClaim> {
        let remote = lock(&self.remote);
        remote.values().filter(|s| &*s.session == session && s.at.elapsed() < TTL).map(|s| s.claim.clone()).collect()
    }

    fn remote_roster(&self) -> Vec<RosterEntry> {
        let remote = lock(&self.remote);
        let mut seen: Vec<&Seen> = remote.values().filter(|s| s.at.elapsed() < TTL).collect();
        seen.sort_by(|a, b| {
            (&a.claim.member, a.claim.conn, &a.session).cmp(&(&b.claim.member, b.claim.conn, &b.session))
        });
        seen.into_iter().map(|s| s.claim.entry.clone()).collect()
    }

    fn forward(&self, to: RemoteClaim, command: Arc<Event>, sender: Arc<str>, refused: Refused) {
        let client = self.client.clone();
        tokio::spawn(async move {
            let mut headers = HeaderMap::new();
            headers.insert(CONN, to.conn.0.to_string().as_str());
            headers.insert(PRINCIPAL, &*sender);
            let subject = format!("aep.m.{}.cmd", to.member);
            let payload = Bytes::copy_from_slice(command.raw().as_bytes());
            let refusal = match client.request_with_headers(subject, headers, payload).await {
                Ok(reply) if reply.payload.is_empty() => return,
                Ok(reply) => match std::str::from_utf8(&reply.payload).ok().and_then(|t| Frame::decode(t).ok()) {
                    Some(Frame::Error(refusal)) => refusal,
                    _ => unreachable_member(&command, &to),
                },
                Err(e) => {
                    tracing::debug!("forwarding to member {}: {e}", to.member);
                    unreachable_member(&command, &to)
                }
            };
            refused(refusal);
        });
    }
}

fn unreachable_member(command: &Event, to: &RemoteClaim) -> ErrorFrame {
    let detail = format!("the relay holding session `{}`'s target did not answer", to.entry.session);
    ErrorFrame::for_command(command.id(), codes::NO_ROUTE, Some(detail))
}

/// Bucket writes, in the order claims changed.
async fn write(bucket: kv::Store, mut queue: mpsc::UnboundedReceiver<Write>) {
    while let Some(write) = queue.recv().await {
        let result = match write {
            Write::Put(key, value) => bucket.put(key, value).await.map(drop).map_err(|e| e.to_string()),
            Write::Delete(key) => bucket.delete(key).await.map_err(|e| e.to_string()),
        };
        if let Err(e) = result {
            tracing::debug!("the tier's claims: {e}");
        }
    }
}

/// Re-puts this member's claims before they expire; forgets other
/// members' claims not refreshed in time.
async fn refresh(claims: Arc<TierClaims>, switchboard: Arc<Switchboard>) {
    let mut tick = tokio::time::interval(REFRESH);
    let mut stop = switchboard.shutdown_signal();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        {
            let held = lock(&claims.held);
            for (key, value) in held.iter() {
                let _ = claims.writes.send(Write::Put(key.clone(), value.clone()));
            }
        }
        lock(&claims.remote).retain(|_, s| s.at.elapsed() < TTL);
    }
}

/// Mirrors the bucket; starts over (from what it holds) whenever the watch
/// ends, as it does when NATS goes away.
async fn watch(claims: Arc<TierClaims>, switchboard: Arc<Switchboard>) {
    while !switchboard.is_shutting_down() {
        match claims.bucket.watch_with_history(">").await {
            Ok(mut entries) => {
                let mut fresh = true;
                while let Some(Ok(entry)) = entries.next().await {
                    let mut remote = lock(&claims.remote);
                    if fresh {
                        remote.clear();
                        fresh = false;
                    }
                    match entry.operation {
                        kv::Operation::Put => {
                            let Ok(claim) = serde_json::from_slice::<Claim>(&entry.value) else { continue };
                            if *claim.member == *claims.member {
                                continue;
                            }
                            let (session, claim) = claim.remote();
                            remote.insert(entry.key, Seen { session, claim, at: Instant::now() });
                        }
                        kv::Operation::Delete | kv::Operation::Purge => {
                            remote.remove(&entry.key);
                        }
                    }
                }
            }
            Err(e) => tracing::debug!("watching the tier's claims: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Delivers commands other members forward to this member's connections.
async fn deliver(client: async_nats::Client, switchboard: Arc<Switchboard>, mut requests: async_nats::Subscriber) {
    while let Some(request) = requests.next().await {
        let Some(reply) = request.reply.clone() else { continue };
        let header = |name: &str| request.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
        let target = header(CONN).and_then(|c| c.parse().ok()).map(ConnId);
        let principal: Arc<str> = Arc::from(header(PRINCIPAL).unwrap_or_default());
        let command = std::str::from_utf8(&request.payload).ok().and_then(|t| Event::parse(t).ok());
        let answer = match (target, command) {
            (Some(target), Some(command)) => {
                let id = command.id().to_owned();
                match switchboard.deliver_forwarded(target, command, principal) {
                    Ok(()) => Bytes::new(),
                    Err(refusal) => Bytes::from(Frame::Error(ErrorFrame { cause: Some(id), ..refusal }).encode()),
                }
            }
            _ => Bytes::from(
                Frame::Error(ErrorFrame::new(codes::INVALID_FRAME, Some("not a forwarded command".into()))).encode(),
            ),
        };
        let _ = client.publish(reply, answer).await;
    }
}

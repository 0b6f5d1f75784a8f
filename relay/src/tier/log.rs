//! The tier's history: one JetStream stream, file storage, one subject per
//! session. A member publishes a checked batch (each run of one session's
//! events one message), and answers once every message is acknowledged and
//! its own copy of the stream has admitted them; every member admits the
//! stream in order.
//!
//! Dedupe across members: each message carries `Nats-Msg-Id`, a digest of
//! its events' `(source, id)`s, so a batch resent within the stream's
//! duplicate window (two minutes) is not stored twice, whichever member it
//! reaches, and is not delivered again (an emitter that resends to another
//! member after its first one died causes no duplicate). Beyond that,
//! every member's buffers drop an event they already hold, as one relay's
//! do (and, as one relay does, still forward the resend live).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_engine::Event;
use async_nats::connection::State;
use async_nats::jetstream::{self, consumer, stream};
use async_nats::HeaderMap;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot, watch};

use super::{session_token, STREAM};
use crate::config::{Config, ConfigError};
use crate::held::HeldEvent;
use crate::switchboard::storage::{Admitted, Batch, Kind, Receipt, Storage};
use crate::switchboard::{ConnId, IngestReport, Origin, Switchboard};
use crate::sync::lock;

/// How long a publish may wait for the stream's acknowledgement: past it
/// the batch is refused (503), never assumed stored.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a writer waits for its own member to admit what the stream
/// acknowledged, so a replay right after the 202 holds it.
const APPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a joining member may take to admit the history written before.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(120);

const SUBJECTS: &str = "aep.h.*";
/// Events without a session (agent-scoped): live only, but ordered with
/// the rest.
const LIVE_ONLY: &str = "aep.h._";
/// The member that published a message.
const MEMBER: &str = "Aep-Member";
/// The connection (of that member) that emitted it: a socket's event
/// claims its session for that connection.
const CONN: &str = "Aep-Conn";
const PRINCIPAL: &str = "Aep-Principal";
/// Marks a forwarded command, and names its target connection (of the
/// publishing member), which already has it.
const TARGET: &str = "Aep-Target";

/// Makes sure the stream exists, its limits this relay's bounds: bytes in
/// all and the largest message (a batch's events of one session share a
/// message). Events and bytes per session and the session count have no
/// stream counterpart; every member's buffers apply them alike, since every
/// member admits the same stream in the same order.
pub async fn ensure_stream(js: &jetstream::Context, config: &Config) -> Result<stream::Stream, ConfigError> {
    let wanted = stream::Config {
        name: STREAM.into(),
        subjects: vec![SUBJECTS.into()],
        storage: stream::StorageType::File,
        discard: stream::DiscardPolicy::Old,
        max_bytes: clamp(config.total_buffer_bytes),
        // One large event alone, or a run of events, plus headers.
        max_message_size: config.event_limit().max(MESSAGE_BYTES).saturating_add(1024).min(i32::MAX as usize) as i32,
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    };
    js.get_or_create_stream(wanted).await.map_err(|e| ConfigError(format!("cannot open the tier's stream: {e}")))
}

fn clamp(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

struct Job {
    batch: Batch,
    done: oneshot::Sender<IngestReport>,
}

/// What admitting one message did here, for the writer waiting on it.
#[derive(Clone, Copy)]
struct Outcome {
    stored: usize,
    duplicates: usize,
}

pub struct Log {
    client: async_nats::Client,
    js: jetstream::Context,
    stream: stream::Stream,
    member: Arc<str>,
    jobs: mpsc::UnboundedSender<Job>,
    /// The last stream sequence this member admitted.
    applied: watch::Sender<u64>,
    /// Outcomes of this member's own messages, by stream sequence.
    outcomes: Mutex<BTreeMap<u64, Outcome>>,
    /// This member's messages on their way, as parsed when accepted, by
    /// message id: admitted without parsing them again.
    parsed: Mutex<HashMap<String, Parsed>>,
}

/// The [`Storage`] of a tier member.
pub struct JetStream(Arc<Log>);

impl Storage for JetStream {
    fn append(&self, batch: Batch, _admit: &mut dyn FnMut(Batch) -> Admitted) -> Receipt {
        if self.0.client.connection_state() != State::Connected {
            tracing::warn!("NATS is unreachable: refusing {} event(s) this member cannot store", batch.events.len());
            return Receipt::ready(IngestReport { unsaved: true, ..Default::default() });
        }
        let (done, receipt) = Receipt::later();
        let _ = self.0.jobs.send(Job { batch, done });
        receipt
    }
}

impl Log {
    pub fn new(
        client: async_nats::Client,
        js: jetstream::Context,
        stream: stream::Stream,
        member: Arc<str>,
    ) -> Arc<Log> {
        let (jobs, queue) = mpsc::unbounded_channel();
        let log = Arc::new(Log {
            client,
            js,
            stream,
            member,
            jobs,
            applied: watch::channel(0).0,
            outcomes: Mutex::new(BTreeMap::new()),
            parsed: Mutex::new(HashMap::new()),
        });
        tokio::spawn(publish(log.clone(), queue));
        log
    }

    pub fn storage(self: &Arc<Self>) -> JetStream {
        JetStream(self.clone())
    }

    /// Admits the stream into `switchboard` from its start, then as it grows;
    /// returns once everything written before is admitted.
    pub async fn start(self: &Arc<Self>, switchboard: Arc<Switchboard>) -> Result<(), ConfigError> {
        let last = self
            .stream
            .get_info()
            .await
            .map_err(|e| ConfigError(format!("cannot read the tier's stream: {e}")))?
            .state
            .last_sequence;
        let messages = self.subscribe(consumer::DeliverPolicy::All).await?;
        tokio::spawn(admit(self.clone(), switchboard, messages));
        let mut applied = self.applied.subscribe();
        let caught_up =
            tokio::time::timeout(CATCH_UP_TIMEOUT, applied.wait_for(|a| *a >= last)).await.is_ok_and(|r| r.is_ok());
        if caught_up {
            Ok(())
        } else {
            Err(ConfigError(format!("could not admit the tier's history (to sequence {last}) in time")))
        }
    }

    async fn subscribe(&self, from: consumer::DeliverPolicy) -> Result<consumer::push::Ordered, ConfigError> {
        let config = consumer::push::OrderedConfig {
            deliver_subject: self.client.new_inbox(),
            deliver_policy: from,
            ..Default::default()
        };
        let fail = |e: &dyn std::fmt::Display| ConfigError(format!("cannot follow the tier's stream: {e}"));
        let consumer = self.stream.create_consumer(config).await.map_err(|e| fail(&e))?;
        consumer.messages().await.map_err(|e| fail(&e))
    }
}

/// The one publishing task: messages leave in the order batches were
/// accepted (under the switchboard's lock), so each session's order is kept. A
/// batch goes as few messages as it can: consecutive events of one session
/// share a message (up to [`MESSAGE_BYTES`]), events separated by a NUL
/// byte, which JSON text never contains.
async fn publish(log: Arc<Log>, mut queue: mpsc::UnboundedReceiver<Job>) {
    while let Some(Job { batch, done }) = queue.recv().await {
        let accepted = match batch.kind {
            Kind::Events => batch.events.len(),
            Kind::Command { .. } => 0,
        };
        let headers = headers(&log.member, &batch);
        let mut acks = Vec::new();
        let mut failed = false;
        for (subject, events) in messages(batch.events) {
            let mut payload = Vec::with_capacity(events.iter().map(|(e, _)| e.raw().len() + 1).sum());
            for (n, (event, _)) in events.iter().enumerate() {
                if n > 0 {
                    payload.push(0);
                }
                payload.extend_from_slice(event.raw().as_bytes());
            }
            let id = message_id(&events);
            let count = events.len();
            // This member admits its own message as parsed here.
            lock(&log.parsed).insert(id.clone(), events);
            // `headers` replaces the map, so the message id goes after it.
            let message = jetstream::message::PublishMessage::build()
                .headers(headers.clone())
                .message_id(&id)
                .payload(payload.into());
            match log.js.send_publish(subject, message).await {
                Ok(ack) => acks.push((ack, count, id)),
                Err(e) => {
                    tracing::warn!("could not publish to the tier's stream: {e}");
                    lock(&log.parsed).remove(&id);
                    failed = true;
                    break;
                }
            }
        }
        let log = log.clone();
        tokio::spawn(async move {
            let report = settle(&log, accepted, acks, failed).await;
            let _ = done.send(report);
        });
    }
}

/// Largest message a batch is cut into (one event may exceed it alone).
const MESSAGE_BYTES: usize = 256 * 1024;

type Parsed = Vec<(Event, Arc<HeldEvent>)>;

/// A batch cut into messages: runs of consecutive events with one subject.
fn messages(events: Parsed) -> Vec<(String, Parsed)> {
    let mut out: Vec<(String, Parsed, usize)> = Vec::new();
    for (event, held) in events {
        let subject = subject(&event);
        let size = event.raw().len() + 1;
        match out.last_mut() {
            Some((s, events, bytes)) if *s == subject && *bytes + size <= MESSAGE_BYTES => {
                events.push((event, held));
                *bytes += size;
            }
            _ => out.push((subject, vec![(event, held)], size)),
        }
    }
    out.into_iter().map(|(subject, events, _)| (subject, events)).collect()
}

/// Waits for every acknowledgement, then for this member to admit them.
async fn settle(
    log: &Log,
    accepted: usize,
    acks: Vec<(jetstream::context::PublishAckFuture, usize, String)>,
    mut failed: bool,
) -> IngestReport {
    let mut report = IngestReport { accepted, ..Default::default() };
    let mut fresh = Vec::with_capacity(acks.len());
    let mut last = 0;
    for (ack, events, id) in acks {
        match ack.await {
            Ok(ack) if ack.duplicate => {
                // Never delivered: the stream holds it already.
                lock(&log.parsed).remove(&id);
                report.duplicates += events;
            }
            Ok(ack) => {
                fresh.push((ack.sequence, events));
                last = last.max(ack.sequence);
            }
            Err(e) => {
                tracing::warn!("the tier's stream did not acknowledge an event: {e}");
                lock(&log.parsed).remove(&id);
                failed = true;
            }
        }
    }
    if failed {
        return IngestReport { unsaved: true, ..report };
    }
    let mut applied = log.applied.subscribe();
    let _ = tokio::time::timeout(APPLY_TIMEOUT, applied.wait_for(|a| *a >= last)).await.map(|r| r.is_ok());
    let mut outcomes = lock(&log.outcomes);
    for (seq, events) in fresh {
        match outcomes.remove(&seq) {
            Some(outcome) => {
                report.stored += outcome.stored;
                report.duplicates += outcome.duplicates;
            }
            // Stored in the stream, not yet admitted here.
            None => report.stored += events,
        }
    }
    report
}

/// Follows the stream for good: a consumer that ends (NATS went away for
/// long) is made again from the next sequence not yet admitted.
async fn admit(log: Arc<Log>, switchboard: Arc<Switchboard>, first: consumer::push::Ordered) {
    let mut messages = Some(first);
    loop {
        if let Some(stream) = messages.take() {
            follow(&log, &switchboard, stream).await;
        }
        if switchboard.is_shutting_down() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let next = *log.applied.borrow() + 1;
        match log.subscribe(consumer::DeliverPolicy::ByStartSequence { start_sequence: next }).await {
            Ok(stream) => messages = Some(stream),
            Err(e) => tracing::debug!("{e}; retrying"),
        }
    }
}

async fn follow(log: &Log, switchboard: &Switchboard, messages: consumer::push::Ordered) {
    let mut chunks = messages.ready_chunks(512);
    while let Some(chunk) = chunks.next().await {
        let mut batches = Vec::with_capacity(chunk.len());
        let mut seqs = Vec::with_capacity(chunk.len());
        let mut applied = *log.applied.borrow();
        for message in chunk {
            let message = match message {
                Ok(message) => message,
                Err(e) => {
                    tracing::debug!("the tier's stream: {e}");
                    continue;
                }
            };
            let Ok(info) = message.info() else { continue };
            let seq = info.stream_sequence;
            if seq <= applied {
                continue;
            }
            applied = seq;
            match decode(log, &message) {
                Some((own, batch)) => {
                    seqs.push((seq, own));
                    batches.push(batch);
                }
                None => tracing::warn!("stream message {seq} is not an event; skipped"),
            }
        }
        let reports = switchboard.apply_all(batches);
        {
            let mut outcomes = lock(&log.outcomes);
            for ((seq, own), report) in seqs.into_iter().zip(reports) {
                if own {
                    outcomes.insert(seq, Outcome { stored: report.stored, duplicates: report.duplicates });
                }
            }
            // Writers that gave up leave theirs: keep the recent ones only.
            if outcomes.len() > 100_000 {
                let keep = outcomes.split_off(&applied.saturating_sub(50_000));
                *outcomes = keep;
            }
        }
        log.applied.send_replace(applied);
    }
}

/// A stream message as a batch: `true` with it when this member published
/// it (a writer here waits for its outcome).
fn decode(log: &Log, message: &jetstream::Message) -> Option<(bool, Batch)> {
    let header = |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
    let own = header(MEMBER).as_deref() == Some(&*log.member);
    let mine = if own { header("Nats-Msg-Id").and_then(|id| lock(&log.parsed).remove(&id)) } else { None };
    let events = match mine {
        Some(events) => events,
        None => {
            let mut events = Vec::new();
            for raw in message.payload.split(|b| *b == 0) {
                let event = Event::parse(std::str::from_utf8(raw).ok()?).ok()?;
                let held = Arc::new(HeldEvent::new(&event));
                events.push((event, held));
            }
            events
        }
    };
    let conn = |name: &str| header(name).and_then(|v| v.parse().ok()).map(ConnId);
    let origin = match conn(CONN) {
        Some(conn) if own => Origin::Socket(conn),
        _ => Origin::Http,
    };
    let kind = match header(TARGET) {
        Some(_) => Kind::Command { target: conn(TARGET).filter(|_| own) },
        None => Kind::Events,
    };
    let principal: Arc<str> = Arc::from(header(PRINCIPAL).unwrap_or_default());
    Some((own, Batch { origin, principal, events, kind }))
}

fn headers(member: &str, batch: &Batch) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(MEMBER, member);
    headers.insert(PRINCIPAL, &*batch.principal);
    if let Origin::Socket(conn) = batch.origin {
        headers.insert(CONN, conn.0.to_string().as_str());
    }
    if let Kind::Command { target } = batch.kind {
        headers.insert(TARGET, target.map_or_else(String::new, |t| t.0.to_string()).as_str());
    }
    headers
}

fn subject(event: &Event) -> String {
    match event.session().filter(|_| !event.is_agent_scoped()) {
        Some(session) => format!("aep.h.{}", session_token(session)),
        None => LIVE_ONLY.to_owned(),
    }
}

/// The stream's dedupe key: a digest of the message's `(source, id)`s, so
/// the same events resent (to any member) are one message.
fn message_id(events: &[(Event, Arc<HeldEvent>)]) -> String {
    let mut digest = Sha256::new();
    for (event, _) in events {
        digest.update(event.source().as_bytes());
        digest.update([0]);
        digest.update(event.id().as_bytes());
        digest.update([0]);
    }
    digest.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

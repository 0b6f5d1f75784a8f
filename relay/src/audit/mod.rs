//! The audit trail: every command the relay forwards or refuses, its ack,
//! the outcome events `cause`-linked to it and the `attention.requested` it
//! answers, kept in the durable store apart from the replay buffer, under
//! its own retention (`--audit-retention`, `--audit-bytes`). The records are
//! the events' own bytes, chained by hash ([`chain`]).
//!
//! The switchboard hands every admitted event and every routed command here under
//! its lock, so this only links and enqueues: a thread of its own seals the
//! chain and writes in groups, off the switchboard's locks.

pub mod chain;
pub mod csv;
pub mod head;
pub mod http;
mod links;
mod store;
mod summary;
pub mod verify;
pub mod words;

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::EventType;
use aep_engine::Event;

use crate::sync::lock;
use chain::Kind;
use links::Links;
pub use store::{Bounds, Page, Query, StoreError, MAX_SPAN};
use store::{NewRecord, Store, Tail, Write};
pub use summary::{Acked, ByRule, Summary};

/// Commands reloaded at start whose ack or outcome may still come.
const REOPENED: Duration = Duration::from_secs(3600);

pub struct Audit {
    links: Mutex<Links>,
    writes: Mutex<Option<mpsc::Sender<Write>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    store: Arc<Store>,
    signer: head::Signer,
    pub bounds: Bounds,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Audit {
    /// Opens the audit in `dir`, trims it to `bounds` and starts its writer.
    pub fn open(dir: &std::path::Path, bounds: Bounds) -> Result<Audit, StoreError> {
        let signer = head::Signer::load(dir).map_err(StoreError)?;
        let (store, mut tail) = Store::open(dir)?;
        store.write(&mut tail, &[], bounds, now_ms())?;
        let mut links = Links::new(tail.next_seq, tail.last_at);
        for summary in store.recent(now_ms().saturating_sub(REOPENED.as_millis() as u64), links::OPEN)? {
            links.reopen(summary);
        }
        let store = Arc::new(store);
        let (writes, queue) = mpsc::channel();
        let writer = {
            let store = store.clone();
            std::thread::Builder::new()
                .name("aep-audit".into())
                .spawn(move || write_in_groups(&store, tail, bounds, &queue))
                .map_err(|e| StoreError(format!("cannot start the audit writer: {e}")))?
        };
        Ok(Audit {
            links: Mutex::new(links),
            writes: Mutex::new(Some(writes)),
            writer: Mutex::new(Some(writer)),
            store,
            signer,
            bounds,
        })
    }

    fn send(&self, writes: Vec<Write>) {
        if let Some(tx) = lock(&self.writes).as_ref() {
            for w in writes {
                let _ = tx.send(w);
            }
        }
    }

    /// Whether a later command may refer to events of this kind: the
    /// request it answers, the session it names.
    pub fn remembers(kind: EventKind<'_>) -> bool {
        matches!(kind.core(), Some(EventType::AttentionRequested | EventType::SessionStarted))
    }

    /// A new event was admitted: kept when it answers, acks or results
    /// from a command, remembered when a later command may refer to it.
    pub fn saw(&self, event: &Event) {
        if !Audit::remembers(event.kind()) && event.cause().is_none() {
            return;
        }
        let writes = lock(&self.links).saw(event, now_ms());
        self.send(writes);
    }

    /// Remembers again, at start, the requests and sessions history still
    /// holds ([`Audit::remembers`]), so a command answering a request
    /// asked before a restart records that request and its prompt.
    pub fn recall(&self, history: &[Event]) {
        let mut links = lock(&self.links);
        history.iter().for_each(|event| links.remember(event));
    }

    /// A command was forwarded to its target on behalf of `principal`.
    pub fn forwarded(&self, command: &Event, principal: &str) {
        let writes = lock(&self.links).command(command, principal, None, now_ms());
        self.send(writes);
    }

    /// A command was refused by the relay with `refusal` (an `error` frame).
    pub fn refused(&self, command: &Event, principal: &str, refusal: &str) {
        let writes = lock(&self.links).command(command, principal, Some(refusal), now_ms());
        self.send(writes);
    }

    /// Commands matching `query`, newest first (blocking: call off the runtime).
    pub fn page(&self, query: &Query) -> Result<Page, StoreError> {
        self.store.page(query)
    }

    /// A page as JSONL with its chain, closed by the signed head of where
    /// it ends and which commands `query` selected (blocking); may end the
    /// page early (see [`Store::export`]).
    pub fn export(&self, query: &Query, page: &mut Page) -> Result<String, StoreError> {
        let (mut out, end) = self.store.export(page)?;
        let selection = head::Selection {
            filter: query.describe(),
            commands: page.commands.iter().map(|c| c.id.clone()).collect(),
        };
        let signed = self.signer.sign(end, selection);
        out.push_str(&serde_json::to_string(&signed).map_err(|e| StoreError(e.to_string()))?);
        out.push('\n');
        Ok(out)
    }

    /// The chain's head, signed (blocking).
    pub fn head(&self) -> Result<head::SignedHead, StoreError> {
        Ok(self.signer.sign(self.store.head()?, head::Selection::default()))
    }

    /// The key heads are signed with, 64 hex digits.
    pub fn public_key(&self) -> String {
        self.signer.public_key()
    }

    /// The commands of `page` as rows, in words (blocking).
    pub fn rows<'p>(&self, page: &'p Page) -> Result<Vec<words::Row<'p>>, StoreError> {
        let events = self.store.events(&page.commands)?;
        Ok(page.commands.iter().zip(events).map(|(summary, events)| words::Row::of(summary, &events)).collect())
    }

    /// Waits until everything enqueued so far is on disk, however long the
    /// disk takes (a bound here would let a slow disk lose what shutdown
    /// promises is kept); returns at once if the writer has gone.
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        let sent = lock(&self.writes).as_ref().is_some_and(|tx| tx.send(Write::Flush(done)).is_ok());
        if sent {
            let _ = wait.recv();
        }
    }

    /// Records held.
    pub fn len(&self) -> u64 {
        self.store.len().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Audit {
    fn drop(&mut self) {
        lock(&self.writes).take();
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
    }
}

/// One transaction per round: everything queued at its start. Writes that
/// fail are logged and dropped; the chain continues from what is on disk.
/// A flush is answered once what was queued before it is written.
fn write_in_groups(store: &Store, mut tail: Tail, bounds: Bounds, queue: &mpsc::Receiver<Write>) {
    while let Ok(first) = queue.recv() {
        let mut round = vec![first];
        round.extend(queue.try_iter());
        if let Err(e) = store.write(&mut tail, &round, bounds, now_ms()) {
            tracing::error!("the audit trail could not be written: {e}");
        }
        for w in round {
            if let Write::Flush(done) = w {
                let _ = done.send(());
            }
        }
    }
}

/// Parses `90d`, `12h`, `30s` … for `--audit-retention`.
pub fn parse_retention(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration (e.g. 90d, 12h): {e}"))
}

pub(crate) fn new_record(
    seq: u64,
    at: u64,
    kind: Kind,
    command: &Arc<str>,
    principal: &Arc<str>,
    raw: Arc<str>,
) -> Write {
    Write::Record(NewRecord { seq, at, kind, command: command.clone(), principal: principal.clone(), raw })
}

pub use verify::run;

#[cfg(test)]
mod tests {
    use super::*;

    fn command(n: u64, principal: &str) -> Event {
        Event::parse(&format!(
            r#"{{"aep":"0.1","id":"c{n}","type":"control.cancel","time":"2026-07-03T10:00:00Z","source":"aep://console/agent/{principal}","agent":"{principal}","session":"s","data":{{}}}}"#
        ))
        .unwrap()
    }

    /// A sparse match ends its page before its chain links grow past the
    /// bound; the rest comes on the next page, and each page verifies.
    #[test]
    fn a_sparse_page_ends_before_its_span_passes_the_bound() {
        let dir = std::env::temp_dir().join(format!("aep-audit-span-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let audit = Audit::open(&dir, Bounds { retention: Duration::from_secs(3600), max_bytes: u64::MAX }).unwrap();
        let every = MAX_SPAN / 3;
        for n in 0..every * 10 {
            let principal = if n % every == 0 { "rare" } else { "busy" };
            audit.forwarded(&command(n, principal), principal);
        }
        audit.flush();
        let query = Query { to: u64::MAX, principal: Some("rare".into()), limit: 100, ..Query::default() };
        let mut page = audit.page(&query).unwrap();
        assert_eq!(page.commands.len(), 10);
        let export = audit.export(&query, &mut page).unwrap();
        let verified = verify::export(&export, None).unwrap().chain;
        assert!(verified.records as u64 <= MAX_SPAN, "{} records", verified.records);
        assert_eq!(page.commands.len(), 4, "three gaps of {every} fit, a fourth would not");
        assert_eq!(page.commands[0].id, format!("c{}", every * 9));
        let next = Query { before: page.next, ..query };
        let mut rest = audit.page(&next).unwrap();
        assert_eq!(rest.commands.first().map(|c| c.id.clone()), Some(format!("c{}", every * 5)));
        verify::export(&audit.export(&next, &mut rest).unwrap(), None).unwrap();
        drop(audit);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

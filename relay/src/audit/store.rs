//! The audit trail on disk (`audit.redb` in `--data-dir`), a database of
//! its own so its retention is not the replay buffer's:
//!
//! - `records`: chain position → time, hash, link line and the event's
//!   exact bytes;
//! - `commands`: (time, position) → the command's [`Summary`]: the time
//!   index queries walk newest first;
//! - `by_principal`: (principal, time, position): who commanded, without
//!   reading anyone else's commands.
//!
//! Positions grow with time (the clock is never let run backwards), so the
//! oldest records are always first: retention removes from the front.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

use aep_engine::Event;

use super::chain::{self, Hash, Head, Kind};
use super::head::ChainEnd;
use super::summary::Summary;

const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");
const COMMANDS: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("commands");
const BY_PRINCIPAL: TableDefinition<(&str, u64, u64), ()> = TableDefinition::new("by_principal");
/// `bytes`: what `records` holds, for the byte bound.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// How long and how much the audit keeps (`--audit-retention`, `--audit-bytes`).
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub retention: Duration,
    pub max_bytes: u64,
}

/// A record on its way to disk; the writer seals it into the chain.
pub struct NewRecord {
    pub seq: u64,
    pub at: u64,
    pub kind: Kind,
    pub command: std::sync::Arc<str>,
    pub principal: std::sync::Arc<str>,
    pub raw: std::sync::Arc<str>,
}

pub enum Write {
    Record(NewRecord),
    Summary(Summary),
    /// Answered once everything before it is written.
    Flush(std::sync::mpsc::Sender<()>),
}

/// The end of the chain: where the next record goes.
#[derive(Clone, Copy)]
pub struct Tail {
    pub next_seq: u64,
    pub last_hash: Hash,
    pub last_at: u64,
    pub bytes: u64,
}

/// Which commands a query wants (all bounds inclusive, times in ms).
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub from: u64,
    pub to: u64,
    pub principal: Option<String>,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub verb: Option<String>,
    pub outcome: Option<String>,
    pub limit: usize,
    /// Paging: only commands before this (time, position), exclusive.
    pub before: Option<(u64, u64)>,
}

impl Query {
    /// The query as a query string, as the export's signed head names it:
    /// only what narrows the selection, in a fixed order.
    pub fn describe(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if self.from > 0 {
            pairs.push(("from", self.from.to_string()));
        }
        if self.to < u64::MAX {
            pairs.push(("to", self.to.to_string()));
        }
        for (name, value) in [
            ("principal", &self.principal),
            ("agent", &self.agent),
            ("session", &self.session),
            ("verb", &self.verb),
            ("outcome", &self.outcome),
        ] {
            if let Some(value) = value {
                pairs.push((name, value.clone()));
            }
        }
        pairs.push(("limit", self.limit.to_string()));
        if let Some((at, seq)) = self.before {
            pairs.push(("before", format!("{at}.{seq}")));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    fn wants(&self, s: &Summary) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        is(&self.principal, &s.principal)
            && is(&self.agent, &s.agent)
            && is(&self.session, &s.session)
            && is(&self.verb, &s.verb)
            && self.outcome.as_deref().is_none_or(|o| s.has_outcome(o))
    }
}

/// One page of commands, newest first, and where the next page starts.
/// The most records one JSONL answer spans (its links included).
pub const MAX_SPAN: u64 = 10_000;

pub struct Page {
    pub commands: Vec<Summary>,
    pub next: Option<(u64, u64)>,
}

#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> StoreError {
    move |e| StoreError(format!("{what}: {e}"))
}

/// A stored record: `at ‖ hash ‖ link length ‖ link line ‖ event bytes`.
struct Stored<'a> {
    at: u64,
    link: &'a str,
    raw: &'a str,
}

const FIXED: usize = 8 + 32 + 4;

fn encode(at: u64, hash: &Hash, link: &str, raw: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(FIXED + link.len() + raw.len());
    out.extend_from_slice(&at.to_be_bytes());
    out.extend_from_slice(hash);
    out.extend_from_slice(&(link.len() as u32).to_be_bytes());
    out.extend_from_slice(link.as_bytes());
    out.extend_from_slice(raw.as_bytes());
    out
}

fn decode(bytes: &[u8]) -> Option<Stored<'_>> {
    let at = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let len = u32::from_be_bytes(bytes.get(40..44)?.try_into().ok()?) as usize;
    let link = std::str::from_utf8(bytes.get(FIXED..FIXED + len)?).ok()?;
    let raw = std::str::from_utf8(bytes.get(FIXED + len..)?).ok()?;
    Some(Stored { at, link, raw })
}

fn hash_of(bytes: &[u8]) -> Option<Hash> {
    bytes.get(8..40)?.try_into().ok()
}

pub struct Store {
    db: Database,
}

impl Store {
    /// Opens (or creates) the audit in `dir`, and finds the chain's end.
    pub fn open(dir: &Path) -> Result<(Store, Tail), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| fail("cannot create the data directory")(&e))?;
        let path = dir.join("audit.redb");
        let db = Database::create(&path).map_err(|e| StoreError(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(|e| fail("cannot write the audit")(&e))?;
        {
            txn.open_table(RECORDS).map_err(|e| fail("audit table")(&e))?;
            txn.open_table(COMMANDS).map_err(|e| fail("audit table")(&e))?;
            txn.open_table(BY_PRINCIPAL).map_err(|e| fail("audit table")(&e))?;
            txn.open_table(META).map_err(|e| fail("audit table")(&e))?;
        }
        txn.commit().map_err(|e| fail("cannot write the audit")(&e))?;
        let read = fail("cannot read the audit");
        let txn = db.begin_read().map_err(|e| read(&e))?;
        let records = txn.open_table(RECORDS).map_err(|e| read(&e))?;
        let bytes =
            txn.open_table(META).map_err(|e| read(&e))?.get("bytes").map_err(|e| read(&e))?.map_or(0, |v| v.value());
        let mut tail = Tail { next_seq: 0, last_hash: [0; 32], last_at: 0, bytes };
        if let Some((seq, value)) = records.last().map_err(|e| read(&e))? {
            let value = value.value();
            let stored = decode(value).ok_or_else(|| StoreError("a damaged audit record".into()))?;
            tail = Tail {
                next_seq: seq.value() + 1,
                last_hash: hash_of(value).unwrap_or([0; 32]),
                last_at: stored.at,
                bytes,
            };
        }
        drop(records);
        drop(txn);
        Ok((Store { db }, tail))
    }

    /// Writes `writes` in one transaction, extending the chain from `tail`,
    /// then drops what is past the bounds.
    pub fn write(&self, tail: &mut Tail, writes: &[Write], bounds: Bounds, now: u64) -> Result<(), StoreError> {
        let write = fail("cannot write the audit");
        let txn = self.db.begin_write().map_err(|e| write(&e))?;
        let mut next = *tail;
        {
            let mut records = txn.open_table(RECORDS).map_err(|e| write(&e))?;
            let mut commands = txn.open_table(COMMANDS).map_err(|e| write(&e))?;
            let mut principals = txn.open_table(BY_PRINCIPAL).map_err(|e| write(&e))?;
            let mut meta = txn.open_table(META).map_err(|e| write(&e))?;
            for w in writes {
                match w {
                    Write::Record(r) => {
                        let head = Head {
                            seq: r.seq,
                            at: r.at,
                            kind: r.kind.as_str(),
                            command: &r.command,
                            principal: &r.principal,
                        };
                        let sealed = chain::seal(&next.last_hash, &head, &r.raw);
                        let value = encode(r.at, &sealed.hash, &sealed.link, &r.raw);
                        next.bytes += value.len() as u64;
                        records.insert(r.seq, value.as_slice()).map_err(|e| write(&e))?;
                        next = Tail { next_seq: r.seq + 1, last_hash: sealed.hash, last_at: r.at, ..next };
                    }
                    Write::Summary(s) => {
                        let json = serde_json::to_vec(s).map_err(|e| write(&e))?;
                        commands.insert((s.at, s.seq), json.as_slice()).map_err(|e| write(&e))?;
                        principals.insert((s.principal.as_str(), s.at, s.seq), ()).map_err(|e| write(&e))?;
                    }
                    Write::Flush(_) => {}
                }
            }
            prune(&mut records, &mut commands, &mut principals, &mut next.bytes, bounds, now)?;
            meta.insert("bytes", next.bytes).map_err(|e| write(&e))?;
        }
        txn.commit().map_err(|e| write(&e))?;
        *tail = next;
        Ok(())
    }

    /// Commands matching `query`, newest first.
    pub fn page(&self, query: &Query) -> Result<Page, StoreError> {
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let commands = txn.open_table(COMMANDS).map_err(|e| read(&e))?;
        let upper = match query.before {
            Some((at, seq)) if (at, seq) <= (query.to, u64::MAX) => {
                if seq == 0 {
                    (at.saturating_sub(1), u64::MAX)
                } else {
                    (at, seq - 1)
                }
            }
            _ => (query.to, u64::MAX),
        };
        let limit = query.limit.max(1);
        let mut found: Vec<Summary> = Vec::new();
        let mut take = |value: &[u8]| -> Result<bool, StoreError> {
            let s: Summary = serde_json::from_slice(value).map_err(|e| read(&e))?;
            if query.wants(&s) {
                found.push(s);
            }
            Ok(found.len() > limit)
        };
        if query.from > upper.0 {
            return Ok(Page { commands: Vec::new(), next: None });
        }
        if let Some(principal) = &query.principal {
            let index = txn.open_table(BY_PRINCIPAL).map_err(|e| read(&e))?;
            let range = (principal.as_str(), query.from, 0)..=(principal.as_str(), upper.0, upper.1);
            for row in index.range(range).map_err(|e| read(&e))?.rev() {
                let (key, _) = row.map_err(|e| read(&e))?;
                let (_, at, seq) = key.value();
                let Some(value) = commands.get((at, seq)).map_err(|e| read(&e))? else { continue };
                if take(value.value())? {
                    break;
                }
            }
        } else {
            for row in commands.range((query.from, 0)..=upper).map_err(|e| read(&e))?.rev() {
                let (_, value) = row.map_err(|e| read(&e))?;
                if take(value.value())? {
                    break;
                }
            }
        }
        let next = (found.len() > limit).then(|| {
            found.truncate(limit);
            found.last().map(|s| (s.at, s.seq))
        });
        Ok(Page { commands: found, next: next.flatten() })
    }

    /// The page as JSONL: each command's records whole (newest command
    /// first, each command's records in chain order), then every other
    /// record of the span they cover as a link, so the export verifies.
    /// A page whose span would pass [`MAX_SPAN`] records ends early (at
    /// least one command), its `next` where it ended: sparse matches cost
    /// links, not unbounded answers.
    ///
    /// Also answers where the export ends: the chain as of its newest
    /// record (the chain's head when the page holds no record), for the
    /// signed head that closes it.
    pub fn export(&self, page: &mut Page) -> Result<(String, ChainEnd), StoreError> {
        let mut span: Option<(u64, u64)> = None;
        let mut kept = 0;
        for command in &page.commands {
            let (Some(&low), Some(&high)) = (command.records.iter().min(), command.records.iter().max()) else {
                kept += 1;
                continue;
            };
            let wider = span.map_or((low, high), |(l, h)| (l.min(low), h.max(high)));
            if kept > 0 && wider.1 - wider.0 >= MAX_SPAN {
                break;
            }
            span = Some(wider);
            kept += 1;
        }
        if kept < page.commands.len() {
            page.commands.truncate(kept);
            page.next = page.commands.last().map(|s| (s.at, s.seq));
        }
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let records = txn.open_table(RECORDS).map_err(|e| read(&e))?;
        let mut out = String::new();
        let mut whole: BTreeSet<u64> = BTreeSet::new();
        for command in &page.commands {
            for &seq in &command.records {
                let Some(value) = records.get(seq).map_err(|e| read(&e))? else { continue };
                let stored = decode(value.value()).ok_or_else(|| StoreError("a damaged audit record".into()))?;
                out.push_str(&chain::whole(stored.link, stored.raw));
                out.push('\n');
                whole.insert(seq);
            }
        }
        let (Some(&first), Some(&last)) = (whole.first(), whole.last()) else { return Ok((out, self.head()?)) };
        let end = records
            .get(last)
            .map_err(|e| read(&e))?
            .and_then(|v| hash_of(v.value()))
            .map(|hash| ChainEnd { records: last + 1, hash })
            .ok_or_else(|| StoreError("a damaged audit record".into()))?;
        for row in records.range(first..=last).map_err(|e| read(&e))? {
            let (seq, value) = row.map_err(|e| read(&e))?;
            if whole.contains(&seq.value()) {
                continue;
            }
            let stored = decode(value.value()).ok_or_else(|| StoreError("a damaged audit record".into()))?;
            out.push_str(stored.link);
            out.push('\n');
        }
        Ok((out, end))
    }

    /// The chain's head: its newest record.
    pub fn head(&self) -> Result<ChainEnd, StoreError> {
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let records = txn.open_table(RECORDS).map_err(|e| read(&e))?;
        let last = records.last().map_err(|e| read(&e))?;
        Ok(match last {
            Some((seq, value)) => {
                ChainEnd { records: seq.value() + 1, hash: hash_of(value.value()).unwrap_or([0; 32]) }
            }
            None => ChainEnd { records: 0, hash: [0; 32] },
        })
    }

    /// The events each command's records hold, in chain order (the relay's
    /// own refusal frames, which are no events, left out).
    pub fn events(&self, commands: &[Summary]) -> Result<Vec<Vec<Event>>, StoreError> {
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let records = txn.open_table(RECORDS).map_err(|e| read(&e))?;
        let mut all = Vec::with_capacity(commands.len());
        for command in commands {
            let mut events = Vec::with_capacity(command.records.len());
            for &seq in &command.records {
                let Some(value) = records.get(seq).map_err(|e| read(&e))? else { continue };
                let stored = decode(value.value()).ok_or_else(|| StoreError("a damaged audit record".into()))?;
                if let Ok(event) = Event::parse(stored.raw) {
                    events.push(event);
                }
            }
            all.push(events);
        }
        Ok(all)
    }

    /// Commands recorded since `since`, oldest first: those whose ack or
    /// outcome may still arrive after a restart.
    pub fn recent(&self, since: u64, most: usize) -> Result<Vec<Summary>, StoreError> {
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let commands = txn.open_table(COMMANDS).map_err(|e| read(&e))?;
        let mut found = Vec::new();
        for row in commands.range((since, 0)..).map_err(|e| read(&e))?.rev().take(most) {
            let (_, value) = row.map_err(|e| read(&e))?;
            if let Ok(s) = serde_json::from_slice::<Summary>(value.value()) {
                found.push(s);
            }
        }
        found.reverse();
        Ok(found)
    }

    /// Records held, for the start-up line and tests.
    pub fn len(&self) -> Result<u64, StoreError> {
        let read = fail("cannot read the audit");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let records = txn.open_table(RECORDS).map_err(|e| read(&e))?;
        records.len().map_err(|e| read(&e))
    }
}

/// Drops the oldest records while they are older than the retention or
/// the trail is over its byte bound, and the commands they began with.
fn prune(
    records: &mut redb::Table<u64, &[u8]>,
    commands: &mut redb::Table<(u64, u64), &[u8]>,
    principals: &mut redb::Table<(&str, u64, u64), ()>,
    bytes: &mut u64,
    bounds: Bounds,
    now: u64,
) -> Result<(), StoreError> {
    let write = fail("cannot trim the audit");
    let cutoff = now.saturating_sub(u64::try_from(bounds.retention.as_millis()).unwrap_or(u64::MAX));
    let mut gone: Option<u64> = None;
    loop {
        let Some((seq, size, at)) = records.first().map_err(|e| write(&e))?.map(|(k, v)| {
            (k.value(), v.value().len() as u64, u64::from_be_bytes(v.value()[..8].try_into().unwrap_or([0; 8])))
        }) else {
            break;
        };
        if at >= cutoff && *bytes <= bounds.max_bytes {
            break;
        }
        records.remove(seq).map_err(|e| write(&e))?;
        *bytes = bytes.saturating_sub(size);
        gone = Some(seq);
    }
    let Some(gone) = gone else { return Ok(()) };
    loop {
        let Some(((at, seq), principal)) = commands.first().map_err(|e| write(&e))?.map(|(k, v)| {
            let principal = serde_json::from_slice::<Summary>(v.value()).map(|s| s.principal).unwrap_or_default();
            (k.value(), principal)
        }) else {
            break;
        };
        if seq > gone {
            break;
        }
        commands.remove((at, seq)).map_err(|e| write(&e))?;
        principals.remove((principal.as_str(), at, seq)).map_err(|e| write(&e))?;
    }
    Ok(())
}

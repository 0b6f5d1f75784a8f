//! Durable session history (`--data-dir`): every change to the replay
//! buffers is mirrored into an embedded [`redb`] database, written and
//! synced before the relay answers for it, so a restart or a crash loses
//! nothing that was accepted. Writes are grouped ([`super::commit`]).
//!
//! The database holds exactly what the in-memory buffers hold (the same
//! bounds evict the same entries from both), so disk use is bounded like
//! memory; freed pages are reused, the file does not shrink.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redb::{Database, ReadableTable, TableDefinition};

use super::session::Slot;
use super::Position;

/// `(session, first slot ‖ counter)` → a segment: its last slot, then each
/// entry's slot, length and exact bytes.
const SEGMENTS: TableDefinition<(&str, &[u8]), &[u8]> = TableDefinition::new("segments");
/// `(session, slot ‖ source ‖ 0 ‖ id)` → the event's exact bytes: one row
/// per entry, as earlier versions wrote history; read, and dropped with
/// their session.
const ENTRIES: TableDefinition<(&str, &[u8]), &[u8]> = TableDefinition::new("entries");
/// `session` → last evicted slot and when it was last written.
const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");
/// `session` → high-water position of a session evicted whole.
const TOMBSTONES: TableDefinition<&str, &[u8]> = TableDefinition::new("tombstones");
/// session → the principal that owns it.
const OWNERS: TableDefinition<&str, &str> = TableDefinition::new("owners");

/// Why the history on disk could not be read or written.
#[derive(Clone, Debug)]
pub struct DiskError(pub String);

impl std::fmt::Display for DiskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DiskError {}

fn fail(what: &str) -> impl Fn(&dyn std::fmt::Display) -> DiskError + '_ {
    move |e| DiskError(format!("{what}: {e}"))
}

/// One change to mirror.
pub enum Op {
    /// An entry added; entries evicted are behind its session's mark.
    Put {
        session: Arc<str>,
        slot: Slot,
        raw: Arc<str>,
    },
    Session {
        session: Arc<str>,
        last_evicted: Option<Slot>,
        written: u64,
    },
    DropSession {
        session: Arc<str>,
    },
    Tombstone {
        session: Arc<str>,
        high: Position,
    },
    Untomb {
        session: Arc<str>,
    },
    Owner {
        session: Arc<str>,
        principal: Arc<str>,
    },
    Disown {
        session: Arc<str>,
    },
}

/// One session as found on disk, entries in replay order.
pub struct LoadedSession {
    pub session: Arc<str>,
    pub entries: Vec<(Slot, Arc<str>)>,
    pub last_evicted: Option<Slot>,
    pub written: u64,
}

pub struct Loaded {
    pub sessions: Vec<LoadedSession>,
    pub owners: Vec<(Arc<str>, Arc<str>)>,
    pub tombstones: Vec<(Arc<str>, Position)>,
}

pub struct Disk {
    db: Database,
    /// Makes segment keys unique.
    next_segment: AtomicU64,
}

fn encode_slot(slot: Slot, out: &mut Vec<u8>) {
    let (anchor, rank) = slot;
    // Big-endian so byte order is replay order; `None` sorts first.
    out.push(u8::from(anchor.is_some()));
    let (epoch, seq) = anchor.unwrap_or((0, 0));
    out.extend_from_slice(&epoch.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&rank.to_be_bytes());
}

fn decode_slot(bytes: &[u8]) -> Option<Slot> {
    let n = |at: usize| Some(u64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    let anchor = match bytes.first()? {
        0 => None,
        _ => Some((n(1)?, n(9)?)),
    };
    Some((anchor, n(17)?))
}

const SLOT_LEN: usize = 25;

/// Writes into a reserved value, front to back.
struct Cursor<'a>(&'a mut [u8]);

impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let (head, tail) = std::mem::take(&mut self.0).split_at_mut(bytes.len());
        head.copy_from_slice(bytes);
        self.0 = tail;
    }

    fn slot(&mut self, slot: Slot) {
        let (anchor, rank) = slot;
        let (epoch, seq) = anchor.unwrap_or((0, 0));
        self.put(&[u8::from(anchor.is_some())]);
        self.put(&epoch.to_be_bytes());
        self.put(&seq.to_be_bytes());
        self.put(&rank.to_be_bytes());
    }
}

#[cfg(test)]
fn entry_key(slot: Slot, source: &str, id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(SLOT_LEN + source.len() + 1 + id.len());
    encode_slot(slot, &mut key);
    key.extend_from_slice(source.as_bytes());
    key.push(0);
    key.extend_from_slice(id.as_bytes());
    key
}

impl Disk {
    /// Opens (or creates) the history in `dir`.
    pub fn open(dir: &Path) -> Result<Disk, DiskError> {
        std::fs::create_dir_all(dir).map_err(|e| fail("cannot create the data directory")(&e))?;
        let path = dir.join("history.redb");
        let db = Database::create(&path).map_err(|e| fail(&format!("cannot open {}", path.display()))(&e))?;
        let txn = db.begin_write().map_err(|e| fail("cannot write the history")(&e))?;
        {
            txn.open_table(ENTRIES).map_err(|e| fail("history table")(&e))?;
            txn.open_table(SEGMENTS).map_err(|e| fail("history table")(&e))?;
            txn.open_table(SESSIONS).map_err(|e| fail("history table")(&e))?;
            txn.open_table(TOMBSTONES).map_err(|e| fail("history table")(&e))?;
            txn.open_table(OWNERS).map_err(|e| fail("history table")(&e))?;
        }
        txn.commit().map_err(|e| fail("cannot write the history")(&e))?;
        let first =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Ok(Disk { db, next_segment: AtomicU64::new(first) })
    }

    /// Writes `ops` in one transaction, synced to disk before it returns.
    ///
    /// Entries are written as segments: the entries a transaction adds to
    /// one session are one row (one B-tree insert however many events a
    /// group holds). Evictions are always a session's oldest entries, so
    /// they are not written one by one: the session row's eviction mark
    /// says which entries are gone, loading skips them, and a segment whose
    /// newest entry is behind the mark is deleted whole.
    pub fn write<'a>(&self, ops: impl IntoIterator<Item = &'a Op>) -> Result<(), DiskError> {
        let mut ops = ops.into_iter().peekable();
        if ops.peek().is_none() {
            return Ok(());
        }
        let write = fail("cannot write the history");
        let txn = self.db.begin_write().map_err(|e| write(&e))?;
        {
            let mut legacy = txn.open_table(ENTRIES).map_err(|e| write(&e))?;
            let mut segments = txn.open_table(SEGMENTS).map_err(|e| write(&e))?;
            let mut sessions = txn.open_table(SESSIONS).map_err(|e| write(&e))?;
            let mut tombstones = txn.open_table(TOMBSTONES).map_err(|e| write(&e))?;
            let mut owners = txn.open_table(OWNERS).map_err(|e| write(&e))?;
            // Per session, in order of first mention: entries added, and its
            // row (`None`: the session was dropped).
            let mut added: HashMap<&Arc<str>, Vec<(Slot, &Arc<str>)>> = HashMap::new();
            let mut rows: HashMap<&Arc<str>, Option<(Option<Slot>, u64)>> = HashMap::new();
            for op in ops {
                match op {
                    Op::Put { session, slot, raw } => added.entry(session).or_default().push((*slot, raw)),
                    Op::Session { session, last_evicted, written } => {
                        rows.insert(session, Some((*last_evicted, *written)));
                    }
                    Op::DropSession { session } => {
                        added.remove(session);
                        rows.insert(session, None);
                        for table in [&mut legacy, &mut segments] {
                            let keys: Vec<Vec<u8>> = table
                                .range((&**session, &[][..])..)
                                .map_err(|e| write(&e))?
                                .map_while(|r| r.ok())
                                .take_while(|(k, _)| k.value().0 == &**session)
                                .map(|(k, _)| k.value().1.to_vec())
                                .collect();
                            for key in keys {
                                table.remove((&**session, key.as_slice())).map_err(|e| write(&e))?;
                            }
                        }
                    }
                    Op::Tombstone { session, high } => {
                        let mut value = Vec::with_capacity(16);
                        let high = *high;
                        value.extend_from_slice(&high.0.to_be_bytes());
                        value.extend_from_slice(&high.1.to_be_bytes());
                        tombstones.insert(&**session, value.as_slice()).map_err(|e| write(&e))?;
                    }
                    Op::Untomb { session } => {
                        tombstones.remove(&**session).map_err(|e| write(&e))?;
                    }
                    Op::Owner { session, principal } => {
                        owners.insert(&**session, &**principal).map_err(|e| write(&e))?;
                    }
                    Op::Disown { session } => {
                        owners.remove(&**session).map_err(|e| write(&e))?;
                    }
                }
            }
            let mark = |session: &Arc<str>| rows.get(session).copied().flatten().and_then(|(evicted, _)| evicted);
            for (session, mut entries) in added {
                let evicted = mark(session);
                entries.retain(|(slot, _)| evicted.is_none_or(|e| *slot > e));
                let (Some(first), Some(last)) =
                    (entries.iter().map(|(s, _)| *s).min(), entries.iter().map(|(s, _)| *s).max())
                else {
                    continue;
                };
                let mut key = Vec::with_capacity(SLOT_LEN + 8);
                encode_slot(first, &mut key);
                key.extend_from_slice(&self.next_segment.fetch_add(1, Ordering::Relaxed).to_be_bytes());
                // Encoded straight into the database's page: no copy in between.
                let len = SLOT_LEN + entries.iter().map(|(_, r)| SLOT_LEN + 4 + r.len()).sum::<usize>();
                let len = u32::try_from(len).map_err(|e| write(&e))?;
                let mut value = segments.insert_reserve((&**session, key.as_slice()), len).map_err(|e| write(&e))?;
                let mut out = Cursor(value.as_mut());
                out.slot(last);
                for (slot, raw) in &entries {
                    out.slot(*slot);
                    out.put(&(raw.len() as u32).to_be_bytes());
                    out.put(raw.as_bytes());
                }
            }
            for (session, row) in &rows {
                let Some((last_evicted, written)) = row else {
                    sessions.remove(&***session).map_err(|e| write(&e))?;
                    continue;
                };
                let mut value = Vec::with_capacity(SLOT_LEN + 9);
                value.push(u8::from(last_evicted.is_some()));
                encode_slot(last_evicted.unwrap_or((None, 0)), &mut value);
                value.extend_from_slice(&written.to_be_bytes());
                sessions.insert(&***session, value.as_slice()).map_err(|e| write(&e))?;
                // Segments wholly behind the eviction mark, oldest first.
                let Some(evicted) = last_evicted else { continue };
                let gone: Vec<Vec<u8>> = segments
                    .range((&***session, &[][..])..)
                    .map_err(|e| write(&e))?
                    .map_while(|r| r.ok())
                    .take_while(|(k, v)| {
                        k.value().0 == &***session && decode_slot(v.value()).is_some_and(|l| l <= *evicted)
                    })
                    .map(|(k, _)| k.value().1.to_vec())
                    .collect();
                for key in gone {
                    segments.remove((&***session, key.as_slice())).map_err(|e| write(&e))?;
                }
            }
        }
        txn.commit().map_err(|e| write(&e))?;
        Ok(())
    }

    /// Everything held, for a restart.
    pub fn load(&self) -> Result<Loaded, DiskError> {
        let read = fail("cannot read the history");
        let txn = self.db.begin_read().map_err(|e| read(&e))?;
        let entries = txn.open_table(ENTRIES).map_err(|e| read(&e))?;
        let segments = txn.open_table(SEGMENTS).map_err(|e| read(&e))?;
        let sessions_table = txn.open_table(SESSIONS).map_err(|e| read(&e))?;
        let tombstones_table = txn.open_table(TOMBSTONES).map_err(|e| read(&e))?;
        let owners_table = txn.open_table(OWNERS).map_err(|e| read(&e))?;
        let mut owners = Vec::new();
        for row in owners_table.iter().map_err(|e| read(&e))? {
            let (key, value) = row.map_err(|e| read(&e))?;
            owners.push((Arc::from(key.value()), Arc::from(value.value())));
        }
        let mut by_session: HashMap<String, Vec<(Slot, Arc<str>)>> = HashMap::new();
        for row in entries.iter().map_err(|e| read(&e))? {
            let (key, value) = row.map_err(|e| read(&e))?;
            let (session, entry) = key.value();
            let slot = decode_slot(entry).ok_or_else(|| DiskError(format!("a damaged history key in `{session}`")))?;
            let raw: Arc<str> = Arc::from(std::str::from_utf8(value.value()).map_err(|e| read(&e))?);
            by_session.entry(session.to_owned()).or_default().push((slot, raw));
        }
        for row in segments.iter().map_err(|e| read(&e))? {
            let (key, value) = row.map_err(|e| read(&e))?;
            let session = key.value().0;
            let damaged = || DiskError(format!("a damaged history segment in `{session}`"));
            let bytes = value.value();
            let mut at = SLOT_LEN;
            while at < bytes.len() {
                let slot = decode_slot(bytes.get(at..).ok_or_else(damaged)?).ok_or_else(damaged)?;
                let len = bytes.get(at + SLOT_LEN..at + SLOT_LEN + 4).ok_or_else(damaged)?;
                let len = u32::from_be_bytes(len.try_into().map_err(|_| damaged())?) as usize;
                let start = at + SLOT_LEN + 4;
                let raw = bytes.get(start..start + len).ok_or_else(damaged)?;
                let raw: Arc<str> = Arc::from(std::str::from_utf8(raw).map_err(|e| read(&e))?);
                by_session.entry(session.to_owned()).or_default().push((slot, raw));
                at = start + len;
            }
        }
        let mut sessions: Vec<LoadedSession> = Vec::new();
        for (session, mut entries) in by_session {
            let mut loaded =
                LoadedSession { session: Arc::from(session), entries: Vec::new(), last_evicted: None, written: 0 };
            if let Some(value) = sessions_table.get(&*loaded.session).map_err(|e| read(&e))? {
                let bytes = value.value();
                if bytes.len() >= 1 + SLOT_LEN + 8 {
                    loaded.last_evicted = if bytes[0] == 1 { decode_slot(&bytes[1..]) } else { None };
                    loaded.written =
                        u64::from_be_bytes(bytes[1 + SLOT_LEN..1 + SLOT_LEN + 8].try_into().unwrap_or([0; 8]));
                }
            }
            // Entries behind the eviction mark are gone (see `write`).
            entries.retain(|(slot, _)| loaded.last_evicted.is_none_or(|e| *slot > e));
            entries.sort_by_key(|(slot, _)| *slot);
            if entries.is_empty() {
                continue;
            }
            loaded.entries = entries;
            sessions.push(loaded);
        }
        let mut tombstones = Vec::new();
        for row in tombstones_table.iter().map_err(|e| read(&e))? {
            let (key, value) = row.map_err(|e| read(&e))?;
            let bytes = value.value();
            if bytes.len() == 16 {
                let epoch = u64::from_be_bytes(bytes[..8].try_into().unwrap_or([0; 8]));
                let seq = u64::from_be_bytes(bytes[8..].try_into().unwrap_or([0; 8]));
                tombstones.push((Arc::from(key.value()), (epoch, seq)));
            }
        }
        Ok(Loaded { sessions, owners, tombstones })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(session: &Arc<str>, seq: u64) -> Op {
        Op::Put { session: session.clone(), slot: (Some((0, seq)), 0), raw: Arc::from(format!("{{\"seq\":{seq}}}")) }
    }

    fn mark(session: &Arc<str>, seq: u64) -> Op {
        Op::Session { session: session.clone(), last_evicted: Some((Some((0, seq)), 0)), written: seq }
    }

    /// Evicted entries are not kept: a segment behind the eviction mark is
    /// deleted, so the file holds what the buffers hold, not all ever written.
    #[test]
    fn segments_behind_the_eviction_mark_are_deleted() {
        let dir =
            std::env::temp_dir().join(format!("aep-disk-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&dir);
        let disk = Disk::open(&dir).unwrap();
        let s: Arc<str> = Arc::from("s");
        for seq in 0..200u64 {
            // Holding the newest 3: each write adds one and evicts one.
            let evicted = seq.checked_sub(3);
            let mut ops = vec![put(&s, seq)];
            if let Some(gone) = evicted {
                ops.push(mark(&s, gone));
            }
            disk.write(&ops).unwrap();
        }
        let txn = disk.db.begin_read().unwrap();
        let rows = redb::ReadableTableMetadata::len(&txn.open_table(SEGMENTS).unwrap()).unwrap();
        assert!(rows <= 4, "{rows} segments kept for 3 live entries");
        drop(txn);
        let loaded = disk.load().unwrap();
        let entries: Vec<Slot> = loaded.sessions[0].entries.iter().map(|(slot, _)| *slot).collect();
        assert_eq!(entries, vec![(Some((0, 197)), 0), (Some((0, 198)), 0), (Some((0, 199)), 0)]);
        drop(disk);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn key_bytes_sort_in_replay_order() {
        let slots: [Slot; 6] =
            [(None, 1), (None, 2), (Some((0, 0)), 0), (Some((0, 0)), 1), (Some((0, 1)), 0), (Some((1, 0)), 0)];
        let keys: Vec<Vec<u8>> = slots.iter().map(|s| entry_key(*s, "src", "id")).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for slot in slots {
            let mut bytes = Vec::new();
            encode_slot(slot, &mut bytes);
            assert_eq!(decode_slot(&bytes), Some(slot));
        }
    }
}

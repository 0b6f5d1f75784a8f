//! The audit's tamper evidence: every record is a line whose `hash` covers
//! the previous record's hash, the record's own head (position, time, kind,
//! command, principal) and a digest of the event's exact bytes, so removing,
//! reordering or editing any record breaks the chain at that point.
//!
//! An export holds each selected record whole (its `event`, byte for byte)
//! and every other record of the span it covers as a link (the same line
//! without the event): the verifier recomputes every hash and checks that
//! the span has no gap, with nothing but the file.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

pub type Hash = [u8; 32];

/// What a record is to the command it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A command the relay forwarded to its target.
    Command,
    /// The `attention.requested` a command answers.
    Request,
    /// The target's `control.accepted` / `control.rejected`.
    Ack,
    /// The relay's own refusal (`error` frame) of a command it did not forward.
    Refused,
    /// An event `cause`-linked to the command or its ack.
    Outcome,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::Request => "request",
            Kind::Ack => "ack",
            Kind::Refused => "refused",
            Kind::Outcome => "outcome",
        }
    }
}

/// A record's head: everything the hash covers besides the event.
pub struct Head<'a> {
    pub seq: u64,
    pub at: u64,
    pub kind: &'a str,
    pub command: &'a str,
    pub principal: &'a str,
}

pub fn digest(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

/// The hash of a record following `prev`.
pub fn link(prev: &Hash, head: &Head<'_>, body: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(head.seq.to_be_bytes());
    h.update(head.at.to_be_bytes());
    for field in [head.kind, head.command, head.principal] {
        h.update(field.as_bytes());
        h.update([0]);
    }
    h.update(body);
    h.finalize().into()
}

/// Lower-case hex, as hashes and keys are written.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A sealed record: its link line, and the line with the event.
pub struct Sealed {
    pub hash: Hash,
    /// `{"seq":…,"hash":"…"}`: the record without its event.
    pub link: String,
}

/// Seals `raw` as the record after `prev`.
pub fn seal(prev: &Hash, head: &Head<'_>, raw: &str) -> Sealed {
    let body = digest(raw.as_bytes());
    let hash = link(prev, head, &body);
    let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let line = format!(
        r#"{{"seq":{},"at":{},"kind":{},"command":{},"principal":{},"body":"{}","prev":"{}","hash":"{}"}}"#,
        head.seq,
        head.at,
        text(head.kind),
        text(head.command),
        text(head.principal),
        hex(&body),
        hex(prev),
        hex(&hash)
    );
    Sealed { hash, link: line }
}

/// The full line of a record: its link line with the event's own bytes.
pub fn whole(link: &str, raw: &str) -> String {
    let open = link.strip_suffix('}').unwrap_or(link);
    format!("{open},\"event\":{raw}}}")
}

#[derive(Deserialize)]
struct Line<'a> {
    seq: u64,
    at: u64,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    command: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    principal: std::borrow::Cow<'a, str>,
    body: &'a str,
    prev: &'a str,
    hash: &'a str,
    #[serde(borrow)]
    event: Option<&'a RawValue>,
}

/// What a verified chain holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    /// Records in the span, each once.
    pub records: usize,
    /// Of them, those with their event.
    pub whole: usize,
    /// Those without it, for the caller to judge: a record of a command
    /// the export selected must not be one.
    pub hash_only: Vec<HashOnly>,
    /// The commands that have their `command` record whole.
    pub whole_commands: Vec<String>,
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_hash: Hash,
}

/// A record present as its link line only.
#[derive(Debug, PartialEq, Eq)]
pub struct HashOnly {
    pub seq: u64,
    pub kind: String,
    pub command: String,
}

/// Checks an export: every line is a record whose hash is right, and the
/// records form one unbroken chain. The first record's `prev` is taken as
/// given (what came before it is outside the export).
pub fn verify(export: &str) -> Result<Verified, String> {
    let mut span: BTreeMap<u64, (Hash, Hash, bool)> = BTreeMap::new();
    let mut heads: BTreeMap<u64, (String, String)> = BTreeMap::new();
    for (n, text) in export.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line_no = n + 1;
        let line: Line<'_> =
            serde_json::from_str(text).map_err(|e| format!("line {line_no} is not an audit record: {e}"))?;
        let bad = |what: &str| format!("line {line_no} (record {}): {what}", line.seq);
        let body = unhex(line.body).ok_or_else(|| bad("`body` is not a SHA-256 digest"))?;
        let prev = unhex(line.prev).ok_or_else(|| bad("`prev` is not a SHA-256 digest"))?;
        let hash = unhex(line.hash).ok_or_else(|| bad("`hash` is not a SHA-256 digest"))?;
        if let Some(event) = line.event {
            if digest(event.get().as_bytes()) != body {
                return Err(bad("its event's bytes do not match the digest it was recorded with (edited)"));
            }
        }
        let head =
            Head { seq: line.seq, at: line.at, kind: &line.kind, command: &line.command, principal: &line.principal };
        if link(&prev, &head, &body) != hash {
            return Err(bad("its hash does not match its contents (edited)"));
        }
        let whole = line.event.is_some();
        match span.get(&line.seq) {
            Some((p, h, _)) if (*p, *h) != (prev, hash) => return Err(bad("appears twice with different contents")),
            Some((_, _, true)) => {}
            _ => {
                span.insert(line.seq, (prev, hash, whole));
                heads.insert(line.seq, (line.kind.into_owned(), line.command.into_owned()));
            }
        }
    }
    let (Some((&first_seq, _)), Some((&last_seq, &(_, last_hash, _)))) =
        (span.first_key_value(), span.last_key_value())
    else {
        return Err("the export holds no audit record".into());
    };
    let mut expected: Option<(u64, Hash)> = None;
    for (&seq, &(prev, hash, _)) in &span {
        if let Some((before, before_hash)) = expected {
            if seq != before + 1 {
                return Err(format!("records {}..{} are missing (removed)", before + 1, seq - 1));
            }
            if prev != before_hash {
                return Err(format!("record {seq} does not follow record {before} (the chain is broken)"));
            }
        }
        expected = Some((seq, hash));
    }
    let mut hash_only = Vec::new();
    let mut whole_commands = Vec::new();
    for (seq, (kind, command)) in heads {
        match span.get(&seq) {
            Some((_, _, true)) if kind == Kind::Command.as_str() => whole_commands.push(command),
            Some((_, _, true)) => {}
            _ => hash_only.push(HashOnly { seq, kind, command }),
        }
    }
    Ok(Verified {
        records: span.len(),
        whole: span.values().filter(|(_, _, w)| *w).count(),
        hash_only,
        whole_commands,
        first_seq,
        last_seq,
        last_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: u64) -> Vec<String> {
        let mut prev = [0u8; 32];
        (0..n)
            .map(|seq| {
                let raw = format!(r#"{{"id":"e{seq}","type":"control.cancel"}}"#);
                let head = Head { seq, at: 1_000 + seq, kind: "command", command: "c", principal: "alice" };
                let sealed = seal(&prev, &head, &raw);
                prev = sealed.hash;
                if seq % 2 == 0 {
                    whole(&sealed.link, &raw)
                } else {
                    sealed.link
                }
            })
            .collect()
    }

    #[test]
    fn an_untouched_chain_verifies() {
        let lines = chain(5);
        let verified = verify(&lines.join("\n")).unwrap();
        assert_eq!((verified.records, verified.whole, verified.first_seq, verified.last_seq), (5, 3, 0, 4));
    }

    #[test]
    fn a_removed_record_breaks_it() {
        let mut lines = chain(5);
        lines.remove(2);
        assert!(verify(&lines.join("\n")).unwrap_err().contains("missing"));
    }

    #[test]
    fn an_edited_event_or_head_breaks_it() {
        let lines = chain(5);
        let mut edited = lines.clone();
        edited[2] = edited[2].replace("control.cancel", "control.pause");
        assert!(verify(&edited.join("\n")).unwrap_err().contains("edited"));
        let mut edited = lines;
        edited[1] = edited[1].replace("alice", "mallory");
        assert!(verify(&edited.join("\n")).unwrap_err().contains("edited"));
    }
}

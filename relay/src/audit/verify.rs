//! Checking an export offline (`aep-relay audit verify FILE [--key KEY]`):
//! its chain is unbroken ([`chain::verify`]), every record a selected
//! command needs is there with its event, and it ends with a signed head
//! that names its last record, the commands it selected, and (with
//! `--key`) the key the auditor trusts.

use std::collections::{BTreeSet, HashSet};
use std::process::ExitCode;

use super::chain::{self, hex, Verified};
use super::head::SignedHead;

/// What a checked export holds.
#[derive(Debug)]
pub struct Report {
    pub chain: Verified,
    pub head: SignedHead,
    /// Hash-only records (all of commands the export did not select), and
    /// how many commands they belong to.
    pub outside: (usize, usize),
    /// Whether the head's key was checked against one the auditor trusts.
    pub trusted: bool,
}

/// Checks `export`; `trusted` is the relay's public key as the auditor
/// keeps it (64 hex digits).
pub fn export(export: &str, trusted: Option<&str>) -> Result<Report, String> {
    let lines: Vec<&str> = export.lines().filter(|l| !l.trim().is_empty()).collect();
    let Some((last, records)) = lines.split_last() else { return Err("the file is empty".into()) };
    let head: SignedHead = match serde_json::from_str::<serde_json::Value>(last) {
        Ok(v) if v.get("head").is_some() => {
            serde_json::from_value(v).map_err(|e| format!("the last line is not a signed head: {e}"))?
        }
        _ => return Err("the export has no signed head at its end: records may have been cut from it".into()),
    };
    head.check_signature()?;
    if let Some(trusted) = trusted {
        super::head::public_key(trusted)?;
        if !head.key.eq_ignore_ascii_case(trusted.trim()) {
            return Err(format!("the head is signed with key {}, not the trusted key {}", head.key, trusted.trim()));
        }
    }
    let selected: HashSet<&str> = head.selection.commands.iter().map(String::as_str).collect();
    let end = head.end()?;
    if records.is_empty() {
        if !selected.is_empty() {
            return Err(format!("the signed head selects {} commands but the export holds none", selected.len()));
        }
        let chain = Verified {
            records: 0,
            whole: 0,
            hash_only: Vec::new(),
            whole_commands: Vec::new(),
            first_seq: end.records,
            last_seq: end.records.saturating_sub(1),
            last_hash: end.hash,
        };
        return Ok(Report { chain, head, outside: (0, 0), trusted: trusted.is_some() });
    }
    let chain = chain::verify(&records.join("\n"))?;
    if (chain.last_seq + 1, chain.last_hash) != (end.records, end.hash) {
        return Err(format!(
            "the export ends at record {} but its signed head names record {} (hash {}): records were cut from its end",
            chain.last_seq,
            end.records.saturating_sub(1),
            head.head.hash
        ));
    }
    if let Some(stripped) = chain.hash_only.iter().find(|r| selected.contains(r.command.as_str())) {
        return Err(format!(
            "record {} (the {} of command {}, which the export selected) has no event: it was removed",
            stripped.seq, stripped.kind, stripped.command
        ));
    }
    let whole: HashSet<&str> = chain.whole_commands.iter().map(String::as_str).collect();
    if let Some(missing) = head.selection.commands.iter().find(|c| !whole.contains(c.as_str())) {
        return Err(format!("command {missing}, which the export selected, is not in it whole (removed)"));
    }
    let others: BTreeSet<&str> = chain.hash_only.iter().map(|r| r.command.as_str()).collect();
    let outside = (chain.hash_only.len(), others.len());
    Ok(Report { chain, head, outside, trusted: trusted.is_some() })
}

impl Report {
    /// The lines `verify` prints.
    pub fn words(&self) -> String {
        let c = &self.chain;
        let filter = if self.head.selection.filter.is_empty() { "(none)" } else { &self.head.selection.filter };
        let mut out = format!(
            "intact: {} records ({} with their events, {} hash-only), chain positions {}..{}, last hash {}\n",
            c.records,
            c.whole,
            c.hash_only.len(),
            c.first_seq,
            c.last_seq,
            hex(&c.last_hash)
        );
        out.push_str(&format!(
            "selected: {} commands by `{filter}`; hash-only records belong to {} other commands outside that selection (they keep the chain whole)\n",
            self.head.selection.commands.len(),
            self.outside.1,
        ));
        let key = match self.trusted {
            true => format!("key {} (the trusted key)", self.head.key),
            false => format!(
                "key {} (not checked against a trusted key: pass --key with the relay's key from GET /audit/key)",
                self.head.key
            ),
        };
        out.push_str(&format!(
            "signed head: {} records, last hash {}, {key}",
            self.head.head.records, self.head.head.hash
        ));
        out
    }
}

/// `aep-relay audit verify FILE [--key KEY]`: exits 0 when intact, 1 when
/// broken, 2 when the file or the key cannot be read.
pub fn run(command: &crate::cli::AuditCommand) -> ExitCode {
    match command {
        crate::cli::AuditCommand::Verify { file, key } => {
            let text = match std::fs::read_to_string(file) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("aep-relay: cannot read {}: {e}", file.display());
                    return ExitCode::from(2);
                }
            };
            if let Some(Err(e)) = key.as_deref().map(super::head::public_key) {
                eprintln!("aep-relay: --key: {e}");
                return ExitCode::from(2);
            }
            match self::export(&text, key.as_deref()) {
                Ok(report) => {
                    println!("{}", report.words());
                    ExitCode::SUCCESS
                }
                Err(why) => {
                    println!("BROKEN: {why}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

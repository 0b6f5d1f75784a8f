//! The chain's signed head: the relay signs "my chain's first `records`
//! records end in `hash`" (and, for an export, which commands it selected)
//! with an Ed25519 key kept in `--data-dir`. An export ends with it, so
//! cutting records from the end, or dropping a selected command, no longer
//! leaves a file that proves itself; an auditor who keeps the relay's
//! public key (`GET /audit/key`) tells a head the relay signed from one
//! anybody could make (`aep-relay audit verify --key`).
//!
//! The signed bytes are laid out in `relay/AUDIT.md`.

use std::path::Path;

use ed25519_compact::{KeyPair, PublicKey, Seed, Signature};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain::{hex, unhex, Hash};
use crate::files;

/// The file a data directory keeps the signing key in (PKCS#8 PEM, as
/// `openssl genpkey -algorithm ed25519` writes).
pub const KEY_FILE: &str = "audit-key.pem";

/// What every signed message starts with, so the signature means nothing
/// anywhere else.
pub const CONTEXT: &[u8] = b"aep-audit-head\0";

/// The end of a chain: how many records it has held (the last one's
/// position + 1) and the last one's hash. An empty chain is `0` and zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainEnd {
    pub records: u64,
    pub hash: Hash,
}

/// Which commands an export carries, and the query that chose them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// The query, e.g. `principal=alice&limit=100` (empty: the chain head alone).
    pub filter: String,
    /// The ids of the commands whose records the export holds whole.
    pub commands: Vec<String>,
}

impl Selection {
    /// SHA-256 over the filter and each id, each followed by a zero byte.
    pub fn digest(&self) -> Hash {
        let mut h = Sha256::new();
        for part in std::iter::once(&self.filter).chain(&self.commands) {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.finalize().into()
    }
}

/// The bytes the relay signs.
pub fn message(end: &ChainEnd, selection: &Selection) -> Vec<u8> {
    let mut out = Vec::with_capacity(CONTEXT.len() + 8 + 32 + 32);
    out.extend_from_slice(CONTEXT);
    out.extend_from_slice(&end.records.to_be_bytes());
    out.extend_from_slice(&end.hash);
    out.extend_from_slice(&selection.digest());
    out
}

/// `head` as it travels: the last line of an export, and `GET /audit/head`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedHead {
    pub head: HeadFields,
    #[serde(flatten)]
    pub selection: Selection,
    /// The public key, 64 hex digits.
    pub key: String,
    /// The Ed25519 signature of [`message`], 128 hex digits.
    pub signature: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadFields {
    pub records: u64,
    pub hash: String,
}

impl SignedHead {
    /// The chain end it names, if its hash is one.
    pub fn end(&self) -> Result<ChainEnd, String> {
        let hash = unhex(&self.head.hash).ok_or("the signed head's `hash` is not a SHA-256 digest")?;
        Ok(ChainEnd { records: self.head.records, hash })
    }

    /// Whether the signature is right for its own key.
    pub fn check_signature(&self) -> Result<(), String> {
        let key = public_key(&self.key).map_err(|e| format!("the signed head's `key`: {e}"))?;
        let signature = from_hex(&self.signature)
            .and_then(|b| Signature::from_slice(&b).ok())
            .ok_or("the signed head's `signature` is not an Ed25519 signature")?;
        key.verify(message(&self.end()?, &self.selection), &signature)
            .map_err(|_| "the signed head's signature does not match it (edited or signed by another key)".to_owned())
    }
}

/// An Ed25519 public key from 64 hex digits.
pub fn public_key(text: &str) -> Result<PublicKey, String> {
    from_hex(text.trim())
        .and_then(|b| PublicKey::from_slice(&b).ok())
        .ok_or_else(|| format!("`{}` is not an Ed25519 public key (64 hex digits)", text.trim()))
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// The relay's signing key.
pub struct Signer {
    pair: KeyPair,
}

impl Signer {
    /// The key in `dir` ([`KEY_FILE`]), made on first start.
    pub fn load(dir: &Path) -> Result<Signer, String> {
        let path = dir.join(KEY_FILE);
        if let Some(pem) = files::read(&path)? {
            let pair = KeyPair::from_pem(&pem).map_err(|e| format!("audit key {}: {e}", path.display()))?;
            return Ok(Signer { pair });
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let pair = KeyPair::from_seed(Seed::new(rand::random()));
        files::write_private(&path, pair.sk.to_pem().as_bytes())?;
        Ok(Signer { pair })
    }

    /// A signer with a key of the caller's choosing (the documented example).
    pub fn from_seed(seed: [u8; 32]) -> Signer {
        Signer { pair: KeyPair::from_seed(Seed::new(seed)) }
    }

    /// The public key, 64 hex digits.
    pub fn public_key(&self) -> String {
        hex(&self.pair.pk[..])
    }

    pub fn sign(&self, end: ChainEnd, selection: Selection) -> SignedHead {
        let signature = self.pair.sk.sign(message(&end, &selection), None);
        SignedHead {
            head: HeadFields { records: end.records, hash: hex(&end.hash) },
            selection,
            key: self.public_key(),
            signature: hex(&signature[..]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed() -> SignedHead {
        let signer = Signer::from_seed([7; 32]);
        let selection = Selection { filter: "principal=alice".into(), commands: vec!["c1".into()] };
        signer.sign(ChainEnd { records: 3, hash: [9; 32] }, selection)
    }

    #[test]
    fn a_signed_head_checks_and_an_edited_one_does_not() {
        let head = signed();
        head.check_signature().unwrap();
        let mut cut = head.clone();
        cut.head.records = 2;
        assert!(cut.check_signature().unwrap_err().contains("does not match"));
        let mut narrowed = head.clone();
        narrowed.selection.commands.clear();
        assert!(narrowed.check_signature().is_err(), "the selection is signed too");
        let mut other = head;
        other.key = Signer::from_seed([8; 32]).public_key();
        assert!(other.check_signature().is_err());
    }

    #[test]
    fn the_key_is_kept_in_the_data_directory() {
        let dir = std::env::temp_dir().join(format!("aep-audit-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = Signer::load(&dir).unwrap().public_key();
        assert_eq!(Signer::load(&dir).unwrap().public_key(), first);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

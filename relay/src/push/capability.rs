//! Answer capabilities: what lets a notification answer its request with
//! no bearer token (a service worker has none). A capability is the
//! relay's HMAC-SHA256 over what it allows: one request in one session,
//! by one principal, with the options offered, until an expiry, once (its
//! nonce is remembered until then, in the data directory when there is
//! one, so a restart does not make a used capability good again).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::files;
use crate::sync::lock;

/// The file a data directory keeps the signing secret in.
pub const SECRET_FILE: &str = "push-secret";
/// The file it keeps the used, not yet expired, nonces in.
pub const SPENT_FILE: &str = "push-spent.json";

/// The relay's capability key: random, kept in the data directory (a
/// capability outlives a restart), else made per run.
pub struct Secret([u8; 32]);

impl Secret {
    pub fn load(data_dir: Option<&Path>) -> Result<Secret, String> {
        let Some(dir) = data_dir else { return Ok(Secret(rand::random())) };
        let path = dir.join(SECRET_FILE);
        if let Some(text) = files::read(&path)? {
            let bytes = URL_SAFE_NO_PAD.decode(text.trim()).map_err(|e| format!("{}: {e}", path.display()))?;
            let key: [u8; 32] = bytes.try_into().map_err(|_| format!("{}: not a 32-byte key", path.display()))?;
            return Ok(Secret(key));
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let key: [u8; 32] = rand::random();
        files::write_private(&path, URL_SAFE_NO_PAD.encode(key).as_bytes())?;
        Ok(Secret(key))
    }
}

/// What a capability allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The attention request's id.
    pub request: String,
    pub session: String,
    /// The principal the answer is sent as.
    pub principal: String,
    /// The option ids the notification offered.
    pub options: Vec<String>,
    /// Unix seconds after which it answers nothing.
    pub expires: u64,
    pub nonce: String,
}

/// Why a capability was refused; each has its own error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not one the relay signed, or altered since.
    Invalid,
    Expired,
    /// Already used once.
    Replayed,
}

impl Refused {
    pub fn code(self) -> &'static str {
        match self {
            Refused::Invalid => "capability-invalid",
            Refused::Expired => "capability-expired",
            Refused::Replayed => "capability-used",
        }
    }
}

pub struct Capabilities {
    secret: Secret,
    ttl: Duration,
    used: Mutex<Spent>,
}

/// Nonces used, with their expiry, forgotten once expired; written
/// through to `file` when there is one.
struct Spent {
    nonces: HashMap<String, u64>,
    file: Option<PathBuf>,
}

impl Spent {
    fn save(&self) {
        let Some(file) = &self.file else { return };
        let bytes = serde_json::to_vec(&self.nonces).expect("a map of strings serializes");
        if let Err(e) = files::write_private(file, &bytes) {
            // The nonce stays spent for this run; only a restart within
            // its expiry could accept it again.
            tracing::warn!("push: could not record a used capability: {e}");
        }
    }
}

type HmacSha256 = Hmac<Sha256>;

impl Capabilities {
    /// Capabilities signed with `secret`, remembering used ones in memory.
    pub fn new(secret: Secret, ttl: Duration) -> Capabilities {
        Capabilities { secret, ttl, used: Mutex::new(Spent { nonces: HashMap::new(), file: None }) }
    }

    /// As [`Capabilities::new`], remembering used ones in `data_dir` too
    /// (and reading those an earlier run used).
    pub fn open(secret: Secret, ttl: Duration, data_dir: Option<&Path>) -> Result<Capabilities, String> {
        let caps = Capabilities::new(secret, ttl);
        if let Some(dir) = data_dir {
            let file = dir.join(SPENT_FILE);
            let mut used = lock(&caps.used);
            if let Some(text) = files::read(&file)? {
                used.nonces = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            }
            used.file = Some(file);
        }
        Ok(caps)
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.secret.0).expect("HMAC takes any key length")
    }

    /// A capability for `principal` to answer `request` with one of
    /// `options`, valid for the configured time from `now` (Unix seconds).
    pub fn issue(&self, request: &str, session: &str, principal: &str, options: Vec<String>, now: u64) -> String {
        let nonce: [u8; 16] = rand::random();
        let grant = Grant {
            request: request.to_owned(),
            session: session.to_owned(),
            principal: principal.to_owned(),
            options,
            expires: now + self.ttl.as_secs(),
            nonce: URL_SAFE_NO_PAD.encode(nonce),
        };
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&grant).expect("a grant serializes"));
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    /// The grant a capability carries, when the relay signed it and it has
    /// not expired. Does not use it up (see [`Capabilities::spend`]).
    pub fn verify(&self, capability: &str, now: u64) -> Result<Grant, Refused> {
        let (body, tag) = capability.split_once('.').ok_or(Refused::Invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refused::Invalid)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| Refused::Invalid)?;
        let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refused::Invalid)?;
        let grant: Grant = serde_json::from_slice(&json).map_err(|_| Refused::Invalid)?;
        if now >= grant.expires {
            return Err(Refused::Expired);
        }
        Ok(grant)
    }

    /// Uses a grant up: `Err(Replayed)` when it was used before.
    pub fn spend(&self, grant: &Grant, now: u64) -> Result<(), Refused> {
        let mut used = lock(&self.used);
        used.nonces.retain(|_, expires| *expires > now);
        if used.nonces.contains_key(&grant.nonce) {
            return Err(Refused::Replayed);
        }
        used.nonces.insert(grant.nonce.clone(), grant.expires);
        used.save();
        Ok(())
    }

    /// Gives a spent grant back: its answer could not be sent at all, so
    /// the notification may try again.
    pub fn release(&self, grant: &Grant) {
        let mut used = lock(&self.used);
        used.nonces.remove(&grant.nonce);
        used.save();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities::new(Secret([7; 32]), Duration::from_secs(600))
    }

    #[test]
    fn a_capability_verifies_once_until_it_expires() {
        let c = caps();
        let token = c.issue("r1", "s1", "alice", vec!["allow".into()], 1_000);
        let grant = c.verify(&token, 1_100).unwrap();
        assert_eq!((grant.request.as_str(), grant.principal.as_str()), ("r1", "alice"));
        assert_eq!(c.verify(&token, 1_600), Err(Refused::Expired));
        assert_eq!(c.spend(&grant, 1_100), Ok(()));
        assert_eq!(c.spend(&grant, 1_101), Err(Refused::Replayed));
    }

    #[test]
    fn an_altered_or_foreign_capability_is_invalid() {
        let c = caps();
        let token = c.issue("r1", "s1", "alice", vec![], 1_000);
        let (body, tag) = token.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(
            URL_SAFE_NO_PAD.decode(body).map(|b| String::from_utf8(b).unwrap().replace("alice", "mallo")).unwrap(),
        );
        assert_eq!(c.verify(&format!("{forged}.{tag}"), 1_000), Err(Refused::Invalid));
        let other = Capabilities::new(Secret([8; 32]), Duration::from_secs(600));
        assert_eq!(other.verify(&token, 1_000), Err(Refused::Invalid));
        assert_eq!(c.verify("garbage", 1_000), Err(Refused::Invalid));
    }

    #[test]
    fn a_used_capability_stays_used_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let open = || Capabilities::open(Secret([7; 32]), Duration::from_secs(600), Some(dir.path())).unwrap();
        let first = open();
        let token = first.issue("r1", "s1", "alice", vec![], 1_000);
        let grant = first.verify(&token, 1_001).unwrap();
        first.spend(&grant, 1_001).unwrap();
        drop(first);
        let again = open();
        assert_eq!(again.spend(&again.verify(&token, 1_002).unwrap(), 1_002), Err(Refused::Replayed));
        // Given back, it may be used once more, also after a restart.
        again.release(&grant);
        assert_eq!(open().spend(&grant, 1_003), Ok(()));
    }
}

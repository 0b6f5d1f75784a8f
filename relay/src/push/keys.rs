//! The VAPID key pair (RFC 8292): push services learn which application
//! server sends, and a browser subscribed with its public key accepts only
//! pushes signed with it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use web_push_native::jwt_simple::algorithms::{ECDSAP256KeyPairLike, ECDSAP256PublicKeyLike, ES256KeyPair};
use web_push_native::jwt_simple::claims::Claims;

use crate::files;
use crate::sync::lock;

/// Push services whose signed header is kept (a handful in practice).
const MAX_AUDIENCES: usize = 64;

/// The file a data directory keeps the key in.
pub const VAPID_FILE: &str = "vapid.pem";

pub struct VapidKey {
    pair: ES256KeyPair,
    /// Signed headers by audience, reused while more than half their
    /// lifetime is left: one ECDSA signature per push service, not per push.
    signed: Mutex<HashMap<String, (String, Instant)>>,
}

impl VapidKey {
    /// `--vapid-key`'s file, else the data directory's (made on first
    /// start), else a fresh key.
    pub fn load(file: Option<&Path>, data_dir: Option<&Path>) -> Result<VapidKey, String> {
        if let Some(file) = file {
            let pem = files::read(file)?.ok_or_else(|| format!("VAPID key {}: no such file", file.display()))?;
            let pair = ES256KeyPair::from_pem(&pem).map_err(|e| {
                format!(
                    "VAPID key {}: {e} (expected a P-256 key as PKCS#8 PEM, as \
                     `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` writes)",
                    file.display()
                )
            })?;
            return Ok(VapidKey { pair, signed: Mutex::default() });
        }
        let Some(dir) = data_dir else {
            return Ok(VapidKey { pair: ES256KeyPair::generate(), signed: Mutex::default() });
        };
        let path = dir.join(VAPID_FILE);
        if let Some(pem) = files::read(&path)? {
            let pair = ES256KeyPair::from_pem(&pem).map_err(|e| format!("VAPID key {}: {e}", path.display()))?;
            return Ok(VapidKey { pair, signed: Mutex::default() });
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let pair = ES256KeyPair::generate();
        let pem = pair.to_pem().map_err(|e| format!("VAPID key: {e}"))?;
        files::write_private(&path, pem.as_bytes())?;
        Ok(VapidKey { pair, signed: Mutex::default() })
    }

    /// The uncompressed P-256 point, base64url: a browser's
    /// `applicationServerKey`, and the `k` of the VAPID header.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.pair.public_key().public_key().to_bytes_uncompressed())
    }

    /// `Authorization: vapid t=JWT, k=KEY` for a push service at
    /// `audience` (its origin, port included), valid for `lifetime`
    /// (at most 24 h, RFC 8292 §2).
    pub fn authorization(&self, audience: &str, subject: &str, lifetime: Duration) -> Result<String, String> {
        let lifetime = lifetime.min(Duration::from_secs(12 * 3600));
        let now = Instant::now();
        if let Some((header, renew)) = lock(&self.signed).get(audience) {
            if now < *renew {
                return Ok(header.clone());
            }
        }
        let claims = Claims::create(lifetime.into()).with_audience(audience).with_subject(subject);
        let token = self.pair.sign(claims).map_err(|e| format!("VAPID signature: {e}"))?;
        let header = format!("vapid t={token}, k={}", self.public_key());
        let mut signed = lock(&self.signed);
        if signed.len() >= MAX_AUDIENCES {
            signed.clear();
        }
        signed.insert(audience.to_owned(), (header.clone(), now + lifetime / 2));
        Ok(header)
    }
}

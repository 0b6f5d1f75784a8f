//! Registered devices: a browser's `PushSubscription` bound to the
//! principal that registered it, kept in the data directory across
//! restarts (in memory only without one).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::files;
use crate::sync::lock;

/// The file a data directory keeps registered devices in.
pub const SUBSCRIPTIONS_FILE: &str = "push-subscriptions.json";
/// Longest endpoint URL taken.
const MAX_ENDPOINT: usize = 2048;
/// Devices one principal may register.
pub const MAX_PER_PRINCIPAL: usize = 32;

/// A `PushSubscription` as the browser serializes it (`toJSON()`).
#[derive(Clone, Debug, Deserialize)]
pub struct Offered {
    pub endpoint: String,
    pub keys: OfferedKeys,
}

#[derive(Clone, Debug, Deserialize)]
pub struct OfferedKeys {
    pub p256dh: String,
    pub auth: String,
}

/// A registered device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub principal: String,
    pub endpoint: String,
    /// The browser's P-256 public key, base64url (65 bytes, uncompressed).
    pub p256dh: String,
    /// The browser's authentication secret, base64url (16 bytes).
    pub auth: String,
}

impl Device {
    pub fn public_key(&self) -> Option<web_push_native::p256::PublicKey> {
        web_push_native::p256::PublicKey::from_sec1_bytes(&decode(&self.p256dh)?).ok()
    }

    pub fn auth_secret(&self) -> Option<web_push_native::Auth> {
        let bytes = decode(&self.auth)?;
        (bytes.len() == 16).then(|| web_push_native::Auth::clone_from_slice(&bytes))
    }
}

/// Browsers send base64url without padding; accept it with, too.
fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).or_else(|_| URL_SAFE.decode(text)).ok()
}

/// Checks an offered subscription; the reason it is unusable otherwise.
pub fn validate(offered: &Offered, principal: &str) -> Result<Device, String> {
    let endpoint = offered.endpoint.trim();
    if endpoint.len() > MAX_ENDPOINT {
        return Err(format!("`endpoint` is longer than {MAX_ENDPOINT} characters"));
    }
    let url = reqwest::Url::parse(endpoint).map_err(|e| format!("`endpoint` is not a URL: {e}"))?;
    if url.scheme() != "https" || url.host_str().is_none_or(str::is_empty) {
        return Err("`endpoint` must be an https:// URL of a push service".into());
    }
    let key = decode(&offered.keys.p256dh).ok_or("`keys.p256dh` is not base64url")?;
    if key.len() != 65 || key[0] != 4 || web_push_native::p256::PublicKey::from_sec1_bytes(&key).is_err() {
        return Err("`keys.p256dh` must be an uncompressed P-256 public key (65 bytes)".into());
    }
    let auth = decode(&offered.keys.auth).ok_or("`keys.auth` is not base64url")?;
    if auth.len() != 16 {
        return Err(format!("`keys.auth` must be 16 bytes, not {}", auth.len()));
    }
    Ok(Device {
        principal: principal.to_owned(),
        endpoint: url.to_string(),
        p256dh: URL_SAFE_NO_PAD.encode(key),
        auth: URL_SAFE_NO_PAD.encode(auth),
    })
}

pub struct Subscriptions {
    devices: Mutex<Vec<Device>>,
    file: Option<PathBuf>,
}

impl Subscriptions {
    /// The devices registered before, from the data directory.
    pub fn open(data_dir: Option<&Path>) -> Result<Subscriptions, String> {
        let file = data_dir.map(|d| d.join(SUBSCRIPTIONS_FILE));
        let devices = match &file {
            Some(path) => match files::read(path)? {
                Some(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?,
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        Ok(Subscriptions { devices: Mutex::new(devices), file })
    }

    fn save(&self, devices: &[Device]) {
        let Some(path) = &self.file else { return };
        let json = serde_json::to_vec_pretty(devices).expect("devices serialize");
        if let Err(e) = files::write_private(path, &json) {
            tracing::error!("push subscriptions not saved: {e}");
        }
    }

    /// Registers `device` (an endpoint registered before is replaced: a
    /// device belongs to whoever registered it last).
    pub fn add(&self, device: Device) -> Result<(), String> {
        let mut devices = lock(&self.devices);
        devices.retain(|d| d.endpoint != device.endpoint);
        if devices.iter().filter(|d| d.principal == device.principal).count() >= MAX_PER_PRINCIPAL {
            return Err(format!("at most {MAX_PER_PRINCIPAL} devices per principal; remove one first"));
        }
        devices.push(device);
        self.save(&devices);
        Ok(())
    }

    /// Removes `principal`'s device at `endpoint`; whether there was one.
    pub fn remove(&self, principal: &str, endpoint: &str) -> bool {
        self.remove_where(|d| d.principal == principal && d.endpoint == endpoint)
    }

    /// Removes a device the push service says is gone.
    pub fn remove_endpoint(&self, endpoint: &str) -> bool {
        self.remove_where(|d| d.endpoint == endpoint)
    }

    fn remove_where(&self, gone: impl Fn(&Device) -> bool) -> bool {
        let mut devices = lock(&self.devices);
        let before = devices.len();
        devices.retain(|d| !gone(d));
        let removed = devices.len() != before;
        if removed {
            self.save(&devices);
        }
        removed
    }

    pub fn of(&self, principal: &str) -> Vec<Device> {
        lock(&self.devices).iter().filter(|d| d.principal == principal).cloned().collect()
    }

    pub fn all(&self) -> Vec<Device> {
        lock(&self.devices).clone()
    }
}

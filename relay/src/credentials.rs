//! The credentials file: one principal a line (`name roles sha256-hex`),
//! read at start and again whenever it changes (checked every second) or
//! the relay gets `SIGHUP`. A line removed revokes that principal at once:
//! new requests with its token are refused and its open sockets closed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::auth::{parse_credentials, Keyring, Principal};
use crate::config::Config;
use crate::file_watch;
use crate::switchboard::Switchboard;

/// The principals configured outside the file (`--token`, the demo's),
/// which a reload keeps.
fn kept(config: &Config) -> Vec<Arc<str>> {
    let mut names: Vec<Arc<str>> = config.principals.iter().map(|(_, p)| p.name.clone()).collect();
    if config.token.is_some() {
        names.push(Principal::owner().name);
    }
    names
}

/// Reads the file into the keyring, replacing what an earlier read put
/// there. A file that cannot be read or parsed changes nothing.
pub fn load_into(ring: &Keyring, file: &Path, config: &Config) -> Result<usize, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("credentials file {}: {e}", file.display()))?;
    let entries = parse_credentials(&text).map_err(|e| format!("credentials file {}: {e}", file.display()))?;
    let count = entries.len();
    ring.replace(&kept(config), entries);
    Ok(count)
}

/// Reloads the file whenever it changes or on `SIGHUP`, and closes the
/// sockets of principals no longer in it.
pub async fn watch(ring: Arc<Keyring>, file: PathBuf, config: Arc<Config>, switchboard: Arc<Switchboard>) {
    let stop = switchboard.shutdown_signal();
    file_watch::on_change(vec![file.clone()], stop, || match load_into(&ring, &file, &config) {
        Ok(count) => {
            tracing::info!("credentials reloaded: {count} principals");
            switchboard.close_revoked(|name| ring.holds(name));
        }
        Err(e) => tracing::warn!("{e}; keeping the credentials already loaded"),
    })
    .await
}

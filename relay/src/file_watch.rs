//! Files the relay reads again when they change (the credentials file, the
//! TLS certificate and key): their modification times are looked at every
//! second, and `SIGHUP` asks for a reread at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

/// How often the files' modification times are looked at.
const POLL: Duration = Duration::from_secs(1);

fn modified(file: &Path) -> Option<SystemTime> {
    std::fs::metadata(file).and_then(|m| m.modified()).ok()
}

/// Calls `reload` whenever one of `files` changes (its modification time,
/// or whether it is there at all) or the relay gets `SIGHUP`, until `stop`
/// turns true.
pub async fn on_change(files: Vec<PathBuf>, mut stop: watch::Receiver<bool>, mut reload: impl FnMut()) {
    let stamps = || files.iter().map(|file| modified(file)).collect::<Vec<_>>();
    let mut seen = stamps();
    let mut hangup = hangup();
    loop {
        tokio::select! {
            () = tokio::time::sleep(POLL) => {
                let now = stamps();
                if now == seen {
                    continue;
                }
                seen = now;
            }
            () = next_hangup(&mut hangup) => {}
            _ = stop.wait_for(|down| *down) => return,
        }
        reload();
    }
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = ();

#[cfg(unix)]
fn hangup() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(not(unix))]
fn hangup() -> Hangup {}

#[cfg(unix)]
async fn next_hangup(signal: &mut Hangup) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangup) {
    std::future::pending().await
}

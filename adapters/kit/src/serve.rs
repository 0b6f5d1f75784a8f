//! Running an adapter: its hook endpoint on loopback and its agent on one
//! relay connection, until Ctrl-C; with the capture posture and the token
//! every adapter's `serve` command takes the same way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use aep_engine::client::hub::socket_url;
use aep_engine::protocol::capture::{CaptureCeiling, RedactOptions};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::vocabulary::types;
use tokio::sync::{mpsc, watch};

use crate::daemon::{self, Options, Status};
use crate::mapping::Mapping;
use crate::server;

/// What every adapter's `serve` command takes, besides where it listens.
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// The relay, `http://HOST:PORT`.
    #[arg(long, env = "AEP_RELAY", default_value = "http://127.0.0.1:8787")]
    pub relay: String,
    /// A file holding the relay's token (or set AEP_TOKEN); never a
    /// command-line value, which any local user can read.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Seconds a permission request waits for a person before the agent
    /// decides for itself (keep it below the hook timeout `install` sets).
    #[arg(long, default_value_t = 240)]
    pub attention_timeout: u64,
    /// Capture ceiling of what the adapter emits: metadata, redacted or
    /// full. Below redacted, permission requests still carry their command
    /// at redacted, through the redaction pipeline (AEP-0003 §9.1).
    #[arg(long, default_value = "metadata", value_parser = parse_capture)]
    pub capture: Capture,
}

/// `metadata`, `redacted` or `full`, as the command line says it.
pub fn parse_capture(s: &str) -> Result<Capture, String> {
    match s {
        "metadata" => Ok(Capture::Metadata),
        "redacted" => Ok(Capture::Redacted),
        "full" => Ok(Capture::Full),
        other => Err(format!("`{other}` is not metadata, redacted or full")),
    }
}

/// `metadata` keeps `attention.*` at `redacted`, so a person can read what
/// is asked, and `session.started`, so a card can say which project asks
/// (its label and working directory, home paths redacted); `redacted` and
/// `full` hold for every type.
pub fn ceiling(level: Capture) -> CaptureCeiling {
    if level >= Capture::Redacted {
        CaptureCeiling::uniform(level)
    } else {
        let mut c = CaptureCeiling { default: level, ..CaptureCeiling::default() };
        c.overrides.push((types::SESSION_STARTED.to_owned(), Capture::Redacted));
        c
    }
}

/// Logs to stderr, at `RUST_LOG` or `info`.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
}

/// Runs the adapter, its hook endpoint on `listen` (loopback only) and
/// `mapper` reading hooks posted to `hook_path`, until Ctrl-C.
pub fn serve<M: Mapping>(s: ServeArgs, listen: SocketAddr, mapper: M, hook_path: &str) -> Result<(), String> {
    let token = match (&s.token_file, std::env::var("AEP_TOKEN")) {
        (Some(file), _) => {
            Some(std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?.trim().to_owned())
        }
        (None, Ok(t)) if !t.is_empty() => Some(t),
        _ => None,
    };
    let socket = socket_url(&s.relay, token.as_deref()).map_err(|_| format!("`{}` is not a relay address", s.relay))?;
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).ok().filter(|h| !h.is_empty());
    let options = Options {
        socket_url: socket,
        attention_timeout: Duration::from_secs(s.attention_timeout),
        ceiling: ceiling(s.capture),
        redaction: RedactOptions { home: std::env::var("HOME").ok(), ..RedactOptions::default() },
        host: host.unwrap_or_else(|| "localhost".into()),
    };
    // One thread is plenty, and keeps the engine's agent (not `Send`) on
    // the task that drives it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let listener = server::bind(listen).await.map_err(|e| format!("{listen}: {e}"))?;
        let (calls, inbox) = mpsc::unbounded_channel();
        let (status, watching) = watch::channel(Status::default());
        let agent = tokio::task::spawn_local(daemon::run(options, mapper, inbox, status));
        tracing::info!(
            "hooks: http://{}{hook_path}; relay: {}",
            listener.local_addr().map_err(|e| e.to_string())?,
            s.relay
        );
        let app = server::router(hook_path, calls, watching);
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        axum::serve(listener, app).with_graceful_shutdown(stop).await.map_err(|e| e.to_string())?;
        let _ = agent.await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_ceiling_keeps_what_is_asked_and_which_project_asks_readable() {
        let c = ceiling(Capture::Metadata);
        assert_eq!(c.level_for("attention.requested"), Capture::Redacted);
        assert_eq!(c.level_for("session.started"), Capture::Redacted);
        assert_eq!(c.level_for("tool.completed"), Capture::Metadata);
        assert_eq!(ceiling(Capture::Full).level_for("session.started"), Capture::Full);
    }
}

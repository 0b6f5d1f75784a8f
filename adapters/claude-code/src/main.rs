//! `aep-claude-code`: run the adapter, and connect Claude Code to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use aep_claude_code::daemon::{self, Options, Status};
use aep_claude_code::server;
use aep_claude_code::settings::{self, Hooks, Outcome};
use aep_engine::client::hub::socket_url;
use aep_engine::protocol::capture::{CaptureCeiling, RedactOptions};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::vocabulary::types;
use clap::{Args, Parser, Subcommand};
use tokio::sync::{mpsc, watch};

/// Claude Code on AEP: its hooks as events on an AEP relay, its
/// permission prompts answered from an AEP console.
#[derive(Parser, Debug)]
#[command(name = "aep-claude-code", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs the adapter: the hook endpoint on loopback, and one connection
    /// to the relay.
    Serve(Serve),
    /// Connects Claude Code to a running adapter: adds its hooks to
    /// `.claude/settings.json`, beside the hooks already there.
    Install(Target),
    /// Removes exactly the hooks `install` added.
    Uninstall(Where),
}

#[derive(Args, Debug)]
struct Serve {
    /// The relay, `http://HOST:PORT`.
    #[arg(long, env = "AEP_RELAY", default_value = "http://127.0.0.1:8787")]
    relay: String,
    /// A file holding the relay's token (or set AEP_TOKEN); never a
    /// command-line value, which any local user can read.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Where Claude Code's hooks reach the adapter (loopback only).
    #[arg(long, default_value = "127.0.0.1:8789")]
    listen: SocketAddr,
    /// Seconds a permission request waits for a person before Claude Code
    /// decides for itself (keep it below the hook timeout `install` sets).
    #[arg(long, default_value_t = 240)]
    attention_timeout: u64,
    /// Capture ceiling of what the adapter emits: metadata, redacted or
    /// full. Below redacted, permission requests still carry their command
    /// at redacted, through the redaction pipeline (AEP-0003 §9.1).
    #[arg(long, default_value = "metadata", value_parser = parse_capture)]
    capture: Capture,
}

#[derive(Args, Debug)]
struct Where {
    /// The project to connect (default: this directory).
    #[arg(long, conflicts_with = "user")]
    project: Option<PathBuf>,
    /// The user's own settings (`~/.claude/settings.json`) instead.
    #[arg(long)]
    user: bool,
}

#[derive(Args, Debug)]
struct Target {
    #[command(flatten)]
    place: Where,
    /// The adapter's address, as `serve --listen` has it.
    #[arg(long, default_value = "http://127.0.0.1:8789")]
    adapter: String,
    /// Seconds Claude Code holds a permission hook open.
    #[arg(long, default_value_t = 300)]
    hook_timeout: u64,
}

fn parse_capture(s: &str) -> Result<Capture, String> {
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
fn ceiling(level: Capture) -> CaptureCeiling {
    if level >= Capture::Redacted {
        CaptureCeiling::uniform(level)
    } else {
        let mut c = CaptureCeiling { default: level, ..CaptureCeiling::default() };
        c.overrides.push((types::SESSION_STARTED.to_owned(), Capture::Redacted));
        c
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Serve(s) => serve(s),
        Command::Install(t) => place(&t.place).and_then(|path| {
            let hooks = Hooks { origin: t.adapter, held_timeout_s: t.hook_timeout };
            report(&path, settings::install(&path, &hooks), "connected to the adapter", "already connected")
        }),
        Command::Uninstall(w) => place(&w).and_then(|path| report(&path, settings::remove(&path), "disconnected", "not connected")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-claude-code: {e}");
            ExitCode::FAILURE
        }
    }
}

fn place(w: &Where) -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let project = match (&w.project, w.user) {
        (_, true) => None,
        (Some(p), false) => Some(p.clone()),
        (None, false) => Some(std::env::current_dir().map_err(|e| e.to_string())?),
    };
    settings::settings_path(project.as_deref(), home.as_deref()).ok_or_else(|| "HOME is not set".to_owned())
}

fn report(path: &std::path::Path, result: Result<Outcome, settings::SettingsError>, changed: &str, unchanged: &str) -> Result<(), String> {
    match result.map_err(|e| e.to_string())? {
        Outcome::Changed => println!("{}: {changed}", path.display()),
        Outcome::Unchanged => println!("{}: {unchanged}, nothing to do", path.display()),
    }
    Ok(())
}

fn serve(s: Serve) -> Result<(), String> {
    let token = match (&s.token_file, std::env::var("AEP_TOKEN")) {
        (Some(file), _) => Some(std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?.trim().to_owned()),
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
        let listener = server::bind(s.listen).await.map_err(|e| format!("{}: {e}", s.listen))?;
        let (calls, inbox) = mpsc::unbounded_channel();
        let (status, watching) = watch::channel(Status::default());
        let agent = tokio::task::spawn_local(daemon::run(options, inbox, status));
        tracing::info!("hooks: http://{}{}; relay: {}", listener.local_addr().map_err(|e| e.to_string())?, server::HOOK_PATH, s.relay);
        let app = server::router(calls, watching);
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

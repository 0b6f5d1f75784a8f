//! `aep-claude-code`: run the adapter, and connect Claude Code to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use aep_adapter_kit::serve as kit;
use aep_claude_code::mapping::Mapper;
use aep_claude_code::server;
use aep_claude_code::settings::{self, Hooks, Outcome};
use clap::{Args, Parser, Subcommand};

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
    Install(Install),
    /// Removes exactly the hooks `install` added.
    Uninstall(Where),
}

#[derive(Args, Debug)]
struct Serve {
    #[command(flatten)]
    common: kit::ServeArgs,
    /// Where Claude Code's hooks reach the adapter (loopback only).
    #[arg(long, default_value = "127.0.0.1:8789")]
    listen: SocketAddr,
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
struct Install {
    #[command(flatten)]
    place: Where,
    /// The adapter's address, as `serve --listen` has it.
    #[arg(long, default_value = "http://127.0.0.1:8789")]
    adapter: String,
    /// Seconds Claude Code holds a permission hook open.
    #[arg(long, default_value_t = 300)]
    hook_timeout: u64,
}

fn main() -> ExitCode {
    kit::init_logging();
    let result = match Cli::parse().command {
        Command::Serve(s) => kit::serve(s.common, s.listen, Mapper::new(), server::HOOK_PATH),
        Command::Install(t) => place(&t.place).and_then(|path| {
            let hooks = Hooks { origin: t.adapter, held_timeout_s: t.hook_timeout };
            report(&path, settings::install(&path, &hooks), "connected to the adapter", "already connected")
        }),
        Command::Uninstall(w) => {
            place(&w).and_then(|path| report(&path, settings::remove(&path), "disconnected", "not connected"))
        }
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

fn report(
    path: &std::path::Path,
    result: Result<Outcome, settings::SettingsError>,
    changed: &str,
    unchanged: &str,
) -> Result<(), String> {
    match result.map_err(|e| e.to_string())? {
        Outcome::Changed => println!("{}: {changed}", path.display()),
        Outcome::Unchanged => println!("{}: {unchanged}, nothing to do", path.display()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

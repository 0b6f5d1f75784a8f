//! `aep-codex`: run the adapter, connect Codex to it, and the hook
//! command Codex runs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aep_adapter_kit::serve as kit;
use aep_codex::config::{self, Hooks, Outcome};
use aep_codex::mapping::Mapper;
use aep_codex::{client, trust, HOOK_PATH};
use clap::{Args, Parser, Subcommand};

/// The Codex CLI on AEP: its hooks as events on an AEP relay, its
/// permission requests answered from an AEP console.
#[derive(Parser, Debug)]
#[command(name = "aep-codex", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs the adapter: the hook endpoint on loopback, and one connection
    /// to the relay.
    Serve(Serve),
    /// Connects Codex to a running adapter: adds its command hooks to
    /// Codex's `config.toml`, beside the hooks already there.
    Install(Install),
    /// Removes exactly the hooks `install` added, and the trust recorded
    /// for them.
    Uninstall(Place),
    /// The hook command Codex runs: the hook's JSON from stdin to the
    /// adapter, its answer to stdout.
    Hook(HookArgs),
}

#[derive(Args, Debug)]
struct Serve {
    #[command(flatten)]
    common: kit::ServeArgs,
    /// Where the hook command reaches the adapter (loopback only).
    #[arg(long, default_value = "127.0.0.1:8790")]
    listen: SocketAddr,
}

#[derive(Args, Debug)]
struct Place {
    /// Codex's configuration file (default: `$CODEX_HOME/config.toml`,
    /// else `~/.codex/config.toml`).
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct Install {
    #[command(flatten)]
    place: Place,
    /// The adapter's address, as `serve --listen` has it.
    #[arg(long, default_value = "http://127.0.0.1:8790")]
    adapter: String,
    /// Seconds Codex lets the permission hook wait for an answer.
    #[arg(long, default_value_t = 300)]
    hook_timeout: u64,
    /// Also tell Codex to trust these hooks (it skips untrusted hooks):
    /// records Codex's current hash of each of the adapter's hooks, and
    /// of nothing else, in the same file.
    #[arg(long)]
    trust: bool,
    /// The Codex CLI that says each hook's hash, for `--trust`.
    #[arg(long, default_value = "codex")]
    codex: PathBuf,
}

#[derive(Args, Debug)]
struct HookArgs {
    /// The adapter's address.
    #[arg(long, default_value = "http://127.0.0.1:8790")]
    adapter: String,
}

fn main() -> ExitCode {
    let command = Cli::parse().command;
    if let Command::Hook(h) = &command {
        client::run(&h.adapter);
        return ExitCode::SUCCESS;
    }
    kit::init_logging();
    let result = match command {
        Command::Serve(s) => kit::serve(s.common, s.listen, Mapper::new(), HOOK_PATH),
        Command::Install(i) => install(i),
        Command::Uninstall(p) => place(&p).and_then(|path| match config::remove(&path).map_err(|e| e.to_string())? {
            Outcome::Changed => {
                println!("{}: disconnected", path.display());
                Ok(())
            }
            Outcome::Unchanged => {
                println!("{}: not connected, nothing to do", path.display());
                Ok(())
            }
        }),
        Command::Hook(_) => unreachable!("run above"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-codex: {e}");
            ExitCode::FAILURE
        }
    }
}

fn install(i: Install) -> Result<(), String> {
    let path = place(&i.place)?;
    let program = std::env::current_exe().map_err(|e| format!("the adapter's own path: {e}"))?;
    let hooks = Hooks { program, origin: i.adapter, held_timeout_s: i.hook_timeout };
    match config::install(&path, &hooks).map_err(|e| e.to_string())? {
        Outcome::Changed => println!(
            "{}: connected to the adapter ({} hooks run `{}`)",
            path.display(),
            config::HOOKED.len(),
            hooks.command()
        ),
        Outcome::Unchanged => println!("{}: already connected, nothing to do", path.display()),
    }
    if !i.trust {
        println!(
            "Codex skips hooks it has not been told to trust, without saying so. To trust exactly these, run\n  {} install --trust --codex <path to codex>{}\n(or trust them in Codex yourself).",
            hooks.program.display(),
            i.place.config.as_ref().map(|c| format!(" --config {}", c.display())).unwrap_or_default()
        );
        return Ok(());
    }
    let listed = trust::adapter_hooks(&i.codex, &path)?;
    if listed.is_empty() {
        return Err(format!(
            "{} lists none of the adapter's hooks in {}: nothing trusted",
            i.codex.display(),
            path.display()
        ));
    }
    let wanted: Vec<(String, String)> = listed.iter().map(|l| (l.key.clone(), l.current_hash.clone())).collect();
    config::record_trust(&path, &wanted).map_err(|e| e.to_string())?;
    for l in &listed {
        println!("trusted {} ({}): {}", l.key, l.current_hash, l.command);
    }
    Ok(())
}

/// The configuration file, absolute: Codex names its hooks by it.
fn place(p: &Place) -> Result<PathBuf, String> {
    let path = match &p.config {
        Some(c) => c.clone(),
        None => {
            let codex_home = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
            let home = std::env::var_os("HOME").map(PathBuf::from);
            config::config_path(codex_home.as_deref(), home.as_deref()).ok_or_else(|| "HOME is not set".to_owned())?
        }
    };
    absolute(&path)
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir.join(path.file_name().ok_or_else(|| format!("{} names no file", path.display()))?))
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

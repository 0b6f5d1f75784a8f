//! The `aep-relay` binary: parse options, start, print the posture, wait
//! for SIGINT/SIGTERM, shut down in order.

use std::process::ExitCode;

use aep_demo::DemoOptions;
use aep_relay::auth::{fresh_token, Agents, Principal, Roles, Token};
use aep_relay::cli::Cli;
use aep_relay::pairing;
use aep_relay::Config;
use aep_relay::{boot_line, serve, ShutdownOutcome};
use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(command) = &cli.command {
        return pairing::run(command);
    }
    tracing_subscriber::fmt()
        // The NATS client's connection notices stay out of the way of the
        // boot line, which is the first line a supervisor reads.
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn")))
        .init();
    let config = match cli.config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = config;
    let demo_token = if cli.demo { demo_token(&cli, &mut config) } else { None };
    let listener = match TcpListener::bind(cli.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("aep-relay: cannot listen on {}: {e}", cli.listen);
            return ExitCode::from(1);
        }
    };
    let relay = match serve(config.clone(), listener).await {
        Ok(relay) => relay,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            return ExitCode::from(2);
        }
    };
    // Installed before the boot line, so a supervisor that signals as soon
    // as it sees the line gets an orderly shutdown.
    let stop = match StopSignals::install() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("aep-relay: cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    println!("{}", boot_line(&config, relay.local_addr()));
    let demo = if cli.demo {
        let options = DemoOptions { seed: cli.demo_seed, token: demo_token, ..DemoOptions::default() };
        match aep_demo::start(&relay.local_url(), &options) {
            Ok(demo) => Some(demo),
            Err(why) => {
                tracing::warn!("--demo: {why}");
                None
            }
        }
    } else {
        None
    };
    stop.wait().await;
    tracing::info!("shutting down");
    if let Some(demo) = demo {
        demo.stop().await;
    }
    match relay.shutdown().await {
        ShutdownOutcome::Drained => ExitCode::SUCCESS,
        ShutdownOutcome::TimedOut => {
            tracing::warn!("some connections did not drain in time and were cut");
            ExitCode::from(1)
        }
    }
}

/// The token the demonstration agents connect with: the single token when
/// there is one; with a credentials file only, a fresh one for this run,
/// held in memory, whose principal (`demo`) may only emit.
fn demo_token(cli: &Cli, config: &mut Config) -> Option<String> {
    if let Ok(Some(secret)) = cli.secret() {
        return Some(secret);
    }
    if !config.control_enabled() {
        return None;
    }
    let secret = fresh_token();
    let token = Token::new(secret.clone())?;
    config.principals.push((
        token,
        Principal { agents: Agents::Any, ..Principal::named("demo", Roles { agent: true, ..Roles::default() }) },
    ));
    Some(secret)
}

/// SIGINT and SIGTERM, registered up front.
#[cfg(unix)]
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl StopSignals {
    fn install() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

#[cfg(not(unix))]
struct StopSignals;

#[cfg(not(unix))]
impl StopSignals {
    fn install() -> std::io::Result<StopSignals> {
        Ok(StopSignals)
    }

    async fn wait(self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

//! Demonstration agents for the relay's `--demo`: simulated,
//! control-capable agents that live in the relay process but reach it the
//! way any agent does, over a real WebSocket to `/socket`, as `emitter`s
//! declaring `control.accepts`. Each is the engine's [`Agent`] (hello, pings,
//! reconnects, positions, dedupe, recorded acks, answer checks) driven by
//! the engine's tokio driver, [`Link`], so a console sees exactly what a
//! real agent sends.
//!
//! Who they are and what they ask is in [`cast`]; how one behaves over time
//! in [`agent`]. The engine's agent takes plain closures for its decisions,
//! so it stays on one thread: the demo agents run together on a thread of
//! their own.
//!
//! [`Agent`]: aep_engine::client::agent::Agent

pub mod agent;
pub mod cast;
mod rng;

#[cfg(test)]
mod tests;

use std::time::Duration;

use aep_driver_tokio::{now, Link, Step};
use aep_engine::client::agent::AgentChange;
use aep_engine::client::hub::socket_url;
use aep_engine::client::{SocketDriven, State};
use tokio::sync::{oneshot, watch};
use tokio::task::LocalSet;

pub use agent::{DemoAgent, Pace};
pub use cast::{Persona, CAST};

use rng::Rng;

/// Options for the demonstration agents.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    /// Seed for repeatable runs: the same session ids, prompts, order and
    /// delays (event ids share their random part; their time part is the
    /// clock's).
    pub seed: Option<u64>,
    /// The relay's bearer token; without one the relay refuses every
    /// command, so the demo requests can be seen but not answered.
    pub token: Option<String>,
    pub pace: Pace,
}

/// Why no demonstration agents were started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoUnavailable(pub &'static str);

impl std::fmt::Display for DemoUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DemoUnavailable {}

/// How long [`Demo::stop`] waits for an agent to say goodbye.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Starts the demonstration agents against the relay at `base_url`
/// (`http://host:port`), on a thread of their own.
pub fn start(base_url: &str, options: &DemoOptions) -> Result<Demo, DemoUnavailable> {
    if base_url.starts_with("https://") {
        return Err(DemoUnavailable("the demonstration agents speak plain WebSocket only and this relay serves HTTPS"));
    }
    if options.token.is_none() {
        tracing::warn!("demo: no token, so the relay refuses every command; the demo requests cannot be answered");
    }
    let url = socket_url(base_url, options.token.as_deref())
        .map_err(|_| DemoUnavailable("the relay address does not make a WebSocket URL"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|_| DemoUnavailable("the demo agents' runtime could not be built"))?;
    let mut seeds = Rng::new(options.seed.unwrap_or_else(Rng::entropy));
    let pace = options.pace;
    let mut agents = Vec::new();
    let mut tasks = Vec::new();
    for persona in CAST {
        let (stop, stopped) = watch::channel(false);
        let (done, finished) = oneshot::channel();
        agents.push(Running { name: persona.name, stop, finished });
        tasks.push((persona, seeds.next_u64(), stopped, done));
    }
    let spawned = std::thread::Builder::new().name("aep-demo".into()).spawn(move || {
        let local = LocalSet::new();
        for (persona, seed, stopped, done) in tasks {
            let link = Link::new(DemoAgent::new(persona, seed, pace, now()), url.clone());
            local.spawn_local(async move {
                drive(link, stopped).await;
                let _ = done.send(());
            });
        }
        // Until every agent has stopped.
        runtime.block_on(local);
    });
    spawned.map_err(|_| DemoUnavailable("the demo agents' thread could not start"))?;
    tracing::info!("demo: {} agents connecting to {base_url}", agents.len());
    Ok(Demo { agents })
}

/// The running demonstration agents. Dropping the handle disconnects them.
pub struct Demo {
    agents: Vec<Running>,
}

struct Running {
    name: &'static str,
    stop: watch::Sender<bool>,
    /// Resolves once the agent has said goodbye.
    finished: oneshot::Receiver<()>,
}

impl Demo {
    /// Names of the agents still running.
    pub fn agents(&self) -> Vec<&'static str> {
        self.agents.iter().map(|a| a.name).collect()
    }

    /// Disconnects one agent for good, as if its process exited: its
    /// sessions lose their route. `false` when no such agent is running.
    pub async fn stop_agent(&mut self, name: &str) -> bool {
        let Some(i) = self.agents.iter().position(|a| a.name == name) else { return false };
        self.agents.remove(i).finish().await;
        true
    }

    /// Disconnects every agent.
    pub async fn stop(mut self) {
        for agent in std::mem::take(&mut self.agents) {
            agent.finish().await;
        }
    }
}

impl Running {
    async fn finish(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(STOP_GRACE, self.finished).await.is_err() {
            tracing::warn!("demo {}: no goodbye within {} s", self.name, STOP_GRACE.as_secs());
        }
    }
}

/// One agent's task: its socket driven by the engine, its script's timers
/// only while the connection is live (an offline agent waits).
async fn drive(mut link: Link<DemoAgent>, mut stop: watch::Receiver<bool>) {
    let name = link.conn().persona().name;
    link.conn().connect(now());
    loop {
        let wake = if link.is_live() { link.conn().next_wake() } else { None };
        let step = tokio::select! {
            step = link.next(wake) => step,
            _ = stop.changed() => break,
        };
        let at = now();
        match step {
            Step::Wake => link.conn().on_wake(at),
            Step::Notice(AgentChange::State(State::Refused { reason })) => {
                tracing::warn!("demo {name}: the relay refused the connection: {reason}");
                break;
            }
            Step::Notice(change) => link.conn().on_change(change, at),
            Step::Inbox(never) => match never {},
        }
    }
    link.close().await;
}

//! Demonstration agents for `--demo`: simulated, control-capable agents
//! that live in the relay process but reach it the way any agent does,
//! over a real WebSocket to `/socket`, as `emitter`s declaring
//! `control.accepts`. Each is the engine's [`Connection`] (hello, pings,
//! reconnect with backoff) plus its [`ControlTarget`] (dedupe, recorded
//! acks, answer checks), so a console sees exactly what a real agent sends.
//!
//! Who they are and what they ask is in [`cast`]; how one behaves over time
//! in [`agent`]; the socket driver is the engine's tokio driver, [`Link`].
//!
//! [`ControlTarget`]: aep_client::control::target::ControlTarget

pub mod agent;
pub mod cast;
mod rng;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use aep_client::client::{Backoff, ClientEvent, Config as ConnectionConfig, Connection, State};
use aep_client::client::hub::socket_url;
use aep_client::protocol::frame::{ControlCapability, HelloIdentity};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use agent::{Agent, Pace};
pub use cast::{Persona, CAST};
pub use aep_driver_tokio::{now, Link, Step};

use crate::Relay;
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

/// Reconnects quickly: a demo should be back within seconds of a relay
/// restart.
const BACKOFF: Backoff = Backoff { initial_ms: 250, max_ms: 5_000 };
/// How long [`Demo::stop`] waits for an agent to say goodbye.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Starts the demonstration agents against `relay`.
pub fn launch(relay: &Relay, options: &DemoOptions) -> Result<Demo, DemoUnavailable> {
    start(&format!("http://{}", reachable(relay.local_addr())), options)
}

/// Starts the demonstration agents against the relay at `base_url`
/// (`http://host:port`). Needs a tokio runtime.
pub fn start(base_url: &str, options: &DemoOptions) -> Result<Demo, DemoUnavailable> {
    let runtime =
        tokio::runtime::Handle::try_current().map_err(|_| DemoUnavailable("the demo agents need a tokio runtime"))?;
    if options.token.is_none() {
        tracing::warn!("demo: no token, so the relay refuses every command; the demo requests cannot be answered");
    }
    let url = socket_url(base_url, options.token.as_deref())
        .map_err(|_| DemoUnavailable("the relay address does not make a WebSocket URL"))?;
    let mut seeds = Rng::new(options.seed.unwrap_or_else(Rng::entropy));
    let mut agents = Vec::new();
    for persona in CAST {
        let mut agent = Agent::new(persona, seeds.next_u64(), options.pace);
        let conn = Connection::new(connection_config(&mut agent))
            .map_err(|_| DemoUnavailable("a demo agent's connection settings were refused"))?;
        let (stop, stopped) = watch::channel(false);
        let task = runtime.spawn(drive(agent, Link::new(conn, url.clone()), stopped));
        agents.push(Running { name: persona.name, stop, task });
    }
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
    task: JoinHandle<()>,
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
        let mut task = self.task;
        if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
            task.abort();
        }
    }
}

fn connection_config(agent: &mut Agent) -> ConnectionConfig {
    let persona = agent.persona();
    let identity = HelloIdentity {
        agent: Some(persona.name.to_owned()),
        instance: Some(format!("{}/{}", agent::HOST, persona.name)),
        card: None,
    };
    let control = ControlCapability::new(persona.accepts.iter().copied(), Some(agent::ACK_WINDOW_MS));
    let mut config = ConnectionConfig::emitter(identity, Some(control));
    config.emits = Some(["session", "run", "tool", "progress", "attention", "control"].map(String::from).to_vec());
    config.backoff = BACKOFF;
    config.jitter_seed = agent.draw_seed();
    config
}

/// One agent's task: the agent's events out, commands in, its timers
/// only while the connection is live (an offline agent waits).
async fn drive(mut agent: Agent, mut link: Link<Connection>, mut stop: watch::Receiver<bool>) {
    let name = agent.persona().name;
    link.conn().connect(now());
    loop {
        let wake = if link.is_live() { agent.next_wake() } else { None };
        let step = tokio::select! {
            step = link.next(wake) => step,
            _ = stop.changed() => break,
        };
        let at = now();
        match step {
            Step::Wake => agent.on_wake(at),
            Step::Notice(ClientEvent::Event(command)) => agent.on_command(&command, at),
            Step::Notice(ClientEvent::StateChanged(State::Live)) => agent.on_live(at),
            Step::Notice(ClientEvent::StateChanged(State::Refused { reason })) => {
                tracing::warn!("demo {name}: the relay refused the connection: {reason}");
                break;
            }
            Step::Notice(ClientEvent::Disconnected { reason }) => {
                tracing::debug!("demo {name}: disconnected: {reason}")
            }
            Step::Notice(_) => {}
        }
        while link.is_live() {
            let Some(event) = agent.poll_event() else { break };
            if let Err(e) = link.conn().send_event(&event) {
                tracing::warn!("demo {name}: dropped {}: {e}", event.ty());
            }
        }
    }
    link.close().await;
}

/// A listener on the unspecified address is reached on loopback.
fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port()),
        _ => addr,
    }
}

/// A random token for the demonstration agents' own credential (32 hex
/// digits from the operating system's generator).
pub fn fresh_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

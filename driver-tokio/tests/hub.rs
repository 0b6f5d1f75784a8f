//! The driver runs a multi-relay hub over real sockets: two relays, an
//! agent on the second; the hub hears the agent on that relay's socket and
//! its command goes out on that socket too.

use aep_driver_tokio::{now, Link, Step};
use aep_engine::client::agent::{Agent, AgentChange, AgentConfig};
use aep_engine::client::hub::{socket_url, Hub, HubChange, HubConfig, Recipient, RelaySpec};
use aep_engine::client::{Config, SocketDriven, State};
use aep_engine::control::sender::{CommandChange, CommandUpdate};
use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::Capture;
use aep_relay::auth::Token;
use aep_relay::{serve, Relay};
use tokio::net::TcpListener;

const TOKEN: &str = "T-driver-tokio-hub-test";
/// Everything here happens on loopback; this bounds each wait.
const PATIENCE_MS: u64 = 15_000;
const SESSION: &str = "s-on-the-second-relay";

async fn relay() -> Relay {
    let config = aep_relay::Config { token: Token::new(TOKEN), ..aep_relay::Config::default() };
    serve(config, TcpListener::bind("127.0.0.1:0").await.unwrap()).await.unwrap()
}

/// Drives `link` until `pick` takes one of its changes.
async fn until<E: SocketDriven, T>(link: &mut Link<E>, what: &str, mut pick: impl FnMut(E::Change) -> Option<T>) -> T {
    let deadline = now() + PATIENCE_MS;
    loop {
        match link.next(Some(deadline)).await {
            Step::Notice(change) => {
                if let Some(found) = pick(change) {
                    return found;
                }
            }
            Step::Wake => panic!("no {what} within {PATIENCE_MS} ms"),
            Step::Inbox(never) => match never {},
        }
    }
}

#[tokio::test]
async fn a_hub_hears_and_commands_an_agent_through_the_relay_it_is_on() {
    let relays = [relay().await, relay().await];
    let url = |i: usize| socket_url(&relays[i].base_url(), Some(TOKEN)).unwrap();

    let specs = (0..2).map(|i| RelaySpec { label: format!("relay-{i}"), config: Config::consumer() }).collect();
    let hub = Hub::new(HubConfig::new(Identity::new("aep://test/agent/console", "console"), 1), specs).unwrap();
    let mut console = Link::with_urls(hub, [url(0), url(1)]);
    console.conn().connect(now());
    let mut live = [false; 2];
    until(&mut console, "live relays", |change| {
        if let HubChange::Status { relay, state } = change {
            live[relay] = state == State::Live;
        }
        live.iter().all(|l| *l).then_some(())
    })
    .await;
    assert!(console.is_live());

    let agent = Agent::new(AgentConfig {
        identity: Identity::new("aep://test/agent/builder", "builder"),
        accepts: vec!["control.pause".into()],
        ack_window_ms: Some(PATIENCE_MS),
        ceiling: Capture::Metadata,
        epoch: 1,
        seed: 2,
        connection: Config::consumer(),
    })
    .unwrap();
    let mut agent = Link::new(agent, url(1));
    agent.conn().connect(now());
    until(&mut agent, "live agent", |change| matches!(change, AgentChange::State(State::Live)).then_some(())).await;
    agent.conn().emit(Draft::new("session.started"), Some(SESSION), None, now()).unwrap();
    // Writes the event; nothing is expected back yet.
    let _ = agent.next(Some(now())).await;

    let heard_on = until(&mut console, "session event", |change| match change {
        HubChange::Event { relay, event } if event.session() == Some(SESSION) => Some(relay),
        _ => None,
    })
    .await;
    assert_eq!(heard_on, 1, "the event came in on the second relay's socket");

    let id = console.conn().pause(&Recipient::session(SESSION), now()).unwrap();
    assert_eq!(console.conn().command_relay(&id), Some(1));
    // Writes the command.
    let _ = console.next(Some(now())).await;
    let got = until(&mut agent, "command", |change| match change {
        AgentChange::Command { command, .. } => Some(command.id().to_owned()),
        _ => None,
    })
    .await;
    assert_eq!(got, id);
    // Writes the ack.
    let _ = agent.next(Some(now())).await;
    until(&mut console, "accepted", |change| {
        matches!(change, HubChange::Command(CommandUpdate { id: ref acked, change: CommandChange::Accepted }) if *acked == id)
            .then_some(())
    })
    .await;

    console.close().await;
    assert!((0..2).all(|relay| console.conn().state(relay) == Some(&State::Closed)));
}

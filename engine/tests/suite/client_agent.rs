//! The agent's side of a relay connection, driven by a fake clock and a
//! scripted relay: hello with the control block, positions stamped, acks
//! written before anything else, and what was queued kept across a drop.

use aep_engine::client::agent::{Agent, AgentChange, AgentConfig};
use aep_engine::client::{Config, SocketAction, State};
use aep_engine::control::sender::{Address, Command};
use aep_engine::control::target::{Action, Received};
use aep_engine::protocol::frame::{Capabilities, Frame, Hello, HelloIdentity, Role};
use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::{Capture, Event, UnixMs};

const T0: UnixMs = UnixMs(1_783_073_703_000);
const EPOCH: u64 = 1_783_073_000_000;

fn agent() -> Agent {
    Agent::new(AgentConfig {
        identity: Identity::new("aep://h/agent/builder", "builder"),
        accepts: vec!["control.pause".into()],
        ack_window_ms: Some(2_000),
        ceiling: Capture::Metadata,
        epoch: EPOCH,
        seed: 7,
        connection: Config::consumer(),
    })
    .unwrap()
}

fn written(a: &mut Agent) -> Vec<Frame> {
    std::iter::from_fn(|| a.poll_transmit()).map(|t| Frame::decode(&t).unwrap()).collect()
}

fn live(a: &mut Agent) -> Hello {
    a.connect(T0);
    assert_eq!(a.poll_action(), Some(SocketAction::Open));
    a.handle_open(T0);
    let Frame::Hello(hello) = written(a).remove(0) else { panic!("hello first") };
    let relay = Hello {
        versions: vec!["0.1".into()],
        role: Some(Role::Both),
        identity: Some(HelloIdentity { agent: Some("relay".into()), ..HelloIdentity::default() }),
        capabilities: Capabilities::default(),
    };
    a.handle_text(&Frame::Hello(relay).encode(), T0);
    assert_eq!(a.state(), &State::Live);
    hello
}

fn events(frames: Vec<Frame>) -> Vec<Event> {
    frames.into_iter().filter_map(|f| if let Frame::Event(e) = f { Some(e) } else { None }).collect()
}

#[test]
fn hello_declares_the_commands_and_a_command_is_acked_at_once() {
    let mut a = agent();
    let hello = live(&mut a);
    assert_eq!(hello.role, Some(Role::Emitter));
    let control = hello.capabilities.control.expect("control declared");
    assert_eq!(control.accepts, Some(vec!["control.pause".to_string()]));
    assert_eq!(control.ack_window_ms, Some(2_000));

    let started = a.emit(Draft::new("session.started"), Some("s"), None, T0).unwrap();
    assert_eq!((started.session(), started.position()), (Some("s"), Some((EPOCH, 0))));
    assert_eq!(events(written(&mut a)), vec![started]);

    let console = Identity::new("aep://c/agent/console", "console");
    let pause = Command::Pause.build(&console, &Address::session("s"), "C1", T0).unwrap();
    a.handle_text(&Frame::Event(pause.clone()).encode(), T0 + 5);
    let sent = events(written(&mut a));
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].ty(), sent[0].cause(), sent[0].position()), ("control.accepted", Some("C1"), Some((EPOCH, 1))));
    let changes: Vec<AgentChange> = std::iter::from_fn(|| a.poll_change()).collect();
    let command = changes.iter().find_map(|c| match c {
        AgentChange::Command { command, received: Received::Fresh { action, .. } } => Some((command, action)),
        _ => None,
    });
    assert_eq!(command, Some((&pause, &Action::Pause)));

    // The same command again: the recorded ack, byte for byte, nothing new.
    a.handle_text(&Frame::Event(pause).encode(), T0 + 9);
    assert_eq!(events(written(&mut a)), sent);
}

#[test]
fn what_the_agent_says_while_cut_off_goes_out_after_the_reconnect() {
    let mut a = agent();
    live(&mut a);
    a.handle_closed(T0 + 10, 1006, "gone");
    assert!(matches!(a.state(), State::Reconnecting { .. }));
    let queued = a
        .emit(Draft::new("progress.status").data(serde_json::json!({"phase": "x"})), Some("s"), None, T0 + 20)
        .unwrap();
    assert!(written(&mut a).is_empty(), "nothing written without a socket");
    assert_eq!(a.connection().queued_events(), 1);

    let State::Reconnecting { at, .. } = *a.state() else { unreachable!() };
    a.handle_timeout(at);
    assert_eq!(a.poll_action(), Some(SocketAction::Open));
    a.handle_open(at);
    assert!(matches!(written(&mut a).as_slice(), [Frame::Hello(_)]), "only hello before the relay's");
    let relay = Hello {
        versions: vec!["0.1".into()],
        role: Some(Role::Both),
        identity: None,
        capabilities: Capabilities::default(),
    };
    a.handle_text(&Frame::Hello(relay).encode(), at);
    assert_eq!(events(written(&mut a)), vec![queued]);
    assert_eq!(a.connection().queued_events(), 0);
}

#[test]
fn a_seq_is_never_used_twice() {
    let mut a = agent();
    assert_eq!(a.emit(Draft::new("session.started"), Some("s"), Some(4), T0).unwrap().seq(), Some(4));
    assert_eq!(
        a.emit(Draft::new("progress.status").data(serde_json::json!({"phase": "x"})), Some("s"), None, T0)
            .unwrap()
            .seq(),
        Some(5)
    );
    assert!(a
        .emit(Draft::new("progress.status").data(serde_json::json!({"phase": "x"})), Some("s"), Some(5), T0)
        .is_err());
}

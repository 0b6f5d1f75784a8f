//! Nothing an agent asks is lost to an outage between a client and the
//! relay: the engine's connection over a real WebSocket, through a proxy
//! the test cuts and restores while the relay carries on.

use crate::support;

use aep_driver_tokio::{now, Link, Step};
use aep_engine::client::hub::socket_url;
use aep_engine::client::{Config as ConnectionConfig, Connection, State};
use aep_engine::protocol::frame::{ControlCapability, HelloIdentity};
use aep_engine::protocol::ids::Draft;
use aep_engine::Event;
use serde_json::json;
use support::console::Console;
use support::proxy::Proxy;
use support::{event, event_with, session_name, Posture, TestRelay, AGENT, TOKEN};

fn permission_request(session: &str, seq: u64) -> Event {
    let data = json!({
        "kind": "permission",
        "prompt": "Delete the staging database?",
        "options": [{ "id": "allow", "label": "Allow" }, { "id": "deny", "label": "Deny" }],
    });
    event_with(Draft::new("attention.requested").epoch(0).seq(seq).data(data), session)
}

async fn wait_until_down(console: &mut Console) {
    console.until("the connection to drop", |c| (!c.link.is_live()).then_some(())).await;
}

/// A session that starts while the client is cut off, and asks for
/// permission then, reaches the client once the path is back, although
/// the client resumes the sessions it knew from their positions.
#[tokio::test]
async fn a_request_raised_during_an_outage_arrives_after_it() {
    let relay = TestRelay::start(Posture::Token).await;
    let proxy = Proxy::start(relay.relay.local_addr()).await;
    let mut console = Console::connect_to(&proxy.base_url(), TOKEN).await;

    let known = session_name("known");
    assert_eq!(relay.post_one(&event("session.started", &known, 0, 0)).await.status(), 202);
    console.event("the known session", |e| e.session() == Some(known.as_str())).await;

    proxy.cut();
    wait_until_down(&mut console).await;
    let new = session_name("new");
    let request = permission_request(&new, 1);
    let batch = [event("session.started", &new, 0, 0), request.clone()];
    assert_eq!(relay.post_events(&batch).await.status(), 202);
    proxy.restore();

    let seen = console.event("the request raised during the outage", |e| e.id() == request.id()).await;
    assert_eq!(seen.raw(), request.raw(), "delivered byte for byte");
}

/// An emitter's events queued while its socket is down are sent once it is
/// back, in order, instead of being lost with the socket.
#[tokio::test]
async fn an_emitters_events_queued_during_an_outage_are_sent_after_it() {
    let relay = TestRelay::start(Posture::Token).await;
    let proxy = Proxy::start(relay.relay.local_addr()).await;
    let session = session_name("queued");

    let identity = HelloIdentity { agent: Some(AGENT.into()), ..HelloIdentity::default() };
    let control = ControlCapability { accepts: Some(vec!["control.cancel".into()]), ..ControlCapability::default() };
    let conn = Connection::new(ConnectionConfig::emitter(identity, Some(control))).unwrap();
    let mut agent = Link::new(conn, socket_url(&proxy.base_url(), Some(TOKEN)).unwrap());
    agent.conn().connect(now());
    step_until(&mut agent, |l| l.is_live()).await;
    agent.conn().send_event(&event("session.started", &session, 0, 0)).unwrap();
    step_until(&mut agent, |_| relay.relay.session_len(&session) == 1).await;

    proxy.cut();
    step_until(&mut agent, |l| !matches!(l.conn().state(), State::Live)).await;
    let resolved = event("attention.resolved", &session, 0, 1);
    let ended = event("session.ended", &session, 0, 2);
    agent.conn().send_event(&resolved).expect("queued while reconnecting");
    agent.conn().send_event(&ended).expect("queued while reconnecting");
    proxy.restore();

    step_until(&mut agent, |_| relay.relay.session_len(&session) == 3).await;
    let filter = serde_urlencoded::to_string([("filter", json!({ "session": [session] }).to_string())]).unwrap();
    let replay = relay.sse(&format!("from=all&live=0&{filter}")).await.collect_data(support::PROMPT).await;
    let ids: Vec<String> = replay.iter().map(|m| m.json()["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids[1..], [resolved.id(), ended.id()], "sent once each, in order");
}

async fn step_until(link: &mut Link<Connection>, done: impl Fn(&mut Link<Connection>) -> bool) {
    let deadline = now() + support::console::PATIENCE_MS;
    while !done(link) {
        assert!(now() < deadline, "gave up waiting; connection is {:?}", link.conn().state());
        let wake = now() + 50;
        match link.next(Some(wake)).await {
            Step::Notice(_) | Step::Wake => {}
        }
    }
}

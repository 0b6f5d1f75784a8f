//! A test console over a real WebSocket: the engine's `Connection` and
//! `ControlSender` driven by the tokio driver, watching everything
//! and sending commands.

use aep_demo::agent::ACK_WINDOW_MS;
use aep_driver_tokio::{now, Link, Step};
use aep_engine::client::hub::socket_url;
use aep_engine::client::{ClientEvent, Config as ConnectionConfig, Connection};
use aep_engine::control::sender::{Address, Command, CommandState, ControlSender};
use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::{ErrorFrame, RosterEntry};
use aep_engine::protocol::ids::{source_uri, Identity};
use aep_engine::rng::Seeded;
use aep_engine::{Event, UnixMs};
use aep_relay::Relay;
use serde_json::json;

/// How long a test waits for anything before failing.
pub const PATIENCE_MS: u64 = 30_000;

/// A console: one watching connection that also sends commands.
pub struct Console {
    pub link: Link<Connection>,
    pub sender: ControlSender,
    pub seen: Vec<Event>,
    pub errors: Vec<ErrorFrame>,
    pub rosters: Vec<(String, Vec<RosterEntry>)>,
    ids: u128,
}

impl Console {
    pub async fn connect(relay: &Relay, token: &str) -> Console {
        Console::connect_to(&relay.base_url(), token).await
    }

    /// Connects to whatever answers at `base_url` (a relay, or a proxy in
    /// front of one).
    pub async fn connect_to(base_url: &str, token: &str) -> Console {
        let mut conn = Connection::new(ConnectionConfig::consumer()).unwrap();
        conn.subscribe(Filter::match_all(), None).unwrap();
        let url = socket_url(base_url, Some(token)).unwrap();
        let identity = Identity::new(source_uri("test-host", "test-console", None), "test-console");
        let mut console = Console {
            link: Link::new(conn, url),
            sender: ControlSender::new(identity, Seeded::new(1)),
            seen: Vec::new(),
            errors: Vec::new(),
            rosters: Vec::new(),
            ids: 0,
        };
        console.link.conn().connect(now());
        console.until("the subscription", |c| c.link.is_live().then_some(())).await;
        console
    }

    /// Handles one notification, or wakes at `deadline`.
    pub async fn step(&mut self, deadline: UnixMs) {
        let wake = self.sender.poll_timeout().map_or(deadline, |t| t.min(deadline));
        match self.link.next(Some(wake)).await {
            Step::Notice(ClientEvent::Event(e)) => {
                self.sender.handle_event(&e, now());
                self.seen.push(e);
            }
            Step::Notice(ClientEvent::Error(e)) => {
                if let Some(cause) = &e.cause {
                    self.sender.handle_relay_error(cause, &e.code, e.detail.as_deref(), now());
                }
                self.errors.push(e);
            }
            Step::Notice(ClientEvent::Roster { id, entries }) => self.rosters.push((id, entries)),
            Step::Notice(_) => {}
            Step::Wake => self.sender.handle_timeout(now()),
        }
    }

    /// Steps until `check` finds what it wants.
    pub async fn until<T>(&mut self, what: &str, check: impl Fn(&Console) -> Option<T>) -> T {
        let deadline = now() + PATIENCE_MS;
        loop {
            if let Some(found) = check(self) {
                return found;
            }
            assert!(
                now() < deadline,
                "no {what} within {PATIENCE_MS} ms; saw {:?} and errors {:?}",
                self.summary(),
                self.errors
            );
            self.step(deadline).await;
        }
    }

    pub async fn event(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        self.until(what, |c| c.seen.iter().find(|e| pred(e)).cloned()).await
    }

    /// The first request of `kind` seen from `agent`.
    pub async fn request(&mut self, agent: &str, kind: &str) -> Event {
        self.event(&format!("{kind} request from {agent}"), |e| {
            e.agent() == agent && e.ty() == "attention.requested" && e.data_field("kind") == Some(&json!(kind))
        })
        .await
    }

    pub fn send(&mut self, to: Address, command: Command) -> String {
        self.ids += 1;
        let id = self.sender.send(&to, &command, Some(ACK_WINDOW_MS), now()).expect("command builds");
        while let Some(bytes) = self.sender.poll_transmit() {
            let event = Event::parse(&bytes).unwrap();
            self.link.conn().send_event(&event).expect("console is live");
        }
        id
    }

    /// Waits for the command's decision (ack, relay refusal or timeout).
    pub async fn decision(&mut self, id: &str) -> CommandState {
        self.until(&format!("decision on {id}"), |c| {
            let state = c.sender.get(id).unwrap().state();
            (!state.is_pending()).then(|| state.clone())
        })
        .await
    }

    pub async fn caused(&mut self, id: &str, ty: &str) -> Event {
        self.event(&format!("{ty} caused by {id}"), |e| e.ty() == ty && e.cause() == Some(id)).await
    }

    pub async fn roster(&mut self) -> Vec<RosterEntry> {
        let id = self.link.conn().request_roster().expect("relay declares roster");
        self.until("roster", |c| c.rosters.iter().find(|(r, _)| *r == id).map(|(_, e)| e.clone())).await
    }

    pub fn session_of(&self, agent: &str) -> String {
        let started = self.seen.iter().rev().find(|e| e.agent() == agent && e.ty() == "session.started");
        started.and_then(Event::session).expect("agent has a session").to_owned()
    }

    /// Steps for `ms` whatever arrives.
    pub async fn idle(&mut self, ms: u64) {
        let end = now() + ms;
        while now() < end {
            self.step(end).await;
        }
    }

    pub fn summary(&self) -> Vec<String> {
        self.seen.iter().rev().take(40).map(|e| format!("{} {}", e.agent(), e.ty())).collect()
    }
}

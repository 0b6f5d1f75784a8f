//! The browser driver: WebSockets and one timer around a sans-IO [`Core`]
//! (a console's [`Hub`], or an agent's connection), for any front end (the
//! JavaScript API, or a Rust UI) that implements [`Handler`].
//!
//! Every entry point (a socket event, the timer, an API call through
//! [`with`]) changes the core under one borrow, carries out what the core
//! asks (frames, socket opens and closes, the next timer), hands each change
//! to the handler, and then runs the handler's deferred work with the borrow
//! released, so that work may call back into the driver.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use aep_engine::client::agent::{Agent, AgentChange};
use aep_engine::client::hub::{Endpoint, Hub, HubChange, RelayId};
use aep_engine::client::{SocketAction, CLOSE_ABNORMAL, CLOSE_NORMAL};
use aep_engine::time::UnixMs;
use gloo_timers::callback::Timeout;

use crate::socket::{Socket, SocketEvent};
use crate::{authorization, clock};

/// Work to run once the driver is released.
pub type Deferred = Vec<Box<dyn FnOnce()>>;

/// The sans-IO side the driver serves: sockets are numbered by relay.
pub trait Core: 'static {
    type Change;
    fn handle_open(&mut self, relay: RelayId, now: UnixMs);
    fn handle_text(&mut self, relay: RelayId, text: &str, now: UnixMs);
    fn handle_binary(&mut self, relay: RelayId, bytes: &[u8], now: UnixMs);
    fn handle_closed(&mut self, relay: RelayId, now: UnixMs, code: u16, reason: &str);
    fn handle_authorization(&mut self, relay: RelayId, status: Option<u16>, now: UnixMs);
    fn handle_timeout(&mut self, now: UnixMs);
    fn poll_transmit(&mut self) -> Option<(RelayId, String)>;
    fn poll_action(&mut self) -> Option<(RelayId, SocketAction)>;
    fn poll_change(&mut self) -> Option<Self::Change>;
    fn poll_timeout(&self) -> Option<UnixMs>;
}

/// An agent's single relay connection, as relay 0.
impl Core for Agent {
    type Change = AgentChange;
    fn handle_open(&mut self, _relay: RelayId, now: UnixMs) {
        Agent::handle_open(self, now);
    }
    fn handle_text(&mut self, _relay: RelayId, text: &str, now: UnixMs) {
        Agent::handle_text(self, text, now);
    }
    fn handle_binary(&mut self, _relay: RelayId, bytes: &[u8], now: UnixMs) {
        Agent::handle_binary(self, bytes, now);
    }
    fn handle_closed(&mut self, _relay: RelayId, now: UnixMs, code: u16, reason: &str) {
        Agent::handle_closed(self, now, code, reason);
    }
    fn handle_authorization(&mut self, _relay: RelayId, status: Option<u16>, now: UnixMs) {
        Agent::handle_authorization(self, status, now);
    }
    fn handle_timeout(&mut self, now: UnixMs) {
        Agent::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self) -> Option<(RelayId, String)> {
        Agent::poll_transmit(self).map(|t| (0, t))
    }
    fn poll_action(&mut self) -> Option<(RelayId, SocketAction)> {
        Agent::poll_action(self).map(|a| (0, a))
    }
    fn poll_change(&mut self) -> Option<AgentChange> {
        Agent::poll_change(self)
    }
    fn poll_timeout(&self) -> Option<UnixMs> {
        Agent::poll_timeout(self)
    }
}

impl Core for Hub {
    type Change = HubChange;
    fn handle_open(&mut self, relay: RelayId, now: UnixMs) {
        Hub::handle_open(self, relay, now);
    }
    fn handle_text(&mut self, relay: RelayId, text: &str, now: UnixMs) {
        Hub::handle_text(self, relay, text, now);
    }
    fn handle_binary(&mut self, relay: RelayId, bytes: &[u8], now: UnixMs) {
        Hub::handle_binary(self, relay, bytes, now);
    }
    fn handle_closed(&mut self, relay: RelayId, now: UnixMs, code: u16, reason: &str) {
        Hub::handle_closed(self, relay, now, code, reason);
    }
    fn handle_authorization(&mut self, relay: RelayId, status: Option<u16>, now: UnixMs) {
        Hub::handle_authorization(self, relay, status, now);
    }
    fn handle_timeout(&mut self, now: UnixMs) {
        Hub::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self) -> Option<(RelayId, String)> {
        Hub::poll_transmit(self)
    }
    fn poll_action(&mut self) -> Option<(RelayId, SocketAction)> {
        Hub::poll_action(self)
    }
    fn poll_change(&mut self) -> Option<HubChange> {
        Hub::poll_change(self)
    }
    fn poll_timeout(&self) -> Option<UnixMs> {
        Hub::poll_timeout(self)
    }
}

/// What a front end does with the core's changes.
pub trait Handler: 'static {
    type Core: Core;
    /// One change, in order, with the core to read.
    fn change(&mut self, core: &Self::Core, change: <Self::Core as Core>::Change);
    /// At the end of a turn: the calls out (listeners, UI updates) to make
    /// once the driver is released.
    fn deferred(&mut self, core: &Self::Core) -> Deferred;
}

struct RelaySocket {
    /// The socket URL holds the token; it is handed only to the WebSocket
    /// constructor, the token itself only to the authorization check.
    endpoint: Endpoint,
    socket: Option<Socket>,
    /// Bumped per socket, so a late report from an old one is ignored.
    generation: u64,
}

/// The core, its sockets and timer, and the front end's handler.
pub struct Driver<H: Handler> {
    /// The sans-IO core (for a console, its [`Hub`]).
    pub hub: H::Core,
    pub handler: H,
    sockets: Vec<RelaySocket>,
    ctor: Option<js_sys::Function>,
    timer: Option<(UnixMs, Timeout)>,
    me: Weak<RefCell<Driver<H>>>,
}

pub type Shared<H> = Rc<RefCell<Driver<H>>>;

impl<H: Handler> Driver<H> {
    /// `endpoints[i]` is where relay `i` is reached; `ctor` a WebSocket
    /// constructor to use instead of the global one.
    pub fn new(hub: H::Core, endpoints: Vec<Endpoint>, ctor: Option<js_sys::Function>, handler: H) -> Shared<H> {
        Rc::new_cyclic(|me| {
            RefCell::new(Driver {
                hub,
                handler,
                sockets: endpoints
                    .into_iter()
                    .map(|endpoint| RelaySocket { endpoint, socket: None, generation: 0 })
                    .collect(),
                ctor,
                timer: None,
                me: me.clone(),
            })
        })
    }

    /// The browser says the device has no network: every open socket is
    /// closed and reported closed now, not after a ping goes unanswered,
    /// so what the hub says about its connections (and whether it takes a
    /// command) is true while the device is offline. The hub reconnects
    /// by itself, as after any other close.
    pub fn drop_sockets(&mut self, reason: &str) {
        let now = clock::now();
        for relay in 0..self.sockets.len() {
            if let Some(socket) = self.sockets[relay].socket.take() {
                socket.close(CLOSE_NORMAL, reason);
                self.hub.handle_closed(relay, now, CLOSE_ABNORMAL, reason);
            }
        }
    }

    /// Carries out what the hub asks and hands its changes to the handler.
    fn drive(&mut self) {
        loop {
            let mut progressed = false;
            while let Some((relay, text)) = self.hub.poll_transmit() {
                progressed = true;
                if let Some(s) = self.sockets.get(relay).and_then(|s| s.socket.as_ref()) {
                    s.send(&text);
                }
            }
            while let Some((relay, action)) = self.hub.poll_action() {
                progressed = true;
                self.act(relay, action);
            }
            while let Some(change) = self.hub.poll_change() {
                progressed = true;
                self.handler.change(&self.hub, change);
            }
            if !progressed {
                break;
            }
        }
        self.arm_timer();
    }

    fn act(&mut self, relay: RelayId, action: SocketAction) {
        let Some(slot) = self.sockets.get_mut(relay) else { return };
        match action {
            SocketAction::Open => {
                if let Some(old) = slot.socket.take() {
                    old.close(CLOSE_NORMAL, "reconnecting");
                }
                slot.generation += 1;
                let generation = slot.generation;
                let me = self.me.clone();
                let report = Rc::new(move |event: SocketEvent| on_socket(&me, relay, generation, event));
                match Socket::open(&slot.endpoint.socket, self.ctor.as_ref(), report) {
                    Ok(socket) => slot.socket = Some(socket),
                    Err(why) => self.hub.handle_closed(relay, clock::now(), CLOSE_ABNORMAL, why),
                }
            }
            SocketAction::Close { code, reason } => {
                if let Some(s) = slot.socket.take() {
                    s.close(code, &reason);
                }
            }
            SocketAction::CheckAuthorization => {
                let me = self.me.clone();
                let endpoint = &slot.endpoint;
                authorization::check(&endpoint.check, endpoint.token.as_deref(), move |status| {
                    if let Some(rc) = me.upgrade() {
                        with(&rc, |d| d.hub.handle_authorization(relay, status, clock::now()));
                    }
                });
            }
        }
    }

    fn arm_timer(&mut self) {
        let next = self.hub.poll_timeout();
        if self.timer.as_ref().map(|(at, _)| *at) == next {
            return;
        }
        // Dropping a gloo Timeout cancels it.
        self.timer = None;
        if let Some(at) = next {
            let delay = at.since(clock::now()).min(i32::MAX as u64) as u32;
            let me = self.me.clone();
            let timeout = Timeout::new(delay, move || {
                if let Some(rc) = me.upgrade() {
                    with(&rc, |d| {
                        d.timer = None;
                        d.hub.handle_timeout(clock::now());
                    });
                }
            });
            self.timer = Some((at, timeout));
        }
    }
}

/// Runs `f` on the driver, carries out what the hub asks, then runs the
/// handler's deferred work with the borrow released.
pub fn with<H: Handler, R>(rc: &Shared<H>, f: impl FnOnce(&mut Driver<H>) -> R) -> R {
    let (out, deferred) = {
        let mut d = rc.borrow_mut();
        let out = f(&mut d);
        d.drive();
        let d = &mut *d;
        (out, d.handler.deferred(&d.hub))
    };
    for work in deferred {
        work();
    }
    out
}

fn on_socket<H: Handler>(me: &Weak<RefCell<Driver<H>>>, relay: RelayId, generation: u64, event: SocketEvent) {
    let Some(rc) = me.upgrade() else { return };
    // Socket reports come from the event loop, never while borrowed.
    with(&rc, |d| {
        let current = d.sockets.get(relay).is_some_and(|s| s.generation == generation && s.socket.is_some());
        if !current {
            return;
        }
        let now = clock::now();
        match event {
            SocketEvent::Open => d.hub.handle_open(relay, now),
            SocketEvent::Text(text) => d.hub.handle_text(relay, &text, now),
            SocketEvent::Binary(bytes) => d.hub.handle_binary(relay, &bytes, now),
            SocketEvent::Closed { code, reason } => {
                d.sockets[relay].socket = None;
                d.hub.handle_closed(relay, now, code, &reason);
            }
        }
    });
}

//! The browser driver: WebSockets and one timer around a sans-IO core (a
//! console's [`Hub`](aep_engine::client::hub::Hub), an agent's
//! [`Agent`](aep_engine::client::agent::Agent): anything
//! [`SocketDriven`]), for any front end (the JavaScript API, or a Rust UI)
//! that implements [`Handler`].
//!
//! Every entry point (a socket event, the timer, an API call through
//! [`with`]) changes the core under one borrow, carries out what the core
//! asks (frames, socket opens and closes, the next timer), hands each change
//! to the handler, and then runs the handler's deferred work with the borrow
//! released, so that work may call back into the driver.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use aep_engine::client::hub::RelayAddress;
use aep_engine::client::{SocketAction, SocketDriven, CLOSE_ABNORMAL, CLOSE_NORMAL};
use aep_engine::time::UnixMs;
use gloo_timers::callback::Timeout;

use crate::socket::{Socket, SocketEvent};
use crate::{authorization, clock};

/// Work to run once the driver is released.
pub type Deferred = Vec<Box<dyn FnOnce()>>;

/// What a front end does with the core's changes.
pub trait Handler: 'static {
    type Core: SocketDriven + 'static;
    /// One change, in order, with the core to read.
    fn change(&mut self, core: &Self::Core, change: <Self::Core as SocketDriven>::Change);
    /// At the end of a turn: the calls out (listeners, UI updates) to make
    /// once the driver is released.
    fn deferred(&mut self, core: &Self::Core) -> Deferred;
}

/// One of the core's sockets (`id`), where it connects and what is open.
struct RelaySocket<Id> {
    id: Id,
    /// The socket URL holds the token; it is handed only to the WebSocket
    /// constructor, the token itself only to the authorization check.
    address: RelayAddress,
    socket: Option<Socket>,
    /// Bumped per socket, so a late report from an old one is ignored.
    generation: u64,
}

/// The slot of socket `id`.
fn socket_slot<Id: PartialEq>(sockets: &mut [RelaySocket<Id>], id: Id) -> Option<&mut RelaySocket<Id>> {
    sockets.iter_mut().find(|s| s.id == id)
}

/// The core, its sockets and timer, and the front end's handler.
pub struct Driver<H: Handler> {
    /// The sans-IO core (for a console, its hub).
    pub hub: H::Core,
    pub handler: H,
    sockets: Vec<RelaySocket<SocketId<H>>>,
    ctor: Option<js_sys::Function>,
    timer: Option<(UnixMs, Timeout)>,
    me: Weak<RefCell<Driver<H>>>,
}

pub type Shared<H> = Rc<RefCell<Driver<H>>>;

type SocketId<H> = <<H as Handler>::Core as SocketDriven>::SocketId;

impl<H: Handler> Driver<H> {
    /// `addresses` are where the core's sockets connect, in the order of
    /// [`SocketDriven::sockets`]; `ctor` a WebSocket constructor to use
    /// instead of the global one.
    pub fn new(hub: H::Core, addresses: Vec<RelayAddress>, ctor: Option<js_sys::Function>, handler: H) -> Shared<H> {
        let sockets = hub
            .sockets()
            .zip(addresses)
            .map(|(id, address)| RelaySocket { id, address, socket: None, generation: 0 })
            .collect();
        Rc::new_cyclic(|me| RefCell::new(Driver { hub, handler, sockets, ctor, timer: None, me: me.clone() }))
    }

    /// The browser says the device has no network: every open socket is
    /// closed and reported closed now, not after a ping goes unanswered,
    /// so what the hub says about its connections (and whether it takes a
    /// command) is true while the device is offline. The hub reconnects
    /// by itself, as after any other close.
    pub fn drop_sockets(&mut self, reason: &str) {
        let now = clock::now();
        for slot in &mut self.sockets {
            if let Some(socket) = slot.socket.take() {
                socket.close(CLOSE_NORMAL, reason);
                self.hub.handle_closed(slot.id, now, CLOSE_ABNORMAL, reason);
            }
        }
    }

    /// Carries out what the hub asks and hands its changes to the handler.
    fn drive(&mut self) {
        loop {
            let mut progressed = false;
            while let Some((id, text)) = self.hub.poll_transmit() {
                progressed = true;
                if let Some(s) = socket_slot(&mut self.sockets, id).and_then(|s| s.socket.as_ref()) {
                    s.send(&text);
                }
            }
            while let Some((id, action)) = self.hub.poll_action() {
                progressed = true;
                self.act(id, action);
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

    fn act(&mut self, id: SocketId<H>, action: SocketAction) {
        let me = self.me.clone();
        let Some(slot) = socket_slot(&mut self.sockets, id) else { return };
        match action {
            SocketAction::Open => {
                if let Some(old) = slot.socket.take() {
                    old.close(CLOSE_NORMAL, "reconnecting");
                }
                slot.generation += 1;
                let generation = slot.generation;
                let report = Rc::new(move |event: SocketEvent| on_socket(&me, id, generation, event));
                match Socket::open(&slot.address.socket, self.ctor.as_ref(), report) {
                    Ok(socket) => slot.socket = Some(socket),
                    Err(why) => self.hub.handle_closed(id, clock::now(), CLOSE_ABNORMAL, why),
                }
            }
            SocketAction::Close { code, reason } => {
                if let Some(s) = slot.socket.take() {
                    s.close(code, &reason);
                }
            }
            SocketAction::CheckAuthorization => {
                let address = &slot.address;
                authorization::check(&address.check, address.token.as_deref(), move |status| {
                    if let Some(rc) = me.upgrade() {
                        with(&rc, |d| d.hub.handle_authorization(id, status, clock::now()));
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

fn on_socket<H: Handler>(me: &Weak<RefCell<Driver<H>>>, id: SocketId<H>, generation: u64, event: SocketEvent) {
    let Some(rc) = me.upgrade() else { return };
    // Socket reports come from the event loop, never while borrowed.
    with(&rc, |d| {
        let Some(slot) = socket_slot(&mut d.sockets, id).filter(|s| s.generation == generation && s.socket.is_some())
        else {
            return;
        };
        let now = clock::now();
        match event {
            SocketEvent::Open => d.hub.handle_open(id, now),
            SocketEvent::Text(text) => d.hub.handle_text(id, &text, now),
            SocketEvent::Binary(bytes) => d.hub.handle_binary(id, &bytes, now),
            SocketEvent::Closed { code, reason } => {
                slot.socket = None;
                d.hub.handle_closed(id, now, code, &reason);
            }
        }
    });
}

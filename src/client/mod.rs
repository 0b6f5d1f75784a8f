//! The sans-IO relay connection (AEP-0003 §3.5, §4–§7).
//!
//! A [`Connection`] is the protocol half of one WebSocket to a relay: the
//! `hello` exchange, subscriptions with resume positions, rosters,
//! liveness pings, and reconnecting with backoff. It owns no socket and no
//! timer. A driver (the browser WebSocket, a tokio task) reports what
//! happened and carries out what it is told:
//!
//! 1. report: [`Connection::handle_open`], [`Connection::handle_text`],
//!    [`Connection::handle_binary`], [`Connection::handle_closed`],
//!    [`Connection::handle_timeout`];
//! 2. then drain, in this order: [`Connection::poll_transmit`] (send each
//!    text frame), [`Connection::poll_action`] (open or close the socket),
//!    [`Connection::poll_event`] (hand to the application), and arm one
//!    timer for [`Connection::poll_timeout`].
//!
//! Resume positions advance only when the application takes an event from
//! [`Connection::poll_event`], so whatever was received but not processed
//! is asked for again after a reconnect: a reconnect loses nothing, and
//! dedupe on `(source, id)` absorbs what is delivered twice.

mod backoff;
mod config;
pub mod hub;
mod output;
mod positions;
mod subscription;

use std::collections::VecDeque;

pub use backoff::{Backoff, Jitter};
pub use config::{Config, ConfigError, ResumePolicy};
pub use output::{Action, ClientError, ClientEvent, Refusal, State};
pub use positions::{PositionMap, DEFAULT_MAX_SESSIONS};
pub use subscription::SubState;

use subscription::Subscription;

use crate::protocol::event::{Capture, Event};
use crate::protocol::filter::Filter;
use crate::protocol::frame::{codes, Capabilities, Closing, Delivered, ErrorFrame, Frame, Hello, Position};
use crate::protocol::AEP_VERSION;
use crate::time::UnixMs;

/// Frames the application may queue for sending (events, roster requests,
/// pongs) before [`ClientError::Backpressure`]. Protocol frames (hello,
/// subscribe, closing) are bounded by [`MAX_SUBSCRIPTIONS`] instead.
pub const MAX_OUTBOX: usize = 1024;
/// Notifications waiting for [`Connection::poll_event`]. An event that finds
/// it full drops the socket: the relay resends from the positions the
/// application has actually taken, so falling behind costs a reconnect,
/// never an event.
pub const MAX_INBOX: usize = 4096;
/// Subscriptions per connection.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// Close codes that mean "not authorised": IANA's 3000/3003, and 4401/4403
/// for a driver that saw HTTP 401/403 on the upgrade.
pub const AUTH_CLOSE_CODES: [u16; 4] = [3000, 3003, 4401, 4403];
/// Our close code for an orderly close.
pub const CLOSE_NORMAL: u16 = 1000;
/// Our close code after refusing the relay's handshake.
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
/// Our close code for a socket we gave up on (no hello, no pong, backlog).
pub const CLOSE_GAVE_UP: u16 = 4000;

/// One client connection to one relay; see the module docs for the loop.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    state: State,
    jitter: Jitter,
    /// Reconnect attempts since the last stable connection.
    attempt: u32,
    /// The relay's `hello`, while live.
    peer: Option<Hello>,
    live_since: Option<UnixMs>,
    /// Deadline for the socket to open and the relay's `hello` to arrive.
    handshake_due: Option<UnixMs>,
    next_ping: Option<UnixMs>,
    /// Deadline for the oldest unanswered ping.
    pong_due: Option<UnixMs>,
    subs: Vec<Subscription>,
    sub_counter: u64,
    request_counter: u64,
    /// Positions the application restored from its own storage; every new
    /// subscription starts from them.
    restored: PositionMap,
    /// Highest position per session the application has taken, across
    /// subscriptions.
    delivered: PositionMap,
    outbox: VecDeque<String>,
    actions: VecDeque<Action>,
    inbox: VecDeque<ClientEvent>,
    dropped_notices: u64,
    /// Where [`Action::CheckAuthorization`] stands in this run of failures.
    authorization: AuthorizationCheck,
}

/// Asked at most once per run of failures (reset by a handshake, by
/// `connect`, or by a question that got no answer); only an asked question
/// takes an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AuthorizationCheck {
    NotAsked,
    Asked,
    Answered,
}

impl Connection {
    pub fn new(config: Config) -> Result<Connection, ConfigError> {
        config.check()?;
        let cap = config.max_resume_sessions;
        Ok(Connection {
            jitter: Jitter::new(config.jitter_seed),
            config,
            state: State::Idle,
            attempt: 0,
            peer: None,
            live_since: None,
            handshake_due: None,
            next_ping: None,
            pong_due: None,
            subs: Vec::new(),
            sub_counter: 0,
            request_counter: 0,
            restored: PositionMap::new(cap),
            delivered: PositionMap::new(cap),
            outbox: VecDeque::new(),
            actions: VecDeque::new(),
            inbox: VecDeque::new(),
            dropped_notices: 0,
            authorization: AuthorizationCheck::NotAsked,
        })
    }

    // ----- driver reports -------------------------------------------------

    /// Starts (or, after a refusal or close, restarts) connecting.
    pub fn connect(&mut self, now: UnixMs) {
        if matches!(self.state, State::Idle | State::Closed | State::Refused { .. }) {
            self.attempt = 0;
            self.authorization = AuthorizationCheck::NotAsked;
            self.start_connect(now);
        }
    }

    /// The socket asked for by [`Action::Open`] is open: say hello first.
    pub fn handle_open(&mut self, _now: UnixMs) {
        if self.state != State::Connecting {
            return;
        }
        self.set_state(State::Handshaking);
        let hello = self.hello();
        self.send(&hello);
    }

    /// One text frame from the relay.
    pub fn handle_text(&mut self, text: &str, now: UnixMs) {
        if !matches!(self.state, State::Handshaking | State::Live) {
            return;
        }
        if text.len() > self.config.max_frame_bytes {
            self.notice(ClientEvent::Violation(format!(
                "dropped a {} byte frame (limit {})",
                text.len(),
                self.config.max_frame_bytes
            )));
            return;
        }
        if self.state == State::Handshaking {
            self.on_handshake_frame(text, now);
        } else {
            self.on_live_frame(text, now);
        }
    }

    /// Binary frames are reserved in AEP 0.1 and rejected.
    pub fn handle_binary(&mut self, bytes: &[u8], _now: UnixMs) {
        if matches!(self.state, State::Handshaking | State::Live) {
            self.notice(ClientEvent::Violation(format!(
                "dropped a {} byte binary frame: binary frames are reserved",
                bytes.len()
            )));
        }
    }

    /// The socket closed (or failed to open). A close we asked for, or one
    /// reported after the connection moved on, is ignored.
    pub fn handle_closed(&mut self, now: UnixMs, code: u16, reason: &str) {
        if !matches!(self.state, State::Connecting | State::Handshaking | State::Live) {
            return;
        }
        if AUTH_CLOSE_CODES.contains(&code) || reason.to_ascii_lowercase().contains(codes::UNAUTHORIZED) {
            let detail = Some(reason.to_owned()).filter(|r| !r.is_empty());
            self.refuse(Refusal::Unauthorized { detail }, None, false);
            return;
        }
        let never_opened = self.state == State::Connecting;
        let why = if reason.is_empty() { format!("closed ({code})") } else { format!("closed ({code}): {reason}") };
        self.drop_socket(now, why);
        if never_opened && self.authorization == AuthorizationCheck::NotAsked {
            self.authorization = AuthorizationCheck::Asked;
            self.actions.push_back(Action::CheckAuthorization);
        }
    }

    /// The answer to [`Action::CheckAuthorization`]: the HTTP status the
    /// relay gave a request carrying this connection's credentials, or
    /// `None` when the request got no answer (the next failure asks again).
    /// 401 and 403 refuse the connection for good (retrying cannot fix a
    /// token); anything else leaves the reconnect schedule as it was.
    pub fn handle_authorization(&mut self, status: Option<u16>, _now: UnixMs) {
        if self.authorization != AuthorizationCheck::Asked {
            return;
        }
        let Some(status) = status else {
            self.authorization = AuthorizationCheck::NotAsked;
            return;
        };
        self.authorization = AuthorizationCheck::Answered;
        let connecting = matches!(self.state, State::Reconnecting { .. } | State::Connecting);
        if connecting && matches!(status, 401 | 403) {
            let detail = Some(format!("the relay answered HTTP {status} to this token"));
            // A socket opened meanwhile is still upgrading: it is closed.
            self.refuse(Refusal::Unauthorized { detail }, None, true);
        }
    }

    /// The timer armed from [`Connection::poll_timeout`] fired.
    pub fn handle_timeout(&mut self, now: UnixMs) {
        match self.state {
            State::Reconnecting { at, .. } if now >= at => self.start_connect(now),
            State::Connecting | State::Handshaking if self.handshake_due.is_some_and(|d| now >= d) => {
                let why = format!("no hello from the relay within {} ms", self.config.handshake_timeout_ms);
                self.give_up(now, why);
            }
            State::Live => {
                if self.pong_due.is_some_and(|d| now >= d) {
                    let why = format!("no pong within {} ms", self.config.pong_timeout_ms);
                    self.give_up(now, why);
                    return;
                }
                if self.next_ping.is_some_and(|t| now >= t) {
                    self.send_bounded(&Frame::Ping { t: Some(now.0.into()) });
                    self.next_ping = Some(now + self.config.ping_interval_ms);
                    self.pong_due.get_or_insert(now + self.config.pong_timeout_ms);
                }
            }
            _ => {}
        }
    }

    // ----- application intents --------------------------------------------

    /// Adds a subscription, kept across reconnects until unsubscribed or
    /// refused. Returns its id (echoed in `subscribed` and `error` frames).
    pub fn subscribe(&mut self, filter: Filter, capture: Option<Capture>) -> Result<String, ClientError> {
        if self.subs.len() >= MAX_SUBSCRIPTIONS {
            return Err(ClientError::TooManySubscriptions);
        }
        self.sub_counter += 1;
        let id = format!("sub-{}", self.sub_counter);
        let cap = self.config.max_resume_sessions;
        let mut sub = Subscription::new(id.clone(), filter, capture, self.restored.clone(), cap);
        if self.state == State::Live {
            let frame = sub.frame(self.relay_replays_all(), self.prefers_all());
            self.send(&Frame::Subscribe(frame));
        }
        self.subs.push(sub);
        Ok(id)
    }

    /// Drops a subscription; the relay is told when it knows of it.
    /// Returns whether the id was known.
    pub fn unsubscribe(&mut self, id: &str) -> bool {
        let Some(i) = self.subs.iter().position(|s| s.id == id) else { return false };
        let sub = self.subs.remove(i);
        if self.state == State::Live && matches!(sub.state, SubState::Pending | SubState::Active) {
            self.send(&Frame::Unsubscribe { id: sub.id });
        }
        true
    }

    /// Sends an event (a command, or an emitter's own event) byte for byte.
    pub fn send_event(&mut self, event: &Event) -> Result<(), ClientError> {
        if self.state != State::Live {
            return Err(ClientError::NotLive(self.state.clone()));
        }
        if self.outbox.len() >= MAX_OUTBOX {
            return Err(ClientError::Backpressure);
        }
        self.outbox.push_back(event.raw().to_owned());
        Ok(())
    }

    /// Asks the relay for its roster (AEP-0003 §4.1), only when it declared
    /// one. Returns the request id the reply echoes.
    pub fn request_roster(&mut self) -> Result<String, ClientError> {
        if self.state != State::Live {
            return Err(ClientError::NotLive(self.state.clone()));
        }
        if !self.config.role.is_consumer() {
            return Err(ClientError::RoleCannotWatch);
        }
        if !self.peer.as_ref().is_some_and(|h| h.capabilities.declares_roster()) {
            return Err(ClientError::RosterNotDeclared);
        }
        if self.outbox.len() >= MAX_OUTBOX {
            return Err(ClientError::Backpressure);
        }
        self.request_counter += 1;
        let id = format!("roster-{}", self.request_counter);
        self.send(&Frame::RosterRequest { id: id.clone() });
        Ok(id)
    }

    /// Closes deliberately: a live relay gets a `closing` frame with our
    /// delivered positions first. Nothing reconnects until
    /// [`Connection::connect`]; subscriptions are kept for then.
    pub fn close(&mut self, _now: UnixMs) {
        let had_socket = matches!(self.state, State::Connecting | State::Handshaking | State::Live);
        if self.state == State::Live {
            let delivered = self
                .subs
                .iter()
                .flat_map(|s| s.positions.to_vec().into_iter().map(|p| Delivered { sub: s.id.clone(), position: p }))
                .collect();
            self.send(&Frame::Closing(Closing { reason: "client closing".into(), delivered }));
        }
        if had_socket {
            self.actions.push_back(Action::Close { code: CLOSE_NORMAL, reason: "client closing".into() });
        }
        self.reset_socket_state();
        self.set_state(State::Closed);
    }

    /// Seeds resume positions the application kept from an earlier run;
    /// they apply to every subscription, present and future.
    pub fn restore_positions(&mut self, positions: impl IntoIterator<Item = Position>) {
        for p in positions {
            self.restored.advance(&p.session, p.at());
            self.delivered.advance(&p.session, p.at());
            for sub in &mut self.subs {
                sub.positions.advance(&p.session, p.at());
            }
        }
    }

    // ----- drains ----------------------------------------------------------

    /// The next text frame to send on the current socket.
    pub fn poll_transmit(&mut self) -> Option<String> {
        self.outbox.pop_front()
    }

    /// The next socket operation for the driver.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next notification. Taking an event advances resume positions.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        let next = self.inbox.pop_front()?;
        if let ClientEvent::Event(e) = &next {
            for sub in &mut self.subs {
                sub.observe(e);
            }
            if let (Some(session), Some(at)) = (e.session(), e.position()) {
                self.delivered.advance(session, at);
            }
        }
        Some(next)
    }

    /// When [`Connection::handle_timeout`] wants to be called next.
    pub fn poll_timeout(&self) -> Option<UnixMs> {
        match self.state {
            State::Reconnecting { at, .. } => Some(at),
            State::Connecting | State::Handshaking => self.handshake_due,
            State::Live => match (self.next_ping, self.pong_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            _ => None,
        }
    }

    // ----- inspection -----------------------------------------------------

    pub fn state(&self) -> &State {
        &self.state
    }

    /// The relay's `hello` (its capabilities), while live.
    pub fn peer_hello(&self) -> Option<&Hello> {
        self.peer.as_ref()
    }

    /// The highest position per session the application has taken: what
    /// to persist and hand back to [`Connection::restore_positions`].
    pub fn positions(&self) -> Vec<Position> {
        self.delivered.to_vec()
    }

    /// What a subscription would resume from.
    pub fn subscription_positions(&self, id: &str) -> Option<Vec<Position>> {
        self.sub(id).map(|s| s.positions.to_vec())
    }

    /// What the relay reported delivering to a subscription in `closing`.
    pub fn reported_positions(&self, id: &str) -> Option<Vec<Position>> {
        self.sub(id).map(|s| s.reported.to_vec())
    }

    pub fn subscription_state(&self, id: &str) -> Option<&SubState> {
        self.sub(id).map(|s| &s.state)
    }

    /// Notifications dropped because the application did not poll (the
    /// state is still current through [`Connection::state`]).
    pub fn dropped_notices(&self) -> u64 {
        self.dropped_notices
    }

    // ----- inbound frames -------------------------------------------------

    fn on_handshake_frame(&mut self, text: &str, now: UnixMs) {
        let frame = match Frame::decode(text) {
            Ok(f) => f,
            Err(e) => {
                self.notice(ClientEvent::Violation(e.to_string()));
                self.refuse_peer_skipped_hello("unreadable".into());
                return;
            }
        };
        match frame {
            Frame::Hello(h) => self.on_peer_hello(h, now),
            Frame::Error(e) => self.on_error(e),
            // Unknown frame types are ignored wherever they appear.
            Frame::Unknown { .. } => {}
            other => self.refuse_peer_skipped_hello(other.frame_type().to_owned()),
        }
    }

    fn on_peer_hello(&mut self, hello: Hello, now: UnixMs) {
        if hello.negotiate(&[AEP_VERSION]).is_none() {
            let farewell = Frame::Error(ErrorFrame {
                versions: Some(vec![AEP_VERSION.into()]),
                ..ErrorFrame::new(codes::VERSION_UNSUPPORTED, Some(format!("this client speaks {AEP_VERSION}")))
            });
            self.refuse(Refusal::VersionUnsupported { peer_versions: hello.versions }, Some(farewell), true);
            return;
        }
        if hello.versions.len() != 1 {
            self.notice(ClientEvent::Violation(format!(
                "the relay's hello lists {} versions; a responder selects exactly one",
                hello.versions.len()
            )));
        }
        self.peer = Some(hello);
        self.live_since = Some(now);
        self.handshake_due = None;
        self.pong_due = None;
        self.next_ping = (self.config.ping_interval_ms > 0).then(|| now + self.config.ping_interval_ms);
        self.authorization = AuthorizationCheck::NotAsked;
        self.set_state(State::Live);
        let (all, prefer_all) = (self.relay_replays_all(), self.prefers_all());
        let frames: Vec<Frame> = self
            .subs
            .iter_mut()
            .filter(|s| s.wants_sending())
            .map(|s| Frame::Subscribe(s.frame(all, prefer_all)))
            .collect();
        for f in &frames {
            self.send(f);
        }
    }

    fn on_live_frame(&mut self, text: &str, now: UnixMs) {
        let frame = match Frame::decode(text) {
            Ok(f) => f,
            Err(e) => {
                self.notice(ClientEvent::Violation(e.to_string()));
                return;
            }
        };
        match frame {
            Frame::Event(e) => self.deliver(e, now),
            Frame::Subscribed { id } => {
                if let Some(sub) = self.subs.iter_mut().find(|s| s.id == id) {
                    if sub.state == SubState::Pending {
                        sub.state = SubState::Active;
                    }
                    self.notice(ClientEvent::Subscribed { id });
                }
            }
            Frame::Unsubscribed { id } => self.notice(ClientEvent::Unsubscribed { id }),
            Frame::Roster { id, entries } => self.notice(ClientEvent::Roster { id, entries }),
            Frame::Error(e) => self.on_error(e),
            Frame::ReplayExhausted(r) => self.notice(ClientEvent::ReplayExhausted(r)),
            Frame::Closing(c) => {
                for d in &c.delivered {
                    if let Some(sub) = self.subs.iter_mut().find(|s| s.id == d.sub) {
                        sub.record_reported(&d.position);
                    }
                }
                self.notice(ClientEvent::Closing(c));
            }
            Frame::Ping { t } => {
                self.send_bounded(&Frame::Pong { t });
            }
            Frame::Pong { .. } => self.pong_due = None,
            Frame::Hello(_) => self.notice(ClientEvent::Violation("a second hello on one connection".into())),
            f @ (Frame::Subscribe(_) | Frame::Unsubscribe { .. } | Frame::RosterRequest { .. }) => {
                let why = format!("`{}` is a request to an endpoint; this client is not one", f.frame_type());
                self.notice(ClientEvent::Violation(why));
            }
            Frame::Unknown { .. } => {}
        }
    }

    /// Routes an `error` frame: to a subscription (`id`), to the command
    /// sender (`cause`), or to the connection itself.
    fn on_error(&mut self, e: ErrorFrame) {
        if let Some(id) = e.id.as_deref() {
            let (all, prefer_all) = (self.relay_replays_all(), self.prefers_all());
            if let Some(sub) = self.subs.iter_mut().find(|s| s.id == id) {
                // A relay may advertise replay-all yet refuse it; the spec's
                // fallback is enumerated positions.
                if e.code == codes::INVALID_FILTER && sub.sent_all && !sub.all_refused {
                    sub.all_refused = true;
                    let retry = Frame::Subscribe(sub.frame(all, prefer_all));
                    self.send(&retry);
                    return;
                }
                sub.state = SubState::Refused { code: e.code.clone(), detail: e.detail.clone() };
            }
            self.notice(ClientEvent::Error(e));
            return;
        }
        if e.cause.is_some() {
            self.notice(ClientEvent::Error(e));
            return;
        }
        let refusal = match e.code.as_str() {
            codes::VERSION_UNSUPPORTED => {
                Some(Refusal::VersionUnsupported { peer_versions: e.versions.clone().unwrap_or_default() })
            }
            codes::HELLO_REQUIRED => Some(Refusal::HelloRequired { detail: e.detail.clone() }),
            codes::UNAUTHORIZED => Some(Refusal::Unauthorized { detail: e.detail.clone() }),
            _ => None,
        };
        self.notice(ClientEvent::Error(e));
        if let Some(r) = refusal {
            self.refuse(r, None, true);
        }
    }

    fn deliver(&mut self, event: Event, now: UnixMs) {
        if self.inbox.len() >= MAX_INBOX {
            self.give_up(now, format!("more than {MAX_INBOX} notifications were not taken; resuming from what was"));
            return;
        }
        self.inbox.push_back(ClientEvent::Event(event));
    }

    // ----- transitions ----------------------------------------------------

    fn start_connect(&mut self, now: UnixMs) {
        self.outbox.clear();
        self.reset_socket_state();
        self.handshake_due = Some(now + self.config.handshake_timeout_ms);
        self.actions.push_back(Action::Open);
        self.set_state(State::Connecting);
    }

    /// We decided the socket is dead: close it and schedule a reconnect.
    fn give_up(&mut self, now: UnixMs, why: String) {
        self.actions.push_back(Action::Close { code: CLOSE_GAVE_UP, reason: why.clone() });
        self.drop_socket(now, why);
    }

    /// The socket is gone: schedule the next attempt with backoff.
    fn drop_socket(&mut self, now: UnixMs, why: String) {
        let stable = self.live_since.is_some_and(|t| now.since(t) >= self.config.stable_after_ms);
        self.attempt = if stable { 1 } else { self.attempt.saturating_add(1) };
        let delay = self.config.backoff.delay(self.attempt, self.jitter.next_u64());
        self.outbox.clear();
        self.reset_socket_state();
        self.notice(ClientEvent::Disconnected { reason: why });
        self.set_state(State::Reconnecting { attempt: self.attempt, at: now + delay });
    }

    fn refuse_peer_skipped_hello(&mut self, frame_type: String) {
        let farewell = Frame::Error(ErrorFrame::new(
            codes::HELLO_REQUIRED,
            Some("the first frame on a connection must be hello".into()),
        ));
        self.refuse(Refusal::PeerSkippedHello { frame_type }, Some(farewell), true);
    }

    /// Stops for good. While the socket is still open it is closed, after
    /// the `farewell` frame (our own refusal of the relay) when there is one.
    fn refuse(&mut self, reason: Refusal, farewell: Option<Frame>, socket_open: bool) {
        let socket_open = socket_open && matches!(self.state, State::Connecting | State::Handshaking | State::Live);
        self.outbox.clear();
        self.reset_socket_state();
        if socket_open {
            let code = match farewell {
                Some(f) => {
                    self.send(&f);
                    CLOSE_PROTOCOL_ERROR
                }
                None => CLOSE_NORMAL,
            };
            self.actions.push_back(Action::Close { code, reason: reason.to_string() });
        }
        self.set_state(State::Refused { reason });
    }

    /// Forgets what belonged to the current socket, except frames still
    /// to be written on it (callers that abandon the socket clear those).
    fn reset_socket_state(&mut self) {
        self.peer = None;
        self.live_since = None;
        self.handshake_due = None;
        self.next_ping = None;
        self.pong_due = None;
        for sub in &mut self.subs {
            if matches!(sub.state, SubState::Pending | SubState::Active) {
                sub.state = SubState::Waiting;
            }
        }
    }

    fn set_state(&mut self, state: State) {
        self.state = state.clone();
        self.notice(ClientEvent::StateChanged(state));
    }

    // ----- helpers --------------------------------------------------------

    fn hello(&self) -> Frame {
        let emitter = self.config.role.is_emitter();
        Frame::Hello(Hello {
            versions: vec![AEP_VERSION.into()],
            role: Some(self.config.role.clone()),
            identity: self.config.identity.clone(),
            capabilities: Capabilities {
                emits: self.config.emits.clone().filter(|_| emitter),
                control: self.config.control.clone().filter(|_| emitter),
                ..Capabilities::default()
            },
        })
    }

    fn relay_replays_all(&self) -> bool {
        self.peer.as_ref().is_some_and(|h| h.capabilities.replay_all())
    }

    fn prefers_all(&self) -> bool {
        self.config.resume == ResumePolicy::AllWhenAdvertised
    }

    fn sub(&self, id: &str) -> Option<&Subscription> {
        self.subs.iter().find(|s| s.id == id)
    }

    fn send(&mut self, frame: &Frame) {
        self.outbox.push_back(frame.encode());
    }

    /// Sends unless the driver has stopped draining; liveness frames are
    /// worthless once that far behind.
    fn send_bounded(&mut self, frame: &Frame) {
        if self.outbox.len() < MAX_OUTBOX {
            self.send(frame);
        }
    }

    fn notice(&mut self, event: ClientEvent) {
        if self.inbox.len() >= MAX_INBOX {
            self.dropped_notices += 1;
        } else {
            self.inbox.push_back(event);
        }
    }
}

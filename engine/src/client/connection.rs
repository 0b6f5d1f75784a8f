//! One relay connection's protocol state: see the module above for the
//! order a driver reports and drains in.

use std::collections::VecDeque;

use super::close::{AUTH_CLOSE_CODES, CLOSE_GAVE_UP, CLOSE_NORMAL, CLOSE_PROTOCOL_ERROR};
use super::config::{Config, ConfigError};
use super::outbox::Outbox;
use super::output::{ClientError, ClientEvent, Refusal, SocketAction, State};
use super::positions::PositionMap;
use super::subscription::{self, SubState, Subscription};
use crate::protocol::event::{Capture, Event};
use crate::protocol::filter::Filter;
use crate::protocol::frame::{codes, Capabilities, Closing, Delivered, ErrorFrame, Frame, Hello, SessionPosition};
use crate::protocol::vocabulary::ErrorCode;
use crate::protocol::AEP_VERSION;
use crate::rng::Seeded;
use crate::time::UnixMs;

/// Notifications waiting for [`Connection::poll_event`]. An event that finds
/// it full drops the socket: the relay resends from the positions the
/// application has actually taken, so falling behind costs a reconnect,
/// never an event.
pub const MAX_INBOX: usize = 4096;
/// Subscriptions per connection.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// One client connection to one relay; see the module docs for the loop.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    phase: Phase,
    /// The public face of `phase`, changed only by [`Connection::enter`].
    state: State,
    jitter: Seeded,
    /// Reconnect attempts since the last stable connection.
    attempt: u32,
    subs: Vec<Subscription>,
    sub_counter: u64,
    request_counter: u64,
    /// Positions the application restored from its own storage; every new
    /// subscription starts from them.
    restored: PositionMap,
    /// Highest position per session the application has taken, across
    /// subscriptions.
    delivered: PositionMap,
    outbox: Outbox,
    actions: VecDeque<SocketAction>,
    inbox: VecDeque<ClientEvent>,
    dropped_notices: u64,
    /// Where [`SocketAction::CheckAuthorization`] stands in this run of failures.
    authorization: AuthorizationCheck,
}

/// Where the connection is, with the deadlines that belong to that place
/// and nowhere else.
#[derive(Debug)]
enum Phase {
    Idle,
    /// The socket and then the relay's `hello` are due by `due`.
    Connecting {
        due: UnixMs,
    },
    Handshaking {
        due: UnixMs,
    },
    Live(Live),
    Reconnecting {
        attempt: u32,
        at: UnixMs,
    },
    Refused {
        reason: Refusal,
    },
    Closed,
}

#[derive(Debug)]
struct Live {
    /// The relay's `hello`.
    peer: Hello,
    since: UnixMs,
    next_ping: Option<UnixMs>,
    /// Deadline for the oldest unanswered ping.
    pong_due: Option<UnixMs>,
}

impl Phase {
    fn state(&self) -> State {
        match self {
            Phase::Idle => State::Idle,
            Phase::Connecting { .. } => State::Connecting,
            Phase::Handshaking { .. } => State::Handshaking,
            Phase::Live(_) => State::Live,
            Phase::Reconnecting { attempt, at } => State::Reconnecting { attempt: *attempt, at: *at },
            Phase::Refused { reason } => State::Refused { reason: reason.clone() },
            Phase::Closed => State::Closed,
        }
    }

    fn has_socket(&self) -> bool {
        matches!(self, Phase::Connecting { .. } | Phase::Handshaking { .. } | Phase::Live(_))
    }
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
            jitter: Seeded::new(config.jitter_seed),
            config,
            phase: Phase::Idle,
            state: State::Idle,
            attempt: 0,
            subs: Vec::new(),
            sub_counter: 0,
            request_counter: 0,
            restored: PositionMap::new(cap),
            delivered: PositionMap::new(cap),
            outbox: Outbox::default(),
            actions: VecDeque::new(),
            inbox: VecDeque::new(),
            dropped_notices: 0,
            authorization: AuthorizationCheck::NotAsked,
        })
    }

    // ----- driver reports -------------------------------------------------

    /// Starts (or, after a refusal or close, restarts) connecting.
    pub fn connect(&mut self, now: UnixMs) {
        if matches!(self.phase, Phase::Idle | Phase::Closed | Phase::Refused { .. }) {
            self.attempt = 0;
            self.authorization = AuthorizationCheck::NotAsked;
            self.start_connect(now);
        }
    }

    /// The socket asked for by [`SocketAction::Open`] is open: say hello first.
    pub fn handle_open(&mut self, _now: UnixMs) {
        let Phase::Connecting { due } = self.phase else { return };
        self.enter(Phase::Handshaking { due });
        let hello = self.hello();
        self.send(&hello);
    }

    /// One text frame from the relay.
    pub fn handle_text(&mut self, text: &str, now: UnixMs) {
        if !matches!(self.phase, Phase::Handshaking { .. } | Phase::Live(_)) {
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
        if matches!(self.phase, Phase::Handshaking { .. }) {
            self.on_handshake_frame(text, now);
        } else {
            self.on_live_frame(text, now);
        }
    }

    /// Binary frames are reserved in AEP 0.1 and rejected.
    pub fn handle_binary(&mut self, bytes: &[u8], _now: UnixMs) {
        if matches!(self.phase, Phase::Handshaking { .. } | Phase::Live(_)) {
            self.notice(ClientEvent::Violation(format!(
                "dropped a {} byte binary frame: binary frames are reserved",
                bytes.len()
            )));
        }
    }

    /// The socket closed (or failed to open). A close we asked for, or one
    /// reported after the connection moved on, is ignored.
    pub fn handle_closed(&mut self, now: UnixMs, code: u16, reason: &str) {
        if !self.phase.has_socket() {
            return;
        }
        if AUTH_CLOSE_CODES.contains(&code) || reason.to_ascii_lowercase().contains(codes::UNAUTHORIZED) {
            let detail = Some(reason.to_owned()).filter(|r| !r.is_empty());
            self.refuse(Refusal::Unauthorized { detail }, None, false);
            return;
        }
        let never_opened = matches!(self.phase, Phase::Connecting { .. });
        let why = if reason.is_empty() { format!("closed ({code})") } else { format!("closed ({code}): {reason}") };
        self.drop_socket(now, why);
        if never_opened && self.authorization == AuthorizationCheck::NotAsked {
            self.authorization = AuthorizationCheck::Asked;
            self.actions.push_back(SocketAction::CheckAuthorization);
        }
    }

    /// The answer to [`SocketAction::CheckAuthorization`]: the HTTP status the
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
        let connecting = matches!(self.phase, Phase::Reconnecting { .. } | Phase::Connecting { .. });
        if connecting && matches!(status, 401 | 403) {
            let detail = Some(format!("the relay answered HTTP {status} to this token"));
            // A socket opened meanwhile is still upgrading: it is closed.
            self.refuse(Refusal::Unauthorized { detail }, None, true);
        }
    }

    /// The timer armed from [`Connection::poll_timeout`] fired.
    pub fn handle_timeout(&mut self, now: UnixMs) {
        let (interval, patience) = (self.config.ping_interval_ms, self.config.pong_timeout_ms);
        match &mut self.phase {
            Phase::Reconnecting { at, .. } if now >= *at => self.start_connect(now),
            Phase::Connecting { due } | Phase::Handshaking { due } if now >= *due => {
                let why = format!("no hello from the relay within {} ms", self.config.handshake_timeout_ms);
                self.give_up(now, why);
            }
            Phase::Live(live) => {
                if live.pong_due.is_some_and(|d| now >= d) {
                    self.give_up(now, format!("no pong within {patience} ms"));
                    return;
                }
                if live.next_ping.is_some_and(|t| now >= t) {
                    live.next_ping = Some(now + interval);
                    live.pong_due.get_or_insert(now + patience);
                    self.send_bounded(&Frame::Ping { t: Some(now.0.into()) });
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
        if self.is_live() {
            for frame in sub.frames(self.relay_replays_all(), self.config.resume) {
                self.send(&Frame::Subscribe(frame));
            }
        }
        self.subs.push(sub);
        Ok(id)
    }

    /// Drops a subscription; the relay is told when it knows of it.
    /// Returns whether the id was known.
    pub fn unsubscribe(&mut self, id: &str) -> bool {
        let Some(i) = self.subs.iter().position(|s| s.id == id) else { return false };
        let sub = self.subs.remove(i);
        if self.is_live() && matches!(sub.state, SubState::Pending | SubState::Active) {
            if sub.catch_up_sent {
                self.send(&Frame::Unsubscribe { id: sub.catch_up_id() });
            }
            self.send(&Frame::Unsubscribe { id: sub.id });
        }
        true
    }

    /// Sends an event (a command, or an emitter's own event) byte for byte.
    /// An emitter's queued events outlive a lost socket and go out on the
    /// next one (see [`MAX_QUEUED_EVENTS`](super::MAX_QUEUED_EVENTS)), and it may queue while not live. A
    /// consumer's commands are never held for a later socket: not live is
    /// refused, and what the lost socket did not write is dropped (its
    /// sender times it out), since an approval delivered minutes later is
    /// not the one the operator gave.
    pub fn send_event(&mut self, event: &Event) -> Result<(), ClientError> {
        if !self.is_live() && !self.config.role.is_emitter() {
            return Err(ClientError::NotLive(self.state.clone()));
        }
        self.outbox.push_event(event)
    }

    /// Asks the relay for its roster (AEP-0003 §4.1), only when it declared
    /// one. Returns the request id the reply echoes.
    pub fn request_roster(&mut self) -> Result<String, ClientError> {
        if !self.is_live() {
            return Err(ClientError::NotLive(self.state.clone()));
        }
        if !self.config.role.is_consumer() {
            return Err(ClientError::RoleCannotWatch);
        }
        if !self.peer_hello().is_some_and(|h| h.capabilities.declares_roster()) {
            return Err(ClientError::RosterNotDeclared);
        }
        if !self.outbox.has_room_for_frames() {
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
        let had_socket = self.phase.has_socket();
        if self.is_live() {
            let delivered = self
                .subs
                .iter()
                .flat_map(|s| s.positions.to_vec().into_iter().map(|p| Delivered { sub: s.id.clone(), position: p }))
                .collect();
            self.send(&Frame::Closing(Closing { reason: "client closing".into(), delivered }));
        }
        if had_socket {
            self.actions.push_back(SocketAction::Close { code: CLOSE_NORMAL, reason: "client closing".into() });
        }
        self.forget_socket();
        self.enter(Phase::Closed);
    }

    /// Seeds resume positions the application kept from an earlier run;
    /// they apply to every subscription, present and future.
    pub fn restore_positions(&mut self, positions: impl IntoIterator<Item = SessionPosition>) {
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
        let live = self.is_live();
        self.outbox.pop(live)
    }

    /// The next socket operation for the driver.
    pub fn poll_action(&mut self) -> Option<SocketAction> {
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
        match &self.phase {
            Phase::Reconnecting { at, .. } => Some(*at),
            Phase::Connecting { due } | Phase::Handshaking { due } => Some(*due),
            Phase::Live(live) => match (live.next_ping, live.pong_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Phase::Idle | Phase::Refused { .. } | Phase::Closed => None,
        }
    }

    // ----- inspection -----------------------------------------------------

    pub fn state(&self) -> &State {
        &self.state
    }

    /// The relay's `hello` (its capabilities), while live.
    pub fn peer_hello(&self) -> Option<&Hello> {
        match &self.phase {
            Phase::Live(live) => Some(&live.peer),
            _ => None,
        }
    }

    fn is_live(&self) -> bool {
        matches!(self.phase, Phase::Live(_))
    }

    /// The highest position per session the application has taken: what
    /// to persist and hand back to [`Connection::restore_positions`].
    pub fn positions(&self) -> Vec<SessionPosition> {
        self.delivered.to_vec()
    }

    /// What a subscription would resume from.
    pub fn subscription_positions(&self, id: &str) -> Option<Vec<SessionPosition>> {
        self.sub(id).map(|s| s.positions.to_vec())
    }

    /// What the relay reported delivering to a subscription in `closing`.
    pub fn reported_positions(&self, id: &str) -> Option<Vec<SessionPosition>> {
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

    /// Events waiting for a live socket.
    pub fn queued_events(&self) -> usize {
        self.outbox.queued_events()
    }

    /// `debug`/`info` events dropped to make room in a full queue
    /// (AEP-0003 §8.4).
    pub fn dropped_events(&self) -> u64 {
        self.outbox.dropped_events()
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
        let next_ping = (self.config.ping_interval_ms > 0).then(|| now + self.config.ping_interval_ms);
        self.authorization = AuthorizationCheck::NotAsked;
        self.enter(Phase::Live(Live { peer: hello, since: now, next_ping, pong_due: None }));
        let (all, policy) = (self.relay_replays_all(), self.config.resume);
        let frames: Vec<Frame> = self
            .subs
            .iter_mut()
            .filter(|s| s.wants_sending())
            .flat_map(|s| s.frames(all, policy))
            .map(Frame::Subscribe)
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
                // A catch-up companion is the connection's own business.
                if let Some(sub) = self.subs.iter_mut().find(|s| s.answers_to(&id) == Some(false)) {
                    if sub.state == SubState::Pending {
                        sub.state = SubState::Active;
                    }
                    self.notice(ClientEvent::Subscribed { id });
                }
            }
            Frame::Unsubscribed { id } if !id.ends_with(subscription::CATCH_UP_SUFFIX) => {
                self.notice(ClientEvent::Unsubscribed { id });
            }
            Frame::Unsubscribed { .. } => {}
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
            Frame::Pong { .. } => {
                if let Phase::Live(live) = &mut self.phase {
                    live.pong_due = None;
                }
            }
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
            let (all, policy) = (self.relay_replays_all(), self.config.resume);
            let found = self.subs.iter_mut().find_map(|s| s.answers_to(id).map(|companion| (s, companion)));
            if let Some((sub, companion)) = found {
                // A relay may advertise replay-all yet refuse it; the spec's
                // fallback is enumerated positions (the companion only
                // ever asks for all, so it is simply not asked again).
                if e.registered_code() == Some(ErrorCode::InvalidFilter)
                    && (sub.sent_all || companion)
                    && !sub.all_refused
                {
                    sub.all_refused = true;
                    if companion {
                        sub.catch_up_sent = false;
                        return;
                    }
                    let retry: Vec<Frame> = sub.frames(all, policy).into_iter().map(Frame::Subscribe).collect();
                    for frame in &retry {
                        self.send(frame);
                    }
                    return;
                }
                if companion {
                    sub.catch_up_sent = false;
                } else {
                    sub.state = SubState::Refused { code: e.code.clone(), detail: e.detail.clone() };
                }
            }
            self.notice(ClientEvent::Error(e));
            return;
        }
        if e.cause.is_some() {
            self.notice(ClientEvent::Error(e));
            return;
        }
        let refusal = match e.registered_code() {
            Some(ErrorCode::VersionUnsupported) => {
                Some(Refusal::VersionUnsupported { peer_versions: e.versions.clone().unwrap_or_default() })
            }
            Some(ErrorCode::HelloRequired) => Some(Refusal::HelloRequired { detail: e.detail.clone() }),
            Some(ErrorCode::Unauthorized) => Some(Refusal::Unauthorized { detail: e.detail.clone() }),
            _ => None,
        };
        self.notice(ClientEvent::Error(e));
        if let Some(r) = refusal {
            self.refuse(r, None, true);
        }
    }

    fn deliver(&mut self, event: Event, now: UnixMs) {
        if self.already_taken(&event) {
            return;
        }
        if self.inbox.len() >= MAX_INBOX {
            self.give_up(now, format!("more than {MAX_INBOX} notifications were not taken; resuming from what was"));
            return;
        }
        self.inbox.push_back(ClientEvent::Event(event));
    }

    /// Whether the event is at or below a position the application restored
    /// from an earlier run: it said it had processed those, so what a
    /// catch-up replays of them is not delivered again (resume is "strictly
    /// after", AEP-0003 §7). Within a run, redeliveries do reach the
    /// application (a re-sent ack settles a retried command) and its dedupe
    /// on `(source, id)` absorbs them.
    fn already_taken(&self, event: &Event) -> bool {
        let (Some(session), Some(at)) = (event.session(), event.position()) else { return false };
        self.restored.get(session).is_some_and(|before| at <= before)
    }

    // ----- transitions ----------------------------------------------------

    fn start_connect(&mut self, now: UnixMs) {
        self.outbox.drop_socket(self.config.role.is_emitter());
        self.forget_socket();
        self.actions.push_back(SocketAction::Open);
        self.enter(Phase::Connecting { due: now + self.config.handshake_timeout_ms });
    }

    /// We decided the socket is dead: close it and schedule a reconnect.
    fn give_up(&mut self, now: UnixMs, why: String) {
        self.actions.push_back(SocketAction::Close { code: CLOSE_GAVE_UP, reason: why.clone() });
        self.drop_socket(now, why);
    }

    /// The socket is gone: schedule the next attempt with backoff.
    fn drop_socket(&mut self, now: UnixMs, why: String) {
        let stable = matches!(&self.phase, Phase::Live(l) if now.since(l.since) >= self.config.stable_after_ms);
        self.attempt = if stable { 1 } else { self.attempt.saturating_add(1) };
        let delay = self.config.backoff.delay(self.attempt, self.jitter.next_u64());
        self.outbox.drop_socket(self.config.role.is_emitter());
        self.forget_socket();
        self.notice(ClientEvent::Disconnected { reason: why });
        self.enter(Phase::Reconnecting { attempt: self.attempt, at: now + delay });
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
        let socket_open = socket_open && self.phase.has_socket();
        self.outbox.drop_socket(self.config.role.is_emitter());
        self.forget_socket();
        if socket_open {
            let code = match farewell {
                Some(f) => {
                    self.send(&f);
                    CLOSE_PROTOCOL_ERROR
                }
                None => CLOSE_NORMAL,
            };
            self.actions.push_back(SocketAction::Close { code, reason: reason.to_string() });
        }
        self.enter(Phase::Refused { reason });
    }

    /// Subscriptions wait for the next socket (the phase that leaves
    /// carries the socket's deadlines and peer away with it; frames still
    /// to be written are the caller's to keep or drop).
    fn forget_socket(&mut self) {
        for sub in &mut self.subs {
            if matches!(sub.state, SubState::Pending | SubState::Active) {
                sub.state = SubState::Waiting;
            }
            sub.catch_up_sent = false;
        }
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.state = self.phase.state();
        self.notice(ClientEvent::StateChanged(self.state.clone()));
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
        self.peer_hello().is_some_and(|h| h.capabilities.replay_all())
    }

    fn sub(&self, id: &str) -> Option<&Subscription> {
        self.subs.iter().find(|s| s.id == id)
    }

    fn send(&mut self, frame: &Frame) {
        self.outbox.push_frame(frame.encode());
    }

    /// Sends unless the driver has stopped draining; liveness frames are
    /// worthless once that far behind.
    fn send_bounded(&mut self, frame: &Frame) {
        if self.outbox.has_room_for_frames() {
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

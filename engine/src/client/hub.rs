//! The multi-relay client core, sans-IO: one [`Connection`] per relay
//! (each labelled), one [`Store`] folding what all of them deliver, and one
//! [`ControlSender`] following the commands this client issues.
//!
//! A driver (the browser's, tokio's, a test) owns the sockets, one per
//! relay, and one timer, and runs the hub through [`SocketDriven`]: it
//! reports each relay's socket events by [`RelayId`], then drains frames
//! per relay, socket actions per relay and [`HubChange`]s, and arms one
//! timer.
//!
//! Commands are sent on the connection of the relay where their target
//! session was seen (the card's relay for an answer, then relays whose
//! roster lists the session, then relays whose events carried it, most
//! recent first). When none of those connections is live the command is
//! refused with [`HubError::NotLive`]: it is never queued against a dead
//! socket, so a person never believes an answer is on its way when it is
//! not. The ack window is what the target declared in the relay's roster
//! (`control.ack_window_ms`), else [`HubConfig::ack_window_ms`], else the
//! protocol default.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use serde_json::{Map, Value};

use super::config::{Config, ConfigError};
use super::connection::Connection;
use super::driven::SocketDriven;
use super::output::{ClientError, ClientEvent, SocketAction, State};
use crate::control::answer::request::check_shape;
use crate::control::answer::{Answer, Mismatch};
use crate::control::sender::{Address, CancelScope, Command, CommandError, CommandUpdate, ControlSender, RetryError};
use crate::protocol::event::{Capture, Event};
use crate::protocol::filter::Filter;
use crate::protocol::frame::{ErrorFrame, ReplayExhausted, RosterEntry, SessionPosition};
use crate::protocol::ids::{BuildError, Draft, Identity};
use crate::protocol::kind::{is_vendor_command_type, EventKind};
use crate::protocol::validate::check_type_name;
use crate::rng::Seeded;
use crate::store::{self, Store, StoreConfig};
use crate::time::UnixMs;

mod outcomes;
mod route;
mod url;

pub use outcomes::WATCHED_COMMANDS;
pub use route::{RelayId, MAX_ROUTED_SESSIONS};
pub use url::{check_url, relay_label, socket_url, RelayAddress, UrlError, DEFAULT_SOCKET_PATH, TOKEN_PARAM};

use crate::protocol::vocabulary::{ErrorCode, EventType};
use outcomes::OutcomeWatch;
use route::RouteTable;

/// Changes queued for [`SocketDriven::poll_change`]; beyond this the oldest are
/// dropped and counted ([`Hub::dropped_changes`]): re-read the state then.
pub const MAX_CHANGES: usize = 8192;
/// Roster entries kept per relay.
pub const MAX_ROSTER_ENTRIES: usize = 4096;
/// Relays one hub connects to.
pub const MAX_RELAYS: usize = 16;
/// Command ids whose relay is remembered (for retries), beyond the
/// sender's own bounds.
const MAX_COMMAND_ROUTES: usize = 2048;

/// One relay to connect to.
#[derive(Clone, Debug)]
pub struct RelaySpec {
    /// Shown to people and attached to what the relay delivers. Must not
    /// contain secrets (see [`relay_label`]).
    pub label: String,
    pub config: Config,
}

/// What the hub is and how it watches.
#[derive(Clone, Debug)]
pub struct HubConfig {
    /// The `source` and `agent` commands are sent as.
    pub identity: Identity,
    /// What each relay is asked for.
    pub filter: Filter,
    /// Capture ceiling asked of each relay.
    pub capture: Option<Capture>,
    /// Ack window for targets that declared none.
    pub ack_window_ms: Option<u64>,
    pub store: StoreConfig,
    /// Seeds the randomness of command ids, once: the engine has none of
    /// its own, so the driver gives each hub a fresh random seed (as it
    /// does an agent's).
    pub seed: u64,
}

impl HubConfig {
    pub fn new(identity: Identity, seed: u64) -> HubConfig {
        HubConfig {
            identity,
            filter: Filter::match_all(),
            capture: None,
            ack_window_ms: None,
            store: StoreConfig::default(),
            seed,
        }
    }
}

/// Who a command is for (its [`Address`]) and, when the caller chooses,
/// the relay (a label) it goes through instead of the routed one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipient {
    pub to: Address,
    pub relay: Option<String>,
}

impl Recipient {
    pub fn session(session: impl Into<String>) -> Recipient {
        Recipient { to: Address::session(session), relay: None }
    }

    pub fn run(mut self, run: impl Into<String>) -> Recipient {
        self.to = self.to.with_run(run);
        self
    }

    pub fn via(mut self, relay: impl Into<String>) -> Recipient {
        self.relay = Some(relay.into());
        self
    }
}

/// Why the hub did not do what it was asked.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HubError {
    #[error("no relay to connect to")]
    NoRelays,
    #[error("{0} relays given; at most {MAX_RELAYS} are supported")]
    TooManyRelays(usize),
    #[error("two relays are labelled `{0}`")]
    DuplicateLabel(String),
    #[error("relay `{relay}`: {error}")]
    Config { relay: String, error: ConfigError },
    #[error("no relay labelled `{0}`")]
    UnknownRelay(String),
    /// No card for this request id is held.
    #[error("no attention request `{0}` is known")]
    UnknownRequest(String),
    /// The request declared `respond_via` without `control`.
    #[error("attention request `{0}` does not take answers over control (respond_via excludes it)")]
    NotOverControl(String),
    /// The session was never seen and several relays could carry it.
    #[error("session `{0}` was not seen on any relay; name the relay to send the command through")]
    NoRoute(String),
    /// The relay the command would go through is not connected; the
    /// command was not sent.
    #[error("relay `{relay}` is not connected ({}); the command was not sent", .state.name())]
    NotLive { relay: String, state: State },
    /// The relay's socket is not draining; the command was not sent.
    #[error("relay `{relay}` is not keeping up; the command was not sent")]
    Backpressure { relay: String },
    /// The relay said this connection's credential may watch but not
    /// command (it holds no `operator` role); the command was not sent.
    #[error("relay `{relay}` lets this credential watch, not command; the command was not sent")]
    NotPermitted { relay: String },
    #[error(transparent)]
    Command(CommandError),
    /// `command` takes vendor types `x.{vendor}.control.{verb}`.
    #[error("`{0}` is not a vendor command type x.{{vendor}}.control.{{verb}}")]
    NotVendorCommand(String),
    #[error(transparent)]
    Build(BuildError),
    #[error("no command `{0}` is being followed")]
    UnknownCommand(String),
    #[error(transparent)]
    Retry(RetryError),
    /// The relay did not declare rosters, or this connection may not ask.
    #[error("relay `{relay}`: {error}")]
    Roster { relay: String, error: ClientError },
    #[error("relay `{relay}`: {error}")]
    Subscribe { relay: String, error: ClientError },
    /// A command with this id is already being followed.
    #[error("command `{0}` is already being followed")]
    DuplicateCommand(String),
    /// The answer does not fit the request (an option it does not offer,
    /// values that fail its form): refused before anything is sent.
    #[error("the answer does not fit the request: {}", .0.detail())]
    InvalidAnswer(Mismatch),
}

/// What changed; read the current state through the hub's queries.
// Events are the common variant; boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum HubChange {
    /// A relay connection changed state.
    Status { relay: RelayId, state: State },
    /// A relay connection was lost; a reconnect is scheduled.
    Disconnected { relay: RelayId, reason: String },
    /// A relay `error` frame that refused none of our commands (a
    /// subscription, a roster request, the connection).
    RelayError { relay: RelayId, error: ErrorFrame },
    /// Resume predated the relay's buffer.
    ReplayExhausted { relay: RelayId, info: ReplayExhausted },
    /// The relay announced an orderly close.
    Closing { relay: RelayId, reason: String },
    /// A fresh roster from a relay (the answer to request `request`).
    Roster { relay: RelayId, request: String },
    /// An event folded for the first time (duplicates are not repeated).
    Event { relay: RelayId, event: Event },
    /// A card, session, command chain or stream violation changed.
    Store(store::Change),
    /// One of this client's commands moved on.
    Command(CommandUpdate),
    /// A relay sent something this engine could not accept.
    Violation { relay: RelayId, detail: String },
}

#[derive(Debug, Default)]
struct Roster {
    /// Every claim, as the relay listed it: a session claimed by two live
    /// connections appears twice (AEP-0003 §4.1 rule 5), never merged.
    entries: Vec<RosterEntry>,
    /// The request in flight, if any.
    asked: Option<String>,
    /// Something changed since the request in flight was sent.
    stale: bool,
    /// `entries` were answered on the current connection: what the relay
    /// knows now, not what it knew before it went away.
    current: bool,
    /// When an event from a session `entries` left out last asked again.
    reasked_at: Option<UnixMs>,
}

/// Whether a session's agent can take commands now, by the rosters of the
/// live relays (AEP-0003 §4.1: a session a roster leaves out has no live
/// claimant, and a command to it would be refused `no-route`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// No live relay has answered a roster on its current connection (or
    /// none declares rosters): not known.
    Unknown,
    /// A live relay's roster lists it, claimed by `claims` connections
    /// (above one, the relay refuses commands to it as `ambiguous`).
    Listed { claims: usize },
    /// Every live relay that answered a roster leaves it out: its agent is
    /// not connected, and nothing sent to it now can reach it.
    Unlisted,
}

/// An event from a session the roster left out asks for a fresh roster (its
/// agent is back: a claim is made by emitting) at most this often.
const ROSTER_REASK_MS: u64 = 1_000;

#[derive(Debug)]
struct Relay {
    label: String,
    conn: Connection,
    roster: Roster,
    /// Only when the application's filter is narrower than everything.
    outcomes: Option<OutcomeWatch>,
}

/// The multi-relay client; see the module documentation.
pub struct Hub {
    relays: Vec<Relay>,
    store: Store,
    sender: ControlSender,
    ack_window_ms: Option<u64>,
    routes: RouteTable,
    command_relays: HashMap<String, RelayId>,
    changes: VecDeque<HubChange>,
    dropped: u64,
    /// The random part of command ids.
    ids: Seeded,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("relays", &self.relays.iter().map(|r| (&r.label, r.conn.state())).collect::<Vec<_>>())
            .field("store", &self.store.counts())
            .field("commands", &self.sender.len())
            .field("changes", &self.changes.len())
            .finish()
    }
}

impl Hub {
    /// Sets up one connection per relay, each subscribed with the
    /// configured filter and capture. Nothing happens until [`Hub::connect`].
    pub fn new(config: HubConfig, relays: Vec<RelaySpec>) -> Result<Hub, HubError> {
        if relays.is_empty() {
            return Err(HubError::NoRelays);
        }
        if relays.len() > MAX_RELAYS {
            return Err(HubError::TooManyRelays(relays.len()));
        }
        let mut out: Vec<Relay> = Vec::with_capacity(relays.len());
        for spec in relays {
            if out.iter().any(|r| r.label == spec.label) {
                return Err(HubError::DuplicateLabel(spec.label));
            }
            let mut conn =
                Connection::new(spec.config).map_err(|error| HubError::Config { relay: spec.label.clone(), error })?;
            // A fresh connection has room for the one subscription.
            conn.subscribe(config.filter.clone(), config.capture)
                .map_err(|error| HubError::Subscribe { relay: spec.label.clone(), error })?;
            let outcomes = (config.filter != Filter::match_all()).then(OutcomeWatch::default);
            out.push(Relay { label: spec.label, conn, roster: Roster::default(), outcomes });
        }
        let mut ids = Seeded::new(config.seed ^ 0x6a09_e667_f3bc_c908);
        Ok(Hub {
            relays: out,
            store: Store::new(config.store),
            sender: ControlSender::new(config.identity, ids.split()),
            ack_window_ms: config.ack_window_ms,
            routes: RouteTable::new(MAX_ROUTED_SESSIONS),
            command_relays: HashMap::new(),
            changes: VecDeque::new(),
            dropped: 0,
            ids,
        })
    }

    // ----- lifecycle ------------------------------------------------------

    /// Starts connecting every relay (again, after a close or refusal).
    pub fn connect(&mut self, now: UnixMs) {
        for id in 0..self.relays.len() {
            self.relays[id].conn.connect(now);
            self.pump(id, now);
        }
    }

    /// Closes every relay deliberately; nothing reconnects until
    /// [`Hub::connect`].
    pub fn close(&mut self, now: UnixMs) {
        for id in 0..self.relays.len() {
            self.relays[id].conn.close(now);
            self.pump(id, now);
        }
    }

    /// Changes dropped because nobody drained them.
    pub fn dropped_changes(&self) -> u64 {
        self.dropped
    }

    // ----- intents ----------------------------------------------------------

    /// Answers the attention request `request` (the `attention.requested`
    /// id). Goes through the relay the request arrived on when it is live.
    /// Returns the command id.
    pub fn respond(&mut self, request: &str, answer: Answer, now: UnixMs) -> Result<String, HubError> {
        let card = self
            .store
            .cards()
            .filter(|c| c.id() == request)
            .max_by_key(|c| c.needs_answer())
            .ok_or_else(|| HubError::UnknownRequest(request.to_owned()))?;
        if let Some(r) = card.request() {
            if !r.accepts_control() {
                return Err(HubError::NotOverControl(request.to_owned()));
            }
            let form = (!r.fields.is_empty()).then_some(&r.fields[..]);
            check_shape(&r.options, form, &answer).map_err(HubError::InvalidAnswer)?;
        }
        let session = card.session().name.to_string();
        let run = card.request().and_then(|r| r.run.clone());
        let hint = card.request().and_then(|r| r.relay.as_deref()).and_then(|l| self.relay_id(l));
        let relay = self.route(&session, None, hint)?;
        let to = Address { session, run };
        let command = Command::Respond { request: request.to_owned(), answer };
        let event = command.build(&self.identity_on(relay), &to, self.next_id(now), now).map_err(HubError::Command)?;
        self.dispatch(relay, event, now)
    }

    /// Sends a core command (cancel, pause, resume; respond goes through
    /// [`Hub::respond`]). Returns the command id.
    pub fn command(&mut self, target: &Recipient, command: &Command, now: UnixMs) -> Result<String, HubError> {
        let relay = self.route(&target.to.session, target.relay.as_deref(), None)?;
        let id = self.next_id(now);
        let event = command.build(&self.identity_on(relay), &target.to, id, now).map_err(HubError::Command)?;
        self.dispatch(relay, event, now)
    }

    pub fn cancel(
        &mut self,
        target: &Recipient,
        scope: CancelScope,
        reason: Option<String>,
        now: UnixMs,
    ) -> Result<String, HubError> {
        self.command(target, &Command::Cancel { scope, reason }, now)
    }

    pub fn pause(&mut self, target: &Recipient, now: UnixMs) -> Result<String, HubError> {
        self.command(target, &Command::Pause, now)
    }

    pub fn resume(&mut self, target: &Recipient, now: UnixMs) -> Result<String, HubError> {
        self.command(target, &Command::Resume, now)
    }

    /// Sends a vendor command `x.{vendor}.control.{verb}` with `data`; the
    /// payload is the vendor's, so `capture` states its level.
    pub fn vendor(
        &mut self,
        ty: &str,
        target: &Recipient,
        subject: Option<&str>,
        data: Map<String, Value>,
        capture: Capture,
        now: UnixMs,
    ) -> Result<String, HubError> {
        if !is_vendor_command_type(ty) || check_type_name(ty).is_err() {
            return Err(HubError::NotVendorCommand(ty.to_owned()));
        }
        let relay = self.route(&target.to.session, target.relay.as_deref(), None)?;
        let mut draft = Draft::new(ty).session(target.to.session.clone()).maybe_run(target.to.run.clone());
        if let Some(s) = subject {
            draft = draft.subject(s);
        }
        let event = draft
            .capture(capture)
            .data(Value::Object(data))
            .build(&self.identity_on(relay), self.next_id(now), now)
            .map_err(HubError::Build)?;
        self.dispatch(relay, event, now)
    }

    /// A fresh command id.
    fn next_id(&mut self, now: UnixMs) -> String {
        self.ids.event_id(now)
    }

    /// Who a command sent on `relay` comes from: the hub's identity, or,
    /// when that relay named the principal of this connection's credential,
    /// that name (the only `agent` the relay accepts from it), under the
    /// hub's source with the name in place of its own.
    fn identity_on(&self, relay: RelayId) -> Identity {
        let own = self.sender.identity();
        let named = self.relays.get(relay).and_then(|r| r.conn.peer_hello()).and_then(|h| h.capabilities.principal());
        match named {
            Some(name) if name != own.agent => {
                let base = own.source.split("/agent/").next().unwrap_or(&own.source);
                Identity::new(format!("{base}/agent/{}", crate::protocol::ids::encode(name)), name)
            }
            _ => own.clone(),
        }
    }

    /// Sends a command again with the same id and bytes (until an ack is
    /// seen), through the relay its session is now best reached on.
    pub fn retry(&mut self, id: &str, now: UnixMs) -> Result<(), HubError> {
        let tracked = self.sender.get(id).ok_or_else(|| HubError::UnknownCommand(id.to_owned()))?;
        if tracked.state().ack().is_some() {
            return Err(HubError::Retry(RetryError::AlreadyDecided(id.to_owned())));
        }
        let event = tracked.command().clone();
        let hint = self.command_relays.get(id).copied();
        let relay = self.route(event.session().unwrap_or_default(), None, hint)?;
        self.send_on(relay, &event)?;
        self.sender.retry(id, now).map_err(HubError::Retry)?;
        self.discard_sender_transmits();
        self.command_relays.insert(id.to_owned(), relay);
        self.drain_sender();
        Ok(())
    }

    /// Asks `relay` for a fresh roster; the answer arrives as
    /// [`HubChange::Roster`] with the returned request id (the one already
    /// in flight, when there is one).
    pub fn request_roster(&mut self, relay: RelayId) -> Result<String, HubError> {
        let r = self.relays.get_mut(relay).ok_or_else(|| HubError::UnknownRelay(relay.to_string()))?;
        if let Some(asked) = &r.roster.asked {
            return Ok(asked.clone());
        }
        let label = r.label.clone();
        let id = r.conn.request_roster().map_err(|error| match error {
            ClientError::NotLive(state) => HubError::NotLive { relay: label.clone(), state },
            error => HubError::Roster { relay: label.clone(), error },
        })?;
        r.roster.asked = Some(id.clone());
        r.roster.stale = false;
        Ok(id)
    }

    /// Seeds `relay`'s resume positions (kept from an earlier run).
    pub fn restore_positions(&mut self, relay: RelayId, positions: impl IntoIterator<Item = SessionPosition>) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.restore_positions(positions);
        }
    }

    // ----- queries ----------------------------------------------------------

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The commands this client sent, as the sender follows them.
    pub fn sender(&self) -> &ControlSender {
        &self.sender
    }

    pub fn relay_count(&self) -> usize {
        self.relays.len()
    }

    pub fn label(&self, relay: RelayId) -> Option<&str> {
        self.relays.get(relay).map(|r| r.label.as_str())
    }

    pub fn relay_id(&self, label: &str) -> Option<RelayId> {
        self.relays.iter().position(|r| r.label == label)
    }

    pub fn state(&self, relay: RelayId) -> Option<&State> {
        self.relays.get(relay).map(|r| r.conn.state())
    }

    pub fn connection(&self, relay: RelayId) -> Option<&Connection> {
        self.relays.get(relay).map(|r| &r.conn)
    }

    /// The latest roster `relay` answered with: one entry per live claim.
    pub fn roster(&self, relay: RelayId) -> impl Iterator<Item = &RosterEntry> + '_ {
        self.relays.get(relay).into_iter().flat_map(|r| r.roster.entries.iter())
    }

    /// The claims of `session` in `relay`'s latest roster. More than one is
    /// ambiguity: the relay refuses commands to the session (`ambiguous`)
    /// until one claimant leaves, so no verb should be offered.
    pub fn claims<'a>(&'a self, relay: RelayId, session: &'a str) -> impl Iterator<Item = &'a RosterEntry> + 'a {
        self.roster(relay).filter(move |e| e.session == session)
    }

    /// Whether `session`'s agent can take commands now ([`Reach`]): listed
    /// by some live relay's roster; unlisted only when every live relay has
    /// answered and none lists it (one still to answer may carry it).
    pub fn reach(&self, session: &str) -> Reach {
        let (mut answered, mut waiting) = (false, false);
        for r in self.relays.iter().filter(|r| r.conn.state() == &State::Live) {
            if !r.roster.current {
                waiting = true;
                continue;
            }
            answered = true;
            let claims = r.roster.entries.iter().filter(|e| e.session == session).count();
            if claims > 0 {
                return Reach::Listed { claims };
            }
        }
        if answered && !waiting {
            Reach::Unlisted
        } else {
            Reach::Unknown
        }
    }

    /// Whether `relay` lets this connection send commands, as its hello
    /// said (`None`: it did not say, or has not greeted yet).
    pub fn may_command(&self, relay: RelayId) -> Option<bool> {
        self.relays.get(relay)?.conn.peer_hello()?.capabilities.may_command()
    }

    /// Whether an answer to `request` may be sent at all: `Some(false)` when
    /// the relay it would go through said this credential may not command
    /// (a viewer's console shows requests read-only); `None` when that is
    /// not known yet.
    pub fn may_answer(&self, request: &str) -> Option<bool> {
        let card = self.store.cards().find(|c| c.id() == request)?;
        let hint = card.request().and_then(|r| r.relay.as_deref()).and_then(|l| self.relay_id(l));
        let relay = self.route(&card.session().name, None, hint).ok()?;
        self.may_command(relay)
    }

    /// The relay a command of ours was (last) sent through.
    pub fn command_relay(&self, id: &str) -> Option<RelayId> {
        self.command_relays.get(id).copied()
    }

    /// Resume positions taken from `relay`: what to persist.
    pub fn positions(&self, relay: RelayId) -> Vec<SessionPosition> {
        self.relays.get(relay).map(|r| r.conn.positions()).unwrap_or_default()
    }

    /// The ack window a command to `session` through `relay` gets.
    pub fn ack_window_for(&self, relay: RelayId, session: &str) -> u64 {
        crate::control::sender::ack_window(self.declared_window(relay, session))
    }

    // ----- internals --------------------------------------------------------

    /// Drains one connection's notifications into the store, the sender
    /// and the change feed.
    fn pump(&mut self, relay: RelayId, now: UnixMs) {
        while let Some(notice) = self.relays[relay].conn.poll_event() {
            match notice {
                ClientEvent::StateChanged(state) => {
                    let live = state == State::Live;
                    if !live {
                        let roster = &mut self.relays[relay].roster;
                        roster.asked = None;
                        roster.current = false;
                    }
                    self.push(HubChange::Status { relay, state });
                    if live {
                        self.refresh_roster(relay);
                    }
                }
                ClientEvent::Disconnected { reason } => self.push(HubChange::Disconnected { relay, reason }),
                ClientEvent::Event(event) => self.on_event(relay, event, now),
                ClientEvent::Subscribed { .. } | ClientEvent::Unsubscribed { .. } => {}
                ClientEvent::Error(error) => self.on_error(relay, error, now),
                ClientEvent::Roster { id, entries } => self.on_roster(relay, id, entries),
                ClientEvent::ReplayExhausted(info) => self.push(HubChange::ReplayExhausted { relay, info }),
                ClientEvent::Closing(c) => self.push(HubChange::Closing { relay, reason: c.reason }),
                ClientEvent::Violation(detail) => self.push(HubChange::Violation { relay, detail }),
            }
        }
    }

    fn on_event(&mut self, relay: RelayId, event: Event, now: UnixMs) {
        if let Some(session) = event.session() {
            self.routes.see(session, relay);
        }
        // A sequenced event from a session the roster left out: its agent
        // claims it again (a claim is made by emitting), so the roster is
        // out of date.
        let unlisted = event.seq().is_some()
            && event.session().is_some_and(|s| {
                let roster = &self.relays[relay].roster;
                roster.current && !roster.entries.iter().any(|e| e.session == s)
            });
        let reask = unlisted && self.relays[relay].roster.reasked_at.is_none_or(|at| now.since(at) >= ROSTER_REASK_MS);
        if reask {
            self.relays[relay].roster.reasked_at = Some(now);
        }
        let ask_roster = reask || event.kind() == EventKind::Core(EventType::SessionStarted);
        self.sender.handle_event(&event, now);
        self.fold(relay, event, now);
        self.drain_sender();
        // A new session's claimant is live now: learn its declared window.
        if ask_roster {
            self.refresh_roster(relay);
        }
    }

    fn fold(&mut self, relay: RelayId, event: Event, now: UnixMs) {
        let label = self.relays[relay].label.as_str();
        if self.store.apply(event.clone(), Some(label), now) == store::Folded::New {
            self.push(HubChange::Event { relay, event });
        }
        while let Some(change) = self.store.poll_change() {
            self.push(HubChange::Store(change));
        }
    }

    fn on_error(&mut self, relay: RelayId, error: ErrorFrame, now: UnixMs) {
        if let Some(cause) = error.cause.as_deref() {
            if self.sender.handle_relay_error(cause, &error.code, error.detail.as_deref(), now) {
                self.drain_sender();
                // The relay found no agent where the roster had one: the
                // roster is out of date for every card of that agent.
                if error.registered_code() == Some(ErrorCode::NoRoute) {
                    self.refresh_roster(relay);
                }
                return;
            }
        }
        let roster = &mut self.relays[relay].roster;
        if error.id.is_some() && error.id == roster.asked {
            roster.asked = None;
        }
        self.push(HubChange::RelayError { relay, error });
    }

    fn on_roster(&mut self, relay: RelayId, id: String, entries: Vec<RosterEntry>) {
        let roster = &mut self.relays[relay].roster;
        roster.entries = entries;
        roster.entries.truncate(MAX_ROSTER_ENTRIES);
        roster.current = true;
        let sessions: Vec<String> = roster.entries.iter().map(|e| e.session.clone()).collect();
        let again = roster.asked.as_deref() == Some(&id) && roster.stale;
        if roster.asked.as_deref() == Some(&id) {
            roster.asked = None;
        }
        for s in &sessions {
            self.routes.see(s, relay);
        }
        self.push(HubChange::Roster { relay, request: id });
        if again {
            self.refresh_roster(relay);
        }
    }

    /// Asks for a roster unless one is in flight (then asks again after it).
    fn refresh_roster(&mut self, relay: RelayId) {
        let r = &mut self.relays[relay];
        if r.roster.asked.is_some() {
            r.roster.stale = true;
            return;
        }
        let declared = r.conn.peer_hello().is_some_and(|h| h.capabilities.declares_roster());
        if r.conn.state() == &State::Live && declared {
            if let Ok(id) = r.conn.request_roster() {
                r.roster.asked = Some(id);
                r.roster.stale = false;
            }
        }
    }

    /// The relay a command for `session` goes through: `label` when named;
    /// else the first live one of `hint`, relays whose roster lists the
    /// session, relays whose events carried it (most recent first).
    fn route(&self, session: &str, label: Option<&str>, hint: Option<RelayId>) -> Result<RelayId, HubError> {
        if let Some(label) = label {
            return self.relay_id(label).ok_or_else(|| HubError::UnknownRelay(label.to_owned()));
        }
        let listed = (0..self.relays.len()).filter(|id| self.claims(*id, session).next().is_some());
        let mut candidates: Vec<RelayId> = hint.into_iter().chain(listed).collect();
        candidates.extend(self.routes.relays(session).iter().copied());
        if let Some(live) = candidates.iter().find(|id| self.relays[**id].conn.state() == &State::Live) {
            return Ok(*live);
        }
        match candidates.first() {
            Some(first) => Ok(*first),
            None if self.relays.len() == 1 => Ok(0),
            None => Err(HubError::NoRoute(session.to_owned())),
        }
    }

    /// The sole claimant's declared ack window (with several claimants
    /// the command is refused anyway).
    fn declared_window(&self, relay: RelayId, session: &str) -> Option<u64> {
        let mut claims = self.claims(relay, session);
        let sole = claims.next().filter(|_| claims.next().is_none());
        sole.and_then(|e| e.control.as_ref()).and_then(|c| c.ack_window_ms).or(self.ack_window_ms)
    }

    fn send_on(&mut self, relay: RelayId, event: &Event) -> Result<(), HubError> {
        let r = &mut self.relays[relay];
        if r.conn.state() != &State::Live {
            return Err(HubError::NotLive { relay: r.label.clone(), state: r.conn.state().clone() });
        }
        if r.conn.peer_hello().and_then(|h| h.capabilities.may_command()) == Some(false) {
            return Err(HubError::NotPermitted { relay: r.label.clone() });
        }
        if let Some(watch) = &mut r.outcomes {
            watch.watch(&mut r.conn, event.id());
        }
        r.conn.send_event(event).map_err(|e| match e {
            ClientError::NotLive(state) => HubError::NotLive { relay: r.label.clone(), state },
            _ => HubError::Backpressure { relay: r.label.clone() },
        })
    }

    /// Sends a built command, then follows it and folds it, so its audit
    /// chain starts before the relay echoes it.
    fn dispatch(&mut self, relay: RelayId, event: Event, now: UnixMs) -> Result<String, HubError> {
        let id = event.id().to_owned();
        if self.sender.get(&id).is_some() {
            return Err(HubError::DuplicateCommand(id));
        }
        self.send_on(relay, &event)?;
        let window = self.declared_window(relay, event.session().unwrap_or_default());
        if self.sender.submit(event.clone(), window, now).is_err() {
            // Unreachable: the event was built as a command and its id checked.
            return Err(HubError::DuplicateCommand(id));
        }
        self.discard_sender_transmits();
        self.remember_route(&id, relay);
        self.drain_sender();
        self.fold(relay, event, now);
        Ok(id)
    }

    fn remember_route(&mut self, id: &str, relay: RelayId) {
        if self.command_relays.len() >= MAX_COMMAND_ROUTES {
            let sender = &self.sender;
            self.command_relays.retain(|id, _| sender.get(id).is_some());
        }
        if self.command_relays.len() < MAX_COMMAND_ROUTES {
            self.command_relays.insert(id.to_owned(), relay);
        }
    }

    /// The hub writes commands through connections; the sender's own
    /// transmit queue would only duplicate them.
    fn discard_sender_transmits(&mut self) {
        while self.sender.poll_transmit().is_some() {}
    }

    fn drain_sender(&mut self) {
        self.discard_sender_transmits();
        while let Some(update) = self.sender.poll_update() {
            self.push(HubChange::Command(update));
        }
    }

    fn push(&mut self, change: HubChange) {
        if self.changes.len() >= MAX_CHANGES {
            self.changes.pop_front();
            self.dropped += 1;
        }
        self.changes.push_back(change);
    }
}

/// The hub's sockets are its relays, by index; changes are [`HubChange`]s.
impl SocketDriven for Hub {
    type SocketId = RelayId;
    type Change = HubChange;

    fn sockets(&self) -> impl Iterator<Item = RelayId> {
        0..self.relays.len()
    }

    fn state(&self, relay: RelayId) -> Option<&State> {
        Hub::state(self, relay)
    }

    fn connect(&mut self, now: UnixMs) {
        Hub::connect(self, now)
    }

    fn close(&mut self, now: UnixMs) {
        Hub::close(self, now)
    }

    fn handle_open(&mut self, relay: RelayId, now: UnixMs) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.handle_open(now);
            self.pump(relay, now);
        }
    }

    fn handle_text(&mut self, relay: RelayId, text: &str, now: UnixMs) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.handle_text(text, now);
            self.pump(relay, now);
        }
    }

    fn handle_binary(&mut self, relay: RelayId, bytes: &[u8], now: UnixMs) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.handle_binary(bytes, now);
            self.pump(relay, now);
        }
    }

    fn handle_closed(&mut self, relay: RelayId, now: UnixMs, code: u16, reason: &str) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.handle_closed(now, code, reason);
            self.pump(relay, now);
        }
    }

    /// See [`Connection::handle_authorization`].
    fn handle_authorization(&mut self, relay: RelayId, status: Option<u16>, now: UnixMs) {
        if let Some(r) = self.relays.get_mut(relay) {
            r.conn.handle_authorization(status, now);
            self.pump(relay, now);
        }
    }

    fn handle_timeout(&mut self, now: UnixMs) {
        for id in 0..self.relays.len() {
            self.relays[id].conn.handle_timeout(now);
            self.pump(id, now);
        }
        self.sender.handle_timeout(now);
        self.drain_sender();
    }

    fn poll_transmit(&mut self) -> Option<(RelayId, String)> {
        self.relays.iter_mut().enumerate().find_map(|(id, r)| r.conn.poll_transmit().map(|t| (id, t)))
    }

    fn poll_action(&mut self) -> Option<(RelayId, SocketAction)> {
        self.relays.iter_mut().enumerate().find_map(|(id, r)| r.conn.poll_action().map(|a| (id, a)))
    }

    fn poll_timeout(&self) -> Option<UnixMs> {
        self.relays.iter().filter_map(|r| r.conn.poll_timeout()).chain(self.sender.poll_timeout()).min()
    }

    fn poll_change(&mut self) -> Option<HubChange> {
        self.changes.pop_front()
    }
}

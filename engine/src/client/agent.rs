//! An agent's side of one relay, sans-IO: the emitter [`Connection`]
//! (its `hello` declaring the commands it takes), the agent's own events
//! placed at strictly increasing `(epoch, seq)` positions and held to its
//! capture ceiling, and every command it receives decided by its
//! [`ControlTarget`] and acknowledged at once, before anything else the
//! agent says about it. What the agent queues while cut off goes out after
//! the reconnect (see the connection's outbox).
//!
//! Drive it like a [`Connection`]: report socket events, drain
//! [`Agent::poll_transmit`], [`Agent::poll_action`], [`Agent::poll_change`],
//! and arm one timer for [`Agent::poll_timeout`].

use std::collections::VecDeque;

use super::config::{Config, ConfigError};
use super::connection::Connection;
use super::output::{ClientError, ClientEvent, SocketAction, State};
use crate::control::target::{Action, ControlTarget, Received, SeqCounter, Sequencer, TargetError, Verdict};
use crate::protocol::capture::downlevel;
use crate::protocol::event::{Capture, Event};
use crate::protocol::frame::{ControlCapability, ErrorFrame, HelloIdentity, Role};
use crate::protocol::ids::{BuildError, Draft, Identity};
use crate::rng::Seeded;
use crate::time::UnixMs;

/// Changes kept for [`Agent::poll_change`]; beyond this the oldest go.
pub const MAX_AGENT_CHANGES: usize = 4096;

/// Who the agent is and what it takes.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub identity: Identity,
    /// Command types declared in `hello` (`control.accepts`).
    pub accepts: Vec<String>,
    /// Declared ack window (`control.ack_window_ms`).
    pub ack_window_ms: Option<u64>,
    /// Capture ceiling of everything the agent emits (AEP-0003 §9.1).
    pub ceiling: Capture,
    /// Stamped on every event; a restarted agent must use a later one
    /// (AEP-0001 §7), such as its start-up time.
    pub epoch: u64,
    /// Randomness for event ids and reconnect jitter (pass real randomness).
    pub seed: u64,
    /// Connection timing; role, identity and control are filled in.
    pub connection: Config,
}

/// Decides a command that passed the protocol's checks (the agent stays
/// sovereign: it may still refuse).
pub type Decider = Box<dyn FnMut(&Action) -> Verdict>;

/// Turns each event the agent raises into what it emits (an adapter's
/// capture pipeline: redaction, digests, per-type ceilings). The agent's
/// own ceiling still holds over what it returns.
pub type Gate = Box<dyn Fn(&Event) -> Event>;

/// What happened, for the agent's code.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentChange {
    State(State),
    Disconnected {
        reason: String,
    },
    /// A command arrived and its ack is on its way: act on `Fresh`, the
    /// others are already answered.
    Command {
        command: Event,
        received: Received,
    },
    /// A command the target could not take at all (not answered).
    Unreadable {
        command: Event,
        error: TargetError,
    },
    Error(ErrorFrame),
    Violation(String),
}

/// Why the agent did not emit something.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Build(BuildError),
    #[error(transparent)]
    Seq(crate::control::target::SeqRegression),
    #[error(transparent)]
    Request(crate::control::answer::RequestError),
    #[error(transparent)]
    Send(ClientError),
    #[error(transparent)]
    Target(TargetError),
}

pub struct Agent {
    conn: Connection,
    target: ControlTarget,
    seqs: SeqCounter,
    ids: Seeded,
    decide: Option<Decider>,
    gate: Option<Gate>,
    changes: VecDeque<AgentChange>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("conn", &self.conn).field("changes", &self.changes.len()).finish()
    }
}

impl Agent {
    pub fn new(config: AgentConfig) -> Result<Agent, AgentSetupError> {
        let mut ids = Seeded::new(config.seed ^ 0x9e37_79b9_7f4a_7c15);
        let target = ControlTarget::new(config.identity.clone(), config.accepts.iter().cloned(), ids.split())
            .map_err(AgentSetupError::Target)?
            .with_ceiling(config.ceiling);
        let hello = HelloIdentity { agent: Some(config.identity.agent.clone()), ..HelloIdentity::default() };
        let control = ControlCapability::new(config.accepts.iter().map(String::as_str), config.ack_window_ms);
        let mut connection = config.connection;
        connection.role = Role::Emitter;
        connection.identity = Some(hello);
        connection.control = Some(control);
        connection.jitter_seed = config.seed;
        Ok(Agent {
            conn: Connection::new(connection).map_err(AgentSetupError::Config)?,
            target,
            seqs: SeqCounter::with_epoch(config.epoch),
            ids,
            decide: None,
            gate: None,
            changes: VecDeque::new(),
        })
    }

    /// Passes every event [`Agent::emit`] and [`Agent::ask`] build through
    /// `gate` before the agent's ceiling.
    pub fn set_gate(&mut self, gate: Option<Gate>) {
        self.gate = gate;
    }

    /// Consults `decide` for every command that passed the protocol's checks.
    pub fn set_decider(&mut self, decide: Option<Decider>) {
        self.decide = decide;
    }

    // ----- driver reports (as for a Connection) -----------------------------

    pub fn connect(&mut self, now: UnixMs) {
        self.conn.connect(now);
        self.pump(now);
    }

    pub fn close(&mut self, now: UnixMs) {
        self.conn.close(now);
        self.pump(now);
    }

    pub fn handle_open(&mut self, now: UnixMs) {
        self.conn.handle_open(now);
        self.pump(now);
    }

    pub fn handle_text(&mut self, text: &str, now: UnixMs) {
        self.conn.handle_text(text, now);
        self.pump(now);
    }

    pub fn handle_binary(&mut self, bytes: &[u8], now: UnixMs) {
        self.conn.handle_binary(bytes, now);
        self.pump(now);
    }

    pub fn handle_closed(&mut self, now: UnixMs, code: u16, reason: &str) {
        self.conn.handle_closed(now, code, reason);
        self.pump(now);
    }

    pub fn handle_authorization(&mut self, status: Option<u16>, now: UnixMs) {
        self.conn.handle_authorization(status, now);
        self.pump(now);
    }

    pub fn handle_timeout(&mut self, now: UnixMs) {
        self.conn.handle_timeout(now);
        self.pump(now);
    }

    pub fn poll_transmit(&mut self) -> Option<String> {
        self.conn.poll_transmit()
    }

    pub fn poll_action(&mut self) -> Option<SocketAction> {
        self.conn.poll_action()
    }

    pub fn poll_change(&mut self) -> Option<AgentChange> {
        self.changes.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<UnixMs> {
        self.conn.poll_timeout()
    }

    // ----- what the agent says ------------------------------------------------

    /// Builds one of the agent's own events: a session event takes the
    /// session's next `seq` (or the one named, if above every one used) and
    /// the agent's epoch; the result is held to the capture ceiling and
    /// queued for sending.
    pub fn emit(
        &mut self,
        draft: Draft,
        session: Option<&str>,
        seq: Option<u64>,
        now: UnixMs,
    ) -> Result<Event, AgentError> {
        let draft = match session {
            Some(s) => {
                let seq = self.seqs.take(s, seq).map_err(AgentError::Seq)?;
                let draft = draft.session(s).seq(seq);
                match self.seqs.epoch(s) {
                    Some(epoch) => draft.epoch(epoch),
                    None => draft,
                }
            }
            None => draft,
        };
        let id = self.next_id(now);
        let event = draft.build(self.target.identity(), id, now).map_err(AgentError::Build)?;
        let event = match &self.gate {
            Some(gate) => gate(&event),
            None => event,
        };
        let event = downlevel(&event, self.target.ceiling());
        self.send(&event)?;
        Ok(event)
    }

    /// Emits an `attention.requested` and registers it, so answers to it
    /// are checked; `refusing` names the option unmatched permission text
    /// applies.
    pub fn ask(
        &mut self,
        draft: Draft,
        session: &str,
        refusing: Option<&str>,
        now: UnixMs,
    ) -> Result<Event, AgentError> {
        let event = self.emit(draft, Some(session), None, now)?;
        self.target.register_request(&event, refusing).map_err(AgentError::Request)?;
        Ok(event)
    }

    /// Queues an event the agent built with [`Agent::target`] (an outcome).
    pub fn send(&mut self, event: &Event) -> Result<(), AgentError> {
        self.conn.send_event(event).map_err(AgentError::Send)
    }

    /// The target, for outcome builders, and the sequence counter to pass them.
    pub fn target(&mut self) -> (&mut ControlTarget, &mut SeqCounter) {
        (&mut self.target, &mut self.seqs)
    }

    /// A fresh event id.
    pub fn next_id(&mut self, now: UnixMs) -> String {
        self.ids.event_id(now)
    }

    pub fn state(&self) -> &State {
        self.conn.state()
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    // ----- internals --------------------------------------------------------

    /// Takes the connection's notifications: commands are decided and
    /// acknowledged here, the rest handed on.
    fn pump(&mut self, now: UnixMs) {
        while let Some(notice) = self.conn.poll_event() {
            let change = match notice {
                ClientEvent::Event(e) if e.is_command() => self.receive(e, now),
                // An agent subscribes to nothing; other events are not its business.
                ClientEvent::Event(_) => continue,
                ClientEvent::StateChanged(s) => AgentChange::State(s),
                ClientEvent::Disconnected { reason } => AgentChange::Disconnected { reason },
                ClientEvent::Error(e) => AgentChange::Error(e),
                ClientEvent::Violation(v) => AgentChange::Violation(v),
                ClientEvent::Subscribed { .. }
                | ClientEvent::Unsubscribed { .. }
                | ClientEvent::Roster { .. }
                | ClientEvent::ReplayExhausted(_)
                | ClientEvent::Closing(_) => continue,
            };
            self.push(change);
        }
    }

    fn receive(&mut self, command: Event, now: UnixMs) -> AgentChange {
        let decide = &mut self.decide;
        let received = self.target.handle_command_with(&command, now, &mut self.seqs, |action| match decide {
            Some(f) => f(action),
            None => Verdict::Accept,
        });
        let received = match received {
            Ok(r) => r,
            Err(error) => return AgentChange::Unreadable { command, error },
        };
        match Event::parse(&received.ack_bytes()) {
            Ok(ack) => {
                if let Err(e) = self.conn.send_event(&ack) {
                    self.push(AgentChange::Violation(format!("the ack to {} was not queued: {e}", command.id())));
                }
            }
            Err(e) => self.push(AgentChange::Violation(format!("the ack to {} is unreadable: {e}", command.id()))),
        }
        AgentChange::Command { command, received }
    }

    fn push(&mut self, change: AgentChange) {
        if self.changes.len() >= MAX_AGENT_CHANGES {
            self.changes.pop_front();
        }
        self.changes.push_back(change);
    }
}

/// Why an agent could not be set up.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AgentSetupError {
    #[error(transparent)]
    Target(TargetError),
    #[error(transparent)]
    Config(ConfigError),
}

//! Sender side of control (AEP-0004): builds commands and follows each one
//! to a decision (ack, relay refusal or local timeout) and an outcome.
//!
//! Sans-IO: calls take `now`; frames to send come out of
//! [`ControlSender::poll_transmit`], the next wake-up out of
//! [`ControlSender::poll_timeout`], changes out of
//! [`ControlSender::poll_update`].
//!
//! * [`command`]: commands as values, built into and read from events.
//! * [`state`]: the per-command record and its state enum.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::control::ack::{self, Decision};
use crate::protocol::event::Event;
use crate::protocol::ids::Identity;
use crate::protocol::validate::Violation;
use crate::rng::Seeded;
use crate::text::quote;
use crate::time::UnixMs;

pub mod command;
pub mod state;

pub use command::{Address, CancelScope, Command, CommandError};
pub use state::{CommandChange, CommandState, CommandUpdate, RelayCode, Times, TrackedCommand};

/// The ack window when the target declared none (AEP-0004 §3).
pub const DEFAULT_ACK_WINDOW_MS: u64 = 10_000;
/// Upper bound on a declared window, so a hostile or mistaken declaration
/// cannot keep a command pending forever.
pub const MAX_ACK_WINDOW_MS: u64 = 600_000;
/// Decided commands kept for outcome correlation and display; beyond this
/// the oldest decided ones are forgotten (pending ones never are).
pub const SETTLED_CAPACITY: usize = 512;
/// Updates waiting to be polled; beyond this the oldest are dropped, so a
/// driver that never polls cannot grow memory without bound.
pub const UPDATE_QUEUE_CAPACITY: usize = 1024;

/// The window to use for a target that declared `declared` ms (`None` or
/// `0`: the default; clamped to [`MAX_ACK_WINDOW_MS`]).
pub fn ack_window(declared: Option<u64>) -> u64 {
    match declared {
        None | Some(0) => DEFAULT_ACK_WINDOW_MS,
        Some(ms) => ms.min(MAX_ACK_WINDOW_MS),
    }
}

/// Why a command was not sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Command(CommandError),
    /// The event is not a command type.
    #[error("`{ty}` is not a command type")]
    NotACommand { ty: String },
    /// A command with this id is already tracked; a retry is [`ControlSender::retry`].
    #[error("command `{0}` is already being followed")]
    DuplicateId(String),
}

/// Why a retry did not happen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RetryError {
    #[error("no command `{0}` is being followed")]
    Unknown(String),
    /// The target already decided; a retry would only elicit the same ack.
    #[error("command `{0}` was already acknowledged")]
    AlreadyDecided(String),
}

/// Follows the commands one sender issues.
#[derive(Debug)]
pub struct ControlSender {
    identity: Identity,
    ids: Seeded,
    settled_capacity: usize,
    commands: HashMap<String, TrackedCommand>,
    /// Command ids in send order (iteration and eviction order).
    order: VecDeque<String>,
    /// Ack id → command id, so an outcome caused by the ack is found.
    by_ack: HashMap<String, String>,
    settled: usize,
    transmit: VecDeque<Arc<str>>,
    updates: VecDeque<CommandUpdate>,
}

impl ControlSender {
    /// `ids` makes the ids of the commands [`ControlSender::send`] builds
    /// (seed it with real randomness).
    pub fn new(identity: Identity, ids: Seeded) -> ControlSender {
        ControlSender::with_settled_capacity(identity, SETTLED_CAPACITY, ids)
    }

    pub fn with_settled_capacity(identity: Identity, settled_capacity: usize, ids: Seeded) -> ControlSender {
        ControlSender {
            identity,
            ids,
            settled_capacity,
            commands: HashMap::new(),
            order: VecDeque::new(),
            by_ack: HashMap::new(),
            settled: 0,
            transmit: VecDeque::new(),
            updates: VecDeque::new(),
        }
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Builds `command` for `to`, queues it for sending and starts its ack
    /// window (`declared_window_ms` from the target's hello or roster).
    /// Returns the command id.
    pub fn send(
        &mut self,
        to: &Address,
        command: &Command,
        declared_window_ms: Option<u64>,
        now: UnixMs,
    ) -> Result<String, SendError> {
        let id = self.ids.event_id(now);
        let event = command.build(&self.identity, to, id, now).map_err(SendError::Command)?;
        let id = event.id().to_owned();
        self.submit(event, declared_window_ms, now)?;
        Ok(id)
    }

    /// Follows an already built command event (e.g. built by a caller with
    /// its own payload) exactly as [`ControlSender::send`] does.
    pub fn submit(&mut self, event: Event, declared_window_ms: Option<u64>, now: UnixMs) -> Result<(), SendError> {
        if !event.is_command() {
            return Err(SendError::NotACommand { ty: event.ty().to_owned() });
        }
        let id = event.id().to_owned();
        if self.commands.contains_key(&id) {
            return Err(SendError::DuplicateId(id));
        }
        let window_ms = ack_window(declared_window_ms);
        self.transmit.push_back(event.raw_arc());
        let tracked = TrackedCommand {
            command: event,
            window_ms,
            sends: 1,
            state: CommandState::Pending { deadline: now + window_ms },
            outcome: None,
            times: Times { first_sent: now, last_sent: now, settled: None, outcome: None },
        };
        self.commands.insert(id.clone(), tracked);
        self.order.push_back(id.clone());
        self.update(id, CommandChange::Sent);
        Ok(())
    }

    /// Sends the identical bytes again (same id) and restarts the window.
    /// Allowed until an ack is seen: while pending, after a timeout, after
    /// a relay refusal.
    pub fn retry(&mut self, id: &str, now: UnixMs) -> Result<(), RetryError> {
        let c = self.commands.get_mut(id).ok_or_else(|| RetryError::Unknown(id.to_owned()))?;
        if c.state.ack().is_some() {
            return Err(RetryError::AlreadyDecided(id.to_owned()));
        }
        if !c.state.is_pending() {
            self.settled = self.settled.saturating_sub(1);
        }
        c.state = CommandState::Pending { deadline: now + c.window_ms };
        c.sends += 1;
        c.times.last_sent = now;
        c.times.settled = None;
        self.transmit.push_back(c.command.raw_arc());
        self.update(id.to_owned(), CommandChange::Retried);
        Ok(())
    }

    /// Feeds one event seen on the wire. Returns whether it concerned one
    /// of this sender's commands (an ack, or an outcome).
    ///
    /// The first ack from the addressed session is the decision, even after
    /// a local timeout or a relay refusal: it is what the target decided,
    /// and a retry would only elicit that same ack. Later acks never change
    /// it. The outcome is the first other non-command event whose `cause`
    /// is the command or its ack.
    pub fn handle_event(&mut self, event: &Event, now: UnixMs) -> bool {
        if let Some(ack) = ack::parse(event) {
            return self.handle_ack(event, ack.command_id, ack.decision, now);
        }
        if event.is_command() {
            return false;
        }
        let Some(cause) = event.cause() else { return false };
        let id = if self.commands.contains_key(cause) {
            cause.to_owned()
        } else if let Some(id) = self.by_ack.get(cause) {
            id.clone()
        } else {
            return false;
        };
        let Some(c) = self.commands.get_mut(&id) else { return false };
        if c.outcome.is_none() {
            c.outcome = Some(event.clone());
            c.times.outcome = Some(now);
            self.update(id, CommandChange::Outcome);
        }
        true
    }

    fn handle_ack(&mut self, event: &Event, command_id: &str, decision: Decision, now: UnixMs) -> bool {
        let Some(c) = self.commands.get_mut(command_id) else { return false };
        let id = command_id.to_owned();
        if event.session() != c.command.session() {
            let v = Violation::new(
                "control.ack.wrong-session",
                format!(
                    "ack {} answers from session {}, the command addressed {}",
                    event.id(),
                    event.session().map_or("(none)".into(), quote),
                    c.command.session().map_or("(none)".into(), quote)
                ),
            );
            self.update(id, CommandChange::Violation(v));
            return true;
        }
        if let Some(recorded) = c.state.ack() {
            if recorded.raw() != event.raw() {
                let v = Violation::new(
                    "control.ack.second-decision",
                    format!(
                        "ack {} differs from the recorded ack {}; the first decision stands",
                        event.id(),
                        recorded.id()
                    ),
                );
                self.update(id, CommandChange::Violation(v));
            }
            return true;
        }
        let was_pending = c.state.is_pending();
        let (state, change) = match decision {
            Decision::Accepted => (CommandState::Accepted { ack: event.clone() }, CommandChange::Accepted),
            Decision::Rejected { reason, raw_reason, detail } => {
                (CommandState::Rejected { ack: event.clone(), reason, raw_reason, detail }, CommandChange::Rejected)
            }
        };
        c.state = state;
        c.times.settled = Some(now);
        self.by_ack.insert(event.id().to_owned(), id.clone());
        if was_pending {
            self.settled += 1;
        }
        self.update(id, change);
        self.evict();
        true
    }

    /// A relay `error` frame with `cause` = a command id: that command is
    /// refused (whatever the code). Returns whether the cause was ours.
    pub fn handle_relay_error(&mut self, cause: &str, code: &str, detail: Option<&str>, now: UnixMs) -> bool {
        let Some(c) = self.commands.get_mut(cause) else { return false };
        let id = cause.to_owned();
        if c.state.ack().is_some() {
            let v = Violation::new(
                "control.relay-error.after-ack",
                format!("relay refused ({code}) a command its target already acknowledged"),
            );
            self.update(id, CommandChange::Violation(v));
            return true;
        }
        if c.state.is_pending() {
            self.settled += 1;
        }
        c.state = CommandState::RelayRefused { code: RelayCode::parse(code), detail: detail.map(str::to_owned) };
        c.times.settled = Some(now);
        self.update(id, CommandChange::RelayRefused);
        self.evict();
        true
    }

    /// Times out every pending command whose window has passed (`now` at
    /// or after `last send + window`). Nothing is transmitted for it.
    pub fn handle_timeout(&mut self, now: UnixMs) {
        let mut expired = Vec::new();
        for id in &self.order {
            if let Some(c) = self.commands.get_mut(id) {
                if matches!(c.state, CommandState::Pending { deadline } if deadline <= now) {
                    c.state = CommandState::TimedOut;
                    c.times.settled = Some(now);
                    expired.push(id.clone());
                }
            }
        }
        self.settled += expired.len();
        for id in expired {
            self.update(id, CommandChange::TimedOut);
        }
        self.evict();
    }

    /// The next frame to send: a command's exact bytes.
    pub fn poll_transmit(&mut self) -> Option<Arc<str>> {
        self.transmit.pop_front()
    }

    /// When [`ControlSender::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<UnixMs> {
        self.commands
            .values()
            .filter_map(|c| match c.state {
                CommandState::Pending { deadline } => Some(deadline),
                _ => None,
            })
            .min()
    }

    pub fn poll_update(&mut self) -> Option<CommandUpdate> {
        self.updates.pop_front()
    }

    pub fn get(&self, id: &str) -> Option<&TrackedCommand> {
        self.commands.get(id)
    }

    /// Followed commands, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &TrackedCommand> {
        self.order.iter().filter_map(|id| self.commands.get(id))
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    fn update(&mut self, id: String, change: CommandChange) {
        if self.updates.len() >= UPDATE_QUEUE_CAPACITY {
            self.updates.pop_front();
        }
        self.updates.push_back(CommandUpdate { id, change });
    }

    /// Forgets the oldest decided commands beyond the settled capacity.
    fn evict(&mut self) {
        while self.settled > self.settled_capacity {
            let Some(pos) =
                self.order.iter().position(|id| self.commands.get(id).is_some_and(|c| !c.state.is_pending()))
            else {
                return;
            };
            let Some(id) = self.order.remove(pos) else { return };
            if let Some(c) = self.commands.remove(&id) {
                if let Some(ack) = c.state.ack() {
                    self.by_ack.remove(ack.id());
                }
            }
            self.settled = self.settled.saturating_sub(1);
        }
    }
}

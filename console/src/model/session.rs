//! Session lanes: one per (source, session), with who runs it, where it
//! stands, its runs, and which commands its agent declared it takes.

use aep_engine::client::hub::Hub;
use aep_engine::client::State;
use aep_engine::control::sender::command::{CANCEL, PAUSE, RESPOND, RESUME};
use aep_engine::order;
use aep_engine::protocol::event::is_vendor_command_type;
use aep_engine::store::{RunEnding, RunStatus, Session, SessionKey, SessionState};
use aep_engine::UnixMs;

use super::command::{self, CommandView};

/// Runs a session page lists before "show more".
pub const RUNS_SHOWN: usize = 3;

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunState {
    Open,
    Finished,
    Failed,
    Cancelled,
}

impl RunState {
    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            RunState::Open => "open",
            RunState::Finished => "finished",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunView {
    pub name: String,
    pub status: RunState,
    pub events: u64,
    pub reason: Option<String>,
    /// The terminal event, for jumping to it.
    pub end_event: Option<String>,
}

impl RunView {
    pub fn is_open(&self) -> bool {
        self.status == RunState::Open
    }
}

/// What the session's claimant declared it takes, from a relay roster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Verbs {
    /// Some relay's roster lists the session: its agent is connected.
    pub listed: bool,
    /// The relay whose roster listed it.
    pub relay: Option<String>,
    /// Live connections claiming the session there. Above one the relay
    /// refuses every command as `ambiguous`, so none is offered.
    pub claims: usize,
    pub respond: bool,
    pub cancel: bool,
    pub pause: bool,
    pub resume: bool,
    /// `x.{vendor}.control.{verb}` types.
    pub vendor: Vec<String>,
    pub ack_window_ms: Option<u64>,
    /// Whether that relay lets this console command (`None`: it did not
    /// say); a viewer's console offers no commands.
    pub may_command: Option<bool>,
}

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneState {
    Active,
    Paused,
    Ended,
}

impl LaneState {
    fn of(s: SessionState) -> LaneState {
        match s {
            SessionState::Active => LaneState::Active,
            SessionState::Paused => LaneState::Paused,
            SessionState::Ended => LaneState::Ended,
        }
    }

    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            LaneState::Active => "active",
            LaneState::Paused => "paused",
            LaneState::Ended => "ended",
        }
    }
}

/// Why a session takes no command now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoCommands {
    /// The session ended.
    Ended,
    /// This device reaches no relay.
    Offline,
    /// The credential may watch, not command.
    ReadOnly,
    /// No relay's roster lists the session: its agent is not connected.
    AgentAway,
    /// Several connections claim the session; the relay routes to none.
    Ambiguous,
}

impl NoCommands {
    /// A short stable token for styling and tests (`data-controls`).
    pub fn token(self) -> &'static str {
        match self {
            NoCommands::Ended => "ended",
            NoCommands::Offline => "offline",
            NoCommands::ReadOnly => "read-only",
            NoCommands::AgentAway => "none",
            NoCommands::Ambiguous => "ambiguous",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub key: SessionKey,
    pub name: String,
    pub source: String,
    pub agent: String,
    pub label: Option<String>,
    pub state: LaneState,
    /// The relay the latest event came through.
    pub relay: Option<String>,
    pub runs: Vec<RunView>,
    pub pending: usize,
    pub events: usize,
    pub updated_at: UnixMs,
    /// When it started (its `session.started`, else when first seen): the
    /// list's order, which activity never changes.
    pub started_at: UnixMs,
    pub verbs: Verbs,
    pub end_reason: Option<String>,
}

impl Lane {
    pub fn open_run(&self) -> Option<&RunView> {
        self.runs.iter().rev().find(|r| r.is_open())
    }

    /// Why no command can be sent to it now, when none can, and in words:
    /// ended, nobody connected (this device, when no relay is `live`, else
    /// its agent), or claimed by several connections. `online`: the
    /// browser's word on the device's network, which only names the likely
    /// reason.
    pub fn no_commands(&self, live: bool, online: bool) -> Option<(NoCommands, String)> {
        Some(match () {
            _ if self.state == LaneState::Ended => (NoCommands::Ended, "This session has ended.".to_owned()),
            _ if !live && !online => (
                NoCommands::Offline,
                "This device is offline, so it is not connected to a relay and cannot send commands.".to_owned(),
            ),
            _ if !live => (NoCommands::Offline, "This device is not connected to a relay right now.".to_owned()),
            _ if self.verbs.may_command == Some(false) => (
                NoCommands::ReadOnly,
                "Read-only: your credential on this relay may watch this session, not command it.".to_owned(),
            ),
            _ if !self.verbs.listed => (
                NoCommands::AgentAway,
                "Its agent is not connected to a relay right now (no relay roster lists this session), so it cannot take commands."
                    .to_owned(),
            ),
            _ if self.verbs.claims > 1 => (
                NoCommands::Ambiguous,
                format!(
                    "Claimed by {} connections at once, so the relay refuses commands to this session until only one is left.",
                    self.verbs.claims
                ),
            ),
            _ => return None,
        })
    }

    /// What it is doing, in a few words: a paused session reads as paused,
    /// whatever run is open in it.
    pub fn doing(&self) -> String {
        match (self.state, self.open_run()) {
            (LaneState::Paused, Some(r)) => format!("Paused in {}", r.name),
            (LaneState::Paused, None) => "Paused".to_owned(),
            (_, Some(r)) => format!("Running {}", r.name),
            (_, None) => "No run in progress".to_owned(),
        }
    }

    /// The runs a session page lists, oldest first: the latest
    /// [`RUNS_SHOWN`] unless `all`; and how many earlier ones that leaves out.
    pub fn runs_shown(&self, all: bool) -> (&[RunView], usize) {
        let skip = if all { 0 } else { self.runs.len().saturating_sub(RUNS_SHOWN) };
        (&self.runs[skip..], skip)
    }

    /// Runs by ending: `(finished, failed, cancelled)`.
    pub fn terminals(&self) -> (usize, usize, usize) {
        let count = |s: RunState| self.runs.iter().filter(|r| r.status == s).count();
        (count(RunState::Finished), count(RunState::Failed), count(RunState::Cancelled))
    }
}

/// The session's claimant as a live relay's roster declares it.
pub fn verbs(hub: &Hub, s: &Session) -> Verbs {
    for relay in 0..hub.relay_count() {
        if hub.state(relay) != Some(&State::Live) {
            continue;
        }
        let claims = hub.claims(relay, s.name()).count();
        let entry = hub.claims(relay, s.name()).find(|e| e.agent.as_deref().is_none_or(|a| a == s.agent()));
        let Some(entry) = entry else { continue };
        if claims > 1 {
            return Verbs { listed: true, relay: hub.label(relay).map(str::to_owned), claims, ..Verbs::default() };
        }
        let accepts: Vec<String> = entry.control.as_ref().and_then(|c| c.accepts.clone()).unwrap_or_default();
        let has = |t: &str| accepts.iter().any(|a| a == t);
        return Verbs {
            listed: true,
            relay: hub.label(relay).map(str::to_owned),
            claims,
            respond: has(RESPOND),
            cancel: has(CANCEL),
            pause: has(PAUSE),
            resume: has(RESUME),
            vendor: accepts.iter().filter(|a| is_vendor_command_type(a)).cloned().collect(),
            ack_window_ms: entry.control.as_ref().and_then(|c| c.ack_window_ms),
            may_command: hub.may_command(relay),
        };
    }
    Verbs::default()
}

pub fn lane(hub: &Hub, s: &Session) -> Lane {
    let mut runs: Vec<(UnixMs, RunView)> = s
        .runs()
        .map(|r| {
            let status = match r.status() {
                RunStatus::Open => RunState::Open,
                RunStatus::Ended(RunEnding::Finished) => RunState::Finished,
                RunStatus::Ended(RunEnding::Failed) => RunState::Failed,
                RunStatus::Ended(RunEnding::Cancelled) => RunState::Cancelled,
            };
            let view = RunView {
                name: r.name().to_owned(),
                status,
                events: r.events(),
                reason: r.end().and_then(|e| e.reason.clone()),
                end_event: r.end().map(|e| e.event_id.clone()),
            };
            (r.first_seen(), view)
        })
        .collect();
    order::sort_by(&mut runs, |a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    Lane {
        key: s.key().clone(),
        name: s.name().to_owned(),
        source: s.source().to_owned(),
        agent: s.agent().to_owned(),
        label: s.started().and_then(|st| st.label.clone()),
        state: LaneState::of(s.state()),
        relay: s.timeline().iter().rev().find_map(|e| e.relay.as_deref().map(str::to_owned)),
        runs: runs.into_iter().map(|(_, r)| r).collect(),
        pending: s.pending_count(),
        events: s.timeline().len(),
        updated_at: s.updated_at(),
        started_at: s.started().and_then(|st| UnixMs::parse_rfc3339(&st.time)).unwrap_or(s.first_seen()),
        verbs: verbs(hub, s),
        end_reason: s.end().and_then(|e| e.reason.clone()),
    }
}

/// Every session, in the order they started; new ones join at the end.
/// Nothing a session does (work waiting, activity, ending) moves it, so a
/// row is where it was when the finger comes down.
pub fn lanes(hub: &Hub) -> Vec<Lane> {
    let mut all: Vec<Lane> = hub.store().sessions().map(|s| lane(hub, s)).collect();
    order::sort_by(&mut all, |a, b| a.started_at.cmp(&b.started_at).then_with(|| a.key.cmp(&b.key)));
    all
}

/// Every command chain of a session, oldest first.
pub fn commands(hub: &Hub, s: &Session) -> Vec<CommandView> {
    let mut out: Vec<CommandView> = s
        .commands()
        .filter_map(|c| {
            // An answer reads best with the request's option labels.
            let request = c.issued().and_then(|i| i.subject.as_deref()).and_then(|r| s.card(r));
            let options = request.and_then(|card| card.request()).map(|r| r.options.as_slice()).unwrap_or_default();
            command::view(hub, c.id(), Some(s), options)
        })
        .collect();
    order::sort_by(&mut out, |a, b| a.sent_at.cmp(&b.sent_at).then_with(|| a.id.cmp(&b.id)));
    out
}

//! A command's life as a person follows it: sent, acknowledged, done or
//! not, and why. Built from the sender's record for this console's own
//! commands, and from the stream's audit chain for everyone else's.

use aep_engine::client::hub::Hub;
use aep_engine::control::ack::Decision;
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{Command, CommandState, RelayCode, TrackedCommand};
use aep_engine::control::target::outcome::{PHASE_PAUSED, PHASE_RESUMED};
use aep_engine::protocol::form::Choice;
use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::{EventType, NackReason};
use aep_engine::store;
use aep_engine::UnixMs;
use serde_json::Value;

use super::{clock, words};

/// Where a command stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Sent; no acknowledgement yet.
    Sending,
    /// The agent acknowledged and will act; no outcome seen yet.
    Accepted,
    /// The agent acted: the outcome event's type.
    Done(String),
    /// The agent said no (`control.rejected`): `reason` when it is a
    /// registered one, `raw_reason` as sent.
    Rejected { reason: Option<NackReason>, raw_reason: Option<String>, detail: Option<String> },
    /// A relay refused it for the agent; the agent never saw it.
    RelayRefused { code: RelayCode, detail: Option<String> },
    /// No acknowledgement within the window (known only here).
    TimedOut,
}

impl Phase {
    /// Still in flight: a second answer now would race this one.
    pub fn in_flight(&self) -> bool {
        matches!(self, Phase::Sending | Phase::Accepted)
    }

    /// A short stable token for styling and tests.
    pub fn token(&self) -> &'static str {
        match self {
            Phase::Sending => "sending",
            Phase::Accepted => "accepted",
            Phase::Done(_) => "done",
            Phase::Rejected { .. } => "rejected",
            Phase::RelayRefused { .. } => "relay-refused",
            Phase::TimedOut => "timeout",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CommandView {
    pub id: String,
    pub ty: String,
    /// `Answer`, `Cancel`, `instruct (demo)`.
    pub verb: String,
    /// What was asked, in words: `Allow`, `"try the OPS project"`, `run run-1`.
    pub what: String,
    /// Sent by this page (and followed by its sender).
    pub mine: bool,
    /// Sent as this console's identity, by this page or an earlier one
    /// (a reload, another tab): the person's own command.
    pub by_this_console: bool,
    pub sender: Option<String>,
    /// The request an answer is for (its id), and in words: its prompt
    /// and the agent that asked.
    pub subject: Option<String>,
    pub request: Option<String>,
    pub relay: Option<String>,
    pub phase: Phase,
    pub headline: String,
    pub explanation: Option<String>,
    pub sent_at: Option<UnixMs>,
    pub sends: u32,
    pub window_ms: Option<u64>,
    pub ack_latency_ms: Option<u64>,
    pub outcome_latency_ms: Option<u64>,
    /// The outcome event, for jumping to it in the timeline.
    pub outcome_id: Option<String>,
    /// The ack event id.
    pub ack_id: Option<String>,
}

impl CommandView {
    /// Who sent it, by the one rule ([`words::person`]): the command's
    /// `agent`, the principal the relay bound to it, marked `you (…)` when
    /// it is one of `me` or was sent by this console.
    pub fn who(&self, me: &[String]) -> String {
        match (&self.sender, self.mine || self.by_this_console) {
            (Some(s), true) => words::person_first(s, std::slice::from_ref(s)),
            (Some(s), false) => words::person_first(s, me),
            (None, _) => "Unknown sender".to_owned(),
        }
    }

    /// Timed out with no ack seen: the same command may be sent again.
    pub fn retryable(&self) -> bool {
        self.mine && self.phase == Phase::TimedOut
    }

    /// One line for lists: `Answer "Allow" · accepted in 120 ms`.
    pub fn latencies(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = self.ack_latency_ms {
            parts.push(format!("ack {}", clock::latency(a)));
        }
        if let Some(o) = self.outcome_latency_ms {
            parts.push(format!("outcome {}", clock::latency(o)));
        }
        parts.join(" · ")
    }
}

/// What a command asked for, in words; option ids become their labels
/// when `options` names them.
pub fn describe(event: &aep_engine::Event, options: &[Choice]) -> String {
    let label = |id: &str| options.iter().find(|o| o.id == id).map_or_else(|| id.to_owned(), |o| o.label.clone());
    match Command::from_event(event) {
        Ok(Command::Respond { answer, .. }) => match answer {
            Answer::Option { id, text: None } => label(&id),
            Answer::Option { id, text: Some(t) } => {
                format!("{} \u{2014} \u{201c}{t}\u{201d}", label(&id))
            }
            Answer::Text { text } => format!("\u{201c}{text}\u{201d}"),
            Answer::Values { map } => format!("form with {} value{}", map.len(), if map.len() == 1 { "" } else { "s" }),
        },
        Ok(Command::Cancel { scope, reason }) => {
            let what = match (scope.as_str(), event.run()) {
                ("run", Some(run)) => format!("run {run}"),
                _ => "the session".to_owned(),
            };
            match reason {
                Some(r) => format!("{what} \u{2014} \u{201c}{r}\u{201d}"),
                None => what,
            }
        }
        Ok(Command::Pause) | Ok(Command::Resume) => "the session".to_owned(),
        Ok(Command::Vendor { data, .. }) => match data.get("text").and_then(Value::as_str) {
            Some(t) if data.len() == 1 => format!("\u{201c}{t}\u{201d}"),
            _ => Value::Object(data).to_string(),
        },
        Err(_) => event.ty().to_owned(),
    }
}

/// One of this console's commands, as its sender follows it.
pub fn mine(hub: &Hub, c: &TrackedCommand, options: &[Choice]) -> CommandView {
    let relay = hub.command_relay(c.id()).and_then(|r| hub.label(r)).map(str::to_owned);
    let relay_name = relay.clone().unwrap_or_else(|| "?".into());
    let outcome = c.outcome();
    let (phase, headline, explanation) = match c.state() {
        CommandState::Pending { .. } => {
            (Phase::Sending, "Sent \u{2014} waiting for the agent to acknowledge".to_owned(), None)
        }
        CommandState::Accepted { .. } => match outcome {
            Some(o) => (Phase::Done(o.ty().to_owned()), done_words(o.ty(), phase(o).as_deref()), None),
            None => (Phase::Accepted, "Accepted \u{2014} waiting for the agent to act".to_owned(), None),
        },
        CommandState::Rejected { reason, raw_reason, detail, .. } => {
            let (h, e) = words::rejected(*reason);
            // A reason this console has no words for is shown as sent.
            let headline = match (reason, raw_reason.as_deref()) {
                (None, Some(r)) => format!("{h} ({r})"),
                _ => h.to_owned(),
            };
            let phase = Phase::Rejected { reason: *reason, raw_reason: raw_reason.clone(), detail: detail.clone() };
            (phase, headline, Some(e.to_owned()))
        }
        CommandState::RelayRefused { code, detail } => {
            let (h, e) = words::relay_refused(code, &relay_name);
            (Phase::RelayRefused { code: code.clone(), detail: detail.clone() }, h, Some(e))
        }
        CommandState::TimedOut => {
            let (h, e) = words::timed_out(c.window_ms());
            (Phase::TimedOut, h, Some(e))
        }
    };
    CommandView {
        id: c.id().to_owned(),
        ty: c.command().ty().to_owned(),
        verb: words::verb(c.command().ty()),
        what: describe(c.command(), options),
        mine: true,
        by_this_console: true,
        sender: Some(c.command().agent().to_owned()),
        subject: c.command().subject().map(str::to_owned),
        request: None,
        relay,
        phase,
        headline,
        explanation,
        sent_at: Some(c.times().first_sent),
        sends: c.sends(),
        window_ms: Some(c.window_ms()),
        ack_latency_ms: c.ack_latency_ms(),
        outcome_latency_ms: c.outcome_latency_ms(),
        outcome_id: outcome.map(|o| o.id().to_owned()),
        ack_id: c.state().ack().map(|a| a.id().to_owned()),
    }
}

/// Anyone's command, as the stream shows its chain.
///
/// `me` is this console's source: a command sent as it (by an earlier
/// page, before a reload) is the person's own.
pub fn chain(c: &store::CommandChain, session: Option<&store::Session>, options: &[Choice], me: &str) -> CommandView {
    let issued = c.issued();
    let ty = c.ty().unwrap_or_default().to_owned();
    let what = session
        .and_then(|s| s.timeline().iter().rev().find(|e| e.id() == c.id()))
        .and_then(|e| e.event().ok())
        .map(|e| describe(&e, options))
        .unwrap_or_default();
    // The decision is final: what followed a refusal is not its outcome.
    let (phase, headline, explanation) = match (c.outcome(), c.ack().map(|a| &a.decision)) {
        (Some(o), None | Some(Decision::Accepted)) => {
            let said = session
                .and_then(|s| s.timeline().iter().rev().find(|e| e.id() == o.event_id))
                .and_then(|e| e.event().ok())
                .and_then(|e| phase(&e));
            (Phase::Done(o.ty.clone()), done_words(&o.ty, said.as_deref()), None)
        }
        (None, Some(Decision::Accepted)) => {
            (Phase::Accepted, "Accepted \u{2014} waiting for the agent to act".to_owned(), None)
        }
        (followed, Some(Decision::Rejected { reason, raw_reason, detail })) => {
            let (h, e) = words::rejected(*reason);
            let explanation = match followed {
                Some(o) => format!("{e} Then the agent sent {}.", o.ty),
                None => e.to_owned(),
            };
            let phase = Phase::Rejected { reason: *reason, raw_reason: raw_reason.clone(), detail: detail.clone() };
            (phase, h.to_owned(), Some(explanation))
        }
        (None, None) => (Phase::Sending, "Sent \u{2014} no acknowledgement seen".to_owned(), None),
    };
    // Known only by what answered it: say so, and when that was.
    let verb = if ty.is_empty() { "a command seen only by its acknowledgement".to_owned() } else { words::verb(&ty) };
    let sent_at = match issued {
        Some(i) => i.at.or(Some(i.received_at)),
        None => c
            .ack()
            .map(|a| a.at.unwrap_or(a.received_at))
            .or_else(|| c.outcome().map(|o| o.at.unwrap_or(o.received_at))),
    };
    CommandView {
        id: c.id().to_owned(),
        verb,
        ty,
        what,
        mine: false,
        by_this_console: issued.is_some_and(|i| i.sender_source == me),
        sender: issued.map(|i| i.sender_agent.clone()),
        subject: issued.and_then(|i| i.subject.clone()),
        request: None,
        relay: issued.and_then(|i| i.relay.as_deref().map(str::to_owned)),
        phase,
        headline,
        explanation,
        sent_at,
        sends: 1,
        window_ms: None,
        ack_latency_ms: c.ack_latency_ms(),
        outcome_latency_ms: c.outcome_latency_ms(),
        outcome_id: c.outcome().map(|o| o.event_id.clone()),
        ack_id: c.ack().map(|a| a.event_id.clone()),
    }
}

/// A command's view: the sender's record when it is ours (it knows about
/// timeouts and relay refusals), else the stream's chain.
pub fn view(hub: &Hub, id: &str, session: Option<&store::Session>, options: &[Choice]) -> Option<CommandView> {
    let mut v = match hub.sender().get(id) {
        Some(t) => mine(hub, t, options),
        None => chain(session?.command(id)?, session, options, &hub.sender().identity().source),
    };
    v.request = v.subject.as_deref().and_then(|r| session?.card(r)?.request()).map(words::asked);
    Some(v)
}

/// A `progress.status` outcome's phase (a pause's `paused`, a resume's
/// `resumed`).
fn phase(e: &aep_engine::Event) -> Option<String> {
    e.data()?.get("phase")?.as_str().map(str::to_owned)
}

fn done_words(outcome: &str, phase: Option<&str>) -> String {
    let what = match (EventKind::of(outcome).core(), phase) {
        (Some(EventType::AttentionAnswered), _) => "answer applied",
        (Some(EventType::AttentionResolved), _) => "request resolved",
        (Some(EventType::RunCancelled), _) => "run cancelled",
        (Some(EventType::SessionEnded), _) => "session ended",
        (Some(EventType::ProgressStatus), Some(PHASE_PAUSED)) => "the agent paused",
        (Some(EventType::ProgressStatus), Some(PHASE_RESUMED)) => "the agent resumed",
        (Some(EventType::ProgressStatus), Some(p)) => return format!("Done \u{2014} the agent reported {p}"),
        (Some(EventType::ProgressStatus), None) => "agent reported progress",
        (_, _) => return format!("Done \u{2014} {outcome}"),
    };
    format!("Done \u{2014} {what}")
}

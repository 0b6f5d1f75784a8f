//! One simulated agent: a persona's script on the engine's [`Agent`]. The
//! engine is the agent's side of the relay (hello, reconnects, positions,
//! dedupe, recorded acks, answer checks, outcome correlation); the script
//! only decides what the persona does and says, sans-IO like the engine:
//! time comes in as arguments, randomness from its own seeded generator.
//! The driver reports socket events to it as to any engine endpoint (see
//! [`endpoint`]) and calls [`DemoAgent::on_wake`] at
//! [`DemoAgent::next_wake`] while the connection is live.
//!
//! The agent works through runs of tool calls, keeps
//! [`Persona::keep_open`] attention requests open, and raises a new one a
//! little while after each is settled, so a console's inbox never empties.

mod endpoint;

use std::cell::RefCell;
use std::rc::Rc;

use aep_engine::client::agent::{Agent, AgentChange, AgentConfig};
use aep_engine::client::{Backoff, Config as ConnectionConfig, State};
use aep_engine::control::ack::NackReason;
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::command::CancelScope;
use aep_engine::control::target::outcome::{PHASE_PAUSED, PHASE_RESUMED};
use aep_engine::control::target::{Action, Received, Verdict};
use aep_engine::protocol::ids::{source_uri, BuildError, Draft, Identity};
use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::request_context::{CONTEXT, DESTRUCTIVE_BECAUSE};
use aep_engine::protocol::vocabulary::{types, EventType};
use aep_engine::{Capture, Event, UnixMs};
use serde_json::{json, Map, Value};

use super::cast::{Ask, Lifetime, Persona, INSTRUCT, PHASE_INSTRUCTED};
use super::rng::Rng;

/// The host part of every demo agent's `source`.
pub const HOST: &str = "relay-demo";
/// The ack window every demo agent declares; decisions take far less.
pub const ACK_WINDOW_MS: u64 = 5_000;
/// Reconnects quickly: a demo should be back within seconds of a relay
/// restart.
const BACKOFF: Backoff = Backoff { initial_ms: 250, max_ms: 5_000 };
/// The categories every demo agent emits.
const EMITS: [&str; 6] = ["session", "run", "tool", "progress", "attention", "control"];

/// How fast the demo runs: every delay is scaled by `permille / 1000`, so
/// tests can watch a minute of activity in a few seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    permille: u64,
}

impl Pace {
    pub const REAL_TIME: Pace = Pace { permille: 1_000 };

    /// `permille` thousandths of real time per delay (at least 1).
    pub fn scaled(permille: u64) -> Pace {
        Pace { permille: permille.max(1) }
    }

    fn ms(self, ms: u64) -> u64 {
        (ms.saturating_mul(self.permille) / 1_000).max(1)
    }
}

impl Default for Pace {
    fn default() -> Pace {
        Pace::REAL_TIME
    }
}

/// Whether the agent is doing anything (AEP-0004 `pause`/`resume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Working,
    Paused,
}

#[derive(Debug)]
enum Session {
    /// Starts on the first live connection.
    NotStarted,
    Live(Box<LiveSession>),
    /// Cancelled; a fresh session starts on [`Timer::NewSession`].
    Ended,
}

#[derive(Debug)]
struct LiveSession {
    id: String,
    /// `session.started`, redelivered on every reconnect.
    opening: Event,
    began: UnixMs,
    runs: u64,
    run: Option<Run>,
}

#[derive(Debug)]
struct Run {
    id: String,
    /// `run.started`, redelivered on every reconnect.
    opening: Event,
    began: UnixMs,
    steps: u64,
    done: u64,
    tool: Option<ToolCall>,
}

#[derive(Debug)]
struct ToolCall {
    call_id: String,
    name: &'static str,
    began: UnixMs,
}

/// An open request the agent raised.
#[derive(Debug)]
struct Raised {
    event: Event,
    ask: &'static Ask,
}

#[derive(Clone, Debug, PartialEq)]
enum Timer {
    Activity,
    ToolDone,
    Raise,
    NewRun,
    NewSession,
    /// `expires_at` of this request passed.
    Expire(String),
    /// The out-of-band decision on this request arrived.
    DecidedElsewhere(String),
    /// Withdraw a request after refusing an answer to it.
    Withdraw {
        request: String,
        command: String,
    },
    /// A command frame the agent is still thinking about.
    Decide(Box<Pondered>),
}

impl Timer {
    /// At most one of these is armed; arming again keeps the earlier.
    fn is_singleton(&self) -> bool {
        matches!(self, Timer::Activity | Timer::ToolDone | Timer::Raise | Timer::NewRun | Timer::NewSession)
    }
}

/// A command as it arrived, held back until the persona has thought
/// about it; then the engine decides and acks it.
#[derive(Clone, Debug, PartialEq)]
struct Pondered {
    frame: String,
    session: Option<String>,
    run: Option<String>,
}

/// Wake-ups handled in one call at most, so a bug cannot spin forever.
const MAX_TIMERS_PER_WAKE: usize = 256;

/// What the persona's verdict on one command depends on: where the command
/// is addressed, and what the agent is working on when it decides.
#[derive(Clone, Debug, Default)]
struct Deciding {
    command_session: Option<String>,
    command_run: Option<String>,
    live: Option<String>,
    run: Option<String>,
    refuses: Option<&'static str>,
}

impl Deciding {
    /// The persona's own call on a command that passed the protocol's
    /// checks: a command for an ended session or a run no longer running is
    /// `invalid`; answers may be refused; an instruction needs its words.
    fn verdict(&self, action: &Action) -> Verdict {
        let invalid = |detail: String| Verdict::Reject { reason: NackReason::Invalid, detail: Some(detail) };
        if self.command_session != self.live {
            return invalid(format!("session {} has ended", self.command_session.as_deref().unwrap_or_default()));
        }
        match action {
            Action::Respond { .. } => match self.refuses {
                Some(detail) => Verdict::Reject { reason: NackReason::Refused, detail: Some(detail.into()) },
                None => Verdict::Accept,
            },
            Action::Cancel { scope: CancelScope::Run, .. } if self.command_run != self.run => {
                invalid(format!("run {} is not running", self.command_run.as_deref().unwrap_or_default()))
            }
            Action::Vendor { ty, data } if ty == INSTRUCT && !data.get("text").is_some_and(Value::is_string) => {
                invalid("an instruction carries its words in data.text".into())
            }
            _ => Verdict::Accept,
        }
    }
}

pub struct DemoAgent {
    agent: Agent,
    /// Filled in while the engine decides a command, for the persona's verdict.
    deciding: Rc<RefCell<Option<Deciding>>>,
    persona: &'static Persona,
    pace: Pace,
    rng: Rng,
    session: Session,
    work: Work,
    /// Asks are raised in the cast's order, so the first ones (which the
    /// cast puts up front) are on screen from the start.
    next_ask: usize,
    next_prompt: usize,
    open: Vec<Raised>,
    timers: Vec<(UnixMs, Timer)>,
}

impl DemoAgent {
    /// `now` is the agent's start: its epoch, which a restarted agent must
    /// exceed (AEP-0001 §7).
    pub fn new(persona: &'static Persona, seed: u64, pace: Pace, now: UnixMs) -> DemoAgent {
        let mut rng = Rng::new(seed);
        let mut connection = ConnectionConfig::consumer();
        connection.emits = Some(EMITS.map(String::from).to_vec());
        connection.backoff = BACKOFF;
        let config = AgentConfig {
            identity: Identity::new(source_uri(HOST, persona.name, None), persona.name),
            accepts: persona.accepts.iter().map(|t| t.to_string()).collect(),
            ack_window_ms: Some(ACK_WINDOW_MS),
            // The cast's text is its own, made up: it may travel in full.
            ceiling: Capture::Full,
            epoch: now.0,
            seed: rng.next_u64(),
            connection,
        };
        let mut agent = Agent::new(config).expect("the cast declares command types only");
        let deciding: Rc<RefCell<Option<Deciding>>> = Rc::default();
        let asked = deciding.clone();
        agent.set_decider(Some(Box::new(move |action| {
            asked.borrow().as_ref().map_or(Verdict::Accept, |deciding| deciding.verdict(action))
        })));
        DemoAgent {
            agent,
            deciding,
            persona,
            pace,
            rng,
            session: Session::NotStarted,
            work: Work::Working,
            next_ask: 0,
            next_prompt: 0,
            open: Vec::new(),
            timers: Vec::new(),
        }
    }

    pub fn persona(&self) -> &'static Persona {
        self.persona
    }

    /// The session being worked in, once started.
    pub fn session(&self) -> Option<&str> {
        match &self.session {
            Session::Live(s) => Some(&s.id),
            _ => None,
        }
    }

    pub fn work(&self) -> Work {
        self.work
    }

    /// Ids of the requests currently open.
    pub fn open_requests(&self) -> Vec<&str> {
        self.open.iter().map(|r| r.event.id()).collect()
    }

    /// When [`DemoAgent::on_wake`] wants to be called.
    pub fn next_wake(&self) -> Option<UnixMs> {
        self.timers.iter().map(|(at, _)| *at).min()
    }

    /// Runs every timer that is due.
    pub fn on_wake(&mut self, now: UnixMs) {
        for _ in 0..MAX_TIMERS_PER_WAKE {
            let due = self.timers.iter().enumerate().filter(|(_, (at, _))| *at <= now).min_by_key(|(_, (at, _))| *at);
            let Some((i, _)) = due else { return };
            let (_, timer) = self.timers.remove(i);
            self.fire(timer, now);
        }
    }

    /// What the engine reported (the driver's [`Step::Notice`]).
    ///
    /// [`Step::Notice`]: aep_driver_tokio::Step::Notice
    pub fn on_change(&mut self, change: AgentChange, now: UnixMs) {
        let name = self.persona.name;
        match change {
            AgentChange::State(State::Live) => self.on_live(now),
            AgentChange::State(_) => {}
            AgentChange::Command { command, received } => self.on_command(&command, received, now),
            AgentChange::Disconnected { reason } => tracing::debug!("demo {name}: disconnected: {reason}"),
            AgentChange::Unreadable { command, error } => {
                tracing::warn!("demo {name}: command {} not taken: {error}", command.id())
            }
            AgentChange::Error(e) => tracing::warn!("demo {name}: relay error {}: {:?}", e.code, e.detail),
            AgentChange::Violation(v) => tracing::warn!("demo {name}: {v}"),
        }
    }

    /// The connection is live: start the session the first time; after a
    /// reconnect, redeliver what a relay needs to route to us and what a
    /// restarted relay would otherwise have lost (same bytes, same ids).
    fn on_live(&mut self, now: UnixMs) {
        match &self.session {
            Session::NotStarted => self.start_session(now),
            Session::Live(s) => {
                let mut again = vec![s.opening.clone()];
                again.extend(s.run.as_ref().map(|r| r.opening.clone()));
                again.extend(self.open.iter().map(|r| r.event.clone()));
                again.sort_by_key(|e| e.seq());
                again.iter().for_each(|e| self.send(e));
            }
            Session::Ended => {}
        }
    }

    // ----- commands ----------------------------------------------------------

    /// A command frame arrived: decided at once, or after the persona's
    /// thinking time (well inside its ack window).
    fn consider(&mut self, frame: &str, command: &Event, now: UnixMs) {
        let pondered = Pondered {
            frame: frame.to_owned(),
            session: command.session().map(str::to_owned),
            run: command.run().map(str::to_owned),
        };
        let (lo, hi) = self.persona.think_ms;
        if hi == 0 {
            self.decide(pondered, now);
        } else {
            let delay = self.rng.between(lo, hi);
            self.arm(now, delay, Timer::Decide(Box::new(pondered)));
        }
    }

    /// Hands the command to the engine, which checks it, asks the persona's
    /// verdict, acks it and reports it back through [`DemoAgent::on_change`].
    fn decide(&mut self, pondered: Pondered, now: UnixMs) {
        let deciding = Deciding {
            command_session: pondered.session,
            command_run: pondered.run,
            live: self.session().map(str::to_owned),
            run: self.run().map(|r| r.id.clone()),
            refuses: self.persona.refuses_answers,
        };
        self.deciding.replace(Some(deciding));
        self.agent.handle_text(&pondered.frame, now);
        self.deciding.replace(None);
    }

    /// The engine's decision on a command: act on a fresh acceptance; after
    /// refusing an answer, withdraw the request a little later.
    fn on_command(&mut self, command: &Event, received: Received, now: UnixMs) {
        match received {
            Received::Fresh { action, .. } => self.act(command, action, now),
            Received::Nacked { reason: NackReason::Refused, .. }
                if command.kind() == EventKind::Core(EventType::ControlAttentionRespond) =>
            {
                if let Some(request) = command.subject().filter(|id| self.is_open(id)).map(str::to_owned) {
                    let delay = self.rng.between(3_000, 6_000);
                    self.arm(now, delay, Timer::Withdraw { request, command: command.id().to_owned() });
                }
            }
            Received::Nacked { .. } | Received::Duplicate { .. } => {}
        }
    }

    fn act(&mut self, command: &Event, action: Action, now: UnixMs) {
        match action {
            Action::Respond { request, applied } => {
                let (target, seqs) = self.agent.target();
                match target.answer_outcomes(command, &request, &applied.answer, now, seqs) {
                    Ok(events) => events.iter().for_each(|e| self.send(e)),
                    Err(e) => self.built_nothing("answer outcomes", &e),
                }
                if let Some(raised) = self.take_open(&request.id) {
                    let refused = matches!(&applied.answer, Answer::Option { id, .. } if Some(id.as_str()) == raised.ask.refusing);
                    let message = if refused { "Understood, skipping that step" } else { raised.ask.then };
                    self.status("working", message, now);
                }
                let delay = self.rng.between(3_000, 8_000);
                self.arm(now, delay, Timer::Raise);
            }
            Action::Cancel { scope: CancelScope::Run, reason } => {
                let (target, seqs) = self.agent.target();
                let cancelled = target.run_cancelled(command, reason.as_deref(), now, seqs);
                self.send_built(types::RUN_CANCELLED, cancelled);
                self.dismiss_open(command.id(), now);
                if let Session::Live(s) = &mut self.session {
                    s.run = None;
                }
                let delay = self.rng.between(4_000, 8_000);
                self.arm(now, delay, Timer::NewRun);
            }
            Action::Cancel { scope: CancelScope::Session, reason } => self.cancel_session(command, reason, now),
            Action::Pause => {
                self.work = Work::Paused;
                self.progress(command, PHASE_PAUSED, "Paused by an operator", now);
            }
            Action::Resume => {
                self.work = Work::Working;
                self.progress(command, PHASE_RESUMED, "Resuming where I left off", now);
                let (a, r) = (self.rng.between(300, 1_200), self.rng.between(800, 2_500));
                self.arm(now, a, Timer::Activity);
                self.arm(now, r, Timer::Raise);
            }
            Action::Vendor { data, .. } => {
                let text = data.get("text").and_then(Value::as_str).unwrap_or_default();
                self.progress(command, PHASE_INSTRUCTED, &format!("Following the instruction: {text}"), now);
            }
        }
    }

    fn cancel_session(&mut self, command: &Event, reason: Option<String>, now: UnixMs) {
        let Session::Live(s) = &self.session else { return };
        let (began, runs, run) = (s.began, s.runs, s.run.as_ref().map(|r| r.id.clone()));
        if let Some(run) = run {
            let mut data = json!({ "by": "control" });
            let mut draft = Draft::new(types::RUN_CANCELLED).run(run);
            if let Some(r) = reason {
                data["reason"] = r.into();
                draft = draft.capture(Capture::Redacted);
            }
            let (target, seqs) = self.agent.target();
            let cancelled = target.outcome(command, draft.data(data), now, seqs);
            self.send_built(types::RUN_CANCELLED, cancelled);
        }
        // A session never ends with a request still pending (AEP-0002 §7).
        self.dismiss_open(command.id(), now);
        let ended = Draft::new(types::SESSION_ENDED).data(json!({
            "reason": "killed", "duration_ms": now.since(began), "runs": runs,
        }));
        let (target, seqs) = self.agent.target();
        let ended = target.outcome(command, ended, now, seqs);
        self.send_built(types::SESSION_ENDED, ended);
        self.session = Session::Ended;
        self.work = Work::Working;
        let delay = self.rng.between(6_000, 10_000);
        self.arm(now, delay, Timer::NewSession);
    }

    /// Dismisses every open request: `cause` ended the work they were for.
    fn dismiss_open(&mut self, cause: &str, now: UnixMs) {
        for raised in std::mem::take(&mut self.open) {
            self.close(&raised, cause, "dismissed", now);
        }
    }

    // ----- timers ------------------------------------------------------------

    fn fire(&mut self, timer: Timer, now: UnixMs) {
        match timer {
            Timer::Activity => self.activity(now),
            Timer::ToolDone => self.tool_done(now),
            Timer::Raise => self.raise_if_wanted(now),
            Timer::NewRun => self.start_run(now),
            Timer::NewSession => {
                if matches!(self.session, Session::Ended) {
                    self.start_session(now);
                }
            }
            Timer::Expire(id) => {
                if let Some(raised) = self.take_open(&id) {
                    let after = UnixMs::parse_rfc3339(raised.event.time()).map_or(0, |t| now.since(t));
                    let timeout = Draft::new(types::ATTENTION_TIMEOUT)
                        .subject(id.clone())
                        .cause(id.clone())
                        .maybe_run(raised.event.run())
                        .data(json!({ "after_ms": after }));
                    self.emit(timeout, now);
                    self.agent.target().0.close_request(&id);
                    self.status("working", "No answer in time; skipping that step", now);
                    let delay = self.rng.between(2_000, 5_000);
                    self.arm(now, delay, Timer::Raise);
                }
            }
            Timer::DecidedElsewhere(id) => {
                if let Some(raised) = self.take_open(&id) {
                    let Lifetime::OutOfBand { by, .. } = raised.ask.lifetime else { return };
                    let option = raised.ask.options.first().map_or("approve", |(id, _)| id);
                    let answered = Draft::new(types::ATTENTION_ANSWERED)
                        .subject(id.clone())
                        .cause(id.clone())
                        .maybe_run(raised.event.run())
                        .data(json!({ "answer": { "option": option }, "by": by, "via": "oob" }));
                    if let Some(answered) = self.emit(answered, now) {
                        self.close(&raised, answered.id(), "answered", now);
                    }
                    self.status("working", raised.ask.then, now);
                    let delay = self.rng.between(3_000, 8_000);
                    self.arm(now, delay, Timer::Raise);
                }
            }
            Timer::Withdraw { request, command } => {
                if let Some(raised) = self.take_open(&request) {
                    self.close(&raised, &command, "dismissed", now);
                    let delay = self.rng.between(4_000, 9_000);
                    self.arm(now, delay, Timer::Raise);
                }
            }
            Timer::Decide(pondered) => self.decide(*pondered, now),
        }
    }

    fn start_session(&mut self, now: UnixMs) {
        let id = format!("{}-{}", self.persona.name, self.rng.token(6));
        let opening = Draft::new(types::SESSION_STARTED).capture(Capture::Redacted).data(json!({
            "label": self.persona.label,
            "client": { "name": "aep-relay-demo", "version": env!("CARGO_PKG_VERSION") },
            "gen_ai.request.model": self.persona.model,
            "cwd": self.persona.cwd,
        }));
        let Some(opening) = self.emit_in(&id, opening, now) else { return };
        self.session = Session::Live(Box::new(LiveSession { id, opening, began: now, runs: 0, run: None }));
        self.work = Work::Working;
        self.start_run(now);
    }

    fn start_run(&mut self, now: UnixMs) {
        let Session::Live(s) = &self.session else { return };
        if s.run.is_some() {
            return;
        }
        let prompts = self.persona.run_prompts;
        let prompt = prompts[self.next_prompt % prompts.len()];
        self.next_prompt += 1;
        let id = format!("run-{}", self.rng.token(8));
        let opening = Draft::new(types::RUN_STARTED)
            .run(id.clone())
            .capture(Capture::Redacted)
            .data(json!({ "trigger": "user", "prompt": prompt }));
        let Some(opening) = self.emit(opening, now) else { return };
        let (lo, hi) = self.persona.steps;
        let steps = self.rng.between(lo, hi);
        if let Session::Live(s) = &mut self.session {
            s.runs += 1;
            s.run = Some(Run { id, opening, began: now, steps, done: 0, tool: None });
        }
        let (a, r) = (self.rng.between(500, 2_000), self.rng.between(300, 2_500));
        self.arm(now, a, Timer::Activity);
        self.arm(now, r, Timer::Raise);
    }

    fn activity(&mut self, now: UnixMs) {
        if self.work == Work::Paused {
            return;
        }
        let Some(run) = self.run() else { return };
        if run.tool.is_some() {
            return;
        }
        let run_id = run.id.clone();
        let tools = self.persona.tools;
        let tool = &tools[self.rng.below(tools.len())];
        let call_id = format!("call-{}", self.rng.token(8));
        let requested = Draft::new(types::TOOL_REQUESTED).run(run_id).capture(Capture::Redacted).data(
            json!({ "tool": { "name": tool.name, "call_id": call_id }, "args_redacted": { "input": tool.args } }),
        );
        if self.emit(requested, now).is_none() {
            return;
        }
        if let Some(run) = self.run_mut() {
            run.tool = Some(ToolCall { call_id, name: tool.name, began: now });
        }
        let delay = self.rng.between(400, 2_500);
        self.arm(now, delay, Timer::ToolDone);
    }

    fn tool_done(&mut self, now: UnixMs) {
        let Some(run) = self.run_mut() else { return };
        let Some(call) = run.tool.take() else { return };
        run.done += 1;
        let (run_id, done, steps, began) = (run.id.clone(), run.done, run.steps, run.began);
        let completed = Draft::new(types::TOOL_COMPLETED).run(run_id.clone()).data(json!({
            "tool": { "name": call.name, "call_id": call.call_id },
            "duration_ms": now.since(call.began),
            "status": "ok",
        }));
        self.emit(completed, now);
        let percent = (done * 100 / steps.max(1)).min(100);
        let progress = Draft::new(types::PROGRESS_STATUS)
            .run(run_id.clone())
            .data(json!({ "phase": "working", "percent": percent }));
        self.emit(progress, now);
        // A run ends only with nothing waiting on a person.
        if done >= steps && self.open.is_empty() {
            let finished = Draft::new(types::RUN_FINISHED).run(run_id).capture(Capture::Redacted).data(json!({
                "duration_ms": now.since(began),
                "summary": format!("Finished after {done} tool calls"),
            }));
            self.emit(finished, now);
            if let Session::Live(s) = &mut self.session {
                s.run = None;
            }
            let delay = self.rng.between(3_000, 6_000);
            self.arm(now, delay, Timer::NewRun);
        } else {
            let delay = self.rng.between(1_500, 5_000);
            self.arm(now, delay, Timer::Activity);
        }
    }

    fn raise_if_wanted(&mut self, now: UnixMs) {
        if self.work == Work::Paused || self.run().is_none() || self.open.len() >= self.persona.keep_open {
            return;
        }
        self.raise(now);
        if self.open.len() < self.persona.keep_open {
            let delay = self.rng.between(1_500, 4_000);
            self.arm(now, delay, Timer::Raise);
        }
    }

    fn raise(&mut self, now: UnixMs) {
        let asks = self.persona.asks;
        let Some(ask) = (0..asks.len())
            .map(|i| &asks[(self.next_ask + i) % asks.len()])
            .find(|a| !self.open.iter().any(|r| std::ptr::eq(r.ask, *a)))
        else {
            return;
        };
        self.next_ask += 1;
        let Some(run) = self.run().map(|r| r.id.clone()) else { return };
        let mut data = Map::new();
        data.insert("kind".into(), ask.kind.as_str().into());
        data.insert("prompt".into(), ask.prompt.into());
        if !ask.options.is_empty() {
            let options: Vec<Value> =
                ask.options.iter().map(|(id, label)| json!({ "id": id, "label": label })).collect();
            data.insert("options".into(), options.into());
        }
        if let Some(fields) = ask.form {
            data.insert("fields".into(), fields());
        }
        let expires = match ask.lifetime {
            Lifetime::Expires { after_ms } => Some(now + self.pace.ms(after_ms)),
            _ => None,
        };
        if let Some(at) = expires {
            data.insert("expires_at".into(), at.to_rfc3339().into());
        }
        let via = if matches!(ask.lifetime, Lifetime::OutOfBand { .. }) { "oob" } else { "control" };
        data.insert("respond_via".into(), json!([via]));
        if let Some(because) = ask.destructive {
            data.insert("destructive".into(), true.into());
            data.insert(DESTRUCTIVE_BECAUSE.into(), because.into());
        }
        // The context is captured at `full` only (AEP-0002 §5).
        let capture = match ask.context {
            Some(context) => {
                data.insert(CONTEXT.into(), context());
                Capture::Full
            }
            None => Capture::Redacted,
        };
        let draft = Draft::new(types::ATTENTION_REQUESTED)
            .run(run)
            .severity(ask.severity)
            .capture(capture)
            .data(Value::Object(data));
        let Some(session) = self.session().map(str::to_owned) else { return };
        let event = match self.agent.ask(draft, &session, ask.refusing, now) {
            Ok(event) => event,
            Err(e) => {
                tracing::error!("demo {}: could not raise a request: {e}", self.persona.name);
                return;
            }
        };
        let id = event.id().to_owned();
        match ask.lifetime {
            Lifetime::UntilAnswered => {}
            Lifetime::Expires { .. } => {
                let at = expires.unwrap_or(now);
                self.timers.push((at, Timer::Expire(id)));
            }
            Lifetime::OutOfBand { after_ms: (lo, hi), .. } => {
                let delay = self.rng.between(lo, hi);
                self.arm(now, delay, Timer::DecidedElsewhere(id));
            }
        }
        self.open.push(Raised { event, ask });
    }

    // ----- helpers -----------------------------------------------------------

    /// Arms `timer` `delay` ms (at real pace) from `now`.
    fn arm(&mut self, now: UnixMs, delay: u64, timer: Timer) {
        let at = now + self.pace.ms(delay);
        if timer.is_singleton() {
            if let Some(armed) = self.timers.iter_mut().find(|(_, t)| *t == timer) {
                armed.0 = armed.0.min(at);
                return;
            }
        }
        self.timers.push((at, timer));
    }

    fn run(&self) -> Option<&Run> {
        match &self.session {
            Session::Live(s) => s.run.as_ref(),
            _ => None,
        }
    }

    fn run_mut(&mut self) -> Option<&mut Run> {
        match &mut self.session {
            Session::Live(s) => s.run.as_mut(),
            _ => None,
        }
    }

    fn is_open(&self, id: &str) -> bool {
        self.open.iter().any(|r| r.event.id() == id)
    }

    fn take_open(&mut self, id: &str) -> Option<Raised> {
        let i = self.open.iter().position(|r| r.event.id() == id)?;
        Some(self.open.remove(i))
    }

    /// `attention.resolved` for `raised`, and the engine stops taking answers.
    fn close(&mut self, raised: &Raised, cause: &str, resolution: &str, now: UnixMs) {
        let id = raised.event.id().to_owned();
        let latency = UnixMs::parse_rfc3339(raised.event.time()).map_or(0, |t| now.since(t));
        let resolved = Draft::new(types::ATTENTION_RESOLVED)
            .subject(id.clone())
            .cause(cause)
            .maybe_run(raised.event.run())
            .data(json!({ "resolution": resolution, "latency_ms": latency }));
        self.emit(resolved, now);
        self.agent.target().0.close_request(&id);
    }

    /// A `progress.status` outcome of `command` (pause, resume, instruct).
    fn progress(&mut self, command: &Event, phase: &str, message: &str, now: UnixMs) {
        let (target, seqs) = self.agent.target();
        let status = target.progress_status(command, phase, Some(message), now, seqs);
        self.send_built(types::PROGRESS_STATUS, status);
    }

    /// An ordinary `progress.status` about the work.
    fn status(&mut self, phase: &str, message: &str, now: UnixMs) {
        let draft = Draft::new(types::PROGRESS_STATUS)
            .maybe_run(self.run().map(|r| r.id.clone()))
            .capture(Capture::Redacted)
            .data(json!({ "phase": phase, "message": message }));
        self.emit(draft, now);
    }

    /// Emits `draft` in the live session.
    fn emit(&mut self, draft: Draft, now: UnixMs) -> Option<Event> {
        let session = self.session()?.to_owned();
        self.emit_in(&session, draft, now)
    }

    /// Emits `draft` in `session`, at the engine's next position there.
    fn emit_in(&mut self, session: &str, draft: Draft, now: UnixMs) -> Option<Event> {
        let ty = draft.ty().to_owned();
        match self.agent.emit(draft, Some(session), None, now) {
            Ok(event) => Some(event),
            Err(e) => {
                tracing::error!("demo {}: {ty} not emitted: {e}", self.persona.name);
                None
            }
        }
    }

    /// Sends an outcome the engine built for a command.
    fn send_built(&mut self, what: &str, built: Result<Event, BuildError>) {
        match built {
            Ok(event) => self.send(&event),
            Err(e) => self.built_nothing(what, &e),
        }
    }

    fn send(&mut self, event: &Event) {
        if let Err(e) = self.agent.send(event) {
            tracing::warn!("demo {}: {} not sent: {e}", self.persona.name, event.ty());
        }
    }

    fn built_nothing(&self, what: &str, e: &BuildError) {
        tracing::error!("demo {}: could not build {what}: {e}", self.persona.name);
    }
}

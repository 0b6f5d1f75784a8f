//! One simulated agent as a sans-IO state machine, like the engine it is
//! built on: time comes in as arguments, randomness from its own seeded
//! generator, events go out through [`Agent::poll_event`]. The driver
//! feeds it commands and wake-ups; everything protocol (dedupe, recorded
//! acks, answer checks, outcome correlation) is the engine's
//! [`ControlTarget`].
//!
//! The agent works through runs of tool calls, keeps
//! [`Persona::keep_open`] attention requests open, and raises a new one a
//! little while after each is settled, so a console's inbox never empties.

use std::collections::VecDeque;

use aep_client::control::ack::NackReason;
use aep_client::control::answer::Answer;
use aep_client::control::sender::command::{CancelScope, RESPOND};
use aep_client::control::target::outcome::{PHASE_PAUSED, PHASE_RESUMED};
use aep_client::control::target::{Action, ControlTarget, Received, SeqCounter, Sequencer, Verdict};
use aep_client::protocol::ids::{source_uri, ulid, BuildError, Draft, Identity};
use aep_client::{Capture, Event, UnixMs};
use serde_json::{json, Map, Value};

use super::cast::{Ask, Lifetime, Persona, INSTRUCT, PHASE_INSTRUCTED};
use super::rng::Rng;

/// The host part of every demo agent's `source`.
pub const HOST: &str = "relay-demo";
/// The ack window every demo agent declares; decisions take far less.
pub const ACK_WINDOW_MS: u64 = 5_000;

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
    /// A command whose decision the agent is still thinking about.
    Decide(Box<Event>),
}

impl Timer {
    /// At most one of these is armed; arming again keeps the earlier.
    fn is_singleton(&self) -> bool {
        matches!(self, Timer::Activity | Timer::ToolDone | Timer::Raise | Timer::NewRun | Timer::NewSession)
    }
}

/// Wake-ups handled in one call at most, so a bug cannot spin forever.
const MAX_TIMERS_PER_WAKE: usize = 256;
/// Events waiting for the driver; the oldest activity is dropped beyond it.
const MAX_QUEUED: usize = 1_024;

pub struct Agent {
    persona: &'static Persona,
    pace: Pace,
    identity: Identity,
    target: ControlTarget,
    seqs: SeqCounter,
    rng: Rng,
    session: Session,
    work: Work,
    /// Asks are raised in the cast's order, so the first ones (which the
    /// cast puts up front) are on screen from the start.
    next_ask: usize,
    next_prompt: usize,
    open: Vec<Raised>,
    timers: Vec<(UnixMs, Timer)>,
    out: VecDeque<Event>,
}

impl Agent {
    pub fn new(persona: &'static Persona, seed: u64, pace: Pace) -> Agent {
        let identity = Identity::new(source_uri(HOST, persona.name, None), persona.name);
        // The cast's text is its own, made up: it may travel in full.
        let target = ControlTarget::new(identity.clone(), persona.accepts.iter().copied())
            .expect("the cast declares command types only")
            .with_ceiling(Capture::Full);
        let rng = Rng::new(seed);
        Agent {
            persona,
            pace,
            identity,
            target,
            seqs: SeqCounter::new(),
            rng,
            session: Session::NotStarted,
            work: Work::Working,
            next_ask: 0,
            next_prompt: 0,
            open: Vec::new(),
            timers: Vec::new(),
            out: VecDeque::new(),
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

    /// A seed for the connection's reconnect jitter.
    pub fn draw_seed(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// The connection is live: start the session the first time; after a
    /// reconnect, redeliver what a relay needs to route to us and what a
    /// restarted relay would otherwise have lost (same bytes, same ids).
    pub fn on_live(&mut self, now: UnixMs) {
        match &self.session {
            Session::NotStarted => self.start_session(now),
            Session::Live(s) => {
                let mut again = vec![s.opening.clone()];
                again.extend(s.run.as_ref().map(|r| r.opening.clone()));
                again.extend(self.open.iter().map(|r| r.event.clone()));
                again.sort_by_key(|e| e.seq());
                self.out.extend(again);
            }
            Session::Ended => {}
        }
    }

    /// A command addressed to one of our sessions.
    pub fn on_command(&mut self, command: &Event, now: UnixMs) {
        if !command.is_command() {
            return;
        }
        let (lo, hi) = self.persona.think_ms;
        if hi == 0 {
            self.decide(command, now);
        } else {
            let delay = self.rng.between(lo, hi);
            self.arm(now, delay, Timer::Decide(Box::new(command.clone())));
        }
    }

    /// When [`Agent::on_wake`] wants to be called.
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

    /// The next event to send.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.out.pop_front()
    }

    // ----- commands ----------------------------------------------------------

    fn decide(&mut self, command: &Event, now: UnixMs) {
        let live = self.session().map(str::to_owned);
        let run = match &self.session {
            Session::Live(s) => s.run.as_ref().map(|r| r.id.clone()),
            _ => None,
        };
        let refuses = self.persona.refuses_answers;
        let verdict = |action: &Action| -> Verdict {
            let invalid = |detail: String| Verdict::Reject { reason: NackReason::Invalid, detail: Some(detail) };
            if command.session() != live.as_deref() {
                return invalid(format!("session {} has ended", command.session().unwrap_or_default()));
            }
            match action {
                Action::Respond { .. } => match refuses {
                    Some(detail) => Verdict::Reject { reason: NackReason::Refused, detail: Some(detail.into()) },
                    None => Verdict::Accept,
                },
                Action::Cancel { scope: CancelScope::Run, .. } if command.run() != run.as_deref() => {
                    invalid(format!("run {} is not running", command.run().unwrap_or_default()))
                }
                Action::Vendor { ty, data } if ty == INSTRUCT && !data.get("text").is_some_and(Value::is_string) => {
                    invalid("an instruction carries its words in data.text".into())
                }
                _ => Verdict::Accept,
            }
        };
        let random = self.rng.id_bits();
        let received = self.target.handle_command_with(command, now, random, &mut self.seqs, verdict);
        match received {
            Ok(Received::Duplicate { ack }) => match Event::parse(&ack) {
                Ok(ack) => self.queue(ack),
                Err(e) => tracing::error!("demo {}: recorded ack unreadable: {e}", self.persona.name),
            },
            Ok(Received::Nacked { ack, reason }) => {
                self.queue(ack);
                let open_request = command.subject().filter(|id| self.is_open(id)).map(str::to_owned);
                if let (NackReason::Refused, RESPOND, Some(request)) = (reason, command.ty(), open_request) {
                    let delay = self.rng.between(3_000, 6_000);
                    self.arm(now, delay, Timer::Withdraw { request, command: command.id().to_owned() });
                }
            }
            Ok(Received::Fresh { command, action, ack }) => {
                self.queue(ack);
                self.act(&command, action, now);
            }
            Err(e) => tracing::warn!("demo {}: command {} not taken: {e}", self.persona.name, command.id()),
        }
    }

    fn act(&mut self, command: &Event, action: Action, now: UnixMs) {
        match action {
            Action::Respond { request, applied } => {
                let random = self.rng.id_bits();
                let outcomes =
                    self.target.answer_outcomes(command, &request, &applied.answer, now, random, &mut self.seqs);
                match outcomes {
                    Ok(events) => events.into_iter().for_each(|e| self.queue(e)),
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
                let random = self.rng.id_bits();
                let cancelled = self.target.run_cancelled(command, reason.as_deref(), now, random, &mut self.seqs);
                self.queue_built("run.cancelled", cancelled);
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
            let mut draft = Draft::new("run.cancelled").run(run);
            if let Some(r) = reason {
                data["reason"] = r.into();
                draft = draft.capture(Capture::Redacted);
            }
            let random = self.rng.id_bits();
            let cancelled = self.target.outcome(command, draft.data(data), now, random, &mut self.seqs);
            self.queue_built("run.cancelled", cancelled);
        }
        // A session never ends with a request still pending (AEP-0002 §7).
        self.dismiss_open(command.id(), now);
        let ended = Draft::new("session.ended").data(json!({
            "reason": "killed", "duration_ms": now.since(began), "runs": runs,
        }));
        let random = self.rng.id_bits();
        let ended = self.target.outcome(command, ended, now, random, &mut self.seqs);
        self.queue_built("session.ended", ended);
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
                    let timeout = Draft::new("attention.timeout")
                        .subject(id.clone())
                        .cause(id.clone())
                        .maybe_run(raised.event.run())
                        .data(json!({ "after_ms": after }));
                    self.emit(timeout, now);
                    self.target.close_request(&id);
                    self.status("working", "No answer in time; skipping that step", now);
                    let delay = self.rng.between(2_000, 5_000);
                    self.arm(now, delay, Timer::Raise);
                }
            }
            Timer::DecidedElsewhere(id) => {
                if let Some(raised) = self.take_open(&id) {
                    let Lifetime::OutOfBand { by, .. } = raised.ask.lifetime else { return };
                    let option = raised.ask.options.first().map_or("approve", |(id, _)| id);
                    let answered = Draft::new("attention.answered")
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
            Timer::Decide(command) => self.decide(&command, now),
        }
    }

    fn start_session(&mut self, now: UnixMs) {
        let id = format!("{}-{}", self.persona.name, self.rng.token(6));
        let opening = Draft::new("session.started").capture(Capture::Redacted).data(json!({
            "label": self.persona.label,
            "client": { "name": "aep-relay-demo", "version": env!("CARGO_PKG_VERSION") },
            "gen_ai.request.model": self.persona.model,
            "cwd": self.persona.cwd,
        }));
        let Some(opening) = self.build_in(&id, opening, now) else { return };
        self.queue(opening.clone());
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
        let opening = Draft::new("run.started")
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
        let requested = Draft::new("tool.requested").run(run_id).capture(Capture::Redacted).data(
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
        let completed = Draft::new("tool.completed").run(run_id.clone()).data(json!({
            "tool": { "name": call.name, "call_id": call.call_id },
            "duration_ms": now.since(call.began),
            "status": "ok",
        }));
        self.emit(completed, now);
        let percent = (done * 100 / steps.max(1)).min(100);
        let progress =
            Draft::new("progress.status").run(run_id.clone()).data(json!({ "phase": "working", "percent": percent }));
        self.emit(progress, now);
        // A run ends only with nothing waiting on a person.
        if done >= steps && self.open.is_empty() {
            let finished = Draft::new("run.finished").run(run_id).capture(Capture::Redacted).data(json!({
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
        let draft = Draft::new("attention.requested")
            .run(run)
            .severity(ask.severity)
            .capture(Capture::Redacted)
            .data(Value::Object(data));
        let Some(event) = self.emit(draft, now) else { return };
        if let Err(e) = self.target.register_request(&event, ask.refusing) {
            tracing::error!("demo {}: request {} not registered: {e}", self.persona.name, event.id());
        }
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
        let resolved = Draft::new("attention.resolved")
            .subject(id.clone())
            .cause(cause)
            .maybe_run(raised.event.run())
            .data(json!({ "resolution": resolution, "latency_ms": latency }));
        self.emit(resolved, now);
        self.target.close_request(&id);
    }

    /// A `progress.status` outcome of `command` (pause, resume, instruct).
    fn progress(&mut self, command: &Event, phase: &str, message: &str, now: UnixMs) {
        let random = self.rng.id_bits();
        let status = self.target.progress_status(command, phase, Some(message), now, random, &mut self.seqs);
        self.queue_built("progress.status", status);
    }

    /// An ordinary `progress.status` about the work.
    fn status(&mut self, phase: &str, message: &str, now: UnixMs) {
        let draft = Draft::new("progress.status")
            .maybe_run(self.run().map(|r| r.id.clone()))
            .capture(Capture::Redacted)
            .data(json!({ "phase": phase, "message": message }));
        self.emit(draft, now);
    }

    /// Builds `draft` in the live session and queues it.
    fn emit(&mut self, draft: Draft, now: UnixMs) -> Option<Event> {
        let session = self.session()?.to_owned();
        let event = self.build_in(&session, draft, now)?;
        self.queue(event.clone());
        Some(event)
    }

    fn build_in(&mut self, session: &str, draft: Draft, now: UnixMs) -> Option<Event> {
        let ty = draft.ty().to_owned();
        let draft = draft.session(session).seq(self.seqs.next_seq(session));
        match draft.build(&self.identity, ulid(now, self.rng.id_bits()), now) {
            Ok(event) => Some(event),
            Err(e) => {
                self.built_nothing(&ty, &e);
                None
            }
        }
    }

    fn queue_built(&mut self, what: &str, built: Result<Event, BuildError>) {
        match built {
            Ok(event) => self.queue(event),
            Err(e) => self.built_nothing(what, &e),
        }
    }

    fn built_nothing(&self, what: &str, e: &BuildError) {
        tracing::error!("demo {}: could not build {what}: {e}", self.persona.name);
    }

    fn queue(&mut self, event: Event) {
        if self.out.len() >= MAX_QUEUED {
            self.out.pop_front();
        }
        self.out.push_back(event);
    }
}

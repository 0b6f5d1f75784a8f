//! `ControlTarget` for agents written in JavaScript: commands decided
//! exactly once with recorded acks, outcome events correlated by the
//! engine, and the agent's own events sequenced per session.

use aep_engine::control::ack::NackReason;
use aep_engine::control::answer::Answer;
use aep_engine::control::target::{Action, ControlTarget, Received, SeqCounter, Sequencer, Verdict, DEFAULT_CEILING};
use aep_engine::protocol::capture::downlevel;
use aep_engine::protocol::event::{Capture, Event, Severity};
use aep_engine::protocol::ids::{source_uri, Draft, Identity};
use aep_engine::rng::Seeded;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
use super::members::Members;
use crate::error::AepErrorCode;
use crate::input::{ControlTargetOptions, EventDraft};
use crate::view;

pub(crate) fn invalid(message: impl AsRef<str>) -> JsValue {
    aep_error(AepErrorCode::InvalidArgument, message)
}

pub(crate) fn event_from(value: &JsValue, what: &str) -> Result<Event, JsValue> {
    let text = convert::json_text(value).map_err(|e| invalid(format!("{what}: {e}")))?;
    Event::parse(&text).map_err(|e| invalid(format!("{what}: {e}")))
}

/// An [`EventDraft`], member by member.
fn read_draft(value: &JsValue) -> Result<EventDraft, JsValue> {
    let m = Members::of(value, "draft: ", AepErrorCode::InvalidArgument)?;
    Ok(EventDraft {
        ty: m.required("type")?,
        session: m.text("session")?,
        run: m.text("run")?,
        step: m.text("step")?,
        subject: m.text("subject")?,
        cause: m.text("cause")?,
        traceparent: m.text("traceparent")?,
        severity: m.named("severity", "severity", Severity::parse)?,
        capture: m.named("capture", "capture level", Capture::parse)?,
        data: m.object("data")?,
        seq: m.count("seq")?,
        epoch: m.count("epoch")?,
    })
}

/// Reads a draft (see [`EventDraft`]); a session event takes the
/// session's next `seq` unless the draft names one.
fn draft(value: &JsValue, seqs: &mut SeqCounter) -> Result<Draft, JsValue> {
    let e = read_draft(value)?;
    let mut d = Draft::new(e.ty);
    if let Some(s) = e.subject {
        d = d.subject(s);
    }
    if let Some(s) = e.run {
        d = d.run(s);
    }
    if let Some(s) = e.step {
        d = d.step(s);
    }
    if let Some(s) = e.cause {
        d = d.cause(s);
    }
    if let Some(s) = e.traceparent {
        d = d.traceparent(s);
    }
    if let Some(s) = e.severity {
        d = d.severity(s);
    }
    if let Some(c) = e.capture {
        d = d.capture(c);
    }
    if let Some(data) = e.data {
        d = d.data(Value::Object(data));
    }
    if let Some(session) = e.session {
        let seq = seqs.take(&session, e.seq).map_err(|e| invalid(format!("draft: {e}")))?;
        let epoch = e.epoch.or_else(|| seqs.epoch(&session));
        d = d.session(session).seq(seq);
        if let Some(e) = epoch {
            d = d.epoch(e);
        }
    }
    Ok(d)
}

/// `undefined`, `null` or `true` accept; `false` refuses; `{ reject,
/// detail? }` rejects with that nack reason.
fn verdict(result: Result<JsValue, JsValue>) -> Verdict {
    let refused = |detail: &str| Verdict::Reject { reason: NackReason::Refused, detail: Some(detail.to_owned()) };
    let v = match result {
        Ok(v) => v,
        Err(e) => {
            convert::report(&e);
            return refused("the agent could not decide");
        }
    };
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(true) {
        return Verdict::Accept;
    }
    if v.as_bool() == Some(false) {
        return Verdict::Reject { reason: NackReason::Refused, detail: None };
    }
    match convert::get(&v, "reject").as_string().and_then(|r| NackReason::parse(&r)) {
        Some(reason) => Verdict::Reject { reason, detail: convert::get(&v, "detail").as_string() },
        None => refused("the agent's decision was not understood"),
    }
}

/// What `new ControlTarget(options)` and `new AepAgent(options)` share:
/// `{ agent, accepts, host?, source?, epoch?, capture? }`.
pub(crate) struct TargetOptions {
    pub identity: Identity,
    pub accepts: Vec<String>,
    /// Defaults to the start-up time: a restart must be a new, later epoch
    /// (AEP-0001 §7).
    pub epoch: u64,
    /// The capture ceiling of everything emitted (default `metadata`).
    pub ceiling: Capture,
}

impl TargetOptions {
    pub fn new(o: ControlTargetOptions) -> TargetOptions {
        let host = o.host.unwrap_or_else(|| "localhost".into());
        let source = o.source.unwrap_or_else(|| source_uri(&host, &o.agent, None));
        TargetOptions {
            identity: Identity::new(source, o.agent),
            accepts: o.accepts,
            epoch: o.epoch.unwrap_or_else(|| js_sys::Date::now() as u64),
            ceiling: o.capture.unwrap_or(DEFAULT_CEILING),
        }
    }
}

/// `{ agent, accepts, host?, source?, epoch?, capture? }`, member by member.
pub(crate) fn read_options(options: &JsValue) -> Result<ControlTargetOptions, JsValue> {
    let m = Members::of(options, "options: ", AepErrorCode::InvalidArgument)?;
    let verb = |v: JsValue, at: &str| v.as_string().ok_or_else(|| m.refuse(format!("`{at}` must be a command type")));
    Ok(ControlTargetOptions {
        agent: m.required("agent")?,
        accepts: m.array("accepts", verb)?.ok_or_else(|| m.refuse("`accepts` must be an array of command types"))?,
        host: m.text("host")?,
        source: m.text("source")?,
        epoch: m.count("epoch")?,
        capture: m.named("capture", "capture level", Capture::parse)?,
    })
}

/// The target's operations on JavaScript values, for `ControlTarget` and
/// `AepAgent` alike; the agent also sends what they build.
pub(crate) struct TargetOps<'a> {
    pub target: &'a mut ControlTarget,
    pub seqs: &'a mut SeqCounter,
}

impl TargetOps<'_> {
    /// One of the agent's own events (see `ControlTarget.event`).
    pub fn event(&mut self, draft_: &JsValue) -> Result<Event, JsValue> {
        let now = convert::now();
        let d = draft(draft_, self.seqs)?;
        let id = self.target.event_id(now);
        let e = d.build(self.target.identity(), id, now).map_err(|e| invalid(e.to_string()))?;
        Ok(downlevel(&e, self.target.ceiling()))
    }

    pub fn register_request(&mut self, requested: &JsValue, refusing_option: Option<&str>) -> Result<(), JsValue> {
        let e = event_from(requested, "request")?;
        self.target.register_request(&e, refusing_option).map_err(|e| invalid(e.to_string()))
    }

    pub fn answer_outcomes(&mut self, command: &JsValue, action: &JsValue) -> Result<[Event; 2], JsValue> {
        let e = event_from(command, "command")?;
        let m = Members::of(action, "action: ", AepErrorCode::InvalidArgument)?;
        let request = m.text("request")?.ok_or_else(|| m.refuse("not a respond action"))?;
        let answer = m.json("answer")?.ok_or_else(|| m.refuse("`answer` is required"))?;
        let answer = Answer::from_value(&answer).map_err(|e| m.refuse(format!("`answer`: {e}")))?;
        let open = self
            .target
            .request(&request)
            .map(|(r, _)| r.clone())
            .ok_or_else(|| invalid(format!("no registered request `{request}`")))?;
        self.target.answer_outcomes(&e, &open, &answer, convert::now(), self.seqs).map_err(|e| invalid(e.to_string()))
    }

    pub fn outcome(&mut self, command: &JsValue, draft_: &JsValue) -> Result<Event, JsValue> {
        let e = event_from(command, "command")?;
        // Session, seq and cause are the command's and the agent's, not the draft's.
        let d = draft(draft_, &mut SeqCounter::new())?;
        let now = convert::now();
        self.target.outcome(&e, d, now, self.seqs).map_err(|e| invalid(e.to_string()))
    }

    pub fn run_cancelled(&mut self, command: &JsValue, reason: Option<&str>) -> Result<Event, JsValue> {
        let e = event_from(command, "command")?;
        self.target.run_cancelled(&e, reason, convert::now(), self.seqs).map_err(|e| invalid(e.to_string()))
    }

    pub fn progress_status(&mut self, command: &JsValue, phase: &str, message: Option<&str>) -> Result<Event, JsValue> {
        let e = event_from(command, "command")?;
        self.target.progress_status(&e, phase, message, convert::now(), self.seqs).map_err(|e| invalid(e.to_string()))
    }
}

/// What receiving a command came to, for JavaScript.
pub(crate) fn received_to_js(received: &Received) -> JsValue {
    let r = match received {
        Received::Fresh { action, ack, .. } => view::Received::Fresh { ack: out(ack), action: action.into() },
        Received::Nacked { ack, reason } => view::Received::Nacked { ack: out(ack), reason: *reason },
        Received::Duplicate { ack } => view::Received::Duplicate { ack: convert::event_to_js(ack) },
    };
    convert::to_js(&r)
}

/// Asks a JavaScript `decide(action)` for its verdict.
pub(crate) fn ask_decider(decide: &js_sys::Function, action: &Action) -> Verdict {
    verdict(decide.call1(&JsValue::UNDEFINED, &convert::to_js(&view::TargetAction::from(action))))
}

pub(crate) fn out(e: &Event) -> JsValue {
    convert::event_to_js(e.raw())
}

/// Receives commands for one agent (see the engine's control target).
#[wasm_bindgen(js_name = ControlTarget)]
pub struct JsControlTarget {
    target: ControlTarget,
    seqs: SeqCounter,
}

#[wasm_bindgen(js_class = ControlTarget)]
impl JsControlTarget {
    /// `new ControlTarget({ agent, accepts, host?, source?, epoch?, capture? })`;
    /// `capture` is the ceiling of everything it emits (default `metadata`).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsControlTarget, JsValue> {
        let o = TargetOptions::new(read_options(&options)?);
        let target = ControlTarget::new(o.identity, o.accepts, Seeded::new(convert::random() as u64))
            .map_err(|e| invalid(e.to_string()))?
            .with_ceiling(o.ceiling);
        Ok(JsControlTarget { target, seqs: SeqCounter::with_epoch(o.epoch) })
    }

    fn ops(&mut self) -> TargetOps<'_> {
        TargetOps { target: &mut self.target, seqs: &mut self.seqs }
    }

    #[wasm_bindgen(getter)]
    pub fn source(&self) -> String {
        self.target.identity().source.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn agent(&self) -> String {
        self.target.identity().agent.clone()
    }

    /// The declared command types, for `hello.capabilities.control.accepts`.
    #[wasm_bindgen(getter)]
    pub fn accepts(&self) -> Vec<String> {
        self.target.accepts().to_vec()
    }

    /// Builds one of the agent's own events; a session event takes the
    /// session's next `seq` unless the draft names one.
    pub fn event(&mut self, draft_: JsValue) -> Result<JsValue, JsValue> {
        self.ops().event(&draft_).map(|e| out(&e))
    }

    /// Registers an `attention.requested` the agent emitted, so answers to
    /// it can be checked; `refusingOption` names the option that unmatched
    /// permission text applies.
    #[wasm_bindgen(js_name = registerRequest)]
    pub fn register_request(&mut self, requested: JsValue, refusing_option: Option<String>) -> Result<(), JsValue> {
        self.ops().register_request(&requested, refusing_option.as_deref())
    }

    /// Marks a request closed by other means; later answers are nacked.
    #[wasm_bindgen(js_name = closeRequest)]
    pub fn close_request(&mut self, id: &str) -> bool {
        self.target.close_request(id)
    }

    /// Receives a command (see [`received_to_js`] for the result).
    /// `decide(action)` is asked only for a first delivery that passed the
    /// protocol gates.
    #[wasm_bindgen(js_name = handleCommand)]
    pub fn handle_command(&mut self, command: JsValue, decide: Option<js_sys::Function>) -> Result<JsValue, JsValue> {
        let e = event_from(&command, "command")?;
        let received = self
            .target
            .handle_command_with(&e, convert::now(), &mut self.seqs, |action| match &decide {
                None => Verdict::Accept,
                Some(f) => ask_decider(f, action),
            })
            .map_err(|e| invalid(e.to_string()))?;
        Ok(received_to_js(&received))
    }

    /// `attention.answered` and `attention.resolved` for an accepted
    /// respond (`action` as `handleCommand` returned it).
    #[wasm_bindgen(js_name = answerOutcomes)]
    pub fn answer_outcomes(&mut self, command: JsValue, action: JsValue) -> Result<js_sys::Array, JsValue> {
        Ok(self.ops().answer_outcomes(&command, &action)?.iter().map(out).collect())
    }

    /// Any outcome event: `cause` is the command, `session` its session.
    pub fn outcome(&mut self, command: JsValue, draft_: JsValue) -> Result<JsValue, JsValue> {
        self.ops().outcome(&command, &draft_).map(|e| out(&e))
    }

    /// `run.cancelled` (by `control`) for an accepted cancel.
    #[wasm_bindgen(js_name = runCancelled)]
    pub fn run_cancelled(&mut self, command: JsValue, reason: Option<String>) -> Result<JsValue, JsValue> {
        self.ops().run_cancelled(&command, reason.as_deref()).map(|e| out(&e))
    }

    /// `progress.status` with `phase` (e.g. "paused", "resumed") for an
    /// honoured pause or resume.
    #[wasm_bindgen(js_name = progressStatus)]
    pub fn progress_status(
        &mut self,
        command: JsValue,
        phase: &str,
        message: Option<String>,
    ) -> Result<JsValue, JsValue> {
        self.ops().progress_status(&command, phase, message.as_deref()).map(|e| out(&e))
    }

    /// The `seq` the next event of `session` takes.
    #[wasm_bindgen(js_name = peekSeq)]
    pub fn peek_seq(&self, session: &str) -> f64 {
        self.seqs.peek(session) as f64
    }

    /// Continues `session` from `seq` (e.g. after a restart).
    #[wasm_bindgen(js_name = setNextSeq)]
    pub fn set_next_seq(&mut self, session: &str, seq: f64) -> Result<(), JsValue> {
        if seq < 0.0 || seq.fract() != 0.0 {
            return Err(invalid("`seq` must be a non-negative integer"));
        }
        self.seqs.set_next(session, seq as u64);
        Ok(())
    }
}

//! The outcome events a command promises (AEP-0004 §5, §6), built once
//! here so agents do not hand-roll the correlation: `cause` is the command
//! id, `session` the command's, `seq` the agent's next.

use serde_json::{json, Map, Value};

use super::{ControlTarget, Sequencer};
use crate::control::answer::{Answer, OpenRequest};
use crate::protocol::capture::{gate_form_values, has_free_text, landing_level};
use crate::protocol::event::{Capture, Event};
use crate::protocol::ids::{BuildError, Draft};
use crate::protocol::vocabulary::types;
use crate::time::UnixMs;

/// `progress.status.phase` reported for an honoured `control.pause`.
pub const PHASE_PAUSED: &str = "paused";
/// `progress.status.phase` reported for an honoured `control.resume`.
pub const PHASE_RESUMED: &str = "resumed";

impl ControlTarget {
    /// Any outcome event: stamps `session`, `cause` = the command id and
    /// the next `seq` on `draft` (type, payload and the rest are the
    /// caller's).
    pub fn outcome(
        &mut self,
        command: &Event,
        draft: Draft,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Event, BuildError> {
        let id = self.ids.event_id(now);
        self.seal(command, draft, id, now, seqs)
    }

    /// `attention.answered` then `attention.resolved` for an accepted
    /// respond: both with `subject` = the request id and `cause` = the
    /// command id; `applied` is what was actually applied (see
    /// `OpenRequest::apply`).
    pub fn answer_outcomes(
        &mut self,
        command: &Event,
        request: &OpenRequest,
        applied: &Answer,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<[Event; 2], BuildError> {
        let (applied, capture) = self.answer_as_emitted(request, applied);
        let mut answered = Map::new();
        answered.insert("answer".into(), applied.to_value());
        answered.insert("by".into(), command.agent().into());
        answered.insert("via".into(), "control".into());
        let answered = Draft::new(types::ATTENTION_ANSWERED)
            .subject(request.id.clone())
            .maybe_run(request.run.clone())
            .capture(capture)
            .data(Value::Object(answered));
        let answered = self.outcome(command, answered, now, seqs)?;

        let mut resolved = json!({ "resolution": "answered" });
        if let Some(at) = request.requested_at {
            resolved["latency_ms"] = now.since(at).into();
        }
        let resolved = Draft::new(types::ATTENTION_RESOLVED)
            .subject(request.id.clone())
            .maybe_run(request.run.clone())
            .data(resolved);
        let resolved = self.outcome(command, resolved, now, seqs)?;
        Ok([answered, resolved])
    }

    /// The answer `attention.answered` carries, and the capture it
    /// declares. A person's text, as typed, is `full` (nothing redacts it)
    /// and is left to the ceiling's down-level. A form's values are gated
    /// here by the request's fields instead, at the level the event lands
    /// on under the ceiling: choice ids, numbers and booleans are
    /// structure and stay at `metadata`, which the down-level, blind to
    /// the fields, would take for text (AEP-0002 §5.3, AEP-0006).
    fn answer_as_emitted(&self, request: &OpenRequest, applied: &Answer) -> (Answer, Capture) {
        let text = |carries: bool| if carries { Capture::Full } else { Capture::Metadata };
        let (Answer::Values { map }, Some(fields)) = (applied, &request.fields) else {
            return (applied.clone(), text(applied.carries_text()));
        };
        let fields: Vec<Value> = fields.iter().filter_map(|f| serde_json::to_value(f).ok()).collect();
        let kept = gate_form_values(&fields, map, landing_level(Capture::Full, self.ceiling));
        let capture = text(has_free_text(&fields, &kept));
        (Answer::values(kept), capture)
    }

    /// `run.cancelled` (by `control`) for an accepted cancel of the
    /// command's run.
    pub fn run_cancelled(
        &mut self,
        command: &Event,
        reason: Option<&str>,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Event, BuildError> {
        let mut data = json!({ "by": "control" });
        let mut draft = Draft::new(types::RUN_CANCELLED).maybe_run(command.run());
        if let Some(r) = reason {
            data["reason"] = r.into();
            draft = draft.capture(Capture::Full);
        }
        self.outcome(command, draft.data(data), now, seqs)
    }

    /// `progress.status` with `phase` (e.g. [`PHASE_PAUSED`],
    /// [`PHASE_RESUMED`]) for an honoured pause or resume.
    pub fn progress_status(
        &mut self,
        command: &Event,
        phase: &str,
        message: Option<&str>,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Event, BuildError> {
        let mut data = json!({ "phase": phase });
        let mut draft = Draft::new(types::PROGRESS_STATUS).maybe_run(command.run());
        if let Some(m) = message {
            data["message"] = m.into();
            draft = draft.capture(Capture::Full);
        }
        self.outcome(command, draft.data(data), now, seqs)
    }
}

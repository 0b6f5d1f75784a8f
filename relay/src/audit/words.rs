//! A command as a person reads it, the same in the CSV and the console's
//! Audit view: what was asked, the answer given, and what the agent did,
//! in words, from the events its records hold. The agent's own ack decides
//! over what followed it: a refused answer reads as refused even when the
//! request was then closed.

use aep_engine::protocol::vocabulary::{EventType, NackReason};
use aep_engine::Event;
use serde_json::Value;

use super::summary::{Acked, Summary};

/// The answer a command carries, in words: the option, the text, or the
/// form's values as `field: value`.
pub fn answer(command: &Event) -> String {
    let Some(answer) = command.data_field("answer") else { return String::new() };
    let part = |name: &str| answer.get(name).filter(|v| !v.is_null());
    match (part("option"), part("text"), part("values")) {
        (Some(Value::String(option)), Some(Value::String(text)), _) => format!("{option}: {text}"),
        (Some(Value::String(option)), _, _) => option.clone(),
        (_, Some(Value::String(text)), _) => text.clone(),
        (_, _, Some(Value::Object(values))) => {
            values.iter().map(|(field, value)| format!("{field}: {}", scalar(value))).collect::<Vec<_>>().join(", ")
        }
        (_, _, Some(other)) => scalar(other),
        _ => scalar(answer),
    }
}

/// A value in words: text as it is, `yes`/`no`, numbers, lists joined.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Null => "\u{2014}".into(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// What came of the command, in words, from its `events` (the records'
/// events in chain order).
pub fn result(summary: &Summary, events: &[Event]) -> String {
    let outcome = events.iter().rev().find(|e| is_outcome(e)).map(did);
    match &summary.ack {
        Acked::Refused(code) => format!("not delivered: refused by the relay ({code})"),
        Acked::Rejected => {
            let nack = events.iter().find(|e| e.kind().core() == Some(EventType::ControlRejected));
            let reason = nack.and_then(|e| e.data_str("reason"));
            let mut words = match reason.as_deref() {
                Some(reason) if NackReason::parse(reason) != Some(NackReason::Refused) => {
                    format!("the agent rejected it ({reason})")
                }
                _ => "the agent refused".to_owned(),
            };
            if let Some(detail) = nack.and_then(|e| e.data_str("detail")) {
                words.push_str(&format!(": {detail}"));
            }
            if let Some(then) = outcome {
                words.push_str(&format!("; then {then}"));
            }
            words
        }
        Acked::Unrecognized(word) => format!("the agent answered \u{201c}{word}\u{201d}"),
        Acked::Accepted | Acked::Pending => match outcome {
            Some(words) => words,
            None if summary.ack == Acked::Accepted => "the agent accepted it; nothing came of it yet".into(),
            None => "no answer from the agent".into(),
        },
    }
}

/// An event that followed the command (not the command, its request or its ack).
fn is_outcome(e: &Event) -> bool {
    !e.is_command()
        && Acked::of(e.kind()).is_none()
        && !matches!(e.kind().core(), Some(EventType::AttentionRequested | EventType::ControlRejected))
}

/// What an outcome event says the agent did.
fn did(e: &Event) -> String {
    let text = |name: &str| e.data_str(name).map(|t| t.into_owned());
    match e.kind().core() {
        Some(EventType::AttentionResolved) => match text("resolution").as_deref() {
            Some("dismissed") => "the agent withdrew the request".into(),
            Some("auto") => "the agent settled the request itself".into(),
            _ => "the agent acted on the answer".into(),
        },
        Some(EventType::AttentionAnswered) => "the agent took the answer".into(),
        Some(EventType::RunCancelled) => "the agent cancelled the run".into(),
        Some(EventType::RunFinished) => "the run finished".into(),
        Some(EventType::RunFailed) => "the run failed".into(),
        Some(EventType::ProgressStatus) => match (text("phase"), text("message")) {
            (Some(phase), _) if phase == "paused" || phase == "resumed" => format!("the agent {phase}"),
            (Some(phase), _) => format!("the agent reported \u{201c}{phase}\u{201d}"),
            (None, Some(message)) => format!("the agent reported \u{201c}{message}\u{201d}"),
            (None, None) => "the agent reported progress".into(),
        },
        _ => format!("the agent reported {}", e.ty()),
    }
}

/// One command as the CSV and the console show it.
pub struct Row<'a> {
    pub summary: &'a Summary,
    pub answer: String,
    pub result: String,
}

/// The CSV's columns, and the names of the console's row fields.
pub const COLUMNS: [&str; 13] = [
    "time",
    "who",
    "agent",
    "session",
    "label",
    "verb",
    "command",
    "prompt",
    "answer",
    "ack",
    "outcome",
    "latency_ms",
    "result",
];

impl<'a> Row<'a> {
    pub fn of(summary: &'a Summary, events: &[Event]) -> Row<'a> {
        let command = events.iter().find(|e| e.is_command());
        Row {
            summary,
            answer: command.map(answer).unwrap_or_else(|| summary.answer.clone()),
            result: result(summary, events),
        }
    }

    /// The cells under [`COLUMNS`], time as RFC 3339.
    pub fn cells(&self) -> [String; 13] {
        let s = self.summary;
        [
            aep_engine::UnixMs(s.at).to_rfc3339(),
            s.principal.clone(),
            s.agent.clone(),
            s.session.clone(),
            s.label.clone(),
            s.verb.clone(),
            s.id.clone(),
            s.prompt.clone(),
            self.answer.clone(),
            if s.ack.is_pending() { "none".to_owned() } else { s.ack.to_string() },
            s.outcome.clone(),
            s.latency().map(|ms| ms.to_string()).unwrap_or_default(),
            self.result.clone(),
        ]
    }

    /// The row as an object (`at` in ms, `latency_ms` a number or null).
    pub fn json(&self) -> Value {
        let s = self.summary;
        serde_json::json!({
            "at": s.at,
            "who": s.principal,
            "agent": s.agent,
            "session": s.session,
            "label": s.label,
            "verb": s.verb,
            "command": s.id,
            "prompt": s.prompt,
            "answer": self.answer,
            "ack": s.ack,
            "outcome": s.outcome,
            "latency_ms": s.latency(),
            "result": self.result,
            "rule": s.rule.as_ref().map(|r| serde_json::json!({
                "id": r.id, "author": s.principal, "made_at": r.made_at,
            })),
        })
    }
}

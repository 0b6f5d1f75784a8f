//! A session's events in order, each with a one-line summary. Known types
//! get a sentence; anything else is shown generically (type, capture and
//! the payload's top-level members), never dropped. Everything here is
//! data for text nodes.

use aep_client::store::{Entry, Session};
use aep_client::{Event, UnixMs};
use serde_json::{Map, Value};

/// Most entries a session view renders (the newest ones).
pub const MAX_ITEMS: usize = 300;
/// Longest summary kept, in characters.
const MAX_SUMMARY: usize = 280;

#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub id: String,
    pub ty: String,
    /// `epoch:seq`, or none for another party's event (a command).
    pub position: Option<(u64, u64)>,
    pub at: Option<UnixMs>,
    pub agent: String,
    pub relay: Option<String>,
    /// The cause: its id, and when it is in this timeline, its words
    /// (`#6 attention.requested`), for a link.
    pub cause: Option<(String, Option<String>)>,
    pub summary: String,
    /// Summarised generically (a type this console has no words for).
    pub generic: bool,
    pub command: bool,
    pub severity: &'static str,
}

fn text(data: Option<&Map<String, Value>>, k: &str) -> Option<String> {
    data?.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn cut(mut s: String) -> String {
    if s.chars().count() > MAX_SUMMARY {
        s = s.chars().take(MAX_SUMMARY - 1).collect();
        s.push('\u{2026}');
    }
    s
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => format!("{{{} members}}", m.len()),
        Value::Array(a) => format!("[{} items]", a.len()),
        other => other.to_string(),
    }
}

/// `key: value · key: value` over the top-level payload members.
fn generic(data: Option<&Map<String, Value>>) -> String {
    match data {
        None => String::new(),
        Some(m) if m.is_empty() => String::new(),
        Some(m) => m
            .iter()
            .take(6)
            .map(|(k, v)| format!("{k}: {}", scalar(v)))
            .collect::<Vec<_>>()
            .join(" \u{b7} "),
    }
}

/// The sentence for a known type, or `None` for the generic form.
fn known(e: &Event) -> Option<String> {
    let d = e.data();
    let t = |k: &str| text(d, k);
    let tool = || {
        d.and_then(|d| d.get("tool"))
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some(match e.ty() {
        "session.started" => match t("label") {
            Some(l) => format!("Session started: {l}"),
            None => "Session started".into(),
        },
        "session.ended" => match t("reason") {
            Some(r) => format!("Session ended: {r}"),
            None => "Session ended".into(),
        },
        "run.started" => match t("prompt") {
            Some(p) => format!("Run {} started: {p}", e.run().unwrap_or("?")),
            None => format!("Run {} started", e.run().unwrap_or("?")),
        },
        "run.finished" => {
            format!(
                "Run {} finished{}",
                e.run().unwrap_or("?"),
                t("summary").map(|s| format!(": {s}")).unwrap_or_default()
            )
        }
        "run.failed" => {
            format!(
                "Run {} failed{}",
                e.run().unwrap_or("?"),
                t("error")
                    .or(t("reason"))
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            )
        }
        "run.cancelled" => {
            format!(
                "Run {} cancelled{}",
                e.run().unwrap_or("?"),
                t("reason").map(|s| format!(": {s}")).unwrap_or_default()
            )
        }
        "tool.requested" | "tool.started" => {
            let args = d
                .and_then(|d| d.get("args_redacted").or(d.get("args")))
                .map(|a| match a.get("input").and_then(Value::as_str) {
                    Some(s) => s.to_owned(),
                    None => scalar(a),
                })
                .map(|a| format!(" {a}"))
                .unwrap_or_default();
            format!("Tool {}{args}", tool().unwrap_or_else(|| "?".into()))
        }
        "tool.completed" | "tool.failed" => {
            let status = t("status").map(|s| format!(" ({s})")).unwrap_or_default();
            let verb = if e.ty() == "tool.failed" {
                "failed"
            } else {
                "done"
            };
            format!(
                "Tool {} {verb}{status}",
                tool().unwrap_or_else(|| "?".into())
            )
        }
        "progress.status" => {
            let mut s = t("phase").unwrap_or_else(|| "progress".into());
            if let Some(p) = d.and_then(|d| d.get("percent")).and_then(Value::as_u64) {
                s.push_str(&format!(" {p}%"));
            }
            if let Some(m) = t("message") {
                s.push_str(&format!(": {m}"));
            }
            s
        }
        "attention.requested" => {
            let kind = t("kind").unwrap_or_else(|| "request".into());
            match t("prompt") {
                Some(p) => format!("Asks ({kind}): {p}"),
                None => format!("Asks ({kind})"),
            }
        }
        "attention.answered" => {
            let a = d.and_then(|d| d.get("answer"));
            let what = a
                .and_then(|a| a.get("option").and_then(Value::as_str).map(str::to_owned))
                .or_else(|| {
                    a.and_then(|a| a.get("text"))
                        .and_then(Value::as_str)
                        .map(|s| format!("\u{201c}{s}\u{201d}"))
                })
                .or_else(|| {
                    a.and_then(|a| a.get("values"))
                        .map(|_| "form values".to_owned())
                })
                .unwrap_or_else(|| "answer".into());
            let by = t("by").map(|b| format!(" by {b}")).unwrap_or_default();
            let via = t("via").map(|v| format!(" via {v}")).unwrap_or_default();
            format!("Answered: {what}{by}{via}")
        }
        "attention.resolved" => format!(
            "Resolved{}",
            t("resolution")
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        "attention.timeout" => "Request timed out".into(),
        "attention.routed" => format!("Routed by {}", e.agent()),
        "control.accepted" => "Accepted the command".into(),
        "control.rejected" => {
            let reason = t("reason").unwrap_or_else(|| "no reason".into());
            match t("detail") {
                Some(x) => format!("Rejected the command ({reason}): {x}"),
                None => format!("Rejected the command ({reason})"),
            }
        }
        "control.attention.respond" => format!("{} sent an answer", e.agent()),
        "control.cancel" => format!(
            "{} asked to cancel the {}",
            e.agent(),
            t("scope").unwrap_or_else(|| "run".into())
        ),
        "control.pause" => format!("{} asked to pause", e.agent()),
        "control.resume" => format!("{} asked to resume", e.agent()),
        _ => return None,
    })
}

fn item(entry: &Entry, shown: &std::collections::HashMap<&str, String>) -> Item {
    let parsed = entry.event().ok();
    let (summary, generic_form, agent, severity) = match &parsed {
        Some(e) => match known(e) {
            Some(s) => (s, false, e.agent().to_owned(), e.severity().as_str()),
            None => {
                let g = generic(e.data());
                let capture = e.capture().as_str();
                let s = if g.is_empty() {
                    format!("({capture})")
                } else {
                    format!("{g} ({capture})")
                };
                (s, true, e.agent().to_owned(), e.severity().as_str())
            }
        },
        None => ("(unreadable)".to_owned(), true, String::new(), "info"),
    };
    Item {
        id: entry.id().to_owned(),
        ty: entry.ty().to_owned(),
        position: entry.position(),
        at: entry.at(),
        agent,
        relay: entry.relay.as_deref().map(str::to_owned),
        cause: entry.cause().map(|c| (c.to_owned(), shown.get(c).cloned())),
        summary: cut(summary),
        generic: generic_form,
        command: entry.is_command(),
        severity,
    }
}

/// The newest [`MAX_ITEMS`] events of a session, oldest first, and how
/// many older ones are not shown (kept or already dropped).
pub fn items(s: &Session) -> (Vec<Item>, usize) {
    let lane = s.timeline();
    let skip = lane.len().saturating_sub(MAX_ITEMS);
    let shown: std::collections::HashMap<&str, String> = lane
        .iter()
        .skip(skip)
        .map(|e| {
            (
                e.id(),
                format!("{} {}", position_words(e.position()), e.ty()),
            )
        })
        .collect();
    let hidden = skip + lane.dropped() as usize;
    (
        lane.iter().skip(skip).map(|e| item(e, &shown)).collect(),
        hidden,
    )
}

/// `#7`, `#2:7` (epoch 2), or a dash for an event without a position.
pub fn position_words(p: Option<(u64, u64)>) -> String {
    match p {
        Some((0, seq)) => format!("#{seq}"),
        Some((epoch, seq)) => format!("#{epoch}:{seq}"),
        None => "\u{2014}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_read_short() {
        assert_eq!(position_words(Some((0, 7))), "#7");
        assert_eq!(position_words(Some((2, 7))), "#2:7");
        assert_eq!(position_words(None), "\u{2014}");
    }
}

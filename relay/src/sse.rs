//! Server-sent events framing (AEP-0003 §3.3): exact, LF-only, one `data:`
//! line per event, so any conforming parser reads it the same way.

use crate::buffer::Position;
use crate::held::HeldEvent;
use crate::ingest::without_whitespace;

/// A heartbeat comment (§3.3.4).
pub const PING: &str = ": ping\n\n";
/// Written before a stream ends because the relay is shutting down.
pub const SHUTTING_DOWN: &str = ": shutting-down\n\n";
/// Written before a stream ends because the consumer fell behind on events
/// it may not lose; it resumes with `Last-Event-ID` or `from`.
pub const TOO_SLOW: &str = ": disconnected: consumer too slow, resume from the last id\n\n";

/// Appends one event message: `event:` type, `data:` the bytes on one line,
/// and `id:` `session:epoch:seq` for positioned session events.
pub fn push_event(out: &mut String, event: &HeldEvent, bytes: &str) {
    out.push_str("event: ");
    out.push_str(event.ty());
    out.push_str("\ndata: ");
    if bytes.contains(['\n', '\r']) {
        // Only insignificant JSON whitespace can hold a raw line break.
        out.push_str(&without_whitespace(bytes));
    } else {
        out.push_str(bytes);
    }
    out.push('\n');
    if let (Some(session), Some((epoch, seq)), false) = (event.session(), event.position(), event.is_agent_scoped()) {
        if is_field_safe(session) {
            out.push_str(&format!("id: {session}:{epoch}:{seq}\n"));
        }
    }
    out.push('\n');
}

/// Appends the `replay-exhausted` comment as its own message.
pub fn push_exhausted(out: &mut String, session: &str, earliest: Position) {
    let shown = if is_field_safe(session) && !session.contains(char::is_whitespace) {
        session.to_owned()
    } else {
        serde_json::Value::from(session).to_string()
    };
    out.push_str(&format!(": replay-exhausted {shown} {}:{}\n\n", earliest.0, earliest.1));
}

/// Reads a `Last-Event-ID` of the form `session:epoch:seq` (the session
/// may itself contain colons).
pub fn parse_last_event_id(value: &str) -> Option<(String, Position)> {
    let mut parts = value.rsplitn(3, ':');
    let seq = parts.next()?.parse().ok()?;
    let epoch = parts.next()?.parse().ok()?;
    let session = parts.next().filter(|s| !s.is_empty())?;
    Some((session.to_owned(), (epoch, seq)))
}

/// A value that cannot break out of its SSE field.
fn is_field_safe(s: &str) -> bool {
    !s.contains(['\n', '\r', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::Event;

    #[test]
    fn frames_an_event_exactly() {
        let raw = r#"{"aep":"0.1","id":"a","type":"tool.completed","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s:1","seq":4,"epoch":2}"#;
        let e = HeldEvent::new(&Event::parse(raw).unwrap());
        let mut out = String::new();
        push_event(&mut out, &e, e.raw());
        assert_eq!(out, format!("event: tool.completed\ndata: {raw}\nid: s:1:2:4\n\n"));
        assert_eq!(parse_last_event_id("s:1:2:4"), Some(("s:1".into(), (2, 4))));
        assert_eq!(parse_last_event_id("nope"), None);
    }

    #[test]
    fn agent_events_have_no_id() {
        let e = HeldEvent::new(&Event::parse(r#"{"aep":"0.1","id":"h","type":"agent.heartbeat","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a"}"#).unwrap());
        let mut out = String::new();
        push_event(&mut out, &e, e.raw());
        assert!(!out.contains("\nid:"));
    }

    #[test]
    fn exhausted_marker_is_its_own_message() {
        let mut out = String::new();
        push_exhausted(&mut out, "live-evict-1", (1, 8));
        assert_eq!(out, ": replay-exhausted live-evict-1 1:8\n\n");
    }
}

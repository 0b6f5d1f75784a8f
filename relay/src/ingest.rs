//! Turning a POSTed body into events (AEP-0003 §3.2): one JSON event or an
//! NDJSON batch, all or nothing.
//!
//! A batch is checked completely before anything is admitted, so a bad line
//! means nothing of the request was ingested and the emitter can fix and
//! resend the whole batch without creating duplicates.

use aep_engine::{Event, EventError};

/// The two accepted body encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/json`: exactly one event.
    Single,
    /// `application/x-ndjson`: one event per line, order kept.
    Ndjson,
}

impl BodyKind {
    /// Reads a `Content-Type` value, ignoring parameters and case.
    pub fn from_content_type(value: &str) -> Option<BodyKind> {
        let essence = value.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/json") {
            Some(BodyKind::Single)
        } else if essence.eq_ignore_ascii_case("application/x-ndjson") {
            Some(BodyKind::Ndjson)
        } else {
            None
        }
    }
}

/// Why a body was refused. `line` is the 0-based index of the first
/// failing line (always 0 for a single event).
#[derive(Clone, Debug, PartialEq)]
pub enum BatchError {
    /// More events than one request may carry.
    TooManyEvents { limit: usize },
    /// One event larger than the relay takes.
    TooLarge { line: usize, limit: usize },
    /// A line that is not a valid event.
    Invalid { line: usize, detail: String },
    /// A command: control flows only on the duplex binding (AEP-0004 §4.1).
    CommandOverHttp { line: usize, id: String },
}

/// How many events one body may carry, and how large each may be.
#[derive(Clone, Copy, Debug)]
pub struct BatchLimits {
    pub max_events: usize,
    pub max_event_bytes: usize,
}

/// Parses a whole body. An empty last NDJSON line is ignored; an empty line
/// anywhere else is an error, like any other line that is not an event.
pub fn parse_body(kind: BodyKind, body: &[u8], limits: BatchLimits) -> Result<Vec<Event>, BatchError> {
    let BatchLimits { max_events, max_event_bytes } = limits;
    let lines: Vec<&[u8]> = match kind {
        BodyKind::Single => vec![body],
        BodyKind::Ndjson => {
            let mut lines: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
            if lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
            lines
        }
    };
    if lines.len() > max_events {
        return Err(BatchError::TooManyEvents { limit: max_events });
    }
    if lines.is_empty() {
        return Err(BatchError::Invalid { line: 0, detail: "the body holds no event".into() });
    }
    if let Some(line) = lines.iter().position(|l| l.len() > max_event_bytes) {
        return Err(BatchError::TooLarge { line, limit: max_event_bytes });
    }
    let mut events = Vec::with_capacity(lines.len());
    for (line, bytes) in lines.into_iter().enumerate() {
        let event = parse_line(bytes).map_err(|e| BatchError::Invalid { line, detail: e.to_string() })?;
        if event.is_command() {
            return Err(BatchError::CommandOverHttp { line, id: event.id().to_owned() });
        }
        events.push(event);
    }
    Ok(events)
}

/// Parses one event from bytes, trimming surrounding whitespace and a
/// CRLF's carriage return.
pub fn parse_line(bytes: &[u8]) -> Result<Event, EventError> {
    let text = std::str::from_utf8(bytes).map_err(|e| EventError::Malformed(format!("not UTF-8: {e}")))?;
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if text.is_empty() {
        return Err(EventError::Malformed("empty line".into()));
    }
    Event::parse(text).map(single_line)
}

/// Keeps an event's bytes on one line. JSON only allows a raw line break
/// as whitespace between tokens, so a multi-line event (or command) is a
/// pretty-printed one; it is compacted once, on arrival, and those compact
/// bytes are what every binding then serves, a command's target included
/// (an SSE `data:` line cannot hold a line break).
pub fn single_line(event: Event) -> Event {
    if !event.raw().contains(['\n', '\r']) {
        return event;
    }
    Event::parse(&without_whitespace(event.raw())).unwrap_or(event)
}

/// JSON text without the whitespace between its tokens: every token (key
/// order, string escapes, number spelling) stays byte for byte.
pub fn without_whitespace(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            (escaped, in_string) = (!escaped && c == '\\', escaped || c != '"');
        } else if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        } else {
            in_string = c == '"';
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_events: usize) -> BatchLimits {
        BatchLimits { max_events, max_event_bytes: 4096 }
    }

    fn line(id: &str, seq: u64) -> String {
        format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":{seq}}}"#
        )
    }

    #[test]
    fn content_types() {
        assert_eq!(BodyKind::from_content_type("application/json; charset=utf-8"), Some(BodyKind::Single));
        assert_eq!(BodyKind::from_content_type("Application/X-NDJSON"), Some(BodyKind::Ndjson));
        assert_eq!(BodyKind::from_content_type("text/plain"), None);
    }

    #[test]
    fn ndjson_keeps_order_and_ignores_the_empty_last_line() {
        let body = format!("{}\n{}\n", line("a", 0), line("b", 1));
        let events = parse_body(BodyKind::Ndjson, body.as_bytes(), limits(10)).unwrap();
        assert_eq!(events.iter().map(|e| e.id()).collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(events[0].raw(), line("a", 0));
    }

    #[test]
    fn reports_the_first_bad_line() {
        let body = format!("{}\n{{\"aep\":\"0.1\"}}\n{}\n", line("a", 0), line("c", 2));
        match parse_body(BodyKind::Ndjson, body.as_bytes(), limits(10)) {
            Err(BatchError::Invalid { line, .. }) => assert_eq!(line, 1),
            other => panic!("{other:?}"),
        }
        let blank = format!("{}\n\n{}\n", line("a", 0), line("c", 2));
        assert!(matches!(
            parse_body(BodyKind::Ndjson, blank.as_bytes(), limits(10)),
            Err(BatchError::Invalid { line: 1, .. })
        ));
    }

    #[test]
    fn bounds_the_batch_and_refuses_commands() {
        let body = format!("{}\n{}\n", line("a", 0), line("b", 1));
        assert_eq!(
            parse_body(BodyKind::Ndjson, body.as_bytes(), limits(1)),
            Err(BatchError::TooManyEvents { limit: 1 })
        );
        let cmd = r#"{"aep":"0.1","id":"c1","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/u","agent":"u","session":"s","data":{}}"#;
        assert!(matches!(
            parse_body(BodyKind::Single, cmd.as_bytes(), limits(1)),
            Err(BatchError::CommandOverHttp { line: 0, .. })
        ));
    }

    #[test]
    fn refuses_an_oversized_line_before_parsing() {
        let body = format!("{}\n{}\n", line("a", 0), line(&"b".repeat(5000), 1));
        assert_eq!(
            parse_body(BodyKind::Ndjson, body.as_bytes(), limits(10)),
            Err(BatchError::TooLarge { line: 1, limit: 4096 })
        );
    }

    #[test]
    fn pretty_printed_events_become_one_line() {
        let pretty = line("a", 0).replace(",\"", ",\n  \"");
        let e = parse_body(BodyKind::Single, pretty.as_bytes(), limits(1)).unwrap().remove(0);
        assert_eq!(e.raw(), line("a", 0), "only the whitespace between tokens goes");
    }

    #[test]
    fn whitespace_inside_strings_and_escapes_is_kept() {
        let compact = r#"{"b":"x \" y\\","a":[1.50,"\u00e9\n"],"c":{}}"#;
        let pretty = "{\n  \"b\": \"x \\\" y\\\\\",\r\n\t\"a\" : [ 1.50 , \"\\u00e9\\n\" ],\n \"c\": { }\n}\n";
        assert_eq!(without_whitespace(pretty), compact);
        assert_eq!(without_whitespace(compact), compact);
    }
}

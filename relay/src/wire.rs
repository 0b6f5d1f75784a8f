//! The bytes a consumer receives for an event: the stored bytes verbatim,
//! or the engine's down-level of them when a capture ceiling is below the
//! event's level (AEP-0003 §6.4).

use std::sync::Arc;

use aep_engine::protocol::capture::downlevel;
use aep_engine::Capture;

use crate::held::HeldEvent;

/// The bytes to deliver for `event` under `ceiling` (`None`: as stored).
/// At or under the ceiling this is the stored allocation itself. `None`
/// only if the held bytes no longer parse, which ingest rules out.
pub fn event_bytes(event: &HeldEvent, ceiling: Option<Capture>) -> Option<Arc<str>> {
    match ceiling {
        Some(ceiling) if ceiling < event.capture() => Some(downlevel(&event.parse()?, ceiling).raw_arc()),
        _ => Some(event.raw_arc().clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::Event;

    #[test]
    fn stored_bytes_unless_the_ceiling_is_lower() {
        let e = Event::parse(
            r#"{"aep":"0.1","id":"a","type":"run.started","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","run":"r1","seq":0,"capture":"redacted","data":{"trigger":"user","prompt":"CANARY"}}"#,
        )
        .unwrap();
        let h = HeldEvent::new(&e);
        assert!(Arc::ptr_eq(&event_bytes(&h, None).unwrap(), &e.raw_arc()));
        assert!(Arc::ptr_eq(&event_bytes(&h, Some(Capture::Full)).unwrap(), &e.raw_arc()));
        let low = event_bytes(&h, Some(Capture::Metadata)).unwrap();
        assert!(!low.contains("CANARY"));
        assert!(low.contains("\"capture\":\"metadata\""));
    }
}

//! Acks (AEP-0004 §3): `control.accepted` / `control.rejected` whose
//! `cause` is the command's id. One place reads them for every party.

use std::borrow::Cow;

use serde::Serialize;

use crate::protocol::event::Event;
use crate::protocol::kind::EventKind;
use crate::protocol::vocabulary::EventType;

pub use crate::protocol::vocabulary::NackReason;

/// The decision an ack carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Decision {
    Accepted,
    Rejected {
        /// `None` when the reason is missing or not registered; kept as
        /// text in `raw_reason` so nothing is lost.
        reason: Option<NackReason>,
        raw_reason: Option<String>,
        detail: Option<String>,
    },
}

/// An ack seen on the wire: which command it answers and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Ack<'a> {
    pub command_id: &'a str,
    pub decision: Decision,
}

/// Reads `event` as an ack, when it is one (right type and a `cause`).
pub fn parse(event: &Event) -> Option<Ack<'_>> {
    let command_id = event.cause()?;
    let decision = match event.kind() {
        EventKind::Core(EventType::ControlAccepted) => Decision::Accepted,
        EventKind::Core(EventType::ControlRejected) => {
            let raw_reason = event.data_str("reason").map(Cow::into_owned);
            Decision::Rejected {
                reason: raw_reason.as_deref().and_then(NackReason::parse),
                raw_reason,
                detail: event.data_str("detail").map(Cow::into_owned),
            }
        }
        _ => return None,
    };
    Some(Ack { command_id, decision })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::vocabulary::types::{CONTROL_ACCEPTED as ACCEPTED, CONTROL_REJECTED as REJECTED};

    fn ev(ty: &str, data: &str) -> Event {
        Event::parse(&format!(
            r#"{{"aep":"0.1","id":"A1","type":"{ty}","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/t","agent":"t","session":"s","seq":4,"cause":"C1","data":{data}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn reads_acks() {
        let a = ev(ACCEPTED, "{}");
        assert_eq!(parse(&a), Some(Ack { command_id: "C1", decision: Decision::Accepted }));
        let r = ev(REJECTED, r#"{"reason":"refused","detail":"no"}"#);
        let ack = parse(&r).unwrap();
        assert_eq!(
            ack.decision,
            Decision::Rejected {
                reason: Some(NackReason::Refused),
                raw_reason: Some("refused".into()),
                detail: Some("no".into())
            }
        );
        let odd = ev(REJECTED, r#"{"reason":"mystery"}"#);
        assert!(matches!(parse(&odd).unwrap().decision, Decision::Rejected { reason: None, .. }));
        assert!(parse(&ev("run.cancelled", "{}")).is_none());
    }
}

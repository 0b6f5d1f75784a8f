//! The sentences a person reads for protocol outcomes. Every reason a
//! command can end with has words here, so nothing reaches the screen as
//! a bare code.

use aep_client::client::hub::HubError;
use aep_client::client::{Refusal, State};

/// What a command verb is called on screen.
pub fn verb(ty: &str) -> String {
    match ty {
        "control.attention.respond" => "Answer".into(),
        "control.cancel" => "Cancel".into(),
        "control.pause" => "Pause".into(),
        "control.resume" => "Resume".into(),
        other => match other.split_once(".control.") {
            Some((vendor, verb)) if vendor.starts_with("x.") => {
                format!("{verb} ({})", &vendor[2..])
            }
            _ => other.to_owned(),
        },
    }
}

/// Headline and explanation of a `control.rejected`.
pub fn rejected(reason: Option<&str>) -> (&'static str, &'static str) {
    match reason {
        Some("refused") => (
            "Refused by the agent",
            "The agent decided not to do this. That is its own call, not an error in the console or the relay.",
        ),
        Some("unsupported") => ("Not supported by the agent", "The agent does not implement this command."),
        Some("unauthorized") => ("Not allowed by the agent", "The agent does not take this command from this console."),
        Some("busy") => ("The agent is busy", "It could not take the command right now; trying again later may work."),
        Some("invalid") => ("The agent could not apply it", "The command was well formed but did not fit what the agent holds."),
        _ => ("Rejected by the agent", "The agent gave a reason this console does not know."),
    }
}

/// Headline and explanation of a relay `error` frame refusing a command
/// on the target's behalf: the agent never saw it.
pub fn relay_refused(code: &str, relay: &str) -> (String, String) {
    match code {
        "no-route" => (
            "Not delivered: the agent is not connected".into(),
            format!("Relay {relay} has no live connection from the agent that owns this session, so nobody received the command."),
        ),
        "ambiguous" => (
            "Not delivered: two agents claim this session".into(),
            format!("More than one connection on relay {relay} claims this session, so the relay delivered the command to neither."),
        ),
        "unauthorized" => (
            "Not delivered: commands are not allowed".into(),
            format!("Relay {relay} does not allow control with this token; the agent never saw the command."),
        ),
        "unsupported" => (
            "Not delivered: the agent does not take this command".into(),
            format!("Relay {relay} checked the agent's declared commands and this one is not among them."),
        ),
        other => (
            format!("Not delivered: refused by the relay ({other})"),
            format!("Relay {relay} refused the command before it reached the agent."),
        ),
    }
}

/// Headline and explanation of an ack window that passed in silence.
pub fn timed_out(window_ms: u64) -> (String, String) {
    (
        "No acknowledgement".into(),
        format!(
            "The agent did not acknowledge within {} s. It may not have received the command. \
             Retry sends the very same command (same id), so the agent cannot act on it twice.",
            window_ms.div_ceil(1000)
        ),
    )
}

/// A connection state for a status chip: a short word and an optional
/// longer explanation.
pub fn state(state: &State) -> (String, Option<String>) {
    match state {
        State::Idle => ("idle".into(), None),
        State::Connecting | State::Handshaking => ("connecting".into(), None),
        State::Live => ("live".into(), None),
        State::Reconnecting { attempt, .. } => (format!("reconnecting (attempt {attempt})"), None),
        State::Refused { reason } => match reason {
            Refusal::Unauthorized { .. } => (
                "refused: wrong token".into(),
                Some("The relay did not accept this token.".into()),
            ),
            Refusal::VersionUnsupported { peer_versions } => (
                "refused: version unsupported".into(),
                Some(format!(
                    "The relay speaks protocol {}; this console speaks 0.1.",
                    if peer_versions.is_empty() {
                        "versions it did not name".to_owned()
                    } else {
                        peer_versions.join(", ")
                    }
                )),
            ),
            other => ("refused".into(), Some(other.to_string())),
        },
        State::Closed => ("closed".into(), None),
    }
}

/// Why the console did not send a command, in words.
pub fn not_sent(e: &HubError) -> String {
    match e {
        HubError::NotLive { relay, .. } => {
            format!("Not sent: relay {relay} is not connected. Nothing was queued; send again once it is live.")
        }
        HubError::Backpressure { relay } => {
            format!("Not sent: relay {relay} is not keeping up. Nothing was queued.")
        }
        HubError::NotOverControl(_) => {
            "This request is answered in the agent's own interface, not here.".into()
        }
        HubError::NoRoute(_) => "Not sent: no relay carries this session.".into(),
        HubError::UnknownRequest(_) => "This request is no longer held by the console.".into(),
        other => format!("Not sent: {other}."),
    }
}

/// `1 run`, `3 runs`, `0 events`: a count with its noun agreeing.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The sessions list's run summary: `1 run: 1 finished, 0 failed, 0 cancelled`.
pub fn runs_summary(total: usize, finished: usize, failed: usize, cancelled: usize) -> String {
    format!("{}: {finished} finished, {failed} failed, {cancelled} cancelled", count(total, "run", "runs"))
}

/// The document title: the waiting count first, so a tab strip or a task
/// switcher shows it.
pub fn page_title(waiting: usize) -> String {
    match waiting {
        0 => "AEP console".to_owned(),
        n => format!("({n}) AEP console"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_client::UnixMs;

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(runs_summary(1, 1, 0, 0), "1 run: 1 finished, 0 failed, 0 cancelled");
        assert_eq!(runs_summary(2, 1, 1, 0), "2 runs: 1 finished, 1 failed, 0 cancelled");
        assert_eq!(count(0, "event", "events"), "0 events");
        assert_eq!(count(1, "event", "events"), "1 event");
    }

    #[test]
    fn the_title_leads_with_what_waits() {
        assert_eq!(page_title(0), "AEP console");
        assert_eq!(page_title(7), "(7) AEP console");
    }

    #[test]
    fn every_outcome_has_words() {
        assert_eq!(verb("x.demo.control.instruct"), "instruct (demo)");
        assert_eq!(verb("control.cancel"), "Cancel");
        assert!(rejected(Some("refused")).1.contains("not an error"));
        assert!(relay_refused("no-route", "r").0.contains("not connected"));
        assert!(relay_refused("ambiguous", "r").0.contains("two agents"));
        assert!(relay_refused("unauthorized", "r").1.contains("token"));
        assert!(relay_refused("teapot", "r").0.contains("teapot"));
        assert!(timed_out(10_000).1.contains("same id"));
        assert_eq!(
            state(&State::Reconnecting {
                attempt: 3,
                at: UnixMs(0)
            })
            .0,
            "reconnecting (attempt 3)"
        );
        let r = State::Refused {
            reason: Refusal::Unauthorized { detail: None },
        };
        assert_eq!(state(&r).0, "refused: wrong token");
    }
}

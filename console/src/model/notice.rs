//! Relay notices: history trimmed past what a resume needed, an error
//! frame, an orderly close. Said once, in words, naming the relay.

use aep_engine::client::hub::HubChange;

/// What a notice is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// The relay no longer holds the start of a session being resumed.
    Trimmed,
    /// The relay sent an error frame.
    Error,
    /// The relay is closing the connection (the console reconnects).
    Closing,
}

impl NoticeKind {
    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            NoticeKind::Trimmed => "trimmed",
            NoticeKind::Error => "error",
            NoticeKind::Closing => "closing",
        }
    }
}

/// A notice before it is numbered for the screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub relay: String,
    pub kind: NoticeKind,
    pub text: String,
}

/// The notice a hub change calls for, if any; `label` names a relay.
pub fn of(change: &HubChange, label: impl Fn(usize) -> String) -> Option<Said> {
    let (relay, kind, text) = match change {
        HubChange::ReplayExhausted { relay, info } => {
            let p = &info.earliest;
            (
                *relay,
                NoticeKind::Trimmed,
                format!(
                    "History was trimmed: relay {} no longer holds the start of session {} (the earliest event \
                     it kept is #{}). Events before that are missing here.",
                    label(*relay),
                    p.session,
                    p.seq
                ),
            )
        }
        HubChange::RelayError { relay, error } => {
            let detail = error.detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default();
            (*relay, NoticeKind::Error, format!("Relay {} reported an error ({}){detail}", label(*relay), error.code))
        }
        HubChange::Closing { relay, reason } => (
            *relay,
            NoticeKind::Closing,
            format!("Relay {} is closing the connection ({reason}); the console reconnects by itself.", label(*relay)),
        ),
        _ => return None,
    };
    Some(Said { relay: label(relay), kind, text })
}

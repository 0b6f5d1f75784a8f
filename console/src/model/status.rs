//! Relay connection status, for the chips in the header.

use aep_client::client::hub::Hub;
use aep_client::client::State;

use super::words;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayView {
    pub id: usize,
    pub label: String,
    /// `live`, `connecting`, `reconnecting`, `refused`, `closed`, `idle`.
    pub token: &'static str,
    /// `live`, `reconnecting (attempt 3)`, `refused: wrong token`.
    pub words: String,
    pub detail: Option<String>,
}

impl RelayView {
    pub fn is_live(&self) -> bool {
        self.token == "live"
    }
}

fn token(state: &State) -> &'static str {
    match state {
        State::Idle => "idle",
        State::Connecting | State::Handshaking => "connecting",
        State::Live => "live",
        State::Reconnecting { .. } => "reconnecting",
        State::Refused { .. } => "refused",
        State::Closed => "closed",
    }
}

/// Every relay's status. `token_refused[i]` is set when relay `i` answered
/// a credentials check with 401: a browser socket cannot see why an
/// upgrade failed, so the console asks the relay's HTTP side once.
pub fn relays(hub: &Hub, token_refused: &[bool]) -> Vec<RelayView> {
    (0..hub.relay_count())
        .map(|id| {
            let state = hub.state(id).cloned().unwrap_or(State::Idle);
            let (mut w, mut detail) = words::state(&state);
            let mut t = token(&state);
            if matches!(state, State::Reconnecting { .. }) && token_refused.get(id).copied().unwrap_or(false) {
                t = "refused";
                w = "refused: wrong token".to_owned();
                detail = Some("The relay answered 401: this token is not valid for it. The console keeps retrying in case the relay's token changes.".into());
            }
            RelayView { id, label: hub.label(id).unwrap_or_default().to_owned(), token: t, words: w, detail }
        })
        .collect()
}

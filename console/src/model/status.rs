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

/// The engine's state name, with the handshake shown as connecting.
fn token(state: &State) -> &'static str {
    match state {
        State::Handshaking => "connecting",
        other => other.name(),
    }
}

/// Every relay's status.
pub fn relays(hub: &Hub) -> Vec<RelayView> {
    (0..hub.relay_count())
        .map(|id| {
            let state = hub.state(id).cloned().unwrap_or(State::Idle);
            let (words, detail) = words::state(&state);
            RelayView { id, label: hub.label(id).unwrap_or_default().to_owned(), token: token(&state), words, detail }
        })
        .collect()
}

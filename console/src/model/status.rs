//! Relay connection status, for the chips in the header.

use aep_engine::client::hub::Hub;
use aep_engine::client::State;

use super::words;

/// A relay connection as the header's chip shows it (the handshake reads
/// as connecting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    Idle,
    Connecting,
    Live,
    Reconnecting,
    Refused,
    Closed,
}

impl Link {
    fn of(state: &State) -> Link {
        match state {
            State::Idle => Link::Idle,
            State::Connecting | State::Handshaking => Link::Connecting,
            State::Live => Link::Live,
            State::Reconnecting { .. } => Link::Reconnecting,
            State::Refused { .. } => Link::Refused,
            State::Closed => Link::Closed,
        }
    }

    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            Link::Idle => "idle",
            Link::Connecting => "connecting",
            Link::Live => "live",
            Link::Reconnecting => "reconnecting",
            Link::Refused => "refused",
            Link::Closed => "closed",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayView {
    pub id: usize,
    pub label: String,
    pub link: Link,
    /// `live`, `reconnecting (attempt 3)`, `refused: wrong token`.
    pub words: String,
    pub detail: Option<String>,
    /// The principal this console's credential is on this relay, when the
    /// relay named it (its hello): the name its commands carry.
    pub principal: Option<String>,
    /// Whether the relay lets this console command (`None`: it did not say).
    pub may_command: Option<bool>,
}

impl RelayView {
    pub fn is_live(&self) -> bool {
        self.link == Link::Live
    }

    pub fn is_refused(&self) -> bool {
        self.link == Link::Refused
    }
}

/// A relay as a chip names it: its host (and port), not its URL; the URL
/// stays one hover or long-press away.
pub fn name_of(label: &str) -> String {
    let rest = label.split_once("://").map_or(label, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    if host.is_empty() {
        label.to_owned()
    } else {
        host.to_owned()
    }
}

/// Every relay's status.
pub fn relays(hub: &Hub) -> Vec<RelayView> {
    (0..hub.relay_count())
        .map(|id| {
            let state = hub.state(id).cloned().unwrap_or(State::Idle);
            let (words, detail) = words::state(&state);
            let principal = hub
                .connection(id)
                .and_then(|c| c.peer_hello())
                .and_then(|h| h.capabilities.principal())
                .map(str::to_owned);
            let label = hub.label(id).unwrap_or_default().to_owned();
            RelayView { id, label, link: Link::of(&state), words, detail, principal, may_command: hub.may_command(id) }
        })
        .collect()
}

/// Whether answers can go anywhere, said once, from the connections'
/// states. The browser's own online flag only adds the likely reason: a
/// relay that is live is live, whatever the flag says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// At least one relay is live: nothing to warn about.
    Live,
    /// Relays are configured and none is live.
    NoneLive { device_offline: bool },
    /// Every relay refused the connection (a wrong token, say): each
    /// refusal is its own banner, with the fix; nothing is being waited for.
    Refused,
    /// No relay is configured (the connect screen).
    Unconfigured,
}

pub fn reach(relays: &[RelayView], device_online: bool) -> Reach {
    if relays.is_empty() {
        Reach::Unconfigured
    } else if relays.iter().any(RelayView::is_live) {
        Reach::Live
    } else if relays.iter().all(RelayView::is_refused) {
        Reach::Refused
    } else {
        Reach::NoneLive { device_offline: !device_online }
    }
}

impl Reach {
    /// The one banner about reaching the agents, if any.
    pub fn banner(self) -> Option<&'static str> {
        match self {
            Reach::NoneLive { device_offline: true } => Some(
                "This device is offline, so no relay is connected. Answers and commands are refused, \
                 never queued; the console reconnects by itself when the network is back.",
            ),
            Reach::NoneLive { device_offline: false } => {
                Some("No relay is connected. Answers and commands are refused, never queued, until one is.")
            }
            Reach::Live | Reach::Refused | Reach::Unconfigured => None,
        }
    }

    /// What the empty inbox says, if anything: never that it waits for a
    /// connection that was refused.
    pub fn empty_inbox(self) -> Option<&'static str> {
        match self {
            Reach::Live => Some("Nothing is waiting for an answer."),
            Reach::NoneLive { .. } => Some("Nothing to show yet: waiting for a relay connection."),
            Reach::Refused | Reach::Unconfigured => None,
        }
    }
}

/// A refused relay's banner, said once: who refused and why.
pub fn refused_banner(r: &RelayView) -> String {
    match &r.detail {
        Some(why) => format!("Relay {} refused the connection. {why}", r.label),
        None => format!("Relay {} refused the connection ({}).", r.label, r.words),
    }
}

/// Each relay's principal, kept from when it was last live (`known`, by
/// relay), so the person stays named while a relay is away.
pub fn remember(relays: &mut [RelayView], known: &mut Vec<Option<String>>) {
    known.resize(relays.len().max(known.len()), None);
    for r in relays.iter_mut() {
        match &r.principal {
            Some(p) => known[r.id] = Some(p.clone()),
            None => r.principal = known[r.id].clone(),
        }
    }
}

/// The names this console is connected as: each relay's principal; with
/// a relay that named none, the console's own agent name, which its
/// commands there carry.
pub fn me(relays: &[RelayView]) -> Vec<String> {
    let mut names: Vec<String> = relays.iter().filter_map(|r| r.principal.clone()).collect();
    if names.is_empty() || relays.iter().any(|r| r.principal.is_none()) {
        names.push(super::setup::AGENT.to_owned());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay(link: Link) -> RelayView {
        RelayView {
            id: 0,
            label: "r".into(),
            link,
            words: link.token().into(),
            detail: None,
            principal: None,
            may_command: None,
        }
    }

    #[test]
    fn a_chip_names_a_relay_by_its_host() {
        assert_eq!(name_of("ws://127.0.0.1:8787/socket"), "127.0.0.1:8787");
        assert_eq!(name_of("wss://relay.example/aep/socket?x=1"), "relay.example");
        assert_eq!(name_of("relay-a"), "relay-a");
    }

    #[test]
    fn a_live_relay_is_live_whatever_the_browser_flag_says() {
        assert_eq!(reach(&[relay(Link::Live)], false), Reach::Live);
        assert_eq!(reach(&[relay(Link::Live)], false).banner(), None);
    }

    #[test]
    fn offline_is_said_once_and_as_the_reason_no_relay_is_connected() {
        let r = reach(&[relay(Link::Reconnecting)], false);
        assert_eq!(r, Reach::NoneLive { device_offline: true });
        let words = r.banner().unwrap();
        assert!(words.contains("offline") && words.contains("never queued"), "{words}");
        let online = reach(&[relay(Link::Reconnecting)], true).banner().unwrap();
        assert!(!online.contains("offline"), "{online}");
        assert_eq!(reach(&[], false).banner(), None);
    }

    #[test]
    fn a_refused_token_is_said_once_and_nothing_claims_to_wait_for_a_connection() {
        let mut r = relay(Link::Refused);
        r.words = "refused: wrong token".into();
        r.detail = Some("The relay did not accept this token.".into());
        let all = [r.clone()];
        assert_eq!(reach(&all, true), Reach::Refused);
        assert_eq!(reach(&all, true).banner(), None, "no second banner besides the refusal");
        assert_eq!(reach(&all, true).empty_inbox(), None);
        let words = refused_banner(&r);
        assert_eq!(words.matches("refused").count(), 1, "{words}");
        assert!(words.contains("did not accept this token"), "{words}");
        // With another relay still trying, the console does wait.
        assert!(matches!(reach(&[r, relay(Link::Reconnecting)], true), Reach::NoneLive { .. }));
    }
}

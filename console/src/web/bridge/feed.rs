//! The driver's handler: what each hub change touched (cards, commands,
//! sessions, relay status, notices), noted until the next flush, and a
//! flush asked for.

use std::collections::HashSet;
use std::sync::Arc;

use aep_engine::client::hub::{Hub, HubChange};
use aep_engine::store::{self, CardRef};
use aep_browser::driver::{Deferred, Handler};
use leptos::prelude::*;

use super::Console;
use crate::model::notice;

/// What the driver's changes touched since the last flush.
#[derive(Default)]
pub(super) struct Touched {
    pub cards: HashSet<CardRef>,
    pub commands: HashSet<Arc<str>>,
    pub store: bool,
    pub status: bool,
    pub rosters: bool,
    /// A `session.*` event: what the session accepts may have changed.
    pub session_events: bool,
    pub notices: Vec<notice::Said>,
    /// Relays whose connection left `live`.
    pub away: Vec<usize>,
}

/// The driver's handler: notes what changed, and asks for a flush.
pub struct Feed {
    pub(super) console: Console,
    pub(super) touched: Touched,
}

impl Handler for Feed {
    type Core = Hub;
    fn change(&mut self, hub: &Hub, change: HubChange) {
        let t = &mut self.touched;
        let label = |r: usize| hub.label(r).unwrap_or("?").to_owned();
        t.notices.extend(notice::of(&change, label));
        match change {
            HubChange::Status { relay, state } => {
                t.status = true;
                if state != aep_engine::client::State::Live {
                    t.away.push(relay);
                }
            }
            HubChange::Disconnected { relay, .. } => {
                t.status = true;
                t.away.push(relay);
            }
            HubChange::Roster { .. } => t.rosters = true,
            HubChange::Event { event, .. } => {
                t.store = true;
                if event.ty().starts_with("session.") {
                    t.session_events = true;
                }
            }
            HubChange::Store(c) => {
                t.store = true;
                match c {
                    store::Change::CardOpened(r)
                    | store::Change::CardUpdated(r)
                    | store::Change::CardClosed(r)
                    | store::Change::CardEvicted(r) => {
                        t.cards.insert(r);
                    }
                    store::Change::CommandUpdated(r) => {
                        // Someone's command on a card: redraw the card.
                        let subject = hub
                            .store()
                            .command(&r)
                            .and_then(|c| c.issued())
                            .and_then(|i| i.subject.clone());
                        if let Some(request) = subject {
                            t.cards.insert(CardRef {
                                session: r.session.clone(),
                                request: Arc::from(request),
                            });
                        }
                        t.commands.insert(r.id);
                    }
                    _ => {}
                }
            }
            HubChange::Command(u) => {
                t.commands.insert(Arc::from(u.id.as_str()));
            }
            HubChange::Closing { .. } => t.status = true,
            HubChange::ReplayExhausted { .. } | HubChange::RelayError { .. } | HubChange::Violation { .. } => {}
        }
    }

    fn deferred(&mut self, hub: &Hub) -> Deferred {
        let t = &self.touched;
        let any =
            t.store || t.status || t.rosters || !t.commands.is_empty() || !t.notices.is_empty();
        if !any {
            return Vec::new();
        }
        let console = self.console;
        // The first requests of an empty inbox are drawn at once.
        let urgent = console.inbox.with_untracked(Vec::is_empty)
            && t.cards
                .iter()
                .any(|r| hub.store().card(r).is_some_and(|c| c.needs_answer()));
        vec![Box::new(move || console.kick(urgent))]
    }
}


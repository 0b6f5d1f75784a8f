//! The driver's handler: what each hub change touched is noted until the
//! next flush ([`Touched`]), and a flush asked for.

use aep_browser::driver::{Deferred, Handler};
use aep_engine::client::hub::{Hub, HubChange};
use leptos::prelude::*;

use super::Console;
use crate::model::touched::Touched;

/// The driver's handler: notes what changed, and asks for a flush.
pub struct Feed {
    pub(super) console: Console,
    pub(super) touched: Touched,
}

impl Handler for Feed {
    type Core = Hub;
    fn change(&mut self, hub: &Hub, change: HubChange) {
        self.touched.note(hub, change);
    }

    fn deferred(&mut self, hub: &Hub) -> Deferred {
        let t = &self.touched;
        if !t.any() {
            return Vec::new();
        }
        let console = self.console;
        // The first requests of an empty inbox are drawn at once.
        let urgent = console.inbox.with_untracked(Vec::is_empty)
            && t.cards.iter().any(|r| hub.store().card(r).is_some_and(|c| c.needs_answer()));
        vec![Box::new(move || console.kick(urgent))]
    }
}

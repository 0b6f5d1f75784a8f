//! Acks and outcomes of this client's own commands reach it whatever the
//! application's filter (`type: ["attention.*"]` would otherwise hide every
//! `control.accepted`): a relay that carried a command gets one more
//! subscription, on `cause` = the ids of its recent commands, since acks and
//! outcomes both name the command they answer as their cause. Subscriptions
//! on one connection are a disjunction, so nothing arrives twice.

use std::collections::VecDeque;

use serde_json::json;

use crate::client::connection::Connection;
use crate::protocol::filter::Filter;

/// Commands per relay whose acks and outcomes are watched; older ones are
/// still followed if the application's own filter lets them through.
pub const WATCHED_COMMANDS: usize = 64;

#[derive(Debug, Default)]
pub(super) struct OutcomeWatch {
    sub: Option<String>,
    ids: VecDeque<String>,
}

impl OutcomeWatch {
    /// Watches `command` on `conn`. Called before the command is written:
    /// the subscribe frame goes out first, so the relay knows it before the
    /// ack can exist. The new subscription is made before the old one is
    /// dropped, so nothing falls between them.
    pub fn watch(&mut self, conn: &mut Connection, command: &str) {
        if self.ids.iter().any(|id| id == command) {
            return; // a retry: already watched
        }
        if self.ids.len() >= WATCHED_COMMANDS {
            self.ids.pop_front();
        }
        self.ids.push_back(command.to_owned());
        let Ok(filter) = Filter::parse(&json!({ "cause": self.ids })) else { return };
        // At the subscription limit the application's filter is all there is.
        if let Ok(id) = conn.subscribe(filter, None) {
            if let Some(old) = self.sub.replace(id) {
                conn.unsubscribe(&old);
            }
        }
    }
}

//! What a screen reader is told when the inbox changes under the person:
//! requests that arrived and answers that settled, in one polite message
//! per change, so nobody has to leave what they are doing (or lose the
//! focus) to find out.

use aep_engine::client::hub::Hub;
use aep_engine::store::CardRef;
use aep_engine::Severity;

use super::card::{self, CardView};
use super::{inbox, words};

/// Requests named one by one in a message; beyond that they are counted.
pub const NAMED: usize = 3;

/// One change of the inbox: the first [`NAMED`] cards of each sort, and
/// how many there were in all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct News {
    pub arrived: Vec<CardView>,
    pub arrived_count: usize,
    pub settled: Vec<CardView>,
    pub settled_count: usize,
}

impl News {
    /// What arrived and what settled among the requests this console can
    /// answer (the rest are listed for information only): views for the
    /// few that are named, a count for the rest.
    pub fn gather(hub: &Hub, arrived: &[CardRef], settled: &[CardRef]) -> News {
        let store = hub.store();
        let named = |refs: &[CardRef]| {
            let cards: Vec<_> = refs.iter().filter_map(|r| store.card(r)).filter(|c| inbox::answerable(c)).collect();
            let views = cards.iter().take(NAMED).map(|c| card::view(hub, c)).collect();
            (views, cards.len())
        };
        let (arrived, arrived_count) = named(arrived);
        let (settled, settled_count) = named(settled);
        News { arrived, arrived_count, settled, settled_count }
    }

    /// The message, or nothing when nothing arrived or settled; whoever
    /// answered is named by [`words::person`] against `me`.
    pub fn words(&self, me: &[String]) -> Option<String> {
        let mut said = Vec::new();
        if self.arrived_count > NAMED {
            said.push(format!("{} are waiting.", words::count(self.arrived_count, "new request", "new requests")));
        } else {
            said.extend(self.arrived.iter().map(arrived));
        }
        if self.settled_count > NAMED {
            said.push(format!("{} settled.", words::count(self.settled_count, "request", "requests")));
        } else {
            said.extend(self.settled.iter().map(|c| settled(c, me)));
        }
        (!said.is_empty()).then(|| said.join(" "))
    }
}

/// `New critical permission request from guardian: Grant access?`: the
/// severity only when it is error or worse, where it changes what to do.
fn arrived(c: &CardView) -> String {
    let severity = if c.severity >= Severity::Error { format!("{} ", c.severity.as_str()) } else { String::new() };
    let prompt = c.prompt.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
    sentence(format!("New {severity}{} from {}{prompt}", request(c), c.agent))
}

/// `Settled: permission request from build-bot. Denied: it will not happen · Answered: Deny by you (ops) …`
fn settled(c: &CardView, me: &[String]) -> String {
    sentence(format!("Settled: {} from {}. {}", request(c), c.agent, c.outcome_words(me)))
}

/// `permission request`; a request that named no kind is just a request.
fn request(c: &CardView) -> String {
    match c.kind.as_str() {
        "" => "request".to_owned(),
        k => format!("{k} request"),
    }
}

/// Ends `s` as a sentence unless the agent's words already did.
fn sentence(mut s: String) -> String {
    if !s.ends_with(['.', '?', '!']) {
        s.push('.');
    }
    s
}

//! The inbox list as a person narrows it: waiting requests and the rows
//! where answered ones settled, kept to one agent, session or kind, and
//! grouped under headings. The list's own order (most urgent first) is
//! kept inside each group; groups come in the order of their most urgent
//! request.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use aep_engine::client::hub::{Hub, Reach};
use aep_engine::order;
use aep_engine::store::{Card, CardRef, SessionKey};
use aep_engine::UnixMs;

use super::card::{self, CardView};
use super::slots::{self, Slot};

/// What the inbox knows of a waiting request without building its view:
/// enough to filter and group a thousand of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub key: CardRef,
    pub agent: String,
    /// The session's title (its label, else its name).
    pub session_title: String,
    pub kind: String,
    /// This console can answer it (the agent takes answers by control, and
    /// the request itself was seen); others are for information only.
    pub answerable: bool,
    /// No live relay's roster lists its session: its agent is not
    /// connected, so nobody can answer it now, and it is listed apart.
    /// (Not counted as waiting either way; a card answered from here
    /// stays a card, so what came of the answer stays where it was tapped.)
    pub unreachable: bool,
    /// Agent-authored, for the information-only list.
    pub prompt: Option<String>,
}

/// One line of the inbox list.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    Waiting(Waiting),
    /// Where a card settled: what happened to it, in one line.
    Settled(CardView),
}

impl Row {
    pub fn request(&self) -> &str {
        match self {
            Row::Waiting(w) => &w.key.request,
            Row::Settled(c) => &c.id,
        }
    }

    fn key(&self) -> &CardRef {
        match self {
            Row::Waiting(w) => &w.key,
            Row::Settled(c) => &c.key,
        }
    }

    fn agent(&self) -> &str {
        match self {
            Row::Waiting(w) => &w.agent,
            Row::Settled(c) => &c.agent,
        }
    }

    fn session(&self) -> &SessionKey {
        match self {
            Row::Waiting(w) => &w.key.session,
            Row::Settled(c) => &c.key.session,
        }
    }

    fn session_title(&self) -> String {
        match self {
            Row::Waiting(w) => w.session_title.clone(),
            Row::Settled(c) => c.session_label.clone().unwrap_or_else(|| c.session.clone()),
        }
    }

    fn kind(&self) -> &str {
        match self {
            Row::Waiting(w) => &w.kind,
            Row::Settled(c) => &c.kind,
        }
    }
}

/// The facts of a waiting card the list filters and groups by.
pub fn waiting(hub: &Hub, c: &Card) -> Waiting {
    let session = hub.store().session_by_key(c.session());
    let session_title = session
        .and_then(|s| s.started())
        .and_then(|st| st.label.clone())
        .unwrap_or_else(|| c.key().session.name.to_string());
    Waiting {
        key: c.key().clone(),
        agent: session.map_or_else(String::new, |s| s.agent().to_owned()),
        session_title,
        kind: c.request().and_then(|r| r.kind.as_ref()).map(|k| k.as_str().to_owned()).unwrap_or_default(),
        answerable: answerable(c),
        unreachable: unreachable(hub, c) && !answered_here(hub, c),
        prompt: c.request().and_then(|r| r.prompt.clone()),
    }
}

/// Whether the card's agent is known not to be connected.
pub fn unreachable(hub: &Hub, c: &Card) -> bool {
    hub.reach(&c.session().name) == Reach::Unlisted
}

/// Whether this console sent a command about the card.
fn answered_here(hub: &Hub, c: &Card) -> bool {
    c.commands().iter().any(|id| hub.sender().get(id).is_some())
}

/// Whether this console can answer the card at all.
pub fn answerable(c: &Card) -> bool {
    c.request().is_some_and(|r| r.accepts_control())
}

/// A kind in the filter's and the groups' words: a request that named
/// none is said to have none.
fn kind_label(kind: &str) -> String {
    match kind {
        "" => "(no kind)".to_owned(),
        k => k.to_owned(),
    }
}

/// A session as a filter value: its source and name, which together name it.
pub fn session_token(k: &SessionKey) -> String {
    format!("{} {}", k.source, k.name)
}

/// The session name in a [`session_token`] (a source, being a URI, holds
/// no space).
fn session_name(token: &str) -> &str {
    token.split_once(' ').map_or(token, |(_, name)| name)
}

/// What the list is kept to; `None` admits everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub agent: Option<String>,
    /// A [`session_token`].
    pub session: Option<String>,
    pub kind: Option<String>,
}

impl Filter {
    pub fn is_active(&self) -> bool {
        self.active_count() > 0
    }

    /// How many of the three keep the list narrower.
    pub fn active_count(&self) -> usize {
        [self.agent.is_some(), self.session.is_some(), self.kind.is_some()].into_iter().filter(|a| *a).count()
    }

    pub fn admits(&self, row: &Row) -> bool {
        self.agent.as_deref().is_none_or(|a| a == row.agent())
            && self.session.as_deref().is_none_or(|s| s == session_token(row.session()))
            && self.kind.as_deref().is_none_or(|k| k == row.kind())
    }
}

/// How the list is grouped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Grouping {
    #[default]
    None,
    Agent,
    Session,
    Kind,
}

impl Grouping {
    pub const ALL: [Grouping; 4] = [Grouping::None, Grouping::Agent, Grouping::Session, Grouping::Kind];

    pub fn token(self) -> &'static str {
        match self {
            Grouping::None => "none",
            Grouping::Agent => "agent",
            Grouping::Session => "session",
            Grouping::Kind => "kind",
        }
    }

    pub fn from_token(t: &str) -> Grouping {
        Grouping::ALL.into_iter().find(|g| g.token() == t).unwrap_or_default()
    }

    pub fn words(self) -> &'static str {
        match self {
            Grouping::None => "No grouping",
            Grouping::Agent => "By agent",
            Grouping::Session => "By session",
            Grouping::Kind => "By kind",
        }
    }
}

/// One value a filter can take, with how many requests wait under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facet {
    pub value: String,
    pub label: String,
    pub count: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facets {
    pub agents: Vec<Facet>,
    pub sessions: Vec<Facet>,
    pub kinds: Vec<Facet>,
}

/// The values each filter offers, from the waiting requests, sorted by
/// their words. A value in `chosen` whose last request went stays offered
/// with 0, so the select never silently shows another one; it keeps the
/// words a row still has for it, else what its value says.
pub fn facets(rows: &[Row], chosen: &Filter) -> Facets {
    fn add(into: &mut Vec<Facet>, value: String, label: String, count: usize) {
        match into.iter_mut().find(|f| f.value == value) {
            Some(f) => f.count += count,
            None => into.push(Facet { value, label, count }),
        }
    }
    let mut f = Facets::default();
    for row in rows.iter().filter(|r| matches!(r, Row::Waiting(_))) {
        add(&mut f.agents, row.agent().to_owned(), row.agent().to_owned(), 1);
        add(&mut f.sessions, session_token(row.session()), row.session_title(), 1);
        add(&mut f.kinds, row.kind().to_owned(), kind_label(row.kind()), 1);
    }
    if let Some(agent) = &chosen.agent {
        add(&mut f.agents, agent.clone(), agent.clone(), 0);
    }
    if let Some(token) = &chosen.session {
        let title = rows
            .iter()
            .find(|r| session_token(r.session()) == *token)
            .map(Row::session_title)
            .unwrap_or_else(|| session_name(token).to_owned());
        add(&mut f.sessions, token.clone(), title, 0);
    }
    if let Some(kind) = &chosen.kind {
        add(&mut f.kinds, kind.clone(), kind_label(kind), 0);
    }
    for list in [&mut f.agents, &mut f.sessions, &mut f.kinds] {
        order::sort_by(list, |a, b| a.label.cmp(&b.label).then_with(|| a.value.cmp(&b.value)));
    }
    f
}

/// A heading and the rows under it; without grouping, one group with no
/// title.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub key: String,
    pub title: String,
    pub rows: Vec<Row>,
}

/// The list as shown: `rows` in their order, kept to `filter`, grouped.
pub fn arrange(rows: &[Row], filter: &Filter, grouping: Grouping) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for row in rows.iter().filter(|r| filter.admits(r)) {
        let (key, title) = match grouping {
            Grouping::None => (String::new(), String::new()),
            Grouping::Agent => (row.agent().to_owned(), row.agent().to_owned()),
            Grouping::Session => (session_token(row.session()), row.session_title()),
            Grouping::Kind => (row.kind().to_owned(), kind_label(row.kind())),
        };
        match groups.iter_mut().find(|g| g.key == key) {
            Some(g) => g.rows.push(row.clone()),
            None => groups.push(Group { key, title, rows: vec![row.clone()] }),
        }
    }
    if groups.is_empty() && grouping == Grouping::None {
        groups.push(Group { key: String::new(), title: String::new(), rows: Vec::new() });
    }
    groups
}

/// Settled cards kept in the history view.
pub const MAX_HISTORY: usize = 200;
/// A card pending at least this long on this page was there to be seen.
pub const SEEN_PENDING_MS: u64 = 2_000;

/// The inbox list across refreshes: which cards wait and since when (this
/// page's clock), and where cards that stopped waiting left a row.
#[derive(Debug, Default)]
pub struct Tracker {
    pending: HashMap<CardRef, UnixMs>,
    by_request: HashMap<Arc<str>, CardRef>,
    slots: Vec<Slot<CardRef>>,
}

/// What one refresh found.
#[derive(Debug)]
pub struct Refresh {
    /// The waiting cards this console can answer (their agent connected),
    /// in the inbox order: what the count, the badge and the title say.
    pub order: Vec<CardRef>,
    /// The list as drawn.
    pub rows: Vec<Row>,
    /// Cards waiting now that were not before.
    pub fresh: Vec<CardRef>,
    /// Cards that stopped waiting.
    pub gone: Vec<CardRef>,
    /// Of those, the ones that left a row (seen or answered here), oldest
    /// request first.
    pub settled: Vec<CardRef>,
}

impl Tracker {
    /// The list after the store changed (or the clock moved on): a card
    /// that stopped waiting leaves a row in its place when this console
    /// answered it, or it waited long enough to have been seen; not for
    /// requests that opened and closed within one catch-up.
    pub fn refresh(&mut self, hub: &Hub, at: UnixMs) -> Refresh {
        let store = hub.store();
        let inbox = store.inbox();
        let mut order: Vec<(CardRef, bool)> = Vec::with_capacity(inbox.len());
        let mut fresh = Vec::new();
        let mut alive: HashMap<CardRef, UnixMs> = HashMap::with_capacity(inbox.len());
        for c in inbox {
            let r = c.key();
            let since = match self.pending.get(r) {
                Some(t) => *t,
                None => {
                    self.by_request.insert(r.request.clone(), r.clone());
                    fresh.push(r.clone());
                    at
                }
            };
            alive.insert(r.clone(), since);
            order.push((r.clone(), answerable(c) && !unreachable(hub, c)));
        }
        // What can be answered here comes first; the rest is information,
        // or waits for its agent to come back.
        let (mut order, others): (Vec<_>, Vec<_>) = order.into_iter().partition(|(_, a)| *a);
        let answerable_count = order.len();
        order.extend(others);
        let mut order: Vec<CardRef> = order.into_iter().map(|(r, _)| r).collect();
        let mut gone = Vec::new();
        let mut confirm: HashSet<CardRef> = HashSet::new();
        for (r, since) in self.pending.drain() {
            if alive.contains_key(&r) {
                continue;
            }
            self.by_request.remove(&r.request);
            let answered_here = store.card(&r).is_some_and(|c| answered_here(hub, c));
            if answered_here || at.since(since) >= SEEN_PENDING_MS {
                confirm.insert(r.clone());
            }
            gone.push(r);
        }
        self.pending = alive;
        let mut settled: Vec<CardRef> = gone.iter().filter(|r| confirm.contains(*r)).cloned().collect();
        order::sort_by(&mut settled, |a, b| a.request.cmp(&b.request));
        self.slots = slots::arrange(&self.slots, &order, at.0, |r| confirm.contains(r));
        let rows = self
            .slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Waiting(r) => store.card(r).map(|c| Row::Waiting(waiting(hub, c))),
                Slot::Settled(r, _) => {
                    store.card(r).filter(|c| !c.needs_answer()).map(|c| Row::Settled(card::view(hub, c)))
                }
            })
            .collect();
        order.truncate(answerable_count);
        Refresh { order, rows, fresh, gone, settled }
    }

    pub fn pending(&self, r: &CardRef) -> bool {
        self.pending.contains_key(r)
    }

    /// The waiting card a request id names, to redraw it when a command
    /// answering it changes.
    pub fn card_for_request(&self, request: &str) -> Option<&CardRef> {
        self.by_request.get(request)
    }

    /// Some settled row is old enough to leave.
    pub fn rows_expire(&self, at: UnixMs) -> bool {
        self.slots.iter().any(|r| matches!(r, Slot::Settled(_, t) if at.0.saturating_sub(*t) >= slots::ROW_MS))
    }
}

/// Settled cards for the history view, the latest first.
pub fn history(hub: &Hub) -> Vec<CardView> {
    let store = hub.store();
    let mut settled: Vec<&Card> = store.cards().filter(|c| c.request().is_some() && !c.needs_answer()).collect();
    let settled_at = |c: &&Card| c.closed_at().or(c.answered_at()).unwrap_or(c.first_seen());
    order::sort_by(&mut settled, |a, b| settled_at(b).cmp(&settled_at(a)));
    settled.truncate(MAX_HISTORY);
    settled.into_iter().map(|c| card::view(hub, c)).collect()
}

/// What the inbox shows of the list, so that nothing on screen moves when
/// requests arrive: a request that would land above one already shown
/// waits behind "N new" until the person brings them in; one that lands
/// after every shown card (or into an empty list) is shown at once, since
/// nothing shown moves for it.
///
/// What a first catch-up brings is not an arrival above the reader: until
/// the list has been still for [`LOAD_QUIET_MS`] after a relay first went
/// live (or [`LOAD_MAX_MS`] passed), every request takes its place in the
/// order, most urgent first. A card that moves meanwhile takes no tap until
/// it has been still (`model::steady`).
#[derive(Debug, Default)]
pub struct Arrivals {
    shown: HashSet<CardRef>,
    load: Load,
}

/// Where the inbox is in its first catch-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Load {
    /// No relay has been live yet: nothing has been caught up.
    #[default]
    Connecting,
    /// A catch-up is coming in: it began at `since`, and the list last
    /// gained a request at `last`.
    CatchingUp { since: u64, last: u64 },
    /// Caught up: what arrives now arrives above or below the reader.
    Done,
}

/// The first catch-up is over once no request has joined the list for this
/// long: longer than the gap between two flushes of a burst.
pub const LOAD_QUIET_MS: u64 = 700;
/// ... or this long after a relay first went live, whatever keeps coming.
pub const LOAD_MAX_MS: u64 = 5_000;

/// The rows to draw, and how many requests wait behind "N new".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placed {
    pub rows: Vec<Row>,
    pub held: usize,
}

impl Arrivals {
    /// The rows drawn of `rows` at `now` (milliseconds, any clock), with
    /// `live` whether some relay is live.
    pub fn place(&mut self, rows: &[Row], live: bool, now: u64) -> Placed {
        self.load = match self.load {
            Load::Connecting if live => Load::CatchingUp { since: now, last: now },
            Load::CatchingUp { since, last }
                if now.saturating_sub(last) >= LOAD_QUIET_MS || now.saturating_sub(since) >= LOAD_MAX_MS =>
            {
                Load::Done
            }
            other => other,
        };
        if let Load::CatchingUp { since, .. } = self.load {
            let gained = rows.iter().any(|r| matches!(r, Row::Waiting(_)) && !self.shown.contains(r.key()));
            if gained {
                self.load = Load::CatchingUp { since, last: now };
            }
            self.show_all(rows);
        }
        let shown = |r: &Row| self.shown.contains(r.key());
        let last_shown = rows.iter().rposition(|r| matches!(r, Row::Waiting(_)) && shown(r));
        let mut placed = Placed::default();
        let mut now_shown = HashSet::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let admit = match row {
                // A settled row only where its card was shown.
                Row::Settled(_) => shown(row),
                Row::Waiting(_) => shown(row) || last_shown.is_none_or(|l| i > l),
            };
            if admit {
                now_shown.insert(row.key().clone());
                placed.rows.push(row.clone());
            } else if matches!(row, Row::Waiting(_)) {
                placed.held += 1;
            }
        }
        self.shown = now_shown;
        placed
    }

    /// Brings in every request held back.
    pub fn show_all(&mut self, rows: &[Row]) {
        self.shown = rows.iter().map(|r| r.key().clone()).collect();
    }
}

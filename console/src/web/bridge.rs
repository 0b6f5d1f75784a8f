//! The bridge between the browser driver (the same `Driver` and `Hub` the
//! npm package uses) and the screen.
//!
//! The driver hands every change to [`Feed`], which only notes what it
//! touched (cards, commands, sessions, relay status) and schedules one
//! flush. The flush reads the hub once and refreshes the signals the
//! components watch, each only when its value actually changed, and only
//! for what the changes named. Bursts (a resume replaying a thousand
//! requests) become a handful of flushes.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use aep_client::client::hub::{Hub, HubChange, HubError, Target};
use aep_client::client::State;
use aep_client::control::answer::Answer;
use aep_client::control::sender::CancelScope;
use aep_client::store::{self, CardRef, SessionKey};
use aep_client::wasm::driver::{self, Deferred, Driver, Handler};
use aep_client::{Capture, UnixMs};
use leptos::prelude::*;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::platform::{after, hidden, now, perf_now, random};
use super::notify;
use crate::model::card::{self, CardView};
use crate::model::command::{self, CommandView};
use crate::model::session::{self, Lane};
use crate::model::setup::{self, RelayInput, Setup};
use crate::model::slots::{self, Slot};
use crate::model::status::{self, RelayView};
use crate::model::timeline::{self, Item};
use crate::model::words;

/// Settled cards kept in the history view.
pub const MAX_HISTORY: usize = 200;
/// A card pending at least this long on this page was there to be seen.
const SEEN_PENDING_MS: u64 = 2_000;
/// Rosters are refreshed this often while live, so a departed agent's
/// controls disappear even without a session event.
const ROSTER_REFRESH_MS: u64 = 15_000;

type Shared = driver::Shared<Feed>;

thread_local! {
    static INNER: RefCell<Option<Inner>> = const { RefCell::new(None) };
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
    static COST_MS: Cell<f64> = const { Cell::new(0.0) };
    static NOTICE_SEQ: Cell<u64> = const { Cell::new(0) };
    static LAST_FLUSH: Cell<f64> = const { Cell::new(f64::NEG_INFINITY) };
}

thread_local! {
    /// Signal writes collected during a flush, made once it let go of the
    /// driver and the card map.
    static LATER: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

fn later(write: impl FnOnce() + 'static) {
    LATER.with(|l| l.borrow_mut().push(Box::new(write)));
}

/// Least time between two flushes made straight from driver turns.
const FLUSH_EVERY_MS: f64 = 100.0;

/// A relay notice: trimmed history, an error frame, an orderly close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub id: u64,
    pub relay: String,
    /// `trimmed`, `error`, `closing`.
    pub kind: &'static str,
    pub text: String,
}

/// One line of the inbox list.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    Waiting(CardRef),
    /// Where a card settled: what happened to it, in one line.
    Settled(CardView),
}

/// One session, in full, for its detail view.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionDetail {
    pub lane: Lane,
    pub items: Vec<Item>,
    pub hidden: usize,
    pub commands: Vec<CommandView>,
}

/// What the driver's changes touched since the last flush.
#[derive(Default)]
struct Touched {
    cards: HashSet<CardRef>,
    commands: HashSet<Arc<str>>,
    store: bool,
    status: bool,
    rosters: bool,
    /// A `session.*` event: what the session accepts may have changed.
    session_events: bool,
    notices: Vec<(String, &'static str, String)>,
}

/// The driver's handler: notes what changed, and asks for a flush.
pub struct Feed {
    console: Console,
    touched: Touched,
}

impl Handler for Feed {
    type Core = Hub;
    fn change(&mut self, hub: &Hub, change: HubChange) {
        let t = &mut self.touched;
        let label = |r: usize| hub.label(r).unwrap_or("?").to_owned();
        match change {
            HubChange::Status { .. } | HubChange::Disconnected { .. } => t.status = true,
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
            HubChange::ReplayExhausted { relay, info } => {
                let p = &info.earliest;
                t.notices.push((
                    label(relay),
                    "trimmed",
                    format!(
                        "History was trimmed: relay {} no longer holds the start of session {} (the earliest event \
                         it kept is #{}). Events before that are missing here.",
                        label(relay),
                        p.session,
                        p.seq
                    ),
                ));
            }
            HubChange::RelayError { relay, error } => {
                let detail = error.detail.map(|d| format!(": {d}")).unwrap_or_default();
                t.notices.push((
                    label(relay),
                    "error",
                    format!(
                        "Relay {} reported an error ({}){detail}",
                        label(relay),
                        error.code
                    ),
                ));
            }
            HubChange::Closing { relay, reason } => {
                t.notices.push((
                    label(relay),
                    "closing",
                    format!("Relay {} is closing the connection ({reason}); the console reconnects by itself.", label(relay)),
                ));
                t.status = true;
            }
            HubChange::Violation { .. } => {}
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

struct Inner {
    driver: Shared,
    /// Views of the pending cards on screen.
    cards: HashMap<CardRef, ArcRwSignal<CardView>>,
    /// Every pending card, and since when (this browser's clock).
    pending: HashMap<CardRef, UnixMs>,
    /// Pending cards by request id, to find the card a command answers.
    by_request: HashMap<Arc<str>, CardRef>,
    /// The inbox list as drawn: waiting cards, and rows where cards settled.
    rows: Vec<Slot<CardRef>>,
    flushed: bool,
    dropped: u64,
    last_roster: UnixMs,
}

/// The signals the components watch, and the intents they call.
#[derive(Clone, Copy)]
pub struct Console {
    pub active: RwSignal<bool>,
    pub relays: RwSignal<Vec<RelayView>>,
    /// Pending cards, most severe, then soonest to expire, then oldest first.
    pub inbox: RwSignal<Vec<CardRef>>,
    /// The inbox list: waiting cards in order, and a one-line row where a
    /// card settled, for [`slots::ROW_MS`].
    pub rows: RwSignal<Vec<Row>>,
    pub history: RwSignal<Vec<CardView>>,
    pub lanes: RwSignal<Vec<Lane>>,
    pub notices: RwSignal<Vec<Notice>>,
    /// Bumped by every flush that changed the store.
    pub tick: RwSignal<u64>,
    /// This browser's clock, once a second.
    pub now: RwSignal<UnixMs>,
    pub online: RwSignal<bool>,
    pub notify: RwSignal<bool>,
    /// Bumped (once a frame at most) while the page scrolls, so cards can
    /// tell when they come into view.
    pub scrolled: RwSignal<u64>,
}

fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|v| v != &value) {
        signal.set(value);
    }
}

fn with_inner<R>(f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
    INNER.with(|cell| cell.borrow_mut().as_mut().map(f))
}

fn shared() -> Option<Shared> {
    INNER.with(|cell| {
        cell.try_borrow()
            .ok()
            .and_then(|i| i.as_ref().map(|i| i.driver.clone()))
    })
}

impl Console {
    pub fn new() -> Console {
        Console {
            active: RwSignal::new(false),
            relays: RwSignal::new(Vec::new()),
            inbox: RwSignal::new(Vec::new()),
            rows: RwSignal::new(Vec::new()),
            history: RwSignal::new(Vec::new()),
            lanes: RwSignal::new(Vec::new()),
            notices: RwSignal::new(Vec::new()),
            tick: RwSignal::new(0),
            now: RwSignal::new(now()),
            online: RwSignal::new(super::platform::online()),
            notify: RwSignal::new(false),
            scrolled: RwSignal::new(0),
        }
    }

    /// Starts the clock and the online watch; call once.
    pub fn run_clock(self) {
        super::platform::every(1000, move || {
            self.now.set(now());
            self.schedule();
        });
        let win = super::platform::window();
        let pending = std::rc::Rc::new(Cell::new(false));
        let on_scroll = Closure::<dyn FnMut()>::new(move || {
            if pending.replace(true) {
                return;
            }
            let pending = pending.clone();
            leptos::prelude::request_animation_frame(move || {
                pending.set(false);
                self.scrolled.update(|n| *n += 1);
            });
        });
        let _ = win.add_event_listener_with_callback("scroll", on_scroll.as_ref().unchecked_ref());
        on_scroll.forget();
        for name in ["online", "offline"] {
            let cb = Closure::<dyn FnMut()>::new(move || {
                let online = super::platform::online();
                if !online {
                    self.went_offline();
                }
                self.online.set(online);
            });
            let _ = win.add_event_listener_with_callback(name, cb.as_ref().unchecked_ref());
            cb.forget();
        }
    }

    /// Connects to `relays`; errors are per row, in words.
    pub fn connect(self, relays: &[RelayInput]) -> Result<(), Vec<(usize, String)>> {
        let host = super::platform::window()
            .location()
            .host()
            .unwrap_or_else(|_| "localhost".into());
        let Setup {
            hub,
            relays: specs,
            endpoints,
        } = setup::build(relays, &host, random() as u64)?;
        let hub = Hub::new(hub, specs).map_err(|e| vec![(0, e.to_string())])?;
        self.disconnect();
        let driver = Driver::new(
            hub,
            endpoints,
            None,
            Feed {
                console: self,
                touched: Touched::default(),
            },
        );
        INNER.with(|cell| {
            *cell.borrow_mut() = Some(Inner {
                driver: driver.clone(),
                cards: HashMap::new(),
                pending: HashMap::new(),
                by_request: HashMap::new(),
                rows: Vec::new(),
                flushed: false,
                dropped: 0,
                last_roster: now(),
            })
        });
        self.active.set(true);
        driver::with(&driver, |d| d.hub.connect(now()));
        self.schedule();
        Ok(())
    }

    /// The device lost its network: the connections are closed now, so
    /// the relay chips, the banner and the answer buttons all say so.
    fn went_offline(self) {
        if let Some(d) = shared() {
            driver::with(&d, |d| d.drop_sockets("this device went offline"));
        }
        self.schedule();
    }

    /// Closes every relay and forgets the state.
    pub fn disconnect(self) {
        let old = INNER.with(|cell| cell.borrow_mut().take());
        if let Some(inner) = old {
            driver::with(&inner.driver, |d| d.hub.close(now()));
        }
        self.active.set(false);
        self.relays.set(Vec::new());
        self.inbox.set(Vec::new());
        self.rows.set(Vec::new());
        self.history.set(Vec::new());
        self.lanes.set(Vec::new());
        self.notices.set(Vec::new());
    }

    /// After a driver turn: flushes at once when the last flush is old
    /// enough (a flood of socket messages starves timers), else later.
    pub fn kick(self, urgent: bool) {
        if urgent || perf_now() - LAST_FLUSH.get() >= FLUSH_EVERY_MS {
            self.flush();
        } else {
            self.schedule();
        }
    }

    pub fn schedule(self) {
        if SCHEDULED.get() {
            return;
        }
        SCHEDULED.set(true);
        // Coalesce bursts; back off further when flushing got expensive.
        let delay = (COST_MS.get() * 3.0).clamp(16.0, 250.0) as i32;
        after(delay, move || self.flush());
    }

    fn flush(self) {
        SCHEDULED.set(false);
        let Some(rc) = shared() else { return };
        let started = perf_now();
        LAST_FLUSH.set(started);
        let mut asks: Vec<usize> = Vec::new();
        {
            let Ok(mut guard) = rc.try_borrow_mut() else {
                self.schedule();
                return;
            };
            let d = &mut *guard;
            let touched = std::mem::take(&mut d.handler.touched);
            let hub = &d.hub;
            with_inner(|inner| self.apply(inner, hub, touched, &mut asks));
        }
        // Signals change only now, with nothing borrowed: whatever they
        // wake may read the hub and the card views again.
        for write in LATER.take() {
            write();
        }
        asks.sort_unstable();
        asks.dedup();
        if !asks.is_empty() {
            driver::with(&rc, |d| {
                for r in asks {
                    let _ = d.hub.request_roster(r);
                }
            });
        }
        COST_MS.set(perf_now() - started);
    }

    fn apply(
        self,
        inner: &mut Inner,
        hub: &Hub,
        t: Touched,
        asks: &mut Vec<usize>,
    ) {
        let at = now();
        let live: Vec<usize> = (0..hub.relay_count())
            .filter(|r| hub.state(*r) == Some(&State::Live))
            .collect();
        let relays = status::relays(hub);
        later(move || set_if_changed(self.relays, relays));

        for (relay, kind, text) in t.notices {
            let id = NOTICE_SEQ.get() + 1;
            NOTICE_SEQ.set(id);
            later(move || {
                self.notices.update(|n| {
                    if !n.iter().any(|x| x.text == text) {
                        n.push(Notice {
                            id,
                            relay,
                            kind,
                            text,
                        });
                        if n.len() > 8 {
                            n.remove(0);
                        }
                    }
                })
            });
        }

        // The hub dropped changes nobody drained: redraw everything.
        let full = !inner.flushed || hub.dropped_changes() != inner.dropped;
        inner.dropped = hub.dropped_changes();
        let mut cards = t.cards;
        for id in &t.commands {
            let subject = hub
                .sender()
                .get(id)
                .and_then(|c| c.command().subject().map(str::to_owned));
            if let Some(r) = subject.and_then(|s| inner.by_request.get(s.as_str()).cloned()) {
                cards.insert(r);
            }
        }
        let rows_expire = inner
            .rows
            .iter()
            .any(|r| matches!(r, Slot::Settled(_, t) if at.0.saturating_sub(*t) >= slots::ROW_MS));
        if full || !cards.is_empty() || rows_expire {
            self.refresh_cards(inner, hub, &cards, full, at);
        }
        if full || t.store || !t.commands.is_empty() {
            later(move || self.tick.update(|x| *x += 1));
        }
        if full || t.store || t.status || t.rosters {
            let lanes = session::lanes(hub);
            later(move || set_if_changed(self.lanes, lanes));
        }
        if t.session_events && inner.flushed {
            asks.extend(live.iter().copied());
        }
        if at.since(inner.last_roster) >= ROSTER_REFRESH_MS {
            inner.last_roster = at;
            asks.extend(live.iter().copied());
        }
        inner.flushed = true;
    }

    /// Views are built only for cards on screen (see [`Console::card`]);
    /// here the order is refreshed, and the views of changed cards.
    fn refresh_cards(
        self,
        inner: &mut Inner,
        hub: &Hub,
        changed: &HashSet<CardRef>,
        full: bool,
        at: UnixMs,
    ) {
        let store = hub.store();
        let pending = store.inbox();
        let mut order = Vec::with_capacity(pending.len());
        let mut fresh = Vec::new();
        let mut alive: HashMap<CardRef, UnixMs> = HashMap::with_capacity(pending.len());
        let notify = self.notify.get_untracked() && hidden();
        for c in pending {
            let r = c.key();
            if let Some(s) = inner.cards.get(r) {
                if full || changed.contains(r) {
                    let v = card::view(hub, c);
                    let s = s.clone();
                    later(move || {
                        if s.with_untracked(|old| old != &v) {
                            s.set(v);
                        }
                    });
                }
            }
            let since = match inner.pending.get(r) {
                Some(t) => *t,
                None => {
                    inner.by_request.insert(r.request.clone(), r.clone());
                    if notify && inner.flushed {
                        fresh.push(card::view(hub, c));
                    }
                    at
                }
            };
            alive.insert(r.clone(), since);
            order.push(r.clone());
        }
        let gone: Vec<(CardRef, UnixMs)> = inner
            .pending
            .iter()
            .filter(|(k, _)| !alive.contains_key(*k))
            .map(|(k, t)| (k.clone(), *t))
            .collect();
        let mut confirm: HashSet<CardRef> = HashSet::new();
        for (r, since) in gone {
            inner.cards.remove(&r);
            inner.by_request.remove(&r.request);
            // A row is left for what a person could have seen waiting (not
            // requests that opened and closed within one catch-up), and for
            // what they answered themselves.
            let answered_here = store
                .card(&r)
                .is_some_and(|c| c.commands().iter().any(|id| hub.sender().get(id).is_some()));
            if answered_here || at.since(since) >= SEEN_PENDING_MS {
                confirm.insert(r);
            }
        }
        inner.pending = alive;
        inner.rows = slots::arrange(&inner.rows, &order, at.0, |r| confirm.contains(r));
        let rows: Vec<Row> = inner
            .rows
            .iter()
            .filter_map(|slot| match slot {
                Slot::Waiting(r) => Some(Row::Waiting(r.clone())),
                Slot::Settled(r, _) => store
                    .card(r)
                    .filter(|c| !c.needs_answer())
                    .map(|c| Row::Settled(card::view(hub, c))),
            })
            .collect();
        later(move || set_if_changed(self.rows, rows));
        later(move || set_if_changed(self.inbox, order));

        if !fresh.is_empty() {
            later(move || notify::new_requests(&fresh));
        }


        let settled_changed = full
            || changed
                .iter()
                .any(|r| store.card(r).map_or(true, |c| !c.needs_answer()));
        if settled_changed {
            let mut settled: Vec<&store::Card> = store
                .cards()
                .filter(|c| c.request().is_some() && !c.needs_answer())
                .collect();
            settled.sort_by_key(|c| {
                std::cmp::Reverse(c.closed_at().or(c.answered_at()).unwrap_or(c.first_seen()))
            });
            settled.truncate(MAX_HISTORY);
            let history: Vec<CardView> = settled.into_iter().map(|c| card::view(hub, c)).collect();
            later(move || set_if_changed(self.history, history));
        }
    }

    // ----- reads ------------------------------------------------------------

    /// The live view of one pending card, built when first shown.
    pub fn card(self, r: &CardRef) -> Option<ArcRwSignal<CardView>> {
        INNER.with(|cell| {
            let mut guard = cell.try_borrow_mut().ok()?;
            let inner = guard.as_mut()?;
            if let Some(s) = inner.cards.get(r) {
                return Some(s.clone());
            }
            let d = inner.driver.try_borrow().ok()?;
            let c = d.hub.store().card(r)?;
            let s = ArcRwSignal::new(card::view(&d.hub, c));
            drop(d);
            if inner.pending.contains_key(r) {
                inner.cards.insert(r.clone(), s.clone());
            }
            Some(s)
        })
    }

    /// One session in full (timeline, commands); call inside a memo that
    /// tracks [`Console::tick`].
    pub fn session(self, key: &SessionKey) -> Option<SessionDetail> {
        let d = shared()?;
        let d = d.try_borrow().ok()?;
        let s = d.hub.store().session_by_key(key)?;
        let (items, hidden) = timeline::items(s);
        Some(SessionDetail {
            lane: session::lane(&d.hub, s),
            items,
            hidden,
            commands: session::commands(&d.hub, s),
        })
    }

    /// One command of this console's, as its sender follows it.
    pub fn command(self, id: &str) -> Option<CommandView> {
        let d = shared()?;
        let d = d.try_borrow().ok()?;
        let t = d.hub.sender().get(id)?;
        Some(command::mine(&d.hub, t, &[]))
    }

    // ----- intents ------------------------------------------------------------

    fn send(self, f: impl FnOnce(&mut Hub) -> Result<String, HubError>) -> Result<String, String> {
        let d = shared().ok_or_else(|| "Not connected to any relay.".to_owned())?;
        let out = driver::with(&d, |d| f(&mut d.hub)).map_err(|e| words::not_sent(&e));
        self.schedule();
        out
    }

    pub fn respond(self, card: &CardRef, answer: Answer) -> Result<String, String> {
        let id = card.request.to_string();
        self.send(move |hub| hub.respond(&id, answer, random(), now()))
    }

    fn target(lane: &Lane, run: Option<&str>) -> Target {
        Target {
            session: lane.name.clone(),
            run: run.map(str::to_owned),
            relay: lane.verbs.relay.clone(),
        }
    }

    pub fn cancel(
        self,
        lane: &Lane,
        run: Option<&str>,
        reason: Option<String>,
    ) -> Result<String, String> {
        let scope = if run.is_some() {
            CancelScope::Run
        } else {
            CancelScope::Session
        };
        let t = Self::target(lane, run);
        self.send(move |hub| hub.cancel(&t, scope, reason, random(), now()))
    }

    pub fn pause(self, lane: &Lane) -> Result<String, String> {
        let t = Self::target(lane, None);
        self.send(move |hub| hub.pause(&t, random(), now()))
    }

    pub fn resume(self, lane: &Lane) -> Result<String, String> {
        let t = Self::target(lane, None);
        self.send(move |hub| hub.resume(&t, random(), now()))
    }

    pub fn vendor(self, lane: &Lane, ty: &str, data: Map<String, Value>) -> Result<String, String> {
        let t = Self::target(lane, lane.open_run().map(|r| r.name.as_str()));
        let ty = ty.to_owned();
        self.send(move |hub| hub.vendor(&ty, &t, None, data, Capture::Redacted, random(), now()))
    }

    /// Sends a timed-out command again: same id, same bytes.
    pub fn retry(self, id: &str) -> Result<(), String> {
        let id = id.to_owned();
        self.send(move |hub| hub.retry(&id, now()).map(|()| String::new()))
            .map(|_| ())
    }

    pub fn dismiss_notice(self, id: u64) {
        self.notices.update(|n| n.retain(|x| x.id != id));
    }
}

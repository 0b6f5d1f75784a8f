//! The bridge between the browser driver (the same `Driver` and `Hub` the
//! npm package uses) and the screen.
//!
//! The driver hands every change to [`Feed`], which only notes what it
//! touched (cards, commands, sessions, relay status) and schedules one
//! flush. The flush reads the hub once and refreshes the signals the
//! components watch, each only when its value actually changed, and only
//! for what the changes named. Bursts (a resume replaying a thousand
//! requests) become a handful of flushes.
//!
//! What the lists hold is decided by the view models (`model::inbox`,
//! `model::session`, `model::notice`); this module only feeds them and
//! turns their results into signal writes. Its state lives in storage the
//! reactive owner holds ([`Console::state`]), not in globals.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use aep_client::client::hub::{Hub, HubError, Target};
use aep_client::client::State as RelayState;
use aep_client::control::answer::Answer;
use aep_client::control::sender::CancelScope;
use aep_client::store::{CardRef, SessionKey};
use aep_client::wasm::driver::{self, Driver};
use aep_client::{Capture, UnixMs};
use leptos::prelude::*;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::feed::{Feed, Touched};
use super::platform::{after, hidden, now, perf_now, random};
use super::notify;
use crate::model::card::{self, CardView};
use crate::model::command::{self, CommandView};
use crate::model::hold::{Held, UNDO_MS};
use crate::model::inbox::{self, Row, Tracker};
use crate::model::notice::NoticeKind;
use crate::model::session::{self, Lane};
use crate::model::setup::{self, RelayInput, Setup};
use crate::model::status::{self, RelayView};
use crate::model::timeline::{self, Item};
use crate::model::words;

/// Rosters are refreshed this often while live, so a departed agent's
/// controls disappear even without a session event.
const ROSTER_REFRESH_MS: u64 = 15_000;

type Shared = driver::Shared<Feed>;

/// The bridge's own state: the connection and what the lists hold, and
/// the flush's bookkeeping. Cells, because the driver's callbacks and the
/// components reach it re-entrantly; a busy borrow is retried, never
/// waited on.
struct Bridge {
    inner: RefCell<Option<Inner>>,
    scheduled: Cell<bool>,
    cost_ms: Cell<f64>,
    notice_seq: Cell<u64>,
    last_flush: Cell<f64>,
    /// Signal writes collected during a flush, made once it let go of the
    /// driver and the card map.
    later: RefCell<Vec<Box<dyn FnOnce()>>>,
    /// Answers held on this device (see [`crate::model::hold`]), by hold.
    held: RefCell<Vec<(u64, HeldAnswer)>>,
    hold_seq: Cell<u64>,
}

/// What a held answer sends, and where a refusal to send is said.
struct HeldAnswer {
    card: CardRef,
    answer: Answer,
    error: RwSignal<Option<String>>,
}

impl Default for Bridge {
    fn default() -> Bridge {
        Bridge {
            inner: RefCell::new(None),
            scheduled: Cell::new(false),
            cost_ms: Cell::new(0.0),
            notice_seq: Cell::new(0),
            last_flush: Cell::new(f64::NEG_INFINITY),
            later: RefCell::new(Vec::new()),
            held: RefCell::new(Vec::new()),
            hold_seq: Cell::new(0),
        }
    }
}

impl Bridge {
    fn later(&self, write: impl FnOnce() + 'static) {
        self.later.borrow_mut().push(Box::new(write));
    }

    fn with_inner<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
        self.inner.try_borrow_mut().ok()?.as_mut().map(f)
    }

    fn shared(&self) -> Option<Shared> {
        self.inner
            .try_borrow()
            .ok()
            .and_then(|i| i.as_ref().map(|i| i.driver.clone()))
    }
}

/// Least time between two flushes made straight from driver turns.
const FLUSH_EVERY_MS: f64 = 100.0;

/// A relay notice on screen: trimmed history, an error frame, an
/// orderly close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub id: u64,
    pub relay: String,
    pub kind: NoticeKind,
    pub text: String,
}

/// One session, in full, for its detail view.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionDetail {
    pub lane: Lane,
    pub items: Vec<Item>,
    /// Older events kept on this device but not shown, and those it no
    /// longer keeps.
    pub earlier: usize,
    pub dropped: usize,
    pub commands: Vec<CommandView>,
}

struct Inner {
    driver: Shared,
    /// Views of the pending cards on screen.
    cards: HashMap<CardRef, ArcRwSignal<CardView>>,
    /// The inbox list: what waits since when, and where cards settled.
    list: Tracker,
    flushed: bool,
    dropped: u64,
    last_roster: UnixMs,
    /// Each relay's principal for this console, from when it was last live.
    principals: Vec<Option<String>>,
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
    /// What the inbox is kept to, and how it is grouped: kept across
    /// views, so going to a session and back finds the same list.
    pub filter: RwSignal<inbox::Filter>,
    pub grouping: RwSignal<inbox::Grouping>,
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
    /// Answers held on this device before they leave, oldest first.
    pub held: RwSignal<Vec<Held>>,
    /// The bridge's state, owned by the reactive owner that made the
    /// console (the app's root), and gone with it.
    state: StoredValue<Rc<Bridge>, LocalStorage>,
}

fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|v| v != &value) {
        signal.set(value);
    }
}

impl Console {
    pub fn new() -> Console {
        Console {
            active: RwSignal::new(false),
            relays: RwSignal::new(Vec::new()),
            inbox: RwSignal::new(Vec::new()),
            rows: RwSignal::new(Vec::new()),
            filter: RwSignal::new(inbox::Filter::default()),
            grouping: RwSignal::new(inbox::Grouping::default()),
            history: RwSignal::new(Vec::new()),
            lanes: RwSignal::new(Vec::new()),
            notices: RwSignal::new(Vec::new()),
            tick: RwSignal::new(0),
            now: RwSignal::new(now()),
            online: RwSignal::new(super::platform::online()),
            notify: RwSignal::new(false),
            scrolled: RwSignal::new(0),
            held: RwSignal::new(Vec::new()),
            state: StoredValue::new_local(Rc::new(Bridge::default())),
        }
    }

    /// The names this console is connected as ([`status::me`]), which
    /// [`words::person`] marks `you (…)`; tracked.
    pub fn me(self) -> Vec<String> {
        self.relays.with(|r| status::me(r))
    }

    fn state(self) -> Rc<Bridge> {
        self.state.get_value()
    }

    fn shared(self) -> Option<Shared> {
        self.state().shared()
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
        // Held answers are not sent when the page closes: the browser asks
        // first, and leaving drops them (the request keeps waiting).
        let on_leave = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
            if self.held.with_untracked(|h| !h.is_empty()) {
                ev.prevent_default();
            }
        });
        let _ = win.add_event_listener_with_callback("beforeunload", on_leave.as_ref().unchecked_ref());
        on_leave.forget();
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
        *self.state().inner.borrow_mut() = Some(Inner {
            driver: driver.clone(),
            cards: HashMap::new(),
            list: Tracker::default(),
            flushed: false,
            dropped: 0,
            last_roster: now(),
            principals: Vec::new(),
        });
        self.active.set(true);
        driver::with(&driver, |d| d.hub.connect(now()));
        self.schedule();
        Ok(())
    }

    /// The device lost its network: the connections are closed now, so
    /// the relay chips, the banner and the answer buttons all say so.
    fn went_offline(self) {
        if let Some(d) = self.shared() {
            driver::with(&d, |d| d.drop_sockets("this device went offline"));
        }
        self.schedule();
    }

    /// Closes every relay and forgets the state.
    pub fn disconnect(self) {
        let old = self.state().inner.borrow_mut().take();
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
        if urgent || perf_now() - self.state().last_flush.get() >= FLUSH_EVERY_MS {
            self.flush();
        } else {
            self.schedule();
        }
    }

    pub fn schedule(self) {
        let state = self.state();
        if state.scheduled.replace(true) {
            return;
        }
        // Coalesce bursts; back off further when flushing got expensive.
        let delay = (state.cost_ms.get() * 3.0).clamp(16.0, 250.0) as i32;
        after(delay, move || self.flush());
    }

    fn flush(self) {
        let state = self.state();
        state.scheduled.set(false);
        let Some(rc) = state.shared() else { return };
        let started = perf_now();
        state.last_flush.set(started);
        let mut asks: Vec<usize> = Vec::new();
        {
            // Both or neither: what the driver touched is taken only when
            // it can be applied, else the next flush finds it still there.
            let (Ok(mut guard), Ok(mut lists)) = (rc.try_borrow_mut(), state.inner.try_borrow_mut()) else {
                self.schedule();
                return;
            };
            let Some(inner) = lists.as_mut() else { return };
            let d = &mut *guard;
            let touched = std::mem::take(&mut d.handler.touched);
            self.apply(&state, inner, &d.hub, touched, &mut asks);
        }
        // Signals change only now, with nothing borrowed: whatever they
        // wake may read the hub and the card views again.
        let writes = state.later.take();
        for write in writes {
            write();
        }
        aep_client::order::sort_by(&mut asks, Ord::cmp);
        asks.dedup();
        if !asks.is_empty() {
            driver::with(&rc, |d| {
                for r in asks {
                    let _ = d.hub.request_roster(r);
                }
            });
        }
        state.cost_ms.set(perf_now() - started);
    }

    fn apply(
        self,
        state: &Bridge,
        inner: &mut Inner,
        hub: &Hub,
        t: Touched,
        asks: &mut Vec<usize>,
    ) {
        let at = now();
        let live: Vec<usize> = (0..hub.relay_count())
            .filter(|r| hub.state(*r) == Some(&RelayState::Live))
            .collect();
        let mut relays = status::relays(hub);
        status::remember(&mut relays, &mut inner.principals);
        state.later(move || set_if_changed(self.relays, relays));

        for said in t.notices {
            let id = state.notice_seq.get() + 1;
            state.notice_seq.set(id);
            state.later(move || {
                self.notices.update(|n| {
                    if !n.iter().any(|x| x.text == said.text) {
                        n.push(Notice {
                            id,
                            relay: said.relay,
                            kind: said.kind,
                            text: said.text,
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
            if let Some(r) = subject.and_then(|s| inner.list.card_for_request(&s).cloned()) {
                cards.insert(r);
            }
        }
        if full || !cards.is_empty() || inner.list.rows_expire(at) {
            self.refresh_cards(state, inner, hub, &cards, full, at);
        }
        if full || t.store || !t.commands.is_empty() {
            state.later(move || self.tick.update(|x| *x += 1));
        }
        if full || t.store || t.status || t.rosters {
            let lanes = session::lanes(hub);
            state.later(move || set_if_changed(self.lanes, lanes));
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
    /// here the list is refreshed, and the views of changed cards.
    fn refresh_cards(
        self,
        state: &Bridge,
        inner: &mut Inner,
        hub: &Hub,
        changed: &HashSet<CardRef>,
        full: bool,
        at: UnixMs,
    ) {
        let store = hub.store();
        let list = inner.list.refresh(hub, at);
        for r in &list.order {
            let Some(s) = inner.cards.get(r) else { continue };
            if !(full || changed.contains(r)) {
                continue;
            }
            if let Some(c) = store.card(r) {
                let v = card::view(hub, c);
                let s = s.clone();
                state.later(move || {
                    if s.with_untracked(|old| old != &v) {
                        s.set(v);
                    }
                });
            }
        }
        for r in &list.gone {
            inner.cards.remove(r);
        }
        // New requests are announced while the page is hidden, not those a
        // first catch-up brings.
        if inner.flushed && self.notify.get_untracked() && hidden() {
            let fresh: Vec<CardView> = list
                .fresh
                .iter()
                .filter_map(|r| store.card(r))
                .map(|c| card::view(hub, c))
                .collect();
            if !fresh.is_empty() {
                state.later(move || notify::new_requests(&fresh));
            }
        }
        let (rows, order) = (list.rows, list.order);
        state.later(move || set_if_changed(self.rows, rows));
        state.later(move || set_if_changed(self.inbox, order));

        let settled_changed = full
            || changed
                .iter()
                .any(|r| store.card(r).map_or(true, |c| !c.needs_answer()));
        if settled_changed {
            let history = inbox::history(hub);
            state.later(move || set_if_changed(self.history, history));
        }
    }

    // ----- reads ------------------------------------------------------------

    /// The live view of one pending card, built when first shown.
    pub fn card(self, r: &CardRef) -> Option<ArcRwSignal<CardView>> {
        self.state().with_inner(|inner| {
            if let Some(s) = inner.cards.get(r) {
                return Some(s.clone());
            }
            let d = inner.driver.try_borrow().ok()?;
            let c = d.hub.store().card(r)?;
            let s = ArcRwSignal::new(card::view(&d.hub, c));
            drop(d);
            if inner.list.pending(r) {
                inner.cards.insert(r.clone(), s.clone());
            }
            Some(s)
        })?
    }

    /// One session in full (timeline, commands); call inside a memo that
    /// tracks [`Console::tick`].
    pub fn session(self, key: &SessionKey, limit: usize) -> Option<SessionDetail> {
        let d = self.shared()?;
        let d = d.try_borrow().ok()?;
        let s = d.hub.store().session_by_key(key)?;
        let (items, earlier, dropped) = timeline::items(s, limit);
        Some(SessionDetail {
            lane: session::lane(&d.hub, s),
            items,
            earlier,
            dropped,
            commands: session::commands(&d.hub, s),
        })
    }

    /// One command of this console's, as its sender follows it.
    pub fn command(self, id: &str) -> Option<CommandView> {
        let d = self.shared()?;
        let d = d.try_borrow().ok()?;
        let t = d.hub.sender().get(id)?;
        Some(command::mine(&d.hub, t, &[]))
    }

    // ----- intents ------------------------------------------------------------

    fn send(self, f: impl FnOnce(&mut Hub) -> Result<String, HubError>) -> Result<String, String> {
        let d = self.shared().ok_or_else(|| "Not connected to any relay.".to_owned())?;
        let out = driver::with(&d, |d| f(&mut d.hub)).map_err(|e| words::not_sent(&e));
        self.schedule();
        out
    }

    pub fn respond(self, card: &CardRef, answer: Answer) -> Result<String, String> {
        let id = card.request.to_string();
        self.send(move |hub| hub.respond(&id, answer, random(), now()))
    }

    /// Holds `answer` on this device for [`UNDO_MS`], then sends it; a
    /// refusal to send is put in `error`. Returns the hold.
    pub fn hold(self, card: &CardRef, answer: Answer, what: String, error: RwSignal<Option<String>>) -> u64 {
        let state = self.state();
        let seq = state.hold_seq.get() + 1;
        state.hold_seq.set(seq);
        state.held.borrow_mut().push((seq, HeldAnswer { card: card.clone(), answer, error }));
        let until = UnixMs(now().0 + UNDO_MS);
        let request = card.request.to_string();
        self.held.update(|h| h.push(Held { seq, request, what, until }));
        after(UNDO_MS as i32, move || self.release(seq));
        seq
    }

    fn take_held(self, seq: u64) -> Option<HeldAnswer> {
        let state = self.state();
        let held = {
            let mut all = state.held.borrow_mut();
            all.iter().position(|(s, _)| *s == seq).map(|i| all.remove(i).1)
        };
        self.held.update(|h| h.retain(|x| x.seq != seq));
        held
    }

    /// Sends a held answer now (its window ended, or "Send now").
    pub fn release(self, seq: u64) {
        let Some(h) = self.take_held(seq) else { return };
        crate::ui::keys::focus_after_answer(&format!("card-{}", h.card.request));
        self.answer_now(&h.card, h.answer, h.error);
    }

    /// Sends `answer` now; a refusal to send is said in `error`.
    pub fn answer_now(self, card: &CardRef, answer: Answer, error: RwSignal<Option<String>>) {
        if let Err(e) = self.respond(card, answer) {
            error.try_set(Some(format!("{} \u{2014} {e}", crate::model::clock::time_of_day(now()))));
        }
    }

    /// Drops a held answer unsent.
    pub fn undo(self, seq: u64) {
        self.take_held(seq);
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

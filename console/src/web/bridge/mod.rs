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
//!
//! Here: the signals and the connection, and the reads views make. The
//! driver's handler is [`feed`], the flush and its diff [`flush`], what a
//! person asks for [`intents`], and the page's own events [`listen`].

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use aep_browser::driver::{self, Driver};
use aep_engine::client::hub::Hub;
use aep_engine::control::answer::Answer;
use aep_engine::store::{CardRef, SessionKey};
use aep_engine::UnixMs;
use leptos::prelude::*;

mod feed;
mod flush;
mod intents;
mod listen;

use super::platform::{now, random};
use crate::model::card::{self, CardView};
use crate::model::command::{self, CommandView};
use crate::model::hold::Held;
use crate::model::inbox::{self, Row, Tracker};
use crate::model::notice::NoticeKind;
use crate::model::session::{self, Lane};
use crate::model::setup::{self, RelayInput, Setup};
use crate::model::status::{self, RelayView};
use crate::model::timeline::{self, Item};
use crate::model::touched::Touched;
use feed::Feed;

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
    /// The sessions on screen, by key: the revision their views track.
    on_screen: RefCell<HashMap<SessionKey, OnScreen>>,
}

/// A session on screen: its views re-read it when `revision` moves.
struct OnScreen {
    revision: ArcRwSignal<u64>,
    /// Views watching it; it is forgotten when the last one goes.
    views: usize,
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
            on_screen: RefCell::new(HashMap::new()),
        }
    }
}

impl Bridge {
    /// How long after the last flush the next one may come.
    fn flush_gap(&self) -> f64 {
        (self.cost_ms.get() / FLUSH_SHARE).clamp(FLUSH_EVERY_MS, MAX_FLUSH_GAP_MS)
    }

    fn later(&self, write: impl FnOnce() + 'static) {
        self.later.borrow_mut().push(Box::new(write));
    }

    fn with_inner<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> Option<R> {
        self.inner.try_borrow_mut().ok()?.as_mut().map(f)
    }

    /// The revisions of the sessions on screen that `redraws` picks.
    fn revisions(&self, redraws: impl Fn(&SessionKey) -> bool) -> Vec<ArcRwSignal<u64>> {
        self.on_screen
            .borrow()
            .iter()
            .filter(|(key, _)| redraws(key))
            .map(|(_, shown)| shown.revision.clone())
            .collect()
    }

    fn shared(&self) -> Option<Shared> {
        self.inner.try_borrow().ok().and_then(|i| i.as_ref().map(|i| i.driver.clone()))
    }
}

/// Least time between two flushes while changes keep coming.
const FLUSH_EVERY_MS: f64 = 100.0;
/// Most time between two flushes while changes keep coming.
const MAX_FLUSH_GAP_MS: f64 = 500.0;
/// A flush and the drawing it causes take at most about this share of
/// the time while changes keep coming (a resume replaying a thousand
/// requests on a slow phone): the rest goes to folding what arrives.
const FLUSH_SHARE: f64 = 0.25;

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
    /// Relays (by label) whose "closing the connection" notice is shown,
    /// and whether the connection has gone since: it goes once they are
    /// live again.
    closing: HashMap<String, bool>,
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
    /// This browser's clock, once a second.
    pub now: RwSignal<UnixMs>,
    pub online: RwSignal<bool>,
    pub notify: RwSignal<bool>,
    /// Bumped (once a frame at most) while the page scrolls, so cards can
    /// tell when they come into view.
    pub scrolled: RwSignal<u64>,
    /// Answers held on this device before they leave, oldest first.
    pub held: RwSignal<Vec<Held>>,
    /// The latest requests to arrive and answers to settle, in words, for
    /// the page's polite live region.
    pub announced: RwSignal<String>,
    /// The bridge's state, owned by the reactive owner that made the
    /// console (the app's root), and gone with it.
    state: StoredValue<Rc<Bridge>, LocalStorage>,
}

/// Tells the views tracking `revision` that their session moved on.
fn move_on(revision: &ArcRwSignal<u64>) {
    revision.update(|x| *x += 1);
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
            now: RwSignal::new(now()),
            online: RwSignal::new(super::platform::online()),
            notify: RwSignal::new(false),
            scrolled: RwSignal::new(0),
            held: RwSignal::new(Vec::new()),
            announced: RwSignal::new(String::new()),
            state: StoredValue::new_local(Rc::new(Bridge::default())),
        }
    }

    /// The names this console is connected as ([`status::me`]), which
    /// [`crate::model::words::person`] marks `you (…)`; tracked.
    pub fn me(self) -> Vec<String> {
        self.relays.with(|r| status::me(r))
    }

    fn state(self) -> Rc<Bridge> {
        self.state.get_value()
    }

    fn shared(self) -> Option<Shared> {
        self.state().shared()
    }

    /// Connects to `relays`; errors are per row, in words.
    pub fn connect(self, relays: &[RelayInput]) -> Result<(), Vec<(usize, String)>> {
        let host = super::platform::window().location().host().unwrap_or_else(|_| "localhost".into());
        let Setup { hub, relays: specs, endpoints } = setup::build(relays, &host, random() as u64)?;
        let hub = Hub::new(hub, specs).map_err(|e| vec![(0, e.to_string())])?;
        self.disconnect();
        let driver = Driver::new(hub, endpoints, None, Feed { console: self, touched: Touched::default() });
        *self.state().inner.borrow_mut() = Some(Inner {
            driver: driver.clone(),
            cards: HashMap::new(),
            list: Tracker::default(),
            flushed: false,
            dropped: 0,
            last_roster: now(),
            principals: Vec::new(),
            closing: HashMap::new(),
        });
        self.active.set(true);
        driver::with(&driver, |d| d.hub.connect(now()));
        self.schedule();
        Ok(())
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
        self.announced.set(String::new());
        // Every session on screen is read again: there is nothing to show.
        self.state().revisions(|_| true).iter().for_each(move_on);
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

    /// How far session `key` has moved on, for as long as the calling view
    /// lives: a flush moves it only when its changes touched that session
    /// (its events, cards or commands) or what its agent takes, so a view
    /// that tracks it re-reads [`Console::session`] when, and only when,
    /// there is something new to show.
    pub fn revision(self, key: &SessionKey) -> Signal<u64> {
        let revision = {
            let state = self.state();
            let mut shown = state.on_screen.borrow_mut();
            let watched =
                shown.entry(key.clone()).or_insert_with(|| OnScreen { revision: ArcRwSignal::new(0), views: 0 });
            watched.views += 1;
            watched.revision.clone()
        };
        let key = key.clone();
        on_cleanup(move || {
            let Some(state) = self.state.try_get_value() else { return };
            let Ok(mut shown) = state.on_screen.try_borrow_mut() else { return };
            if let Some(watched) = shown.get_mut(&key) {
                watched.views -= 1;
                if watched.views == 0 {
                    shown.remove(&key);
                }
            }
        });
        revision.into()
    }

    /// One session in full (timeline, commands); call inside a memo that
    /// tracks its [`Console::revision`].
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
}

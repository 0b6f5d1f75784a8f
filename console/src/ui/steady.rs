//! Keeps a card's buttons inert until it has been seen in place: measures
//! the cards after every change that can move them, and once more when a
//! wait is over. The rule itself is [`crate::model::steady`].
//!
//! All cards on the page are measured together, in one animation frame:
//! every position is read before any card's readiness is written. Measured
//! card by card, each write let the page change between two reads, and a
//! thousand requests arriving meant a fresh layout for every card at every
//! burst, most of a slow phone's time.

use std::rc::Rc;

use leptos::prelude::*;

use crate::model::steady::{Readiness, Steadiness};
use crate::web::bridge::Console;
use crate::web::platform::{after, perf_now, window};

/// How long the card says a tap was not taken.
const REFUSED_NOTE_MS: i32 = 3_000;

/// Whether the card around a component takes answers now, and whether it
/// just refused a tap (said on the card: a tap is never dropped unsaid).
#[derive(Clone, Copy)]
pub struct Steady {
    ready: RwSignal<bool>,
    /// Taps refused since the note was last cleared; 0: no note.
    refused: RwSignal<u64>,
}

impl Steady {
    fn new(ready: bool) -> Steady {
        Steady { ready: RwSignal::new(ready), refused: RwSignal::new(0) }
    }

    /// Outside a card (or in a test harness) nothing waits.
    pub fn here() -> Steady {
        use_context::<Steady>().unwrap_or_else(|| Steady::new(true))
    }

    pub fn ready(self) -> bool {
        self.ready.get_untracked()
    }

    /// For `aria-disabled`: still settling.
    pub fn settling(self) -> bool {
        !self.ready.get()
    }

    /// A tap came while the card was settling: the card says so for a few
    /// seconds.
    pub fn refuse(self) {
        let n = self.refused.get_untracked() + 1;
        self.refused.set(n);
        after(REFUSED_NOTE_MS, move || {
            if self.refused.try_get_untracked() == Some(n) {
                self.refused.try_set(0);
            }
        });
    }

    /// A tap was taken: no note about an earlier one.
    pub fn taken(self) {
        if self.refused.get_untracked() != 0 {
            self.refused.set(0);
        }
    }

    /// Whether the card is saying it refused a tap; tracked.
    pub fn refused(self) -> bool {
        self.refused.get() != 0
    }
}

/// One card being watched.
struct Watched {
    key: u64,
    dom_id: Rc<str>,
    state: Steadiness,
    ready: RwSignal<bool>,
}

/// Every card on the page, and whether a measuring frame or a timer for
/// the next wait to end is already asked for.
#[derive(Default)]
struct Cards {
    watched: Vec<Watched>,
    next_key: u64,
    frame_asked: bool,
    /// When the pending timer fires (`perf_now` time), if one is set.
    timer_at: Option<f64>,
}

/// The page's card watcher (see the module documentation).
#[derive(Clone, Copy)]
pub struct Watcher(StoredValue<Cards, LocalStorage>);

impl Watcher {
    /// Creates the watcher for the page below, measuring after every
    /// change of what can move a card on the inbox page.
    pub fn provide(console: Console) {
        let watcher = Watcher(StoredValue::new_local(Cards::default()));
        Effect::new(move |_| {
            console.inbox.track();
            console.rows.track();
            console.notices.track();
            console.relays.track();
            console.online.track();
            console.scrolled.track();
            watcher.ask_frame();
        });
        provide_context(watcher);
    }

    fn ask_frame(self) {
        let first = self.0.try_update_value(|c| !std::mem::replace(&mut c.frame_asked, true));
        if first == Some(true) {
            request_animation_frame(move || self.measure());
        }
    }

    fn add(self, dom_id: Rc<str>, ready: RwSignal<bool>) -> Option<u64> {
        let now = perf_now();
        let key = self.0.try_update_value(|c| {
            c.next_key += 1;
            c.watched.push(Watched { key: c.next_key, dom_id, state: Steadiness::drawn(now), ready });
            c.next_key
        })?;
        self.ask_frame();
        Some(key)
    }

    fn remove(self, key: u64) {
        self.0.try_update_value(|c| c.watched.retain(|w| w.key != key));
    }

    /// Reads where every card is, then notes what moved and writes the
    /// readiness that changed; sets one timer for the next wait to end.
    fn measure(self) {
        let Some(ids) = self.0.try_update_value(|c| {
            c.frame_asked = false;
            c.watched.iter().map(|w| w.dom_id.clone()).collect::<Vec<_>>()
        }) else {
            return;
        };
        let win = window();
        let height = win.inner_height().ok().and_then(|h| h.as_f64()).unwrap_or(0.0);
        // Reads only: one layout for all of them. Where each is on screen
        // first, the scroll after: the layout those reads bring about may
        // move the scroll (the browser keeping what is on screen in place).
        let places: Vec<Option<(f64, f64)>> = ids
            .iter()
            .map(|id| {
                let rect = document().get_element_by_id(id)?.get_bounding_client_rect();
                Some((rect.top(), rect.height()))
            })
            .collect();
        let scroll = win.scroll_y().unwrap_or(0.0);
        // Page coordinates: the person's own scrolling is not a move, but
        // it can bring a card into view, and that restarts the wait.
        let places: Vec<Option<(f64, bool)>> = places
            .into_iter()
            .map(|p| p.map(|(on_screen, tall)| (on_screen + scroll, on_screen < height && on_screen + tall > 0.0)))
            .collect();
        let now = perf_now();
        let Some((writes, wake)) = self.0.try_update_value(|c| {
            let mut writes = Vec::new();
            let mut wake: Option<f64> = None;
            for (w, place) in c.watched.iter_mut().zip(&places) {
                let Some((top, visible)) = *place else { continue };
                w.state.observe(top, scroll, visible, now);
                writes.push((w.ready, w.state.readiness(now) == Readiness::Ready));
                if let Some(left) = w.state.ready_in(now) {
                    wake = Some(wake.map_or(left, |x| x.min(left)));
                }
            }
            let wake = wake.filter(|left| c.timer_at.is_none_or(|at| at > now + left));
            if let Some(left) = wake {
                c.timer_at = Some(now + left);
            }
            (writes, wake)
        }) else {
            return;
        };
        for (ready, is_ready) in writes {
            if ready.try_get_untracked().is_some_and(|was| was != is_ready) {
                ready.try_set(is_ready);
            }
        }
        if let Some(left) = wake {
            after(left.ceil() as i32 + 1, move || {
                self.0.try_update_value(|c| c.timer_at = None);
                self.ask_frame();
            });
        }
    }
}

/// Watches the card with DOM id `dom_id` and provides its [`Steady`].
pub fn watch_card(dom_id: String) -> Steady {
    let steady = Steady::new(false);
    provide_context(steady);
    let Some(watcher) = use_context::<Watcher>() else {
        // Drawn outside the page's watcher (a test harness): nothing moves it.
        steady.ready.set(true);
        return steady;
    };
    if let Some(key) = watcher.add(Rc::from(dom_id), steady.ready) {
        on_cleanup(move || watcher.remove(key));
    }
    steady
}

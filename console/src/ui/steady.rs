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
use wasm_bindgen::JsCast;

use crate::model::steady::{Readiness, Steadiness};
use crate::web::bridge::Console;
use crate::web::platform::{after, perf_now, window};

/// Whether the card around a component takes answers now.
#[derive(Clone, Copy)]
pub struct Steady(pub RwSignal<bool>);

impl Steady {
    /// Outside a card (or in a test harness) nothing waits.
    pub fn here() -> Steady {
        use_context::<Steady>().unwrap_or_else(|| Steady(RwSignal::new(true)))
    }

    pub fn ready(self) -> bool {
        self.0.get_untracked()
    }

    /// For `aria-disabled`: still settling.
    pub fn settling(self) -> bool {
        !self.0.get()
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
        let scroll = win.scroll_y().unwrap_or(0.0);
        let height = win.inner_height().ok().and_then(|h| h.as_f64()).unwrap_or(0.0);
        // Reads only: one layout for all of them.
        let places: Vec<Option<(f64, bool)>> = ids
            .iter()
            .map(|id| {
                let el = document().get_element_by_id(id)?.dyn_into::<web_sys::HtmlElement>().ok()?;
                // Page coordinates: the user's own scrolling is not a move,
                // but it can bring a card into view, and that restarts the wait.
                let top = page_top(&el);
                let on_screen = top - scroll;
                Some((top, on_screen < height && on_screen + f64::from(el.offset_height()) > 0.0))
            })
            .collect();
        let now = perf_now();
        let Some((writes, wake)) = self.0.try_update_value(|c| {
            let mut writes = Vec::new();
            let mut wake: Option<f64> = None;
            for (w, place) in c.watched.iter_mut().zip(&places) {
                let Some((top, visible)) = *place else { continue };
                w.state.observe(top, visible, now);
                writes.push((w.ready, w.state.readiness(now) == Readiness::Ready));
                if let Some(left) = w.state.ready_in(now) {
                    wake = Some(wake.map_or(left, |x| x.min(left)));
                }
            }
            let wake = wake.filter(|left| c.timer_at.map_or(true, |at| at > now + left));
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
    let ready = RwSignal::new(false);
    let steady = Steady(ready);
    provide_context(steady);
    let Some(watcher) = use_context::<Watcher>() else {
        // Drawn outside the page's watcher (a test harness): nothing moves it.
        ready.set(true);
        return steady;
    };
    if let Some(key) = watcher.add(Rc::from(dom_id), ready) {
        on_cleanup(move || watcher.remove(key));
    }
    steady
}


/// The element's top edge from the top of the page.
fn page_top(el: &web_sys::HtmlElement) -> f64 {
    let mut top = 0.0;
    let mut at = Some(el.clone());
    while let Some(e) = at {
        top += f64::from(e.offset_top());
        at = e.offset_parent().and_then(|p| p.dyn_into::<web_sys::HtmlElement>().ok());
    }
    top
}

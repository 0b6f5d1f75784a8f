//! Keeps a card's buttons inert until it has been seen in place: measures
//! the card after every change that can move it, and once more when its
//! wait is over. The rule itself is [`crate::model::steady`].

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

/// Watches the card with DOM id `dom_id` and provides its [`Steady`].
pub fn watch_card(dom_id: String) -> Steady {
    let console = expect_context::<Console>();
    let ready = RwSignal::new(false);
    let state = StoredValue::new_local(Steadiness::drawn(perf_now()));
    let dom_id: Rc<str> = Rc::from(dom_id);
    Effect::new(move |_| {
        // Anything that can move a card on the inbox page.
        console.inbox.track();
        console.rows.track();
        console.notices.track();
        console.relays.track();
        console.online.track();
        console.scrolled.track();
        let dom_id = dom_id.clone();
        request_animation_frame(move || measure(dom_id, state, ready));
    });
    let steady = Steady(ready);
    provide_context(steady);
    steady
}

fn measure(dom_id: Rc<str>, state: StoredValue<Steadiness, LocalStorage>, ready: RwSignal<bool>) {
    let Some(el) = document()
        .get_element_by_id(&dom_id)
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    else {
        return;
    };
    // Page coordinates: the user's own scrolling is not a move, but it
    // can bring a card into view, and that restarts the wait.
    let top = page_top(&el);
    let win = window();
    let scroll = win.scroll_y().unwrap_or(0.0);
    let height = win.inner_height().ok().and_then(|h| h.as_f64()).unwrap_or(0.0);
    let on_screen = top - scroll;
    let visible = on_screen < height && on_screen + f64::from(el.offset_height()) > 0.0;
    let now = perf_now();
    let Some(s) = state.try_update_value(|s| {
        s.observe(top, visible, now);
        *s
    }) else {
        return;
    };
    let is_ready = s.readiness(now) == Readiness::Ready;
    if ready.try_get_untracked() != Some(is_ready) {
        ready.try_set(is_ready);
    }
    if let Some(left) = s.ready_in(now) {
        after(left.ceil() as i32 + 1, move || measure(dom_id, state, ready));
    }
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

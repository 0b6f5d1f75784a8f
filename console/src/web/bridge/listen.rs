//! The page's own events the console listens to: its clock, scrolling,
//! leaving the page while an answer is held, and the device going offline.

use std::cell::Cell;

use aep_browser::driver;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::Console;
use crate::web::platform::now;

impl Console {
    /// Starts the clock and the online watch; call once.
    pub fn run_clock(self) {
        crate::web::platform::every(1000, move || {
            self.now.set(now());
            self.schedule();
        });
        let win = crate::web::platform::window();
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
                let online = crate::web::platform::online();
                if !online {
                    self.went_offline();
                }
                self.online.set(online);
            });
            let _ = win.add_event_listener_with_callback(name, cb.as_ref().unchecked_ref());
            cb.forget();
        }
    }

    /// The device lost its network: the connections are closed now, so
    /// the relay chips, the banner and the answer buttons all say so.
    fn went_offline(self) {
        if let Some(d) = self.shared() {
            driver::with(&d, |d| d.drop_sockets("this device went offline"));
        }
        self.schedule();
    }
}

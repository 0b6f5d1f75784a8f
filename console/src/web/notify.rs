//! Browser notifications for new attention while the tab is hidden, on
//! a device that turned notifications on. The body is the agent's prompt
//! as plain text (notifications render no markup), prefixed by who is
//! asking. They go through the service worker where there is one (the
//! `Notification` constructor is refused on Android), under the request's
//! id, so a Web Push for the same request replaces rather than repeats it.

use wasm_bindgen_futures::JsFuture;
use web_sys::{Notification, NotificationOptions, NotificationPermission};

use super::push::show;

use crate::model::card::CardView;

pub fn supported() -> bool {
    js_sys::Reflect::has(&super::platform::window(), &"Notification".into()).unwrap_or(false)
}

pub fn granted() -> bool {
    supported() && Notification::permission() == NotificationPermission::Granted
}

/// Asks for permission; `true` when granted.
pub async fn ask() -> bool {
    if !supported() {
        return false;
    }
    if let Ok(p) = Notification::request_permission() {
        let _ = JsFuture::from(p).await;
    }
    granted()
}

/// Shows one notification per new card (at most three, then a count).
pub fn new_requests(cards: &[CardView]) {
    if !granted() {
        return;
    }
    let mut shown: Vec<(String, NotificationOptions)> = Vec::new();
    for c in cards.iter().take(3) {
        let opts = NotificationOptions::new();
        opts.set_body(c.prompt.as_deref().unwrap_or("(no prompt)"));
        opts.set_tag(&c.id);
        shown.push((format!("{} asks ({})", c.agent, c.kind_words()), opts));
    }
    if cards.len() > 3 {
        let opts = NotificationOptions::new();
        opts.set_body(&format!("{} more requests are waiting", cards.len() - 3));
        shown.push(("AEP console".to_owned(), opts));
    }
    leptos::task::spawn_local(async move {
        for (title, opts) in shown {
            let _ = show(&title, &opts).await;
        }
    });
}

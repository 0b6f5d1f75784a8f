//! Opt-in browser notifications for new attention while the tab is
//! hidden. The body is the agent's prompt as plain text (notifications
//! render no markup), prefixed by who is asking.

use wasm_bindgen_futures::JsFuture;
use web_sys::{Notification, NotificationOptions, NotificationPermission};

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
    for c in cards.iter().take(3) {
        let title = format!("{} asks ({})", c.agent, c.kind_words());
        let opts = NotificationOptions::new();
        opts.set_body(c.prompt.as_deref().unwrap_or("(no prompt)"));
        opts.set_tag(&c.id);
        let _ = Notification::new_with_options(&title, &opts);
    }
    if cards.len() > 3 {
        let opts = NotificationOptions::new();
        opts.set_body(&format!("{} more requests are waiting", cards.len() - 3));
        let _ = Notification::new_with_options("AEP console", &opts);
    }
}

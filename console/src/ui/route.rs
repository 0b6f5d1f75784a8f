//! Hash routes (`#/`, `#/sessions`, `#/session/{source}/{name}`,
//! `#/history`, `#/audit`, `#/rules`), so the back button works on a phone.

use aep_engine::store::SessionKey;

use crate::web::platform::window;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Inbox,
    Sessions,
    Session(SessionKey),
    History,
    /// The relay's durable trail of decisions, opened from History.
    Audit,
    /// The relays and tokens, opened over the console from its menu.
    Relays,
    /// The relay's standing rules, opened from the menu.
    Rules,
}

fn enc(s: &str) -> String {
    String::from(js_sys::encode_uri_component(s))
}

fn dec(s: &str) -> Option<String> {
    js_sys::decode_uri_component(s).ok().map(String::from)
}

impl Route {
    pub fn parse(hash: &str) -> Route {
        let path = hash.trim_start_matches('#').trim_start_matches('/');
        let mut parts = path.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("sessions"), _, _) => Route::Sessions,
            (Some("history"), _, _) => Route::History,
            (Some("audit"), _, _) => Route::Audit,
            (Some("relays"), _, _) => Route::Relays,
            (Some("rules"), _, _) => Route::Rules,
            (Some("session"), Some(source), Some(name)) => match (dec(source), dec(name)) {
                (Some(source), Some(name)) => Route::Session(SessionKey::new(&source, &name)),
                _ => Route::Sessions,
            },
            _ => Route::Inbox,
        }
    }

    pub fn href(&self) -> String {
        match self {
            Route::Inbox => "#/".into(),
            Route::Sessions => "#/sessions".into(),
            Route::History => "#/history".into(),
            Route::Audit => "#/audit".into(),
            Route::Relays => "#/relays".into(),
            Route::Rules => "#/rules".into(),
            Route::Session(k) => format!("#/session/{}/{}", enc(&k.source), enc(&k.name)),
        }
    }

    pub fn current() -> Route {
        Route::parse(&window().location().hash().unwrap_or_default())
    }
}

/// The history entry's mark for a relays screen opened from the console.
const OPENED: &str = "aep-relays";

/// Opens the relays screen as a history entry of its own, so Back (and
/// Cancel, and Esc) returns to the view it was opened from.
pub fn open_relays(route: leptos::prelude::RwSignal<Route>) {
    use leptos::prelude::Set;
    if Route::current() != Route::Relays {
        let _ = window().history().and_then(|h| {
            h.push_state_with_url(&wasm_bindgen::JsValue::from_str(OPENED), "", Some(&Route::Relays.href()))
        });
    }
    route.set(Route::Relays);
}

/// Leaves the relays screen for the view it was opened from (the inbox
/// when it was not opened from one, as after a reload).
pub fn close_relays(route: leptos::prelude::RwSignal<Route>) {
    use leptos::prelude::Set;
    let Ok(history) = window().history() else { return };
    if history.state().ok().and_then(|s| s.as_string()).as_deref() == Some(OPENED) {
        let _ = history.back();
    } else {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&Route::Inbox.href()));
        route.set(Route::Inbox);
    }
}

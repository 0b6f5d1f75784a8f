//! Hash routes (`#/`, `#/sessions`, `#/session/{source}/{name}`,
//! `#/history`), so the back button works on a phone.

use aep_client::store::SessionKey;

use crate::web::platform::window;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Inbox,
    Sessions,
    Session(SessionKey),
    History,
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
            Route::Session(k) => format!("#/session/{}/{}", enc(&k.source), enc(&k.name)),
        }
    }

    pub fn current() -> Route {
        Route::parse(&window().location().hash().unwrap_or_default())
    }
}

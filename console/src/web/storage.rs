//! Where relays and tokens are kept: `sessionStorage` by default (gone
//! when the tab closes), `localStorage` only when the person ticked
//! "remember on this device". A `#token=` link is read once and scrubbed
//! from the address bar before anything else runs.

use serde_json::{json, Value};

use super::platform::window;
use crate::model::setup::{read_link, Link, RelayInput};

const KEY: &str = "aep-console.relays";
const NOTIFY_KEY: &str = "aep-console.notify";

fn session() -> Option<web_sys::Storage> {
    window().session_storage().ok().flatten()
}

fn local() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

/// What was kept, and whether it came from the device (`localStorage`).
pub struct Saved {
    pub relays: Vec<RelayInput>,
    pub remember: bool,
}

fn parse(text: &str) -> Vec<RelayInput> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|v| {
            Some(RelayInput {
                url: v.get("url")?.as_str()?.to_owned(),
                token: v.get("token").and_then(Value::as_str).unwrap_or_default().to_owned(),
            })
        })
        .collect()
}

pub fn load() -> Option<Saved> {
    if let Some(text) = session().and_then(|s| s.get_item(KEY).ok().flatten()) {
        return Some(Saved { relays: parse(&text), remember: false });
    }
    let text = local().and_then(|s| s.get_item(KEY).ok().flatten())?;
    Some(Saved { relays: parse(&text), remember: true })
}

fn encode(relays: &[RelayInput]) -> String {
    json!(relays.iter().map(|r| json!({ "url": r.url, "token": r.token })).collect::<Vec<_>>()).to_string()
}

/// Keeps `relays` where the policy says, and nowhere else.
pub fn save(relays: &[RelayInput], remember: bool) {
    let text = encode(relays);
    let (keep, clear) = if remember { (local(), session()) } else { (session(), local()) };
    if let Some(s) = clear {
        let _ = s.remove_item(KEY);
    }
    if let Some(s) = keep {
        let _ = s.set_item(KEY, &text);
    }
}

/// Keeps `relays` for this tab only, leaving what is remembered on the
/// device as it is (a link never erases saved relays).
pub fn save_for_tab(relays: &[RelayInput]) {
    let text = encode(relays);
    if let Some(s) = session() {
        let _ = s.set_item(KEY, &text);
    }
}

/// Forgets relays and tokens everywhere.
pub fn forget() {
    for s in [session(), local()].into_iter().flatten() {
        let _ = s.remove_item(KEY);
    }
}

/// Reads a one-tap link from the fragment and removes it from the
/// address bar (and from history) at once.
pub fn take_link() -> Option<Link> {
    let location = window().location();
    let hash = location.hash().ok()?;
    let link = read_link(&hash)?;
    let path = location.pathname().unwrap_or_default();
    let search = location.search().unwrap_or_default();
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("{path}{search}")));
    }
    Some(link)
}

pub fn notify_wanted() -> bool {
    local().and_then(|s| s.get_item(NOTIFY_KEY).ok().flatten()).as_deref() == Some("on")
}

pub fn set_notify_wanted(on: bool) {
    if let Some(s) = local() {
        let _ = if on { s.set_item(NOTIFY_KEY, "on") } else { s.remove_item(NOTIFY_KEY) };
    }
}

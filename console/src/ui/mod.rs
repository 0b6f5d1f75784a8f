//! The Leptos components. Small pieces, signals at the edges: every value
//! shown comes from the bridge's signals, every action goes through it.
//! Agent-authored text is only ever placed in text nodes.

mod answer;
mod app;
mod audit;
mod card;
mod command;
mod connect;
mod detail;
mod form;
mod history;
mod inbox;
pub(crate) mod keys;
mod push;
mod route;
mod rule_maker;
mod rules;
mod session;
mod sessions;
mod shell;
mod steady;

use crate::web::storage;

/// A `For` row's key as one string. Every list is keyed by `String`, so
/// the keyed diff and its hash set are linked once instead of once per
/// key type; `Debug` quotes and escapes text, so different values never
/// share a key.
fn key(parts: impl std::fmt::Debug) -> String {
    format!("{parts:?}")
}

/// Reads (and scrubs) a one-tap link before anything else, then mounts.
pub fn start() {
    let link = storage::take_link();
    leptos::mount::mount_to_body(move || leptos::view! { <app::App link=link.clone() /> });
}

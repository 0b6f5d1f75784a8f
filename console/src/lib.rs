//! The AEP approval console: a client-side app to watch a fleet of agents
//! and answer them, from a desktop or a phone. A library, so that its view
//! models and their doc examples are tested natively; `main.rs` only
//! starts it.
//!
//! * [`model`]: view models built from the engine's state (native-tested).
//! * `web`: the bridge to the browser driver, storage, notifications.
//! * `ui`: the Leptos components.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod model;
#[cfg(target_arch = "wasm32")]
mod ui;
#[cfg(target_arch = "wasm32")]
mod web;

/// Mounts the app on the page.
#[cfg(target_arch = "wasm32")]
pub use ui::start;

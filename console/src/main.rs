//! The AEP approval console: a client-side app to watch a fleet of agents
//! and answer them, from a desktop or a phone.
//!
//! * [`model`]: view models built from the engine's state (native-tested).
//! * `web`: the bridge to the browser driver, storage, notifications.
//! * `ui`: the Leptos components.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod model;
#[cfg(target_arch = "wasm32")]
mod ui;
#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(target_arch = "wasm32")]
fn main() {
    ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("aep-console runs in a browser: build it with scripts/build-console and open it from a relay");
    std::process::exit(2);
}

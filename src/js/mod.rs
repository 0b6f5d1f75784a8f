//! The JavaScript API (wasm32, feature `js-api`): wasm-bindgen exports over
//! the engine and its browser driver.
//!
//! * [`client`]: `AepClient`, the multi-relay console client.
//! * [`feed`]: the JavaScript front end: listeners and command promises.
//! * [`options`]: reading `new AepClient(options)`.
//! * [`members`]: reading any object handed in, member by member.
//! * [`helpers`]: `validateEvent`, `validateFilter`, `matches`, `projectState`.
//! * [`target`]: `ControlTarget` for agents written in JavaScript.
//! * [`agent`]: `AepAgent`, such an agent's own relay connection.
//! * [`convert`]: conversions and errors (`NackError`, `AepError`).
//!
//! Objects cross the boundary as plain JSON-shaped values built by
//! [`crate::view`]; the package's TypeScript declarations describe each one.

pub mod agent;
pub mod client;
pub mod convert;
pub mod feed;
pub mod helpers;
pub mod members;
pub mod options;
pub mod target;

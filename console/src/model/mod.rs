//! View models: plain data built from the engine's state, with no
//! browser or Leptos in sight, so they are tested natively. The engine
//! owns the truth; these only say it in a form a screen can show.

pub mod announce;
pub mod audit;
pub mod card;
pub mod clock;
pub mod command;
pub mod detail;
pub mod form;
pub mod hold;
pub mod inbox;
pub mod notice;
pub mod push;
pub mod reply;
pub mod rules;
pub mod session;
pub mod setup;
pub mod slots;
pub mod status;
pub mod steady;
pub mod timeline;
pub mod touched;
pub mod words;

#[cfg(test)]
mod tests;

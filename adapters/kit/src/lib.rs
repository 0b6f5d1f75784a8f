//! What every AEP agent adapter needs, whatever the agent: an adapter
//! built on it keeps only its mapping (hooks to events) and its settings
//! format.
//!
//! * [`mapping`]: the plan a mapping makes of one hook, and the
//!   [`Mapping`](mapping::Mapping) an adapter implements.
//! * [`calls`]: every announced tool call closed exactly once.
//! * [`decision`]: what a held permission hook is told.
//! * [`grade`]: which permission requests are destructive.
//! * [`permission`]: a permission request's payload, with what it is
//!   about (command, changes, the agent's explanation) and why it is
//!   destructive.
//! * [`daemon`]: the engine agent on one relay connection that emits the
//!   plan's events and holds requests until answered or timed out.
//! * [`server`]: the loopback hook endpoint.
//! * [`serve`]: running both, as an adapter's `serve` command does.
//! * [`settings`]: the settings-file edit contract's shared parts.

pub mod calls;
pub mod daemon;
pub mod decision;
pub mod grade;
pub mod mapping;
pub mod permission;
pub mod serve;
pub mod server;
pub mod settings;

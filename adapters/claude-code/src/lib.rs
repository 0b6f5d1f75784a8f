//! Claude Code on AEP: its hooks become AEP events on one long-lived
//! relay connection, and each permission request it asks is held open as
//! an answerable `attention.requested` until a person answers it from a
//! console, or the adapter's timeout hands the decision back.
//!
//! * [`hook`]: Claude Code's hook input and answers.
//! * [`mapping`]: hooks to AEP events (AEP-0002 Annex A.1), pure.
//! * [`grade`]: which permission requests are destructive (the adapter
//!   kit's rule).
//! * [`remember`]: "Allow, and don't ask again": the permission updates
//!   a request offers, so Claude Code itself remembers the decision.
//! * [`form`]: MCP elicitation as an AEP-0006 form.
//! * [`daemon`]: the engine agent that emits them and holds requests (the
//!   adapter kit's, reading hooks through [`mapping`]).
//! * [`server`]: the loopback hook endpoint (the adapter kit's).
//! * [`settings`]: connecting a project (or a user) to the adapter in
//!   `.claude/settings.json`, and disconnecting it exactly.

pub mod daemon;
pub mod form;
pub use aep_adapter_kit::grade;
pub mod hook;
pub mod mapping;
pub mod remember;
pub mod server;
pub mod settings;

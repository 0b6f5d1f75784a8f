//! The Codex CLI on AEP: its command hooks become AEP events on one
//! long-lived relay connection (the adapter kit's), and each permission
//! request it asks is held open as an answerable `attention.requested`
//! until a person answers it from a console, or the adapter's timeout
//! hands the decision back to Codex.
//!
//! * [`hook`]: Codex's hook input.
//! * [`mapping`]: hooks to AEP events (AEP-0002 Annex A.2), pure.
//! * [`client`]: the hook command, forwarding a hook to the adapter.
//! * [`config`]: connecting Codex to the adapter in `config.toml`, and
//!   disconnecting it exactly.
//! * [`trust`]: telling Codex to trust the adapter's hooks, on request.

pub mod client;
pub mod config;
pub mod hook;
pub mod mapping;
pub mod trust;

/// The path the hook command posts to.
pub const HOOK_PATH: &str = "/aep-codex/hook";

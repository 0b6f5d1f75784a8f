//! What JavaScript hands the client's commands: each argument is read into
//! one of these types and declared for TypeScript from the same type
//! (`tests/declarations.rs`), so what is read and what is declared cannot
//! drift. A vendor command's arguments carry a payload, so they are read
//! from their JSON text: the event then holds the payload exactly as
//! `JSON.stringify` writes it.

use aep_engine::client::hub;
use aep_engine::control::sender::{Address, CancelScope};
use aep_engine::protocol::event::Capture;
use serde::Deserialize;
use serde_json::{Map, Value};
use tsify::Tsify;

/// Who a command is for: a session, a run of it, and (optionally) the
/// relay to send it through.
#[derive(Clone, Debug, Deserialize, Tsify)]
pub struct Target {
    pub session: String,
    #[serde(default)]
    #[tsify(optional)]
    pub run: Option<String>,
    /// A relay label, overriding routing.
    #[serde(default)]
    #[tsify(optional)]
    pub relay: Option<String>,
}

impl Target {
    /// The engine's target.
    pub fn target(self) -> Result<hub::Target, String> {
        if self.session.is_empty() {
            return Err("`session` is required".into());
        }
        Ok(hub::Target { to: Address { session: self.session, run: self.run }, relay: self.relay })
    }
}

/// `cancel(args)`: a run or a whole session.
#[derive(Clone, Debug, Deserialize, Tsify)]
pub struct CancelArgs {
    #[serde(flatten)]
    pub target: Target,
    #[tsify(type = "'run' | 'session'")]
    pub scope: String,
    #[serde(default)]
    #[tsify(optional)]
    pub reason: Option<String>,
}

impl CancelArgs {
    pub fn scope(&self) -> Result<CancelScope, String> {
        CancelScope::parse(&self.scope)
            .ok_or_else(|| format!("`scope` must be \"run\" or \"session\", got `{}`", self.scope))
    }
}

/// `command(type, args)`: a vendor command's target and payload.
#[derive(Clone, Debug, Deserialize, Tsify)]
pub struct VendorArgs {
    #[serde(flatten)]
    pub target: Target,
    #[serde(default)]
    #[tsify(optional)]
    pub subject: Option<String>,
    #[serde(default)]
    #[tsify(optional, type = "{ [key: string]: Json }")]
    pub data: Option<Map<String, Value>>,
    /// The payload's capture level (default `metadata`).
    #[serde(default)]
    #[tsify(optional)]
    pub capture: Option<Capture>,
}

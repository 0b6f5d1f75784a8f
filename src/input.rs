//! What JavaScript hands the client's commands: each argument is read into
//! one of these types and declared for TypeScript from the same type
//! (`tests/declarations.rs`), so what is read and what is declared cannot
//! drift. A vendor command's arguments carry a payload, so they are read
//! from their JSON text: the event then holds the payload exactly as
//! `JSON.stringify` writes it.

use aep_engine::client::hub;
use aep_engine::control::sender::{Address, CancelScope};
use aep_engine::protocol::event::{Capture, Severity};
use aep_engine::store::StoreConfig;
use serde::Deserialize;
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;
use tsify::Tsify;
use wasm_bindgen::JsValue;

/// Who a command is for: a session, a run of it, and (optionally) the
/// relay to send it through.
#[derive(Clone, Debug, Deserialize, Tsify)]
pub struct Recipient {
    pub session: String,
    #[serde(default)]
    #[tsify(optional)]
    pub run: Option<String>,
    /// A relay label, overriding routing.
    #[serde(default)]
    #[tsify(optional)]
    pub relay: Option<String>,
}

impl Recipient {
    /// The engine's target.
    pub fn target(self) -> Result<hub::Recipient, String> {
        if self.session.is_empty() {
            return Err("`session` is required".into());
        }
        Ok(hub::Recipient { to: Address { session: self.session, run: self.run }, relay: self.relay })
    }
}

/// `cancel(args)`: a run or a whole session.
#[derive(Clone, Debug, Deserialize, Tsify)]
pub struct CancelArgs {
    #[serde(flatten)]
    pub target: Recipient,
    #[tsify(type = "CancelScope")]
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
    pub target: Recipient,
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

/// `projectState`'s `limits`: any of the store's bounds; a bound not given
/// is unlimited.
// Read only ([`StoreLimits::read`]), never written: `skip_serializing_none`
// is here to declare every bound optional (`maxSessions?: number`).
#[skip_serializing_none]
#[derive(Clone, Debug, Default, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct StoreLimits {
    pub max_sessions: Option<usize>,
    /// Events, runs, cards and command chains held by all sessions together.
    pub max_held: Option<usize>,
    pub max_timeline_per_session: Option<usize>,
    pub max_runs_per_session: Option<usize>,
    pub max_cards_per_session: Option<usize>,
    pub max_commands_per_session: Option<usize>,
    pub max_agents: Option<usize>,
    pub max_agent_events: Option<usize>,
    pub max_unattached: Option<usize>,
    pub max_seen_ids: Option<usize>,
    pub max_violations: Option<usize>,
}

impl Resume {
    pub fn parse(name: &str) -> Option<Resume> {
        use strum::VariantArray;
        Resume::VARIANTS.iter().copied().find(|r| <&str>::from(*r) == name)
    }
}

impl StoreLimits {
    /// Reads the bounds member by member (serde's reader would be larger,
    /// and the package's size is budgeted); an unknown one is refused.
    pub fn read(value: &Value) -> Result<StoreLimits, String> {
        let Value::Object(members) = value else { return Err("expected an object".into()) };
        let mut l = StoreLimits::default();
        for (key, v) in members {
            let bound = match key.as_str() {
                "maxSessions" => &mut l.max_sessions,
                "maxHeld" => &mut l.max_held,
                "maxTimelinePerSession" => &mut l.max_timeline_per_session,
                "maxRunsPerSession" => &mut l.max_runs_per_session,
                "maxCardsPerSession" => &mut l.max_cards_per_session,
                "maxCommandsPerSession" => &mut l.max_commands_per_session,
                "maxAgents" => &mut l.max_agents,
                "maxAgentEvents" => &mut l.max_agent_events,
                "maxUnattached" => &mut l.max_unattached,
                "maxSeenIds" => &mut l.max_seen_ids,
                "maxViolations" => &mut l.max_violations,
                _ => return Err(format!("unknown bound `{key}`")),
            };
            if !v.is_null() {
                let n = v.as_u64().ok_or_else(|| format!("`{key}` must be a non-negative integer"))?;
                *bound = Some(usize::try_from(n).unwrap_or(usize::MAX));
            }
        }
        Ok(l)
    }

    /// The store's configuration: unbounded but for the bounds given.
    pub fn config(self) -> StoreConfig {
        let mut c = StoreConfig::unbounded();
        let set = |bound: &mut usize, limit: Option<usize>| *bound = limit.unwrap_or(*bound);
        set(&mut c.max_sessions, self.max_sessions);
        set(&mut c.max_held, self.max_held);
        set(&mut c.max_timeline_per_session, self.max_timeline_per_session);
        set(&mut c.max_runs_per_session, self.max_runs_per_session);
        set(&mut c.max_cards_per_session, self.max_cards_per_session);
        set(&mut c.max_commands_per_session, self.max_commands_per_session);
        set(&mut c.max_agents, self.max_agents);
        set(&mut c.max_agent_events, self.max_agent_events);
        set(&mut c.max_unattached, self.max_unattached);
        set(&mut c.max_seen_ids, self.max_seen_ids);
        set(&mut c.max_violations, self.max_violations);
        c
    }
}

/// One relay of `new AepClient(options)`.
// Read by `js::members`: serde's messages quote values, and a token is a
// value.
#[skip_serializing_none]
#[derive(Clone, Debug, Tsify)]
pub struct RelayOptions {
    /// ws(s):// or http(s):// URL; an origin alone means `/socket`.
    pub url: String,
    /// Sent only as `?access_token=` on the upgrade; never logged.
    pub token: Option<String>,
    /// Shown as provenance; defaults to the URL without its query.
    pub label: Option<String>,
}

/// How subscriptions resume after a reconnect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Tsify, strum::VariantArray, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Resume {
    /// After the positions taken (the default).
    Positions,
    /// Everything the relay still holds, where it says it can.
    All,
}

/// `new AepClient(options)`.
// Read by `js::members`, like the relays.
#[skip_serializing_none]
#[derive(Debug, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct AepClientOptions {
    pub relays: Vec<RelayOptions>,
    /// The `agent` this client's commands carry.
    pub agent: String,
    /// Host part of the default source `aep://{host}/agent/{agent}`.
    pub host: Option<String>,
    /// The `source` this client's commands carry (overrides `host`).
    pub source: Option<String>,
    #[tsify(type = "Filter")]
    pub filter: Option<Value>,
    /// Capture ceiling asked of each relay.
    pub capture: Option<Capture>,
    /// Ack window for targets that declared none (default 10 000 ms).
    pub ack_window_ms: Option<u64>,
    pub ping_interval_ms: Option<u64>,
    /// `positions` (default) or `all`: how subscriptions resume.
    pub resume: Option<Resume>,
    /// Defaults to the global WebSocket (Node 20: `--experimental-websocket`).
    #[serde(rename = "WebSocket")]
    #[tsify(type = "WebSocketConstructor")]
    pub websocket: Option<JsValue>,
}

/// `new ControlTarget(options)`; `new AepAgent(options)` takes these too.
// Read by `js::members`.
#[skip_serializing_none]
#[derive(Clone, Debug, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct ControlTargetOptions {
    pub agent: String,
    #[tsify(type = "CommandType[]")]
    pub accepts: Vec<String>,
    pub host: Option<String>,
    pub source: Option<String>,
    /// Stamped on every event. Defaults to the start-up time in ms, so that a
    /// restarted agent is a new, later epoch and never repeats a position.
    pub epoch: Option<u64>,
    /// The capture ceiling of everything the target emits (AEP-0003 §9.1),
    /// default `metadata`: a person's text (answers, reasons) is `full` content
    /// and is dropped from outcomes below `full`. Nothing is redacted.
    pub capture: Option<Capture>,
}

/// `new AepAgent(options)`.
// Read by `js::members`: a token is a value, and functions
// do not survive JSON.
#[skip_serializing_none]
#[derive(Debug, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct AepAgentOptions {
    #[serde(flatten)]
    pub target: ControlTargetOptions,
    /// The relay, e.g. `http://127.0.0.1:8787`.
    pub url: String,
    /// Sent only in the socket URL; never logged or shown.
    pub token: Option<String>,
    /// Declared in hello as `control.ack_window_ms`.
    pub ack_window_ms: Option<u64>,
    pub ping_interval_ms: Option<u64>,
    /// Asked, synchronously, about each first delivery of a command that passed
    /// the protocol's checks. It must not call back into the agent.
    #[tsify(type = "(action: TargetAction) => Verdict")]
    pub decide: Option<JsValue>,
    #[serde(rename = "WebSocket")]
    #[tsify(type = "WebSocketConstructor")]
    pub websocket: Option<JsValue>,
}

/// One of an agent's own events, before the target stamps it.
// Read by `js::members`.
#[skip_serializing_none]
#[derive(Clone, Debug, Tsify)]
pub struct EventDraft {
    #[serde(rename = "type")]
    pub ty: String,
    pub session: Option<String>,
    pub run: Option<String>,
    pub step: Option<String>,
    pub subject: Option<String>,
    pub cause: Option<String>,
    pub traceparent: Option<String>,
    pub severity: Option<Severity>,
    pub capture: Option<Capture>,
    #[tsify(type = "{ [key: string]: Json }")]
    pub data: Option<Map<String, Value>>,
    /// Defaults to the session's next; a named one must be above every seq already used.
    pub seq: Option<u64>,
    pub epoch: Option<u64>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tsify::Tsify;

    use super::*;

    /// The reader takes every bound the declaration names, and only those.
    #[test]
    fn store_limits_read_every_declared_bound() {
        let names: Vec<&str> = StoreLimits::DECL.lines().filter_map(|l| l.trim().strip_suffix("?: number;")).collect();
        assert_eq!(names.len(), 11, "{}", StoreLimits::DECL);
        for name in names {
            let l = StoreLimits::read(&json!({ name: 3 })).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_ne!(l.config(), StoreConfig::unbounded(), "{name} bounds nothing");
        }
        assert!(StoreLimits::read(&json!({ "maxSession": 3 })).is_err());
        assert!(StoreLimits::read(&json!({ "maxHeld": -1 })).is_err());
    }
}

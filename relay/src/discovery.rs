//! What the relay declares: the discovery document (AEP-0003 §3.4) and the
//! `hello` it answers with (§4). Both carry the same capabilities, so a
//! stateless emitter and a socket peer learn the same facts.

use std::net::SocketAddr;

use aep_engine::protocol::frame::{
    Capabilities, ControlCapability, Frame, Hello, HelloIdentity, ReplayCapability, Role,
};
use aep_engine::protocol::AEP_VERSION;
use aep_engine::Capture;
use serde_json::{json, Map, Value};

use crate::auth::{Agents, Principal};
use crate::config::Config;

/// Paths served at the origin root.
pub const EVENTS_PATH: &str = "/events";
pub const STREAM_PATH: &str = "/stream";
pub const SOCKET_PATH: &str = "/socket";
pub const WELL_KNOWN_PATH: &str = "/.well-known/aep";
pub const HEALTH_PATH: &str = "/healthz";

/// The versions this relay speaks.
pub fn versions() -> Vec<String> {
    vec![AEP_VERSION.to_owned()]
}

/// The relay's capabilities. `control.accepts` is empty: the relay routes
/// commands but takes none itself. `replay.buffer` is the real per-session
/// depth.
pub fn capabilities(config: &Config) -> Capabilities {
    Capabilities {
        capture: Some(Capture::ALL.iter().map(|c| c.as_str().to_owned()).collect()),
        control: Some(ControlCapability::new(Vec::<String>::new(), None)),
        replay: Some(ReplayCapability { buffer: Some(config.buffer_depth as u64), all: Some(true), other: Map::new() }),
        filters: Some(vec!["attr-match".to_owned()]),
        roster: Some(Map::new()),
        ..Capabilities::default()
    }
}

/// The discovery document served at `GET /events` and `/.well-known/aep`.
pub fn document(config: &Config) -> Value {
    json!({
        "aep": versions(),
        "role": "collector",
        "endpoints": { "events": EVENTS_PATH, "stream": STREAM_PATH, "socket": SOCKET_PATH },
        "capabilities": Value::Object(capabilities(config).to_map()),
    })
}

/// The relay's `hello`: exactly one version, and the same capabilities as
/// the discovery document.
pub fn hello(config: &Config, addr: SocketAddr, principal: Option<&Principal>) -> String {
    let mut capabilities = capabilities(config);
    // A connection is told what it may do, so a console shows a viewer
    // requests read-only instead of buttons the relay would refuse. A
    // principal bound to its own name is told it too, so its commands carry
    // the `agent` the relay will accept from it; one that may use any name
    // is told only when it may not command (whoever reaches a relay with no
    // credentials), and the owner, who may do everything, nothing.
    if let Some(p) = principal {
        let roles: Vec<&str> = [("agent", p.roles.agent), ("operator", p.roles.operator), ("viewer", p.roles.viewer)]
            .into_iter()
            .filter_map(|(name, held)| held.then_some(name))
            .collect();
        match p.agents {
            Agents::Named(_) => capabilities.set_principal(&p.name, &roles),
            Agents::Any if !p.roles.operator => capabilities.set_roles(&roles),
            Agents::Any => {}
        }
    }
    Frame::Hello(Hello {
        versions: versions(),
        role: Some(Role::Both),
        identity: Some(HelloIdentity {
            agent: Some("aep-relay".to_owned()),
            instance: Some(addr.to_string()),
            card: None,
        }),
        capabilities,
    })
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_declares_what_consumers_plan_by() {
        let config = Config { buffer_depth: 64, ..Config::default() };
        let doc = document(&config);
        assert_eq!(doc["aep"], json!(["0.1"]));
        assert_eq!(doc["endpoints"]["socket"], "/socket");
        let caps = &doc["capabilities"];
        assert_eq!(caps["replay"], json!({"buffer": 64, "all": true}));
        assert_eq!(caps["roster"], json!({}));
        assert_eq!(caps["control"], json!({"accepts": []}));
        assert_eq!(caps["filters"], json!(["attr-match"]));
        assert_eq!(caps["capture"], json!(["none", "metadata", "redacted", "full"]));
    }

    #[test]
    fn hello_says_what_the_connection_may_do() {
        let addr = "127.0.0.1:1".parse().unwrap();
        let principal = |p: &Principal| -> Value {
            let v: Value = serde_json::from_str(&hello(&Config::default(), addr, Some(p))).unwrap();
            v["capabilities"]["experimental"]["principal"].clone()
        };
        let viewer = Principal::named("ops-viewer", crate::auth::Roles::parse("viewer").unwrap());
        assert_eq!(principal(&viewer), json!({ "name": "ops-viewer", "roles": ["viewer"] }));
        assert_eq!(principal(&Principal::owner()), Value::Null, "the owner may do everything: nothing to say");
        assert_eq!(
            principal(&Principal::anonymous()),
            json!({ "roles": ["agent", "viewer"] }),
            "watching, never commanding"
        );
    }

    #[test]
    fn hello_selects_exactly_one_version() {
        let text = hello(&Config::default(), "127.0.0.1:1".parse().unwrap(), None);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["type"], "hello");
        assert_eq!(v["versions"], json!(["0.1"]));
        assert!(v.get("aep").is_none());
    }
}

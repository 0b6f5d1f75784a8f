//! `new AepClient(options)`: reading and checking the options object.
//! Errors name the option at fault, never a token or a URL carrying one.

use aep_engine::client::hub::{relay_label, HubConfig, RelayAddress, RelaySpec};
use aep_engine::client::{Config, ResumePolicy};
use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::HelloIdentity;
use aep_engine::protocol::ids::{source_uri, Identity};
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
use super::members::Members;
use crate::error::AepErrorCode;
use crate::input::{AepClientOptions, RelayOptions, Resume};
use aep_engine::protocol::event::Capture;

/// Everything the driver needs: the hub's configuration, and per relay
/// where to reach it (the endpoint holds the token).
pub struct Parsed {
    pub hub: HubConfig,
    pub relays: Vec<RelaySpec>,
    pub endpoints: Vec<RelayAddress>,
    pub websocket: Option<js_sys::Function>,
}

fn invalid(message: impl AsRef<str>) -> JsValue {
    aep_error(AepErrorCode::InvalidOptions, message)
}

pub fn parse(options: &JsValue) -> Result<Parsed, JsValue> {
    let m = Members::of(options, "new AepClient(options): ", AepErrorCode::InvalidOptions)?;
    let filter_json = m.json("filter")?;
    let filter = match &filter_json {
        None => Filter::match_all(),
        Some(json) => {
            Filter::parse(json).map_err(|e| aep_error(AepErrorCode::InvalidFilter, format!("`filter`: {e}")))?
        }
    };
    let agent = m.text("agent")?.filter(|a| !a.trim().is_empty());
    let agent = agent.ok_or_else(|| m.refuse("`agent` names this client and must not be empty"))?;
    let o = AepClientOptions {
        relays: relays(&m)?,
        agent,
        host: m.text("host")?,
        source: m.text("source")?,
        filter: filter_json,
        capture: m.named("capture", "capture level", Capture::parse)?,
        ack_window_ms: m.count("ackWindowMs")?,
        ping_interval_ms: m.count("pingIntervalMs")?,
        resume: m.named("resume", "resume policy (\"positions\" or \"all\")", Resume::parse)?,
        websocket: m.function("WebSocket")?.map(JsValue::from),
    };
    let resume = match o.resume {
        None | Some(Resume::Positions) => ResumePolicy::Positions,
        Some(Resume::All) => ResumePolicy::AllWhenAdvertised,
    };
    let source = match o.source {
        Some(s) if !s.is_empty() => s,
        _ => source_uri(o.host.as_deref().filter(|h| !h.is_empty()).unwrap_or("localhost"), &o.agent, None),
    };
    let seed = convert::random() as u64;
    let mut hub = HubConfig::new(Identity::new(source, o.agent.clone()), seed);
    hub.filter = filter;
    hub.capture = o.capture;
    hub.ack_window_ms = o.ack_window_ms;

    let mut relays = Vec::new();
    let mut endpoints = Vec::new();
    for (i, r) in o.relays.into_iter().enumerate() {
        let endpoint =
            RelayAddress::new(&r.url, r.token.as_deref()).map_err(|e| invalid(format!("relays[{i}].url: {e}")))?;
        let label = match r.label {
            Some(l) if !l.is_empty() => l,
            _ => relay_label(&r.url).map_err(|e| invalid(format!("relays[{i}].url: {e}")))?,
        };
        let mut config = Config::consumer();
        config.identity = Some(HelloIdentity { agent: Some(o.agent.clone()), ..HelloIdentity::default() });
        config.jitter_seed = seed.wrapping_add(i as u64);
        config.resume = resume;
        if let Some(p) = o.ping_interval_ms {
            config.ping_interval_ms = p;
        }
        relays.push(RelaySpec { label, config });
        endpoints.push(endpoint);
    }
    Ok(Parsed { hub, relays, endpoints, websocket: o.websocket.map(JsCast::unchecked_into) })
}

fn relays(options: &Members<'_>) -> Result<Vec<RelayOptions>, JsValue> {
    let shape = || options.refuse("`relays` must be a non-empty array of { url, token?, label? }");
    let relay = |r: JsValue, at: &str| {
        let at = format!("new AepClient(options): {at}: ");
        let m = Members::of(&r, &at, AepErrorCode::InvalidOptions)?;
        Ok(RelayOptions { url: m.required("url")?, token: m.text("token")?, label: m.text("label")? })
    };
    match options.array("relays", relay) {
        Ok(Some(list)) if !list.is_empty() => Ok(list),
        Ok(_) => Err(shape()),
        Err(e) => Err(e),
    }
}

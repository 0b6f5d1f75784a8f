//! `new AepClient(options)`: reading and checking the options object.
//! Errors name the option at fault, never a token or a URL carrying one.

use aep_engine::client::hub::{relay_label, HubConfig, RelayAddress, RelaySpec};
use aep_engine::client::{Config, ResumePolicy};
use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::HelloIdentity;
use aep_engine::protocol::ids::{source_uri, Identity};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
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
    if !options.is_object() {
        return Err(invalid("new AepClient(options): options must be an object"));
    }
    // Functions do not survive serde; read them first.
    let websocket = match convert::get(options, "WebSocket") {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(convert::as_function(&v).ok_or_else(|| invalid("`WebSocket` must be a WebSocket constructor"))?),
    };
    let filter_json = match convert::get(options, "filter") {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(convert::to_json(&v).map_err(|e| invalid(format!("`filter`: {e}")))?),
    };
    let filter = match &filter_json {
        None => Filter::match_all(),
        Some(json) => {
            Filter::parse(json).map_err(|e| aep_error(AepErrorCode::InvalidFilter, format!("`filter`: {e}")))?
        }
    };
    // Member by member: serde's messages quote values, and a token is a
    // value (and the package's size is budgeted).
    let relays_ = relays(&convert::get(options, "relays"))?;
    let text = |key: &str| string_member(options, key).map_err(|_| invalid(format!("`{key}` must be a string")));
    let agent = text("agent")?.filter(|a| !a.trim().is_empty());
    let agent = agent.ok_or_else(|| invalid("`agent` names this client and must not be empty"))?;
    let capture = match text("capture")? {
        None => None,
        Some(c) => Some(Capture::parse(&c).ok_or_else(|| invalid(format!("`capture`: unknown level `{c}`")))?),
    };
    let resume = match text("resume")? {
        None => None,
        Some(r) => {
            Some(Resume::parse(&r).ok_or_else(|| invalid(format!("`resume`: `{r}` is not \"positions\" or \"all\"")))?)
        }
    };
    let o = AepClientOptions {
        relays: relays_,
        agent,
        host: text("host")?,
        source: text("source")?,
        filter: filter_json,
        capture,
        ack_window_ms: number_member(options, "ackWindowMs").map_err(invalid)?,
        ping_interval_ms: number_member(options, "pingIntervalMs").map_err(invalid)?,
        resume,
        websocket: websocket.map(JsValue::from),
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

fn relays(value: &JsValue) -> Result<Vec<RelayOptions>, JsValue> {
    let shape = "`relays` must be a non-empty array of { url, token?, label? }";
    if !js_sys::Array::is_array(value) {
        return Err(invalid(shape));
    }
    let list = js_sys::Array::from(value);
    if list.length() == 0 {
        return Err(invalid(shape));
    }
    let mut out = Vec::new();
    for (i, r) in list.iter().enumerate() {
        if !r.is_object() {
            return Err(invalid(shape));
        }
        let text = |key: &str| -> Result<Option<String>, JsValue> {
            match optional(convert::get(&r, key)) {
                None => Ok(None),
                Some(v) => {
                    v.as_string().map(Some).ok_or_else(|| invalid(format!("relays[{i}].{key} must be a string")))
                }
            }
        };
        let url = text("url")?.ok_or_else(|| invalid(format!("relays[{i}].url is required")))?;
        out.push(RelayOptions { url, token: text("token")?, label: text("label")? });
    }
    Ok(out)
}

/// A `Value` for a missing optional JS member.
pub fn optional(value: JsValue) -> Option<JsValue> {
    (!value.is_undefined() && !value.is_null()).then_some(value)
}

/// Reads an optional string member.
pub fn string_member(source: &JsValue, key: &str) -> Result<Option<String>, JsValue> {
    match optional(convert::get(source, key)) {
        None => Ok(None),
        Some(v) => v
            .as_string()
            .map(Some)
            .ok_or_else(|| aep_error(AepErrorCode::InvalidArgument, format!("`{key}` must be a string"))),
    }
}

/// Reads an optional non-negative integer member; the error names it.
pub fn number_member(source: &JsValue, key: &str) -> Result<Option<u64>, String> {
    match optional(convert::get(source, key)).map(|v| v.as_f64()) {
        None => Ok(None),
        Some(Some(n)) if n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
        Some(_) => Err(format!("`{key}` must be a non-negative integer")),
    }
}

/// The JSON of an optional member.
pub fn json_member(source: &JsValue, key: &str) -> Result<Option<Value>, JsValue> {
    match optional(convert::get(source, key)) {
        None => Ok(None),
        Some(v) => convert::to_json(&v)
            .map(Some)
            .map_err(|e| aep_error(AepErrorCode::InvalidArgument, format!("`{key}`: {e}"))),
    }
}

//! `new AepClient(options)`: reading and checking the options object.
//! Errors name the option at fault, never a token or a URL carrying one.

use aep_engine::client::hub::{relay_label, Endpoint, HubConfig, RelaySpec};
use aep_engine::client::{Config, ResumePolicy};
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::filter::Filter;
use aep_engine::protocol::frame::HelloIdentity;
use aep_engine::protocol::ids::{source_uri, Identity};
use aep_engine::protocol::vocabulary::codes;
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};

struct RelayOptions {
    url: String,
    token: Option<String>,
    label: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    agent: String,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    capture: Option<String>,
    #[serde(default)]
    ack_window_ms: Option<u64>,
    #[serde(default)]
    ping_interval_ms: Option<u64>,
    #[serde(default)]
    resume: Option<String>,
}

/// Everything the driver needs: the hub's configuration, and per relay
/// where to reach it (the endpoint holds the token).
pub struct Parsed {
    pub hub: HubConfig,
    pub relays: Vec<RelaySpec>,
    pub endpoints: Vec<Endpoint>,
    pub websocket: Option<js_sys::Function>,
}

fn invalid(message: impl AsRef<str>) -> JsValue {
    aep_error("invalid-options", message)
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
    let filter = match convert::get(options, "filter") {
        v if v.is_undefined() || v.is_null() => Filter::match_all(),
        v => {
            let json = convert::to_json(&v).map_err(|e| invalid(format!("`filter`: {e}")))?;
            Filter::parse(&json).map_err(|e| aep_error(codes::INVALID_FILTER, format!("`filter`: {e}")))?
        }
    };
    let relay_options = relays(&convert::get(options, "relays"))?;
    // Relays are read by hand: serde's messages quote values, and a token
    // is a value.
    let plain = js_sys::Object::assign(&js_sys::Object::new(), options.unchecked_ref());
    for key in ["WebSocket", "filter", "relays"] {
        let _ = js_sys::Reflect::delete_property(&plain, &JsValue::from_str(key));
    }
    let o: Options = convert::to_json(&plain.into())
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
        .map_err(|e| invalid(format!("new AepClient(options): {e}")))?;
    if o.agent.trim().is_empty() {
        return Err(invalid("`agent` names this client and must not be empty"));
    }
    let capture = match o.capture.as_deref() {
        None => None,
        Some(c) => Some(Capture::parse(c).ok_or_else(|| invalid(format!("`capture`: unknown level `{c}`")))?),
    };
    let resume = match o.resume.as_deref() {
        None | Some("positions") => ResumePolicy::Positions,
        Some("all") => ResumePolicy::AllWhenAdvertised,
        Some(other) => return Err(invalid(format!("`resume`: `{other}` is not \"positions\" or \"all\""))),
    };
    let source = match o.source {
        Some(s) if !s.is_empty() => s,
        _ => source_uri(o.host.as_deref().filter(|h| !h.is_empty()).unwrap_or("localhost"), &o.agent, None),
    };
    let seed = convert::random() as u64;
    let mut hub = HubConfig::new(Identity::new(source, o.agent.clone()), seed);
    hub.filter = filter;
    hub.capture = capture;
    hub.ack_window_ms = o.ack_window_ms;

    let mut relays = Vec::new();
    let mut endpoints = Vec::new();
    for (i, r) in relay_options.into_iter().enumerate() {
        let endpoint =
            Endpoint::new(&r.url, r.token.as_deref()).map_err(|e| invalid(format!("relays[{i}].url: {e}")))?;
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
    Ok(Parsed { hub, relays, endpoints, websocket })
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
        Some(v) => {
            v.as_string().map(Some).ok_or_else(|| aep_error("invalid-argument", format!("`{key}` must be a string")))
        }
    }
}

/// The JSON of an optional member.
pub fn json_member(source: &JsValue, key: &str) -> Result<Option<Value>, JsValue> {
    match optional(convert::get(source, key)) {
        None => Ok(None),
        Some(v) => convert::to_json(&v).map(Some).map_err(|e| aep_error("invalid-argument", format!("`{key}`: {e}"))),
    }
}

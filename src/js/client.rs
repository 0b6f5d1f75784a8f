//! `AepClient`: the JavaScript face of the [`Hub`].

use std::collections::BTreeSet;

use aep_browser::driver::{with, Driver, Shared};
use aep_engine::client::hub::{Hub, HubError, Recipient};
use aep_engine::client::State;
use aep_engine::control::answer::Answer;
use aep_engine::protocol::event::Capture;
use aep_engine::protocol::frame::SessionPosition;
use aep_engine::store::SessionKey;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
use super::feed::{JsFeed, Kind};
use super::members::Members;
use super::options;
use crate::error::AepErrorCode;
use crate::input::{self, CancelArgs, VendorArgs};
use crate::view;

/// A console-side client of one or more AEP relays.
#[wasm_bindgen]
pub struct AepClient {
    driver: Shared<JsFeed>,
}

/// The `code` of the `AepError` for a refused request.
fn code(e: &HubError) -> AepErrorCode {
    match e {
        HubError::NoRelays | HubError::TooManyRelays(_) | HubError::DuplicateLabel(_) | HubError::Config { .. } => {
            AepErrorCode::InvalidOptions
        }
        HubError::Subscribe { .. } => AepErrorCode::InvalidOptions,
        HubError::UnknownRelay(_) => AepErrorCode::UnknownRelay,
        HubError::UnknownRequest(_) => AepErrorCode::UnknownRequest,
        HubError::NotOverControl(_) => AepErrorCode::NotOverControl,
        HubError::NoRoute(_) => AepErrorCode::Unroutable,
        HubError::NotLive { .. } => AepErrorCode::NotLive,
        HubError::Backpressure { .. } => AepErrorCode::Backpressure,
        HubError::NotPermitted { .. } => AepErrorCode::NotPermitted,
        HubError::Command(_) | HubError::Build(_) => AepErrorCode::InvalidCommand,
        HubError::NotVendorCommand(_) => AepErrorCode::NotVendorCommand,
        HubError::UnknownCommand(_) => AepErrorCode::UnknownCommand,
        HubError::Retry(_) => AepErrorCode::AlreadyDecided,
        HubError::Roster { .. } => AepErrorCode::NoRoster,
        HubError::DuplicateCommand(_) => AepErrorCode::DuplicateCommand,
        HubError::InvalidAnswer(_) => AepErrorCode::InvalidAnswer,
    }
}

fn hub_error(e: HubError) -> JsValue {
    aep_error(code(&e), e.to_string())
}

fn reject(err: JsValue) -> js_sys::Promise {
    js_sys::Promise::reject(&err)
}

fn invalid(message: impl AsRef<str>) -> JsValue {
    aep_error(AepErrorCode::InvalidArgument, message)
}

/// `session` or `{ session, run?, relay? }`.
fn target(value: &JsValue) -> Result<Recipient, JsValue> {
    if let Some(s) = value.as_string() {
        return Ok(Recipient::session(s));
    }
    read::<input::Recipient>(value)?.target().map_err(invalid)
}

/// An argument object as its input type; a wrong shape is an
/// `invalid-argument` naming what is wrong.
fn read<T: serde::de::DeserializeOwned>(value: &JsValue) -> Result<T, JsValue> {
    if !value.is_object() {
        return Err(invalid("expected an object: { session, run?, relay?, ... }"));
    }
    serde_wasm_bindgen::from_value(value.clone()).map_err(|e| invalid(e.to_string()))
}

fn has_global_websocket() -> bool {
    let ws = convert::get(&js_sys::global(), "WebSocket");
    !ws.is_undefined() && !ws.is_null()
}

#[wasm_bindgen]
impl AepClient {
    /// `new AepClient({ relays: [{ url, token?, label? }], agent, host?,
    /// source?, filter?, capture?, ackWindowMs?, pingIntervalMs?, resume?,
    /// WebSocket? })`. Nothing connects until `connect()`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<AepClient, JsValue> {
        let parsed = options::parse(&options)?;
        if parsed.websocket.is_none() && !has_global_websocket() {
            return Err(aep_error(AepErrorCode::NoWebsocket,
                "there is no global WebSocket: run Node 20 with --experimental-websocket, or pass { WebSocket } (e.g. from the ws package)",
            ));
        }
        let hub = Hub::new(parsed.hub, parsed.relays).map_err(hub_error)?;
        Ok(AepClient { driver: Driver::new(hub, parsed.endpoints, parsed.websocket, JsFeed::default()) })
    }

    /// Connects every relay; reconnects follow on their own. Resolves with
    /// every relay's status once each has been live or refused.
    pub fn connect(&self) -> js_sys::Promise {
        with(&self.driver, |d| {
            d.hub.connect(convert::now());
            d.handler.wait_connected(&d.hub)
        })
    }

    /// Closes every relay (a `closing` frame first where live). Commands
    /// already sent are still followed until their windows end.
    pub fn close(&self) {
        with(&self.driver, |d| d.hub.close(convert::now()));
    }

    /// Adds a listener; returns the function that removes it.
    pub fn on(&self, kind: &str, listener: js_sys::Function) -> Result<js_sys::Function, JsValue> {
        let kind = Kind::parse(kind).ok_or_else(|| {
            aep_error(
                AepErrorCode::InvalidArgument,
                format!("unknown event `{kind}` (attention, event, command, session, status or violation)"),
            )
        })?;
        let id = self.driver.borrow_mut().handler.listen(kind, listener);
        let weak = std::rc::Rc::downgrade(&self.driver);
        let off = Closure::<dyn FnMut()>::new(move || {
            if let Some(rc) = weak.upgrade() {
                if let Ok(mut d) = rc.try_borrow_mut() {
                    d.handler.unlisten(id);
                }
            }
        });
        Ok(off.into_js_value().into())
    }

    /// Answers attention request `requestId` with `{ option, text? }`,
    /// `{ text }` or `{ values }`. Resolves `{ ack, outcome }` when the
    /// target accepts; rejects with a `NackError` otherwise.
    pub fn respond(&self, request_id: &str, answer: JsValue) -> js_sys::Promise {
        let answer = match convert::to_json(&answer)
            .map_err(|e| e.to_string())
            .and_then(|v| Answer::from_value(&v).map_err(|e| e.to_string()))
        {
            Ok(a) => a,
            Err(e) => return reject(aep_error(AepErrorCode::InvalidAnswer, e)),
        };
        self.send(|hub, now| hub.respond(request_id, answer, now))
    }

    /// `cancel({ session, run?, scope: "run" | "session", reason?, relay? })`.
    pub fn cancel(&self, args: JsValue) -> js_sys::Promise {
        let parsed = read::<CancelArgs>(&args).and_then(|a| {
            let scope = a.scope().map_err(invalid)?;
            Ok((a.target.target().map_err(invalid)?, scope, a.reason))
        });
        match parsed {
            Ok((t, scope, reason)) => self.send(|hub, now| hub.cancel(&t, scope, reason, now)),
            Err(e) => reject(e),
        }
    }

    /// `pause(session)` or `pause({ session, run?, relay? })`.
    pub fn pause(&self, target_: JsValue) -> js_sys::Promise {
        match target(&target_) {
            Ok(t) => self.send(|hub, now| hub.pause(&t, now)),
            Err(e) => reject(e),
        }
    }

    /// `resume(session)` or `resume({ session, run?, relay? })`.
    pub fn resume(&self, target_: JsValue) -> js_sys::Promise {
        match target(&target_) {
            Ok(t) => self.send(|hub, now| hub.resume(&t, now)),
            Err(e) => reject(e),
        }
    }

    /// A vendor command: `command("x.acme.control.verb", { session, run?,
    /// subject?, data?, capture?, relay? })`.
    pub fn command(&self, ty: &str, args: JsValue) -> js_sys::Promise {
        let parsed = (|| {
            if !args.is_object() {
                return Err(invalid("expected { session, run?, subject?, data?, capture?, relay? }"));
            }
            let a: VendorArgs = convert::to_json(&args)
                .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
                .map_err(invalid)?;
            let capture = a.capture.unwrap_or(Capture::Metadata);
            Ok::<_, JsValue>((a.target.target().map_err(invalid)?, a.subject, a.data.unwrap_or_default(), capture))
        })();
        match parsed {
            Ok((t, subject, data, capture)) => {
                self.send(|hub, now| hub.vendor(ty, &t, subject.as_deref(), data, capture, now))
            }
            Err(e) => reject(e),
        }
    }

    /// Sends a command again, same id and bytes, until an ack is seen.
    pub fn retry(&self, command_id: &str) -> js_sys::Promise {
        with(&self.driver, |d| match d.hub.retry(command_id, convert::now()) {
            Ok(()) => d.handler.track(&d.hub, command_id),
            Err(e) => reject(hub_error(e)),
        })
    }

    /// Asks `relay` (a label) or every live relay for its roster; resolves
    /// with the entries once each has answered.
    pub fn roster(&self, relay: Option<String>) -> js_sys::Promise {
        with(&self.driver, |d| {
            let ids: Vec<usize> = match relay.as_deref() {
                Some(label) => match d.hub.relay_id(label) {
                    Some(id) => vec![id],
                    None => return reject(hub_error(HubError::UnknownRelay(label.to_owned()))),
                },
                None => (0..d.hub.relay_count()).filter(|r| d.hub.state(*r) == Some(&State::Live)).collect(),
            };
            if ids.is_empty() {
                return reject(aep_error(AepErrorCode::NotLive, "no relay is connected"));
            }
            let mut asked = BTreeSet::new();
            for id in ids {
                if let Err(e) = d.hub.request_roster(id) {
                    return reject(hub_error(e));
                }
                asked.insert(id);
            }
            d.handler.wait_roster(asked)
        })
    }

    /// Cards waiting on a person: most severe first, then soonest to expire, then oldest.
    pub fn inbox(&self) -> JsValue {
        convert::to_js(&view::inbox(self.driver.borrow().hub.store()))
    }

    /// Every session, most recently updated first.
    pub fn sessions(&self) -> JsValue {
        convert::to_js(&view::sessions(self.driver.borrow().hub.store()))
    }

    /// One session (`{ source, name }`) with its runs, cards and commands,
    /// or `null`.
    pub fn session(&self, key: JsValue) -> Result<JsValue, JsValue> {
        let m = Members::of(&key, "session(key): ", AepErrorCode::InvalidArgument)?;
        let (source, name) = (m.required("source")?, m.required("name")?);
        let d = self.driver.borrow();
        Ok(d.hub
            .store()
            .session_by_key(&SessionKey::new(&source, &name))
            .map(|s| convert::to_js(&view::session(s)))
            .unwrap_or(JsValue::NULL))
    }

    /// Resume positions taken, per relay label: what to persist.
    pub fn positions(&self) -> JsValue {
        let d = self.driver.borrow();
        // A plain object keyed by label, labels in order (no map type of
        // its own: the package's size is budgeted).
        let mut relays: Vec<usize> = (0..d.hub.relay_count()).collect();
        relays.sort_by_key(|r| d.hub.label(*r));
        let out = js_sys::Object::new();
        for r in relays {
            let list: Vec<view::SessionPosition> = d
                .hub
                .positions(r)
                .iter()
                .map(|p| view::SessionPosition { epoch: p.epoch, seq: p.seq, session: p.session.to_string() })
                .collect();
            convert::set(&out, d.hub.label(r).unwrap_or_default(), &convert::to_js(&list));
        }
        out.into()
    }

    /// Seeds resume positions saved from `positions()` in an earlier run,
    /// per relay label, so subscriptions resume after them instead of
    /// replaying. Call before `connect()`. Nothing is taken unless all of
    /// it reads; labels this client does not have are skipped. Returns how
    /// many positions were taken.
    #[wasm_bindgen(js_name = restorePositions)]
    pub fn restore_positions(&self, saved: JsValue) -> Result<u32, JsValue> {
        let shape = "restorePositions(saved): expected { [relay]: [{ session, epoch, seq }] }, as positions() returns";
        let refuse = || aep_error(AepErrorCode::InvalidArgument, shape);
        // Read member by member: the package's size is budgeted, and
        // serde's reader of this map would be larger.
        let Ok(Value::Object(by_relay)) = convert::to_json(&saved) else { return Err(refuse()) };
        let mut parsed = Vec::new();
        for (label, list) in by_relay {
            let Value::Array(list) = list else { return Err(refuse()) };
            let mut positions = Vec::new();
            for p in &list {
                let (Some(session), Some(epoch), Some(seq)) =
                    (p["session"].as_str(), p["epoch"].as_u64(), p["seq"].as_u64())
                else {
                    return Err(refuse());
                };
                positions.push(SessionPosition::new(session, epoch, seq));
            }
            parsed.push((label, positions));
        }
        Ok(with(&self.driver, |d| {
            let mut taken = 0;
            for (label, positions) in parsed {
                if let Some(relay) = (0..d.hub.relay_count()).find(|r| d.hub.label(*r) == Some(label.as_str())) {
                    taken += positions.len() as u32;
                    d.hub.restore_positions(relay, positions);
                }
            }
            taken
        }))
    }

    /// Every relay's connection status.
    pub fn status(&self) -> JsValue {
        let d = self.driver.borrow();
        let all: Vec<view::RelayStatus> = (0..d.hub.relay_count())
            .map(|r| view::status(d.hub.label(r).unwrap_or_default(), d.hub.state(r).unwrap_or(&State::Idle)))
            .collect();
        convert::to_js(&all)
    }

    /// The commands this client sent that are still remembered, oldest first.
    pub fn commands(&self) -> JsValue {
        let d = self.driver.borrow();
        let all: Vec<view::CommandView> = d
            .hub
            .sender()
            .iter()
            .map(|c| view::tracked(c, d.hub.command_relay(c.id()).and_then(|r| d.hub.label(r))))
            .collect();
        convert::to_js(&all)
    }

    /// The most recent stream violations, oldest first.
    pub fn violations(&self) -> JsValue {
        let d = self.driver.borrow();
        let all: Vec<view::Violation> = d.hub.store().violations().map(view::stream_violation).collect();
        convert::to_js(&all)
    }

    fn send(&self, f: impl FnOnce(&mut Hub, aep_engine::time::UnixMs) -> Result<String, HubError>) -> js_sys::Promise {
        with(&self.driver, |d| match f(&mut d.hub, convert::now()) {
            Ok(id) => d.handler.track(&d.hub, &id),
            Err(e) => reject(hub_error(e)),
        })
    }
}

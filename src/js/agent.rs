//! `AepAgent`: an agent written in JavaScript, on the engine's emitter
//! connection ([`Agent`]). It says hello with the commands it takes, keeps
//! its events at strictly increasing `(epoch, seq)` positions, keeps what it
//! queued while cut off, acknowledges every command as it arrives, and
//! hands fresh ones to the application with helpers for their outcomes.

use aep_browser::driver::{with, Deferred, Driver, Handler, Shared};
use aep_engine::client::agent::{Agent, AgentChange, AgentConfig};
use aep_engine::client::hub::RelayAddress;
use aep_engine::client::{Config, State};
use aep_engine::protocol::event::Event;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
use super::members::Members;
use super::target::{ask_decider, invalid, out, read_options, received_to_js, TargetOps, TargetOptions};
use crate::error::AepErrorCode;
use crate::input::AepAgentOptions;
use crate::view;

/// `{ url, token?, ackWindowMs?, pingIntervalMs?, decide?, WebSocket? }` and
/// the target's options, member by member.
fn read_agent_options(options: &JsValue) -> Result<AepAgentOptions, JsValue> {
    // The target's members first, as they always were.
    let target = read_options(options)?;
    let m = Members::of(options, "options: ", AepErrorCode::InvalidArgument)?;
    Ok(AepAgentOptions {
        target,
        url: m.required("url")?,
        token: m.text("token")?,
        ack_window_ms: m.count("ackWindowMs")?,
        ping_interval_ms: m.count("pingIntervalMs")?,
        decide: m.function("decide")?.map(JsValue::from),
        websocket: m.function("WebSocket")?.map(JsValue::from),
    })
}

/// Listeners and the pending `connect()`.
#[derive(Default)]
struct AgentFeed {
    label: String,
    commands: Vec<js_sys::Function>,
    statuses: Vec<js_sys::Function>,
    violations: Vec<js_sys::Function>,
    connected: Vec<js_sys::Function>,
    calls: Deferred,
}

impl AgentFeed {
    fn call_all(&mut self, listeners: &[js_sys::Function], args: &[JsValue]) {
        for f in listeners {
            let (f, args) = (f.clone(), args.to_vec());
            self.calls.push(Box::new(move || {
                let array: js_sys::Array = args.iter().collect();
                if let Err(e) = f.apply(&JsValue::UNDEFINED, &array) {
                    convert::report(&e);
                }
            }));
        }
    }

    fn status(&self, agent: &Agent) -> JsValue {
        convert::to_js(&view::AgentStatus {
            status: view::status(&self.label, agent.state()),
            queued: agent.connection().queued_events() as u64,
            dropped: agent.connection().dropped_events(),
        })
    }
}

impl Handler for AgentFeed {
    type Core = Agent;

    fn change(&mut self, agent: &Agent, change: AgentChange) {
        match change {
            AgentChange::State(state) => {
                let status = self.status(agent);
                let listeners = self.statuses.clone();
                self.call_all(&listeners, std::slice::from_ref(&status));
                if matches!(state, State::Live | State::Refused { .. }) {
                    let waiting = std::mem::take(&mut self.connected);
                    self.call_all(&waiting, &[status]);
                }
            }
            AgentChange::Command { command, received } => {
                let listeners = self.commands.clone();
                self.call_all(&listeners, &[convert::event_to_js(command.raw()), received_to_js(&received)]);
            }
            AgentChange::Unreadable { command, error } => {
                let detail = format!("command {} could not be taken: {error}", command.id());
                let listeners = self.violations.clone();
                self.call_all(&listeners, &[detail.into()]);
            }
            AgentChange::Error(e) => {
                let detail = format!("relay error {}: {}", e.code, e.detail.unwrap_or_default());
                let listeners = self.violations.clone();
                self.call_all(&listeners, &[detail.into()]);
            }
            AgentChange::Violation(detail) => {
                let listeners = self.violations.clone();
                self.call_all(&listeners, &[detail.into()]);
            }
            AgentChange::Disconnected { .. } => {}
        }
    }

    fn deferred(&mut self, _agent: &Agent) -> Deferred {
        std::mem::take(&mut self.calls)
    }
}

/// An agent on one relay.
#[wasm_bindgen]
pub struct AepAgent {
    driver: Shared<AgentFeed>,
}

#[wasm_bindgen]
impl AepAgent {
    /// `new AepAgent({ url, token?, agent, accepts, host?, source?, epoch?,
    /// capture?, ackWindowMs?, pingIntervalMs?, decide?, WebSocket? })`.
    /// Nothing connects until `connect()`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<AepAgent, JsValue> {
        if !options.is_object() {
            return Err(invalid("new AepAgent(options): options must be an object"));
        }
        let o = read_agent_options(&options)?;
        let endpoint = RelayAddress::new(&o.url, o.token.as_deref()).map_err(|e| invalid(format!("`url`: {e}")))?;
        let label = aep_engine::client::hub::relay_label(&o.url).map_err(|e| invalid(format!("`url`: {e}")))?;
        let target = TargetOptions::new(o.target);
        let websocket = o.websocket.map(JsCast::unchecked_into::<js_sys::Function>);
        let decide = o.decide.map(JsCast::unchecked_into::<js_sys::Function>);
        let mut connection = Config::consumer();
        if let Some(p) = o.ping_interval_ms {
            connection.ping_interval_ms = p;
        }
        let config = AgentConfig {
            identity: target.identity,
            accepts: target.accepts,
            ack_window_ms: o.ack_window_ms,
            ceiling: target.ceiling,
            epoch: target.epoch,
            seed: convert::random() as u64,
            connection,
        };
        let mut agent = Agent::new(config).map_err(|e| invalid(e.to_string()))?;
        if let Some(f) = decide {
            agent.set_decider(Some(Box::new(move |action| ask_decider(&f, action))));
        }
        let feed = AgentFeed { label, ..AgentFeed::default() };
        Ok(AepAgent { driver: Driver::new(agent, vec![endpoint], websocket, feed) })
    }

    /// Connects (and reconnects on its own). Resolves with the status once
    /// live or refused.
    pub fn connect(&self) -> js_sys::Promise {
        let mut handle = None;
        let promise = js_sys::Promise::new(&mut |resolve, _| handle = Some(resolve));
        with(&self.driver, |d| {
            if let Some(resolve) = handle {
                d.handler.connected.push(resolve);
            }
            d.hub.connect(convert::now());
        });
        promise
    }

    /// Closes (a `closing` frame first when live). Queued events are kept
    /// for a later `connect()`.
    pub fn close(&self) {
        with(&self.driver, |d| d.hub.close(convert::now()));
    }

    /// `"command"` → `(command, received)` for every command, after its ack
    /// was queued; `"status"` → `(status)`; `"violation"` → `(detail)`.
    /// Returns the function that removes the listener.
    pub fn on(&self, kind: &str, listener: js_sys::Function) -> Result<js_sys::Function, JsValue> {
        {
            let mut d = self.driver.borrow_mut();
            let list = match kind {
                "command" => &mut d.handler.commands,
                "status" => &mut d.handler.statuses,
                "violation" => &mut d.handler.violations,
                other => {
                    return Err(aep_error(
                        AepErrorCode::InvalidArgument,
                        format!("unknown event `{other}` (command, status or violation)"),
                    ))
                }
            };
            list.push(listener.clone());
        }
        let weak = std::rc::Rc::downgrade(&self.driver);
        let kind = kind.to_owned();
        let off = Closure::<dyn FnMut()>::new(move || {
            if let Some(rc) = weak.upgrade() {
                if let Ok(mut d) = rc.try_borrow_mut() {
                    let list = match kind.as_str() {
                        "command" => &mut d.handler.commands,
                        "status" => &mut d.handler.statuses,
                        _ => &mut d.handler.violations,
                    };
                    list.retain(|f| f != &listener);
                }
            }
        });
        Ok(off.into_js_value().into())
    }

    /// Builds, stamps and sends one of the agent's own events (queued while
    /// not live). Returns the event as sent.
    pub fn emit(&self, draft: JsValue) -> Result<JsValue, JsValue> {
        self.send_built(|ops| ops.event(&draft))
    }

    /// Emits an `attention.requested` and registers it so answers to it are
    /// checked; `refusingOption` is what unmatched permission text applies.
    pub fn ask(&self, draft: JsValue, refusing_option: Option<String>) -> Result<JsValue, JsValue> {
        let event = self.emit(draft)?;
        with(&self.driver, |d| {
            let (target, seqs) = d.hub.target();
            TargetOps { target, seqs }.register_request(&event, refusing_option.as_deref())
        })?;
        Ok(event)
    }

    /// Sends `attention.answered` and `attention.resolved` for an accepted
    /// respond (`action` as the command listener received it).
    pub fn answer(&self, command: JsValue, action: JsValue) -> Result<js_sys::Array, JsValue> {
        with(&self.driver, |d| {
            let (target, seqs) = d.hub.target();
            let pair = TargetOps { target, seqs }.answer_outcomes(&command, &action)?;
            for e in &pair {
                send(&mut d.hub, e)?;
            }
            Ok(pair.iter().map(out).collect())
        })
    }

    /// Sends any outcome of `command` (its `cause`, in its session).
    pub fn outcome(&self, command: JsValue, draft: JsValue) -> Result<JsValue, JsValue> {
        self.send_built(|ops| ops.outcome(&command, &draft))
    }

    /// Sends `run.cancelled` for an accepted cancel.
    #[wasm_bindgen(js_name = runCancelled)]
    pub fn run_cancelled(&self, command: JsValue, reason: Option<String>) -> Result<JsValue, JsValue> {
        self.send_built(|ops| ops.run_cancelled(&command, reason.as_deref()))
    }

    /// Sends `progress.status` (e.g. phase "paused") for a pause or resume.
    #[wasm_bindgen(js_name = progressStatus)]
    pub fn progress_status(
        &self,
        command: JsValue,
        phase: String,
        message: Option<String>,
    ) -> Result<JsValue, JsValue> {
        self.send_built(|ops| ops.progress_status(&command, &phase, message.as_deref()))
    }

    /// Marks a request closed by other means; later answers are nacked.
    #[wasm_bindgen(js_name = closeRequest)]
    pub fn close_request(&self, id: &str) -> bool {
        with(&self.driver, |d| d.hub.target().0.close_request(id))
    }

    /// `{ relay, state, queued, dropped, … }`: `queued` events wait for a
    /// live socket, `dropped` debug/info events made room in a full queue.
    pub fn status(&self) -> JsValue {
        let d = self.driver.borrow();
        d.handler.status(&d.hub)
    }

    fn send_built(&self, build: impl FnOnce(&mut TargetOps<'_>) -> Result<Event, JsValue>) -> Result<JsValue, JsValue> {
        with(&self.driver, |d| {
            let (target, seqs) = d.hub.target();
            let event = build(&mut TargetOps { target, seqs })?;
            send(&mut d.hub, &event)?;
            Ok(out(&event))
        })
    }
}

fn send(agent: &mut Agent, event: &Event) -> Result<(), JsValue> {
    agent.send(event).map_err(|e| aep_error(AepErrorCode::Backpressure, e.to_string()))
}

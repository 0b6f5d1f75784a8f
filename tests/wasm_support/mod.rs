//! Shared by the wasm tests (Node and headless Chromium): the relay under
//! test (started by `scripts/test-npm`, its address compiled in), async
//! sleeps, and an agent on a plain WebSocket answering with the engine's
//! control target.

#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use aep_client::js::convert as js;
use aep_engine::control::target::{ControlTarget, Received, SeqCounter};
use aep_engine::protocol::ids::{ulid, Draft, Identity};
use aep_engine::rng::Seeded;
use aep_engine::{Capture, Event};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{MessageEvent, WebSocket};

/// The relay's HTTP origin and token, from `scripts/test-npm`.
pub fn relay() -> (&'static str, &'static str) {
    match (option_env!("AEP_WASM_RELAY"), option_env!("AEP_WASM_TOKEN")) {
        (Some(url), Some(token)) => (url, token),
        _ => panic!("AEP_WASM_RELAY and AEP_WASM_TOKEN name the relay under test: run scripts/test-npm"),
    }
}

pub fn js_value(v: &Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

pub fn json(v: &JsValue) -> Value {
    if v.is_undefined() {
        return Value::Null;
    }
    serde_json::from_str(&js_sys::JSON::stringify(v).unwrap().as_string().unwrap()).unwrap()
}

pub async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into()).unwrap();
        let set_timeout: js_sys::Function = set_timeout.unchecked_into();
        set_timeout.call2(&JsValue::NULL, &resolve, &ms.into()).unwrap();
    });
    JsFuture::from(p).await.unwrap();
}

/// Polls `f` every 20 ms for up to 10 s.
pub async fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..500 {
        if let Some(v) = f() {
            return v;
        }
        sleep(20).await;
    }
    panic!("timed out waiting for {what}");
}

struct AgentState {
    target: ControlTarget,
    seqs: SeqCounter,
    received: Vec<Event>,
    hello: bool,
}

/// An agent on a plain WebSocket.
pub struct Agent {
    ws: WebSocket,
    state: Rc<RefCell<AgentState>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl Agent {
    pub async fn connect(agent: &str) -> Agent {
        let (origin, token) = relay();
        let url = format!("{}/socket?access_token={token}", origin.replacen("http", "ws", 1));
        let ws = WebSocket::new(&url).unwrap();
        let identity = Identity::new(format!("aep://agents.test/agent/{agent}"), agent);
        let accepts = ["control.attention.respond", "control.cancel", "control.pause", "control.resume"];
        let state = Rc::new(RefCell::new(AgentState {
            target: ControlTarget::new(identity, accepts, Seeded::new(2)).unwrap().with_ceiling(Capture::Full),
            seqs: SeqCounter::new(),
            received: Vec::new(),
            hello: false,
        }));
        let s = state.clone();
        let sock = ws.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |m: MessageEvent| {
            let text = m.data().as_string().unwrap_or_default();
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if v["type"] == "hello" {
                s.borrow_mut().hello = true;
                return;
            }
            let Ok(e) = Event::parse(&text) else { return };
            let mut st = s.borrow_mut();
            st.received.push(e.clone());
            if !e.is_command() {
                return;
            }
            let st = &mut *st;
            let now = js::now();
            let r = st.target.handle_command(&e, now, &mut st.seqs).unwrap();
            sock.send_with_str(&r.ack_bytes()).unwrap();
            if let Received::Fresh {
                action: aep_engine::control::target::Action::Respond { request, applied }, ..
            } = &r
            {
                let pair = st.target.answer_outcomes(&e, request, &applied.answer, now, &mut st.seqs).unwrap();
                for out in pair {
                    sock.send_with_str(out.raw()).unwrap();
                }
            }
        });
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        wait_for("the agent socket to open", || (ws.ready_state() == WebSocket::OPEN).then_some(())).await;
        let hello = json!({
            "type": "hello", "versions": ["0.1"], "role": "emitter", "identity": {"agent": agent},
            "capabilities": {"control": {"accepts": accepts, "ack_window_ms": 3000}}
        });
        ws.send_with_str(&hello.to_string()).unwrap();
        let st = state.clone();
        wait_for("the relay's hello", || st.borrow().hello.then_some(())).await;
        Agent { ws, state, _on_message: on_message }
    }

    /// Emits a session event of this agent.
    pub fn emit(&self, draft: Draft, session: &str) -> Event {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let seq = aep_engine::control::target::Sequencer::next_seq(&mut st.seqs, session);
        let now = js::now();
        let e = draft.session(session).seq(seq).build(st.target.identity(), ulid(now, js::random()), now).unwrap();
        self.ws.send_with_str(e.raw()).unwrap();
        e
    }

    /// Raises a permission request (allow / deny) and registers it.
    pub fn ask(&self, session: &str, prompt: &str) -> Event {
        let draft = Draft::new("attention.requested").subject("shell").data(json!({
            "kind": "permission", "prompt": prompt,
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]
        }));
        let e = self.emit(draft, session);
        self.state.borrow_mut().target.register_request(&e, Some("deny")).unwrap();
        e
    }

    pub fn received(&self, id: &str) -> bool {
        self.state.borrow().received.iter().any(|e| e.id() == id)
    }

    pub fn received_any(&self) -> bool {
        !self.state.borrow().received.is_empty()
    }

    /// Stops taking answers to `request`.
    pub fn close_request(&self, request: &str) {
        self.state.borrow_mut().target.close_request(request);
    }

    pub fn close(&self) {
        let _ = self.ws.close();
    }
}

// ----- scenarios run in both Node and the browser ---------------------------

use aep_client::js::client::AepClient;

pub fn client(agent: &str) -> AepClient {
    let (origin, token) = relay();
    let options =
        js_value(&json!({ "relays": [{ "url": origin, "token": token, "label": "under-test" }], "agent": agent }));
    AepClient::new(options).unwrap_or_else(|e| panic!("client: {:?}", json(&e)))
}

pub async fn connected(c: &AepClient) {
    let statuses = json(&JsFuture::from(c.connect()).await.unwrap());
    assert_eq!(statuses[0]["state"], "live", "{statuses}");
    assert_eq!(statuses[0]["relay"], "under-test");
}

/// A request raised by an agent is answered through the client: accepted,
/// then the outcome `attention.answered`, then the card resolves.
pub async fn answer_a_permission_request(session: &str) {
    let agent = Agent::connect(&format!("agent-{session}")).await;
    agent.emit(Draft::new("session.started").data(json!({"label": "wasm test"})), session);
    let request = agent.ask(session, "Deploy to staging?");
    let c = client("wasm-console");
    let seen = Rc::new(RefCell::new(Vec::<Value>::new()));
    let s = seen.clone();
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |card: JsValue| s.borrow_mut().push(json(&card)));
    let off = c.on("attention", listener.as_ref().unchecked_ref::<js_sys::Function>().clone()).unwrap();
    connected(&c).await;
    let id = request.id().to_owned();
    let card = wait_for("the request in the inbox", || {
        json(&c.inbox()).as_array().unwrap().iter().find(|x| x["id"] == id.as_str()).cloned()
    })
    .await;
    assert_eq!(card["prompt"], "Deploy to staging?");
    assert_eq!(card["relay"], "under-test");
    assert!(seen.borrow().iter().any(|x| x["id"] == id.as_str()), "the attention listener saw the card");

    let accepted = JsFuture::from(c.respond(&id, js_value(&json!({"option": "allow"}))))
        .await
        .unwrap_or_else(|e| panic!("{}", json(&e)));
    let ack = json(&js::get(&accepted, "ack"));
    assert_eq!(ack["type"], "control.accepted");
    let command_id = ack["cause"].as_str().unwrap().to_owned();
    assert!(agent.received(&command_id), "the agent received the command");
    let outcome = JsFuture::from(js::get(&accepted, "outcome").unchecked_into::<js_sys::Promise>()).await.unwrap();
    let outcome = json(&outcome);
    assert_eq!(outcome["type"], "attention.answered");
    assert_eq!(outcome["subject"], id.as_str());
    wait_for("the card to resolve", || {
        seen.borrow().iter().any(|x| x["id"] == id.as_str() && x["status"] == "resolved").then_some(())
    })
    .await;
    off.call0(&JsValue::NULL).unwrap();
    c.close();
    agent.close();
}

/// An option the request does not offer is refused before sending (an
/// AepError); an answer to a request the agent closed is nacked
/// `invalid`: a NackError.
pub async fn a_rejected_answer_is_a_nack_error(session: &str) {
    let agent = Agent::connect(&format!("agent-{session}")).await;
    let request = agent.ask(session, "Delete the branch?");
    let c = client("wasm-console-2");
    connected(&c).await;
    let id = request.id().to_owned();
    wait_for("the request", || {
        json(&c.inbox()).as_array().unwrap().iter().any(|x| x["id"] == id.as_str()).then_some(())
    })
    .await;
    let err =
        JsFuture::from(c.respond(&id, js_value(&json!({"option": "perhaps"})))).await.expect_err("must be refused");
    assert_eq!(js::get(&err, "name").as_string().as_deref(), Some("AepError"));
    assert_eq!(js::get(&err, "code").as_string().as_deref(), Some("invalid-answer"));
    assert!(!agent.received_any(), "nothing reached the agent");
    agent.close_request(&id);
    let err =
        JsFuture::from(c.respond(&id, js_value(&json!({"option": "allow"})))).await.expect_err("must be rejected");
    assert_eq!(js::get(&err, "name").as_string().as_deref(), Some("NackError"));
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(js::get(&err, "kind").as_string().as_deref(), Some("rejected"));
    assert_eq!(js::get(&err, "reason").as_string().as_deref(), Some("invalid"));
    assert_eq!(js::get(&err, "synthesized").as_bool(), Some(false));

    let err = JsFuture::from(c.pause(JsValue::from_str("owned-by-nobody"))).await.expect_err("no one owns it");
    assert_eq!(js::get(&err, "kind").as_string().as_deref(), Some("relay-refused"));
    assert_eq!(js::get(&err, "relayCode").as_string().as_deref(), Some("no-route"));
    c.close();
    agent.close();
}
